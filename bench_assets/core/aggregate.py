"""Aggregation of per-item metric records into headline numbers (pure pandas/numpy)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

import pandas as pd


@dataclass(frozen=True)
class Aggregate:
    """EntityBench's fidelity-gate-corrected mean with the raw mean and coverage beside it."""

    value: Optional[float]      # raw mean x coverage
    raw_mean: Optional[float]   # n_eval-weighted mean over items with a value
    coverage: Optional[float]   # sum n_eval / sum (n_eval + n_skipped + n_failed)
    n_items: int                # items with a value
    n_eval: int
    n_failed: int
    n_skipped: int


def corrected_mean(rows: pd.DataFrame | Iterable[dict]) -> Aggregate:
    """``m = sum_E v_E n_eval_E / sum_E (n_eval_E + n_skip_E + n_fail_E)``; None-valued items add only counts."""
    df = pd.DataFrame(list(rows)) if not isinstance(rows, pd.DataFrame) else rows
    if df.empty:
        return Aggregate(None, None, None, 0, 0, 0, 0)
    n_eval = df["n_eval"].fillna(0).astype(int)
    n_failed = int(df["n_failed"].fillna(0).sum())
    n_skipped = int(df["n_skipped"].fillna(0).sum())
    has = df["value"].notna() & (n_eval > 0)
    total = int(n_eval.sum()) + n_failed + n_skipped
    if not has.any():
        return Aggregate(None, None, (0.0 if total else None), 0, int(n_eval.sum()), n_failed, n_skipped)
    weighted = float((df.loc[has, "value"].astype(float) * n_eval[has]).sum())
    ev = int(n_eval[has].sum())
    raw = weighted / ev
    coverage = ev / total
    return Aggregate(weighted / total, raw, coverage, int(has.sum()), ev, n_failed, n_skipped)
