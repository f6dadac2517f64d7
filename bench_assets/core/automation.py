"""Sensors and schedules: new generators become partitions and runs; stale partitions re-run nightly.

Staleness (issue 25): a partition is re-run when Dagster's resolver says it is missing or stale (code versions,
upstream data versions), when a file it read changed since (each input asset registers its files' content digest
here with ``@input_version``, records it as ``input_sha256`` and gives its output a content ``DataVersion``), or
when the checkpoint of a model slot it uses changed (``Staleness.weights_changed``: the slots each asset declares,
core/slots.py, against the fingerprints recorded on the run that materialised it), or when an evaluator failure it
holds could now pass (``evaluator_rerun``: scoped to what the asset uses), or when the judge it asks is another one
(``Staleness.judge_changed``: the judge's identity, recorded on every run like the slots' fingerprints). Whatever
re-runs in a partition takes the assets downstream of it in that partition along (``rerun_plan``)."""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

from dagster import (
    AssetKey,
    AssetRecordsFilter,
    AssetSelection,
    DagsterRunStatus,
    DefaultSensorStatus,
    DefaultScheduleStatus,
    RunRequest,
    RunsFilter,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    ScheduleEvaluationContext,
    schedule,
    sensor,
)
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._time import get_current_datetime

from bench_assets.core.durations import duration_words
from bench_assets.core.generators import discover_generators, folder_fingerprint
from bench_assets.core.names import BadName, validate_key
from bench_assets.core.partitions import BenchmarkPartitions


BENCHMARK_TAG = "bench/benchmark"


def evaluate_op_name(benchmark: str) -> str:
    """The op of `<benchmark>_evaluate` (core/evaluate_job.py; run config addresses it: ``{"ops": {<name>:
    {"config": ...}}}``). Here, beside the sensor that builds those run configs, because evaluate_job imports the
    runner, which imports this module."""
    return f"{benchmark}_evaluate_op"


INPUT_SHA_KEY = "input_sha256"  # materialization metadata: the content digest of the files the asset read
_INPUT_VERSIONS: dict[str, Callable] = {}
_ALSO_READ_BY: dict[str, tuple] = {}


def input_version(asset_name: str, also_read_by: Sequence[str] = ()):
    """Register ``fn(paths, partition_key) -> digest`` as the content digest of the files ``asset_name`` reads for
    a partition (None: none to read). The asset records the same digest under ``input_sha256``; the runner, the
    sensors and the nightly schedule re-run the partition when the two differ. ``also_read_by``: assets of the
    same partition that read the same files without being downstream of ``asset_name`` (they re-run with it)."""
    def register(fn: Callable) -> Callable:
        _INPUT_VERSIONS[asset_name] = fn
        _ALSO_READ_BY[asset_name] = tuple(also_read_by)
        return fn
    return register


_DIGESTS: dict = {}  # (path, size, mtime_ns, inode) -> sha256: a long-lived sensor process re-hashes only what moved
DIGEST_CACHE = "bench-digests.json"   # in DAGSTER_HOME: the same remembered digests across processes
_DISK: dict = {"loaded": None, "dirty": False}


def _digest_cache_path():
    import os
    home = os.environ.get("DAGSTER_HOME")
    return os.path.join(home, DIGEST_CACHE) if home and os.path.isdir(home) else None


def _load_digest_cache() -> None:
    """Read the home's remembered digests once per process (a no-change `bench evaluate` re-hashed every input
    file of every item, every video of a generator included, in each new process)."""
    path = _digest_cache_path()
    if _DISK["loaded"] == path:
        return
    _DISK["loaded"] = path
    if path is None:
        return
    try:
        with open(path) as f:
            rows = json.load(f)
        for p, size, mtime, ino, sha in rows:
            _DIGESTS.setdefault((p, size, mtime, ino), sha)
    except (OSError, ValueError, TypeError):  # absent, cut short or another format: hashed again, never trusted
        pass


def save_digest_cache() -> None:
    """Write the remembered digests to the home (atomically), when new ones were computed."""
    import os
    path = _digest_cache_path()
    if path is None or not _DISK["dirty"]:
        return
    tmp = f"{path}.tmp-{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump([[*k, v] for k, v in _DIGESTS.items()], f)
        os.replace(tmp, path)
        _DISK["dirty"] = False
    except OSError:  # a read-only home: digests are recomputed next time, nothing else changes
        try:
            os.unlink(tmp)
        except OSError:
            pass


def file_digest(path) -> str:
    """sha256 of one file's bytes (streamed), remembered per (path, size, mtime, inode): within the process, and
    across processes in the Dagster home's ``bench-digests.json`` (``save_digest_cache``), so a sensor tick or a
    no-change `bench evaluate` over every item's files costs stat calls once they have been read. A file
    rewritten in place changes its mtime (and usually its size): it is read again."""
    import os
    st = os.stat(path)
    key = (str(path), st.st_size, st.st_mtime_ns, st.st_ino)
    _load_digest_cache()
    if key in _DIGESTS:
        return _DIGESTS[key]
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    if len(_DIGESTS) > 200_000:
        _DIGESTS.clear()
    _DIGESTS[key] = h.hexdigest()
    _DISK["dirty"] = True
    return _DIGESTS[key]


def files_digest(files) -> str:
    """One digest over (name, sha256) of several files (names relative to the caller's choice); a missing file
    counts as its name with no content, so deleting a shot changes the digest too."""
    from pathlib import Path
    parts = []
    for name, path in sorted((str(n), Path(p)) for n, p in files):
        parts.append([name, file_digest(path) if path.is_file() else None])
    return hashlib.sha256(json.dumps(parts).encode()).hexdigest()


def folder_digest(folder) -> str:
    """``files_digest`` over every file under ``folder`` (names relative to it); a missing folder digests as empty."""
    from pathlib import Path
    folder = Path(folder)
    if not folder.is_dir():
        return files_digest([])
    return files_digest((f.relative_to(folder).as_posix(), f) for f in folder.rglob("*") if f.is_file())


def content_data_version(*parts) -> "DataVersion":
    """A DataVersion from content (file digests, upstream rows, the code version): what an input asset gives its
    output, so Dagster marks exactly the partitions downstream of a changed file stale."""
    from dagster import DataVersion
    return DataVersion(hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).hexdigest()[:24])


def current_input_version(asset_name: str, paths, pk: str | None) -> str | None:
    fn = _INPUT_VERSIONS.get(asset_name)
    if fn is None or paths is None or pk is None:
        return None
    try:
        return fn(paths, pk)
    except (OSError, ValueError):  # unreadable input: the asset's own run reports it
        return None


def _latest_record(instance, key: AssetKey, partition: str | None):
    recs = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None),
        limit=1).records
    return recs[0] if recs else None


