"""Ctrl-C and SIGTERM stop `bench demo`, `bench evaluate` and `bench validate` within 5 s (issue 26).

Each test starts the real console script in its own session (as a terminal starts a job), waits until a scored
generator partition is running (the progress lines name its stage), sends the signal the way a terminal does (to
the whole process group) or the way a supervisor does (SIGTERM to the main pid), and checks: the exit within 5 s,
the exit status (130 / 143), the one "interrupted; rerun resumes" line, no leaderboard table, board or report built
from partial tables; then a rerun resumes (finishes with fewer partitions to do than a fresh run). After a SIGINT to
the group nothing else is printed: no traceback (Dagster's compute-log tail watchers used to print a
KeyboardInterrupt traceback each), only timestamped progress lines and the interrupted line.
The validate case needs the cached footage; it skips without it, and fails under BENCH_REQUIRE_FOOTAGE=1 (CI).
Also: the progress text (pure, on a fake clock).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = str(Path(sys.executable).parent / "bench")
GENERATOR = ROOT / "data" / "generators" / "mbench_changing"


def _env(tmp_path: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "DAGSTER_HOME"}
    env.update(BENCH_STORE_ROOT=str(tmp_path / "store"), DAGSTER_HOME=str(tmp_path / "home"), BENCH_JUDGE_MODE="off",
               BENCH_DATA_ROOT=str(ROOT / "data"), BENCH_GENERATORS_ROOT=str(ROOT / "data" / "generators"))
    return env


class Job:
    """The CLI in its own session; stderr read line by line on a thread."""

    def __init__(self, args: list[str], env: dict):
        self.proc = subprocess.Popen([BENCH, *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
        self.err: list[str] = []
        self.out = ""
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.err.append(line)

    def wait_for(self, pattern: str, timeout: float = 240.0) -> str:
        rx = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for line in list(self.err):
                if rx.search(line):
                    return line
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"no line matching {pattern!r}; stderr:\n{''.join(self.err)[-3000:]}")

    def stop(self, sig: int, group: bool = True) -> tuple[int, float]:
        self.at_signal = len(self.err)  # stderr lines seen when the signal was sent
        t0 = time.monotonic()
        if group:
            os.killpg(self.proc.pid, sig)
        else:
            os.kill(self.proc.pid, sig)
        try:
            rc = self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
        dt = time.monotonic() - t0
        self.out = self.proc.stdout.read()
        self._t.join(timeout=5)
        return rc, dt


def _check_stopped(job: Job, rc: int, dt: float, code: int, name: str, tmp_path: Path) -> None:
    err = "".join(job.err)
    assert dt < 5.0, f"exit took {dt:.1f} s:\n{err[-2000:]}"
    assert rc == code, f"exit status {rc}, expected {code}:\n{err[-2000:]}"
    assert f"interrupted ({name}); rerun resumes" in err, err[-2000:]
    # nothing built from partial tables: no leaderboard table, no board printed, no report site
    assert not (tmp_path / "store" / "tables" / "mbench_leaderboard").exists()
    assert "m_score" not in job.out and "report:" not in job.out, job.out
    assert not (tmp_path / "store" / "reports").exists()


PROGRESS_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] ")


def _quiet_after_signal(job: Job, name: str) -> None:
    """After the signal: timestamped progress lines (the last one says the run stopped), then the interrupted line;
    nothing else (no traceback from a child in the process group)."""
    after = [ln.rstrip("\n") for ln in job.err[job.at_signal:] if ln.strip()]
    err = "".join(job.err)
    assert "Traceback" not in "".join(job.err[job.at_signal:]), err[-3000:]
    assert "KeyboardInterrupt" not in err, err[-3000:]
    assert after and after[-1].startswith(f"interrupted ({name}); rerun resumes"), after
    assert all(PROGRESS_LINE.match(ln) for ln in after[:-1]), after
    assert after[-2].endswith(f"| stopped ({name})"), after


def _materialised(out: str) -> int:
    return int(re.search(r"materialised (\d+) asset partitions, (\d+) failed", out).group(1))


@pytest.mark.slow
def test_sigint_to_the_group_stops_evaluate_and_a_rerun_resumes(tmp_path):
    env = _env(tmp_path)
    job = Job(["evaluate", "--benchmark", "mbench", "--generator", str(GENERATOR)], env)
    # the second scored partition is running: the first one's results are stored
    job.wait_for(r"mbench_changing x case a_env02: mbench_\w+")
    rc, dt = job.stop(signal.SIGINT)
    _check_stopped(job, rc, dt, 130, "SIGINT", tmp_path)
    _quiet_after_signal(job, "SIGINT")
    # the interrupted run is marked failed, not left STARTED
    from dagster import DagsterInstance, DagsterRunStatus, RunsFilter
    inst = DagsterInstance.from_config(str(tmp_path / "home"))
    live = inst.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING]))
    failed = inst.get_runs(filters=RunsFilter(statuses=[DagsterRunStatus.FAILURE]))
    inst.dispose()
    assert not live and failed, (live, failed)
    rerun = subprocess.run([BENCH, "evaluate", "--benchmark", "mbench", "--generator", str(GENERATOR)], env=env,
                           capture_output=True, text=True, timeout=600)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    # resumed: the 8 case partitions and the first scored partition (4 assets) are not done again
    done = _materialised(rerun.stdout)
    assert 0 < done <= 41 - 8 - 4, rerun.stdout[-1500:]
    assert "m_score" in rerun.stdout and (tmp_path / "store" / "tables" / "mbench_leaderboard").exists()


@pytest.mark.slow
def test_sigterm_to_the_main_pid_stops_evaluate_with_143(tmp_path):
    job = Job(["evaluate", "--benchmark", "mbench", "--generator", str(GENERATOR)], _env(tmp_path))
    job.wait_for(r"mbench_changing x case a_env01: mbench_\w+")
    rc, dt = job.stop(signal.SIGTERM, group=False)
    _check_stopped(job, rc, dt, 143, "SIGTERM", tmp_path)


@pytest.mark.slow
def test_sigint_to_the_group_stops_demo_before_any_board(tmp_path):
    job = Job(["demo", "--benchmark", "mbench"], _env(tmp_path))
    job.wait_for(r"x case a_env01: mbench_\w+")
    rc, dt = job.stop(signal.SIGINT)
    _check_stopped(job, rc, dt, 130, "SIGINT", tmp_path)
    _quiet_after_signal(job, "SIGINT")
    # one signal is enough: no other partition started after it (a stage of the one running may still start)
    part = re.compile(r"\| (\S+ x case \w+|case \w+): ")
    before = [m.group(1) for ln in job.err[:job.at_signal] if (m := part.search(ln))]
    after = {m.group(1) for ln in job.err[job.at_signal:] if (m := part.search(ln))}
    assert before and after <= {before[-1]}, (before[-1:], after)


@pytest.mark.slow
def test_sigint_to_the_group_stops_validate(tmp_path):
    from bench_assets.core.footage import require_footage
    from bench_assets.mbench.validity import CASES
    # the footage MBench's suite reads: a skip naming the fetch command, a failure under BENCH_REQUIRE_FOOTAGE=1
    require_footage(*sorted({s for c in CASES for s in c.sources}))
    env = _env(tmp_path)
    if os.environ.get("BENCH_FOOTAGE_DIR"):  # the cache the check above found
        env["BENCH_FOOTAGE_DIR"] = os.environ["BENCH_FOOTAGE_DIR"]
    job = Job(["validate", "--benchmark", "mbench"], env)
    job.wait_for(r"x case \w+: mbench_\w+", timeout=400)
    rc, dt = job.stop(signal.SIGINT)
    err = "".join(job.err)
    assert dt < 5.0 and rc == 130, (rc, dt, err[-2000:])
    assert "interrupted (SIGINT); rerun resumes" in err
    assert "validity table:" not in job.out


# ---------------------------------------------------------------------- progress text (pure)
class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_progress_lines_name_partition_stage_rate_and_eta(capsys):
    from bench_assets.core.runner import Progress
    clock = Clock()
    p = Progress(2 + 4 + 1, "entitybench", enabled=False, clock=clock)
    p.plan("episode", 2)
    p.plan("generator x episode", 4)
    p.plan("aggregate", 1)
    for item in ("e1", "e2"):  # dataset partitions: 2 s each
        p.label(f"episode {item}", "episode")
        p.stage("entitybench_episode")
        clock.t += 2
        p.step()
    p.label("faithful x episode e1", "generator x episode")
    p.stage("entitybench_grounding")
    clock.t += 30
    p.stage("entitybench_pillar1")
    clock.t += 30
    p.step()
    assert p.rate_eta() == "1.00 episode/min, ETA 3m00s+"  # + the aggregate, whose time is not known yet
    p.label("faithful x episode e2", "generator x episode")
    p.step()  # up to date: never started a stage, costs nothing and does not count towards the rate
    p.label("entitybench_leaderboard", "aggregate")
    p.stage("entitybench_leaderboard")
    clock.t += 10
    p.step()
    p.label("faithful x episode e3", "generator x episode")
    assert p.rate_eta() == "1.00 episode/min, ETA 2m00s"  # two scored partitions left at 60 s each
    err = capsys.readouterr().err.splitlines()
    stamp = r"^\[\d\d:\d\d:\d\d\] "
    assert all(re.match(stamp, ln) for ln in err), err
    assert err[0].endswith("entitybench 0/7 partitions, 0s elapsed, rate -, ETA - | episode e1: entitybench_episode")
    assert err[3].endswith("| faithful x episode e1: entitybench_pillar1"), err[3]
    assert err[1].endswith("entitybench 1/7 partitions, 2s elapsed, 30.00 episode/min, ETA 2s+ | episode e2: "
                           "entitybench_episode"), err[1]  # one dataset partition left; the rest not timed yet
    assert "entitybench 2/7 partitions, 34s elapsed, rate -, ETA - |" in err[3]  # no scored partition done yet


def test_progress_heartbeat_off_a_terminal(capsys):
    from bench_assets.core.runner import Progress
    clock = Clock()
    p = Progress(3, "mbench", enabled=False, clock=clock)
    p.plan("case", 3)
    p.label("case a1", "case")
    p.stage("mbench_case")
    clock.t += 10
    p.tick()
    clock.t += 25
    p.tick()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[1].endswith("| case a1: mbench_case (still running)"), err


def test_compute_log_tails_start_outside_the_terminals_process_group(tmp_path):
    """Dagster's per-step `tail -F` and its Python orphan watcher (compute_logs.execute_posix_tail) run in their own
    session once the runner has set it up, so the terminal's Ctrl-C never reaches them (no traceback from them)."""
    from dagster._core.execution import compute_logs
    from bench_assets.core.runner import quiet_log_tails
    quiet_log_tails()
    quiet_log_tails()  # idempotent
    log = tmp_path / "step.log"
    log.write_text("")
    out = tmp_path / "mirror.txt"
    with open(out, "w") as stream, compute_logs.tail_to_stream(str(log), stream) as (tail_pid, watcher_pid):
        try:
            for pid in (tail_pid, watcher_pid):
                assert os.getsid(pid) == pid != os.getsid(0)            # a session (and group) of its own
                assert os.getpgid(pid) != os.getpgid(0)
        finally:
            # end both here: in the whole suite's long-lived pytest process a `tail` once outlived Dagster's
            # SIGTERM + 30 s wait (not seen alone; the session check above is what this test is about)
            for pid in (tail_pid, watcher_pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
