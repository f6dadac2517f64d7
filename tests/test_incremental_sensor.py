"""Issue 25 with the daemon's sensor (core/automation.py generator_sensor_factory, per-partition form): a replaced
shot file or an edited episode, with everything else up to date, requests exactly the partitions they touch; the
asset graph shows the outputs asset's data version (content) move. Real files, a real instance; only the cheap
input assets are materialised (staleness is per asset partition, the same for every asset)."""
import json
import shutil

from dagster import AssetKey, AssetRecordsFilter, build_sensor_context, instance_for_test, materialize

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core import automation as A
from bench_assets.entitybench.dataset import discover_episodes
from bench_resources.paths import BenchPaths
from tests.support import DATA
from tests.support.entitybench import world as copy_world

B = BENCHMARKS["entitybench"]
ITEM, GEN = ["entitybench_episode"], ["entitybench_outputs"]


def data_version(instance, pk="e0002|faithful"):
    rec = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("entitybench_outputs"),
                                                             asset_partitions=[pk]), limit=1).records[0]
    return rec.asset_materialization.tags["dagster/data_version"]


def test_sensor_requests_exactly_what_an_edit_touches(tmp_path, monkeypatch):
    data = copy_world(tmp_path, ("e0001", "e0002"))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(data))  # what the code location's resources (and the sensor) read
    sensor = A.generator_sensor_factory(
        benchmark="entitybench", partitions=B.partitions,
        item_ids=lambda: discover_episodes(data / "entitybench" / "episodes"),
        generators_root=lambda: str(data / "generators"), item_assets=ITEM, generator_assets=GEN,
        assets_fn=lambda: B.assets, full_check_seconds=3600)
    by_key = {k.to_user_string(): a for a in B.assets for k in getattr(a, "keys", [])}
    resources = {"paths": BenchPaths(data_root=str(data))}

    def tick(cursor):
        return sensor(build_sensor_context(instance=instance, cursor=cursor))

    def requested(result):
        return sorted((str(r.partition_key), tuple(k.to_user_string() for k in r.asset_selection))
                      for r in result.run_requests or [])

    with instance_for_test() as instance:
        first = tick(None)  # registers the partitions; nothing is materialised yet
        assert len(requested(first)) == 2
        for e in ("e0001", "e0002"):  # what a run would do, done directly
            assert materialize([by_key["entitybench_episode"]], partition_key=e, instance=instance,
                               resources=resources).success
            assert materialize([by_key["entitybench_episode"], by_key["entitybench_outputs"]],
                               selection=["entitybench_outputs"], partition_key=f"{e}|faithful",
                               instance=instance, resources=resources).success
        settled = tick(first.cursor)
        assert requested(settled) == []

        shot = data / "generators" / "faithful" / "e0002" / "shot_03.mp4"
        before = data_version(instance)
        shutil.copy(DATA / "generators" / "drift" / "e0002" / "shot_03.mp4", shot)
        replaced = tick(settled.cursor)
        assert requested(replaced) == [("e0002|faithful", ("entitybench_outputs",))]
        assert materialize([by_key["entitybench_episode"], by_key["entitybench_outputs"]],
                           selection=["entitybench_outputs"], partition_key="e0002|faithful", instance=instance,
                           resources=resources).success
        assert before != data_version(instance)  # the content moved Dagster's data version
        assert requested(tick(replaced.cursor)) == []

        path = data / "entitybench" / "episodes" / "e0001.json"
        ep = json.loads(path.read_text())
        ep["shots"][0]["action"] = str(ep["shots"][0].get("action", "")) + " slowly"
        path.write_text(json.dumps(ep))
        edited = tick(replaced.cursor)
        assert requested(edited) == [("e0001", ("entitybench_episode",))]
