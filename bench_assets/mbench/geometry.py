"""Camera geometry for MBench (pure numpy / OpenCV): a pinhole camera with an assumed horizontal FOV, a renderer
of textured planes from known poses (the embedded cases and the validity tests), the classical visual-odometry
trajectory of the offline pose slot, revisit pairs, and the epipolar / reprojection errors of a pair.

Conventions: a pose is (R, C): R rotates world to camera (x right, y down, z forward), C is the camera centre in
world coordinates; the camera-frame point is R (X - C).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

import cv2
import numpy as np

FOV_DEG = 60.0          # the spec's assumed horizontal field of view (intrinsics for the classical estimator)
MIN_MATCHES = 12
PARALLAX_RATIO = 0.75   # homography inliers / essential inliers above this: treat the step as pure rotation


def intrinsics(width: int, height: int, fov_deg: float = FOV_DEG) -> np.ndarray:
    f = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
    return np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1]], np.float64)


def yaw(deg: float) -> np.ndarray:
    """World-to-camera rotation of a camera turned ``deg`` to the right about the vertical (y-down) axis."""
    a = np.radians(deg)
    return np.array([[np.cos(a), 0, -np.sin(a)], [0, 1, 0], [np.sin(a), 0, np.cos(a)]])


@dataclass(frozen=True)
class Plane:
    """A textured rectangle: ``origin`` is its top-left corner, ``u``/``v`` span its width/height (world units)."""
    texture: np.ndarray
    origin: tuple[float, float, float]
    u: tuple[float, float, float]
    v: tuple[float, float, float]


def render(planes: Sequence[Plane], R: np.ndarray, C: np.ndarray, K: np.ndarray, size: tuple[int, int],
           background: int = 40) -> np.ndarray:
    """Paint planes far to near; each is a homography from texture pixels to the image."""
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
        # every corner must be in front of the camera, else skip (no clipping renderer)
        corners = np.array([[0, 0, 1], [tw, 0, 1], [0, th, 1], [tw, th, 1]], float).T
        if (cam @ corners)[2].min() <= 1e-3:
            continue
        H = K @ cam
        warped = cv2.warpPerspective(p.texture, H, (w, h), flags=cv2.INTER_LINEAR)
        mask = cv2.warpPerspective(np.full((th, tw), 255, np.uint8), H, (w, h), flags=cv2.INTER_NEAREST)
        img[mask > 0] = warped[mask > 0]
    return img


# --------------------------------------------------------------------------------------- matching and odometry

_ORB = None


def _orb():
    global _ORB
    if _ORB is None:
        _ORB = cv2.ORB_create(nfeatures=1500, fastThreshold=10)
    return _ORB


def match_points(a: np.ndarray, b: np.ndarray, ratio: float = 0.8) -> tuple[np.ndarray, np.ndarray]:
    """ORB matches with Lowe's ratio test: (points in a, points in b), float64 [n, 2]."""
    ga, gb = cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY)
    ka, da = _orb().detectAndCompute(ga, None)
    kb, db = _orb().detectAndCompute(gb, None)
    if da is None or db is None or len(ka) < 2 or len(kb) < 2:
        return np.zeros((0, 2)), np.zeros((0, 2))
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(da, db, k=2)
    good = [m for m, n in (p for p in pairs if len(p) == 2) if m.distance < ratio * n.distance]
    pa = np.array([ka[m.queryIdx].pt for m in good], np.float64).reshape(-1, 2)
    pb = np.array([kb[m.trainIdx].pt for m in good], np.float64).reshape(-1, 2)
    return pa, pb


@dataclass(frozen=True)
class Step:
    R: np.ndarray          # rotation from frame k's camera to frame k+1's camera
    t: np.ndarray          # unit direction of frame k+1's centre seen from frame k (zero when rotation only)
    inliers: int
    rotation_only: bool


