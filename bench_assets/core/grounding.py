"""Canonical-crop grounding: score detections, pick one crop per (shot, entity), decide its status.

Pure numpy/OpenCV; the detector and CLIP are passed in as callables by the asset layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import cv2
import numpy as np

CROP_PAD = 0.10
CROP_SIZE = 224
SHARP_CENTER, SHARP_SCALE = 100.0, 200.0
AREA_CENTER_PCT, AREA_SCALE_PCT = 2.0, 5.0
WEAK_CLIP_THRESHOLD = 0.20


def sigmoid(x: float) -> float:
    return float(1.0 / (1.0 + np.exp(-x)))


def laplacian_variance(rgb: np.ndarray) -> float:
    """Variance of the Laplacian of luminance (0-255 scale)."""
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY) if rgb.ndim == 3 else rgb
    return float(cv2.Laplacian(gray.astype(np.float64), cv2.CV_64F).var())


def a_sharp(crop: np.ndarray) -> float:
    return sigmoid((laplacian_variance(crop) - SHARP_CENTER) / SHARP_SCALE)


def area_pct(box: np.ndarray, frame_shape: tuple[int, ...]) -> float:
    h, w = frame_shape[:2]
    x1, y1, x2, y2 = [float(v) for v in box]
    return 100.0 * max(0.0, x2 - x1) * max(0.0, y2 - y1) / float(w * h)


def a_area(box: np.ndarray, frame_shape: tuple[int, ...]) -> float:
    return sigmoid((area_pct(box, frame_shape) - AREA_CENTER_PCT) / AREA_SCALE_PCT)


def padded_box(box: np.ndarray, frame_shape: tuple[int, ...], pad: float = CROP_PAD) -> tuple[int, int, int, int]:
    h, w = frame_shape[:2]
    x1, y1, x2, y2 = [float(v) for v in box]
    dx, dy = (x2 - x1) * pad, (y2 - y1) * pad
    return (max(0, int(np.floor(x1 - dx))), max(0, int(np.floor(y1 - dy))),
            min(w, int(np.ceil(x2 + dx))), min(h, int(np.ceil(y2 + dy))))


def crop_box(frame: np.ndarray, box: np.ndarray, size: int = CROP_SIZE, pad: float = CROP_PAD) -> np.ndarray:
    """Crop padded by 10 % and resized to size x size (the paper's canonical crop)."""
    x1, y1, x2, y2 = padded_box(box, frame.shape, pad)
    if x2 <= x1 or y2 <= y1:
        raise ValueError(f"empty box {box!r}")
    return cv2.resize(frame[y1:y2, x1:x2], (size, size), interpolation=cv2.INTER_AREA)


@dataclass(frozen=True)
class Candidate:
    frame_index: int
    box: tuple[float, float, float, float]
    confidence: float
    label: str
    a_clip: Optional[float]
    a_sharp: float
    a_area: float

    @property
    def score(self) -> float:
        """a = a_clip x a_sharp x a_area; without CLIP the detector confidence stands in (recorded as such)."""
        first = self.a_clip if self.a_clip is not None else self.confidence
        return first * self.a_sharp * self.a_area


def decide_status(best: Optional[Candidate], clip_available: bool, weak_conf_threshold: float) -> str:
    """absent (no detection) / weak / present.

    With CLIP: weak iff a_clip(c*) < 0.20 (the spec). Without CLIP (offline profile): weak iff the
    detector's confidence < ``weak_conf_threshold``; the manifest records which rule decided.
    """
    if best is None:
        return "absent"
    if clip_available and best.a_clip is not None:
        return "weak" if best.a_clip < WEAK_CLIP_THRESHOLD else "present"
    return "weak" if best.confidence < weak_conf_threshold else "present"


def best_index(cands: list[Candidate]) -> Optional[int]:
    return int(np.argmax([c.score for c in cands])) if cands else None


def assign_shared_class(cands: list[Candidate], k: int) -> list[Optional[int]]:
    """Distinct boxes for k entities that a closed-vocabulary detector cannot tell apart.

    Takes the frame with the most boxes (ties: the highest total score) and hands its boxes out by
    score to the entities in registry order; entities beyond the number of boxes get None. The
    entity-to-box mapping is arbitrary, so callers mark these rows ambiguous and keep them out of
    identity metrics (they still count for presence).
    """
    by_frame: dict[int, list[int]] = {}
    for i, c in enumerate(cands):
        by_frame.setdefault(c.frame_index, []).append(i)
    if not by_frame:
        return [None] * k
    frame = max(by_frame, key=lambda f: (len(by_frame[f]), sum(cands[i].score for i in by_frame[f]), -f))
    ranked = sorted(by_frame[frame], key=lambda i: -cands[i].score)
    return [ranked[j] if j < len(ranked) else None for j in range(k)]
