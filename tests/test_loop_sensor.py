"""Issue 39 (the daily loop): the generator sensor and the run it launches, on a real instance and real Parquet.

An unrelated generator folder whose card cannot be read is one clear error for that folder: the sensor asks for the
generators it could read, and the `<benchmark>_evaluate` run they get succeeds (was: every sensor-launched run failed
after its work succeeded). A run that names the bad folder fails with the card's own error. A table the store lost or
cannot read, while the instance says "materialised", is seen by the sensor's next tick (as `bench evaluate` sees it)
and its partition is requested again, with the reason on the tick's log."""
import logging

import pytest
from dagster import AssetKey, DagsterEventType, build_sensor_context, instance_for_test

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.evaluate_job import card_folder
from tests.support.entitybench import evaluate_job_and_sensor, world

B = BENCHMARKS["entitybench"]
OP = "entitybench_evaluate_op"


@pytest.fixture(scope="module")
def loop(tmp_path_factory):
    """(data, store, instance, job, sensor, cursor after the first run): one real evaluation launched from the
    sensor's request while a bad card sits beside the good generator."""
    tmp = tmp_path_factory.mktemp("loop")
    data, store = world(tmp), tmp / "store"
    bad = data / "generators" / "broken"
    bad.mkdir()
    (bad / "generator.yaml").write_text("name: broken\nbenchmark: [entitybench\n")   # not YAML
    job, sensor = evaluate_job_and_sensor(data, store)
    with pytest.MonkeyPatch.context() as mp, instance_for_test() as instance:
        # what the code location's resources read (the sensor's store and data)
        mp.setenv("BENCH_STORE_ROOT", str(store))
        mp.setenv("BENCH_DATA_ROOT", str(data))
        mp.setenv("BENCH_GENERATORS_ROOT", str(data / "generators"))
        mp.setenv("BENCH_JUDGE_MODE", "off")
        first = sensor(build_sensor_context(instance=instance))
        assert len(first.run_requests) == 1
        req = first.run_requests[0]
        result = job.execute_in_process(run_config=req.run_config, instance=instance, tags=req.tags,
                                        raise_on_error=False)
        yield data, store, instance, job, sensor, first, req, result


def test_card_folder_names_the_folder_of_each_card_error():
    assert card_folder("generator folder 'broken': generator.yaml is not valid YAML (line 2)") == "broken"
    assert card_folder("generator 'x2' (a/generator.yaml): key 'langauge' is not ...") == "x2"
    assert card_folder('generator folder "it\'s": no generator.yaml in /x') == "it's"
    assert card_folder("generators root /nope does not exist") is None


def test_a_bad_card_elsewhere_does_not_fail_the_run_of_the_others(loop):
    data, store, instance, job, sensor, first, req, result = loop
    assert req.run_config["ops"][OP]["config"]["generators"] == ["faithful"]
    assert result.success, [e.message for e in result.all_events if e.is_step_failure]
    for a in B.generator_assets:
        assert "e0001|faithful" in instance.get_materialized_partitions(AssetKey(a)), a
    errors = [e.message for e in result.all_events if e.event_type == DagsterEventType.STEP_FAILURE] + [
        r.user_message for r in instance.all_logs(result.run_id) if r.level >= 40 and r.user_message]
    broken = [m for m in errors if "broken" in m]
    assert len(broken) == 1 and "not valid YAML" in broken[0], errors   # one clear error naming the folder
    assert all("faithful" not in m for m in errors), errors


def test_a_run_that_names_the_bad_card_fails_with_its_error(loop):
    data, store, instance, job, sensor, first, req, result = loop
    bad = job.execute_in_process(
        run_config={"ops": {OP: {"config": {"generators": ["broken"], "aggregates": False}}}},
        instance=instance, raise_on_error=False)
    assert not bad.success
    text = next(e for e in bad.all_events if e.is_step_failure).step_failure_data.error.message
    assert "generator folder 'broken': generator.yaml is not valid YAML" in text, text
    assert "no folder with a generator.yaml" not in text, text   # the folder is there: its card is the problem


def _requested(result):
    return [r.run_config["ops"][OP]["config"] for r in result.run_requests or []]


class Capture(logging.Handler):
    def __init__(self):
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


def tick(sensor, instance, cursor, seen: Capture):
    ctx = build_sensor_context(instance=instance, cursor=cursor)
    ctx.log.addHandler(seen)
    return sensor(ctx)


def test_the_sensor_sees_a_deleted_and_a_damaged_table(loop):
    data, store, instance, job, sensor, first, req, result = loop
    settled = sensor(build_sensor_context(instance=instance, cursor=first.cursor))
    assert _requested(settled) == [], settled.skip_reason
    quiet = sensor(build_sensor_context(instance=instance, cursor=settled.cursor))
    assert _requested(quiet) == [] and quiet.skip_reason.skip_message.startswith("unchanged since")

    gone = store / "tables" / "entitybench_grounding" / "episode=e0001" / "generator=faithful" / "part.parquet"
    gone.unlink()
    log = Capture()
    seen = tick(sensor, instance, quiet.cursor, log)
    assert _requested(seen) == [{"items": ["e0001"], "generators": ["faithful"]}], seen.skip_reason
    assert f"re-run: table missing: {store}/tables/entitybench_grounding" in log.lines, log.lines

    # the run the sensor asked for brings it back; a damaged item table is seen the same way
    assert job.execute_in_process(run_config=seen.run_requests[0].run_config, instance=instance).success
    assert gone.is_file()
    back = sensor(build_sensor_context(instance=instance, cursor=seen.cursor))
    assert _requested(back) == [], back.skip_reason
    damaged = store / "tables" / "entitybench_episode" / "partition=e0001" / "part.parquet"
    damaged.write_bytes(b"PAR1 not a table")
    again = tick(sensor, instance, back.cursor, log)
    assert [c["items"] for c in _requested(again)] == [["e0001"]], again.skip_reason
    assert any(x.startswith(f"re-run: table unreadable: {damaged} (unreadable Parquet") for x in log.lines), log.lines
