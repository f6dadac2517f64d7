"""EntityBench metric math: arrays in, values out. No Dagster, no file access.

Each function documents the spec line it implements (``../shared/spec/entitybench.md``).
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import cv2
import numpy as np

FlowFn = Callable[[list[tuple[np.ndarray, np.ndarray]]], list[np.ndarray]]

DYNAMIC_FPS = 8.0
DYNAMIC_TOP_FRACTION = 0.05
DYNAMIC_THRESHOLD_PER_256 = 6.0


def _l2n(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, np.float64)
    return x / np.clip(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12, None)


def subject_consistency(embeddings: np.ndarray) -> Optional[float]:
    """Mean cosine between consecutive frames' embeddings (DINOv2 in the paper profile)."""
    e = _l2n(embeddings)
    if len(e) < 2:
        return None
    return float(np.mean(np.sum(e[1:] * e[:-1], axis=1)))


def temporal_flickering(frames: np.ndarray) -> Optional[float]:
    """1 - mean over consecutive frames of the mean absolute error, pixels in [0, 1]."""
    if len(frames) < 2:
        return None
    f = frames.astype(np.float32) / 255.0
    return float(1.0 - np.mean(np.abs(f[1:] - f[:-1])))


def _warp(img: np.ndarray, flow: np.ndarray, t: float) -> np.ndarray:
    """Backward-warp ``img`` by ``t`` x flow (sample img at x + t*flow(x))."""
    h, w = flow.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    mx = gx + t * flow[..., 0].astype(np.float32)
    my = gy + t * flow[..., 1].astype(np.float32)
    return cv2.remap(img, mx, my, interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def interpolate_midpoint(a: np.ndarray, b: np.ndarray, flow_ab: np.ndarray, flow_ba: np.ndarray) -> np.ndarray:
    """Flow-based midpoint: average of a warped half-way forward and b warped half-way back."""
    from_a = _warp(a.astype(np.float32), flow_ab, -0.5)
    from_b = _warp(b.astype(np.float32), flow_ba, -0.5)
    return 0.5 * (from_a + from_b)


def motion_smoothness(frames: np.ndarray, flow: FlowFn) -> Optional[float]:
    """Drop odd frames, rebuild each from its neighbours by flow interpolation; (255 - MAE) / 255."""
    triples = [(i - 1, i, i + 1) for i in range(1, len(frames) - 1, 2)]
    if not triples:
        return None
    pairs = []
    for p, _, n in triples:
        pairs += [(frames[p], frames[n]), (frames[n], frames[p])]
    flows = flow(pairs)
    errs = []
    for j, (p, m, n) in enumerate(triples):
        mid = interpolate_midpoint(frames[p], frames[n], flows[2 * j], flows[2 * j + 1])
        errs.append(float(np.mean(np.abs(mid - frames[m].astype(np.float32)))))
    return float((255.0 - np.mean(errs)) / 255.0)


def dynamic_degree(frames: np.ndarray, fps: float, flow: FlowFn) -> Optional[float]:
    """Share of consecutive pairs (resampled to ~8 fps) whose top-5 % flow magnitude mean > 6*min(H,W)/256."""
    from bench_assets.core.media import fps_indices
    idx = fps_indices(len(frames), fps or DYNAMIC_FPS, DYNAMIC_FPS)
    if len(idx) < 2:
        return None
    h, w = frames.shape[1:3]
    threshold = DYNAMIC_THRESHOLD_PER_256 * min(h, w) / 256.0
    flows = flow([(frames[a], frames[b]) for a, b in zip(idx, idx[1:])])
    moving = []
    for f in flows:
        mag = np.sqrt((f.astype(np.float64) ** 2).sum(-1)).ravel()
        k = max(1, int(round(DYNAMIC_TOP_FRACTION * mag.size)))
        moving.append(float(np.mean(np.partition(mag, -k)[-k:])) > threshold)
    return float(np.mean(moving))


def centroid_scores(embeddings: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(centroid, cos(each, centroid)) with centroid = normalize(mean of L2-normalised embeddings)."""
    e = _l2n(embeddings)
    c = _l2n(e.mean(axis=0))
    return c, e @ c


def presence_share(statuses: Sequence[str]) -> Optional[float]:
    """Share of a type's scheduled entities in a shot with status ``present``; None when none scheduled.

    Entities whose grounding could not run (status ``unavailable``) are excluded, not counted absent.
    """
    known = [s for s in statuses if s != "unavailable"]
    if not known:
        return None
    return float(np.mean([s == "present" for s in known]))


# ---------------------------------------------------------------------------------- Pillar 1 contracts

from dataclasses import dataclass  # noqa: E402


@dataclass(frozen=True)
class ShotMetric:
    """One intra-shot metric: its id, the model slot it needs (or None) and how a shot is scored.

    ``score(frames, all_frames, fps, model)``: ``frames`` are the evenly sampled frames, ``all_frames``
    the whole decoded shot (dynamic degree resamples at ~8 fps itself).
    """

    metric_id: str
    slot: Optional[str]
    score: Callable[[np.ndarray, np.ndarray, float, object], Optional[float]]


PILLAR1 = (
    ShotMetric("subject_consistency", "image_embedder", lambda f, a, fps, m: subject_consistency(m.embed(list(f)))),
    ShotMetric("temporal_flickering", None, lambda f, a, fps, m: temporal_flickering(f)),
    ShotMetric("motion_smoothness", "flow", lambda f, a, fps, m: motion_smoothness(f, m.flow)),
    ShotMetric("dynamic_degree", "flow", lambda f, a, fps, m: dynamic_degree(a, fps, m.flow)),
    # LAION head is 0-10; EntityBench reports [0, 1]
    ShotMetric("aesthetic_quality", "aesthetic", lambda f, a, fps, m: float(np.mean(m.score(list(f)))) / 10.0),
    # MUSIQ keeps its native 0-100 scale
    ShotMetric("imaging_quality", "musiq", lambda f, a, fps, m: float(np.mean(m.score(list(f))))),
)
