"""One declarative entry per metric (``MetricSpec``), and the one leaderboard row schema every benchmark's board uses.

A metric id alone says nothing; its spec says what it is: the paper's id or an addition, its family, direction,
scale, how item values become a board cell (aggregation, coverage policy), which model slots compute it, which
tables it reads, and which other metrics an aggregate needs. As a torchmetrics metric carries
``higher_is_better`` and an lm-evaluation-harness task lists its metrics with aggregation and direction, each
benchmark folder declares its metrics in ``metric_specs.py`` (``METRICS``); boards, the site, the CLI (``bench
metrics``), validity and the parity suite read them, and nothing else names a metric's properties.

Board rows (``BOARD_COLUMNS``) are the same for the five benchmarks: generator, metric id, slice, value, raw mean,
coverage, the counts (evaluated, skipped, generator failures, evaluator failures, not evaluated by choice),
reason, protocol digest, substitute model (or None), the paper's definition where it differs on purpose from the
reference code (``definition``), the fidelity gate's state where a gate applies (``gate``), the generator's
files with decode warnings (``n_decode_warnings``), addition flag, comparable flag, baseline flag; anything a
benchmark needs beyond that goes in ``detail`` (JSON). ``board_frame`` builds and checks one: an id without a
spec is an error, and the addition flag is copied from the spec, so a board cannot present an addition as the
paper's metric.
"""
from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from typing import Any, Iterable, Literal, Mapping, Optional, Sequence

import pandas as pd

Direction = Literal["higher", "lower", "none"]
Kind = Literal["metric", "aggregate", "diagnostic"]

ADDITION = None  # MetricSpec(paper_id=ADDITION): a construct of this project, not the paper's


@dataclass(frozen=True)
class MetricSpec:
    """What a metric is. ``paper_id`` is the id the paper prints (usually == ``id``); None marks an addition.

    ``aggregation``: how item values become the board's value ("mean over items", "gate-corrected mean", ...).
    ``coverage_policy``: "applied" (value = raw mean x coverage), "reported" (value = raw mean, coverage beside
    it), "none" (the metric has no item coverage, e.g. a corpus statistic).
    ``slots``: the model slots whose checkpoint decides the value; the substitute mark is derived from them.
    ``parts``: for an aggregate, the metric ids it needs, all of them (an aggregate never pretends).
    ``pattern``: a regular expression instead of one id, for metric families whose ids are generated
    (``accuracy.EE.mcq``, ...); ``id`` is then the family's name as listed.
    ``validity``: names of the validity cases that concern it (core/validity.py reads them for its rows).
    ``unit_id``: the id its per-unit rows carry in the metric tables when the board's id differs (MBench's case
    score ``identity`` behind the board's ``m_score.identity``); validity expectations name unit ids.
    ``definition``: where the paper itself defines the metric differently from its reference implementation and the
    project keeps the paper's definition on purpose, the documented difference (short text, asserted in
    tests/parity); the board's ``definition`` column carries it as "paper's definition: <difference>". None where
    the project computes what the reference code computes (or there is no reference code).
    ``reference``: for a benchmark whose authors released their evaluation code, how the metric stands to it
    ("authors' code": computes what their code computes; "paper text": the paper text's variant, kept as an
    addition; "addition": a construct of this project only; "differs from the authors' code: <what>" for a known
    difference not yet removed). None where there is no authors' code to follow. `bench metrics` lists it.
    """
    id: str
    family: str
    direction: Direction
    description: str
    paper_id: Optional[str] = "same"
    scale: Optional[tuple[float, float]] = (0.0, 1.0)
    unit: str = ""
    aggregation: str = "mean over items"
    coverage_policy: Literal["applied", "reported", "none"] = "reported"
    slots: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()
    parts: tuple[str, ...] = ()
    kind: Kind = "metric"
    pattern: Optional[str] = None
    validity: tuple[str, ...] = ()
    unit_id: Optional[str] = None
    definition: Optional[str] = None
    reference: Optional[str] = None

    def __post_init__(self) -> None:
        if self.paper_id == "same":
            object.__setattr__(self, "paper_id", self.id if not self.pattern else self.id)
        if self.direction not in ("higher", "lower", "none"):
            raise ValueError(f"{self.id}: direction must be higher, lower or none, not {self.direction!r}")
        if self.kind == "aggregate" and not self.parts:
            raise ValueError(f"{self.id}: an aggregate names the parts it needs")

    @property
    def addition(self) -> bool:
        return self.paper_id is None

    @property
    def higher_is_better(self) -> Optional[bool]:
        return {"higher": True, "lower": False}.get(self.direction)

    def matches(self, metric_id: str) -> bool:
        return metric_id == self.id or (self.pattern is not None and re.fullmatch(self.pattern, metric_id) is not None)

    def matches_unit(self, metric_id: str) -> bool:
        """Whether per-unit rows with this id are this metric's (its unit id, else its board id)."""
        return metric_id == self.unit_id if self.unit_id else self.matches(metric_id)

    def as_row(self) -> dict[str, Any]:
        row = asdict(self)
        row["addition"] = self.addition
        for k in ("slots", "inputs", "parts", "validity"):
            row[k] = ", ".join(row[k])
        row["scale"] = None if self.scale is None else f"[{self.scale[0]:g}, {self.scale[1]:g}]"
        return row


