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


def test_aggregate_goes_stale_when_a_new_generator_partition_lands():
    """A leaderboard over every generator x item (partitioned -> unpartitioned edge, which Dagster's resolver
    does not look through) is stale once any upstream partition is newer than it."""
    from dagster import DynamicPartitionsDefinition, Output, asset, materialize
    from bench_assets.core.automation import stale_or_missing

    gens = DynamicPartitionsDefinition(name="toy_generators")

    @asset(partitions_def=gens, code_version="1")
    def toy_scores(context):
        return Output(1, data_version=None)

    @asset(deps=[toy_scores], code_version="1")
    def toy_board():
        return 2

    assets = [toy_scores, toy_board]
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("toy_generators", ["a"])
        assert materialize([toy_scores], partition_key="a", instance=instance).success
        board = [AssetKey("toy_board")]
        assert [s[2] for s in stale_or_missing(instance, assets, board, lambda _k: [None])] == ["MISSING"]
        assert materialize(assets, selection=[toy_board], instance=instance).success
        assert stale_or_missing(instance, assets, board, lambda _k: [None]) == []
        instance.add_dynamic_partitions("toy_generators", ["b"])  # a new answerer's partitions materialise
        assert materialize([toy_scores], partition_key="b", instance=instance).success
        assert [s[2] for s in stale_or_missing(instance, assets, board, lambda _k: [None])] == ["STALE"]


def test_evaluator_failures_rerun_only_under_a_changed_evaluator_state():
    from dagster import Output, asset, materialize
    from bench_assets.core.automation import EVALUATOR_STATE_TAG, evaluator_state, needs_rerun_for_evaluator
    from bench_resources.judge import Judge

    @asset
    def judged():
        return Output(1, metadata={"evaluator_failures": 4, "evaluator_failure_reasons": "HTTP 500 x4"})

    @asset
    def clean():
        return Output(1, metadata={"evaluator_failures": 0})

    off, live = evaluator_state({"judge": Judge(mode="off")}), evaluator_state({"judge": Judge(mode="replay")})
    assert off != live and off == evaluator_state({"judge": Judge(mode="off")})
    with instance_for_test() as instance:
        assert materialize([judged, clean], instance=instance, tags={EVALUATOR_STATE_TAG: off}).success
        assert not needs_rerun_for_evaluator(instance, AssetKey("judged"), None, off)  # same state: same result
        assert needs_rerun_for_evaluator(instance, AssetKey("judged"), None, live)
        assert not needs_rerun_for_evaluator(instance, AssetKey("clean"), None, live)  # nothing to recover
        assert not needs_rerun_for_evaluator(instance, AssetKey("never_materialised"), None, live)
