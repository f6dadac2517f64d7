"""Time what `bench` costs before it does anything (issue 34 item 4): help, argument errors and the listing
subcommands, each a fresh process as a shell runs it; median wall and CPU (user + system) seconds of the child.

    .venv/bin/python scripts/benchmark_cli_start.py [--repeat 3] [--work DIR]

Targets: a command that only parses its arguments (help, an argument error) < 1 s; a listing that builds the
resources (the model registry, the store: Dagster resources) < 2 s. ``ratio`` is the median wall over the target
(below 1 meets it). Nothing is evaluated: the store and Dagster home are empty folders under --work, so
`leaderboard` answers with its "no leaderboard" error. Imports per command: ``python -X importtime``.
"""
from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = str(Path(sys.executable).parent / "bench")
PARSE, LISTING = 1.0, 2.0  # targets, seconds of wall time
COMMANDS = [  # (arguments, exit status expected, target)
    (["--help"], 0, PARSE),
    (["metrics", "--help"], 0, PARSE),
    (["locot2v-rrub", "--help"], 0, PARSE),
    (["evaluate", "--benchmark", "entitybench"], 2, PARSE),
    (["weights", "list"], 0, LISTING),
    (["weights", "list", "--json"], 0, LISTING),
    (["metrics", "--benchmark", "locot2v"], 0, LISTING),
    (["metrics"], 0, LISTING),
    (["leaderboard", "--benchmark", "mbench"], 2, LISTING),
]


def timed(cmd: list[str], env: dict, expect: int) -> tuple[float, float]:
    """(wall, CPU) seconds of one run of ``cmd``, the CPU being the child's own user + system time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != expect:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}, not {expect}:\n{proc.stderr[-2000:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--work", default=None, help="store + Dagster home (default: a temporary folder)")
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-cli-start-"))
    (work / "home").mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "DAGSTER_HOME"}
    env.update(BENCH_STORE_ROOT=str(work / "store"), DAGSTER_HOME=str(work / "home"), BENCH_JUDGE_MODE="off")
    width = max(len(" ".join(c)) for c, _, _ in COMMANDS) + len("bench ")
    print(f"{'command':<{width}}  {'wall s':>7}  {'cpu s':>6}  {'target':>6}  {'ratio':>5}")
    for cmd, expect, target in COMMANDS:
        runs = [timed([BENCH, *cmd], env, expect) for _ in range(args.repeat)]
        wall = statistics.median(w for w, _ in runs)
        cpu = statistics.median(c for _, c in runs)
        print(f"{'bench ' + ' '.join(cmd):<{width}}  {wall:7.2f}  {cpu:6.2f}  {'<' + format(target, 'g'):>6}  "
              f"{wall / target:5.2f}")
    print(f"median of {args.repeat} runs; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())} on "
          f"{os.cpu_count()} CPUs; work dir {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
