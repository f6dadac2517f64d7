"""In-process evaluation: what `bench demo` / `bench evaluate` run (models load once per process).

Crash safety. ``materialize()`` runs in this process with no run monitoring, so a process killed mid-step
would leave its run STARTED and its pool slot (``pool="gpu"``, limit 1) claimed forever, and every later run
on the home would wait on that slot. Each run is therefore tagged with this process's pid, host and start
time; before evaluating (and every few seconds while waiting), runs of this host whose process is gone are
marked failed and their slots freed, so a later ``bench evaluate`` resumes unaided. Dagster captures
SIGINT/SIGTERM during execution: inside a step the signal only fails that step and ``materialize`` returns as
from any failure. core/interrupts.py records the signal whichever handler caught it; after each run the runner
raises KeyboardInterrupt when one arrived (so no further partition, board or report), and a watchdog thread raises
it in a main thread still busy after INTERRUPT_RAISE_S and ends the process after INTERRUPT_EXIT_S (both under the
5 s a user waits for Ctrl-C), its runs marked failed first so a rerun resumes.
"""
from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import re
import shutil
import socket
import sys
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from dagster import AssetKey, DagsterInstance, DagsterRunStatus, RunsFilter, materialize

from bench_assets.core import interrupts, media
from bench_assets.core.deploy import quiet_dagster_notices
from bench_assets.core.durations import duration_words as _duration
from bench_assets.core.automation import (STALENESS_UNKNOWN_TAG, evaluator_state, evaluator_tags, fresh_plan,
                                         rerun_plan, save_digest_cache)
from bench_assets.core.generators import GeneratorInfo
from bench_assets.core.partitions import BenchmarkPartitions
from bench_resources.judge import judge_counters
from bench_resources.paths import PROJECT_ROOT

PID_TAG, HOST_TAG, START_TAG = "bench/pid", "bench/host", "bench/proc_start"
REAP_EVERY_S = 5.0
INTERRUPT_RAISE_S = 1.5  # a run still going this long after a stop signal gets KeyboardInterrupt in the main thread
INTERRUPT_EXIT_S = 3.5   # a step inside a long C call cannot see it: the process ends after this (exit 128+signal)
_LIVE_STATUSES = [DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING, DagsterRunStatus.STARTED,
                  DagsterRunStatus.CANCELING]


# ---------------------------------------------------------------------- home and instance
@contextlib.contextmanager
def home_lock(home: Path) -> Iterator[None]:
    """An exclusive lock on the Dagster home: schema creation and partition registration happen under it
    (two processes creating the SQLite schema at once fail with 'table ... already exists')."""
    home.mkdir(parents=True, exist_ok=True)
    with open(home / ".bench.lock", "a+") as f:
        fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def dagster_home() -> Path:
    home = Path(os.environ.get("DAGSTER_HOME", str(PROJECT_ROOT / "dagster_home"))).resolve()
    with home_lock(home):
        cfg = home / "dagster.yaml"
        if not cfg.exists():  # copy then rename: another process never reads half a file
            tmp = home / f".dagster.yaml.tmp-{os.getpid()}"
            shutil.copyfile(PROJECT_ROOT / "dagster.yaml", tmp)
            os.replace(tmp, cfg)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def complete_schema(instance: DagsterInstance) -> list[str]:
    """Finish the schema a process killed while creating the home left half made; returns what it created.

    Dagster creates the SQLite event log's index shard only when its file does not exist yet, one autocommitted
    CREATE TABLE at a time: a SIGKILL in between left ``index.db`` without ``dynamic_partitions`` (and the
    rest), and every later run failed with 'Using dynamic partitions definitions requires the dynamic partitions
    table'. Here the missing tables are created (CREATE IF NOT EXISTS) and the revision stamped, as Dagster's own
    first start would have; the data migrations each storage runs after its first start are idempotent and are
    run again (a kill may have come between them). Run and schedule storages redo their creation while unstamped."""
    done: list[str] = []
    ev = instance.event_log_storage
    try:
        from dagster._core.storage.event_log.sqlite import sqlite_event_log
    except ImportError:  # another Dagster layout: nothing to complete here
        sqlite_event_log = None
    if sqlite_event_log is not None and isinstance(ev, sqlite_event_log.SqliteEventLogStorage):
        import sqlalchemy as sa
        from dagster._core.storage.event_log.schema import SqlEventLogStorageMetadata
        from dagster._core.storage.sql import check_alembic_revision, get_alembic_config, safe_commit, stamp_alembic_rev
        engine = sa.create_engine(ev.conn_string_for_shard(sqlite_event_log.INDEX_SHARD_NAME),
                                  poolclass=sa.pool.NullPool)
        try:
            missing = sorted(set(SqlEventLogStorageMetadata.tables) - set(sa.inspect(engine).get_table_names()))
            if missing:
                SqlEventLogStorageMetadata.create_all(engine)
                done += missing
            with engine.connect() as conn:
                cfg = get_alembic_config(sqlite_event_log.__file__)
                have, head = check_alembic_revision(cfg, conn)
                if not (have and head):  # create_all made the head schema: stamp it so
                    stamp_alembic_rev(cfg, conn, rev="head")
                    safe_commit(conn)
                    done.append("event log revision stamp")
        finally:
            engine.dispose()
    # each skips what is marked done (a few reads, ~25 ms in all), so they run every time
    for fix in (lambda: (ev.reindex_events(), ev.reindex_assets()),
                lambda: (instance.run_storage.migrate(), instance.run_storage.optimize()),
                lambda: (instance.schedule_storage.migrate(), instance.schedule_storage.optimize())):
        try:
            fix()
        except NotImplementedError:  # a storage without data migrations
            pass
    return done


