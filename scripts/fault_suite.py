"""Fault suite: what real runs do to the platform, as figures.

    python scripts/fault_suite.py                 # full form: 10 SIGKILLs, 10 concurrent evaluations, ...
    python scripts/fault_suite.py --bounded       # what CI runs (tests/faults/test_fault_suite.py)
    python scripts/fault_suite.py --only crash,judge --json figures.json

Sections (each prints one figure line):
  crash       real `bench evaluate` processes SIGKILLed (the first while a pool="gpu" step holds its slot, the
              others at random times), then resumed by the same command with no help; survived = the resume
              exits 0 within its time limit and every table equals a clean run's.
  concurrent  N `bench evaluate` processes started at once on a fresh Dagster home (one SQLite schema, one
              GPU pool slot, one store): how many finish with exit 0.
  judge       every kind of bad reply a Messages API endpoint can give (tests/support/fake_anthropic.py on 127.0.0.1),
              alone and inside a batch with good questions: exceptions escaping Judge.ask/ask_many (must be 0),
              and bad replies not counted as a failure with a reason.
  inputs      bad inputs (generator.yaml, CLI arguments, generator outputs, dataset files), each evaluated next
              to good items: one clear error each (a one-line `error:` or a reason naming the item, never a
              traceback) and no collateral loss (the good items' rows equal the clean run's).
  canary      a canary ANTHROPIC_API_KEY is set for every process and the judge section; occurrences of it in
              every file the suite wrote (SQLite event logs, Parquet, judge cache, logs) must be 0.

Exit status 0 when every figure meets its bar.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CANARY = "sk-ant-canary-FAULTSUITE-7f3a9c1e5d2b4a60"
BENCH = [sys.executable, "-m", "bench_assets.cli"]

# The crash workload: one MBench case, one generator. Its pool="gpu" steps (poses, tracks, scores) take
# seconds each, so a kill lands inside one; the whole evaluation is small enough to repeat.
CRASH_BENCHMARK, CRASH_CASE = "mbench", "a_obj01"
CRASH_GENERATORS = ("mbench_consistent", "mbench_changing", "mbench_lighting", "mbench_ignoring")


@dataclass
class Figures:
    lines: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    ok: bool = True

    def add(self, key: str, line: str, ok: bool, **data: Any) -> None:
        self.lines.append(f"{'PASS' if ok else 'FAIL'}  {line}")
        self.data[key] = {"ok": ok, **data}
        self.ok &= ok
        print(self.lines[-1], flush=True)


# ---------------------------------------------------------------------- worlds and processes
def mbench_world(root: Path, generators=CRASH_GENERATORS[:1], cases=(CRASH_CASE,)) -> Path:
    """A data root with MBench cases and generator folders copied from the embedded benchmark."""
    data = root / "data"
    (data / "mbench" / "cases").mkdir(parents=True, exist_ok=True)
    for c in cases:
        shutil.copy(DATA / "mbench" / "cases" / f"{c}.json", data / "mbench" / "cases" / f"{c}.json")
    if (DATA / "mbench" / "frames").is_dir() and not (data / "mbench" / "frames").exists():
        shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
    for g in generators:
        dst = data / "generators" / g
        dst.mkdir(parents=True, exist_ok=True)
        shutil.copy(DATA / "generators" / g / "generator.yaml", dst / "generator.yaml")
        for c in cases:
            shutil.copy(DATA / "generators" / g / f"{c}.mp4", dst / f"{c}.mp4")
    return data


def bench_env(root: Path, data: Path, home: Optional[Path] = None, store: Optional[Path] = None) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"BENCH_DATA_ROOT": str(data), "BENCH_GENERATORS_ROOT": str(data / "generators"),
                "BENCH_STORE_ROOT": str(store or root / "store"), "DAGSTER_HOME": str(home or root / "home"),
                "BENCH_WEIGHTS_DIR": str(root / "weights"), "BENCH_JUDGE_MODE": "off",
                "ANTHROPIC_API_KEY": CANARY, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1"})
    return env


def start_evaluate(env: dict, generator_dir: Path, log: Path, benchmark: str = CRASH_BENCHMARK) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen([*BENCH, "evaluate", "--benchmark", benchmark, "--generator", str(generator_dir)],
                            cwd=ROOT, env=env, stdout=open(log, "wb"), stderr=subprocess.STDOUT,
                            start_new_session=True)


def run_evaluate(env: dict, generator_dir: Path, log: Path, timeout_s: float,
                 benchmark: str = CRASH_BENCHMARK) -> tuple[Optional[int], float]:
    """(exit status or None when it ran past ``timeout_s``, seconds)."""
    t0 = time.monotonic()
    proc = start_evaluate(env, generator_dir, log, benchmark)
    try:
        rc = proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        rc = None
    return rc, time.monotonic() - t0


def gpu_slot_claimed(home: Path) -> bool:
    """True while a step holds a slot of the "gpu" pool in this home's instance (read from its own storage)."""
    if not (home / "dagster.yaml").exists() or not (home / "history" / "runs" / "index.db").exists():
        return False
    from dagster import DagsterInstance
    from bench_assets.core.runner import home_lock
    os.environ["DAGSTER_HOME"] = str(home)
    # Under the home lock the evaluating process takes while it creates the schema: an unlocked open could
    # create the same tables at the same moment and make *that* process fail ("table runs already exists").
    with home_lock(home):
        try:
            inst = DagsterInstance.get()
        except Exception:  # the probe only reads: a failed open is "not yet"
            return False
    try:
        return bool(inst.event_log_storage.get_concurrency_info("gpu").claimed_slots)
    except Exception:  # schema not created yet, or locked for a moment
        return False
    finally:
        inst.dispose()


