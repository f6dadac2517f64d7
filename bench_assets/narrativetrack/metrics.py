"""Accuracy tables (pure pandas) in the shape of the episode report (generator x answerer; the leaderboards use
board.py): per (dimension x format) cell, the micro-average over all items (the paper's "Avg."), slices by
direction, track type and distractor type, over the paper's question types only; strict and lenient never mixed;
the random baseline.
Two denominators, both reported: ``value`` over answered items (failed answers excluded) and
``value_failed_wrong`` with failed answers counted wrong; items skipped (no answerer reachable) are in neither."""
from __future__ import annotations

from typing import Optional

import pandas as pd

from bench_assets.core.records import MetricRecord
from bench_assets.narrativetrack import board
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


def failed_as_wrong(correct: pd.Series, status: pd.Series) -> Optional[float]:
    """The other denominator: % correct over answered + failed items (a failed answer counted wrong; items skipped
    because no answerer was reachable stay out). None when neither kind exists."""
    ok, failed = status == "ok", status == "failed"
    n = int(ok.sum() + failed.sum())
    return 100.0 * float(correct[ok].astype(bool).sum()) / n if n else None


def _slices(df: pd.DataFrame):
    if "qa_id" in df and len(df):  # the paper's cells never read a measured question (board.py: their own ids)
        df = df[[board.question_set(None, q) == board.PAPER for q in df["qa_id"]]]
    yield "avg", df
    for (d, f), g in df.groupby(["dimension", "format"], sort=True):
        yield f"{d}.{f}", g
    for col in ("direction", "track_type", "distractor"):
        for v, g in df.groupby(df[col].fillna("none"), sort=True):
            yield f"{col}.{v}", g


def accuracy_table(answers: pd.DataFrame, reason: Optional[str] = None) -> list[dict]:
    """Rows {mode, metric_id (accuracy.<cell>), value (%), n_eval, n_failed, n_skipped, reason, value_failed_wrong}
    for one answerer: ``value`` leaves failed answers out of the denominator, ``value_failed_wrong`` counts them
    wrong; both beside n_failed (a failing answerer must not look better than one that answers everything).
    ``answers`` columns: dimension, format, direction, track_type, distractor, status, strict, lenient, reason."""
    rows = []
    for mode in MODES:
        for name, g in _slices(answers):
            parts = [reason] if reason else []
            if (g["status"] != "ok").any():
                parts += sorted(set(g.loc[g["status"] != "ok", "reason"].dropna().astype(str)))
            why = "; ".join(parts)[:500] or None
            rec = accuracy(g[mode], g["status"], f"accuracy.{name}", why)
            rows.append({"mode": mode, **rec.as_row(), "value_failed_wrong": failed_as_wrong(g[mode], g["status"])})
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
                                                                   "uniform guessing)" if len(g) else "no item",
                         "value_failed_wrong": float(g["_chance"].mean()) if len(g) else None})
    return rows