def open_instance() -> DagsterInstance:
    """The home's instance with every storage's schema created (or completed, ``complete_schema``) under the home
    lock."""
    home = dagster_home()
    with home_lock(home):
        instance = DagsterInstance.get()
        done = complete_schema(instance)
        if done:  # never silent: the home was left by a killed process
            print(f"note: completed the Dagster home's schema ({home}) that a killed process left half made: "
                  f"created {', '.join(done)}", file=sys.stderr)
        instance.get_runs(limit=1)
        instance.get_dynamic_partitions("bench_schema_probe")
        instance.event_log_storage.get_concurrency_keys()
        instance.all_instigator_state()
    return instance


# ---------------------------------------------------------------------- process identity and liveness
def _proc_start(pid: int) -> str:
    """The kernel's start time of ``pid`` (clock ticks since boot): tells a live pid from a reused one."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    fields = stat[stat.rindex(")") + 2:].split()  # the command name may hold spaces and parentheses
    return fields[19] if len(fields) > 19 else ""


def process_tags() -> dict[str, str]:
    pid = os.getpid()
    return {PID_TAG: str(pid), HOST_TAG: socket.gethostname(), START_TAG: _proc_start(pid)}


def process_alive(pid: int, start: str = "") -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    try:
        state = Path(f"/proc/{pid}/stat").read_text()
        if state[state.rindex(")") + 2:].split()[0] in ("Z", "X"):  # zombie: dead, not yet reaped
            return False
    except (OSError, ValueError, IndexError):
        pass
    return not (start and _proc_start(pid) not in ("", start))


@dataclass
class Reaped:
    run_id: str
    pid: Optional[int]
    why: str


def reap_dead_runs(instance: DagsterInstance, *, log: Callable[[str], None] = lambda _m: None) -> list[Reaped]:
    """Mark failed the runs of this host whose process is gone; free every slot held by a finished run.

    Only runs tagged by this module are judged (their pid is known); runs launched by the daemon are
    watched by Dagster's run monitoring (dagster.yaml).
    """
    host = socket.gethostname()
    me = os.getpid()
    reaped: list[Reaped] = []
    for run in instance.get_runs(filters=RunsFilter(statuses=_LIVE_STATUSES, tags={HOST_TAG: host})):
        try:
            pid = int(run.tags.get(PID_TAG, ""))
        except ValueError:
            continue
        if pid == me or process_alive(pid, run.tags.get(START_TAG, "")):
            continue
        why = f"process {pid} on {host} is gone (killed or crashed); marked failed so its pool slots are freed"
        instance.report_run_failed(run, message=why)
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        reaped.append(Reaped(run.run_id, pid, why))
        log(f"recovered run {run.run_id[:8]} ({run.tags.get('dagster/partition') or run.job_name}): {why}")
    # Slots or queued steps still held by a run that has ended (or no longer exists) block the pool too.
    storage = instance.event_log_storage
    try:
        keys = storage.get_concurrency_keys()
    except NotImplementedError:
        return reaped
    holders = set()
    for key in keys:
        info = storage.get_concurrency_info(key)
        holders |= {c.run_id for c in info.claimed_slots} | {p.run_id for p in info.pending_steps}
    for run_id in sorted(holders):
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            storage.free_concurrency_slots_for_run(run_id)
            reaped.append(Reaped(run_id, None, "slot held by a finished run"))
            log(f"freed pool slots held by finished run {run_id[:8]}")
    return reaped


def _raise_in_main(exc: type[BaseException]) -> None:
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(threading.main_thread().ident), ctypes.py_object(exc))


class Watchdog:
    """While ``materialize`` runs: frees slots of dead runs every few seconds and turns a signal captured by
    Dagster into KeyboardInterrupt in the main thread (after a grace period, exits)."""

    def __init__(self, instance: DagsterInstance, log: Callable[[str], None],
                 tick: Optional[Callable[[], None]] = None):
        self.instance, self.log, self.tick = instance, log, tick
        self.interrupted = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="bench-watchdog", daemon=True)

    def __enter__(self) -> "Watchdog":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _loop(self) -> None:
        own = None
        if not self.instance.is_ephemeral:
            own = DagsterInstance.from_ref(self.instance.get_ref())  # a thread keeps its own connections
        try:
            self._watch(own)
        finally:
            if own is not None:
                own.dispose()

    def _watch(self, own: Optional[DagsterInstance]) -> None:
        last_reap = time.monotonic()
        told: dict[tuple, float] = {}   # (run, step, pool) -> when its wait was last said
        while not self._stop.wait(0.1):
            if self.tick is not None:
                self.tick()
            if interrupts.received() is not None and not self.interrupted:
                self.interrupted = True
                self.log(f"interrupted ({interrupts.signal_name()}): stopping the run")
                at = interrupts.since() or time.monotonic()
                while not self._stop.wait(0.05):
                    if time.monotonic() > at + INTERRUPT_RAISE_S:
                        break
                else:
                    return  # the run returned by itself; guarded_materialize raises
                _raise_in_main(KeyboardInterrupt)
                while not self._stop.wait(0.05):
                    if time.monotonic() > at + INTERRUPT_EXIT_S:  # stuck in native code: end the process; the
                        if own is not None:                        # run is marked failed first so its slot is free
                            try:
                                _fail_own_runs(own)
                            except Exception:  # noqa: BLE001 - the next run's reaper marks it failed instead
                                pass
                        print(interrupts.message(), file=sys.stderr, flush=True)
                        os._exit(interrupts.exit_code())
                return
            if own is not None and time.monotonic() - last_reap > REAP_EVERY_S:
                last_reap = time.monotonic()
                try:
                    reap_dead_runs(own, log=self.log)
                    say_slot_waits(own, told, self.log)
                except Exception as e:  # a locked database now is retried at the next tick
                    self.log(f"watchdog: {type(e).__name__}: {e}")


SAY_WAIT_EVERY_S = 30.0  # a wait for a pool slot is said when first seen, then every this many seconds


@dataclass
class SlotWait:
    run_id: str
    step_key: str
    pool: str
    since: float                 # epoch seconds the step was queued for the slot
    holders: list[str]           # the runs holding the pool's slots
    held_steps: dict = field(default_factory=dict)   # holder run -> its steps holding a slot (asset names)

    def words(self, instance: DagsterInstance) -> str:
        held = (", ".join(describe_run(instance, r, self.held_steps.get(r, ())) for r in self.holders)
                or "no run (slots being freed)")
        return (f"waiting for a slot of pool {self.pool!r} (held by {held}) for {time.time() - self.since:.0f} s: "
                f"{self.step_key} starts when it is free")


def describe_run(instance: DagsterInstance, run_id: str, steps: Sequence[str] = ()) -> str:
    """``run 1a2b3c4d (mbench_scores, partition a|b, pid 123)``: what a user needs to find the run holding a slot.
    ``steps``: its steps holding the slot, named for `bench evaluate`'s runs (an ephemeral job whose recorded asset
    selection is empty: the job's name, ``__ephemeral_asset_job__``, says nothing)."""
    run = instance.get_run_by_id(run_id)
    if run is None:
        return f"run {run_id[:8]}"
    bits = [run.job_name]
    names = sorted(steps) or sorted(k.to_user_string() for k in (run.asset_selection or ()))
    if run.job_name.startswith("__") and names:   # `bench evaluate`'s runs: say their assets
        bits = [", ".join(names[:2]) + (f" +{len(names) - 2}" if len(names) > 2 else "")]
    if run.tags.get("dagster/partition"):
        bits.append(f"partition {run.tags['dagster/partition']}")
    if run.tags.get(PID_TAG):
        bits.append(f"pid {run.tags[PID_TAG]}")
    return f"run {run_id[:8]} ({', '.join(bits)})"


