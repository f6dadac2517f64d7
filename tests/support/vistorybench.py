"""ViStoryBench: the embedded world (three stories, four generators) and one offline evaluation."""

from bench_assets.benchmarks import BENCHMARKS
from tests.support import DATA, QUIET, ROOT, copy_world, run_benchmark  # noqa: F401

VSB = BENCHMARKS["vistorybench"]
GENERATORS = ("vistory_faithful", "vistory_drift", "vistory_copy_paste", "vistory_faithful_ch")


def _world(tmp_path, generators=GENERATORS, stories=("01", "02", "08")):
    return copy_world(tmp_path, [f"vistorybench/{s}" for s in stories] + ["vistorybench/human_ratings.csv"], generators)


def _run(instance, data, store_root, judge=None, **extra):
    return run_benchmark("vistorybench", instance, data, store_root, judge, **extra)
