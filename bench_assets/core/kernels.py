"""Array kernels more than one benchmark uses, written once: L2 normalisation, box IoU, the backward warp by optical
flow, the flow-interpolated midpoint and its error, and the motion-smoothness score. Arrays in, arrays or floats
out; no Dagster, no files.

The warp and the midpoint error are the fast forms EntityBench's Pillar 1 was rewritten to (one interleaved
sampling map on a cached pixel grid; an in-place midpoint error). Each gives the same bits as the plain
expression it replaced (two meshgrid maps; ``0.5 * (warp a + warp b)`` then ``mean |mid - m|``), pinned by
tests/test_kernels_stats.py and tests/test_entitybench_overhead.py, so no stored value moved when a benchmark
switched to them.
"""
from __future__ import annotations

from typing import Optional, Sequence

import cv2
import numpy as np


# ---------------------------------------------------------------------------------------- embeddings, boxes

def l2_normalise(x: np.ndarray) -> np.ndarray:
    """x / ||x|| along the last axis in float64 (a zero vector stays zero: the norm is floored at 1e-12)."""
    x = np.asarray(x, np.float64)
    return x / np.clip(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12, None)


def iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two (x1, y1, x2, y2) boxes; 0 when the union is empty. Python floats (a loop over
    a few boxes calls it: no array overhead); the same arithmetic, in the same order, as ``iou_matrix``."""
    ax1, ay1, ax2, ay2 = (float(v) for v in a)
    bx1, by1, bx2, by2 = (float(v) for v in b)
    iw, ih = max(0.0, min(ax2, bx2) - max(ax1, bx1)), max(0.0, min(ay2, by2) - max(ay1, by1))
    inter = iw * ih
    union = (ax2 - ax1) * (ay2 - ay1) + (bx2 - bx1) * (by2 - by1) - inter
    return inter / union if union > 0 else 0.0


def iou_matrix(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """[len(a), len(b)] IoU of every box pair ((x1, y1, x2, y2) rows); 0 where the union is empty."""
    a, b = np.asarray(a, float).reshape(-1, 4), np.asarray(b, float).reshape(-1, 4)
    if len(a) == 0 or len(b) == 0:
        return np.zeros((len(a), len(b)))
    x1 = np.maximum(a[:, None, 0], b[None, :, 0])
    y1 = np.maximum(a[:, None, 1], b[None, :, 1])
    x2 = np.minimum(a[:, None, 2], b[None, :, 2])
    y2 = np.minimum(a[:, None, 3], b[None, :, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda z: (z[:, 2] - z[:, 0]) * (z[:, 3] - z[:, 1])  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return np.where(union > 0, inter / np.maximum(union, 1e-9), 0.0)


# ------------------------------------------------------------------------------------------------ flow warps

_GRIDS: dict[tuple[int, int], np.ndarray] = {}


def pixel_grid(h: int, w: int) -> np.ndarray:
    """The pixel grid [h, w, 2] (x, y) as float32, built once per frame size (a meshgrid per warp cost more than
    the remap at 832x480). Read-only: it is shared."""
    g = _GRIDS.get((h, w))
    if g is None:
        if len(_GRIDS) > 8:  # a few shot sizes per run; never grows with the number of shots
            _GRIDS.clear()
        gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
        g = _GRIDS[(h, w)] = np.ascontiguousarray(np.stack([gx, gy], axis=-1))
        g.flags.writeable = False
    return g


def warp_map(flow: np.ndarray, t: float = 1.0) -> np.ndarray:
    """The sampling map x + t * flow(x) of a backward warp, one interleaved float32 [h, w, 2] array (the same
    per-element float32 arithmetic as separate x / y maps; one map serves several images)."""
    h, w = flow.shape[:2]
    m = np.multiply(flow, np.float32(t), dtype=np.float32)
    m += pixel_grid(h, w)
    return m


def remap(img: np.ndarray, sampling_map: np.ndarray) -> np.ndarray:
    """``img`` sampled at ``sampling_map`` (bilinear, edges replicated). OpenCV reads an interleaved map and a
    pair of x / y maps through the same fixed-point table: the result is bit-identical."""
    return cv2.remap(img, sampling_map, None, interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def warp(img: np.ndarray, flow: np.ndarray, t: float = 1.0) -> np.ndarray:
    """Backward warp: sample ``img`` at x + t * flow(x)."""
    return remap(img, warp_map(flow, t))


# ------------------------------------------------------------------------------------ motion smoothness

def interpolate_midpoint(a: np.ndarray, b: np.ndarray, flow_ab: np.ndarray, flow_ba: np.ndarray) -> np.ndarray:
    """Flow-based midpoint: the mean of a and b each warped half-way towards the middle (float32)."""
    from_a = warp(a.astype(np.float32), flow_ab, -0.5)
    from_b = warp(b.astype(np.float32), flow_ba, -0.5)
    return 0.5 * (from_a + from_b)


def midpoint_error(p: np.ndarray, m: np.ndarray, n: np.ndarray, flow_pn: np.ndarray, flow_np: np.ndarray) -> float:
    """Mean absolute error (0-255) of frame ``m`` rebuilt from its neighbours p and n by ``interpolate_midpoint``:
    the same float32 operations in the same order, in place (the temporaries of the plain expression were a quarter
    of the streamed smoothness' non-flow time)."""
    mid = warp(p.astype(np.float32), flow_pn, -0.5)
    mid += warp(n.astype(np.float32), flow_np, -0.5)
    mid *= np.float32(0.5)
    mid -= m.astype(np.float32)
    np.abs(mid, out=mid)
    return float(np.mean(mid))


def smoothness_score(errors: Sequence[float], scale: float = 1.0) -> Optional[float]:
    """``scale * (255 - mean error) / 255`` (VBench's motion smoothness and flickering: 1 or 100 for percent);
    None without errors. Multiplied before dividing, as both benchmarks wrote it (scale 1 is exact)."""
    return float(scale * (255.0 - np.mean(errors)) / 255.0) if len(errors) else None