def input_changed(instance, key: AssetKey, pk: str | None, paths, latest: Callable | None = None) -> bool:
    """True when the files ``key`` read for ``pk`` changed since its last materialization. ``latest``: a
    (key, pk) -> record lookup to share (``Staleness.latest``)."""
    now = current_input_version(key.to_user_string(), paths, pk)
    if now is None:
        return False
    rec = latest(key, pk) if latest is not None else _latest_record(instance, key, pk)
    if rec is None:
        return False
    mv = (rec.asset_materialization.metadata or {}).get(INPUT_SHA_KEY)
    if mv is None:  # materialised before inputs were versioned: unknown, not changed (no surprise full re-run)
        return False
    return getattr(mv, "value", mv) != now


class Staleness:
    """Missing / stale status of asset partitions from one asset graph and one caching resolver: build it once per
    sensor tick and ask for every partition (upstream statuses are resolved once, not once per partition). Build
    a new one after materialising: the resolver caches. ``bulk``: the materialised partitions of each asset are
    read once (worth it when many partitions of an asset are asked about, as in a sensor tick)."""

    INPUT_CHANGED = "INPUT_CHANGED"
    WEIGHTS_CHANGED = "WEIGHTS_CHANGED"
    JUDGE_CHANGED = "JUDGE_CHANGED"

    TABLE_PROBLEM = "TABLE_PROBLEM"

    def __init__(self, instance, assets: Sequence, bulk: bool = False, paths=None, models=None, judge=None,
                 io_manager=None):
        self.instance, self.bulk, self.paths, self.models, self.judge = instance, bulk, paths, models, judge
        # with an IO manager (the sensor's), ``status`` also reads the store: a table the instance calls
        # materialised but the store lost or cannot read is TABLE_PROBLEM (``table_problems`` says why)
        self.io_manager = io_manager
        self.table_problems: dict[tuple, str] = {}
        self._judge_now = judge_identity(judge)
        self._prompts_now = prompt_sets() if judge is not None else {}
        self._run_prompts: dict[str, dict] = {}
        self._package = {k: asset_package(a) for a in assets for k in getattr(a, "keys", ())}
        self.judge_changes: dict[tuple, str] = {}  # (key, pk) -> how the judge it asked differs from today's
        self._materialized: dict[AssetKey, set] = {}
        self._required = {k: set(getattr(a, "required_resource_keys", None) or ())
                          for a in assets for k in getattr(a, "keys", ())}
        self._now_fp: dict[str, str | None] = {}  # slot -> its fingerprint now (refreshed every second)
        self._now_at = time.monotonic()
        self._run_fp: dict[str, dict | None] = {}
        self.changed_slots: dict[tuple, list[str]] = {}  # (key, pk) -> the slots whose checkpoint changed
        self._latest: dict[tuple, Any] = {}  # (key, pk) -> last materialization record (input, weights, evaluator)
        self._runs: dict[str, Any] = {}      # run id -> run (its tags)
        self.graph = AssetGraph.from_assets(assets)
        view = AssetGraphView(temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
                              instance=instance, asset_graph=self.graph)
        self.resolver = CachingStaleStatusResolver(instance=instance, asset_graph=self.graph, loading_context=view)

    def status(self, key: AssetKey, pk: str | None) -> str | None:
        """"MISSING" / "STALE", or None when up to date.

        Dagster's own resolver decides for partitions (code versions, upstream data versions). It does not look
        through a partitioned -> unpartitioned edge, so an aggregate (a leaderboard over every generator x item)
        is also stale when any upstream partition was materialised after it: a new generator's or answerer's
        partitions then refresh the leaderboard."""
        if self.bulk and pk is not None and self.graph.get(key).is_partitioned:
            # one query per asset for every partition key it has: a partition that was never materialised is
            # missing without asking the resolver (a new generator's partitions are all missing)
            if key not in self._materialized:
                self._materialized[key] = set(self.instance.get_materialized_partitions(key))
            if pk not in self._materialized[key]:
                return StaleStatus.MISSING.value
        status = self.resolver.get_status(key, pk)
        if status in (StaleStatus.MISSING, StaleStatus.STALE):
            return status.value
        if self.paths is not None and input_changed(self.instance, key, pk, self.paths, latest=self.latest):
            return self.INPUT_CHANGED
        if self.models is not None and self.weights_changed(key, pk):
            return self.WEIGHTS_CHANGED
        if self.judge is not None and self.judge_changed(key, pk):
            return self.JUDGE_CHANGED
        if self.io_manager is not None:
            problem = self.table_problem(key, pk, self.io_manager, own_store_only=True)
            if problem:
                self.table_problems[(key, pk)] = problem
                return self.TABLE_PROBLEM
        if pk is None and not self.graph.get(key).is_partitioned:
            def stored(k: AssetKey) -> int:   # the latest materialisation's storage id, any partition (0: none)
                rec = self.latest(k, None)
                return rec.storage_id if rec is not None else 0
            mine = stored(key)
            newer = [p for p in self.graph.get(key).parent_keys if self.graph.has(p) and stored(p) > mine]
            if newer:
                return StaleStatus.STALE.value
        return None

    def latest(self, key: AssetKey, pk: str | None):
        """The last materialization record of ``key`` / ``pk``, read once: the input, weights and evaluator checks
        of one partition each asked for it (three queries per asset partition on a no-change rerun). Safe to keep:
        a Staleness is rebuilt whenever the store moves (``_plan_staleness``)."""
        if (key, pk) not in self._latest:
            self._latest[(key, pk)] = _latest_record(self.instance, key, pk)
        return self._latest[(key, pk)]

    def table_problem(self, key: AssetKey, pk: str | None, io_manager, own_store_only: bool = False) -> str | None:
        """Why the table that ``key`` / ``pk``'s last materialisation wrote cannot be read back now (``table
        missing: <folder>``: deleted, or a new store root under an old home; ``table unreadable: ...``), or None.
        The instance alone would call it up to date. Only a materialisation whose IO manager recorded its ``path``
        wrote a table (a run-less record, an asset that returned nothing, another IO manager: not asked). Not
        cached: a file deleted while a shared Staleness lives is seen."""
        if io_manager is None or not hasattr(io_manager, "table_problem"):
            return None
        rec = self.latest(key, pk)
        mat = rec.asset_materialization if rec is not None else None
        if mat is None or "path" not in (mat.metadata or {}):
            return None
        path = getattr(mat.metadata["path"], "value", mat.metadata["path"])
        if not str(path).endswith(".parquet"):   # another IO manager's file (Dagster's pickles): not ours to check
            return None
        if own_store_only:
            # the sensor judges the tables its own store wrote: a run made under another store root (a job given
            # its own store) is not its to judge; `bench evaluate` covers a new store under an old home
            store = getattr(io_manager, "store", None)
            tables = store._join("tables") + "/" if store is not None else ""
            if not str(path).startswith(tables):
                return None
        node = self.graph.get(key)
        return io_manager.table_problem(key, node.partitions_def if node.is_partitioned else None, pk)

    def run(self, run_id: str):
        if run_id not in self._runs:
            self._runs[run_id] = self.instance.get_run_by_id(run_id)
        return self._runs[run_id]

    def weights_changed(self, key: AssetKey, pk: str | None) -> list[str]:
        """The slots ``key`` uses (declared in its benchmark's wiring, core/slots.py) whose checkpoint fingerprint
        now differs from the one recorded on the run that last materialised ``pk``; [] when none did, when the
        asset uses no slot, or when that run recorded no fingerprints (made before they were recorded, or outside
        `bench evaluate` / the sensors: unknown is not changed, as for input digests)."""
        from bench_assets.core.slots import asset_slots, with_needs
        slots = asset_slots(key.to_user_string(), self._required.get(key))
        slots = with_needs(slots) if slots else slots
        if slots == ():
            return []
        rec = self.latest(key, pk)
        if rec is None:
            return []
        if rec.run_id not in self._run_fp:
            run = self.run(rec.run_id)
            text = run.tags.get(SLOT_FP_TAG) if run is not None else None
            try:
                self._run_fp[rec.run_id] = json.loads(text) if text else None
            except ValueError:
                self._run_fp[rec.run_id] = None
        recorded = self._run_fp[rec.run_id]
        if not isinstance(recorded, dict):
            # a run that recorded no fingerprints (Materialize in the UI): the asset's own "models" metadata, where
            # it records its slots' manifest, for those slots
            recorded = manifest_fingerprints(rec.asset_materialization)
            if not recorded:
                return []
            slots = tuple(s for s in (slots if slots is not None else sorted(recorded)) if s in recorded)
        if slots is None:  # undeclared: every slot the registry has
            from bench_resources.models.specs import SLOTS
            slots = tuple(sorted(SLOTS))
        if time.monotonic() - self._now_at > 1.0:  # a Staleness reused across calls (rerun_plan) sees an import
            self._now_fp, self._now_at = {}, time.monotonic()
        changed = []
        for s in slots:
            if s not in self._now_fp:
                self._now_fp[s] = slot_fingerprint(self.models, s)
            if recorded.get(s) != self._now_fp[s]:
                changed.append(s)
        if changed:
            self.changed_slots[(key, pk)] = changed
        return changed

    def judge_changed(self, key: AssetKey, pk: str | None) -> str | None:
        """How the judge that answered ``key``'s partition ``pk`` differs from today's (``judge_change_words``), or
        None: when it is the same, when the asset does not ask the judge (does not require the ``judge``
        resource), or when nothing was recorded (a run made outside `bench evaluate` / the sensors whose
        materialization holds no ``judge`` fingerprint either: unknown is not changed, as for weights). A run
        from before identities were recorded is compared through its judge-state digest."""
        if self.judge is None or "judge" not in (self._required.get(key) or ()):
            return None
        rec = self.latest(key, pk)
        if rec is None:
            return None
        run = self.run(rec.run_id)
        tags = run.tags if run is not None else {}
        recorded = tags.get(JUDGE_ID_TAG)
        if recorded is not None:
            words = judge_change_words(recorded, self._judge_now) if recorded != self._judge_now else None
            if words is None and '"mode":"off"' not in recorded:   # with the judge off no prompt was sent
                words = self._prompts_changed(key, rec.run_id, tags)
        elif JUDGE_STATE_TAG in tags:
            words = ("judge changed (its state since a run that recorded no judge identity)"
                     if tags[JUDGE_STATE_TAG] != judge_state({"judge": self.judge}) else None)
        else:  # Materialize in the UI: the judge fingerprint an asset records in its metadata, where it does
            mv = (rec.asset_materialization.metadata or {}).get("judge")
            fp = getattr(mv, "value", mv)
            words = (judge_change_words(json.dumps(fp), json.dumps(self.judge.fingerprint()))
                     if isinstance(fp, dict) and hasattr(self.judge, "fingerprint")
                     and fp != self.judge.fingerprint() else None)
        if words:
            self.judge_changes[(key, pk)] = words
        return words

    def _prompts_changed(self, key: AssetKey, run_id: str, tags) -> str | None:
        """``judge prompts changed: <package>.judging`` when the prompt set of ``key``'s benchmark (its judging.py)
        differs from the one its run recorded; None when equal or unknown (no record, no judging module)."""
        pkg = self._package.get(key)
        if pkg is None or pkg not in self._prompts_now:
            return None
        if run_id not in self._run_prompts:
            try:
                value = json.loads(tags.get(JUDGE_PROMPTS_TAG) or "{}")
            except ValueError:
                value = {}
            self._run_prompts[run_id] = value if isinstance(value, dict) else {}
        was = self._run_prompts[run_id].get(pkg)
        if was is None or was == self._prompts_now[pkg]:
            return None
        return f"judge prompts changed: {pkg}.judging"

    def todo(self, keys: Sequence[AssetKey], pk: str | None) -> list[AssetKey]:
        """The assets among ``keys`` whose partition ``pk`` is missing, stale or whose input files changed, with
        their descendants among ``keys`` (they read what re-runs), sorted."""
        found = {k for k in keys if self.status(k, pk)}
        for k in list(found):
            if self.paths is not None:
                found |= {AssetKey(o) for o in _ALSO_READ_BY.get(k.to_user_string(), ()) if AssetKey(o) in keys}
        for k in list(found):
            found |= _descendants(self.graph, k, set(keys))
        return sorted(found, key=str)


