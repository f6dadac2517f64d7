"""Foreground extraction of a portrait generated on a chroma-key background (paper: SAM 2 with point prompts).

``chroma``: the key is estimated from the image, not assumed. The requested key colour (``CHROMA``) is only a prior:
the pixels of the image's border ring whose hue lies within ``HUE_GATE_DEG`` of it estimate the backdrop's own
colour (median chroma), and their spread sets the tolerance. Colours are compared in the chroma plane (RGB minus its
grey component), split into ``along`` (the component on the key's chroma direction) and ``perp`` (the rest): a
shaded or vignetted backdrop keeps its direction and only scales ``along``, so one threshold serves flat, shaded,
off-key and noisy backdrops. A pixel is key-like when ``along`` reaches half the ring's darkest key (2nd percentile)
and its hue lies inside a cone around the key (at least ``MIN_HUE_DEG``, wider for a spread-out ring, plus three
noise sigmas). The background is the key-like region connected to the image frame; everything else is foreground,
so key-coloured clothing enclosed by the subject (a shirt under a jacket) is kept, while key-coloured clothing on the
silhouette's edge joins the backdrop (what the Verification Agent's retry on another key is for).

Edges: within one pixel of the boundary, alpha is unmixed against the local backdrop colour (a normalised blur of
the pure background around it) and the colour is recovered from the mix; within four pixels, the positive part of
the key's chroma component is removed (spill suppression). Transparent pixels keep their colours, so a cut-out
still shows what was keyed (``cutout_stats`` re-estimates the key from it). Pure and deterministic (numpy, OpenCV).

``chroma+sam2``: a SAM 2 image model (transformers ``Sam2Model`` + ``Sam2Processor``) loaded from ``weights_dir``
(no hub access) is prompted from the chroma mask with the entity type's points (``sam2_prompts``), and SAM 2's mask
is the cut-out: a subject whose colour matched the key keeps its body when SAM 2 sees it as one object. The paper
(C.2, "Tools") says only that SAM 2 extracts the masks "using entity-type-specific point prompt strategies" and
gives none, so the strategies here are this platform's (versioned in the fingerprint, ``SAM2_PROMPTS_VERSION``): a
character gets positive points down its vertical axis at head, torso and legs height (a coat keyed out with the
backdrop leaves head and legs, and points on both tell SAM 2 they are one figure), an object one at the deepest
interior point of each sizeable piece, both the box around every piece and negative points on the image's corners
(the backdrop). Missing weights are an error naming the folder, never a silent fall back to the chroma mask.

``cutout_stats`` are what the offline Verification and selection rules read: the share of the image that is
foreground, the share of the foreground in its largest connected piece (a portrait whose coat matched the key falls
apart into head and legs), and the border check: the share of the cut-out's outline that still has the key colour
and the share of the image frame left opaque (a cut-out that kept half its background has both near one half).
"""
from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass
from typing import Any, Literal, Optional

import cv2
import numpy as np
from dagster import ConfigurableResource
from pydantic import PrivateAttr

from bench_resources.generation.offline import CHROMA

SEGMENTATION_VERSION = "2"   # in the fingerprint: a bank keyed by the old segmenter is rebuilt
HUE_GATE_DEG = 40.0          # ring pixels this close in hue to the requested key estimate it
MIN_HUE_DEG = 20.0           # narrowest hue cone of the key (a flat ring has no spread to widen it)
MIN_CHROMA = 20.0            # a ring pixel greyer than this (0-255 chroma units) says nothing about the key's hue
MIN_RING_SHARE = 0.25        # below this share of key-like ring pixels the image shows no such backdrop
RING_SHARE = 0.03            # ring width: share of the shorter side (at least 2 pixels)


@dataclass(frozen=True)
class KeyEstimate:
    """The backdrop's key as the image shows it. ``found`` False: the ring has too few pixels of the requested
    key's hue (the generator ignored the key) and nothing is keyed."""
    requested: str
    found: bool
    rgb: tuple[int, int, int]                 # median colour of the ring's key pixels (the prior when not found)
    direction: tuple[float, float, float]     # unit chroma vector of the key
    along_min: float                          # a pixel's chroma along the key must reach this
    cone: float                               # tan of the hue tolerance
    noise: float                              # noise sigma of the ring's key pixels, chroma units
    ring_share: float                         # share of the ring's pixels that are key-like

    def as_dict(self) -> dict:
        d = asdict(self)
        d["rgb"], d["direction"] = list(self.rgb), [round(v, 4) for v in self.direction]
        for k in ("along_min", "cone", "noise", "ring_share"):
            d[k] = round(float(d[k]), 4)
        return d


