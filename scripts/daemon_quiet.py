"""After `bench demo`, the Dagster daemon queues nothing: the sensors see that the demo materialised everything.

    python scripts/daemon_quiet.py [--seconds 120] [--work DIR] [--negative-control]

1. Builds a small world with all five benchmarks (one item and one generator each, the README's own-data recipes'
   inputs copied from the embedded benchmark) in a fresh DAGSTER_HOME and store, and runs `bench demo` on it.
2. Starts a real `dagster-daemon run` on the project's workspace.yaml in its own process group. The generator
   sensors and the automation sensor are declared ``default_status=RUNNING`` (core/automation.py,
   definitions.py): nothing is started by hand, as after `make demo` then `make ui`.
3. After ``--seconds`` (or, with ``--until-ticks K``, once every sensor has ticked K times) it stops the
   daemon's whole process group and counts, in the instance: runs created after the demo, backfills, and the
   ticks of every sensor with their status and skip reasons. 0 runs means something only when the sensors did
   evaluate, so at least one completed tick per generator sensor is required and a failed tick fails the check.
4. ``--negative-control``: then adds a copy of one generator folder under a new name (a user dropping in a new
   generator) and keeps the daemon running until it queues a run for it (or ``--control-seconds`` pass): the
   check can fail.

Prints one line per phase and a JSON summary (``--json``); exits 1 when the quiet phase queued a run, a sensor
never ticked or failed, or the negative control queued nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Optional

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
sys.path.insert(0, str(ROOT))

# (benchmark, generator folder in data/generators, files of the item) as in the README's own-data recipes
WORLD = {
    "entitybench": ("faithful", ["entitybench/episodes/e0001.json"], ["e0001"]),
    "vistorybench": ("vistory_faithful", ["vistorybench/08", "vistorybench/human_ratings.csv"], ["08"]),
    "mbench": ("mbench_consistent", ["mbench/cases/a_obj01.json", "mbench/frames/a_obj01.png"], ["a_obj01.mp4"]),
    "locot2v": ("locot2v_smooth", ["locot2v/samples/life_1.json"], ["life_1.mp4"]),
    "narrativetrack": ("narrativetrack_claude_haiku", ["narrativetrack/videos/nt001.mp4"], []),
}
GENERATOR_SENSORS = tuple(f"{b}_generators_sensor" for b in WORLD)
AUTOMATION_SENSOR = "bench_automation_sensor"


def small_world(root: Path, benchmarks=tuple(WORLD)) -> Path:
    """A data root holding each benchmark with one item and one generator (copied from the embedded data); the
    other benchmarks have no folder, so their sensors find nothing (and say so)."""
    data = root / "data"
    for bench in benchmarks:
        gen, files, outputs = WORLD[bench]
        for f in files:
            src, dst = DATA / f, data / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            if src.is_dir():
                shutil.copytree(src, dst, dirs_exist_ok=True)
            else:
                shutil.copy(src, dst)
        g = data / "generators" / gen
        g.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / "generators" / gen / "generator.yaml", g / "generator.yaml")
        for o in outputs:
            src = DATA / "generators" / gen / o
            if src.is_dir():
                shutil.copytree(src, g / o, dirs_exist_ok=True)
            else:
                shutil.copy(src, g / o)
    return data


def environment(root: Path, data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("BENCH_") and k not in ("DAGSTER_HOME", "ANTHROPIC_API_KEY", "OPENAI_API_KEY")}
    env.update({"BENCH_DATA_ROOT": str(data), "BENCH_GENERATORS_ROOT": str(data / "generators"),
                "BENCH_STORE_ROOT": str(root / "store"), "DAGSTER_HOME": str(root / "dagster_home"),
                "BENCH_JUDGE_MODE": "off", "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
    return env


def add_generator_copy(data: Path, bench: str, name: str = "newcomer") -> Path:
    """A new generator folder (a copy of the world's one under another name), as a user would drop one in."""
    gen, _, _ = WORLD[bench]
    dst = data / "generators" / name
    shutil.copytree(data / "generators" / gen, dst)
    card = (dst / "generator.yaml").read_text()
    lines = [f"name: {name}" if ln.startswith("name:") else ln for ln in card.splitlines()]
    (dst / "generator.yaml").write_text("\n".join(lines) + "\n")
    return dst


# ---------------------------------------------------------------------- the instance's view
def _instance(home: Path):
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef
    return DagsterInstance.from_ref(InstanceRef.from_dir(str(home)))


def instance_counts(home: Path, after: float) -> dict:
    """Runs and backfills created after ``after`` (epoch seconds) and every sensor's ticks."""
    from dagster import RunsFilter
    from dagster._core.scheduler.instigation import InstigatorType
    from datetime import datetime, timezone
    inst = _instance(home)
    try:
        since = datetime.fromtimestamp(after, tz=timezone.utc)
        runs = inst.get_runs(filters=RunsFilter(created_after=since))
        backfills = [b for b in inst.get_backfills() if b.backfill_timestamp > after]
        sensors: dict[str, dict] = {}
        for state in inst.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            ticks = inst.get_ticks(state.instigator_origin_id, state.selector_id, after=after)
            status = Counter(t.status.value for t in ticks)
            reasons = Counter(t.skip_reason for t in ticks if t.skip_reason)
            sensors[state.instigator_name] = {
                "ticks": len(ticks), "status": dict(status), "skip_reasons": dict(reasons),
                "run_ids": sorted({r for t in ticks for r in (t.run_ids or [])}),
                "errors": [t.error.message.strip()[:300] for t in ticks if t.error is not None][:3]}
        return {"runs": [{"run_id": r.run_id, "job": r.job_name, "status": r.status.value,
                          "tags": {k: v for k, v in r.tags.items() if k.startswith(("bench/", "dagster/partition",
                                                                                     "dagster/sensor"))}}
                         for r in runs],
                "backfills": [b.backfill_id for b in backfills], "sensors": sensors}
    finally:
        inst.dispose()


def _done_ticks(s: Optional[dict]) -> int:
    return 0 if not s else sum(n for st, n in s["status"].items() if st in ("SKIPPED", "SUCCESS", "FAILURE"))


# ---------------------------------------------------------------------- the daemon
def start_daemon(env: dict, log: Path) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "dagster._daemon", "run", "-w", str(ROOT / "workspace.yaml")]
    if shutil.which("dagster-daemon", path=str(Path(sys.executable).parent)):
        cmd = [str(Path(sys.executable).parent / "dagster-daemon"), "run", "-w", str(ROOT / "workspace.yaml")]
    return subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=open(log, "ab"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def stop_daemon(proc: subprocess.Popen) -> float:
    """SIGTERM the daemon's process group (code server, run workers included), SIGKILL what remains."""
    from bench_assets.cli import stop_process_tree
    t0 = time.monotonic()
    stop_process_tree(proc, grace_s=20.0)
    return time.monotonic() - t0


def watch(home: Path, after: float, proc: subprocess.Popen, seconds: float, until_ticks: int = 0,
          until_runs: bool = False, poll_s: float = 3.0) -> dict:
    """Poll the instance until ``seconds`` pass, or every generator sensor has ``until_ticks`` completed ticks,
    or (``until_runs``) a run was created; the daemon dying early is reported, not waited out."""
    t0 = time.monotonic()
    counts: dict = {"runs": [], "backfills": [], "sensors": {}}
    while True:
        time.sleep(poll_s)
        try:
            counts = instance_counts(home, after)
        except Exception as e:  # noqa: BLE001 - the daemon may hold the SQLite write lock for a moment
            counts.setdefault("poll_errors", []).append(f"{type(e).__name__}: {str(e)[:120]}")
        elapsed = time.monotonic() - t0
        if proc.poll() is not None:
            counts["daemon_exit"] = proc.returncode
            break
        if until_runs and (counts["runs"] or counts["backfills"]):
            break
        if until_ticks and all(_done_ticks(counts["sensors"].get(s)) >= until_ticks for s in GENERATOR_SENSORS):
            break
        if elapsed >= seconds:
            break
    counts["seconds"] = round(time.monotonic() - t0, 1)
    return counts


def summary_line(phase: str, c: dict) -> str:
    gen = [c["sensors"].get(s) for s in GENERATOR_SENSORS]
    ticks = sum(_done_ticks(s) for s in c["sensors"].values())
    status = Counter()
    reasons = Counter()
    for s in c["sensors"].values():
        status.update(s["status"])
        reasons.update(s["skip_reasons"])
    never = [n for n, s in zip(GENERATOR_SENSORS, gen) if _done_ticks(s) == 0]
    top = "; ".join(f"{n}x '{r}'" for r, n in reasons.most_common(2))
    return (f"{phase}: {c['seconds']:.0f} s of dagster-daemon, {len(c['runs'])} runs queued, "
            f"{len(c['backfills'])} backfills; {ticks} sensor ticks over {len(c['sensors'])} sensors "
            f"({', '.join(f'{k} {v}' for k, v in sorted(status.items()))})"
            + (f"; skip reasons: {top}" if top else "") + (f"; never ticked: {', '.join(never)}" if never else ""))


def quiet_failures(c: dict) -> list[str]:
    out = []
    if c["runs"] or c["backfills"]:
        out.append(f"{len(c['runs'])} runs / {len(c['backfills'])} backfills queued after the demo: "
                   + ", ".join(f"{r['job']} {r['tags'].get('dagster/partition', '')}" for r in c["runs"][:5]))
    for s in GENERATOR_SENSORS:
        st = c["sensors"].get(s)
        if _done_ticks(st) == 0:
            out.append(f"{s} never completed a tick (0 runs would prove nothing)")
        elif st["status"].get("FAILURE"):
            out.append(f"{s} failed {st['status']['FAILURE']} ticks: {st['errors'][:1]}")
        elif not st["skip_reasons"]:
            out.append(f"{s} ticked without a skip reason")
    if "daemon_exit" in c:
        out.append(f"dagster-daemon exited early with status {c['daemon_exit']}")
    return out


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=120.0, help="daemon time of the quiet phase (default 120)")
    ap.add_argument("--until-ticks", type=int, default=0,
                    help="end the quiet phase early once every generator sensor completed this many ticks")
    ap.add_argument("--negative-control", action="store_true",
                    help="then add a new generator folder and require the daemon to queue a run for it")
    ap.add_argument("--control-seconds", type=float, default=90.0)
    ap.add_argument("--benchmarks", default=",".join(WORLD),
                    help="comma-separated benchmarks in the world (default: all five; the others' sensors find "
                         "no folder and skip)")
    ap.add_argument("--work", default=None, help="folder for the world, store and DAGSTER_HOME (default: a temp dir)")
    ap.add_argument("--no-demo", action="store_true",
                    help="reuse --work from an earlier run whose demo completed (debugging the daemon phase)")
    ap.add_argument("--json", default=None, metavar="FILE", help="write the full counts here")
    args = ap.parse_args(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="daemon_quiet_"))
    work.mkdir(parents=True, exist_ok=True)
    benches = [b.strip() for b in args.benchmarks.split(",") if b.strip()]
    unknown = sorted(set(benches) - set(WORLD))
    if unknown or not benches:
        ap.error(f"unknown benchmark(s) {unknown}; have {', '.join(WORLD)}")
    data = small_world(work, benches)
    env = environment(work, data)
    home = Path(env["DAGSTER_HOME"])
    result: dict = {"work": str(work)}

    t0 = time.monotonic()
    # `bench demo` as `make demo` runs it (every benchmark), or one benchmark at a time for a smaller world
    demos = [["demo"]] if len(benches) == len(WORLD) else [["demo", "--benchmark", b] for b in benches]
    for cmd in ([] if args.no_demo else demos):
        demo = subprocess.run([sys.executable, "-m", "bench_assets.cli", *cmd], cwd=ROOT, env=env,
                              stdout=open(work / "demo.log", "ab"), stderr=subprocess.STDOUT)
        if demo.returncode != 0:
            break
    result["demo_s"] = round(time.monotonic() - t0, 1)
    if not args.no_demo and demo.returncode != 0:
        print(f"daemon_quiet: bench demo failed (status {demo.returncode}, {result['demo_s']} s); see "
              f"{work / 'demo.log'}", file=sys.stderr)
        return 2
    demo_runs = len(_runs_after(home, 0.0))
    after = time.time()
    print(f"demo: {', '.join(benches)}: {demo_runs} runs in process, {result['demo_s']:.0f} s", flush=True)

    proc = start_daemon(env, work / "daemon.log")
    failures: list[str] = []
    try:
        quiet = watch(home, after, proc, args.seconds, args.until_ticks)
        result["quiet"] = quiet
        print(summary_line("quiet", quiet), flush=True)
        failures += quiet_failures(quiet)
        if args.negative_control and not failures:
            marker = time.time()
            add_generator_copy(data, benches[0])
            control = watch(home, marker, proc, args.control_seconds, until_runs=True)
            result["control"] = control
            print(summary_line("negative control (new generator folder)", control), flush=True)
            if not control["runs"] and not control["backfills"]:
                failures.append(f"negative control: a new generator folder queued no run in {control['seconds']} s")
    finally:
        result["stop_s"] = round(stop_daemon(proc), 1)
    left = _group_alive(proc.pid)
    if left:
        failures.append(f"processes of the daemon's group still alive after stopping: {left}")
    result["failures"] = failures
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1, default=str))
    q = result.get("quiet", {})
    print(f"daemon_quiet: {'FAIL' if failures else 'PASS'}: after bench demo, {q.get('seconds', 0):.0f} s of the "
          f"daemon queued {len(q.get('runs', []))} runs; "
          f"{sum(_done_ticks(s) for s in q.get('sensors', {}).values())} sensor ticks"
          + (f"; negative control queued {len(result['control']['runs'])} runs in "
             f"{result['control']['seconds']:.0f} s" if "control" in result else "")
          + f"; daemon stopped in {result['stop_s']} s" + ("".join(f"\n  - {f}" for f in failures)))
    return 1 if failures else 0


def _runs_after(home: Path, after: float) -> list:
    from datetime import datetime, timezone
    from dagster import RunsFilter
    inst = _instance(home)
    try:
        return inst.get_runs(filters=RunsFilter(created_after=datetime.fromtimestamp(after, tz=timezone.utc)))
    finally:
        inst.dispose()


def _group_alive(pgid: int) -> list[int]:
    """Processes still in the daemon's process group."""
    out = []
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            stat = (p / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
                out.append(int(p.name))
        except (OSError, ValueError, IndexError):
            continue
    return out


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    raise SystemExit(main())