def stale_or_missing(instance, assets: Sequence, keys: Sequence[AssetKey],
                     partition_keys: Callable[[AssetKey], Sequence[str | None]],
                     paths=None, models=None, judge=None, io_manager=None) -> list[tuple[AssetKey, str | None, str]]:
    """(asset, partition, status) for every partition whose data is missing or stale (``Staleness``; with
    ``paths``, also whose input files changed; with ``models``, also whose slots' checkpoints changed; with
    ``judge``, also whose judge was another one; with ``io_manager``, also whose table the store lost)."""
    st = Staleness(instance, assets, paths=paths, models=models, judge=judge, io_manager=io_manager)
    out = []
    for key in keys:
        for pk in partition_keys(key):
            status = st.status(key, pk)
            if status:
                out.append((key, pk, status))
    return out


def evaluator_state(resources: dict) -> str:
    """A digest of what decides whether an evaluator-side failure would now pass: the judge's state (mode,
    backend, model, endpoint, key set; never the key) and which model slots have weights."""
    state: dict = {}
    judge = resources.get("judge")
    if judge is not None:
        state["judge"] = judge.state() if hasattr(judge, "state") else {"mode": getattr(judge, "mode", None)}
    models = resources.get("models")
    if models is not None:
        try:
            state["slots"] = {s.slot: [bool(s.available), s.fingerprint] for s in models.statuses()}
        except Exception as e:  # a registry that cannot list its slots: the state says so
            state["slots"] = f"unavailable: {type(e).__name__}"
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


EVALUATOR_STATE_TAG = "bench/evaluator_state"


def evaluator_failures(materialization) -> int:
    """``evaluator_failures`` from a materialization's metadata (0 when absent)."""
    mv = (materialization.metadata or {}).get("evaluator_failures") if materialization is not None else None
    value = getattr(mv, "value", mv)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def uses_judge(assets: Sequence, key: AssetKey) -> bool:
    """Whether the asset asks the judge (its definition requires the ``judge`` resource)."""
    for a in assets:
        if key in getattr(a, "keys", ()):
            return "judge" in (getattr(a, "required_resource_keys", None) or set())
    return False


