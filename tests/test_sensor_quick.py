"""The generator sensor's quick ticks (core/automation.py): a tick with nothing new skips without the staleness check
over every partition, so the interval can be short; a dropped or changed generator folder, a new item, a code
version change, or the instance's events after the recheck delay bring the full check back."""
import json
import os
import shutil

import pytest
from dagster import AssetKey, AssetMaterialization, asset, build_sensor_context, instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core import automation as A
from bench_assets.core.evaluate_job import evaluate_job_factory
from bench_assets.entitybench.dataset import discover_episodes

B = BENCHMARKS["entitybench"]


@pytest.fixture()
def full_checks(monkeypatch):
    """How many full staleness checks ran (the Staleness checker is built once per full check)."""
    built = []

    class Counting(A.Staleness):
        def __init__(self, *a, **kw):
            built.append(1)
            super().__init__(*a, **kw)

    monkeypatch.setattr(A, "Staleness", Counting)
    return built


def _sensor(data, **kw):
    items = lambda: discover_episodes(data / "entitybench" / "episodes")  # noqa: E731
    # the folded form (the default deployment): a tick's item and generator work is one run of this job
    job = evaluate_job_factory(
        benchmark="entitybench", assets_fn=lambda: B.assets, partitions=B.partitions, item_ids=items,
        generators_root=lambda: str(data / "generators"), item_assets=B.item_assets,
        generator_assets=B.generator_assets, aggregate_assets=["entitybench_leaderboard"], resources_fn=dict)
    return A.generator_sensor_factory(
        benchmark="entitybench", partitions=B.partitions, item_ids=items,
        generators_root=lambda: str(data / "generators"), item_assets=B.item_assets,
        generator_assets=B.generator_assets, assets_fn=lambda: B.assets, evaluate_job=job, **kw)


def _work(result) -> dict:
    """The folded run's config ({"items": [...], "generators": [...]}), or {} when the tick requested nothing."""
    if not result.run_requests:
        return {}
    (req,) = result.run_requests
    return req.run_config["ops"]["entitybench_evaluate_op"]["config"] | {"run_key": req.run_key}


def _tick(sensor, instance, cursor=None):
    return sensor(build_sensor_context(instance=instance, cursor=cursor))


def test_quick_tick_skips_until_something_changes(small_world, full_checks):
    data, episodes = small_world(("faithful",))
    sensor = _sensor(data, recheck_seconds=3600, full_check_seconds=3600)
    with instance_for_test() as instance:
        first = _tick(sensor, instance)
        assert len(full_checks) == 1 and _work(first)["generators"] == ["faithful"]  # nothing materialised yet
        assert json.loads(first.cursor)["folders"].keys() == {"faithful"}

        quiet = _tick(sensor, instance, first.cursor)
        assert len(full_checks) == 1 and not quiet.run_requests
        assert quiet.skip_reason.skip_message.startswith("unchanged since the full check at ")
        assert quiet.skip_reason.skip_message.endswith(": 2 partition runs requested")
        assert quiet.cursor == first.cursor

        # the instance moved on (a materialization elsewhere): within the recheck delay still quick ...
        instance.report_runless_asset_event(AssetMaterialization(asset_key="somewhere_else"))
        assert not _tick(sensor, instance, first.cursor).run_requests and len(full_checks) == 1
        # ... after it, a full check
        eager = _sensor(data, recheck_seconds=0, full_check_seconds=3600)
        again = _tick(eager, instance, first.cursor)
        assert len(full_checks) == 2 and _work(again)["run_key"] == _work(first)["run_key"]   # the same work
        assert json.loads(again.cursor)["mark"] > json.loads(first.cursor)["mark"]

        # a file touched in a generator folder: a full check at once, whatever the delays, and new run keys
        shot = next(p for p in sorted((data / "generators" / "faithful").rglob("*")) if p.is_file()
                    and p.name != "generator.yaml")
        st = shot.stat()
        os.utime(shot, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        changed = _tick(sensor, instance, again.cursor)
        assert len(full_checks) == 3
        assert _work(changed)["generators"] == ["faithful"] and _work(changed)["run_key"] != _work(again)["run_key"]

        # a dropped generator folder
        new = data / "generators" / "newgen"
        shutil.copytree(data / "generators" / "faithful", new)
        (new / "generator.yaml").write_text("name: newgen\nbenchmark: entitybench\ndescription: copy\n")
        dropped = _tick(sensor, instance, changed.cursor)
        assert len(full_checks) == 4 and "newgen" in instance.get_dynamic_partitions("entitybench_generators")
        assert _work(dropped)["generators"] == ["faithful", "newgen"]

        # a new item (a dataset file added)
        src = data / "entitybench" / "episodes" / f"{episodes[0]}.json"
        raw = json.loads(src.read_text())
        raw["episode_id"] = "e8888"
        (src.parent / "e8888.json").write_text(json.dumps(raw))
        added = _tick(sensor, instance, dropped.cursor)
        assert len(full_checks) == 5 and "e8888" in instance.get_dynamic_partitions(B.partitions.items.name)
        assert "e8888" in _work(added)["items"]

        # the periodic full check, and a cursor written before quick ticks existed
        _tick(_sensor(data, recheck_seconds=3600, full_check_seconds=0), instance, dropped.cursor)
        assert len(full_checks) == 6
        _tick(sensor, instance, json.dumps({"faithful": "0123456789abcdef"}))
        assert len(full_checks) == 7


def test_code_version_change_changes_the_quick_fingerprint():
    def make(version):
        @asset(name="thing", code_version=version)
        def thing():
            return 1
        return [thing]

    args = (["e1"], {"g": "fp"}, [])
    assert A.quick_fingerprint(*args, make("1")) == A.quick_fingerprint(*args, make("1"))
    assert A.quick_fingerprint(*args, make("1")) != A.quick_fingerprint(*args, make("2"))
    assert A.quick_fingerprint(*args, make("1")) != A.quick_fingerprint(["e1", "e2"], {"g": "fp"}, [], make("1"))
    assert A.quick_fingerprint(*args, make("1")) != A.quick_fingerprint(["e1"], {"g": "fq"}, [], make("1"))
    assert A.read_cursor(None) == {"folders": {}} and A.read_cursor('{"g": "fp"}') == {"folders": {"g": "fp"}}
    assert AssetKey("thing") in make("1")[0].code_versions_by_key