class MetricSpecs:
    """A benchmark's specs, looked up by metric id (exact ids first, then patterns)."""

    def __init__(self, benchmark: str, specs: Sequence[MetricSpec]):
        self.benchmark = benchmark
        self.specs = tuple(specs)
        self._by_id = {}
        for s in self.specs:
            if s.id in self._by_id:
                raise ValueError(f"{benchmark}: metric {s.id!r} declared twice")
            self._by_id[s.id] = s

    def __iter__(self):
        return iter(self.specs)

    def __len__(self) -> int:
        return len(self.specs)

    def get(self, metric_id: str) -> Optional[MetricSpec]:
        s = self._by_id.get(metric_id)
        if s is not None and s.pattern is None:
            return s
        return next((s for s in self.specs if s.pattern and s.matches(metric_id)), s)

    def for_unit(self, metric_id: str) -> Optional[MetricSpec]:
        """The spec whose per-unit rows (metric tables, validity units) carry ``metric_id``."""
        return next((s for s in self.specs if s.unit_id == metric_id), None) or \
            next((s for s in self.specs if not s.unit_id and s.matches(metric_id)), None)

    def __getitem__(self, metric_id: str) -> MetricSpec:
        s = self.get(metric_id)
        if s is None:
            raise KeyError(f"{self.benchmark}: metric {metric_id!r} has no MetricSpec (declare it in "
                           f"bench_assets/{self.benchmark}/metric_specs.py)")
        return s

    def table(self) -> pd.DataFrame:
        rows = [{"benchmark": self.benchmark, **s.as_row()} for s in self.specs]
        return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- substitutes

def substitute_label(slots: Iterable[str], models) -> Optional[str]:
    """'slot: checkpoint; ...' for the slots in use whose checkpoint is not the paper's, None when every slot runs
    the paper's checkpoint (or is unavailable, in which case the metric has no value to mark).

    ``models`` is the ModelRegistry actually used; the comparison is with the slot table's paper checkpoint, so an
    alternative named in configuration is marked too."""
    from bench_resources.models.specs import SLOTS
    parts = []
    for slot in slots:
        if slot not in SLOTS:
            continue
        st = models.status(slot)
        if st.available and st.checkpoint != SLOTS[slot].paper.name:
            parts.append(f"{slot}: {st.checkpoint}")
    return "; ".join(parts) or None


def substitute_map(specs: MetricSpecs, models, metric_ids: Iterable[str]) -> dict[str, Optional[str]]:
    """metric id -> substitute label, computed once per slot set."""
    cache: dict[tuple[str, ...], Optional[str]] = {}
    out = {}
    for mid in set(metric_ids):
        spec = specs.get(mid)
        key = spec.slots if spec else ()
        if key not in cache:
            cache[key] = substitute_label(key, models)
        out[mid] = cache[key]
    return out


