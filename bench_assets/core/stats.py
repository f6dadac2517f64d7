"""Effect sizes and their bootstrap interval, once for the project (EntityBench's effect-size table and the
validity suite read them).

Conventions:
- ``cohens_d(a, b)``: (mean a - mean b) / pooled sd (ddof 1 per side, pooled over n_a + n_b - 2 degrees of
  freedom). ``paired_dz(a, b)``: mean(a - b) / sd(a - b) over aligned pairs (d_z): the units are the same
  items before and after, so the spread that matters is that of their changes.
- **Fewer than two values** on a side (two pairs, paired): None. No spread can be estimated at all.
- **Zero spread** (sd < ``ZERO_SPREAD``): None, the one policy of the project. A standardised difference divides
  by the spread; with none there is no scale to express the difference in, so d is undefined, not infinite and
  not zero. An infinity would sort, average and serialise (JSON has no inf; the validity chart's axis came out
  NaN) as if it were a measured number, and 0/0 = 0 would be a silent zero. Where a decision needs to read an
  exact, noise-free shift (every unit moved by the same amount), it asks ``zero_spread`` and reads the raw
  difference instead (core/validity.py ``judge_expectation``); ``undefined_reason`` says which case applies.
- The bootstrap interval resamples units (pairs together when paired). A resample with zero spread has an
  undefined d but still an order: a non-zero mean shift with no spread is the most extreme separation a resample
  can show, so it ranks beyond every defined d on its side (no shift: it ranks as 0). A bound that falls on such a
  resample is unbounded and reported as None, the same undefined value as the point estimate.
"""
from __future__ import annotations

import math
from typing import Mapping, Optional, Sequence

import numpy as np

ZERO_SPREAD = 1e-12      # an sd below this is no spread (metric values are O(1) to O(100))
BOOTSTRAP_RESAMPLES = 2000
_UNBOUNDED = 1e6         # the rank of a zero-spread resample inside the bootstrap; a bound this large is None


def _arr(x) -> np.ndarray:
    return np.asarray(list(x) if not isinstance(x, np.ndarray) else x, float)


def pooled_sd(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """The pooled standard deviation (ddof 1 per side); None when a side has fewer than two values."""
    x, y = _arr(a), _arr(b)
    if len(x) < 2 or len(y) < 2:
        return None
    return math.sqrt(((len(x) - 1) * x.var(ddof=1) + (len(y) - 1) * y.var(ddof=1)) / (len(x) + len(y) - 2))


def cohens_d(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """Pooled-variance Cohen's d of a minus b; None with fewer than two values a side or zero spread."""
    x, y = _arr(a), _arr(b)
    sd = pooled_sd(x, y)
    if sd is None or sd < ZERO_SPREAD:
        return None
    return float((x.mean() - y.mean()) / sd)


def paired_dz(a: Sequence[float], b: Sequence[float]) -> Optional[float]:
    """Paired d_z = mean(a - b) / sd(a - b) over aligned pairs; None with fewer than two pairs or zero spread."""
    delta = _arr(a) - _arr(b)
    if len(delta) < 2:
        return None
    sd = float(delta.std(ddof=1))
    return None if sd < ZERO_SPREAD else float(delta.mean() / sd)


def paired_dz_by_key(a: Mapping[str, float], b: Mapping[str, float]) -> Optional[float]:
    """``paired_dz`` over the keys both have (items, entities), in key order."""
    shared = sorted(set(a) & set(b))
    return paired_dz([a[k] for k in shared], [b[k] for k in shared])


def zero_spread(a: Sequence[float], b: Sequence[float], paired: bool) -> bool:
    """True when there are enough values for a spread and it is zero (d is undefined because nothing varies)."""
    x, y = _arr(a), _arr(b)
    if paired:
        delta = x - y
        return len(delta) >= 2 and float(delta.std(ddof=1)) < ZERO_SPREAD
    sd = pooled_sd(x, y)
    return sd is not None and sd < ZERO_SPREAD


def undefined_reason(a: Sequence[float], b: Sequence[float], paired: bool) -> Optional[str]:
    """Why d is None for these values, or None when it is defined."""
    x, y = _arr(a), _arr(b)
    if paired and len(x) < 2:
        return f"d undefined: {len(x)} pair(s), a spread needs 2"
    if not paired and min(len(x), len(y)) < 2:
        return f"d undefined: {len(x)} and {len(y)} units, a spread needs 2 a side"
    if zero_spread(x, y, paired):
        return ("d undefined: zero spread (every unit changed by the same amount)" if paired
                else "d undefined: zero spread (each side is one value repeated)")
    return None


def _ranked(d: Optional[float], shift: float) -> float:
    """The bootstrap's order for one resample: its d, or (zero spread) beyond every d on the shift's side."""
    if d is not None:
        return d
    return 0.0 if abs(shift) < ZERO_SPREAD else math.copysign(_UNBOUNDED, shift)


def bootstrap_interval(a: Sequence[float], b: Sequence[float], paired: bool,
                       resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0,
                       level: float = 0.95) -> tuple[Optional[float], Optional[float]]:
    """Percentile interval of d (``paired_dz`` when paired, else ``cohens_d``) over resampled units, pairs kept
    together when paired; a bound on a zero-spread resample is None (module docstring). (None, None) with fewer
    than two units a side."""
    x, y = _arr(a), _arr(b)
    if min(len(x), len(y)) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    ds = []
    for _ in range(resamples):
        if paired:
            idx = rng.integers(0, len(x), len(x))
            xs, ys = x[idx], y[idx]
            ds.append(_ranked(paired_dz(xs, ys), float((xs - ys).mean())))
        else:
            xs, ys = x[rng.integers(0, len(x), len(x))], y[rng.integers(0, len(y), len(y))]
            ds.append(_ranked(cohens_d(xs, ys), float(xs.mean() - ys.mean())))
    q = (1 - level) / 2
    ranked = np.sort(np.asarray(ds))

    def bound(level_q: float) -> Optional[float]:
        # numpy's linear interpolation reads the two order statistics around the position: a bound that touches
        # a zero-spread resample is unbounded
        pos = level_q * (len(ranked) - 1)
        if max(abs(ranked[math.floor(pos)]), abs(ranked[math.ceil(pos)])) >= _UNBOUNDED:
            return None
        return float(np.quantile(ranked, level_q))

    return bound(q), bound(1 - q)
