"""Issue 25, "incremental means correct", on real files and a real Dagster instance (EntityBench, offline profile,
judge off): a replaced shot file or an edited episode re-runs exactly the partitions it touches, and says why;
rows carry the new content hashes; ``force`` re-runs a selection regardless; the asset graph's own staleness
(Dagster's data versions) shows the change."""
import json
import shutil

import pytest
from dagster import AssetKey, instance_for_test

from bench_assets import definitions as d
from bench_assets.core.automation import Staleness, file_digest, rerun_plan
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support import DATA
from tests.support.entitybench import world as copy_world

# the generator assets up to the judge (Pillar 1 and the consistency families cost minutes on 2 cores and add
# nothing to what is tested here: staleness is per asset partition, the same for every asset)
GEN = ["entitybench_outputs", "entitybench_grounding", "entitybench_fidelity"]
ITEM = list(d.ENTITYBENCH_ITEM_ASSETS)


def run(instance, data, store, force=False, items=None):
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(store),
                                judge=Judge(mode="off", cache_dir=str(store / "judge_cache")))
    gens, _ = discover_generators(paths.generators_dir, "entitybench")
    items = items or sorted(p.stem for p in (data / "entitybench" / "episodes").glob("*.json"))
    stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH, items=items,
                     generators=gens, item_assets=ITEM, generator_assets=GEN,
                     aggregate_assets=[], progress=lambda s: None, force=force, show_progress=False)
    assert not stats.failed, stats.failed
    return stats, resources


def partitions(stats, asset=None):
    return sorted({pk for a, pk in stats.materialized if pk and (asset is None or a == asset)})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """Two episodes x one generator, evaluated once (shared by the tests below, which run in order)."""
    tmp = tmp_path_factory.mktemp("incremental")
    data = copy_world(tmp, ("e0001", "e0002"))
    with instance_for_test() as instance:
        first, resources = run(instance, data, tmp / "store")
        assert partitions(first, "entitybench_outputs") == ["e0001|faithful", "e0002|faithful"]
        yield instance, data, tmp / "store", resources


def test_nothing_changed_nothing_reruns(world):
    instance, data, store, _ = world
    stats, _ = run(instance, data, store)
    assert stats.materialized == [] and stats.forwards == 0 and stats.reruns == {}


def test_replaced_shot_reruns_exactly_its_partition_with_new_hashes(world):
    instance, data, store, resources = world
    shot = data / "generators" / "faithful" / "e0002" / "shot_02.mp4"
    old_sha = file_digest(shot)
    shutil.copy(DATA / "generators" / "drift" / "e0002" / "shot_02.mp4", shot)
    new_sha = file_digest(shot)
    assert new_sha != old_sha
    # the asset graph shows it before anything runs: the outputs asset's input changed
    st = Staleness(instance, d.ALL_ASSETS, paths=resources["paths"])
    assert st.status(AssetKey("entitybench_outputs"), "e0002|faithful") == Staleness.INPUT_CHANGED
    assert st.status(AssetKey("entitybench_outputs"), "e0001|faithful") is None
    stats, res = run(instance, data, store)
    # exactly the one partition: every generator asset of faithful x e0002, no item asset, no other partition
    assert partitions(stats) == ["e0002|faithful"]
    assert sorted(a for a, pk in stats.materialized if pk) == sorted(GEN)
    assert stats.reruns["input files changed"] == [("entitybench_outputs", "e0002|faithful")]
    assert len(stats.reruns["upstream entitybench_outputs re-runs"]) == len(GEN) - 1
    rows = res["store"].query("SELECT shot, sha256 FROM entitybench_outputs WHERE episode_id = 'e0002'")
    assert dict(zip(rows.shot, rows.sha256))[2] == new_sha
    # and then it is up to date again
    again, _ = run(instance, data, store)
    assert again.materialized == []


def test_edited_episode_schedule_reruns_its_item_and_partitions(world):
    instance, data, store, resources = world
    path = data / "entitybench" / "episodes" / "e0001.json"
    ep = json.loads(path.read_text())
    ep["shots"][-1]["action"] = ep["shots"][-1].get("action", "") + " then pauses"  # an edited schedule entry
    path.write_text(json.dumps(ep, indent=1))
    st = Staleness(instance, d.ALL_ASSETS, paths=resources["paths"])
    assert st.status(AssetKey("entitybench_episode"), "e0001") == Staleness.INPUT_CHANGED
    stats, res = run(instance, data, store)
    assert partitions(stats) == ["e0001", "e0001|faithful"]
    assert sorted(a for a, pk in stats.materialized if pk == "e0001") == sorted(ITEM)
    assert sorted(a for a, pk in stats.materialized if pk == "e0001|faithful") == sorted(GEN)
    assert stats.reruns["input files changed"] == [("entitybench_episode", "e0001")]
    stored = res["store"].query("SELECT episode_json FROM entitybench_episode WHERE episode_id = 'e0001'")
    assert "then pauses" in stored.episode_json[0]


def test_force_reruns_a_selection_regardless(world):
    instance, data, store, resources = world
    plan = rerun_plan(instance, d.ALL_ASSETS, [AssetKey(a) for a in GEN], "e0001|faithful", resources)
    assert plan == {}
    forced = rerun_plan(instance, d.ALL_ASSETS, [AssetKey(a) for a in GEN], "e0001|faithful", resources, force=True)
    assert sorted(k.to_user_string() for k in forced) == sorted(GEN)
    assert set(forced.values()) == {"forced (--force)"}
    # what `bench evaluate --force` runs (the runner's force), on one episode: its item and its partition, again
    stats, _ = run(instance, data, store, force=True, items=["e0001"])
    assert partitions(stats) == ["e0001", "e0001|faithful"]
    assert sorted(a for a, pk in stats.materialized if pk == "e0001|faithful") == sorted(GEN)
    from bench_assets.cli import rerun_lines
    assert rerun_lines(stats) == ["re-ran 5 asset partitions (2 partitions: e0001, e0001|faithful): forced (--force)"]