def _chroma(rgb: np.ndarray) -> np.ndarray:
    """The colour minus its grey component (orthogonal to the grey axis; scaling a colour scales its chroma)."""
    rgb = rgb.astype(np.float32)
    return rgb - rgb.mean(axis=-1, keepdims=True)


def ring_mask(h: int, w: int, width: Optional[int] = None) -> np.ndarray:
    """bool (h, w): the pixels within ``width`` of the image frame (default: RING_SHARE of the shorter side)."""
    r = width if width is not None else max(2, int(round(RING_SHARE * min(h, w))))
    m = np.zeros((h, w), bool)
    m[:r], m[-r:], m[:, :r], m[:, -r:] = True, True, True, True
    return m


def _split(c: np.ndarray, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    along = c @ u
    perp = np.linalg.norm(c - along[..., None] * u, axis=-1)
    return along, perp


def _hue_gate(c: np.ndarray, u: np.ndarray, deg: float) -> np.ndarray:
    along, perp = _split(c, u)
    return (along > 0) & (np.linalg.norm(c, axis=-1) >= MIN_CHROMA) & (perp <= np.tan(np.radians(deg)) * along)


def estimate_key(img: np.ndarray, key: str) -> KeyEstimate:
    """The key of ``img`` (RGB uint8) from its border ring, with the requested ``key`` as the hue prior."""
    if key not in CHROMA:
        raise ValueError(f"unknown chroma key {key!r}; have {', '.join(CHROMA)}")
    if img.ndim != 3 or img.shape[2] != 3 or min(img.shape[:2]) < 8:
        raise ValueError(f"chroma key {key!r}: expected an RGB image of at least 8x8 pixels, got shape {img.shape}")
    prior = _chroma(np.array(CHROMA[key], np.float32))
    u = prior / np.linalg.norm(prior)
    ring = img[ring_mask(*img.shape[:2])]
    c = _chroma(ring)
    gate = _hue_gate(c, u, HUE_GATE_DEG)
    if gate.mean() >= MIN_RING_SHARE:
        # second pass around the estimated hue: an off-key backdrop's own direction, not the prior's
        u = np.median(c[gate], axis=0)
        u = u / np.linalg.norm(u)
        gate = _hue_gate(c, u, HUE_GATE_DEG)
    share = float(gate.mean())
    if share < MIN_RING_SHARE:
        return KeyEstimate(key, False, tuple(int(v) for v in CHROMA[key]), tuple(float(v) for v in u), 0.0, 0.0, 0.0,
                           share)
    along, perp = _split(c[gate], u)
    # isotropic noise: perp is |N(0, sigma)| across the key's direction, median |x| = 0.674 sigma
    noise = float(np.median(perp)) / 0.674
    spread = float(np.percentile(np.degrees(np.arctan2(perp, np.maximum(along, 1e-6))), 98))
    cone = float(np.tan(np.radians(min(45.0, max(MIN_HUE_DEG, 1.5 * spread)))))
    along_min = max(0.5 * float(np.percentile(along, 2)), 4.0 * noise, MIN_CHROMA)
    rgb = tuple(int(v) for v in np.median(ring[gate], axis=0))
    return KeyEstimate(key, True, rgb, tuple(float(v) for v in u), along_min, cone, noise, share)


def key_like(img: np.ndarray, est: KeyEstimate) -> np.ndarray:
    """bool (H, W): pixels whose colour is the estimated key (any shade of it within the tolerance)."""
    if not est.found:
        return np.zeros(img.shape[:2], bool)
    along, perp = _split(_chroma(img), np.array(est.direction, np.float32))
    return (along >= est.along_min) & (perp <= est.cone * along + 3 * est.noise)


def foreground_mask(img: np.ndarray, est: KeyEstimate) -> np.ndarray:
    """bool (H, W): everything but the key-like region connected to the image frame (enclosed key-coloured regions
    stay foreground); specks below 0.02 % of the image are dropped."""
    h, w = img.shape[:2]
    if not est.found:
        return np.ones((h, w), bool)
    k = np.ones((3, 3), np.uint8)
    bg = key_like(img, est).astype(np.uint8)
    bg = cv2.morphologyEx(bg, cv2.MORPH_CLOSE, k)   # noise specks inside the backdrop
    bg = cv2.morphologyEx(bg, cv2.MORPH_OPEN, k)    # one-pixel bridges into the subject
    # 4-connectivity: the backdrop does not leak through a diagonal pixel gap into an enclosed region
    _, labels = cv2.connectedComponents(bg, connectivity=4)
    frame = ring_mask(h, w, 1)
    outer = np.unique(labels[frame & (bg > 0)])
    fg = ~np.isin(labels, outer[outer > 0])
    _, labels, st, _ = cv2.connectedComponentsWithStats(fg.astype(np.uint8), connectivity=8)
    small = np.nonzero(st[1:, cv2.CC_STAT_AREA] < max(4, 2e-4 * h * w))[0] + 1
    if len(small):
        fg &= ~np.isin(labels, small)
    return fg


def matte(img: np.ndarray, fg: np.ndarray, est: KeyEstimate) -> np.ndarray:
    """RGBA uint8: soft alpha and unmixed colour within one pixel of the boundary, the key's spill removed within
    four pixels of the backdrop, transparent pixels with their original colour."""
    alpha = fg.astype(np.float32)
    out = img.astype(np.float32)
    if not est.found or fg.all() or not fg.any():
        return np.dstack([img, (alpha * 255).astype(np.uint8)])
    u = np.array(est.direction, np.float32)
    k3 = np.ones((3, 3), np.uint8)
    fg8 = fg.astype(np.uint8)
    band = (cv2.dilate(fg8, k3) > 0) & ~(cv2.erode(fg8, k3) > 0)
    pure = ~(cv2.dilate(fg8, np.ones((5, 5), np.uint8)) > 0)
    wgt = cv2.GaussianBlur(pure.astype(np.float32), (0, 0), 3)
    local = cv2.GaussianBlur(out * pure[..., None], (0, 0), 3) / np.maximum(wgt, 1e-6)[..., None]
    local[wgt < 1e-3] = est.rgb
    a_p = _chroma(out) @ u
    a_b = np.maximum(_chroma(local) @ u, est.along_min)
    # a mixed pixel's chroma along the key is linear in its coverage; the subject's own is taken as none
    soft = np.clip(1 - a_p / a_b, 0, 1)
    alpha[band] = soft[band]
    mix = band & (alpha > 0.05)
    a = alpha[mix][:, None]
    out[mix] = np.clip((out[mix] - (1 - a) * local[mix]) / a, 0, 255)
    dist = cv2.distanceTransform(fg8, cv2.DIST_L2, 3)
    spill = np.clip((4 - dist) / 2, 0, 1) * (alpha > 0)
    excess = np.maximum(_chroma(out) @ u, 0)
    out -= (spill * excess)[..., None] * u   # along the chroma vector only: the pixel's brightness is kept
    rgb = np.where((alpha > 0)[..., None], np.clip(out, 0, 255), img.astype(np.float32))
    return np.dstack([np.round(rgb).astype(np.uint8), np.round(alpha * 255).astype(np.uint8)])


def key_cutout(img: np.ndarray, key: str) -> np.ndarray:
    """RGBA uint8 of ``img`` keyed on its estimated ``key`` backdrop (module docstring)."""
    est = estimate_key(img, key)
    return matte(img, foreground_mask(img, est), est)


def chroma_mask(img: np.ndarray, key: str) -> np.ndarray:
    """bool (H, W): True where the pixel is not the backdrop (hard mask, before soft edges)."""
    return foreground_mask(img, estimate_key(img, key))


def mask_stats(mask: np.ndarray) -> dict:
    """foreground share of the image; largest component's share of the foreground; number of components."""
    fg = int(mask.sum())
    if fg == 0:
        return {"foreground": 0.0, "largest_component": 0.0, "components": 0}
    n, labels, st, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
    areas = st[1:, cv2.CC_STAT_AREA]
    return {"foreground": fg / mask.size, "largest_component": float(areas.max()) / fg, "components": int(n - 1)}


def cutout_stats(rgba: np.ndarray, key: str) -> dict:
    """``mask_stats`` of the opaque part (alpha >= 128) plus the border check: ``border_key``, the share of the
    cut-out's outline (its opaque pixels within two pixels of a transparent one or of the image frame) that has the
    colour of the key re-estimated from the cut-out's own pixels (None: no outline); ``frame_opaque``, the share of
    the image frame left opaque; ``key_found`` and the estimate."""
    mask = rgba[..., 3] >= 128
    stats = mask_stats(mask)
    est = estimate_key(np.ascontiguousarray(rgba[..., :3]), key)
    m8 = mask.astype(np.uint8)
    # a constant zero border: the image frame counts as outside, so background kept up to the frame is outline
    inner = cv2.erode(m8, np.ones((5, 5), np.uint8), borderType=cv2.BORDER_CONSTANT, borderValue=0) > 0
    outline = mask & ~inner
    border_key = float(key_like(rgba[..., :3], est)[outline].mean()) if outline.any() and est.found else None
    stats.update({"border_key": border_key, "frame_opaque": float(mask[ring_mask(*mask.shape, 1)].mean()),
                  "key_found": est.found, "key": est.as_dict()})
    return stats


SAM2_PROMPTS_VERSION = "1"   # this platform's per-type point strategies (the paper names them, gives none)
CHARACTER_HEIGHTS = (0.12, 0.45, 0.8)   # head, torso, legs: shares of the figure's box height
MIN_PIECE = 0.1                         # an object piece with this share of the foreground gets its own point


def sam2_prompts(mask: np.ndarray, entity_type: Optional[str]) -> dict:
    """SAM 2's prompt for one cut-out from its chroma mask (bool H x W, some foreground): ``box`` [x0, y0, x1, y1]
    around every piece, ``points`` [[x, y], ...] and ``labels`` (1 foreground, 0 backdrop), per ``entity_type``
    (module docstring); any other type gets the box and the corners only. A location is never segmented (its
    panorama is the reference): asking for one is an error."""
    if entity_type == "location":
        raise ValueError("sam2_prompts: a location's panorama is not segmented")
    h, w = mask.shape
    ys, xs = np.nonzero(mask)
    if not len(xs):
        raise ValueError("sam2_prompts: the chroma mask has no foreground to prompt from")
    x0, y0, x1, y1 = int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
    pos: list[list[int]] = []
    if entity_type == "character":
        cx = (x0 + x1 - 1) / 2
        for f in CHARACTER_HEIGHTS:
            y = min(y1 - 1, int(y0 + f * (y1 - y0)))
            row = np.nonzero(mask[y])[0]
            if len(row):   # the figure's pixel on that row nearest its axis (none: the key took that part)
                pos.append([int(row[np.argmin(np.abs(row - cx))]), y])
    elif entity_type == "object":
        n, labels, st, _ = cv2.connectedComponentsWithStats(mask.astype(np.uint8), connectivity=8)
        dist = cv2.distanceTransform(np.pad(mask.astype(np.uint8), 1), cv2.DIST_L2, 3)[1:-1, 1:-1]
        order = np.argsort(-st[1:, cv2.CC_STAT_AREA]) + 1
        for i in order[:3]:
            if st[i, cv2.CC_STAT_AREA] < MIN_PIECE * len(xs) and pos:
                break
            d = np.where(labels == i, dist, -1)
            y, x = np.unravel_index(int(np.argmax(d)), d.shape)
            pos.append([int(x), int(y)])
    m = max(1, min(h, w) // 50)
    neg = [[x, y] for x, y in ((m, m), (w - 1 - m, m), (m, h - 1 - m), (w - 1 - m, h - 1 - m)) if not mask[y, x]]
    return {"box": [x0, y0, x1, y1], "points": pos + neg, "labels": [1] * len(pos) + [0] * len(neg)}


class Segmenter(ConfigurableResource):
    backend: Literal["chroma", "chroma+sam2"] = "chroma"
    weights_dir: Optional[str] = None   # chroma+sam2: a SAM 2 checkpoint folder (config, weights, processor)
    device: str = "cpu"

    _model: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)

    def fingerprint(self) -> dict:
        fp = {"backend": self.backend, "version": SEGMENTATION_VERSION}
        if self.backend == "chroma+sam2":
            fp["weights_dir"] = self.weights_dir
            fp["sam2_prompts"] = SAM2_PROMPTS_VERSION
        return fp

    def segment(self, img: np.ndarray, key: str, entity_type: Optional[str] = None) -> np.ndarray:
        """RGBA uint8: the image with the background's alpha at 0; ``entity_type`` chooses SAM 2's prompt."""
        est = estimate_key(img, key)
        mask = foreground_mask(img, est)
        if self.backend == "chroma+sam2" and mask.any():
            mask = self._sam2(img, sam2_prompts(mask, entity_type))
            return np.dstack([img, (mask * 255).astype(np.uint8)])
        return matte(img, mask, est)

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

    def _sam2(self, img: np.ndarray, prompt: dict) -> np.ndarray:
        import torch
        from PIL import Image
        model, proc = self._load()
        # one image, one object: its points with their labels, and its box
        inputs = proc(images=Image.fromarray(img), input_points=[[prompt["points"]]],
                      input_labels=[[prompt["labels"]]], input_boxes=[[prompt["box"]]],
                      return_tensors="pt").to(self.device)
        with torch.no_grad():
            out = model(**inputs, multimask_output=False)
        masks = proc.post_process_masks(out.pred_masks.cpu(), inputs["original_sizes"].cpu())[0]
        return masks[0, 0].numpy().astype(bool)
