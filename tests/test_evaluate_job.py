"""The generator sensor folds a tick's work into one run of `<benchmark>_evaluate` (core/evaluate_job.py), and
that run materialises items, generator partitions and the leaderboard in one process, as `bench evaluate`."""
import shutil

from dagster import AssetKey, DagsterRunStatus, RunsFilter, build_sensor_context, instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.evaluate_job import PARENT_TAG
from tests.support.entitybench import evaluate_job_and_sensor

B = BENCHMARKS["entitybench"]
OP = "entitybench_evaluate_op"


def test_one_tick_is_one_run_that_evaluates_items_generators_and_the_board(small_world, tmp_path):
    data, episodes = small_world(("faithful",))
    # full_check_seconds=0: every tick checks every partition (else a tick with no folder, item or code change skips)
    job, sensor = evaluate_job_and_sensor(data, tmp_path / "store", full_check_seconds=0)
    with instance_for_test() as instance:
        first = sensor(build_sensor_context(instance=instance))
        assert len(first.run_requests) == 1
        req = first.run_requests[0]
        assert req.job_name == "entitybench_evaluate" and req.run_key.startswith("evaluate/")
        assert req.run_config["ops"][OP]["config"] == {"items": episodes, "generators": ["faithful"]}
        assert req.tags["bench/generator"] == "faithful" and req.tags["bench/benchmark"] == "entitybench"

        # while a run of the job is queued or running, the sensor requests nothing (the work list would shrink
        # as it progresses and the same partitions would be started twice)
        live = instance.create_run_for_job(job, run_config=req.run_config, status=DagsterRunStatus.STARTED)
        wait = sensor(build_sensor_context(instance=instance, cursor=first.cursor))
        assert not wait.run_requests and "of entitybench_evaluate is started" in wait.skip_reason.skip_message
        instance.report_run_failed(live)

        result = job.execute_in_process(run_config=req.run_config, instance=instance, tags=req.tags)
        assert result.success
        key = str(B.partitions.key("faithful", episodes[0]))
        for a in B.generator_assets:
            assert key in instance.get_materialized_partitions(AssetKey(a)), a
        assert instance.get_latest_materialization_event(AssetKey("entitybench_leaderboard")) is not None
        inner = instance.get_runs(filters=RunsFilter(tags={PARENT_TAG: result.run_id}))
        # the item partition, the generator partition and the board: three runs of the same instance
        assert sorted(r.tags.get("dagster/partition", "board") for r in inner) == sorted([episodes[0], key, "board"])

        done = sensor(build_sensor_context(instance=instance, cursor=first.cursor))
        assert not done.run_requests and done.skip_reason.skip_message == "every item and generator partition is up to date"

        # a new generator folder: one run for it alone (its items are up to date)
        new = data / "generators" / "newgen"
        shutil.copytree(data / "generators" / "faithful", new)
        (new / "generator.yaml").write_text("name: newgen\nbenchmark: entitybench\ndescription: copy\n")
        nxt = sensor(build_sensor_context(instance=instance, cursor=done.cursor))
        assert [r.run_config["ops"][OP]["config"] for r in nxt.run_requests] == \
            [{"items": episodes, "generators": ["newgen"]}]
        assert nxt.run_requests[0].tags["bench/generator"] == "newgen"
        assert nxt.run_requests[0].run_key != req.run_key


def test_unknown_generator_fails_the_run_and_names_it(small_world, tmp_path):
    data, episodes = small_world(("faithful",))
    job, _ = evaluate_job_and_sensor(data, tmp_path / "store")
    with instance_for_test() as instance:
        result = job.execute_in_process(
            run_config={"ops": {OP: {"config": {"items": ["e_missing"], "generators": ["ghost"],
                                                "aggregates": False}}}},
            instance=instance, raise_on_error=False)
        assert not result.success
        failure = next(e for e in result.all_events if e.is_step_failure).step_failure_data.error
        text = failure.message
        assert "generator 'ghost': no folder with a generator.yaml" in text
        assert "episode 'e_missing': not found" in text