SLOT_FP_TAG = "bench/slot_fingerprints"  # run tag: {slot: fingerprint of its checkpoint, None when unavailable}
JUDGE_STATE_TAG = "bench/judge_state"     # run tag: the judge's state alone (judge-using assets compare it)
# run tag: who answered (Judge.identity(): backend, model, endpoint, answer-shaping settings; or off), canonical JSON.
# The judge's counterpart of SLOT_FP_TAG: a judge-using asset whose run recorded another identity is stale.
JUDGE_ID_TAG = "bench/judge_identity"


def judge_identity(judge) -> str | None:
    """The ``JUDGE_ID_TAG`` value of ``judge`` (None without one); a judge without ``identity()`` is its mode."""
    if judge is None:
        return None
    ident = judge.identity() if hasattr(judge, "identity") else {"mode": getattr(judge, "mode", None)}
    return json.dumps(ident, sort_keys=True, separators=(",", ":"), default=str)


JUDGE_PROMPTS_TAG = "bench/judge_prompts"  # run tag: {benchmark package: digest of its judging.py}, canonical JSON


def prompt_sets() -> dict[str, str]:
    """The prompt set of every benchmark whose judge prompts are loaded: ``{"bench_assets.<benchmark>": sha256[:12]
    of its judging.py}`` (a benchmark's prompts, schemas and versions live there). Read from the loaded modules,
    so core names no benchmark."""
    import sys
    out = {}
    for name, mod in sorted(sys.modules.items()):
        if not (name.startswith("bench_assets.") and name.endswith(".judging")) or name.count(".") != 2:
            continue
        try:
            # a benchmark whose prompt texts can come from elsewhere (EntityBench's judge_prompts=authors) says so
            own = getattr(mod, "prompt_set_digest", None)
            out[name.rsplit(".", 1)[0]] = own() if callable(own) else file_digest(mod.__file__)[:12]
        except (OSError, TypeError, AttributeError):  # no source file: no prompt set to compare (unknown)
            continue
    return out


def asset_package(asset_def) -> str | None:
    """``bench_assets.<benchmark>`` of the module that defines an asset (None when it cannot be told)."""
    fn = getattr(getattr(getattr(asset_def, "op", None), "compute_fn", None), "decorated_fn", None)
    module = getattr(fn, "__module__", "") or ""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) >= 2 and parts[0] == "bench_assets" else None


def judge_change_words(recorded: str, now: str | None) -> str:
    """``judge changed: model a -> b`` from two ``judge_identity`` values: the fields that differ, in the words a
    rerun line shows (``judge switched off`` / ``judge switched on`` when one of them is off)."""
    def load(text):
        try:
            value = json.loads(text) if text else {}
        except ValueError:
            value = {}
        return value if isinstance(value, dict) else {}
    old, new = load(recorded), load(now)
    if new.get("mode") == "off" and old.get("mode") != "off":
        return "judge changed: judge switched off"
    if old.get("mode") == "off" and new.get("mode") != "off":
        return f"judge changed: judge switched on ({new.get('backend')} {new.get('model')})"
    diff = [f"{k} {old.get(k)} -> {new.get(k)}" for k in sorted(set(old) | set(new)) if old.get(k) != new.get(k)]
    return "judge changed: " + (", ".join(diff) if diff else "identity differs")


def slot_fingerprint(models, slot: str) -> str | None:
    """A short digest of a slot's checkpoint (its name and the weights' sha256), None when it is unavailable."""
    try:
        st = models.status(slot)
    except KeyError:  # a slot the registry no longer has
        return None
    if not st.available:
        return None
    return hashlib.sha256(f"{st.checkpoint}|{st.fingerprint}".encode()).hexdigest()[:12]


def manifest_fingerprints(materialization) -> dict[str, str | None]:
    """``slot_fingerprint`` of the slots in a materialization's ``models`` metadata (a slot manifest: checkpoint,
    fingerprint, available per slot), {} when it has none."""
    mv = (materialization.metadata or {}).get("models") if materialization is not None else None
    value = getattr(mv, "value", mv)
    if not isinstance(value, dict):
        return {}
    out = {}
    for slot, d in value.items():
        if isinstance(d, dict) and "fingerprint" in d:
            out[str(slot)] = (hashlib.sha256(f"{d.get('checkpoint')}|{d.get('fingerprint')}".encode())
                              .hexdigest()[:12] if d.get("available") else None)
    return out


def slot_fingerprints(models) -> dict[str, str | None]:
    """``slot_fingerprint`` of every slot (what a run records under ``SLOT_FP_TAG``)."""
    from bench_resources.models.specs import SLOTS
    return {s: slot_fingerprint(models, s) for s in sorted(SLOTS)}


def judge_state(resources: dict) -> str:
    judge = resources.get("judge")
    state = (judge.state() if hasattr(judge, "state") else {"mode": getattr(judge, "mode", None)}) \
        if judge is not None else None
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


def scoped_evaluator_state(resources: dict, judge: bool) -> str:
    """``evaluator_state`` of what an asset uses: the judge only for assets that ask it, the model slots always
    (an asset's slots are not declared; every slot's weights count)."""
    return evaluator_state({k: v for k, v in resources.items() if k != "judge" or judge})


def evaluator_rerun(instance, assets: Sequence, key: AssetKey, partition: str | None,
                    resources: dict, st: "Staleness | None" = None) -> str | None:
    """Why the last materialization's evaluator failures should be tried again now, or None.

    An asset that asks the judge and counted failures is re-run whenever the judge can ask (live) and some question
    failed and is still unanswered (the judge's failure markers): an evaluator failure is never final, and the
    re-run asks exactly the failed questions (answered ones are cache hits); failures of another kind (a missing
    weight) in a judge-using asset do not re-run it on every run.
    Otherwise a re-run needs a change of the evaluator state the asset uses: the judge's only for judge-using
    assets, so switching the judge never re-runs what it does not touch."""
    rec = st.latest(key, partition) if st is not None else _latest_record(instance, key, partition)
    if rec is None or evaluator_failures(rec.asset_materialization) <= 0:
        return None
    judge = resources.get("judge")
    asks = uses_judge(assets, key)
    if (asks and judge is not None and getattr(judge, "mode", None) == "live" and judge.available()[0]
            and getattr(judge, "has_failed_questions", lambda: True)()):
        return f"{evaluator_failures(rec.asset_materialization)} evaluator failures, judge live: re-asking"
    run = st.run(rec.run_id) if st is not None else instance.get_run_by_id(rec.run_id)
    if run is not None and SLOT_FP_TAG in run.tags and JUDGE_STATE_TAG in run.tags:
        # the slots' part is per slot and per asset (Staleness.weights_changed: a missing weight provided since
        # re-runs exactly the assets declaring that slot); here only the judge's state, for assets that ask it
        if asks and run.tags.get(JUDGE_STATE_TAG) != judge_state(resources):
            return "evaluator failures and the judge's state changed"
        return None
    recorded = run.tags.get(SCOPED_STATE_TAG_JUDGE if asks else SCOPED_STATE_TAG_SLOTS) if run else None
    if recorded is None and run is not None and SCOPED_STATE_TAG_SLOTS not in run.tags:
        recorded = run.tags.get(EVALUATOR_STATE_TAG)  # a run from before scoped states: the whole state
        now = evaluator_state(resources)
    else:
        now = scoped_evaluator_state(resources, asks)
    if recorded != now:
        return "evaluator failures and the evaluator state it uses changed"
    return None


