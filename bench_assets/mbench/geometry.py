"""Camera geometry for MBench (pure numpy / OpenCV): a renderer of textured planes from known poses (the embedded
cases and the validity tests), revisit pairs, and the epipolar / reprojection errors of a revisit pair under the
trajectory. The classical visual odometry of the offline pose slot lives with the slot
(``bench_resources/models/geometry_vo.py``) and is re-exported here.

Conventions: a pose is (R, C): R rotates world to camera (x right, y down, z forward), C is the camera centre in
world coordinates; the camera-frame point is R (X - C).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Optional, Sequence

import cv2
import numpy as np

from bench_resources.models.geometry_vo import (DEFAULT as VO_DEFAULT, FOV_DEG, Features, VOConfig,  # noqa: F401
                                                features, fundamental, intrinsics, match, match_points, project,
                                                rotation_angle_deg, trajectory, transfer_px, triangulate)


def yaw(deg: float) -> np.ndarray:
    """World-to-camera rotation of a camera turned ``deg`` to the right about the vertical (y-down) axis."""
    a = np.radians(deg)
    return np.array([[np.cos(a), 0, -np.sin(a)], [0, 1, 0], [np.sin(a), 0, np.cos(a)]])


def look(yaw_deg: float, pitch_deg: float = 0.0) -> np.ndarray:
    """World-to-camera rotation turned right by ``yaw_deg`` then up by ``pitch_deg``."""
    a = np.radians(pitch_deg)
    pitch = np.array([[1, 0, 0], [0, np.cos(a), np.sin(a)], [0, -np.sin(a), np.cos(a)]])
    return pitch @ yaw(yaw_deg)


@dataclass(frozen=True)
class Plane:
    """A textured rectangle: ``origin`` is its top-left corner, ``u``/``v`` span its width/height (world units)."""
    texture: np.ndarray
    origin: tuple[float, float, float]
    u: tuple[float, float, float]
    v: tuple[float, float, float]


def render(planes: Sequence[Plane], R: np.ndarray, C: np.ndarray, K: np.ndarray, size: tuple[int, int],
           background: int = 40, near: float = 0.05) -> np.ndarray:
    """Paint planes far to near; each is a homography from texture pixels to the image. A plane crossing the
    camera's near plane is clipped to its part in front (Sutherland-Hodgman on the quad), so a wall beside the
    camera stays drawn instead of popping in once all its corners are in front."""
    w, h = size
    img = np.full((h, w, 3), background, np.uint8)
    t = -R @ np.asarray(C, float)
    order = sorted(planes, key=lambda p: -float((R @ (np.asarray(p.origin) + 0.5 * np.asarray(p.u)
                                                      + 0.5 * np.asarray(p.v)) + t)[2]))
    for p in order:
        th, tw = p.texture.shape[:2]
        A = np.stack([np.asarray(p.u) / tw, np.asarray(p.v) / th, np.asarray(p.origin)], axis=1)  # texel -> world
        cam = R @ A
        cam[:, 2] += t
        corners = np.array([[0, 0, 1], [tw, 0, 1], [tw, th, 1], [0, th, 1]], float)
        poly = _clip_near([cam @ c for c in corners], near)
        if len(poly) < 3:
            continue
        px = np.array([(K @ q)[:2] / q[2] for q in poly])
        px = np.clip(px, -1e5, 1e5)
        mask = np.zeros((h, w), np.uint8)
        cv2.fillPoly(mask, [np.round(px * 16).astype(np.int32)], 255, lineType=cv2.LINE_8, shift=4)
        if not mask.any():
            continue
        warped = cv2.warpPerspective(p.texture, K @ cam, (w, h), flags=cv2.INTER_LINEAR)
        img[mask > 0] = warped[mask > 0]
    return img


def _clip_near(poly: list, near: float) -> list:
    """The part of a convex camera-frame polygon with z >= near."""
    out = []
    for k, a in enumerate(poly):
        b = poly[(k + 1) % len(poly)]
        ina, inb = a[2] >= near, b[2] >= near
        if ina:
            out.append(a)
        if ina != inb:
            s = (near - a[2]) / (b[2] - a[2])
            out.append(a + s * (b - a))
    return out


# --------------------------------------------------------------------------------------- matching and odometry
# (the classical estimator lives with the pose slot in bench_resources; re-exported here for the metric code)

# --------------------------------------------------------------------------------------- revisit pairs

REVISIT_T_TRANSLATION = 0.1     # T ranking: exp(-||t_i - t_j|| / 0.1 - angle / 10 deg) (paper, appendix)
REVISIT_T_ANGLE_DEG = 10.0
REVISIT_T_TOP = 5
REVISIT_A_MAX = 20              # A: up to 20 fold pairs; cost ||t_i - t_j|| + angle / 180 deg
REVISIT_A_ANGLE_DEG = 180.0
# Pairs closer in time than this fraction of the video are dropped: the paper's pairs are "strictly not temporally
# adjacent", and two frames a moment apart test no memory (a camera that never comes back would otherwise be scored
# on the frames around its last one).
REVISIT_MIN_GAP_FRACTION = 0.25


def revisit_pairs_action(Rs: Sequence[np.ndarray], C: np.ndarray, max_pairs: int = REVISIT_A_MAX
                         ) -> tuple[list[tuple[int, int]], str]:
    """MBench-A: split at the frame farthest from the start pose; each outbound frame i takes the inbound j
    minimising ||t_i - t_j|| + angle(R_i, R_j)/180deg; keep up to ``max_pairs`` with the largest time span.
    Falls back to symmetric pairs (i, T-1-i) when there is no clear turnaround."""
    n = len(Rs)
    gap = max(1, int(np.ceil(REVISIT_MIN_GAP_FRACTION * n)))
    dist = [np.linalg.norm(C[k] - C[0]) + rotation_angle_deg(Rs[k], Rs[0]) / REVISIT_A_ANGLE_DEG for k in range(n)]
    turn = int(np.argmax(dist))
    if n < 4 or turn < 1 or turn > n - 2 or dist[turn] < 1e-6:
        return ([(i, n - 1 - i) for i in range(min(max_pairs, n // 2)) if n - 1 - 2 * i >= gap],
                "symmetric fallback")
    pairs = []
    for i in range(turn):
        costs = [np.linalg.norm(C[i] - C[j]) + rotation_angle_deg(Rs[i], Rs[j]) / REVISIT_A_ANGLE_DEG for j in range(turn + 1, n)]
        pairs.append((i, turn + 1 + int(np.argmin(costs))))
    pairs = [p for p in pairs if p[1] - p[0] >= gap]
    pairs.sort(key=lambda p: -(p[1] - p[0]))
    return pairs[:max_pairs], f"turnaround at frame {turn}"


def revisit_pairs_text(Rs, C, segment_of: Sequence[int], n_segments: int, top: int = REVISIT_T_TOP
                       ) -> list[tuple[int, int]]:
    """MBench-T: frames of segments 0-1 against frames of segments M-2..M-1, ranked by
    exp(-||t_i - t_j||/0.1 - angle/10deg), ties broken by the larger time span; top 5."""
    early = [i for i, s in enumerate(segment_of) if s <= 1]
    late = [j for j, s in enumerate(segment_of) if s >= n_segments - 2]
    scored = []
    for i in early:
        for j in late:
            if j <= i:
                continue
            s = np.exp(-np.linalg.norm(C[i] - C[j]) / REVISIT_T_TRANSLATION
                       - rotation_angle_deg(Rs[i], Rs[j]) / REVISIT_T_ANGLE_DEG)
            scored.append((-s, -(j - i), i, j))
    scored.sort()
    return [(i, j) for _, _, i, j in scored[:top]]


# --------------------------------------------------------------------------------------- pair errors

def relative(Ra: np.ndarray, Ca: np.ndarray, Rb: np.ndarray, Cb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) with x_b = R x_a + t for camera-frame points."""
    R = Rb @ Ra.T
    t = Rb @ (np.asarray(Ca) - np.asarray(Cb))
    return R, t