def label_substitutes(df: pd.DataFrame, specs: MetricSpecs, models, column: str = "metric_id") -> pd.DataFrame:
    """Adds (or overwrites) a ``substitute`` column on a metric table at compute time: the slot actually used."""
    smap = substitute_map(specs, models, df[column].dropna().unique()) if len(df) else {}
    df["substitute"] = pd.array([smap.get(m) for m in df[column]], dtype="string")
    return df


# labels are 'slot: checkpoint' joined by '; '; a checkpoint's name may itself hold ';' or '|', so a label splits
# only where the next part starts a new 'name: ' (a slot, or a few words such as 'contextual recognition: ' or
# 'trigger judge: '; no ';', '(' or ',' in between)
_LABEL_SPLIT = re.compile(r"\s*[;|]\s*(?=[\w.\-][\w.\- ]*: )")


def split_substitutes(label: Any) -> list[str]:
    """The 'slot: checkpoint' parts of one substitute label."""
    if label is None or label is pd.NA or (isinstance(label, float) and pd.isna(label)):
        return []
    return [p.strip() for p in _LABEL_SPLIT.split(str(label)) if p.strip()]


def join_substitutes(values: Iterable[Any]) -> Optional[str]:
    """The distinct substitute labels of a cell's rows, joined ('a; b'); None when no row had one."""
    seen: list[str] = []
    for v in values:
        for part in split_substitutes(v):
            if part not in seen:
                seen.append(part)
    return "; ".join(sorted(seen)) or None


# ----------------------------------------------------------------------------- judges as model slots

# a dated, preview or instruct release of the paper's judge is still the paper's judge; any other suffix is not
# ('gpt-4.1-mini' is a different model from 'gpt-4.1')
_SAME_MODEL_SUFFIX = re.compile(r"^(-(instruct|latest|preview[\w.\-]*|exp[\w.\-]*|\d{2,4}(-\d{2}){1,2}))*$")


def is_paper_model(model: Optional[str], paper: str) -> bool:
    """Whether ``model`` names the paper's model: case-insensitive, a vendor prefix ('google/') ignored."""
    name = str(model or "").strip().lower().rsplit("/", 1)[-1]
    want = paper.strip().lower().rsplit("/", 1)[-1]
    return name.startswith(want) and bool(_SAME_MODEL_SUFFIX.match(name[len(want):]))


def judge_substitute(model: Optional[str], paper: str, role: str = "judge") -> Optional[str]:
    """'<role>: <model> (paper: <paper>)' when the judge that answered is not the paper's, None when it is or when
    no model is named. ';' in a model name becomes ',' ('; ' separates labels, ``join_substitutes``)."""
    if not model or is_paper_model(model, paper):
        return None
    return f"{role}: {str(model).replace(';', ',')} (paper: {paper})"


def mark_judged(df: pd.DataFrame, label: Optional[str], metric_ids: Optional[Iterable[str]] = None) -> pd.DataFrame:
    """Joins a judge's substitute label into the ``substitute`` of every row with a value (of ``metric_ids``, all
    when None): a row without a value was not judged, so it carries no judge."""
    if label is None or not len(df):
        return df
    if "substitute" not in df:
        df["substitute"] = pd.array([None] * len(df), dtype="string")
    ids = None if metric_ids is None else set(metric_ids)
    hit = df["value"].notna() & (df["metric_id"].isin(ids) if ids is not None else True)
    df["substitute"] = pd.array([join_substitutes([v, label]) if h else v for h, v in zip(hit, df["substitute"])],
                                dtype="string")
    return df


# ----------------------------------------------------------------------------- the board

