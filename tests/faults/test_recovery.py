"""Crash recovery pieces against a real Dagster instance and real processes: a run whose process is gone is
marked failed and its GPU pool slot freed; a live process's run is left alone; a SIGTERM stops a run that
waits for a slot."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from dagster import DagsterRunStatus, instance_for_test
from dagster._core.test_utils import create_run_for_test

from bench_assets.core import runner


def _dead_pid() -> tuple[int, str]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    start = runner._proc_start(p.pid)
    p.send_signal(signal.SIGKILL)
    p.wait()
    return p.pid, start


def _run_holding_slot(instance, tags, step="mbench_poses"):
    run = create_run_for_test(instance, job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED, tags=tags)
    if "gpu" not in instance.event_log_storage.get_concurrency_keys():
        instance.event_log_storage.set_concurrency_slots("gpu", 2)
    claim = instance.event_log_storage.claim_concurrency_slot("gpu", run.run_id, step)
    assert claim.is_claimed
    return run


def test_dead_run_is_failed_and_its_slot_freed_live_one_kept():
    with instance_for_test() as instance:
        pid, start = _dead_pid()
        dead = _run_holding_slot(instance, {**runner.process_tags(), runner.PID_TAG: str(pid),
                                            runner.START_TAG: start})
        live_proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
        try:
            live_tags = {**runner.process_tags(), runner.PID_TAG: str(live_proc.pid),
                         runner.START_TAG: runner._proc_start(live_proc.pid)}
            live = _run_holding_slot(instance, live_tags, "mbench_scores")
            # a pid reused by another process (start time differs) counts as gone
            reused = create_run_for_test(instance, job_name="__ASSET_JOB", status=DagsterRunStatus.STARTED,
                                         tags={**live_tags, runner.START_TAG: "1"})
            reaped = runner.reap_dead_runs(instance)
            assert {r.run_id for r in reaped} == {dead.run_id, reused.run_id}
            assert instance.get_run_by_id(dead.run_id).status == DagsterRunStatus.FAILURE
            assert instance.get_run_by_id(live.run_id).status == DagsterRunStatus.STARTED
            claimed = {c.run_id for c in instance.event_log_storage.get_concurrency_info("gpu").claimed_slots}
            assert claimed == {live.run_id}
            assert "is gone" in reaped[0].why
        finally:
            live_proc.kill()
            live_proc.wait()
        # the live process ends too: its run is reaped on the next pass, and a slot held by a finished run is freed
        assert {r.run_id for r in runner.reap_dead_runs(instance)} == {live.run_id}
        assert not instance.event_log_storage.get_concurrency_info("gpu").claimed_slots


def test_slot_of_finished_run_is_freed():
    with instance_for_test() as instance:
        run = _run_holding_slot(instance, {})
        instance.report_run_failed(run)  # failed by hand, slot still claimed
        assert instance.event_log_storage.get_concurrency_info("gpu").claimed_slots
        runner.reap_dead_runs(instance)
        assert not instance.event_log_storage.get_concurrency_info("gpu").claimed_slots


def test_error_message_drops_caret_lines():
    from dagster._utils.error import SerializableErrorInfo
    err = SerializableErrorInfo(
        "Invalid Input Error: Failed to read Parquet file 'x/part.parquet': Need at least one non-root column\n\n"
        "LINE 1: SELECT * FROM read_parquet('x')\n              ^\n", [], "InvalidInputException")
    wrapped = SerializableErrorInfo("Error occurred while executing op", [], "DagsterExecutionStepExecutionError",
                                    cause=err)
    msg = runner.error_message(wrapped)
    assert msg.startswith("InvalidInputException: Invalid Input Error: Failed to read Parquet file 'x/part.parquet'")
    assert "^" not in msg and "LINE 1" not in msg


WAITER = textwrap.dedent('''
    import os, sys
    from dagster import DagsterInstance, asset, materialize
    from bench_assets.core import runner
    @asset(pool="gpu")
    def needs_gpu():
        return 1
    inst = runner.open_instance()
    print("waiting", flush=True)
    res = runner.guarded_materialize([needs_gpu], instance=inst)
    print("finished", res.success, flush=True)
''')


def test_sigterm_stops_a_run_waiting_for_a_slot(tmp_path):
    """A live process holds the only GPU slot; another run waits for it. Dagster captures SIGTERM during
    execution and its in-process executor never checks; the watchdog makes the waiter stop."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("concurrency:\n  pools:\n    granularity: op\n    default_limit: 1\n")
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        os.environ["DAGSTER_HOME"] = str(home)
        instance = runner.open_instance()
        instance.event_log_storage.set_concurrency_slots("gpu", 1)
        held = _run_holding_slot(instance, {**runner.process_tags(), runner.PID_TAG: str(holder.pid),
                                     runner.START_TAG: runner._proc_start(holder.pid)})
        # the CLI's own signal handling (bench_assets/cli.py runs every command inside interrupts.watching())
        code = ("import sys, runpy; sys.argv=['w']\n"
                "from bench_assets.core import interrupts\n"
                "try:\n    with interrupts.watching():\n"
                "        exec(compile(open(sys.argv_file).read(), 'w', 'exec'))\n"
                "except KeyboardInterrupt:\n    print('interrupted', flush=True); sys.exit(interrupts.exit_code())\n")
        script = tmp_path / "waiter.py"
        script.write_text(WAITER)
        waiter = subprocess.Popen([sys.executable, "-c", code.replace("sys.argv_file", repr(str(script)))],
                                  env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # wait until it is queued behind the slot
            pend = [p for p in instance.event_log_storage.get_concurrency_info("gpu").pending_steps
                    if p.run_id != held.run_id and p.assigned_timestamp is None]
            if pend:
                break
            time.sleep(0.3)
        assert pend, "the waiter never queued for the slot"
        time.sleep(1.0)
        waiter.send_signal(signal.SIGTERM)
        out, _ = waiter.communicate(timeout=40)  # before the fix it waited forever
        assert waiter.returncode == 143, out   # 128 + SIGTERM, as `bench` exits
        assert "interrupted" in out and "finished" not in out
        mine = [r for r in instance.get_runs() if r.tags.get(runner.PID_TAG) == str(waiter.pid)]
        assert mine and all(r.status == DagsterRunStatus.FAILURE for r in mine)
        assert all(p.run_id != mine[0].run_id
                   for p in instance.event_log_storage.get_concurrency_info("gpu").pending_steps)
    finally:
        holder.kill()
        holder.wait()