@dataclass(frozen=True)
class PairConfig:
    """Constants of the revisit-pair errors (recorded in the manifest)."""
    min_features: int = 40            # a reference view with fewer ORB keypoints has no texture: the pair is skipped
    min_correspondences: int = 15     # fewer consistent matches on return: the view was forgotten (worst score)
    consistency_px: float = 3.0       # RANSAC threshold of a fundamental matrix used only to reject mismatches
    helper_window: int = 10           # frames either side of the reference searched for a triangulation partner
    min_triangulation_parallax_deg: float = 1.0   # the reference and its partner must see the points from apart
    max_triangulation_px: float = 2.0  # triangulated points reprojecting worse than this in either view are dropped
    min_points: int = 8               # fewer triangulated points seen on return: reprojection is not measurable
    rotation_only_px: float = 0.5     # baseline parallax (f |t| / depth) under this: the pair is a pure rotation

    def as_dict(self) -> dict:
        return asdict(self)


PAIR_DEFAULT = PairConfig()


def epipolar_px(pa: np.ndarray, pb: np.ndarray, R: np.ndarray, t: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Symmetric point-to-epipolar-line distance of each match under F = K^-T [t]x R K^-1 (pixels)."""
    F = fundamental(K, R, t / np.linalg.norm(t))
    xa = np.c_[pa, np.ones(len(pa))]
    xb = np.c_[pb, np.ones(len(pb))]
    lb = xa @ F.T          # lines in b
    la = xb @ F            # lines in a
    d_b = np.abs((lb * xb).sum(1)) / np.linalg.norm(lb[:, :2], axis=1)
    d_a = np.abs((la * xa).sum(1)) / np.linalg.norm(la[:, :2], axis=1)
    return (d_a + d_b) / 2


def epipolar_error(pa, pb, R, t, K, min_baseline: float = 1e-9) -> tuple[float, str]:
    """Median symmetric point-to-epipolar-line distance; with no baseline, the limit of the same constraint (the
    symmetric transfer error of K R K^-1). Returns (pixels, model)."""
    if np.linalg.norm(t) <= min_baseline:
        return float(np.median(transfer_px(pa, pb, K @ R @ np.linalg.inv(K)))), "rotation-only: transfer under K R K^-1"
    return float(np.median(epipolar_px(pa, pb, R, t, K))), "epipolar: symmetric point-to-line distance"


HELPER_TRIES = 3   # nearby frames tried, farthest first, to triangulate the reference's points


def helper_candidates(i: int, j: int, C, n: int, cfg: PairConfig = None) -> list[int]:
    """The frames ``_helper_points`` tries for reference i (return j), in order: within ``helper_window`` of i, on
    the reference's side of the video (never the return), farthest camera centre first; at most HELPER_TRIES. Known
    from the trajectory alone, so a streamed pass can keep just these frames' features."""
    cfg = cfg or PAIR_DEFAULT
    cands = [h for h in range(max(0, i - cfg.helper_window), min(n, i + cfg.helper_window + 1))
             if h != i and abs(h - i) < abs(h - j)]
    cands.sort(key=lambda h: -float(np.linalg.norm(C[h] - C[i])))
    return cands[:HELPER_TRIES]


def _helper_points(feats, i: int, j: int, Rs, C, K, cfg: PairConfig, vo: VOConfig):
    """World points seen by the reference frame i, triangulated with a nearby frame (not the return frame) that has
    baseline under the trajectory: {keypoint index in i: X}, and how."""
    for h in helper_candidates(i, j, C, len(Rs), cfg):
        if np.linalg.norm(C[h] - C[i]) <= 1e-9:
            return {}, "rotation-only around the reference: nothing to triangulate"
        ia, ih = match(feats[i], feats[h], vo)
        if len(ia) < cfg.min_correspondences:
            continue
        X, ok = triangulate(feats[i].pts[ia], feats[h].pts[ih], Rs[i], C[i], Rs[h], C[h], K,
                            cfg.max_triangulation_px)
        rays_i, rays_h = X - C[i], X - C[h]
        cosang = (rays_i * rays_h).sum(1) / np.maximum(np.linalg.norm(rays_i, axis=1) * np.linalg.norm(rays_h, axis=1),
                                                       1e-12)
        ok &= np.degrees(np.arccos(np.clip(cosang, -1, 1))) >= cfg.min_triangulation_parallax_deg
        if ok.sum() >= cfg.min_points:
            return {int(a): X[q] for q, a in enumerate(ia) if ok[q]}, f"triangulated with frame {h}"
    return {}, "no nearby frame with baseline and matches to triangulate from"


def revisit_pair(feats: Sequence[Features], i: int, j: int, Rs, C, K: np.ndarray, cfg: PairConfig = PAIR_DEFAULT,
                 vo: VOConfig = VO_DEFAULT) -> dict:
    """The two spatial errors of one revisit pair (reference i, return j) under the trajectory.

    - status 'skipped': the reference has too few features (nothing to remember);
    - status 'forgotten': the reference has texture but the return view has fewer consistent correspondences than
      the minimum; the pair is a measured failure (the worst score), not a missing value;
    - else 'scored': epipolar = median symmetric distance of the consistent matches to the epipolar lines of F from
      the trajectory (rotation-only pairs: transfer error under K R K^-1); reprojection = median distance between
      the return frame's matches and the projection, with the return frame's full pose, of the points triangulated
      from the reference and a nearby departure frame (absolute: depends on translation scale and position, which
      the epipolar constraint does not see). Rotation-only surroundings skip reprojection.
    Consistency: a fundamental matrix fitted by RANSAC only rejects mismatches; it never enters the errors (the
    errors use the trajectory's geometry, as the spec decides)."""
    out = {"pair": [int(i), int(j)], "status": "scored", "matches": 0, "epipolar_px": None,
           "reprojection_px": None, "reason": None, "model": None, "reprojection_points": 0}
    if len(feats[i].pts) < cfg.min_features:
        out.update(status="skipped", reason=f"reference frame {i} has {len(feats[i].pts)} features "
                                            f"(< {cfg.min_features}): no texture to remember")
        return out
    ia, ib = match(feats[i], feats[j], vo)
    keep = np.zeros(len(ia), bool)
    if len(ia) >= 8:
        F, mask = cv2.findFundamentalMat(feats[i].pts[ia], feats[j].pts[ib], cv2.FM_RANSAC, cfg.consistency_px, 0.999)
        if F is not None and mask is not None:
            keep = mask.ravel().astype(bool)[:len(ia)]
    out["matches"] = int(keep.sum())
    if keep.sum() < cfg.min_correspondences:
        out.update(status="forgotten", reason=f"return frame {j} has {int(keep.sum())} consistent correspondences "
                                              f"with reference frame {i} (< {cfg.min_correspondences})")
        return out
    ia, ib = ia[keep], ib[keep]
    pa, pb = feats[i].pts[ia], feats[j].pts[ib]
    R, t = relative(Rs[i], C[i], Rs[j], C[j])
    pts, how = _helper_points(feats, i, j, Rs, C, K, cfg, vo)
    rotation_only = np.linalg.norm(t) <= 1e-9
    if pts and not rotation_only:
        depth = float(np.median([(Rs[i] @ (X - C[i]))[2] for X in pts.values()]))
        rotation_only = K[0, 0] * np.linalg.norm(t) / max(depth, 1e-12) < cfg.rotation_only_px
    e, model = epipolar_error(pa, pb, R, np.zeros(3) if rotation_only else t, K)
    out.update(epipolar_px=e, model=model)
    seen = [q for q, a in enumerate(ia) if int(a) in pts]
    if not pts:
        out["reprojection_reason"] = how
    elif len(seen) < cfg.min_points:
        out["reprojection_reason"] = f"{len(seen)} triangulated points seen on return (< {cfg.min_points})"
    else:
        X = np.stack([pts[int(ia[q])] for q in seen])
        proj, front = project(X, Rs[j], C[j], K)
        err = np.linalg.norm(proj - pb[seen], axis=1)
        err[~front] = np.inf
        out.update(reprojection_px=float(np.median(err)), reprojection_points=len(seen), reprojection_how=how)
    return out


def twist(Ra: np.ndarray, Ca: np.ndarray, Rb: np.ndarray, Cb: np.ndarray) -> np.ndarray:
    """[v; omega] in a's camera frame: v = R_a (C_b - C_a), omega = axis-angle of R_b R_a^T (the ideal twists are
    camera-frame: 'forward' is +z of the camera, whatever way it faces)."""
    rvec, _ = cv2.Rodrigues(Rb @ Ra.T)
    return np.r_[Ra @ (np.asarray(Cb) - np.asarray(Ca)), rvec.reshape(3)]