def tables(store: Path) -> dict[str, Any]:
    """asset -> a canonical DataFrame of all its Parquet files (partition path as a column, rows sorted)."""
    import pandas as pd
    out = {}
    base = store / "tables"
    if not base.is_dir():
        return out
    for asset in sorted(p.name for p in base.iterdir() if p.is_dir()):
        frames = []
        for f in sorted((base / asset).rglob("*.parquet")):
            df = pd.read_parquet(f)
            df.insert(0, "_file", str(f.relative_to(base / asset)))
            frames.append(df)
        if not frames:
            continue
        df = pd.concat(frames, ignore_index=True)
        df = df[sorted(df.columns)]
        key = df.astype(str)
        df = df.loc[key.sort_values(list(key.columns)).index].reset_index(drop=True)
        out[asset] = df
    return out


def table_differences(a: dict, b: dict) -> list[str]:
    import pandas as pd
    diffs = [f"{k}: only in {'clean' if k in a else 'resumed'} run" for k in sorted(set(a) ^ set(b))]
    for k in sorted(set(a) & set(b)):
        try:
            pd.testing.assert_frame_equal(a[k], b[k], check_dtype=False, check_exact=False, rtol=1e-9, atol=1e-12)
        except AssertionError as e:
            diffs.append(f"{k}: {str(e).strip().splitlines()[0][:200]}")
    return diffs