def slot_waits(instance: DagsterInstance, run_ids: Sequence[str]) -> list[SlotWait]:
    """The steps of ``run_ids`` queued for a pool slot they have not been given (Dagster's pool concurrency: a
    second evaluation in the same home waits on the ``gpu`` pool while the first holds it)."""
    mine = set(run_ids)
    if not mine:
        return []
    storage = instance.event_log_storage
    out = []
    for pool in sorted(storage.get_concurrency_keys()):
        info = storage.get_concurrency_info(pool)
        claimed = {(c.run_id, c.step_key) for c in info.claimed_slots}
        for p in info.pending_steps:
            if p.run_id in mine and p.assigned_timestamp is None and (p.run_id, p.step_key) not in claimed:
                held: dict = {}
                for c in info.claimed_slots:
                    if c.run_id not in mine:
                        held.setdefault(c.run_id, []).append(c.step_key)
                out.append(SlotWait(p.run_id, p.step_key, pool, p.enqueued_timestamp.timestamp(), sorted(held),
                                    {r: sorted(s) for r, s in held.items()}))
    return out


def say_slot_waits(instance: DagsterInstance, told: dict, log: Callable[[str], None]) -> list[SlotWait]:
    """Say each wait of this process's runs for a pool slot: on the CLI (``log``) and in the waiting run's own
    event log (an engine event: the UI's run page shows it), when first seen and then every SAY_WAIT_EVERY_S."""
    runs = instance.get_runs(filters=RunsFilter(statuses=_LIVE_STATUSES, tags={PID_TAG: str(os.getpid()),
                                                                             HOST_TAG: socket.gethostname()}))
    waits = slot_waits(instance, [r.run_id for r in runs])
    by_id = {r.run_id: r for r in runs}
    now = time.monotonic()
    for w in waits:
        key = (w.run_id, w.step_key, w.pool)
        if now - told.get(key, -1e9) < SAY_WAIT_EVERY_S:
            continue
        told[key] = now
        words = w.words(instance)
        log(words)
        instance.report_engine_event(words, by_id[w.run_id])
    return waits


def _fail_own_runs(instance: DagsterInstance) -> None:
    for run in instance.get_runs(filters=RunsFilter(statuses=_LIVE_STATUSES, tags={PID_TAG: str(os.getpid()),
                                                                                   HOST_TAG: socket.gethostname()})):
        instance.report_run_failed(run, message="interrupted (SIGINT/SIGTERM)")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)


def _interrupted_steps(result) -> bool:
    """A step failed because a signal interrupted it (Dagster's own error for that)."""
    for ev in getattr(result, "all_events", None) or []:
        if ev.is_step_failure:
            err = ev.step_failure_data.error
            while err is not None:
                if err.cls_name in ("DagsterExecutionInterruptedError", "KeyboardInterrupt"):
                    return True
                err = err.cause
    return False


class _SessionedSubprocess:
    """``subprocess`` as Dagster's compute_logs module sees it, but every child it starts gets its own session."""

    _bench_sessioned = True

    def __getattr__(self, name: str):
        import subprocess
        return getattr(subprocess, name)

    @staticmethod
    def Popen(*args, **kwargs):  # noqa: N802 - the name compute_logs calls
        import subprocess
        kwargs.setdefault("start_new_session", True)
        return subprocess.Popen(*args, **kwargs)


def quiet_log_tails() -> None:
    """Dagster mirrors each step's stdout / stderr to the terminal through a `tail -F` and a Python watcher script
    (``compute_logs.execute_posix_tail``) started in bench's process group, so Ctrl-C reached them too and the watcher
    printed a KeyboardInterrupt traceback. Started in their own session, they never see the terminal's signal; they
    still end with the step (Dagster terminates both) or, when bench is gone, by the watcher's orphan check (1 s).
    Only that module's ``subprocess`` is replaced; idempotent."""
    try:
        from dagster._core.execution import compute_logs
    except ImportError:  # another Dagster layout: its tails stay as they are
        return
    if not getattr(compute_logs.subprocess, "_bench_sessioned", False):
        compute_logs.subprocess = _SessionedSubprocess()


