"""The "waiting for a slot of pool 'gpu'" line names the asset holding the slot when the holder is another
`bench evaluate` (its runs are Dagster's ephemeral asset job, whose recorded asset selection is empty). Two
concurrent `bench evaluate`s of MBench on a clean clone printed "held by run 29b561c4 (__ephemeral_asset_job__,
partition a_obj02|mbench_changing, pid ...)" where the README shows "(mbench_scores, partition ...)"."""
from dagster import DagsterRunStatus, instance_for_test
from dagster._core.test_utils import create_run_for_test

from bench_assets.core import runner

POOLS = {"concurrency": {"pools": {"granularity": "op", "default_limit": 1}}}


def test_a_wait_names_the_holders_step_for_an_ephemeral_job_run():
    with instance_for_test(overrides=POOLS) as instance:
        storage = instance.event_log_storage
        storage.set_concurrency_slots("gpu", 1)
        holder = create_run_for_test(instance, job_name="__ephemeral_asset_job__", status=DagsterRunStatus.STARTED,
                                     tags={"dagster/partition": "a_obj01|mbench_changing", runner.PID_TAG: "4242"})
        waiter = create_run_for_test(instance, job_name="__ephemeral_asset_job__", status=DagsterRunStatus.STARTED)
        assert storage.claim_concurrency_slot("gpu", holder.run_id, "mbench_scores").is_claimed
        assert not storage.claim_concurrency_slot("gpu", waiter.run_id, "mbench_tracks").is_claimed
        waits = runner.slot_waits(instance, [waiter.run_id])
        assert len(waits) == 1
        words = waits[0].words(instance)
        assert words.startswith(f"waiting for a slot of pool 'gpu' (held by run {holder.run_id[:8]} (mbench_scores, "
                                f"partition a_obj01|mbench_changing, pid 4242)) for "), words
        assert "__ephemeral_asset_job__" not in words
        assert words.endswith(" s: mbench_tracks starts when it is free")


def test_a_named_job_keeps_its_name():
    with instance_for_test(overrides=POOLS) as instance:
        run = create_run_for_test(instance, job_name="mbench_evaluate", status=DagsterRunStatus.STARTED)
        assert runner.describe_run(instance, run.run_id, ["mbench_scores"]).startswith(
            f"run {run.run_id[:8]} (mbench_evaluate")