SCOPED_STATE_TAG_JUDGE = "bench/evaluator_state_judge"   # judge + slots: for judge-using assets
SCOPED_STATE_TAG_SLOTS = "bench/evaluator_state_slots"   # slots only: for every other asset


def evaluator_tags(resources: dict) -> dict[str, str]:
    """The run tags ``evaluator_rerun`` compares against."""
    tags = {EVALUATOR_STATE_TAG: evaluator_state(resources),
            SCOPED_STATE_TAG_JUDGE: scoped_evaluator_state(resources, True),
            SCOPED_STATE_TAG_SLOTS: scoped_evaluator_state(resources, False),
            JUDGE_STATE_TAG: judge_state(resources)}
    if resources.get("judge") is not None:
        tags[JUDGE_ID_TAG] = judge_identity(resources["judge"])
        tags[JUDGE_PROMPTS_TAG] = json.dumps(prompt_sets(), sort_keys=True, separators=(",", ":"))
    if resources.get("models") is not None:
        tags.update(slot_tags(resources["models"]))
    return tags


def slot_tags(models) -> dict[str, str]:
    """The run tag recording every slot's checkpoint fingerprint (``Staleness.weights_changed`` reads it). A registry
    that cannot say leaves no record, so a later weights change cannot be seen: then the tag says so instead
    (``STALENESS_UNKNOWN_TAG``: the run's log, the CLI summary and each output's metadata show it)."""
    try:
        return {SLOT_FP_TAG: json.dumps(slot_fingerprints(models), sort_keys=True, separators=(",", ":"))}
    except Exception as e:  # noqa: BLE001 - any failure of the registry: recorded, not raised (the run goes on)
        return {STALENESS_UNKNOWN_TAG: f"weights: the slots' checkpoint fingerprints could not be read ({_why(e)}), "
                                       f"so a later change of these weights will not re-run what this run made"}


# Run tag: why staleness cannot be told (a registry or the data paths that failed), "; "-joined. The CLI summary
# (``staleness_unknown_lines``), the sensor tick's log and every output's metadata (bench_resources/store.py, which
# reads the same tag name) say "staleness unknown: <why>" instead of switching a check off silently.
STALENESS_UNKNOWN_TAG = "bench/staleness_unknown"


def _why(e: BaseException) -> str:
    """An exception in one line, without the "; " that separates reasons in the tag."""
    text = " ".join(str(e).split()).replace(";", ",")
    return f"{type(e).__name__}: {text[:200]}" if text else type(e).__name__


def join_unknown(*reasons: str | None) -> str:
    """The ``STALENESS_UNKNOWN_TAG`` value of several reasons (empty: none)."""
    return "; ".join(r for r in reasons if r)


def staleness_unknown(why: str) -> str:
    """The words every place uses for a staleness check that could not run."""
    return f"staleness unknown: {why}"


def staleness_unknown_lines(stats) -> list[str]:
    """The CLI summary's lines for a run whose staleness could not be told (``RunStats.staleness_unknown``): one
    ``staleness unknown: <why>`` per reason, none when every check ran."""
    text = getattr(stats, "staleness_unknown", None) or ""
    return [staleness_unknown(w.strip()) for w in text.split("; ") if w.strip()]


def _descendants(graph, key: AssetKey, within: set) -> set:
    out, todo = set(), [key]
    while todo:
        for child in graph.get(todo.pop()).child_keys:
            if child in within and child not in out:
                out.add(child)
                todo.append(child)
    return out


_PLAN_STALENESS: list = []  # [(instance, assets, paths, models, event-log mark, records digest, Staleness)]: one


RECORDS_RECHECK_S = 2.0
_RECORDS_CHECKED = [0.0]


def fresh_plan() -> None:
    """The next ``rerun_plan`` reads the asset records again (a caller starting an evaluation: anything may have
    been wiped since its last one)."""
    _RECORDS_CHECKED[0] = 0.0


def _records_digest(instance, keys) -> tuple:
    """Every asset's last event id (one query): changes when any of them is materialised or wiped."""
    return tuple(sorted((r.asset_entry.asset_key.to_user_string(), r.asset_entry.last_event_storage_id)
                        for r in instance.get_asset_records(list(keys))))


def _plan_staleness(instance, assets: Sequence, paths, models=None, judge=None) -> "Staleness":
    """The ``Staleness`` that ``rerun_plan`` asks, shared by its calls while the store has not moved.

    An evaluate asks one partition after the other; while nothing was written in between (a no-change rerun),
    rebuilding the asset graph and re-reading every asset record per partition was most of its time. A new event
    in the log (a materialisation, a run starting or failing, here or in another process) or a changed asset
    record (a wipe deletes events) gives a fresh one, so the resolver's caches never outlive what they saw. The
    asset records of every asset are read in one batch."""
    try:
        mark = instance.event_log_storage.get_maximum_record_id()
    except Exception:  # a storage that cannot say: no sharing
        mark = None
    if _PLAN_STALENESS and mark is not None:
        i, a, p, mo, m, digest, st = _PLAN_STALENESS[0]
        if i is instance and a is assets and p is paths and mo is models and st.judge is judge and m == mark:
            # the asset records (a wipe deletes events without a new one) are read again at most every
            # RECORDS_RECHECK_S: reading every asset's record per partition was a fifth of a no-change run
            if time.monotonic() - _RECORDS_CHECKED[0] < RECORDS_RECHECK_S:
                return st
            if _records_digest(instance, st.graph.get_all_asset_keys()) == digest:
                _RECORDS_CHECKED[0] = time.monotonic()
                return st
    from dagster._core.storage.event_log.base import AssetRecord
    st = Staleness(instance, assets, paths=paths, models=models, judge=judge)
    try:  # one query for every asset's record instead of one per asset partition asked about
        keys = list(st.graph.get_all_asset_keys())
        AssetRecord.blocking_get_many(st.resolver.instance_queryer._loading_context, keys)
        digest = _records_digest(instance, keys)
    except Exception:  # only a prefetch: the resolver reads what it needs on its own; no sharing
        mark = None
        digest = None
    _PLAN_STALENESS[:] = [(instance, assets, paths, models, mark, digest, st)] if mark is not None else []
    _RECORDS_CHECKED[0] = time.monotonic()
    return st