def guarded_materialize(assets: Sequence, *, instance: DagsterInstance, log: Callable[[str], None] = print,
                        tick: Optional[Callable[[], None]] = None, **kwargs):
    """``materialize(..., raise_on_error=False)`` under the Watchdog: raises KeyboardInterrupt (after marking
    this process's runs failed and freeing their slots) when SIGINT/SIGTERM arrived meanwhile."""
    kwargs.setdefault("tags", process_tags())
    quiet_log_tails()
    # materialize() resolves the definitions against Dagster's *current* defs-state storage (a ContextVar that an
    # instance sets while entered), not the instance it is given: bind it to this run's instance, so a storage left
    # behind by another instance of the process (an ephemeral one gone since) cannot fail the run ("Attempted to
    # resolve undefined DagsterInstance weakref", seen in the test suite once tests ran in another order)
    from dagster._core.storage.defs_state.base import set_defs_state_storage
    with Watchdog(instance, log, tick) as dog, set_defs_state_storage(instance.defs_state_storage):
        try:
            result = materialize(assets, instance=instance, raise_on_error=False, **kwargs)
        except KeyboardInterrupt:
            dog.interrupted = True
            result = None
    if interrupts.received() is not None or _interrupted_steps(result):
        dog.interrupted = True
    if dog.interrupted:
        _fail_own_runs(instance)
        raise KeyboardInterrupt
    return result


# ---------------------------------------------------------------------- messages and progress
_CARET = re.compile(r"^[\s^~]*$")


def error_message(err) -> str:
    """The user's error as one readable line: class and message, without caret or 'LINE n' decoration."""
    while err is not None and getattr(err, "cause", None) is not None:  # the user's error, not Dagster's wrapper
        err = err.cause
    if err is None:
        return "failed"
    lines = [ln.strip() for ln in (err.message or "").splitlines()]
    lines = [ln for ln in lines if ln and not _CARET.match(ln) and not re.match(r"^LINE \d+:", ln)]
    msg = " ".join(lines[:3]) or err.cls_name or "failed"
    msg = re.sub(r"^(?:[A-Za-z_][\w]*\.)+([A-Za-z_]\w*): ", r"\1: ", msg)  # dagster._core...Failure: -> Failure:
    if msg.startswith("Failure: "):  # a deliberate dagster.Failure: its message is the whole story
        msg = msg[len("Failure: "):]
    elif err.cls_name and err.cls_name != "Failure" and not msg.startswith(err.cls_name):
        msg = f"{err.cls_name}: {msg}"
    return msg if len(msg) <= 400 else msg[:397] + "..."


def _count(n: float):
    """A count as shown: whole (16), or in tenths inside a partition (3.4)."""
    return int(round(n)) if abs(n - round(n)) < 1e-6 else round(n, 1)


def _plural(word: str, n: float = 2) -> str:
    if n == 1:
        return word
    return "stories" if word == "story" else word if word.endswith("s") else f"{word}s"


