"""Per-case MBench work between the video and the sub-dimension values (models passed in, no Dagster).

Object masks: with the ``object_segmenter`` slot (paper profile: SAM 2.1 video propagation), the case's box (A) or the
first-frame detection (T) prompts the first frame and the masks are propagated over the video; geometry's SSIM and
match selection and texture's crops then use the mask. Without the slot (offline), object masks are box-level: the
case's box (A) or the first-frame detection of "name + attributes" (T), carried by the trajectory's full pose as a
fronto-parallel plane at the object's triangulated depth (K (R + t n^T / d) K^-1; a rotation-only trajectory, or an
object without triangulated points, uses K R K^-1, valid for far objects; named in the manifest). The carried box
follows the object's place, whatever is drawn there, so a world that changes while unseen shows up in geometry and
texture. Each object row records its ``mask_source``.
"""
from __future__ import annotations

import base64
import zlib
from typing import Optional, Sequence

import cv2
import numpy as np

from bench_assets.mbench import geometry
from bench_assets.mbench import metrics

IDENTITY_FRAMES = 32
TRIGGER_FRAMES = 8
TEXT_FRAMES_PER_SEGMENT = 4
MIN_OBJECT_MATCHES = 8     # matches inside the box to fit the geometry warp homography


def even(n: int, k: int) -> list[int]:
    return sorted(set(np.linspace(0, n - 1, min(k, n)).round().astype(int).tolist()))


def segment_of_frames(n_frames: int, n_segments: int) -> list[int]:
    """T: frames spread evenly over the caption segments."""
    return [min(n_segments - 1, int(k * n_segments / n_frames)) for k in range(n_frames)]


class LazyFeatures:
    """ORB features of a frame, computed once, only for the frames a metric asks for."""

    def __init__(self, frames: Sequence[np.ndarray]):
        self.frames, self._f = frames, {}

    def __getitem__(self, k: int) -> geometry.Features:
        if k not in self._f:
            self._f[k] = geometry.features(self.frames[k])
        return self._f[k]

    def __len__(self) -> int:
        return len(self.frames)


def box_depth(feats, Rs, C, K, box) -> tuple[Optional[float], str]:
    """Median depth (in frame 0's camera, trajectory units) of points triangulated inside the first frame's box."""
    n = len(Rs)
    pts, how = geometry._helper_points(feats, 0, n + 10 * geometry.PAIR_DEFAULT.helper_window, Rs, C, K,
                                       geometry.PAIR_DEFAULT, geometry.VO_DEFAULT)
    x1, y1, x2, y2 = box
    inside = [X for a, X in pts.items() if x1 <= feats[0].pts[a][0] < x2 and y1 <= feats[0].pts[a][1] < y2]
    if len(inside) < 3:
        return None, f"no depth for the box ({how}; {len(inside)} points inside): carried by rotation only"
    z = float(np.median([(Rs[0] @ (X - C[0]))[2] for X in inside]))
    return (z, f"plane at the median depth of {len(inside)} points triangulated inside the box") if z > 0 else \
        (None, "points inside the box are behind the camera: carried by rotation only")


def propagate_box(box_xyxy: Sequence[float], Rs: Sequence[np.ndarray], K: np.ndarray, size: tuple[int, int],
                  C: Optional[np.ndarray] = None, depth: Optional[float] = None
                  ) -> list[Optional[tuple[float, float, float, float]]]:
    """The first frame's box carried to every frame by the full pose: the box is a fronto-parallel plane at
    ``depth`` in frame 0 (H_k = K (R + t n^T / d) K^-1); with no depth (or no centres) by rotation, K R K^-1.
    None once less than half of it is in view."""
    w, h = size
    x1, y1, x2, y2 = box_xyxy
    corners = np.array([[x1, y1], [x2, y1], [x1, y2], [x2, y2]], np.float64).reshape(-1, 1, 2)
    area = (x2 - x1) * (y2 - y1)
    out = []
    Kinv = np.linalg.inv(K)
    n = np.array([0.0, 0.0, 1.0])
    for k, R in enumerate(Rs):
        R_rel = R @ Rs[0].T
        M_ = R_rel
        if depth is not None and C is not None:
            t_rel = R @ (np.asarray(C[0]) - np.asarray(C[k]))
            M_ = R_rel + np.outer(t_rel, n) / depth
        p = cv2.perspectiveTransform(corners, K @ M_ @ Kinv).reshape(-1, 2)
        a1, b1 = p.min(0)
        a2, b2 = p.max(0)
        c1, d1, c2, d2 = max(0, a1), max(0, b1), min(w, a2), min(h, b2)
        vis = max(0, c2 - c1) * max(0, d2 - d1)
        out.append((float(c1), float(d1), float(c2), float(d2)) if vis >= 0.5 * area else None)
    return out


MIN_MASK_PIXELS = 16      # a propagated mask smaller than this is "out of view" for the frame


def encode_mask(mask: np.ndarray) -> str:
    """A bool HxW mask as compact text for the tracks table: "HxW:" + base64(zlib(packbits))."""
    m = np.asarray(mask, bool)
    return f"{m.shape[0]}x{m.shape[1]}:" + base64.b64encode(zlib.compress(np.packbits(m).tobytes(), 6)).decode()


