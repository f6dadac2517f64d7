"""EntityBench: a one-episode world and a judge whose answers follow the images it is asked about."""
import hashlib
import shutil

from tests.support import DATA, QUIET, ROOT  # noqa: F401
from tests.support.fake_anthropic import tool_answer


def world(tmp, episodes=("e0001",)):
    """``tmp/data`` holding the embedded episodes and the faithful generator's shots for them."""
    data = tmp / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    for e in episodes:
        shutil.copy(DATA / "entitybench" / "episodes" / f"{e}.json", data / "entitybench" / "episodes")
        shutil.copytree(DATA / "generators" / "faithful" / e, data / "generators" / "faithful" / e)
    shutil.copy(DATA / "generators" / "faithful" / "generator.yaml", data / "generators" / "faithful")
    return data


def varied(body: dict) -> dict:
    """Answers that depend on the images asked about (a judge that says 8/10 to everything never closes the
    gate): scores 3-9 from a hash of the image bytes, same = 1 (all_consistent = true) iff the score >= 5,
    sim = score / 10; the location set question also names one outlier image when not all consistent."""
    content = body["messages"][0]["content"]
    blob = "".join(c["source"]["data"] for c in content if c["type"] == "image")
    score = 3 + int(hashlib.sha256(blob.encode()).hexdigest(), 16) % 7
    schema = body["tools"][0]["input_schema"]
    out = {}
    for k in schema["required"]:
        p = schema["properties"][k]
        out[k] = ("a place" if p["type"] == "string" else score >= 5 if p["type"] == "boolean" else int(score >= 5)
                  if "enum" in p else score / 10 if p["type"] == "number" else score)
    if "outlier_indices" in schema["properties"]:   # the location set question: name the images that differ
        n = sum(c["type"] == "image" for c in content)
        out["outlier_indices"] = [] if score >= 5 else [1 + score % max(n, 1)]
    return tool_answer(out)


# grounding (models), then the two judge-only families; the consistency families add minutes, not coverage here
JUDGED_GENERATOR_ASSETS = ["entitybench_outputs", "entitybench_grounding", "entitybench_fidelity", "entitybench_action"]


def evaluate_judged(instance, data, store, judge, items=("e0001",)):
    """``bench evaluate``'s path over EntityBench's grounding and its two judge-only families for ``items`` with
    ``judge``: (RunStats, the store). Fails the test if a partition failed."""
    from bench_assets import definitions as d
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(store), judge=judge)
    gens, _ = discover_generators(paths.generators_dir, "entitybench")
    stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH, items=list(items),
                     generators=gens, item_assets=list(d.ENTITYBENCH_ITEM_ASSETS),
                     generator_assets=JUDGED_GENERATOR_ASSETS, aggregate_assets=[], progress=lambda s: None,
                     show_progress=False)
    assert not stats.failed, stats.failed
    return stats, resources["store"]


def evaluate_job_and_sensor(data, store, **sensor_kw):
    """(EntityBench's `<benchmark>_evaluate` job, its generator sensor) over a world's data root and a store: what
    the code location builds, pointed at the test's folders."""
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.automation import generator_sensor_factory
    from bench_assets.core.evaluate_job import evaluate_job_factory
    from bench_assets.entitybench.dataset import discover_episodes
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    B = BENCHMARKS["entitybench"]
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    items = lambda: discover_episodes(data / "entitybench" / "episodes")  # noqa: E731
    job = evaluate_job_factory(
        benchmark="entitybench", assets_fn=lambda: B.assets, partitions=B.partitions, item_ids=items,
        generators_root=lambda: str(data / "generators"), item_assets=B.item_assets,
        generator_assets=B.generator_assets, aggregate_assets=["entitybench_leaderboard"],
        resources_fn=lambda: build_resources(paths=paths, store_root=str(store)))
    sensor = generator_sensor_factory(
        benchmark="entitybench", partitions=B.partitions, item_ids=items,
        generators_root=lambda: str(data / "generators"), item_assets=B.item_assets,
        generator_assets=B.generator_assets, assets_fn=lambda: B.assets, evaluate_job=job, **sensor_kw)
    return job, sensor
