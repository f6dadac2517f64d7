"""The benchmark's Dagster partitions and group, shared by the asset modules (assets.py only assembles them)."""

from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.narrativetrack import constants
from bench_resources.paths import BenchPaths


BENCH = constants.BENCH
P = BenchmarkPartitions(BENCH)
GROUP = "narrativetrack"


def data_dir(paths: BenchPaths):
    return paths.benchmark_dir(BENCH)