# ---------------------------------------------------------------------- sections
def section_crash(work: Path, kills: int, figs: Figures, seed: int, resume_timeout_s: float) -> None:
    rng = random.Random(seed)
    gen = CRASH_GENERATORS[0]
    source = mbench_world(work / "crash" / "source")  # one copy: every run sees the same bytes
    clean = work / "crash" / "clean"
    data = clean / "data"
    shutil.copytree(source, data)
    env = bench_env(clean, data)
    rc, clean_s = run_evaluate(env, data / "generators" / gen, clean / "clean.log", resume_timeout_s)
    if rc != 0:
        figs.add("crash", f"crash: the clean run itself failed (exit {rc}); see {clean / 'clean.log'}", False)
        return
    reference = tables(clean / "store")
    survived, details = 0, []
    for k in range(kills):
        trial = work / "crash" / f"kill{k:02d}"
        tdata = trial / "data"
        shutil.copytree(source, tdata)
        tenv = bench_env(trial, tdata)
        proc = start_evaluate(tenv, tdata / "generators" / gen, trial / "killed.log")
        t0 = time.monotonic()
        where = ""
        if k == 0:  # during a pool="gpu" step: wait until the slot is claimed
            while proc.poll() is None and time.monotonic() - t0 < resume_timeout_s:
                if gpu_slot_claimed(trial / "home"):
                    where = "while a pool=gpu step held its slot"
                    break
                time.sleep(0.2)
        else:
            delay = rng.uniform(1.0, max(2.0, clean_s * 0.9))
            while proc.poll() is None and time.monotonic() - t0 < delay:
                time.sleep(0.05)
            where = f"at {delay:.1f} s"
        finished_first = proc.poll() is not None
        if not finished_first:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        rc, secs = run_evaluate(tenv, tdata / "generators" / gen, trial / "resumed.log", resume_timeout_s)
        diffs = table_differences(reference, tables(trial / "store")) if rc == 0 else []
        ok = rc == 0 and not diffs
        survived += ok
        details.append({"trial": k, "killed": where if not finished_first else "finished before the kill",
                        "resume_exit": rc, "resume_s": round(secs, 1), "differences": diffs[:5]})
        print(f"  kill {k}: {details[-1]['killed']}; resume exit {rc} in {secs:.1f} s; "
              f"{'tables identical' if ok else (diffs[:2] or 'no tables')}", flush=True)
    figs.add("crash", f"crash: {survived} of {kills} SIGKILLed evaluations resumed unaided with tables identical "
                      f"to a clean run (clean run {clean_s:.0f} s)", survived == kills and kills > 0,
             survived=survived, kills=kills, trials=details)


