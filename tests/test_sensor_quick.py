"""The generator sensor's quick ticks (core/automation.py): a tick with nothing new skips without a staleness check,
so the interval can be short; a dropped or changed generator folder or a new item is checked at once, and only its
partitions; a code version change, the periodic check and an old cursor check every partition."""
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
    sensor = _sensor(data, full_check_seconds=3600)
    with instance_for_test() as instance:
        first = _tick(sensor, instance)
        assert len(full_checks) == 1 and _work(first)["generators"] == ["faithful"]  # nothing materialised yet
        assert json.loads(first.cursor)["folders"].keys() == {"faithful"}

        quiet = _tick(sensor, instance, first.cursor)
        assert len(full_checks) == 1 and not quiet.run_requests and quiet.cursor == first.cursor
        assert quiet.skip_reason.skip_message.startswith("unchanged since the check at ")
        assert quiet.skip_reason.skip_message.endswith(" UTC: 2 partition runs requested")
        # the instance moving on (a materialization elsewhere) is not a reason to check again
        instance.report_runless_asset_event(AssetMaterialization(asset_key="somewhere_else"))
        assert not _tick(sensor, instance, first.cursor).run_requests and len(full_checks) == 1

        # a file touched in a generator folder: a check at once, and a new run key for the same work
        shot = next(p for p in sorted((data / "generators" / "faithful").rglob("*")) if p.is_file()
                    and p.name != "generator.yaml")
        st = shot.stat()
        os.utime(shot, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
        changed = _tick(sensor, instance, first.cursor)
        assert len(full_checks) == 2
        assert _work(changed)["generators"] == ["faithful"] and _work(changed)["run_key"] != _work(first)["run_key"]

        # a dropped generator folder: the check covers that generator only
        new = data / "generators" / "newgen"
        shutil.copytree(data / "generators" / "faithful", new)
        (new / "generator.yaml").write_text("name: newgen\nbenchmark: entitybench\ndescription: copy\n")
        dropped = _tick(sensor, instance, changed.cursor)
        assert len(full_checks) == 3 and "newgen" in instance.get_dynamic_partitions(B.partitions.generators.name)
        assert _work(dropped)["generators"] == ["newgen"] and _work(dropped)["items"] == episodes

        # a new item (a dataset file added): its partitions, for every generator
        src = data / "entitybench" / "episodes" / f"{episodes[0]}.json"
        raw = json.loads(src.read_text())
        raw["episode_id"] = "e8888"
        (src.parent / "e8888.json").write_text(json.dumps(raw))
        added = _tick(sensor, instance, dropped.cursor)
        assert len(full_checks) == 4 and "e8888" in instance.get_dynamic_partitions(B.partitions.items.name)
        assert _work(added)["items"] == ["e8888"] and _work(added)["generators"] == ["faithful", "newgen"]

        # every partition: periodically, after a code version change, and from a cursor older than quick ticks
        every = {"items": sorted([*episodes, "e8888"]), "generators": ["faithful", "newgen"]}
        periodic = _tick(_sensor(data, full_check_seconds=0), instance, added.cursor)
        assert len(full_checks) == 5 and {k: _work(periodic)[k] for k in every} == every
        # (a code change changes both digests the cursor keeps; test_code_version_change_... shows the change)
        code = json.loads(added.cursor) | {"versions": "an older code version", "quick": "its quick fingerprint"}
        after_code = _work(_tick(sensor, instance, json.dumps(code)))
        assert {k: after_code[k] for k in every} == every
        assert len(full_checks) == 6
        _tick(sensor, instance, json.dumps({"faithful": "0123456789abcdef"}))
        assert len(full_checks) == 7


def test_code_version_change_changes_the_quick_fingerprint():
    def make(version):
        @asset(name="thing", code_version=version)
        def thing():
            return 1
        return [thing]

    v1, v2 = A.code_versions(make("1")), A.code_versions(make("2"))
    assert v1 == A.code_versions(make("1")) and v1 != v2
    args = (["e1"], {"g": "fp"}, [])
    assert A.quick_fingerprint(*args, v1) != A.quick_fingerprint(*args, v2)
    assert A.quick_fingerprint(*args, v1) != A.quick_fingerprint(["e1", "e2"], {"g": "fp"}, [], v1)
    assert A.quick_fingerprint(*args, v1) != A.quick_fingerprint(["e1"], {"g": "fq"}, [], v1)
    assert A.read_cursor(None) == {"folders": {}} and A.read_cursor('{"g": "fp"}') == {"folders": {"g": "fp"}}
    assert AssetKey("thing") in make("1")[0].code_versions_by_key
