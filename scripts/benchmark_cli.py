"""Time what a researcher waits for when there is nothing to do: `bench --help`, an argument error, and a rerun of
`bench evaluate` that finds every partition up to date (the process's whole wall time, as a shell sees it).

    .venv/bin/python scripts/benchmark_cli.py [--benchmark mbench] [--generator mbench_changing] [--work DIR]

The first evaluate fills a private store and Dagster home under --work (about a minute for MBench's embedded
data); the timed reruns then materialise nothing. Targets (issue 26): --help < 1 s, no-change evaluate < 5 s.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BENCH = str(Path(sys.executable).parent / "bench")


def timed(cmd: list[str], env: dict, expect: set[int]) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if proc.returncode not in expect:
        raise SystemExit(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--benchmark", default="mbench")
    ap.add_argument("--generator", default="mbench_changing", help="a folder name under data/generators")
    ap.add_argument("--work", default=None, help="store + Dagster home (default: a temporary folder)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args(argv)
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-cli-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "DAGSTER_HOME"}
    env.update(BENCH_STORE_ROOT=str(work / "store"), DAGSTER_HOME=str(work / "home"), BENCH_JUDGE_MODE="off")
    help_s = [timed([BENCH, "--help"], env, {0}) for _ in range(max(args.repeat, 3))]
    err_s = [timed([BENCH, "evaluate", "--benchmark", args.benchmark], env, {2}) for _ in range(args.repeat)]
    evaluate = [BENCH, "evaluate", "--benchmark", args.benchmark, "--generator",
                str(ROOT / "data" / "generators" / args.generator)]
    first = timed(evaluate, env, {0, 1})
    rerun_s = [timed(evaluate, env, {0, 1}) for _ in range(args.repeat)]
    print(f"bench --help:                      median {statistics.median(help_s):.2f} s "
          f"(runs: {', '.join(f'{x:.2f}' for x in help_s)}; target < 1 s)")
    print(f"bench evaluate (argument error):   median {statistics.median(err_s):.2f} s")
    print(f"bench evaluate (first, {args.benchmark}):   {first:.1f} s")
    print(f"bench evaluate (no change):        median {statistics.median(rerun_s):.2f} s "
          f"(runs: {', '.join(f'{x:.2f}' for x in rerun_s)}; target < 5 s)")
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs; work dir {work}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