class Progress:
    """Per benchmark: work done of the total, rate and ETA, the partition running (generator x item, in the
    benchmark's own unit: episode, story, case, sample, video) and its current stage (the asset step Dagster
    started). On a terminal, a tqdm bar redrawn every tick so the clock moves inside a long partition; elsewhere
    (a CI log, a pipe) plain timestamped lines: one per stage started, a heartbeat every HEARTBEAT_S, failures.

    The count is in ``unit``: partitions by default; ``bench evaluate`` counts what the user knows, the shots
    (EntityBench, ViStoryBench) or videos (MBench, LoCoT2V, NarrativeTrack) scored. Each kind of partition (item,
    generator x item, aggregate) keeps its own measure and time for the ETA (``plan``); only the kinds planned
    ``counted`` move the count, by the ``units`` each partition holds (``label``).

    Inside a running partition the count moves too, within a shot (``advance``): each of its ``stages`` (the steps it
    runs) is worth an equal share of its shots, and a stage's share fills with the distinct shot files under the
    generator's folder it has opened (``opened``: media.opened_since) and, inside the shot being decoded, with the
    frames its pass has converted of those it needs (``frames``: media.passes_now; a long shot moves frame by frame,
    not after minutes). With ``frames`` a file counts whole once its pass ended, or (a file only probed) once the
    next file opened; without it, when it is opened. The count shown is that share in tenths of a
    unit ("3.4/16 shots"), and stays below the partition's total until the partition ends (then exactly its total);
    the rate and ETA count the shares too (an ETA still waits for one whole unit's worth). A stage that opens no
    video moves it when the next stage starts; meanwhile its heartbeat counts its model passes (``passes``)."""

    HEARTBEAT_S = 30.0
    COUNT_LINE_S = 5.0   # off a terminal, a line when the count moved inside a partition, at most this often
    # a kind's rate and ETA need at least this much of its measure done (a whole shot, a whole partition): the
    # first stage of a long partition opens a shot or two, a fraction of a shot whose time said 20-47 hours
    MIN_MEASURED = 1.0
    STEP = 0.1   # the count inside a partition moves in tenths of a unit

    def __init__(self, total: int, desc: str, enabled: Optional[bool] = None, lines: Optional[bool] = None,
                 clock: Callable[[], float] = time.monotonic, unit: str = "partition",
                 reading: Optional[Callable[[], tuple[int, str]]] = None,
                 opened: Optional[Callable[[int], tuple[int, list[str]]]] = None,
                 frames: Optional[Callable[[], list[tuple[str, int, int]]]] = None,
                 passes: Optional[Callable[[], int]] = None):
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.lines = (not self.enabled) if lines is None else lines  # timestamped lines off a terminal
        self.total, self.desc, self.clock, self.unit = total, desc, clock, unit
        # (videos opened so far, the last one's path) -- media.last_opened: names the shot file a stage is reading
        self.reading, self._opened_at_stage = reading, None
        # (videos opened so far, paths opened after the first n) -- media.opened_since: moves the count in a partition
        self.opened = opened
        # [(path, frames converted, frames needed)] of the decode passes running now -- media.passes_now: moves the
        # count inside a shot
        self.frames = frames
        # model forward passes so far in this process (models.forward_count): a step that opens no video (frames
        # from the cache, embeddings, the judge's crops) still shows it is working
        self.passes, self._passes_at_stage = passes, None
        self._lock = threading.Lock()   # tick runs in the watchdog's thread, stage in the step's
        self._root, self._n_stages, self._stages_started = "", 0, 0
        self._stage_files: dict[str, float] = {}   # shot file -> its share done (1.0 whole), in opening order
        self._last_file = ""                        # the stage's file opened last
        self._in_pass: set[str] = set()             # the stage's files whose decode pass ran at the last look
        self._scan_from = 0
        self.partial = 0.0   # the running partition's share done, in units (float)
        self.shown = 0.0     # of it, what is shown: tenths, below the partition's units until it ends
        self._moved_unshown = False   # off a terminal: the count moved since the last line
        self.done = 0
        self.steps = 0   # partitions finished, of every kind
        # kind -> [planned, done, ran, seconds spent running], in the kind's measure (partitions or units)
        self.kinds: dict[str, list] = {}
        self._kind_unit: dict[str, str] = {}     # kind -> the word its rate is given in
        self._uncounted: set[str] = set()        # kinds that do not move the count (dataset, aggregates)
        self.kind = ""
        self.item, self.stage_name = "", ""
        self.units = 1
        self.t0 = self.clock()
        self._item_t0: Optional[float] = None
        self._last_line = self.t0
        self.bar = None
        if self.enabled and total:
            from tqdm import tqdm
            fmt = ("{desc} {n_fmt}/{total_fmt} |{bar}| {elapsed}<{remaining} {postfix}" if unit == "partition" else
                   "{desc} {n_fmt}/{total_fmt} " + _plural(unit) + " |{bar}| {elapsed}{postfix}")  # tqdm adds ', '
            self.bar = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr, dynamic_ncols=True, bar_format=fmt)

    # ------------------------------------------------------------------ what is running
    def plan(self, kind: str, n: int, unit: str = "", counted: bool = True) -> None:
        """``n`` partitions of this kind (item, generator x item, aggregate) are coming, or ``n`` units when
        ``unit`` names them (their partitions then say how many each holds): the ETA weighs each kind by its own
        mean time, since a dataset partition and a scored generator partition differ a hundredfold. A kind not
        ``counted`` is timed but does not move the count."""
        self.kinds.setdefault(kind, [0, 0, 0, 0.0])[0] += n
        if unit:
            self._kind_unit[kind] = unit
        if not counted:
            self._uncounted.add(kind)

    def label(self, text: str, kind: str = "", units: int = 1, root: str = "") -> None:
        """A partition is next (it may turn out to be up to date); it holds ``units`` of its kind's measure; its
        shot files lie under ``root`` (the generator's folder: only they move the count inside it)."""
        with self._lock:
            self.item, self.stage_name, self._item_t0, self.kind, self.units = text, "", None, kind, units
            self._opened_at_stage = None
            self._root = os.path.join(os.path.realpath(root), "") if root else ""
            self._n_stages, self._stages_started, self._stage_files, self._last_file = 0, 0, {}, ""
            self._in_pass = set()
            self.partial, self.shown = 0.0, 0.0
        self._postfix()

    def expect(self, stages: int) -> None:
        """The running partition will run this many steps (each an equal share of its units)."""
        self._n_stages = max(int(stages), 0)

    def advance(self) -> bool:
        """Move the count inside the running partition by the shot files its stage opened and the frames decoded of
        the one being read; True when the count shown moved."""
        if self.opened is None or not self._root or not self._n_stages or not self._stages_started \
                or self.kind in self._uncounted or self.units <= 0:
            return False
        with self._lock:
            files = self._stage_files
            n, paths = self.opened(self._scan_from)
            for path in paths:
                real = os.path.realpath(path)
                if real.startswith(self._root):
                    if self.frames is not None and self._last_file and self._last_file != real \
                            and self._last_file not in self._in_pass:
                        files[self._last_file] = 1.0   # the next file opened: the one before (only probed) is done
                    files.setdefault(real, 1.0 if self.frames is None else 0.0)
                    self._last_file = real
            self._scan_from = n
            if self.frames is not None:
                running = {}
                for path, done, needed in self.frames():
                    real = os.path.realpath(path)
                    if real in files and needed > 0:
                        running[real] = min(done / needed, 1.0)
                for real in self._in_pass - set(running):
                    files[real] = 1.0   # its pass ended
                for real, share in running.items():
                    files[real] = max(files[real], share)
                self._in_pass = set(running)
            share = min(sum(files.values()), self.units) / self.units
            self.partial = self.units * (min(self._stages_started, self._n_stages) - 1 + share) / self._n_stages
            # tenths, and the whole count only when the partition ends
            shown = min(int(self.partial / self.STEP + 1e-6) * self.STEP, self.units - self.STEP)
            if shown <= self.shown + 1e-9:
                return False
            self.shown = shown
            self._bar_to(self.done + shown)
            return True

    def _bar_to(self, n: float) -> None:
        if self.bar is not None:
            self.bar.n = _count(n)
            self.bar.refresh()

    def stage(self, step_key: str) -> None:
        """Dagster started this step of the current partition."""
        if self._item_t0 is None:
            self._item_t0 = self.clock()
        self.stage_name = step_key
        self._opened_at_stage = self.reading()[0] if self.reading is not None else None
        self._passes_at_stage = self.passes() if self.passes is not None else None
        if self.opened is not None:
            with self._lock:
                self._stages_started += 1
                self._stage_files, self._last_file, self._in_pass = {}, "", set()
                self._scan_from = self.opened(1 << 62)[0]
            self.advance()
        self._postfix()
        if self.lines:
            self._line(f"{self.item}: {step_key}")

    def step(self) -> None:
        """The current partition is done (materialised, up to date or failed)."""
        k = self.kinds.setdefault(self.kind, [0, 0, 0, 0.0])
        self.steps += 1
        k[1] += self.units
        if self._item_t0 is not None:  # only partitions that ran count towards the rate
            k[2] += self.units
            k[3] += self.clock() - self._item_t0
            self._item_t0 = None
        with self._lock:
            if self.kind not in self._uncounted:
                self.done += self.units
                self._bar_to(self.done)
            self.partial, self.shown, self._n_stages, self._stages_started = 0.0, 0.0, 0, 0
        self._postfix()

    def tick(self) -> None:
        """Called a few times a second while a run is going."""
        if self.advance():
            self._moved_unshown = True
        if self.bar is not None:
            if self.unit != "partition":
                self._postfix(refresh=False)   # the ETA counts down inside a long partition
            self.bar.refresh()
        elif self.lines and self.stage_name and self.clock() - self._last_line >= (
                self.COUNT_LINE_S if self._moved_unshown else self.HEARTBEAT_S):
            now, work = self.file_now(), self.work_now()
            self._line(f"{self.item}: {self.stage_name} (still running{f', reading {now}' if now else ''}"
                       f"{f', {work}' if work else ''})")

    def work_now(self) -> str:
        """'412 model passes': the running step's model forwards so far, '' before the first (or untracked)."""
        if self.passes is None or self._passes_at_stage is None:
            return ""
        n = self.passes() - self._passes_at_stage
        return f"{n} model pass{'es' if n != 1 else ''}" if n > 0 else ""

    def file_now(self) -> str:
        """The video the running stage opened last ('e0002/shot_03.mp4', with 'frame 120/480' while its decode pass
        runs), '' when it opened none (yet)."""
        if self.reading is None or self._opened_at_stage is None:
            return ""
        n, path = self.reading()
        if not (n > self._opened_at_stage and path):
            return ""
        name = "/".join(Path(path).parts[-2:])
        if self.frames is not None:
            for now, done, needed in self.frames():
                if now == path and needed > 0:
                    return f"{name} frame {done}/{needed}"
        return name

    # ------------------------------------------------------------------ text
    def rate_eta(self) -> str:
        """'1.50 <unit>/min, ETA 4m00s': the rate in the count's unit (shots or videos scored per minute; counting
        partitions, the rate of the kind running now in its item dimension), the ETA over every kind left, each at
        its own mean time (from the partitions that actually ran; up-to-date ones cost ~nothing), less the time the
        running partition has had so far (or, once its count moved, less its share done, at the rate with it)."""
        now = self.clock()
        # shots done inside the running partition (its share so far) join its kind's rate with its time so far
        part = self.partial if self._item_t0 is not None and self.kind not in self._uncounted else 0.0
        planned_left = sum(max(k[0] - k[1], 0) for k, kind in zip(self.kinds.values(), self.kinds)
                           if kind not in self._uncounted)
        left, known = 0.0, False
        unknown = self.total - self.done > planned_left  # work of no planned kind: its time is unknown
        timed: dict[str, tuple[float, float]] = {}
        for kind, (planned, done, ran, spent) in self.kinds.items():
            todo = planned - done
            if kind == self.kind and part > 0:
                ran, spent, todo = ran + part, spent + now - self._item_t0, todo - part
            if ran < self.MIN_MEASURED:   # a share of one shot is no rate: an ETA from it read 20-47 hours
                ran, spent = 0, 0.0
            timed[kind] = (ran, spent)
            if todo <= 0:
                continue
            if ran and spent > 0:
                left += todo * spent / ran
                known = True
            else:
                unknown = True
        cur = self.kinds.get(self.kind)
        if part <= 0 and cur and cur[2] and cur[3] > 0 and self._item_t0 is not None:  # its time so far
            left -= min(now - self._item_t0, self.units * cur[3] / cur[2])
        # the rate: of the kind counted in the unit (shots scored per minute), else of the kind running now
        shown = next((k for k, u in self._kind_unit.items() if u == self.unit), self.kind)
        ran, spent = timed.get(shown, (0, 0.0))
        word = self._kind_unit.get(shown) or (shown or "partition").split(" x ")[-1]
        rate = f"{60.0 * ran / spent:.2f} {word}/min" if ran and spent > 0 else "rate -"
        # kinds not timed yet (the aggregates, run last) add an unknown rest: 'ETA 4m00s+' is a lower bound
        eta = f"ETA {_duration(left)}{'+' if unknown else ''}" if known or not unknown else "ETA -"
        return f"{rate}, {eta}"

    def status(self) -> str:
        return (f"{self.desc} {_count(self.done + self.shown)}/{self.total} {_plural(self.unit)}, "
                f"{_duration(self.clock() - self.t0)} elapsed, {self.rate_eta()}")

    def _postfix(self, refresh: bool = True) -> None:
        if self.bar is not None:
            stage = f" | {self.stage_name}" if self.stage_name else ""
            if self.unit == "partition":
                self.bar.set_postfix_str(f"{self.item}{stage}"[:70], refresh=refresh)
            else:
                now, work = self.file_now(), self.work_now()
                self.bar.set_postfix_str(f"{self.rate_eta()} | {self.item}{stage}{f' | {now}' if now else ''}"
                                         f"{f' | {work}' if work else ''}"[:160], refresh=refresh)

    def _line(self, text: str) -> None:
        self._last_line = self.clock()
        self._moved_unshown = False
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {self.status()} | {text}", file=sys.stderr, flush=True)

    def write(self, text: str) -> None:
        if self.bar is not None:
            self.bar.write(text, file=sys.stderr)
        elif self.lines:
            print(f"[{time.strftime('%H:%M:%S')}] {text}", file=sys.stderr, flush=True)
        else:
            print(text, file=sys.stderr)

    def close(self, note: str = "done") -> None:
        """The last line off a terminal: ``note`` ("done", or "stopped (SIGINT)" when a signal ended the run)."""
        if self.bar is not None:
            self.bar.close()
        elif self.lines and (self.steps or note != "done"):
            self._line(note)