def rerun_plan(instance, assets: Sequence, keys: Sequence[AssetKey], pk: str | None, resources: dict,
               force: bool = False) -> dict[AssetKey, str]:
    """The assets among ``keys`` to materialise for partition ``pk``, each with why: missing, stale (Dagster's
    resolver), input changed (its files' content), evaluator failures to retry, or forced; an asset that re-runs
    takes its descendants among ``keys`` along (their rows rest on it: no row mixes two versions of an input)."""
    if force:
        return {k: "forced (--force)" for k in keys}
    st = _plan_staleness(instance, assets, resources.get("paths"), resources.get("models"), resources.get("judge"))
    why: dict[AssetKey, str] = {}
    for k in keys:
        status = st.status(k, pk)
        if status == Staleness.INPUT_CHANGED:
            why[k] = "input files changed"
            for other in _ALSO_READ_BY.get(k.to_user_string(), ()):
                if AssetKey(other) in keys:
                    why.setdefault(AssetKey(other), f"reads the changed files of {k.to_user_string()}")
        elif status == Staleness.WEIGHTS_CHANGED:
            why[k] = f"weights changed: slot {', '.join(st.changed_slots.get((k, pk), []))}"
        elif status == Staleness.JUDGE_CHANGED:
            why[k] = st.judge_changes.get((k, pk), "judge changed")
        elif status:
            why[k] = status.lower()
        else:
            reason = (st.table_problem(k, pk, resources.get("io_manager"))
                      or evaluator_rerun(instance, assets, k, pk, resources, st=st))
            if reason:
                why[k] = reason
    within = set(keys)
    for k in sorted(why, key=str):
        for d in _descendants(st.graph, k, within):
            why.setdefault(d, f"upstream {k.to_user_string()} re-runs")
    return why


def needs_rerun_for_evaluator(instance, key: AssetKey, partition: str | None, state: str) -> bool:
    """True when the last materialization counted evaluator failures (judge outage, replay miss, missing
    weights) and was made under a different evaluator state than ``state``: a better state may now pass."""
    rec = _latest_record(instance, key, partition)
    if rec is None or evaluator_failures(rec.asset_materialization) <= 0:
        return False
    run = instance.get_run_by_id(rec.run_id)
    return run is None or run.tags.get(EVALUATOR_STATE_TAG) != state


_LIVE_RUN_STATUSES = [DagsterRunStatus.QUEUED, DagsterRunStatus.NOT_STARTED, DagsterRunStatus.STARTING,
                      DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]