BOARD_COLUMNS: dict[str, str] = {
    "benchmark": "string", "generator": "string", "metric_id": "string", "slice": "string",
    "value": "Float64", "raw_mean": "Float64", "coverage": "Float64",
    "n_items": "Int64", "n_eval": "Int64", "n_skipped": "Int64",
    "n_failed": "Int64",             # the generator's failures (missing, undecodable, invalid output)
    "n_failed_evaluator": "Int64",   # the evaluator's (judge outage, missing weights, replay miss): never final
    "n_not_evaluated": "Int64",      # not evaluated by choice (judge off, a slot the profile does not have)
    "reason": "string", "protocol": "string", "substitute": "string",
    "definition": "string",          # "paper's definition: <documented difference from the reference code>" or None
    "gate": "string",                # fidelity gate: gated / ungated / gate unknown (mixed: '+'-joined); None: no gate
    "n_decode_warnings": "Int64",    # the generator's files (shots, videos) read with decode warnings (cut short,
                                     # frames lost or concealed, rate header wrong): the values stand, look at them
    "addition": "boolean", "comparable": "boolean", "baseline": "boolean",
    "detail": "string",              # benchmark extras (JSON): cases / triggered / reliability, mean rank, ...
}


# Reasons that say an instance was not evaluated by choice, not for a fault: the judge switched off
# (bench_resources/judge.JUDGE_OFF) or a model slot the profile does not have (models/registry: no offline
# substitute ships). Such counts are ``n_not_evaluated``, never evaluator failures (issue 25): nothing to retry.
BY_CHOICE = (re.compile(r"\bjudge off\b"), re.compile(r"no offline substitute ships in a package"))


def by_choice(reason: Any) -> bool:
    """True when every part of a reason ('; '-joined) is a choice (judge off, slot not in the profile). A reason
    that also names anything else (an outage, missing weights, a replay miss) is not: those stay failures."""
    if _missing(reason):
        return False
    parts = [p for p in str(reason).split("; ") if p.strip()]
    return bool(parts) and all(any(m.search(p) for m in BY_CHOICE) for p in parts)


def split_not_evaluated(rows: pd.DataFrame, count: str = "n_failed_evaluator",
                        reason: str = "reason") -> tuple[pd.Series, pd.Series]:
    """(evaluator failures, not evaluated by choice) per row of a frame with a count and a reason column: a row
    whose reason is a choice moves its whole count to the second series. Item rows carry one reason each, so
    boards summing item rows should split there (the common board_frame falls back to its own row's reason)."""
    n = pd.to_numeric(rows[count], errors="coerce").fillna(0).astype(int) if count in rows else \
        pd.Series(0, index=rows.index)
    choice = rows[reason].map(by_choice).astype(bool) if reason in rows else pd.Series(False, index=rows.index)
    return n.where(~choice, 0), n.where(choice, 0)


def board_row(generator: str, metric_id: str, slice: str, value: Optional[float], **fields: Any) -> dict[str, Any]:
    """One row of the schema; ``detail`` may be a dict (stored as JSON)."""
    row = {"generator": generator, "metric_id": metric_id, "slice": slice, "value": value, **fields}
    unknown = set(row) - set(BOARD_COLUMNS)
    if unknown:
        raise KeyError(f"board columns {sorted(unknown)} are not in the schema; put benchmark extras in detail")
    return row


# The fidelity gate's states on the board (EntityBench's gated families; core keeps only the words): a cell whose
# items were scored under several states joins them with '+', and is never comparable.
GATED, UNGATED_STATE, GATE_UNKNOWN_STATE = "gated", "ungated", "gate unknown"
PAPER_DEFINITION = "paper's definition: "   # the board's ``definition`` cell: this, then the spec's difference


def join_gates(states: Iterable[Any]) -> Optional[str]:
    """The distinct gate states of a cell's rows, '+'-joined in a fixed order; None when no row has one."""
    seen = {p for v in states if not _missing(v) for p in str(v).split("+") if p}
    order = [GATED, UNGATED_STATE, GATE_UNKNOWN_STATE]
    return "+".join(sorted(seen, key=lambda x: (order.index(x) if x in order else len(order), x))) or None