def relative_pose(a: np.ndarray, b: np.ndarray, K: np.ndarray) -> Optional[Step]:
    """Essential-matrix pose between two frames; a step the infinite homography explains as well is rotation
    only (no usable parallax, so the translation is set to zero instead of RANSAC noise)."""
    pa, pb = match_points(a, b)
    if len(pa) < MIN_MATCHES:
        return None
    E, inl = cv2.findEssentialMat(pa, pb, K, method=cv2.RANSAC, prob=0.999, threshold=1.0)
    if E is None or E.shape != (3, 3):
        return None
    n, R, t, _ = cv2.recoverPose(E, pa, pb, K, mask=inl.copy())
    e_inliers = int(inl.sum())
    # model selection (as ORB-SLAM's initialiser): if one homography explains the matches as well as E does,
    # there is no usable parallax and E's translation is noise
    H, h_inl = cv2.findHomography(pa, pb, cv2.RANSAC, 2.0)
    rotation_only = H is not None and int(h_inl.sum()) >= PARALLAX_RATIO * max(e_inliers, 1)
    if rotation_only:
        # E is degenerate without parallax (its decomposition can flip): read the rotation off the homography,
        # K^-1 H K, projected onto SO(3)
        U, _, Vt = np.linalg.svd(np.linalg.inv(K) @ H @ K)
        R = U @ Vt
        if np.linalg.det(R) < 0:
            R = -R
    return Step(R, np.zeros(3) if rotation_only else t.reshape(3), e_inliers, rotation_only)


def trajectory(frames: Sequence[np.ndarray], K: np.ndarray) -> tuple[list[np.ndarray], np.ndarray, list[bool]]:
    """(world-to-camera rotations, camera centres with path length 1, which steps failed) from consecutive frames.

    A step that cannot be estimated repeats the previous pose (recorded as failed)."""
    Rs, Cs, failed = [np.eye(3)], [np.zeros(3)], []
    for a, b in zip(frames[:-1], frames[1:]):
        s = relative_pose(a, b, K)
        if s is None:
            Rs.append(Rs[-1])
            Cs.append(Cs[-1])
            failed.append(True)
            continue
        R_next = s.R @ Rs[-1]
        # x_b = R x_a + t  ->  centre of b in a's frame is -R^T t; to world through a's pose
        c_in_a = -s.R.T @ s.t
        Cs.append(Cs[-1] + Rs[-1].T @ c_in_a)
        Rs.append(R_next)
        failed.append(False)
    C = np.array(Cs)
    length = float(np.linalg.norm(np.diff(C, axis=0), axis=1).sum())
    if length > 0:
        C = C / length
    return Rs, C, failed


def rotation_angle_deg(Ra: np.ndarray, Rb: np.ndarray) -> float:
    c = (np.trace(Ra @ Rb.T) - 1) / 2
    return float(np.degrees(np.arccos(np.clip(c, -1, 1))))


# --------------------------------------------------------------------------------------- revisit pairs

