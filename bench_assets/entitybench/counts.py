"""EntityBench's metric rows with the generator's and the evaluator's counts kept apart.

``n_failed`` / ``n_skipped`` are the generator's (an undecodable shot, a gated-out or absent appearance);
``n_failed_evaluator`` is ours (judge off or failed, a replay miss, a missing model slot, grounding that
cannot run). Evaluator failures never enter the coverage denominator: a judge outage must not lower a
generator's score, and the partition is re-run when the evaluator state changes.

Coverage policy per family: each metric's spec (metric_specs.py, ``coverage_policy``); the board's arithmetic
is board.py.
"""
from __future__ import annotations

from typing import Any, Iterable, Optional

import pandas as pd

from bench_assets.core.metric_spec import split_not_evaluated
from bench_assets.core.records import MetricRecord, record_from_values
from bench_assets.core.tables import instance_row, metric_frame, record_row

EVAL = "n_failed_evaluator"
EXTRA_COLUMNS = {EVAL: "Int64", "substitute": "string"}

def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """The shared long metric table plus the evaluator-failure count (0 where a row says nothing)."""
    df = metric_frame(rows)
    df[EVAL] = pd.array([int(r.get(EVAL, 0) or 0) for r in rows], dtype="Int64")
    df["substitute"] = pd.array([r.get("substitute") for r in rows], dtype="string")
    return df


def evaluator_instance(metric_id: str, level: str, reason: Optional[str], **keys: Any) -> dict[str, Any]:
    """An instance the evaluator could not score (not the generator's skip)."""
    return instance_row(metric_id, None, level, reason=reason, **keys) | {"n_skipped": 0, "n_failed": 0, EVAL: 1}


def failed_instance(metric_id: str, level: str, reason: Optional[str], **keys: Any) -> dict[str, Any]:
    """An instance the generator failed (missing or undecodable shot)."""
    return instance_row(metric_id, None, level, reason=reason, **keys) | {"n_skipped": 0, "n_failed": 1}


def record(metric_id: str, values: Iterable[Optional[float]], *, n_failed: int = 0, n_skipped: int = 0,
           n_failed_evaluator: int = 0, reason: Optional[str] = None, **keys: Any) -> dict[str, Any]:
    """An item row: mean over the non-None values, None entries are the generator's skips."""
    vals = list(values)
    rec = record_from_values(metric_id, vals, n_failed=n_failed, n_skipped=n_skipped, reason=reason)
    if rec.value is not None and n_failed_evaluator and not rec.reason:
        rec = MetricRecord(rec.metric_id, rec.value, rec.n_eval, rec.n_failed, rec.n_skipped, reason)
    return record_row(rec, **keys) | {EVAL: int(n_failed_evaluator)}


def evaluator_summary(df: pd.DataFrame) -> tuple[int, str]:
    """(evaluator failures over the item rows, their reasons) for an asset's materialization metadata."""
    items = df[df["level"] == "item"] if "level" in df else df
    if EVAL not in items:
        return 0, ""
    ef, _ = split_not_evaluated(items, EVAL)  # judge off / a slot the profile lacks: by choice, not a failure
    bad = items[ef > 0]
    reasons = sorted({str(r) for r in bad["reason"].dropna() if r})
    return int(ef.sum()), "; ".join(reasons)[:500]
