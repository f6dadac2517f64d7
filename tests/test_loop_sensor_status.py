"""Issue 39, "waiting is visible: ... a sensor tick": a user who dropped a generator folder sees, from the CLI, whether
a sensor daemon is ticking, each generator sensor's last tick (when, and what it decided), when the next one is due,
and the folders waiting for it with how long they have waited; the tick history the UI shows (Dagster's ticks, with
our skip reasons and cursor) says the same. Before, there was no such command, and a sensor skipping behind a run
said neither for how long nor who waited on it.

A real `dagster-daemon` on the project's workspace.yaml (scripts/daemon_quiet.py's helpers) over a one-case MBench
world; the Dagster home's run queue is closed (``max_concurrent_runs: 0``), so the run the sensor requests waits in
the queue, which is itself a wait the CLI must show."""
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import daemon_quiet as dq  # noqa: E402
from tests.support.daemon import poll  # noqa: E402

SENSOR = "mbench_generators_sensor"
BENCH = str(Path(sys.executable).parent / "bench")


def ticks(home: Path) -> list:
    """Completed ticks of the MBench generator sensor, newest first."""
    from dagster._core.scheduler.instigation import InstigatorType
    inst = dq._instance(home)
    try:
        for state in inst.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            if state.instigator_name == SENSOR:
                done = [t for t in inst.get_ticks(state.instigator_origin_id, state.selector_id, limit=20)
                        if t.status.value in ("SKIPPED", "SUCCESS", "FAILURE")]
                return sorted(done, key=lambda t: t.timestamp, reverse=True)
        return []
    finally:
        inst.dispose()


def sensors(env: dict) -> list[str]:
    proc = subprocess.run([BENCH, "sensors", "--benchmark", "mbench"], env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout.splitlines()


@pytest.mark.slow
def test_bench_sensors_says_what_the_sensor_decided_and_who_waits(tmp_path):
    data = dq.small_world(tmp_path, ("mbench",))
    env = dq.environment(tmp_path, data)
    home = Path(env["DAGSTER_HOME"])
    home.mkdir()
    cfg = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    cfg["concurrency"]["runs"]["max_concurrent_runs"] = 0   # requested runs wait in the queue
    (home / "dagster.yaml").write_text(yaml.safe_dump(cfg))

    before = sensors(env)
    assert before[0].startswith("sensor daemon: not running (no heartbeat"), before
    assert before[1] == f"{SENSOR}: never ticked; next tick when a daemon runs", before
    assert before[2].startswith("  waiting for the next tick: mbench_consistent (new, last changed "), before

    proc = dq.start_daemon(env, tmp_path / "daemon.log")
    try:
        first = poll(lambda: ticks(home), lambda t: len(t) >= 1, 300, proc)
        assert first[-1].status.value == "SUCCESS" and len(first[-1].run_ids) == 1, first
        run_id = first[-1].run_ids[0]
        # the run waits in the queue: the next tick says so, for how long, and who waits on it
        added_at = time.time()
        dq.add_generator_copy(data, "mbench", "newcomer")
        later = poll(lambda: ticks(home), lambda t: any(x.timestamp > added_at + 0.5 and x.skip_reason for x in t),
                     120, proc)
        skip = next(x for x in later if x.timestamp > added_at + 0.5 and x.skip_reason).skip_reason
        lines = sensors(env)
    finally:
        dq.stop_daemon(proc)
    assert dq._group_alive(proc.pid) == []
    # the tick history (what the UI shows): our skip reason, with the wait and the folder waiting
    assert skip.startswith(f"run {run_id[:8]} of mbench_evaluate is queued (for "), skip
    assert skip.endswith("the work it leaves is requested after it ends; waiting for it: generator folders newcomer"), \
        skip
    assert first[-1].cursor and '"last": "' in first[-1].cursor   # the cursor says what the tick decided
    # the CLI: a daemon ticking, the last tick and what it decided, the queued run and its wait, the next tick
    assert lines[0].startswith("sensor daemon: running (heartbeat "), lines
    head = lines[1]
    assert head.startswith(f"{SENSOR}: last tick ") and " ago), skipped: " + skip in head, lines
    assert head.endswith(" s)") and ("next tick in about " in head or "next tick due now" in head), lines
    assert lines[2].startswith("  waiting for the next tick: newcomer (new, last changed "), lines

    # the tick that requested the run, read back: the run and its wait in the queue
    from bench_assets.core.sensor_status import sensor_lines
    inst = dq._instance(home)
    try:
        from dagster._core.scheduler.instigation import InstigatorType
        state = next(s for s in inst.all_instigator_state(instigator_type=InstigatorType.SENSOR)
                     if s.instigator_name == SENSOR)
        # a moment after the daemon stopped: the heartbeat is recent; ten minutes later it is not
        late = sensor_lines(inst, [SENSOR], str(data / "generators"), now=time.time() + 600)
        assert late[0].startswith("sensor daemon: not running (last heartbeat "), late
        assert late[1].endswith("; next tick when a daemon runs"), late
        assert state.instigator_data.min_interval == 10
        # the requested run as `bench sensors` names it under a tick that requested it: still waiting in the queue
        from bench_assets.core.sensor_status import run_words
        words = run_words(inst, run_id, time.time())
        assert words.startswith(f"{run_id[:8]} queued, waiting "), words
    finally:
        inst.dispose()
    print("\n".join(before + lines + late))