DECODE_COLUMNS = ("decode_warnings", "n_decode_warnings", "corrupt_frames", "lost_frames")


def decode_warning_counts(files: Optional[pd.DataFrame]) -> dict[str, Optional[int]]:
    """generator -> how many of its files (shots, videos) were read with a decode warning. ``files``: one row per
    file with ``generator`` and any of ``decode_warnings`` (the reader's warning text, '; '-joined; '' when it had
    none), ``n_decode_warnings`` (a count), ``corrupt_frames`` / ``lost_frames`` (decode-pass counts). A file
    counts once however many warnings it has. A generator with a file whose record holds none of these (a table
    written before they were recorded) is None: unknown, never a silent 0."""
    if files is None or not len(files) or "generator" not in files:
        return {}
    cols = [c for c in DECODE_COLUMNS if c in files]
    if not cols:
        return {str(g): None for g in files["generator"].dropna().unique()}
    recorded = files[cols].notna().any(axis=1)
    hit = pd.Series(False, index=files.index)
    if "decode_warnings" in files:
        hit |= files["decode_warnings"].map(lambda v: not _missing(v) and str(v).strip() != "")
    for c in cols[1:] if cols[0] == "decode_warnings" else cols:
        hit |= pd.to_numeric(files[c], errors="coerce").fillna(0) > 0
    out: dict[str, Optional[int]] = {}
    for g, idx in files.groupby("generator").groups.items():
        out[str(g)] = int(hit.loc[idx].sum()) if bool(recorded.loc[idx].all()) else None
    return out


def board_frame(benchmark: str, rows: Sequence[Mapping[str, Any]] | pd.DataFrame, specs: MetricSpecs,
                decode_warnings: Optional[Mapping[str, int]] = None) -> pd.DataFrame:
    """The common board from rows: schema columns in order and types, ``addition`` and ``definition`` from the
    spec, ``detail`` as JSON, ``value`` None wherever the row says so. Raises when a metric id has no spec.

    ``decode_warnings``: generator -> files read with decode warnings (``decode_warning_counts``), copied onto
    every row of that generator (``n_decode_warnings``; 0 when the mapping lacks it, None where the count is
    unknown; the column stays None when no mapping is given: the benchmark does not record them). Rows of one metric and
    slice under different gate states (``gate``) are never comparable, whatever their protocols say."""
    df = pd.DataFrame(list(rows) if not isinstance(rows, pd.DataFrame) else rows)
    unknown = set(df.columns) - set(BOARD_COLUMNS)
    if unknown:
        raise KeyError(f"{benchmark} board: columns {sorted(unknown)} are not in the schema; use detail")
    df = df.reindex(columns=list(BOARD_COLUMNS))
    df["benchmark"] = benchmark
    if len(df):
        missing = sorted({m for m in df["metric_id"].dropna() if specs.get(m) is None})
        if missing:
            raise KeyError(f"{benchmark} board: metric ids without a MetricSpec: {missing[:10]}")
        df["addition"] = [specs[m].addition for m in df["metric_id"]]
        df["definition"] = [None if specs[m].definition is None else PAPER_DEFINITION + specs[m].definition
                            for m in df["metric_id"]]
        if decode_warnings is not None:   # a generator the mapping lacks read no file with a warning
            dw = {str(k): v for k, v in decode_warnings.items()}
            given_dw = pd.to_numeric(df["n_decode_warnings"], errors="coerce")
            df["n_decode_warnings"] = given_dw.where(
                given_dw.notna(), pd.to_numeric(df["generator"].map(lambda g: dw.get(str(g), 0)), errors="coerce"))
        df["detail"] = [None if _missing(d) else (d if isinstance(d, str) else json.dumps(d, sort_keys=True,
                                                                                           default=str))
                        for d in df["detail"]]
        # a row that did not split its evaluator count (no n_not_evaluated) is split here by its own reason
        given = pd.to_numeric(df["n_not_evaluated"], errors="coerce")
        ef, ne = split_not_evaluated(df)
        df["n_failed_evaluator"] = pd.to_numeric(df["n_failed_evaluator"], errors="coerce").where(given.notna(), ef)
        df["n_not_evaluated"] = given.where(given.notna(), ne)
        for c in ("n_eval", "n_skipped", "n_failed", "n_failed_evaluator", "n_not_evaluated"):
            df[c] = pd.to_numeric(df[c], errors="coerce").fillna(0)
        for c in ("comparable", "baseline"):
            df[c] = df[c].map(lambda v: None if _missing(v) else bool(v))
        df["baseline"] = df["baseline"].fillna(False)
        df["comparable"] = df["comparable"].fillna(True)
        df["gate"] = df["gate"].map(lambda v: join_gates([v]))
        for _, part in df.groupby(["metric_id", "slice"], dropna=False):
            gates = part["gate"].dropna()
            if len(gates) and (gates.nunique() > 1 or gates.str.contains("+", regex=False).any()):
                df.loc[part.index, "comparable"] = False   # gated vs ungated vs unknown: different constructs
    return df.astype(BOARD_COLUMNS)


