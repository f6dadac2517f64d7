"""Foreground extraction of a portrait generated on a chroma-key background (paper: SAM 2 with point prompts).

``chroma``: a pixel is background when its colour lies within ``tolerance`` (Euclidean, RGB 0-255) of the key
colour the image was generated on; the mask is cleaned with a morphological open and close. This is the whole
segmenter here: SAM 2 refinement is not wired in (see the README's EntityMem section).

The mask statistics (``mask_stats``) are what the offline Verification and selection rules read: the share of the
image that is foreground, and the share of the foreground in its largest connected piece (a portrait whose coat
matched the key falls apart into head and legs).
"""
from __future__ import annotations

from typing import Literal

import cv2
import numpy as np
from dagster import ConfigurableResource

from bench_resources.generation.offline import CHROMA


def chroma_mask(img: np.ndarray, key: str, tolerance: float = 60.0) -> np.ndarray:
    """bool (H, W): True where the pixel is not the key colour."""
    if key not in CHROMA:
        raise ValueError(f"unknown chroma key {key!r}; have {', '.join(CHROMA)}")
    d = np.linalg.norm(img.astype(np.float32) - np.array(CHROMA[key], np.float32), axis=2)
    fg = (d > tolerance).astype(np.uint8)
    k = np.ones((3, 3), np.uint8)
    fg = cv2.morphologyEx(fg, cv2.MORPH_OPEN, k)
    fg = cv2.morphologyEx(fg, cv2.MORPH_CLOSE, k)
    return fg.astype(bool)


def mask_stats(mask: np.ndarray) -> dict:
    """foreground share of the image; largest component's share of the foreground; number of components."""
    fg = int(mask.sum())
    if fg == 0:
        return {"foreground": 0.0, "largest_component": 0.0, "components": 0}
    n, labels, st, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    areas = st[1:, cv2.CC_STAT_AREA]
    return {"foreground": fg / mask.size, "largest_component": float(areas.max()) / fg, "components": int(n - 1)}


class Segmenter(ConfigurableResource):
    backend: Literal["chroma"] = "chroma"
    tolerance: float = 60.0

    def fingerprint(self) -> dict:
        return {"backend": self.backend, "tolerance": self.tolerance}

    def segment(self, img: np.ndarray, key: str) -> np.ndarray:
        """RGBA uint8: the image with the background's alpha at 0."""
        mask = chroma_mask(img, key, self.tolerance)
        return np.dstack([img, (mask * 255).astype(np.uint8)])
