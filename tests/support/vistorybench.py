"""ViStoryBench: the embedded world (three stories, four generators) and one offline evaluation."""
import shutil

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths
from tests.support import DATA, QUIET, ROOT  # noqa: F401

VSB = BENCHMARKS["vistorybench"]
GENERATORS = ("vistory_faithful", "vistory_drift", "vistory_copy_paste", "vistory_faithful_ch")


def _world(tmp_path, generators=GENERATORS, stories=("01", "02", "08")):
    data = tmp_path / "data"
    for s in stories:
        shutil.copytree(DATA / "vistorybench" / s, data / "vistorybench" / s)
    shutil.copy(DATA / "vistorybench" / "human_ratings.csv", data / "vistorybench" / "human_ratings.csv")
    for g in generators:
        shutil.copytree(DATA / "generators" / g, data / "generators" / g)
    return data


def _run(instance, data, store_root, judge=None, **extra):
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    overrides = ({"judge": judge} if judge is not None else {}) | extra
    resources = build_resources(paths=paths, store_root=str(store_root), **overrides)
    gens, errors = discover_generators(paths.generators_dir, "vistorybench")
    stats = evaluate(instance, assets=VSB.assets, resources=resources, partitions=VSB.partitions,
                     items=VSB.item_ids(paths), generators=gens, item_assets=VSB.item_assets,
                     generator_assets=VSB.generator_assets, aggregate_assets=VSB.aggregate_assets,
                     progress=lambda s: None)
    return stats, resources, errors

