"""Issue 25 on MBench: fixing a wrong box in one case file re-runs exactly that case and its generator partition
(counted, with the reason), and the case row carries the new content hash. Real files, a real instance, the offline
profile; the generator side stops at the camera trajectory (staleness is per asset partition, the same for all)."""
import json
import shutil

from dagster import instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.automation import file_digest
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support import DATA

B = BENCHMARKS["mbench"]
CASES = ["a_obj01", "a_obj02"]
GEN = ["mbench_poses"]


def run(instance, data, store):
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(store),
                                judge=Judge(mode="off", cache_dir=str(store / "judge_cache")))
    gens, _ = discover_generators(paths.generators_dir, "mbench")
    stats = evaluate(instance, assets=B.assets, resources=resources, partitions=B.partitions, items=CASES,
                     generators=gens, item_assets=list(B.item_assets), generator_assets=GEN, aggregate_assets=[],
                     progress=lambda s: None, show_progress=False)
    assert not stats.failed, stats.failed
    return stats, resources["store"]


def test_fixed_case_box_reruns_exactly_its_case(tmp_path):
    data = tmp_path / "data"
    (data / "mbench" / "cases").mkdir(parents=True)
    shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
    gen = data / "generators" / "mbench_consistent"
    gen.mkdir(parents=True)
    shutil.copy(DATA / "generators" / "mbench_consistent" / "generator.yaml", gen)
    for c in CASES:
        shutil.copy(DATA / "mbench" / "cases" / f"{c}.json", data / "mbench" / "cases")
        shutil.copy(DATA / "generators" / "mbench_consistent" / f"{c}.mp4", gen)
    with instance_for_test() as instance:
        first, _ = run(instance, data, tmp_path / "store")
        assert sorted({pk for _, pk in first.materialized}) == sorted([*CASES, *(f"{c}|mbench_consistent"
                                                                                for c in CASES)])
        assert run(instance, data, tmp_path / "store")[0].materialized == []

        path = data / "mbench" / "cases" / "a_obj02.json"
        case = json.loads(path.read_text())
        case["target"]["bbox"] = [190.0, 112.0, 95.0, 95.0]  # the box fixed
        path.write_text(json.dumps(case, indent=1))
        fixed, store = run(instance, data, tmp_path / "store")
        assert sorted(fixed.materialized) == [("mbench_case", "a_obj02"), ("mbench_poses", "a_obj02|mbench_consistent")]
        assert fixed.reruns["input files changed"] == [("mbench_case", "a_obj02")]
        assert fixed.reruns["stale"] == [("mbench_poses", "a_obj02|mbench_consistent")]  # Dagster's own resolver
        rows = store.query("SELECT case_id, case_sha256, case_json FROM mbench_case")
        row = rows[rows.case_id == "a_obj02"].iloc[0]
        assert "190.0" in row.case_json and row.case_sha256 != rows[rows.case_id == "a_obj01"].iloc[0].case_sha256
        assert file_digest(path) != file_digest(DATA / "mbench" / "cases" / "a_obj02.json")
