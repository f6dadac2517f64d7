"""ViStoryBench metric math, protocol ``vistorybench-1.3``: arrays in, numbers / MetricRecords out. No Dagster.

Embeddings are L2-normalised rows, so a dot product is a cosine.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment
from scipy.special import softmax

# The eight ranked quality columns (higher is better for each); copy-paste degree is a diagnostic.
RANKED = ("csd_cross", "csd_self", "cids_cross", "cids_self", "alignment", "occm", "inception_score", "aesthetics")
ALIGNMENT_ASPECTS = ("scene", "camera", "character_action", "single_character_action")


def best_reference_scores(crops: np.ndarray, references: np.ndarray) -> np.ndarray:
    """score(character, crop) = max over the character's references of the cosine: [n_crops]."""
    if len(crops) == 0 or len(references) == 0:
        return np.full(len(crops), np.nan)
    return (crops @ references.T).max(axis=1)


def hungarian_match(scores: np.ndarray) -> list[tuple[int, int]]:
    """(character row, crop column) pairs maximising total score, no threshold (protocol 1.3).

    NaN marks a pair that cannot be scored (a realistic human against a crop with no face): it is never
    returned, even when the assignment had to use it.
    """
    if scores.size == 0:
        return []
    valid = np.isfinite(scores)
    cost = np.where(valid, -scores, 1e6)
    rows, cols = linear_sum_assignment(cost)
    return [(int(r), int(c)) for r, c in zip(rows, cols) if valid[r, c]]


def cids_cross(matched: np.ndarray, references: np.ndarray) -> float:
    """Mean cosine over (matched crops x references); a never-matched character scores 0 (it counts)."""
    if len(matched) == 0:
        return 0.0
    return float((matched @ references.T).mean())


def cids_self(matched: np.ndarray) -> float:
    """Mean of the strict upper triangle of (matched x matched); 1.0 when matched once, 0 when never."""
    if len(matched) == 0:
        return 0.0
    if len(matched) == 1:
        return 1.0
    sim = matched @ matched.T
    return float(sim[np.triu_indices(len(matched), k=1)].mean())


def occm(detected: int, expected: int) -> Optional[float]:
    """100 * exp(-|D - E| / (1e-6 + E)); None for a shot with no scheduled character (skipped)."""
    if expected == 0:
        return None
    return float(100.0 * np.exp(-abs(detected - expected) / (1e-6 + expected)))


def copy_paste_probability(crop: np.ndarray, reference: np.ndarray, mirrored: np.ndarray,
                           temperature: float = 0.01) -> float:
    """Protocol 1.3: softmax([s(g, ref), s(g, mirror(ref))] / T)[0]: near 1 when the crop copies the reference's
    exact orientation, 0.5 when it is as close to the mirror image (a re-drawn character)."""
    return float(softmax(np.array([crop @ reference, crop @ mirrored]) / temperature)[0])


def copy_paste_paper(crop: np.ndarray, used: np.ndarray, others: np.ndarray) -> float:
    """The paper's definition: s(g, reference used) - mean s(g, the character's other references)."""
    return float(crop @ used - (others @ crop).mean())


def style_cross(shot_style: np.ndarray, first_reference_styles: np.ndarray) -> Optional[float]:
    """Mean CSD cosine of a shot against the first reference of each on-stage character."""
    if len(first_reference_styles) == 0:
        return None
    return float((first_reference_styles @ shot_style).mean())


def style_self(shot_styles: np.ndarray) -> Optional[float]:
    """Mean CSD cosine over all pairs of generated shots."""
    if len(shot_styles) < 2:
        return None
    sim = shot_styles @ shot_styles.T
    return float(sim[np.triu_indices(len(shot_styles), k=1)].mean())


def inception_score(probs: np.ndarray, eps: float = 1e-12) -> Optional[float]:
    """exp(E_x KL(p(y|x) || p(y))), one split."""
    if len(probs) == 0:
        return None
    p = np.asarray(probs, np.float64)
    py = p.mean(axis=0, keepdims=True)
    kl = (p * (np.log(p + eps) - np.log(py + eps))).sum(axis=1)
    return float(np.exp(kl.mean()))


def alignment_score(aspect_scores: dict[str, Sequence[float]]) -> tuple[Optional[float], list[str]]:
    """Mean of the aspect means (each 0-4) x 25, and the aspects that had nothing to average."""
    means = {a: float(np.mean(v)) for a, v in aspect_scores.items() if len(v)}
    missing = [a for a in ALIGNMENT_ASPECTS if a not in means]
    if not means:
        return None, missing
    return float(np.mean(list(means.values())) * 25.0), missing


def mean_rank(values: dict[str, dict[str, Optional[float]]], columns: Sequence[str] = RANKED) -> dict[str, dict]:
    """Leaderboard rank = mean over columns of each generator's rank (1 = best, ties averaged).

    ``values``: generator -> column -> value. A column is ranked over the generators that have a value in it;
    a generator's mean rank covers the columns where it has one (the count is returned beside it).
    """
    from scipy import stats  # 0.3 s to import: loaded by the two functions that use it, not by every definitions load
    ranks: dict[str, list[float]] = {g: [] for g in values}
    for col in columns:
        have = [(g, v[col]) for g, v in values.items() if v.get(col) is not None]
        if len(have) < 2:
            continue
        r = stats.rankdata([-x for _, x in have], method="average")
        for (g, _), rank in zip(have, r):
            ranks[g].append(float(rank))
    return {g: {"mean_rank": (float(np.mean(r)) if r else None), "ranked_columns": len(r)} for g, r in ranks.items()}


@dataclass(frozen=True)
class Correlation:
    kendall_tau: Optional[float]
    kendall_p: Optional[float]
    spearman_rho: Optional[float]
    spearman_p: Optional[float]
    pearson_r: Optional[float]
    pearson_p: Optional[float]
    n_methods: int
    methods: tuple[str, ...]
    reason: Optional[str] = None


def human_alignment(human: dict[str, float], metric: dict[str, Optional[float]]) -> Correlation:
    """Kendall tau, Spearman rho and Pearson r between human ratings and metric values over the shared methods."""
    methods = tuple(sorted(m for m in human if metric.get(m) is not None and np.isfinite(human[m])))
    x = np.array([human[m] for m in methods], float)
    y = np.array([metric[m] for m in methods], float)
    if len(methods) < 3:
        return Correlation(None, None, None, None, None, None, len(methods), methods,
                           f"{len(methods)} methods have both a rating and a value; correlations need at least 3")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return Correlation(None, None, None, None, None, None, len(methods), methods,
                           "ratings or metric values are constant over the methods")
    from scipy import stats
    k, s, p = stats.kendalltau(x, y), stats.spearmanr(x, y), stats.pearsonr(x, y)
    return Correlation(float(k.statistic), float(k.pvalue), float(s.statistic), float(s.pvalue),
                       float(p.statistic), float(p.pvalue), len(methods), methods)


def mean_or_none(values: Iterable[Optional[float]]) -> Optional[float]:
    v = [x for x in values if x is not None]
    return float(np.mean(v)) if v else None