def generator_sensor_factory(*, benchmark: str, partitions: BenchmarkPartitions, item_ids: Callable[[], list[str]],
                             generators_root: Callable[[], str], item_assets: Sequence[str],
                             generator_assets: Sequence[str], assets_fn: Callable[[], Sequence],
                             minimum_interval_seconds: int = 10, evaluate_job=None,
                             full_check_seconds: float = 3600.0, card_keys: Mapping[str, Iterable[str]] | None = None):
    """A sensor that adds items and generators as dynamic partitions and requests their runs. ``assets_fn``
    gives the benchmark's asset definitions (the caller reads them from benchmarks.py: core never imports it).

    Only partitions with an asset missing or stale are requested, with only those assets: what `bench demo` or
    `bench evaluate` materialised already counts, so opening the UI after the CLI recomputes nothing. A
    generator's work is requested again whenever its folder changes (run keys carry the folder fingerprint).

    With ``evaluate_job`` (core/evaluate_job.py; the default for in-process deployments) every piece of work
    found in one tick becomes ONE run of that job: items first, then every stale generator x item partition,
    in one process that loads each model once. No second request while one of its runs is queued or running
    (progress would change the work list and start the same partitions twice).

    Without it (multiprocess, Celery, k8s: a partition per run is what spreads work over workers), one run per
    partition: items first, and a generator's runs once its items are materialised.

    Ticks are cheap so the interval can be short (a dropped folder waits ``minimum_interval_seconds`` at most):
    a tick first compares a quick fingerprint (item ids, every generator folder's names / sizes / mtimes, the
    naming errors, the assets' code versions) with the cursor and skips when it is unchanged. When it changed, the
    check covers what changed: the partitions of generators whose folder changed and of new items. Every
    partition is checked on the first tick, when a code version changed, and every ``full_check_seconds``
    (anything else, such as a wiped materialisation; the nightly schedule re-runs what went stale meanwhile). A
    partition never materialised is missing from one query per asset; only materialised ones ask the resolver.
    """

    target = ({"job": evaluate_job} if evaluate_job is not None
              else {"asset_selection": AssetSelection.assets(*item_assets, *generator_assets)})

    @sensor(name=f"{benchmark}_generators_sensor", minimum_interval_seconds=minimum_interval_seconds,
            default_status=DefaultSensorStatus.RUNNING, **target)
    def _sensor(context: SensorEvaluationContext):
        instance = context.instance
        errors: list[str] = []
        items = []
        for item in item_ids():
            try:
                items.append(validate_key(item, f"{benchmark} item"))
            except BadName as e:
                errors.append(str(e))
        # ``card_keys`` (benchmark -> keys its code reads), the CLI's check: a misspelt key is that folder's error
        # (the others are still requested), an unknown one a warning in the tick's log
        gens, gen_errors = discover_generators(generators_root(), benchmark, card_keys)
        errors += gen_errors
        assets = assets_fn()
        folders = {g.name: folder_fingerprint(g.path) for g in gens}
        cur = read_cursor(context.cursor)
        now = time.time()
        if evaluate_job is not None:
            live = instance.get_run_records(filters=RunsFilter(job_name=evaluate_job.name,
                                                               statuses=_LIVE_RUN_STATUSES), limit=1)
            if live:  # the cursor stays: the next tick checks again
                # how long it has gone on, and the folders that wait for it (issue 39: no silent wait)
                run = live[0].dagster_run
                since = live[0].start_time or live[0].create_timestamp.timestamp()
                prev = cur.get("folders") or {}
                waiting = sorted(n for n, fp in folders.items() if prev.get(n) != fp)
                return SensorResult(skip_reason=SkipReason(
                    f"run {run.run_id[:8]} of {evaluate_job.name} is {run.status.value.lower()} (for "
                    f"{duration_words(now - since)}); the work it leaves is requested after it ends"
                    + (f"; waiting for it: generator folders {', '.join(waiting)}" if waiting else "")),
                    cursor=context.cursor)
        # a check that cannot run: a warning here and the same words in the run's tags
        paths, models, fps, io_manager = sensor_staleness_inputs(context.log)
        judge, _ = _sensor_judge()
        # the store's table files per item: a table deleted or damaged since (the instance still says
        # "materialised") changes its item's digest, so that item's partitions are checked on the next tick
        tables = table_digests(io_manager, [*item_assets, *generator_assets], partitions.item_dim)
        # the slots' checkpoints count like code versions: an imported checkpoint makes the next tick check every
        # partition, and Staleness re-runs exactly the assets declaring that slot; the judge's identity likewise
        # (a changed BENCH_JUDGE_MODEL re-runs exactly the assets that ask the judge)
        weights = "".join(hashlib.sha256(fps[t].encode()).hexdigest()[:8]
                          for t in (SLOT_FP_TAG, JUDGE_ID_TAG, JUDGE_PROMPTS_TAG) if t in fps)
        versions = code_versions(assets) + weights
        # the content digest of every item's input files (small: episode / case / story files): an edited item
        # is checked on the next tick, like a changed generator folder
        item_versions = {i: v for i in items for a in item_assets
                         if (v := current_input_version(a, paths, i)) is not None}
        quick = quick_fingerprint(items, folders, errors, versions) + quick_fingerprint(
            [], {}, [], hashlib.sha256(json.dumps([item_versions, tables], sort_keys=True).encode()).hexdigest())
        since = now - float(cur.get("full_at") or 0)
        if cur.get("quick") == quick and since < full_check_seconds:
            # no generator folder, item id, naming error or code version changed: the last check's answer stands
            at = time.strftime("%H:%M:%S", time.gmtime(float(cur.get("checked_at") or 0)))
            return SensorResult(skip_reason=SkipReason(
                f"unchanged since the check at {at} UTC: {cur.get('last') or 'nothing requested'}"),
                cursor=context.cursor)
        whole = cur.get("versions") != versions or since >= full_check_seconds or "items" not in cur
        seen = set(cur.get("items") or [])
        prev_versions = cur.get("item_versions") or {}
        edited = {i for i in items if i in prev_versions and item_versions.get(i) != prev_versions[i]}
        prev_tables = cur.get("tables") or {}
        # an item whose table files changed since the last tick (written by a run, deleted, damaged): its
        # partitions are checked against the store (most were just written and are up to date: cheap)
        moved = {i for i in items if tables.get(i) != prev_tables.get(i)} if tables is not None else set()
        fresh_items = set(items) if whole else {i for i in items if i not in seen} | edited | moved
        prev = cur.get("folders") or {}
        changed = {g.name for g in gens if whole or prev.get(g.name) != folders[g.name]}
        for e in errors:
            context.log.error(e)
        for w in (w for g in gens for w in g.warnings):
            context.log.warning(w)
        known_items = set(instance.get_dynamic_partitions(partitions.items.name))
        known_gens = set(instance.get_dynamic_partitions(partitions.generators.name))
        new_items = [i for i in items if i not in known_items]
        new_gens = [g.name for g in gens if g.name not in known_gens]
        if new_items:
            instance.add_dynamic_partitions(partitions.items.name, new_items)
        if new_gens:
            instance.add_dynamic_partitions(partitions.generators.name, new_gens)

        stale = Staleness(instance, assets, bulk=True, paths=paths, models=models, judge=judge,
                          io_manager=io_manager)
        item_keys = [AssetKey(a) for a in item_assets]
        gen_keys = [AssetKey(a) for a in generator_assets]
        requests = []
        item_todo = []
        ready = instance.get_materialized_partitions(AssetKey(item_assets[0]))
        materialized_items = set(ready)
        for i in items:
            # new items, and (for a changed generator) items never materialised; a materialised item's code and
            # file did not change since the last check
            selection = stale.todo(item_keys, i) if i in fresh_items or (changed and i not in ready) else []
            if selection:
                item_todo.append(i)
                # the run key names what the work reads (item content, checkpoints): Dagster drops a repeated key,
                # so the same key after an edit would never run
                key = "/".join(x for x in (f"item/{i}", str(item_versions.get(i) or "")[:12], weights) if x)
                requests.append(RunRequest(run_key=key, partition_key=i, asset_selection=selection, tags=dict(fps)))
        if evaluate_job is not None:  # the same run materialises the items first
            ready = set(ready) | set(item_todo)
        for g in gens:
            fp = folders[g.name]
            for i in items:
                if i not in ready or (g.name not in changed and i not in fresh_items):
                    continue
                pk = partitions.key(g.name, i)
                selection = stale.todo(gen_keys, str(pk))
                if not selection and evaluate_job is not None and i in edited and i in materialized_items:
                    # its item re-runs first in the same run (an edited file): what reads it is checked after
                    selection = sorted(gen_keys, key=str)
                if not selection:
                    continue
                requests.append(RunRequest(
                    run_key="/".join(x for x in (g.name, i, fp, str(item_versions.get(i) or "")[:12], weights) if x),
                    partition_key=pk, asset_selection=selection,
                    tags={"bench/generator": g.name, "bench/benchmark": benchmark, **fps}))
        save_digest_cache()   # the input digests this tick computed, for the next process
        for why in sorted(set(stale.table_problems.values())):  # the instance said materialised: say why not
            context.log.warning(f"re-run: {why}")
        if requests:
            last = f"{len(requests)} partition runs requested"
        elif not items:
            last = "no item or generator found"
        elif whole:
            last = "every item and generator partition is up to date"
        else:
            scope = [f"generators {', '.join(sorted(changed))}" if changed else "",
                     f"{len(fresh_items)} new or changed items" if fresh_items else ""]
            last = f"up to date: the partitions of {' and '.join(x for x in scope if x) or 'nothing changed'}"
        cursor = json.dumps({"folders": folders, "items": list(items), "quick": quick, "versions": versions,
                             "item_versions": item_versions, "tables": tables,
                             "checked_at": now, "full_at": now if whole else cur.get("full_at"), "last": last},
                            sort_keys=True)
        if not requests:
            return SensorResult(skip_reason=SkipReason(last), cursor=cursor)
        if evaluate_job is not None:
            requests = [evaluate_request(evaluate_job.name, benchmark, requests, partitions)]
        return SensorResult(run_requests=requests, cursor=cursor)

    return _sensor


def _sensor_paths():
    """(the data and generator roots the code location's resources use (the environment's, bench_resources), None)
    or (None, why): then no input file's change can be seen."""
    try:
        from bench_resources.paths import BenchPaths
        return BenchPaths(), None
    except Exception as e:  # noqa: BLE001 - no paths: no input versions, the resolver alone decides (said: below)
        return None, f"inputs: the data paths could not be read ({_why(e)}), so a changed input file is not seen"


def _sensor_models_and_store():
    """(model registry, IO manager, weights why, store why): the registry (the environment's profile and weights
    dir) whose checkpoints the staleness check reads, and the IO manager (the BENCH_STORE_ROOT store) the sensor asks
    whether a materialised table is still there and readable; both come from one build of the code location's
    resources. When that build fails, neither check can run and each says so."""
    try:
        from bench_resources.config import build_resources
        resources = build_resources(judge=None)
        return resources["models"], resources["io_manager"], None, None
    except Exception as e:  # noqa: BLE001 - no registry, no store: the instance alone decides (said on the tick)
        return None, None, (f"weights: the model registry could not be built ({_why(e)}), so a changed checkpoint "
                            f"is not seen"), (f"store: the IO manager could not be built ({_why(e)}), so a deleted "
                                              f"or damaged table is not seen")