def revisit_pairs_action(Rs: Sequence[np.ndarray], C: np.ndarray, max_pairs: int = 20) -> tuple[list[tuple[int, int]], str]:
    """MBench-A: split at the frame farthest from the start pose; each outbound frame i takes the inbound j
    minimising ||t_i - t_j|| + angle(R_i, R_j)/180deg; keep up to ``max_pairs`` with the largest time span.
    Falls back to symmetric pairs (i, T-1-i) when there is no clear turnaround."""
    n = len(Rs)
    dist = [np.linalg.norm(C[k] - C[0]) + rotation_angle_deg(Rs[k], Rs[0]) / 180.0 for k in range(n)]
    turn = int(np.argmax(dist))
    if n < 4 or turn < 1 or turn > n - 2 or dist[turn] < 1e-6:
        return [(i, n - 1 - i) for i in range(min(max_pairs, n // 2))], "symmetric fallback"
    pairs = []
    for i in range(turn):
        costs = [np.linalg.norm(C[i] - C[j]) + rotation_angle_deg(Rs[i], Rs[j]) / 180.0 for j in range(turn + 1, n)]
        pairs.append((i, turn + 1 + int(np.argmin(costs))))
    pairs.sort(key=lambda p: -(p[1] - p[0]))
    return pairs[:max_pairs], f"turnaround at frame {turn}"


def revisit_pairs_text(Rs, C, segment_of: Sequence[int], n_segments: int, top: int = 5) -> list[tuple[int, int]]:
    """MBench-T: frames of segments 0-1 against frames of segments M-2..M-1, ranked by
    exp(-||t_i - t_j||/0.1 - angle/10deg), ties broken by the larger time span; top 5."""
    early = [i for i, s in enumerate(segment_of) if s <= 1]
    late = [j for j, s in enumerate(segment_of) if s >= n_segments - 2]
    scored = []
    for i in early:
        for j in late:
            if j <= i:
                continue
            s = np.exp(-np.linalg.norm(C[i] - C[j]) / 0.1 - rotation_angle_deg(Rs[i], Rs[j]) / 10.0)
            scored.append((-s, -(j - i), i, j))
    scored.sort()
    return [(i, j) for _, _, i, j in scored[:top]]


# --------------------------------------------------------------------------------------- pair errors

def relative(Ra: np.ndarray, Ca: np.ndarray, Rb: np.ndarray, Cb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(R, t) with x_b = R x_a + t for camera-frame points."""
    R = Rb @ Ra.T
    t = Rb @ (np.asarray(Ca) - np.asarray(Cb))
    return R, t


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def epipolar_error(pa: np.ndarray, pb: np.ndarray, R: np.ndarray, t: np.ndarray, K: np.ndarray,
                   min_baseline: float = 1e-3) -> tuple[float, str]:
    """Mean symmetric point-to-epipolar-line distance (pixels) of the matches under F from the trajectory.
    With no baseline the epipolar geometry degenerates to the infinite homography K R K^-1: the symmetric transfer
    error is used instead (the limit of the same constraint), and the model used is returned."""
    Kinv = np.linalg.inv(K)
    if np.linalg.norm(t) < min_baseline:
        return _transfer_error(pa, pb, K @ R @ Kinv), "rotation-only: symmetric transfer error of K R K^-1"
    F = Kinv.T @ _skew(t / np.linalg.norm(t)) @ R @ Kinv
    xa = np.c_[pa, np.ones(len(pa))]
    xb = np.c_[pb, np.ones(len(pb))]
    lb = xa @ F.T          # lines in b
    la = xb @ F            # lines in a
    d_b = np.abs((lb * xb).sum(1)) / np.linalg.norm(lb[:, :2], axis=1)
    d_a = np.abs((la * xa).sum(1)) / np.linalg.norm(la[:, :2], axis=1)
    return float(np.mean((d_a + d_b) / 2)), "epipolar: symmetric point-to-line distance"


def _transfer_error(pa, pb, H) -> float:
    fwd = cv2.perspectiveTransform(pa.reshape(-1, 1, 2), H).reshape(-1, 2)
    back = cv2.perspectiveTransform(pb.reshape(-1, 1, 2), np.linalg.inv(H)).reshape(-1, 2)
    return float(np.mean((np.linalg.norm(fwd - pb, axis=1) + np.linalg.norm(back - pa, axis=1)) / 2))


def reprojection_error(pa: np.ndarray, pb: np.ndarray, R: np.ndarray, t: np.ndarray, K: np.ndarray,
                       min_baseline: float = 1e-3) -> tuple[float, str]:
    """Triangulate the matches with the trajectory's cameras and reproject into both views: mean error (pixels).
    Rotation only: no triangulation is possible; the transfer error under K R K^-1 is the reprojection error of
    points at infinity."""
    if np.linalg.norm(t) < min_baseline:
        return _transfer_error(pa, pb, K @ R @ np.linalg.inv(K)), "rotation-only: points at infinity"
    Pa = K @ np.c_[np.eye(3), np.zeros(3)]
    Pb = K @ np.c_[R, t / np.linalg.norm(t)]
    X = cv2.triangulatePoints(Pa, Pb, pa.T, pb.T)
    X = X[:3] / X[3]
    ra = (Pa @ np.r_[X, np.ones((1, X.shape[1]))])
    rb = (Pb @ np.r_[X, np.ones((1, X.shape[1]))])
    ea = np.linalg.norm(ra[:2] / ra[2] - pa.T, axis=0)
    eb = np.linalg.norm(rb[:2] / rb[2] - pb.T, axis=0)
    return float(np.mean((ea + eb) / 2)), "triangulated: mean reprojection error"


def twist(Ra: np.ndarray, Ca: np.ndarray, Rb: np.ndarray, Cb: np.ndarray) -> np.ndarray:
    """[v; omega] in a's camera frame: v = R_a (C_b - C_a), omega = axis-angle of R_b R_a^T (the ideal twists are
    camera-frame: 'forward' is +z of the camera, whatever way it faces)."""
    rvec, _ = cv2.Rodrigues(Rb @ Ra.T)
    return np.r_[Ra @ (np.asarray(Cb) - np.asarray(Ca)), rvec.reshape(3)]
