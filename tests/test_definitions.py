"""The code location assembles: every asset versioned, automation declared running, schedule evaluates."""
from dagster import AssetKey, DefaultSensorStatus, build_schedule_context, instance_for_test

from bench_assets import definitions as d


def test_definitions_load_and_resolve():
    repo = d.defs.get_repository_def()
    keys = {k.to_user_string() for k in repo.asset_graph.get_all_asset_keys()}
    assert {"entitybench_episode", "entitybench_grounding", "entitybench_pillar1",
            "entitybench_leaderboard"} <= keys
    for a in d.ALL_ASSETS:
        for key in a.keys:
            assert a.code_versions_by_key.get(key), f"{key} has no code_version"
    sensors = {s.name: s for s in repo.sensor_defs}
    assert sensors["entitybench_generators_sensor"].default_status == DefaultSensorStatus.RUNNING
    assert sensors["bench_automation_sensor"].default_status == DefaultSensorStatus.RUNNING
    gpu = [a for a in d.ALL_ASSETS if any(spec.pool == "gpu" for spec in [a.op]) if hasattr(a.op, "pool")]
    assert {a.key.to_user_string() for a in gpu} >= {"entitybench_grounding", "entitybench_pillar1"}


def test_nightly_schedule_requests_only_stale_partitions():
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("entitybench_generators", ["faithful"])
        instance.add_dynamic_partitions("entitybench_episodes", ["e0001", "e0002"])
        ctx = build_schedule_context(instance=instance, repository_def=d.defs.get_repository_def())
        reqs = list(d.entitybench_nightly.evaluate_tick(ctx).run_requests)
        assert sorted(r.partition_key for r in reqs) == ["e0001|faithful", "e0002|faithful"]
        assert set(reqs[0].asset_selection) == {AssetKey(k) for k in d.ENTITYBENCH_GENERATOR_ASSETS}