def section_concurrent(work: Path, n: int, figs: Figures, timeout_s: float) -> None:
    root = work / "concurrent"
    data = mbench_world(root, generators=CRASH_GENERATORS)
    env = bench_env(root, data)
    procs = []
    for k in range(n):
        g = CRASH_GENERATORS[k % len(CRASH_GENERATORS)]
        procs.append(start_evaluate(env, data / "generators" / g, root / f"eval{k:02d}.log"))
    deadline = time.monotonic() + timeout_s
    rcs = []
    for p in procs:
        try:
            rcs.append(p.wait(timeout=max(1.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rcs.append(None)
    done = sum(rc == 0 for rc in rcs)
    errors = []
    for k, rc in enumerate(rcs):
        if rc != 0:
            tail = (root / f"eval{k:02d}.log").read_text(errors="replace").strip().splitlines()[-3:]
            errors.append({"process": k, "exit": rc, "tail": tail})
    figs.add("concurrent", f"concurrent: {done} of {n} simultaneous `bench evaluate` on a fresh home finished",
             done == n, finished=done, started=n, failures=errors)


def judge_fault_kinds() -> dict[str, Callable[[], dict]]:
    """name -> a step for tests/support/fake_anthropic.py (every reply shape the issue lists, and the usual outages)."""
    sys.path.insert(0, str(ROOT))
    from tests.support import fake_anthropic as F

    def raw(status: int, body: str, ctype_json: bool = True) -> dict:
        return {"status": status, "body": body, "headers": {} if ctype_json else {"content-type": "text/html"}}

    msg = F._message
    return {
        "truncated_json": lambda: raw(200, '{"id": "msg_x", "type": "message", "content": [{"type": "tool_u'),
        "wrong_shape_json": lambda: raw(200, json.dumps({"hello": "world", "content": "not a list"})),
        "json_array_body": lambda: raw(200, json.dumps([1, 2, 3])),
        "html_body": lambda: raw(200, "<html><body><h1>502 Bad Gateway</h1></body></html>", False),
        "empty_body": lambda: raw(200, ""),
        "content_null": lambda: {"status": 200, "body": {**msg([], "end_turn")["body"], "content": None}},
        "content_empty": lambda: msg([], "end_turn"),
        "stop_reason_null_text_only": lambda: {"status": 200, "body": {
            **F.text_answer("no verdict")["body"], "stop_reason": None}},
        "tool_input_wrong_schema": lambda: F.malformed_tool({"score": "high", "extra": [1]}),
        "tool_input_not_object": lambda: {"status": 200, "body": {**F.tool_answer({})["body"], "content": [
            {"type": "tool_use", "id": "t", "name": "record_answer", "input": "score: 3"}]}},
        "text_without_json": lambda: F.not_json(),
        "text_truncated_json": lambda: F.text_answer('{"score": 3, "why": "the col'),
        "max_tokens_cut": lambda: F.text_answer('{"score": ', stop_reason="max_tokens"),
        "refusal": lambda: F.refusal(),
        "unknown_block_type": lambda: msg([{"type": "mystery", "data": 1}], "end_turn"),
        "http_400": lambda: F.error(400), "http_401": lambda: F.error(401), "http_404": lambda: F.error(404),
        "http_429": lambda: F.rate_limited(0.01), "http_500": lambda: F.server_error(500),
        "http_529": lambda: F.server_error(529), "error_body_html_500": lambda: raw(500, "<html>oops</html>", False),
        "slow_past_timeout": lambda: F.slow(3.0, F.tool_answer({"score": 3})),
    }


def section_judge(work: Path, figs: Figures) -> None:
    sys.path.insert(0, str(ROOT))
    os.environ["ANTHROPIC_API_KEY"] = CANARY
    from bench_resources.judge import Judge, JudgeRequest
    from tests.support.fake_anthropic import FakeAnthropic, tool_answer

    schema = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 5},
                                               "why": {"type": "string"}}, "required": ["score"]}

    def req(text: str) -> JudgeRequest:
        return JudgeRequest("fault_suite", "v1", "You are a judge.", text, schema)

    kinds = judge_fault_kinds()
    escaped, uncounted, tried, batch_losses = [], [], 0, 0
    for name, step in kinds.items():
        cache = work / "judge" / name
        tried += 1
        # Alone: the fault on every attempt (retries and re-asks see it too).
        with FakeAnthropic(responder=lambda _b, s=step: s()) as srv:
            j = Judge(mode="live", base_url=srv.base_url, cache_dir=str(cache / "alone"), backoff_s=0.01,
                      max_backoff_s=0.05, max_retries=1, timeout_s=1.0, deadline_s=5.0, parse_retries=1,
                      breaker_threshold=0)
            try:
                r = j.ask(req(f"alone {name}"))
                if r.status == "ok" or not r.reason:
                    uncounted.append(f"{name}: status {r.status}, reason {r.reason!r}")
            except Exception as e:  # noqa: BLE001 - counting them is the point
                escaped.append(f"{name} (ask): {type(e).__name__}: {str(e)[:120]}")
        # In a batch: good answers vary with the question; the bad one hits the middle question only.
        def responder(body: dict, s=step) -> dict:
            text = json.dumps(body)
            if "batch q1" in text:
                return s()
            n = sum(map(ord, text[-40:])) % 5 + 1
            return tool_answer({"score": n, "why": f"q{n}"})

        with FakeAnthropic(responder=responder) as srv:
            j = Judge(mode="live", base_url=srv.base_url, cache_dir=str(cache / "batch"), backoff_s=0.01,
                      max_backoff_s=0.05, max_retries=1, timeout_s=1.0, deadline_s=5.0, parse_retries=1,
                      breaker_threshold=0)
            try:
                rs = j.ask_many([req(f"batch q{i} {name}") for i in range(3)])
                batch_losses += sum(r.status != "ok" for i, r in enumerate(rs) if i != 1)
            except Exception as e:  # noqa: BLE001
                escaped.append(f"{name} (ask_many): {type(e).__name__}: {str(e)[:120]}")
    ok = not escaped and not uncounted and batch_losses == 0
    figs.add("judge", f"judge: {tried} fault kinds tried, {len(escaped)} exceptions escaping, {len(uncounted)} "
                      f"bad replies not counted as failures, {batch_losses} good answers lost next to a bad one",
             ok, kinds=sorted(kinds), escaped=escaped, uncounted=uncounted, batch_losses=batch_losses)