@contextlib.contextmanager
def step_starts(instance: DagsterInstance, on_step: Callable[[str], None]) -> Iterator[None]:
    """Call ``on_step(step_key)`` as each step of a run in this process starts. Dagster's event listeners are keyed
    by a run id that ``materialize`` does not expose before it runs, so every run started meanwhile gets the
    listener (the instance's subscriber table is a defaultdict; it is restored afterwards)."""
    from collections import defaultdict
    subs = getattr(instance, "_subscribers", None)
    if not isinstance(subs, defaultdict):
        yield
        return

    def listener(entry) -> None:
        ev = getattr(entry, "dagster_event", None)
        if ev is not None and ev.event_type_value == "STEP_START" and ev.step_key:
            try:
                on_step(ev.step_key)
            except Exception:  # noqa: BLE001 - progress never fails a run
                pass

    old = subs.default_factory
    subs.default_factory = lambda: [listener]
    try:
        yield
    finally:
        subs.default_factory = old
        for run_id in [k for k, v in subs.items() if listener in v]:
            subs[run_id] = [f for f in subs[run_id] if f is not listener]
            if not subs[run_id]:
                del subs[run_id]


@dataclass
class RunStats:
    materialized: list[tuple[str, Optional[str]]] = field(default_factory=list)
    failed: list[tuple[str, Optional[str], str]] = field(default_factory=list)
    warnings: "OrderedDict[str, list[str]]" = field(default_factory=OrderedDict)  # step -> messages
    recovered: list[Reaped] = field(default_factory=list)
    interrupted: bool = False
    wall_s: float = 0.0
    forwards: int = 0
    forward_s: float = 0.0
    judge_calls: int = 0
    decodes: int = 0
    # issue 25: why partitions re-ran ("<reason>" -> asset partitions), and the judge traffic of the run over every
    # endpoint (requests_by_endpoint, answers_reused, questions_asked, questions_reasked)
    reruns: dict = field(default_factory=dict)
    judge: dict = field(default_factory=dict)
    # why a staleness check could not run ("; "-joined; core/automation.py staleness_unknown_lines words it)
    staleness_unknown: str = ""

    def warning_summary(self, first: int = 3) -> list[str]:
        """One line per asset: how many warnings, and the first few (not one line per item)."""
        out = []
        for step, msgs in self.warnings.items():
            shown = "; ".join(msgs[:first])
            more = f" (+{len(msgs) - first} more)" if len(msgs) > first else ""
            out.append(f"  {step}: {len(msgs)} warning{'s' if len(msgs) != 1 else ''}: {shown}{more}")
        return out


