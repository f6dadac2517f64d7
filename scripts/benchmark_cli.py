"""Time what a researcher waits for in the daily loop (issue 39 item 6), each a fresh process as a shell runs it:
`bench --help`, `bench metrics`, a rerun of `bench evaluate` that finds every partition up to date, and `bench ui`
from start to a loaded code location and from Ctrl-C to every process gone.

    .venv/bin/python scripts/benchmark_cli.py [--benchmark mbench] [--generator mbench_changing] [--work DIR]
                                              [--repeat 3] [--skip-ui]

The first evaluate fills a private store and Dagster home under --work (about a minute for MBench's embedded
data); the timed reruns then materialise nothing. Each line prints the median wall time, the child's CPU seconds
(user + system: what the command itself costs, whatever else loads the machine), the target and ``ratio`` = median
wall / target (below 1 meets it). Targets: --help < 1 s, bench metrics < 3 s, no-change evaluate < 10 s, UI start
< 30 s, UI stop < 5 s: on this machine alone; the load average is printed beside them.
"""
from __future__ import annotations

import argparse
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from bench_assets.cli import ui_loaded  # noqa: E402  (what `bench ui` itself asks before it says "ready")
BENCH = str(Path(sys.executable).parent / "bench")
TARGETS = {"bench --help": 1.0, "bench metrics": 3.0, "bench evaluate (no change)": 10.0,
           "bench ui start (code location loaded)": 30.0, "bench ui stop (Ctrl-C to every process gone)": 5.0}


def timed(cmd: list[str], env: dict, expect: set[int]) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``cmd``; the CPU is the child's user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in expect:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ui_start_stop(env: dict, timeout_s: float = 300.0) -> tuple[float, float, str]:
    """(seconds to a loaded code location, seconds from SIGINT to every process of the tree gone, the tail of
    what `bench ui` printed) of one `bench ui` on free ports."""
    import psutil
    port, report = free_port(), free_port()
    proc = subprocess.Popen([BENCH, "ui", "--port", str(port), "--report-port", str(report)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    t0 = time.perf_counter()
    try:
        while ui_loaded(port) is not True:
            if proc.poll() is not None or time.perf_counter() - t0 > timeout_s:
                raise SystemExit(f"bench ui never loaded its code location:\n{proc.stdout.read()[-2000:]}")
            time.sleep(0.25)
        start = time.perf_counter() - t0
        tree = [proc.pid] + [p.pid for p in psutil.Process(proc.pid).children(recursive=True)]
        t1 = time.perf_counter()
        proc.send_signal(signal.SIGINT)
        out = proc.communicate(timeout=120)[0]
        while any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in tree):
            if time.perf_counter() - t1 > 120:
                break
            time.sleep(0.05)
        return start, time.perf_counter() - t1, out[-1500:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def line(name: str, walls: list[float], cpus: list[float] | None = None) -> str:
    med = statistics.median(walls)
    target = TARGETS.get(name)
    cpu = f", CPU {statistics.median(cpus):.2f} s" if cpus else ""
    ratio = f"; target < {target:g} s, ratio {med / target:.2f}" if target else ""
    return f"{name + ':':48s} median {med:6.2f} s (runs: {', '.join(f'{x:.2f}' for x in walls)}{cpu}){ratio}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", default="mbench")
    ap.add_argument("--generator", default="mbench_changing", help="a folder name under data/generators")
    ap.add_argument("--work", default=None, help="store + Dagster home (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-ui", action="store_true", help="leave out bench ui start / stop")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-cli-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "DAGSTER_HOME"}
    env.update(BENCH_STORE_ROOT=str(work / "store"), DAGSTER_HOME=str(work / "home"), BENCH_JUDGE_MODE="off")
    out = []
    runs = [timed([BENCH, "--help"], env, {0}) for _ in range(max(args.repeat, 3))]
    out.append(line("bench --help", [w for w, _ in runs], [c for _, c in runs]))
    runs = [timed([BENCH, "metrics"], env, {0}) for _ in range(args.repeat)]
    out.append(line("bench metrics", [w for w, _ in runs], [c for _, c in runs]))
    evaluate = [BENCH, "evaluate", "--benchmark", args.benchmark, "--generator",
                str(ROOT / "data" / "generators" / args.generator)]
    first, _ = timed(evaluate, env, {0, 1})
    out.append(f"{'bench evaluate (first, ' + args.benchmark + '):':48s} {first:.1f} s (fills the store; no target)")
    runs = [timed(evaluate, env, {0, 1}) for _ in range(args.repeat)]
    out.append(line("bench evaluate (no change)", [w for w, _ in runs], [c for _, c in runs]))
    if not args.skip_ui:
        ui = [ui_start_stop(env) for _ in range(max(1, args.repeat - 1))]
        out.append(line("bench ui start (code location loaded)", [s for s, _, _ in ui]))
        out.append(line("bench ui stop (Ctrl-C to every process gone)", [s for _, s, _ in ui]))
        if any("Traceback" in t for _, _, t in ui):
            out.append("bench ui printed a traceback while stopping:\n" + next(t for _, _, t in ui if "Traceback" in t))
    for x in out:
        print(x)
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; work dir {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