def detail_of(board: pd.DataFrame) -> pd.DataFrame:
    """The ``detail`` JSON of each row expanded into columns (index aligned with the board)."""
    recs = [json.loads(d) if isinstance(d, str) and d else {} for d in board.get("detail", pd.Series(dtype=object))]
    return pd.DataFrame(recs, index=board.index)


def _missing(v: Any) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and pd.isna(v))


def check_board(board: pd.DataFrame, specs: MetricSpecs) -> list[str]:
    """Problems of a board against its specs: ids without a spec, specs without a row, an addition that a
    paper-named row hides, columns outside the schema. Empty when the board is sound."""
    problems = []
    extra = set(board.columns) - set(BOARD_COLUMNS)
    if extra:
        problems.append(f"columns outside the schema: {sorted(extra)}")
    ids = set(board["metric_id"].dropna()) if "metric_id" in board else set()
    for m in sorted(ids):
        s = specs.get(m)
        if s is None:
            problems.append(f"{m}: no MetricSpec")
        elif "addition" in board and bool(board.loc[board["metric_id"] == m, "addition"].fillna(False).any()) \
                != s.addition:
            problems.append(f"{m}: board's addition flag differs from the spec")
    for s in specs:
        if s.kind == "diagnostic":
            continue
        if not any(s.matches(m) for m in ids):
            problems.append(f"{s.id}: declared but not on the board")
    return problems


# ----------------------------------------------------------------------------- aggregates that never pretend

def all_parts(parts: Mapping[str, Optional[float]], name: str) -> tuple[Optional[bool], Optional[str]]:
    """(True, None) when every part has a value; else (False, 'name needs all N parts; missing: ...')."""
    missing = [k for k, v in parts.items() if _missing(v)]
    if not parts:
        return False, f"{name} has no parts"
    if missing:
        return False, f"{name} needs all {len(parts)} parts; without a value: {', '.join(missing)}"
    return True, None


def comparability(records: pd.DataFrame) -> pd.DataFrame:
    """Per (generator, metric id): the protocol digest(s) its item rows were scored under ('+'-joined), and whether
    that cell is comparable: one protocol for the cell and the same one for every generator of the metric. A metric
    scored under different protocols (another checkpoint, threshold or profile) is flagged, never silently averaged
    (EntityBench B.5). ``records``: generator, metric_id, protocol."""
    rows = []
    for mid, part in records.groupby("metric_id"):
        all_protocols = set(part["protocol"].dropna())
        for gen, sub in part.groupby("generator"):
            mine = sorted(set(sub["protocol"].dropna()))
            rows.append({"generator": gen, "metric_id": mid, "protocol": "+".join(mine) or None,
                         "comparable": len(mine) <= 1 and len(all_protocols) <= 1})
    return pd.DataFrame(rows, columns=["generator", "metric_id", "protocol", "comparable"])
