"""The metric value record every metric returns, and the counts it carries.

No silent zero: a metric that evaluated nothing has ``value=None`` and says why.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Iterable, Optional

import numpy as np


@dataclass(frozen=True)
class MetricRecord:
    metric_id: str
    value: Optional[float]
    n_eval: int = 0
    n_failed: int = 0
    n_skipped: int = 0
    reason: Optional[str] = None
    detail: dict = field(default_factory=dict, hash=False)  # free-form provenance (a table's ``detail`` column)

    def __post_init__(self) -> None:
        if self.n_eval == 0 and self.value is not None:
            raise ValueError(f"{self.metric_id}: a value without evaluated instances is a silent number")
        if self.n_eval > 0 and self.value is None:
            raise ValueError(f"{self.metric_id}: n_eval={self.n_eval} but value is None")
        if self.value is not None and not np.isfinite(self.value):
            raise ValueError(f"{self.metric_id}: non-finite value {self.value}")

    @property
    def coverage(self) -> Optional[float]:
        total = self.n_eval + self.n_failed + self.n_skipped
        return None if total == 0 else self.n_eval / total

    def as_row(self) -> dict[str, Any]:
        """The value and its counts as a table row; ``detail`` is the caller's to store (it serialises it)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "detail"}


def record_from_values(
    metric_id: str,
    values: Iterable[Optional[float]],
    *,
    n_failed: int = 0,
    n_skipped: int = 0,
    reason: Optional[str] = None,
) -> MetricRecord:
    """Mean over instance values; ``None`` entries count as skipped (with ``reason``)."""
    vals = list(values)
    good = [float(v) for v in vals if v is not None]
    skipped = n_skipped + (len(vals) - len(good))
    if not good:
        why = reason or ("no instance to evaluate" if not vals else "every instance skipped")
        return MetricRecord(metric_id, None, 0, n_failed, skipped, why)
    return MetricRecord(metric_id, float(np.mean(good)), len(good), n_failed, skipped,
                        reason if (n_failed or skipped) else None)


def unavailable(metric_id: str, reason: str, n_skipped: int) -> MetricRecord:
    """A metric whose model or judge is not available: every instance skipped, with the reason."""
    return MetricRecord(metric_id, None, 0, 0, n_skipped, reason)


def number_or_none(v: Any) -> Optional[float]:
    """A table cell as a float, None for a missing, non-numeric or NaN cell (a stored None reads back as NaN)."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if f != f else f