def _forward_count() -> int:
    from bench_resources import models
    return models.forward_count()


def _model_counters() -> tuple[int, float]:
    from bench_resources import models
    return models.forward_count(), models.forward_seconds()


def _collect_warnings(instance: DagsterInstance, run_id: str, stats: RunStats) -> None:
    import logging
    try:
        records = instance.all_logs(run_id)
    except Exception:
        return
    for rec in records:
        if rec.is_dagster_event or rec.level < logging.WARNING or rec.level >= logging.ERROR:
            continue
        step = rec.step_key or "run"
        msg = (rec.user_message or "").strip().splitlines()[0] if rec.user_message else ""
        if msg:
            stats.warnings.setdefault(step, []).append(msg)


def judge_delta(before: dict, after: dict) -> dict:
    """The judge traffic between two ``judge_counters()`` snapshots (every endpoint, judge and answerers)."""
    by = {k: v - before["requests_by_endpoint"].get(k, 0) for k, v in after["requests_by_endpoint"].items()}
    return {"requests_by_endpoint": {k: v for k, v in by.items() if v},
            **{k: after[k] - before[k] for k in ("answers_reused", "questions_asked", "questions_reasked")}}


def evaluate(instance: DagsterInstance, *, assets: Sequence, resources: dict, partitions: BenchmarkPartitions,
             items: list[str], generators: list[GeneratorInfo], item_assets: Sequence[str],
             generator_assets: Sequence[str], aggregate_assets: Sequence[str],
             progress: Optional[Callable[[str], None]] = None, only_stale: bool = True,
             log_level: str = "CRITICAL", show_progress: Optional[bool] = None,
             extra_tags: Optional[dict] = None, force: bool = False, unit: str = "",
             units: Optional[Callable[[str], int]] = None) -> RunStats:
    """Materialise every missing or stale partition of the benchmark, item assets first, then aggregates.
    ``force``: every partition of the selection re-runs regardless (``bench evaluate --force``).
    ``unit`` / ``units(item)``: what one item holds in the user's words (``"shot"``, 16): progress then counts the
    shots (or videos) scored, generator x item partitions moving it by their item's count; without them it counts
    partitions. A count that cannot be read (a broken item file, whose partition fails on its own) is 0.

    A partition also re-runs when its last materialisation counted evaluator failures (judge outage, replay
    miss, missing weights) and the evaluator state changed since (core/automation.py).
    """
    quiet_dagster_notices()   # a caller (a test, a notebook) may have reset the filters since the import
    fresh_plan()
    stats = RunStats()
    t0 = time.perf_counter()
    f0, s0 = _model_counters()
    d0 = media.decode_count()
    judge = resources.get("judge")
    j0 = judge.stats()["network_calls"] if judge is not None else 0
    jc0 = judge_counters()
    n_units = {i: 1 for i in items}
    if unit and units is not None:
        for i in items:
            try:
                n_units[i] = max(int(units(i)), 0)
            except Exception:  # noqa: BLE001 - progress never fails a run; the item's own asset names the problem
                n_units[i] = 0
        total = sum(n_units.values()) * len(generators)
    else:
        unit = ""
        total = len(items) * (1 + len(generators)) + len(aggregate_assets)
    bar = Progress(total, partitions.benchmark, enabled=show_progress, unit=unit or "partition",
                   reading=media.last_opened, opened=media.opened_since if unit else None,
                   frames=media.passes_now if unit else None, passes=_forward_count)
    say = progress or bar.write
    stats.recovered = reap_dead_runs(instance, log=say)
    home = Path(os.environ.get("DAGSTER_HOME", ".")) if not instance.is_ephemeral else None
    with (home_lock(home) if home is not None else contextlib.nullcontext()):
        known_items = set(instance.get_dynamic_partitions(partitions.items.name))
        instance.add_dynamic_partitions(partitions.items.name, [i for i in items if i not in known_items])
        known_gens = set(instance.get_dynamic_partitions(partitions.generators.name))
        instance.add_dynamic_partitions(partitions.generators.name,
                                        [g.name for g in generators if g.name not in known_gens])
        # registered on every run, whatever an earlier (killed) one got to; read back before any materialize
        for pdef, want in ((partitions.items, items), (partitions.generators, [g.name for g in generators])):
            lost = sorted(set(want) - set(instance.get_dynamic_partitions(pdef.name)))
            if lost:
                raise RuntimeError(f"partitions {', '.join(lost[:5])} of {pdef.name} did not register in the "
                                   f"Dagster home {home}")
    state = evaluator_state(resources)
    tags = {**process_tags(), "bench/evaluator_state": state, **evaluator_tags(resources), **(extra_tags or {})}
    stats.staleness_unknown = tags.get(STALENESS_UNKNOWN_TAG, "")

    def run(selection: Sequence[str], partition_key: Optional[str], label: str, kind: str, n: int = 1,
            root: str = "") -> bool:
        bar.label(label, kind, n, root=root)
        todo = [AssetKey(a) for a in selection]
        if only_stale or force:  # core/automation.py rerun_plan: missing, stale, input changed, evaluator, forced
            why = rerun_plan(instance, assets, todo, partition_key, resources, force=force)
            for k, reason in why.items():
                stats.reruns.setdefault(reason, []).append((k.to_user_string(), partition_key))
            todo = sorted(why, key=str)
        if not todo:
            return True
        bar.expect(len(todo))   # one step per asset: each an equal share of the partition's shots
        if progress is not None:
            progress(f"  materialising {label}: {', '.join(k.to_user_string() for k in todo)}")
        try:
            with step_starts(instance, bar.stage):
                result = guarded_materialize(assets, instance=instance, log=say, selection=todo, tick=bar.tick,
                                             partition_key=partition_key, resources=resources, tags=tags,
                                             run_config={"loggers": {"console": {"config": {"log_level": log_level}}}})
        except KeyboardInterrupt:
            stats.interrupted = True
            raise
        _collect_warnings(instance, result.run_id, stats)
        if result.success:
            stats.materialized += [(k.to_user_string(), partition_key) for k in todo]
            return True
        for ev in result.all_events:
            if ev.is_step_failure:
                msg = error_message(ev.step_failure_data.error)
                stats.failed.append((ev.step_key or "?", partition_key, msg))
                say(f"FAILED {ev.step_key} for {label}: {msg}")
        return False

    item_kind, gen_kind = f"{partitions.item_dim}", f"generator x {partitions.item_dim}"
    dim = partitions.item_dim

    def gen_label(g: str, item: str) -> str:  # 'faithful x episode e0002 (16 shots)'; a one-video item says no more
        n = n_units[item]
        return f"{g} x {dim} {item}" + (f" ({n} {_plural(unit, n)})" if unit and n != 1 else "")

    # unit counts: the dataset partitions and the aggregates are timed for the ETA but only the scored
    # generator x item partitions move the count of shots / videos
    bar.plan(item_kind, len(items), counted=not unit)
    bar.plan(gen_kind, sum(n_units.values()) * len(generators), unit=unit)
    bar.plan("aggregate", len(aggregate_assets), counted=not unit)
    try:
        ok_items = []
        for item in items:
            if run(item_assets, item, f"{dim} {item}", item_kind):
                ok_items.append(item)
            bar.step()
        for item in [i for i in items if i not in set(ok_items)]:  # their generator partitions cannot run
            for g in generators:
                bar.label(gen_label(g.name, item), gen_kind, n_units[item])
                bar.step()
        for g in generators:
            for item in ok_items:
                run(generator_assets, str(partitions.key(g.name, item)), gen_label(g.name, item), gen_kind,
                    n_units[item], root=g.path)
                bar.step()
        for a in aggregate_assets:
            run([a], None, a, "aggregate")
            bar.step()
    finally:
        bar.close("done" if interrupts.received() is None else f"stopped ({interrupts.signal_name()})")
        save_digest_cache()   # the input digests computed here: the next run stats its files instead
    f1, s1 = _model_counters()
    stats.forwards, stats.forward_s = f1 - f0, s1 - s0
    stats.decodes = media.decode_count() - d0
    stats.judge_calls = (judge.stats()["network_calls"] - j0) if judge is not None else 0
    stats.judge = judge_delta(jc0, judge_counters())
    stats.wall_s = time.perf_counter() - t0
    return stats