def section_inputs(work: Path, figs: Figures, timeout_s: float, media_limit: Optional[int] = None) -> None:
    """Bad inputs that stop before any model runs (generator cards, CLI arguments) go through the CLI in this
    process; bad outputs and case files are evaluated in one real `bench evaluate` next to a good case."""
    from bad_inputs import cli_cases, media_cases, run_cli_inprocess  # scripts/bad_inputs.py
    results = []
    root = work / "inputs"
    for case in cli_cases(root):
        rc, err = run_cli_inprocess(case, bench_env(case.root, case.data))
        errors = [ln for ln in err.splitlines() if ln.startswith("error:")]
        clear = rc not in (0, 99) and len(errors) == 1 and "Traceback" not in err and \
            all(s.lower() in err.lower() for s in case.expect)
        results.append({"case": case.name, "clear": clear, "exit": rc, "error": err.strip()[-300:], "collateral": 0})
    for case, outcome in media_cases(root, timeout_s, limit=media_limit):
        results.append({"case": case, **outcome})
    bad_inputs = [r for r in results if not r["case"].startswith("good case")]
    n = len(bad_inputs)
    clear = sum(r["clear"] for r in bad_inputs)
    collateral = sum(r["collateral"] for r in results)
    bad = [r for r in results if not r["clear"] or r["collateral"]]
    for r in bad:
        print(f"  input {r['case']}: clear={r['clear']} collateral={r['collateral']} exit={r.get('exit')} "
              f"{r.get('error', '')[-200:]!r}", flush=True)
    need = 40 if media_limit is None else 1
    figs.add("inputs", f"inputs: {n} bad inputs tried, {clear} with one clear error, {collateral} collateral "
                       f"losses", n >= need and clear == n and collateral == 0,
             tried=n, clear=clear, collateral=collateral, failures=bad, cases=[r["case"] for r in bad_inputs])


def section_canary(work: Path, figs: Figures) -> None:
    hits, scanned = [], 0
    needle = CANARY.encode()
    for p in work.rglob("*"):
        if p.is_file() and not p.is_symlink():
            scanned += 1
            try:
                if needle in p.read_bytes():
                    hits.append(str(p.relative_to(work)))
            except OSError:
                pass
    figs.add("canary", f"canary: {len(hits)} occurrences of the canary key in {scanned} files written",
             not hits and scanned > 0, files=scanned, hits=hits[:20])


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bounded", action="store_true", help="the CI form: 1 kill, 3 concurrent evaluations")
    ap.add_argument("--kills", type=int, default=None)
    ap.add_argument("--concurrent", type=int, default=None)
    ap.add_argument("--only", default="crash,concurrent,judge,inputs,canary")
    ap.add_argument("--workdir", default=None, help="keep everything here (default: a temp dir, removed)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per evaluation before it counts as hung")
    ap.add_argument("--json", default=None, help="write the figures here")
    args = ap.parse_args(argv)
    kills = args.kills if args.kills is not None else (1 if args.bounded else 10)
    concurrent = args.concurrent if args.concurrent is not None else (3 if args.bounded else 10)
    only = set(args.only.split(","))
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    work = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="bench-faults-"))
    work.mkdir(parents=True, exist_ok=True)
    figs = Figures()
    # the sections set DAGSTER_HOME and a canary API key in this process; a caller (the test suite) must
    # not inherit them: with the canary key set, later tests would try to reach a live judge
    saved_env = dict(os.environ)
    try:
        if "crash" in only:
            section_crash(work, kills, figs, args.seed, args.timeout)
        if "concurrent" in only:
            section_concurrent(work, concurrent, figs, args.timeout)
        if "judge" in only:
            section_judge(work, figs)
        if "inputs" in only:
            section_inputs(work, figs, args.timeout, media_limit=4 if args.bounded else None)
        if "canary" in only:
            section_canary(work, figs)
    finally:
        print("\nfigures:")
        for line in figs.lines:
            print(f"  {line}")
        if args.json:
            Path(args.json).write_text(json.dumps(figs.data, indent=2, default=str))
        if not args.workdir:
            shutil.rmtree(work, ignore_errors=True)
        os.environ.clear()
        os.environ.update(saved_env)
    return 0 if figs.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
