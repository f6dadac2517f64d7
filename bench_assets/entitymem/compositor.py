"""The compositor (paper C.1, C.2 "Tools"): a keyframe is the camera angle's crop of the location panorama with
the cut-out portraits placed at their grid cells, height-normalised (every character the same height, objects
smaller), feet on a common ground line. Pure: arrays in, an array out."""
from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

from bench_assets.entitymem.layout import cell_x

HEIGHT = {"character": 0.72, "object": 0.3}   # share of the frame height
GROUND = 0.96                                  # feet / object base line, share of the frame height


def cover(img: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize to fill width x height, cropping the overflow around the centre."""
    h, w = img.shape[:2]
    s = max(width / w, height / h)
    r = cv2.resize(img, (max(width, round(w * s)), max(height, round(h * s))), interpolation=cv2.INTER_AREA)
    y0, x0 = (r.shape[0] - height) // 2, (r.shape[1] - width) // 2
    return r[y0:y0 + height, x0:x0 + width]


def tight(rgba: np.ndarray) -> np.ndarray:
    """The cut-out cropped to its alpha's bounding box (height-normalising measures the subject, not the canvas)."""
    ys, xs = np.nonzero(rgba[..., 3] > 0)
    if len(ys) == 0:
        return rgba
    return rgba[ys.min():ys.max() + 1, xs.min():xs.max() + 1]


def paste(frame: np.ndarray, rgba: np.ndarray, cx: int, base_y: int, height: int) -> None:
    sub = tight(rgba)
    w = max(1, int(sub.shape[1] * height / sub.shape[0]))
    sp = cv2.resize(sub, (w, height), interpolation=cv2.INTER_AREA)
    x0, y0 = cx - w // 2, base_y - height
    H, W = frame.shape[:2]
    xs, ys, xe, ye = max(0, x0), max(0, y0), min(W, x0 + w), min(H, y0 + height)
    if xe <= xs or ye <= ys:
        return
    part = sp[ys - y0:ye - y0, xs - x0:xe - x0]
    a = part[..., 3:4].astype(np.float32) / 255
    frame[ys:ye, xs:xe] = (part[..., :3] * a + frame[ys:ye, xs:xe] * (1 - a)).astype(np.uint8)


def compose(keyframe: dict, background: Optional[np.ndarray], cutouts: dict[str, np.ndarray], width: int,
            height: int) -> np.ndarray:
    """One keyframe image. ``cutouts``: name -> RGBA; an entity without one (attached to a portrait or a
    location) is not drawn on its own. Objects first, then characters, left to right."""
    frame = cover(background, width, height) if background is not None else np.full((height, width, 3), 128,
                                                                                      np.uint8)
    frame = frame.copy()
    order = sorted(keyframe["entities"], key=lambda e: (e.get("kind") == "character", cell_x(e["position"], width)))
    for e in order:
        if e["name"] not in cutouts:
            continue
        kind = e.get("kind", "character")
        paste(frame, cutouts[e["name"]], cell_x(e["position"], width), int(height * GROUND),
              int(height * HEIGHT.get(kind, 0.5)))
    return frame
