"""`bench sensors`: what the generator sensors last decided and when they look next, read from the Dagster home
(issue 39, "waiting is visible"). A user who dropped a generator folder sees whether a daemon is ticking, each
sensor's last tick (when, and what it decided: the runs it requested and where they stand, or why it skipped, in the
sensor's own words, the same text the UI's tick history shows), when the next tick is due, and the folders that
changed since the last tick and wait for the next one (with how long they have waited). Reads only."""
from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Optional, Sequence

from bench_assets.core.automation import read_cursor
from bench_assets.core.generators import discover_generators, folder_fingerprint
from bench_assets.core.durations import duration_words as ago

# the daemon writes a heartbeat every 30 s (dagster._daemon.controller); older than this, none is running
DAEMON_STALE_S = 90.0
DEFAULT_INTERVAL_S = 30   # Dagster's minimum_interval_seconds when a sensor states none


def _utc(ts: float) -> str:
    return time.strftime("%H:%M:%S UTC", time.gmtime(ts))


def daemon_line(instance, now: float) -> tuple[bool, str]:
    """(a sensor daemon is running, the line saying so)."""
    beats = {}
    try:
        beats = instance.get_daemon_heartbeats()
    except Exception:  # noqa: BLE001 - an old home without the table: no daemon has run
        pass
    beat = beats.get("SENSOR")
    if beat is None:
        return False, ("sensor daemon: not running (no heartbeat in this Dagster home): sensors tick only while "
                       "`bench ui` (or `dagster-daemon run`) runs")
    age = now - beat.timestamp
    if age > DAEMON_STALE_S:
        return False, (f"sensor daemon: not running (last heartbeat {_utc(beat.timestamp)}, {ago(age)} ago): "
                       f"sensors tick only while `bench ui` (or `dagster-daemon run`) runs")
    return True, f"sensor daemon: running (heartbeat {ago(age)} ago)"


def run_words(instance, run_id: str, now: float) -> str:
    try:
        rec = instance.get_run_record_by_id(run_id)
    except Exception:  # noqa: BLE001
        rec = None
    if rec is None:
        return f"{run_id[:8]} (not in this home)"
    status = rec.dagster_run.status.value.lower()
    if status in ("queued", "not_started", "starting"):
        return f"{run_id[:8]} {status}, waiting {ago(now - rec.create_timestamp.timestamp())}"
    if status == "started" and rec.start_time:
        return f"{run_id[:8]} running for {ago(now - rec.start_time)}"
    return f"{run_id[:8]} {status}"


def _waiting_folders(cursor: dict, benchmark: str, generators_root: str, now: float) -> list[str]:
    """Generator folders of ``benchmark`` new or changed since the tick that wrote ``cursor``, each with how long
    ago it last changed (its newest file's mtime)."""
    gens, _ = discover_generators(generators_root, benchmark)
    before = cursor.get("folders") or {}
    out = []
    for g in gens:
        if before.get(g.name) == folder_fingerprint(g.path):
            continue
        newest = 0.0
        for dirpath, _, files in os.walk(g.path):
            for f in files + ["."]:
                try:
                    newest = max(newest, os.stat(os.path.join(dirpath, f)).st_mtime)
                except OSError:
                    continue
        what = "new" if g.name not in before else "changed"
        out.append(f"{g.name} ({what}, last changed {ago(now - newest)} ago)" if newest else f"{g.name} ({what})")
    return out


def sensor_lines(instance, sensors: Sequence[str], generators_root: Optional[str] = None,
                 now: Optional[float] = None) -> list[str]:
    """The daemon's line, then per sensor in ``sensors`` (``<benchmark>_generators_sensor``): its last tick and what
    it decided, the next tick, and (given ``generators_root``) the folders waiting for it."""
    from dagster._core.scheduler.instigation import InstigatorStatus, InstigatorType, TickStatus
    now = time.time() if now is None else now
    alive, line = daemon_line(instance, now)
    out = [line]
    states = {s.instigator_name: s for s in instance.all_instigator_state(instigator_type=InstigatorType.SENSOR)}
    for name in sensors:
        state = states.get(name)
        ticks = []
        if state is not None:
            ticks = sorted(instance.get_ticks(state.instigator_origin_id, state.selector_id, limit=5),
                           key=lambda t: t.timestamp, reverse=True)
        data = getattr(state, "instigator_data", None)
        interval = int(getattr(data, "min_interval", None) or DEFAULT_INTERVAL_S)
        if state is not None and state.status == InstigatorStatus.STOPPED:
            out.append(f"{name}: stopped (start it in the UI: Automation > {name}); it does not tick")
            continue
        done = [t for t in ticks if t.status != TickStatus.STARTED]
        running = ticks[0] if ticks and ticks[0].status == TickStatus.STARTED else None
        if not done:
            head = f"{name}: never ticked"
        else:
            t = done[0]
            if t.status == TickStatus.SKIPPED:
                what = f"skipped: {t.skip_reason or 'no reason given'}"
            elif t.status == TickStatus.SUCCESS:
                runs = list(t.run_ids or [])
                cur = read_cursor(t.cursor) if t.cursor else {}
                words = f" ({cur['last']})" if cur.get("last") else ""
                what = (f"requested {len(runs)} run{'s' if len(runs) != 1 else ''}{words}: "
                        + ", ".join(run_words(instance, r, now) for r in runs))
            else:
                err = (t.error.message.strip().splitlines() or ["no message"])[0][:300] if t.error else "no message"
                what = f"failed: {err}"
            head = f"{name}: last tick {_utc(t.timestamp)} ({ago(now - t.timestamp)} ago), {what}"
        if running is not None:
            nxt = f"ticking now (for {ago(now - running.timestamp)})"
        elif not alive:
            nxt = "next tick when a daemon runs"
        elif done:
            due = done[0].timestamp + interval - now
            nxt = (f"next tick in about {ago(due)} (every {interval} s)" if due > 0 else
                   f"next tick due now (every {interval} s; {ago(-due)} late)")
        else:
            nxt = f"first tick within about {interval} s of the daemon loading the code location"
        out.append(f"{head}; {nxt}")
        bench = name[:-len("_generators_sensor")] if name.endswith("_generators_sensor") else None
        if bench and generators_root and Path(generators_root).is_dir():
            cursor = read_cursor(done[0].cursor) if done and done[0].cursor else {}
            waiting = _waiting_folders(cursor, bench, generators_root, now)
            if waiting:
                out.append(f"  waiting for the next tick: {', '.join(waiting)}")
    return out
