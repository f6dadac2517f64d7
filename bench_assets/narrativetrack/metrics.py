"""Accuracy tables (pure pandas): per (dimension x format) cell, the micro-average over all items (the paper's
"Avg."), slices by direction, track type and distractor type; strict and lenient never mixed; the random baseline.
An unanswered item (answerer unreachable, judge skipped or failed) is n_skipped / n_failed, never wrong."""
from __future__ import annotations

from typing import Optional

import pandas as pd

from bench_assets.core.records import MetricRecord
from bench_assets.narrativetrack.constants import RANDOM_BASELINE

MODES = ("strict", "lenient")


def accuracy(correct: pd.Series, status: pd.Series, metric_id: str, reason_if_none: Optional[str] = None
             ) -> MetricRecord:
    """% correct over answered items; unanswered ones are counted, not scored."""
    ok = status == "ok"
    n_eval = int(ok.sum())
    n_failed = int((status == "failed").sum())
    n_skipped = int(len(status) - n_eval - n_failed)
    if n_eval == 0:
        return MetricRecord(metric_id, None, 0, n_failed, n_skipped,
                            reason_if_none or ("no item" if len(status) == 0 else "no item was answered"))
    value = 100.0 * float(correct[ok].astype(bool).mean())
    return MetricRecord(metric_id, value, n_eval, n_failed, n_skipped,
                        reason_if_none if (n_failed or n_skipped) else None)


def _slices(df: pd.DataFrame):
    yield "avg", df
    for (d, f), g in df.groupby(["dimension", "format"], sort=True):
        yield f"{d}.{f}", g
    for col in ("direction", "track_type", "distractor"):
        for v, g in df.groupby(df[col].fillna("none"), sort=True):
            yield f"{col}.{v}", g


def accuracy_table(answers: pd.DataFrame, reason: Optional[str] = None) -> list[dict]:
    """Rows {mode, metric_id (accuracy.<cell>), value (%), n_eval, n_failed, n_skipped, reason} for one answerer.
    ``answers`` columns: dimension, format, direction, track_type, distractor, status, strict, lenient, reason."""
    rows = []
    for mode in MODES:
        for name, g in _slices(answers):
            parts = [reason] if reason else []
            if (g["status"] != "ok").any():
                parts += sorted(set(g.loc[g["status"] != "ok", "reason"].dropna().astype(str)))
            why = "; ".join(parts)[:500] or None
            rec = accuracy(g[mode], g["status"], f"accuracy.{name}", why)
            rows.append({"mode": mode, **rec.as_row()})
    return rows


def random_baseline(qas: pd.DataFrame) -> list[dict]:
    """Expected accuracy of uniform guessing over each cell's items (binary 50, MC 25 with the 4 options, ordering
    1/6), and its micro-average over the actual item mix."""
    rows = []
    chance = qas["format"].map(RANDOM_BASELINE)
    df = qas.assign(_chance=chance)
    for mode in MODES:  # the same expectation beside each mode's table
        for name, g in _slices(df):
            rows.append({"mode": mode, "metric_id": f"accuracy.{name}",
                         "value": float(g["_chance"].mean()) if len(g) else None, "n_eval": int(len(g)),
                         "n_failed": 0, "n_skipped": 0, "reason": "random baseline (expected accuracy of "
                                                                   "uniform guessing)" if len(g) else "no item"})
    return rows
