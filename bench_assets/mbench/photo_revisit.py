"""A revisit over a real photograph with known poses (pure builder, for validity tests).

A virtual camera moves over one real photograph (a textured plane; real pixels nobody here drew): it trucks right
while panning right (exit), waits, and comes back (re-enter). Variants of what the return shows:
- ``same``      the photograph as it was: a consistent world;
- ``changed``   the photograph is replaced by its mirror image while the camera is away: the world was forgotten;
- ``ignoring``  the camera ignores the actions: it keeps trucking and panning away, twice as fast, and leaves the
                photograph without coming back.
A memory metric must rank ``same`` above the other two.
"""
from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

from bench_assets.mbench import geometry

VARIANTS = ("same", "changed", "ignoring")
SIZE = (256, 160)
DEPTH = 2.5          # the photograph's distance from the first camera (world units)
WIDTH = 4.0          # the photograph's width (world units); its height follows its aspect ratio
STEP_M = 0.04        # truck per frame
STEP_DEG = 1.5       # pan per frame
EXIT, WAIT = 10, 3
ACTIONS = [{"phase": "exit", "action": "right", "frames": EXIT}, {"phase": "wait", "action": "wait", "frames": WAIT},
           {"phase": "reenter", "action": "left", "frames": EXIT}]


def photo_plane(photo: np.ndarray, mirrored: bool = False) -> geometry.Plane:
    h, w = photo.shape[:2]
    tex = cv2.resize(photo, (1024, int(round(1024 * h / w))), interpolation=cv2.INTER_AREA)
    if mirrored:
        tex = np.ascontiguousarray(tex[:, ::-1])
    height = WIDTH * h / w
    return geometry.Plane(tex, (-WIDTH / 2, -height / 2, DEPTH), (WIDTH, 0, 0), (0, height, 0))


def poses(variant: str) -> list[tuple[np.ndarray, np.ndarray]]:
    """(R, C) per frame: out for EXIT frames, still for WAIT, back for EXIT (ignoring: out the whole time)."""
    steps = [1] * EXIT + [0] * WAIT + [-1] * EXIT
    if variant == "ignoring":
        steps = [2] * (2 * EXIT + WAIT)
    out, k = [], 0
    out.append((geometry.yaw(0), np.zeros(3)))
    for s in steps:
        k += s
        out.append((geometry.yaw(STEP_DEG * k), np.array([STEP_M * k, 0.0, 0.0])))
    return out


def build(photo: np.ndarray, variant: str, size: tuple[int, int] = SIZE
          ) -> tuple[list[np.ndarray], list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """(frames, true poses, K) of one variant over ``photo`` (RGB uint8)."""
    if variant not in VARIANTS:
        raise ValueError(f"variant {variant!r} is not one of {VARIANTS}")
    K = geometry.intrinsics(*size)
    P = poses(variant)
    turn = EXIT + WAIT
    same, mirrored = [photo_plane(photo)], [photo_plane(photo, mirrored=True)]
    frames = [geometry.render(mirrored if variant == "changed" and k > turn else same, R, C, K, size)
              for k, (R, C) in enumerate(P)]
    return frames, P, K


def target_box(photo: np.ndarray, size: tuple[int, int] = SIZE, frac: float = 0.35) -> tuple[float, ...]:
    """A box (xyxy, first-frame pixels) over the middle of the photograph: the object the geometry metric follows."""
    w, h = size
    return (w * (0.5 - frac / 2), h * (0.5 - frac / 2), w * (0.5 + frac / 2), h * (0.5 + frac / 2))


def true_relative(P, i: int, j: int) -> tuple[np.ndarray, np.ndarray]:
    return geometry.relative(P[i][0], P[i][1], P[j][0], P[j][1])


def scores(frames, K, box: Optional[tuple] = None) -> dict:
    """The spatial and geometry scores MBench gives a video of this revisit (estimated trajectory, A-mode pairs)."""
    from bench_assets.mbench import metrics
    from bench_assets.mbench import pipeline as PL
    tr = geometry.trajectory(frames, K)
    pairs, how = geometry.revisit_pairs_action(tr.Rs, tr.C)
    feats = PL.LazyFeatures(frames)
    errs = [geometry.revisit_pair(feats, i, j, tr.Rs, tr.C, K) for i, j in pairs]
    out = {"pairs": pairs, "pairing": how, "trajectory": tr,
           "epipolar": metrics.spatial_score(errs, "epipolar_px"),
           "reprojection": metrics.spatial_score(errs, "reprojection_px")}
    if box is not None:
        boxes = PL.propagate_box(box, tr.Rs, K, (frames[0].shape[1], frames[0].shape[0]))
        vals = []
        for i, j in pairs:
            if boxes[i] is None:
                continue
            R_rel, _ = geometry.relative(tr.Rs[i], tr.C[i], tr.Rs[j], tr.C[j])
            v, _ = PL.geometry_pair(frames[i], frames[j], boxes[i], R_rel, K)
            if v is not None:
                vals.append(v)
        out["geometry"] = float(np.mean(vals)) if vals else None
    return out