def decode_mask(text: str) -> np.ndarray:
    shape, data = text.split(":", 1)
    h, w = (int(v) for v in shape.split("x"))
    bits = np.frombuffer(zlib.decompress(base64.b64decode(data)), np.uint8)
    return np.unpackbits(bits)[:h * w].reshape(h, w).astype(bool)


def mask_box(mask: np.ndarray) -> Optional[tuple[float, float, float, float]]:
    """xyxy (exclusive right / bottom) around a mask; None when it has fewer than MIN_MASK_PIXELS pixels."""
    if mask is None or int(mask.sum()) < MIN_MASK_PIXELS:
        return None
    ys, xs = np.nonzero(mask)
    return float(xs.min()), float(ys.min()), float(xs.max() + 1), float(ys.max() + 1)


def object_masks(segmenter, frames: Sequence[np.ndarray], box_xyxy) -> list[Optional[np.ndarray]]:
    """The slot's masks for every frame, prompted with the first frame's box (None where the object left view)."""
    masks = segmenter.propagate(frames, box_xyxy)
    if len(masks) != len(frames):
        raise ValueError(f"object segmenter returned {len(masks)} masks for {len(frames)} frames")
    return [m if m is not None and int(np.asarray(m).sum()) >= MIN_MASK_PIXELS else None for m in masks]


def masked_crop(frame: np.ndarray, box, mask: Optional[np.ndarray]) -> Optional[np.ndarray]:
    """The box crop; with a mask, the pixels outside the object set to 0 (the masked object the paper embeds)."""
    c = crop(frame, box)
    if c is None or mask is None:
        return c
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    c = c.copy()
    c[~mask[y1:y2, x1:x2]] = 0
    return c


def crop(frame: np.ndarray, box) -> Optional[np.ndarray]:
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    if x2 - x1 < 4 or y2 - y1 < 4:
        return None
    return np.ascontiguousarray(frame[y1:y2, x1:x2])


def geometry_pair(ref: np.ndarray, ret: np.ndarray, box, R_rel: np.ndarray, K: np.ndarray,
                  mask: Optional[np.ndarray] = None) -> tuple[Optional[float], str]:
    """SSIM over the object (the reference frame's mask, else its box) of the reference frame against the return
    frame warped into its view: a homography fitted to matches inside the object, or the trajectory's rotation
    homography when it has too few matches."""
    pa, pb = geometry.match_points(ref, ret)
    x1, y1, x2, y2 = box
    inside = (pa[:, 0] >= x1) & (pa[:, 0] < x2) & (pa[:, 1] >= y1) & (pa[:, 1] < y2) if len(pa) else np.zeros(0, bool)
    if mask is not None and len(pa):
        px = np.clip(pa.round().astype(int), 0, [mask.shape[1] - 1, mask.shape[0] - 1])
        inside &= mask[px[:, 1], px[:, 0]]
    how = "trajectory rotation homography"
    Hm = np.linalg.inv(K @ R_rel @ np.linalg.inv(K))   # maps return-frame pixels to the reference view
    if inside.sum() >= MIN_OBJECT_MATCHES:
        Hfit, _ = cv2.findHomography(pb[inside], pa[inside], cv2.RANSAC, 3.0)
        if Hfit is not None:
            where = "mask" if mask is not None else "box"
            Hm, how = Hfit, f"homography on {int(inside.sum())} matches inside the {where}"
    h, w = ref.shape[:2]
    warped = cv2.warpPerspective(ret, Hm, (w, h))
    if mask is not None:
        region = np.asarray(mask, np.uint8)
    else:
        region = np.zeros((h, w), np.uint8)
        region[int(y1):int(y2), int(x1):int(x2)] = 1
    return metrics.masked_ssim(ref, warped, region), how


def face_observations(face_model, frames: Sequence[np.ndarray], indices: Sequence[int]) -> list[list[tuple]]:
    """Per sampled frame: (embedding, face box, quality) of every detected face. The quality (size, blur, detector
    confidence against the face model's floors: models/face.py) is recorded so a face too poor to identify is
    counted as such (issue 23); the paper's identity still tracks every detected face. A face model without a
    quality measure gives None."""
    out = []
    for k in indices:
        if hasattr(face_model, "faces"):
            out.append([(f.vector, tuple(float(v) for v in f.box), f.quality) for f in face_model.faces(frames[k])])
            continue
        d = face_model.detect([frames[k]])[0]
        embs = face_model.embed_faces(frames[k], d) if len(d) else []
        out.append([(embs[j], tuple(float(v) for v in d.xyxy[j]), None) for j in range(len(d))])
    return out


def person_box_for(face_box, person_boxes: np.ndarray) -> Optional[tuple]:
    """The smallest person box that contains the face's centre."""
    cx, cy = (face_box[0] + face_box[2]) / 2, (face_box[1] + face_box[3]) / 2
    best, area = None, np.inf
    for b in person_boxes:
        if b[0] <= cx <= b[2] and b[1] <= cy <= b[3]:
            a = (b[2] - b[0]) * (b[3] - b[1])
            if a < area:
                best, area = tuple(float(v) for v in b), a
    return best
