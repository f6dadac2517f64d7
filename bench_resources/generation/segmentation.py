"""Foreground extraction of a portrait generated on a chroma-key background (paper: SAM 2 with point prompts).

``chroma``: a pixel is background when its colour lies within ``tolerance`` (Euclidean, RGB 0-255) of the key
colour the image was generated on; the mask is cleaned with a morphological open and close.
``chroma+sam2``: the chroma mask's bounding box prompts a SAM 2 image model (transformers ``Sam2Model`` +
``Sam2Processor``) loaded from ``weights_dir`` (no hub access), and SAM 2's mask is the cut-out: a subject whose
colour matched the key keeps its body when SAM 2 sees it as one object. Missing weights are an error naming the
folder, never a silent fall back to the chroma mask.

The mask statistics (``mask_stats``) are what the offline Verification and selection rules read: the share of the
image that is foreground, and the share of the foreground in its largest connected piece (a portrait whose coat
matched the key falls apart into head and legs).
"""
from __future__ import annotations

import os
import threading
from typing import Any, Literal, Optional

import cv2
import numpy as np
from dagster import ConfigurableResource
from pydantic import PrivateAttr

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
    backend: Literal["chroma", "chroma+sam2"] = "chroma"
    tolerance: float = 60.0
    weights_dir: Optional[str] = None   # chroma+sam2: a SAM 2 checkpoint folder (config, weights, processor)
    device: str = "cpu"

    _model: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def fingerprint(self) -> dict:
        fp = {"backend": self.backend, "tolerance": self.tolerance}
        if self.backend == "chroma+sam2":
            fp["weights_dir"] = self.weights_dir
        return fp

    def segment(self, img: np.ndarray, key: str) -> np.ndarray:
        """RGBA uint8: the image with the background's alpha at 0."""
        mask = chroma_mask(img, key, self.tolerance)
        if self.backend == "chroma+sam2" and mask.any():
            mask = self._sam2(img, mask)
        return np.dstack([img, (mask * 255).astype(np.uint8)])

    def _load(self):
        with self._lock:
            if self._model is None:
                from bench_resources.generation.images import GenerationError
                if not self.weights_dir or not os.path.isdir(self.weights_dir):
                    raise GenerationError(f"segmenter (chroma+sam2): SAM 2 weights folder {self.weights_dir!r} "
                                          "is missing")
                from transformers import Sam2Model, Sam2Processor
                model = Sam2Model.from_pretrained(self.weights_dir, local_files_only=True).to(self.device).eval()
                self._model = (model, Sam2Processor.from_pretrained(self.weights_dir, local_files_only=True))
            return self._model

    def _sam2(self, img: np.ndarray, mask: np.ndarray) -> np.ndarray:
        import torch
        from PIL import Image
        model, proc = self._load()
        ys, xs = np.nonzero(mask)
        box = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
        inputs = proc(images=Image.fromarray(img), input_boxes=[[box]], return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = model(**inputs, multimask_output=False)
        masks = proc.post_process_masks(out.pred_masks.cpu(), inputs["original_sizes"].cpu())[0]
        return masks[0, 0].numpy().astype(bool)