def table_digests(io_manager, asset_names: Sequence[str], item_dim: str) -> dict[str, str] | None:
    """{item: digest of (file, size, mtime) of every table file of ``asset_names`` in its partitions} of a local
    store (``<asset>/partition=<item>/`` and ``<asset>/.../<item_dim>=<item>/...``); None when the store is not
    local or there is none (then the sensor's full check, every ``full_check_seconds``, reads the tables). Stat
    calls only: a tick over thousands of files costs milliseconds."""
    import os
    store = getattr(io_manager, "store", None)
    if store is None or not store.is_local:
        return None
    by_item: dict[str, list] = {}
    for name in asset_names:
        base = store.table_dir(name)
        for dirpath, _, files in os.walk(base):
            dims = dict(seg.split("=", 1) for seg in os.path.relpath(dirpath, base).split(os.sep) if "=" in seg)
            item = dims.get("partition", dims.get(item_dim))
            if item is None:
                continue
            for f in files:
                if f.endswith(".parquet"):
                    try:
                        st = os.stat(os.path.join(dirpath, f))
                    except OSError:  # removed while walking: its absence is what the next tick sees
                        continue
                    by_item.setdefault(item, []).append(
                        [name, os.path.relpath(dirpath, base), st.st_size, st.st_mtime_ns])
    return {i: hashlib.sha256(json.dumps(sorted(v)).encode()).hexdigest()[:16] for i, v in by_item.items()}


def _sensor_judge():
    """(the judge the code location's resources use (the BENCH_JUDGE_* variables), None) or (None, why): then a
    changed judge is not seen."""
    try:
        import os
        from bench_resources.config import build_judge, store_root
        return build_judge(os.path.join(store_root(), "judge_cache")), None
    except Exception as e:  # noqa: BLE001 - no judge: no judge staleness, said below
        return None, f"judge: the judge could not be built ({_why(e)}), so a changed judge is not seen"


def sensor_staleness_inputs(log=None) -> tuple:
    """(paths, models, run tags, io manager) for a sensor or schedule tick: what its staleness checks read, and the
    tags its run requests carry (the slots' fingerprints, the judge's identity; ``STALENESS_UNKNOWN_TAG`` when a
    check cannot run). Each check that cannot run is logged on the tick as a warning, ``staleness unknown: <why>``,
    and the same words go into the tag (the store's check included)."""
    paths, paths_why = _sensor_paths()
    models, io_manager, models_why, store_why = _sensor_models_and_store()
    judge, judge_why = _sensor_judge()
    tags = dict(slot_tags(models)) if models is not None else {}
    if judge is not None:  # the judge's identity, recorded like the slots' fingerprints (Staleness.judge_changed)
        tags[JUDGE_ID_TAG] = judge_identity(judge)
        tags[JUDGE_PROMPTS_TAG] = json.dumps(prompt_sets(), sort_keys=True, separators=(",", ":"))
    unknown = join_unknown(paths_why, models_why, judge_why, store_why, tags.pop(STALENESS_UNKNOWN_TAG, None))
    if unknown:
        tags[STALENESS_UNKNOWN_TAG] = unknown
        for why in unknown.split("; "):
            if log is not None:
                log.warning(staleness_unknown(why))
    return paths, models, tags, io_manager


def read_cursor(text: str | None) -> dict:
    """The generator sensor's cursor; an older one (a flat {generator: folder fingerprint}) reads as its folders
    with no full check on record, so the first tick after an upgrade checks everything."""
    cur = json.loads(text) if text else {}
    if not isinstance(cur, dict):
        return {}
    return cur if "quick" in cur else {"folders": cur}


def code_versions(assets: Sequence) -> str:
    """A digest of every asset's code version (a code change makes partitions stale)."""
    versions = sorted((k.to_user_string(), str(v)) for a in assets
                      for k, v in (getattr(a, "code_versions_by_key", None) or {}).items())
    return hashlib.sha256(json.dumps(versions).encode()).hexdigest()[:16]


def quick_fingerprint(items: Sequence[str], folders: dict, errors: Sequence[str], versions: str) -> str:
    """What a tick can see without asking the instance: item ids, each generator folder's fingerprint, the naming
    errors, and the code versions' digest."""
    blob = json.dumps([list(items), sorted(folders.items()), sorted(errors), versions])
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def evaluate_request(job_name: str, benchmark: str, requests: Sequence[RunRequest],
                     partitions: BenchmarkPartitions) -> RunRequest:
    """The per-partition requests of one tick folded into one run of the benchmark's evaluate job. Its run key is
    a digest of that work (partitions, assets, folder fingerprints): the same unfinished work after a failed run
    is not requested again until something changes, as with per-partition run keys."""
    items, gens = set(), set()
    for r in requests:
        g = r.tags.get("bench/generator")
        if g:
            gens.add(g)
            items.add(partitions.split(str(r.partition_key))[1])
        else:
            items.add(str(r.partition_key))
    work = sorted((r.run_key, [k.to_user_string() for k in (r.asset_selection or [])]) for r in requests)
    digest = hashlib.sha256(json.dumps(work).encode()).hexdigest()[:16]
    return RunRequest(run_key=f"evaluate/{digest}", job_name=job_name,
                      run_config={"ops": {evaluate_op_name(benchmark): {"config": {"items": sorted(items),
                                                                                   "generators": sorted(gens)}}}},
                      tags={BENCHMARK_TAG: benchmark, "bench/work": f"{len(requests)} partition runs folded",
                            # the generators it evaluates, as a per-partition run names its one (UI run filters)
                            **({"bench/generator": ",".join(sorted(gens))} if gens else {})})


def nightly_stale_schedule(*, name: str, assets_fn: Callable[[], Sequence], asset_keys: Sequence[str],
                           partitions: BenchmarkPartitions, cron: str = "0 3 * * *"):
    """Re-evaluate, every night, the generator x item partitions whose code, input files or slots' checkpoints
    changed (the same check as the sensors and `bench evaluate`)."""

    @schedule(name=name, cron_schedule=cron, default_status=DefaultScheduleStatus.RUNNING,
              target=AssetSelection.assets(*asset_keys))
    def _schedule(context: ScheduleEvaluationContext):
        instance = context.instance

        def pks(_key: AssetKey) -> list[str]:
            return partitions.generator_x_item.get_partition_keys(dynamic_partitions_store=instance)

        paths, models, tags, io_manager = sensor_staleness_inputs(context.log)
        stale = stale_or_missing(instance, assets_fn(), [AssetKey(k) for k in asset_keys], pks,
                                 paths=paths, models=models, judge=_sensor_judge()[0], io_manager=io_manager)
        by_partition: dict[str, set[AssetKey]] = {}
        for key, pk, _ in stale:
            by_partition.setdefault(pk, set()).add(key)
        tick = get_current_datetime().strftime("%Y-%m-%d")
        return [RunRequest(run_key=f"stale/{pk}/{tick}", partition_key=pk, asset_selection=sorted(keys, key=str),
                           tags={"bench/reason": "stale", **tags})
                for pk, keys in sorted(by_partition.items())] or \
            SkipReason("nothing stale")

    return _schedule


def board_condition(*metric_assets: str):
    """Eager for an aggregate over generator x item tables, but only once one of ``metric_assets`` has a
    materialised partition: an item run alone (a new dataset, no generator yet) must not launch a leaderboard that
    has nothing to aggregate. Missing partitions do not block it (a failed partition still shows as None)."""
    from dagster import AutomationCondition
    return (AutomationCondition.eager().without(~AutomationCondition.any_deps_missing())
            & AutomationCondition.any_deps_match(~AutomationCondition.missing())
            .allow(AssetSelection.assets(*metric_assets)).with_label("some metric partition exists"))
