"""Realistic synthetic chroma-key portraits with known masks, for EntityMem's segmenter
(bench_resources/generation/segmentation.py): flat keys (the stand-in's colours and pure (0,255,0) / (0,0,255)),
shaded ones (a vertical falloff, a vignette), noisy ones (sensor noise, then JPEG at quality 75), off-key ones (the
image model painted another green or blue than the one asked for), each with a figure whose edges are anti-aliased
(drawn at 4x and reduced by area), spill (the key's colour mixed into the subject's outer pixels), and optionally a
shirt of the backdrop's own colour enclosed by an open jacket.

The truth is the drawing's coverage: a pixel is foreground when at least half of it is covered. ``python -m
tests.support.backdrops`` prints each case's foreground IoU (alpha >= 128 against the truth).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import cv2
import numpy as np

W, H, SS = 256, 384, 4         # image size and supersampling of the drawing


@dataclass(frozen=True)
class Case:
    name: str
    group: str                  # flat | shaded | noisy | off-key
    requested: str              # the key the prompt asked for (the segmenter's prior)
    backdrop: tuple             # the colour actually painted
    shading: Optional[str] = None   # None | gradient | vignette
    noise: float = 0.0          # sigma, 0-255
    jpeg: bool = False
    garment: bool = False       # a shirt of the backdrop's colour under an open jacket


CASES = (
    Case("flat stand-in green", "flat", "green", (0, 177, 64)),
    Case("flat pure green", "flat", "green", (0, 255, 0), garment=True),
    Case("flat pure blue", "flat", "blue", (0, 0, 255)),
    Case("flat stand-in blue", "flat", "blue", (0, 71, 187), garment=True),
    Case("flat magenta", "flat", "magenta", (255, 0, 255)),
    Case("flat orange", "flat", "orange", (255, 140, 0)),
    Case("shaded green gradient", "shaded", "green", (0, 200, 70), shading="gradient", garment=True),
    Case("shaded pure green vignette", "shaded", "green", (0, 255, 0), shading="vignette"),
    Case("shaded pure blue vignette", "shaded", "blue", (0, 0, 255), shading="vignette", garment=True),
    Case("shaded magenta gradient", "shaded", "magenta", (240, 20, 230), shading="gradient"),
    Case("noisy green jpeg", "noisy", "green", (0, 177, 64), noise=8, jpeg=True),
    Case("noisy pure blue", "noisy", "blue", (0, 0, 255), noise=12, garment=True),
    Case("noisy magenta jpeg", "noisy", "magenta", (255, 0, 255), noise=10, jpeg=True),
    Case("off-key light green shaded", "off-key", "green", (70, 210, 100), shading="gradient", noise=4),
    Case("off-key dark green vignette", "off-key", "green", (20, 130, 45), shading="vignette", noise=4,
         garment=True),
    Case("off-key pure green shaded jpeg", "off-key", "green", (0, 255, 0), shading="gradient", noise=6, jpeg=True),
    Case("off-key sky blue", "off-key", "blue", (40, 110, 230), noise=6),
    Case("off-key violet blue vignette", "off-key", "blue", (60, 40, 200), shading="vignette", noise=5,
         garment=True),
)

HAIR, SKIN, JACKET, TROUSERS, SHOES = (70, 45, 30), (224, 180, 150), (150, 40, 50), (45, 45, 60), (30, 30, 30)
SHIRT_LIGHT = (235, 235, 225)


def shading(kind: Optional[str]) -> np.ndarray:
    """(H, W) brightness factor of the backdrop."""
    yy, xx = np.mgrid[0:H, 0:W].astype(np.float32)
    if kind == "gradient":    # a key light from above: 1.0 at the top to 0.62 at the floor
        return 1.0 - 0.38 * yy / (H - 1)
    if kind == "vignette":    # a lens falloff to 0.6 in the corners
        r2 = ((xx - W / 2) / (W / 2)) ** 2 + ((yy - H / 2) / (H / 2)) ** 2
        return 1.0 - 0.2 * r2
    return np.ones((H, W), np.float32)


def figure_layers(seed: int) -> dict[str, np.ndarray]:
    """Coverage (0-1, H x W) of each part of a standing figure (drawn at SS x and reduced by area)."""
    rng = np.random.default_rng(seed)
    s = SS
    cx = int((W / 2 + rng.uniform(-8, 8)) * s)
    top = int(rng.uniform(30, 40) * s)
    parts: dict[str, np.ndarray] = {}

    def layer(draw) -> np.ndarray:
        m = np.zeros((H * s, W * s), np.uint8)
        draw(m)
        return cv2.resize(m.astype(np.float32), (W, H), interpolation=cv2.INTER_AREA) / 255

    hr = 22 * s
    hc = (cx, top + hr)
    parts["hair"] = layer(lambda m: cv2.ellipse(m, hc, (hr + 4 * s, hr + 6 * s), 0, 180, 360, 255, -1))
    parts["skin"] = layer(lambda m: (cv2.circle(m, (hc[0], hc[1] + 3 * s), hr, 255, -1),
                                     cv2.rectangle(m, (cx - 7 * s, hc[1] + hr), (cx + 7 * s, hc[1] + hr + 12 * s), 255,
                                                   -1)))
    t0, t1 = hc[1] + hr + 8 * s, hc[1] + hr + 140 * s
    body = np.array([[cx - 40 * s, t0], [cx + 40 * s, t0], [cx + 36 * s, t1], [cx - 36 * s, t1]], np.int32)
    parts["jacket"] = layer(lambda m: (cv2.fillConvexPoly(m, body, 255),
                                       cv2.fillConvexPoly(m, np.array([[cx - 40 * s, t0], [cx - 56 * s, t0 + 110 * s],
                                                                       [cx - 44 * s, t0 + 114 * s],
                                                                       [cx - 30 * s, t0 + 20 * s]], np.int32), 255),
                                       cv2.fillConvexPoly(m, np.array([[cx + 40 * s, t0], [cx + 56 * s, t0 + 110 * s],
                                                                       [cx + 44 * s, t0 + 114 * s],
                                                                       [cx + 30 * s, t0 + 20 * s]], np.int32), 255)))
    parts["hands"] = layer(lambda m: (cv2.circle(m, (cx - 50 * s, t0 + 118 * s), 8 * s, 255, -1),
                                      cv2.circle(m, (cx + 50 * s, t0 + 118 * s), 8 * s, 255, -1)))
    # the open jacket shows a shirt: a wedge enclosed by the jacket on every side
    parts["shirt"] = layer(lambda m: cv2.fillConvexPoly(m, np.array([[cx - 16 * s, t0 + 4 * s],
                                                                     [cx + 16 * s, t0 + 4 * s],
                                                                     [cx + 10 * s, t0 + 100 * s],
                                                                     [cx - 10 * s, t0 + 100 * s]], np.int32), 255))
    l0, l1 = t1 - 4 * s, min(H - 14, int(t1 / s) + 130) * s
    parts["trousers"] = layer(lambda m: (cv2.rectangle(m, (cx - 32 * s, l0), (cx - 4 * s, l1), 255, -1),
                                         cv2.rectangle(m, (cx + 4 * s, l0), (cx + 32 * s, l1), 255, -1),
                                         cv2.rectangle(m, (cx - 32 * s, l0), (cx + 32 * s, l0 + 24 * s), 255, -1)))
    parts["shoes"] = layer(lambda m: (cv2.ellipse(m, (cx - 20 * s, l1), (16 * s, 7 * s), 0, 0, 360, 255, -1),
                                      cv2.ellipse(m, (cx + 20 * s, l1), (16 * s, 7 * s), 0, 0, 360, 255, -1)))
    return parts


def make(case: Case, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(image RGB uint8, truth mask bool, garment mask bool: the shirt's pixels when it has the key's colour)."""
    rng = np.random.default_rng(seed + 7919)
    shade = shading(case.shading)[..., None]
    key = np.array(case.backdrop, np.float32) * shade
    img = key.copy()
    parts = figure_layers(seed)
    colours = {"hair": HAIR, "skin": SKIN, "jacket": JACKET, "hands": SKIN, "trousers": TROUSERS, "shoes": SHOES}
    cover = np.zeros((H, W), np.float32)
    for name in ("trousers", "shoes", "jacket", "hands", "hair", "skin", "shirt"):
        a = parts[name][..., None]
        col = key if name == "shirt" and case.garment else np.array(
            SHIRT_LIGHT if name == "shirt" else colours[name], np.float32) * np.sqrt(shade)
        img = img * (1 - a) + col * a
        cover = np.maximum(cover, parts[name])
    # spill: the key bounced onto the subject's outer few pixels
    inside = (cover >= 0.5).astype(np.uint8)
    dist = cv2.distanceTransform(inside, cv2.DIST_L2, 3)
    spill = (np.clip((4 - dist) / 3, 0, 1) * 0.18 * (cover > 0))[..., None]
    img = img * (1 - spill) + key * spill
    if case.noise:
        img = img + rng.normal(0, case.noise, img.shape)
    img = np.clip(np.round(img), 0, 255).astype(np.uint8)
    if case.jpeg:
        ok, buf = cv2.imencode(".jpg", img[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, 75])
        if not ok:
            raise RuntimeError(f"backdrop {case.name!r}: OpenCV could not encode the JPEG")
        img = cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1].copy()
    garment = (parts["shirt"] >= 0.99) if case.garment else np.zeros((H, W), bool)
    return img, cover >= 0.5, garment


def iou(a: np.ndarray, b: np.ndarray) -> float:
    union = int((a | b).sum())
    if union == 0:
        raise ValueError("iou: both masks are empty")
    return int((a & b).sum()) / union


def measure(segment, seeds=(0, 1)) -> list[dict]:
    """Per case and seed: IoU of ``segment(img, key)``'s alpha >= 128 with the truth, and the share of the
    key-coloured garment kept (None without one)."""
    out = []
    for case in CASES:
        for seed in seeds:
            img, truth, garment = make(case, seed)
            rgba = segment(img, case.requested)
            fg = rgba[..., 3] >= 128
            out.append({"case": case.name, "group": case.group, "seed": seed, "iou": iou(fg, truth),
                        "garment_kept": float(fg[garment].mean()) if garment.any() else None})
    return out


if __name__ == "__main__":
    from bench_resources.generation.segmentation import key_cutout
    rows = measure(key_cutout)
    for case in CASES:
        r = [x for x in rows if x["case"] == case.name]
        g = [x["garment_kept"] for x in r if x["garment_kept"] is not None]
        print(f"{case.group:8s} {case.name:34s} IoU min {min(x['iou'] for x in r):.3f}"
              + (f"  garment kept {min(g):.3f}" if g else ""))
