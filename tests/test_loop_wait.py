"""Issue 39 (the daily loop): a run waiting for a pool slot says so, in the CLI and in the UI.

Two evaluations in one Dagster home share the `gpu` pool (one slot): the second waited silently (5 minutes at
'0/1 | mbench_trigger'). Here a real instance with the project's pool setting, a real run holding the slot (its
process alive), and a real in-process materialisation of a pool="gpu" asset through the runner: while it waits,
its log says "waiting for a slot of pool 'gpu' (held by run X (...)) for N s", and the waiting run's own event log
(what the UI's run page shows) carries the same words; once the slot is freed the step runs."""
import subprocess
import sys
import threading
import time

from dagster import DagsterEventType, DagsterRunStatus, asset, instance_for_test
from dagster._core.test_utils import create_run_for_test

from bench_assets.core import runner

POOLS = {"concurrency": {"pools": {"granularity": "op", "default_limit": 1}}}


@asset(pool="gpu")
def gpu_work() -> int:
    return 1


def test_a_run_waiting_for_a_pool_slot_says_who_holds_it_and_for_how_long(monkeypatch):
    monkeypatch.setattr(runner, "REAP_EVERY_S", 1.0)   # the watchdog's check interval (5 s in use)
    holder_proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with instance_for_test(overrides=POOLS) as instance:
            holder = create_run_for_test(instance, job_name="mbench_evaluate", status=DagsterRunStatus.STARTED,
                                         tags={"dagster/partition": "mbench_changing|a_obj01",
                                               runner.PID_TAG: str(holder_proc.pid),
                                               runner.HOST_TAG: runner.socket.gethostname(),
                                               runner.START_TAG: runner._proc_start(holder_proc.pid)})
            instance.event_log_storage.set_concurrency_slots("gpu", 1)   # dagster.yaml's default_limit, set
            claim = instance.event_log_storage.claim_concurrency_slot("gpu", holder.run_id, "mbench_scores")
            assert claim.is_claimed
            said: list[str] = []

            def release():   # the other evaluation ends once the wait has been said
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline and not any("waiting for a slot" in x for x in said):
                    time.sleep(0.2)
                time.sleep(1.5)    # the wait goes on a little: the seconds it reports grow
                instance.event_log_storage.free_concurrency_slots_for_run(holder.run_id)

            t = threading.Thread(target=release)
            t.start()
            result = runner.guarded_materialize([gpu_work], instance=instance, log=said.append)
            t.join()
            assert result.success
            waits = [x for x in said if "waiting for a slot" in x]
            assert waits, said
            assert waits[0].startswith(f"waiting for a slot of pool 'gpu' (held by run {holder.run_id[:8]} "
                                       f"(mbench_evaluate, partition mbench_changing|a_obj01, pid {holder_proc.pid}"
                                       f")) for "), waits[0]
            assert waits[0].endswith(" s: gpu_work starts when it is free")
            events = [e.message for e in instance.all_logs(result.run_id, of_type=DagsterEventType.ENGINE_EVENT)]
            assert any(m and m.startswith("waiting for a slot of pool 'gpu' (held by run") for m in events), events
    finally:
        holder_proc.kill()
        holder_proc.wait()


def test_no_wait_is_said_when_the_slot_is_free():
    with instance_for_test(overrides=POOLS) as instance:
        said: list[str] = []
        assert runner.guarded_materialize([gpu_work], instance=instance, log=said.append).success
        assert not [x for x in said if "waiting" in x]
        assert runner.slot_waits(instance, []) == []


def test_dagster_beta_notices_are_not_printed_once_per_partition(tmp_path):
    """An asset giving Output(data_version=...) (as every input asset does) materialised for three partitions in
    one process through the runner: Dagster's BetaWarning was printed for each; now for none. Another warning
    raised by the asset still shows."""
    code = f"""
import warnings
from dagster import DagsterInstance, DynamicPartitionsDefinition, Output, asset
from bench_assets.core import runner
P = DynamicPartitionsDefinition(name="items")
@asset(partitions_def=P)
def item(context):
    warnings.warn("the asset's own warning", UserWarning)
    return Output(1, data_version=__import__("dagster").DataVersion(context.partition_key))
instance = DagsterInstance.ephemeral()
instance.add_dynamic_partitions("items", ["a", "b", "c"])
for pk in ("a", "b", "c"):
    assert runner.guarded_materialize([item], instance=instance, partition_key=pk).success
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                          cwd=str(runner.PROJECT_ROOT))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "BetaWarning" not in proc.stderr, proc.stderr[-2000:]
    assert "the asset's own warning" in proc.stderr
