"""Classical monocular visual odometry: the offline pose slot of MBench (pure numpy / OpenCV, no weights).

Conventions: a pose is (R, C): R rotates world to camera (x right, y down, z forward), C is the camera centre in
world coordinates; the camera-frame point is R (X - C). A relative pose (R, t) maps camera-a points to camera b:
x_b = R x_a + t.

The estimator (why each step exists):
- ORB features once per frame; every frame is matched against the current *keyframe*, not its neighbour, so
  translation is estimated only once the pair has enough baseline (rotation-compensated parallax), instead of
  reading RANSAC noise off near-identical frames.
- Two-view model selection: when one homography explains the matches about as well as the essential matrix, the
  homography is decomposed into (R, t/d, n) (a plane or pure rotation); |t/d| below a threshold is pure rotation.
  Translation is never zeroed because a homography fits: a lateral move in front of a wall keeps its translation.
- Once a pair has baseline, points are triangulated and later frames are placed by PnP against them, so the
  translation scale carries along the path (monocular VO is up to one global scale, fixed by path length 1).
- Loop closure: the strongest revisit (many inlier matches between an early and a late frame) re-places the late
  frame against the early one and spreads the correction over the frames between.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Iterable, Optional, Sequence

import cv2
import numpy as np

FOV_DEG = 60.0  # the spec's assumed horizontal field of view (intrinsics for the classical estimator)


@dataclass(frozen=True)
class VOConfig:
    """Every constant of the classical estimator (recorded in the MBench manifest)."""
    fov_deg: float = FOV_DEG
    orb_features: int = 2000
    orb_fast_threshold: int = 10
    ratio: float = 0.8               # Lowe's ratio test
    min_matches: int = 15            # matches needed for any two-view estimate or PnP
    min_features: int = 40           # a frame with fewer ORB keypoints has no texture to match
    essential_px: float = 1.0        # RANSAC threshold of the essential matrix (pixels)
    homography_px: float = 2.0       # RANSAC threshold of the homography (pixels)
    pnp_px: float = 2.0              # RANSAC threshold of PnP (pixels)
    homography_ratio: float = 0.95   # H inliers >= this x E inliers: the scene is a plane (decompose H)
    refine_points: int = 300         # matches used by the Sampson refinement (an even subsample)
    refine_candidates: int = 2       # two-view candidates refined (the best by initial Sampson cost)
    tie: float = 0.05                # refined costs within this fraction are a tie (planes: prefer the facing one)
    rotation_px: float = 1.5         # median transfer error under the best pure rotation below this: rotation only (ORB noise is ~0.7 px)
    min_parallax_deg: float = 0.8    # median rotation-compensated ray angle for a pair to count as having baseline
    keyframe_parallax_deg: float = 0.8  # once a map exists, new points are triangulated only from this much parallax
    still_px: float = 0.25           # median image motion under this: the camera did not move
    keyframe_overlap: float = 0.5    # a new keyframe once matches to the keyframe drop below this fraction
    max_triangulation_px: float = 2.0  # triangulated points reprojecting worse than this are dropped
    loop_min_gap: int = 8            # frames between the two ends of a loop closure
    loop_min_inliers: int = 40       # inlier matches a revisit needs to close the loop
    loop_max_angle_deg: float = 45.0  # only frames the trajectory puts within this angle are tried as revisits
    loop_candidates: int = 10        # frames tried per side of a loop (an even stride over the video)

    def as_dict(self) -> dict:
        return asdict(self)


DEFAULT = VOConfig()


def intrinsics(width: int, height: int, fov_deg: float = FOV_DEG) -> np.ndarray:
    f = 0.5 * width / np.tan(np.radians(fov_deg) / 2)
    return np.array([[f, 0, width / 2], [0, f, height / 2], [0, 0, 1]], np.float64)


def rotation_angle_deg(Ra: np.ndarray, Rb: np.ndarray) -> float:
    c = (np.trace(Ra @ Rb.T) - 1) / 2
    return float(np.degrees(np.arccos(np.clip(c, -1, 1))))


# --------------------------------------------------------------------------------------- features and matching

@dataclass
class Features:
    pts: np.ndarray                    # [n, 2] float64
    desc: Optional[np.ndarray]         # [n, 32] uint8 or None


_ORB: dict = {}


def features(img: np.ndarray, cfg: VOConfig = DEFAULT) -> Features:
    key = (cfg.orb_features, cfg.orb_fast_threshold)
    if key not in _ORB:
        _ORB[key] = cv2.ORB_create(nfeatures=cfg.orb_features, fastThreshold=cfg.orb_fast_threshold)
    grey = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY) if img.ndim == 3 else img
    kp, desc = _ORB[key].detectAndCompute(grey, None)
    return Features(np.array([k.pt for k in kp], np.float64).reshape(-1, 2), desc)


def match(fa: Features, fb: Features, cfg: VOConfig = DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """Indices (ia, ib) of ratio-test matches, one per keypoint of b."""
    if fa.desc is None or fb.desc is None or len(fa.pts) < 2 or len(fb.pts) < 2:
        return np.zeros(0, int), np.zeros(0, int)
    pairs = cv2.BFMatcher(cv2.NORM_HAMMING).knnMatch(fa.desc, fb.desc, k=2)
    good = [m for m, n in (p for p in pairs if len(p) == 2) if m.distance < cfg.ratio * n.distance]
    seen, ia, ib = set(), [], []
    for m in sorted(good, key=lambda m: m.distance):
        if m.trainIdx not in seen:
            seen.add(m.trainIdx)
            ia.append(m.queryIdx)
            ib.append(m.trainIdx)
    return np.array(ia, int), np.array(ib, int)


def match_points(a: np.ndarray, b: np.ndarray, cfg: VOConfig = DEFAULT) -> tuple[np.ndarray, np.ndarray]:
    """ORB matches with Lowe's ratio test: (points in a, points in b), float64 [n, 2]."""
    fa, fb = features(a, cfg), features(b, cfg)
    ia, ib = match(fa, fb, cfg)
    return fa.pts[ia].reshape(-1, 2), fb.pts[ib].reshape(-1, 2)


# --------------------------------------------------------------------------------------- two-view geometry

def _rays(p: np.ndarray, K: np.ndarray) -> np.ndarray:
    r = np.c_[p, np.ones(len(p))] @ np.linalg.inv(K).T
    return r / np.linalg.norm(r, axis=1, keepdims=True)


def parallax_deg(pa: np.ndarray, pb: np.ndarray, R: np.ndarray, K: np.ndarray) -> float:
    """Median angle between the rays of b and the rays of a rotated into b: what translation alone explains."""
    if len(pa) == 0:
        return 0.0
    ra, rb = _rays(pa, K) @ R.T, _rays(pb, K)
    return float(np.degrees(np.median(np.arccos(np.clip((ra * rb).sum(1), -1, 1)))))


def _project_so3(M: np.ndarray) -> np.ndarray:
    U, _, Vt = np.linalg.svd(M)
    R = U @ Vt
    return -R if np.linalg.det(R) < 0 else R


@dataclass(frozen=True)
class TwoView:
    R: np.ndarray
    t: np.ndarray          # unit direction (zero for rotation only / still)
    kind: str              # still | rotation | homography | essential | failed
    inliers: np.ndarray    # boolean mask over the matches
    parallax_deg: float


def rotation_fit(pa: np.ndarray, pb: np.ndarray, K: np.ndarray) -> np.ndarray:
    """Least-squares rotation taking the rays of a onto the rays of b (orthogonal Procrustes)."""
    ra, rb = _rays(pa, K), _rays(pb, K)
    return _project_so3(rb.T @ ra)


def transfer_px(pa: np.ndarray, pb: np.ndarray, H: np.ndarray) -> np.ndarray:
    """Symmetric transfer error of each match under a homography (pixels)."""
    fwd = cv2.perspectiveTransform(pa.reshape(-1, 1, 2), H).reshape(-1, 2)
    back = cv2.perspectiveTransform(pb.reshape(-1, 1, 2), np.linalg.inv(H)).reshape(-1, 2)
    return (np.linalg.norm(fwd - pb, axis=1) + np.linalg.norm(back - pa, axis=1)) / 2


def two_view(pa: np.ndarray, pb: np.ndarray, K: np.ndarray, cfg: VOConfig = DEFAULT) -> TwoView:
    """Relative pose a -> b from matched pixels. Model selection: no motion; pure rotation (the infinite homography
    K R K^-1 explains the matches); a plane (one homography explains as many matches as the essential matrix:
    decomposed into R, t/d, n); else the essential matrix."""
    n = len(pa)
    none = np.zeros(n, bool)
    if n < cfg.min_matches:
        return TwoView(np.eye(3), np.zeros(3), "failed", none, 0.0)
    if float(np.median(np.linalg.norm(pb - pa, axis=1))) < cfg.still_px:
        return TwoView(np.eye(3), np.zeros(3), "still", np.ones(n, bool), 0.0)
    H, h_mask = cv2.findHomography(pa, pb, cv2.RANSAC, cfg.homography_px)
    h_inl = h_mask.ravel().astype(bool) if H is not None else none
    E, e_mask = cv2.findEssentialMat(pa, pb, K, method=cv2.RANSAC, prob=0.999, threshold=cfg.essential_px)
    e_ok = E is not None and E.shape[0] >= 3 and E.shape[1] == 3
    e_inl = e_mask.ravel().astype(bool) if e_ok else none
    support = h_inl | e_inl
    if support.sum() < cfg.min_matches:
        return TwoView(np.eye(3), np.zeros(3), "failed", none, 0.0)
    # pure rotation: the rotation fitted to the supported matches transfers them within the homography threshold
    # pure rotation: the rotation fitted to the homography's inliers transfers about as many matches as the best
    # model explains, and with small residuals (a lateral move over a deep scene leaves the near points off)
    R_rot = rotation_fit(pa[h_inl if h_inl.sum() >= cfg.min_matches else support],
                         pb[h_inl if h_inl.sum() >= cfg.min_matches else support], K)
    err = transfer_px(pa, pb, K @ R_rot @ np.linalg.inv(K))
    rot_inl = err < cfg.homography_px
    if (rot_inl.sum() >= cfg.homography_ratio * max(int(h_inl.sum()), int(e_inl.sum()))
            and np.median(err[support]) < cfg.rotation_px):
        return TwoView(R_rot, np.zeros(3), "rotation", rot_inl, 0.0)
    # translation: candidates from the essential matrix and from the homography's decompositions, each refined on
    # the supported matches (Sampson error, robust loss); the lowest cost wins. A plane leaves two decompositions
    # equally good: then the plane facing the camera is taken.
    cands = []
    if e_inl.sum() >= cfg.min_matches:
        _, R, t, _ = cv2.recoverPose(E[:3], pa, pb, K, mask=e_mask.copy())
        cands.append((R, t.reshape(3), 0.0))
    if h_inl.sum() >= cfg.min_matches:
        cands += _homography_candidates(H, K, pa[h_inl], pb[h_inl])
    best = None
    sa, sb = pa[support], pb[support]
    if len(sa) > cfg.refine_points:   # an even subsample keeps the refinement cheap
        pick = np.linspace(0, len(sa) - 1, cfg.refine_points).round().astype(int)
        sa, sb = sa[pick], sb[pick]

    def initial(c):
        e = sampson_px(sa, sb, K, c[0], c[1])
        return float(np.minimum(e, 3 * cfg.essential_px).sum())

    cands = sorted([c for c in cands if np.linalg.norm(c[1]) >= 1e-9], key=initial)[:cfg.refine_candidates]
    for R0, t0, facing in cands:
        R, t, cost = refine_pose(sa, sb, K, R0, t0, cfg.essential_px)
        if best is None or cost < best[2] * (1 - cfg.tie) or (cost <= best[2] * (1 + cfg.tie) and facing > best[3]):
            best = (R, t, cost, facing)
    if best is None:
        return TwoView(R_rot, np.zeros(3), "rotation", rot_inl, 0.0)
    R, t = best[0], best[1]
    inl = sampson_px(pa, pb, K, R, t) < 2 * cfg.essential_px
    return TwoView(R, t, "essential" if best[3] == 0 else "homography", inl, parallax_deg(pa[inl], pb[inl], R, K))


def _skew(v):
    return np.array([[0, -v[2], v[1]], [v[2], 0, -v[0]], [-v[1], v[0], 0]])


def fundamental(K: np.ndarray, R: np.ndarray, t: np.ndarray) -> np.ndarray:
    Kinv = np.linalg.inv(K)
    return Kinv.T @ _skew(t) @ R @ Kinv


def sampson_px(pa, pb, K, R, t) -> np.ndarray:
    """First-order geometric (Sampson) distance of each match to the epipolar geometry of (R, t), pixels."""
    F = fundamental(K, R, t / max(np.linalg.norm(t), 1e-12))
    xa, xb = np.c_[pa, np.ones(len(pa))], np.c_[pb, np.ones(len(pb))]
    Fx, Ftx = xa @ F.T, xb @ F
    num = (xb * Fx).sum(1)
    den = Fx[:, 0] ** 2 + Fx[:, 1] ** 2 + Ftx[:, 0] ** 2 + Ftx[:, 1] ** 2
    return np.abs(num) / np.sqrt(np.maximum(den, 1e-18))


def refine_pose(pa, pb, K, R0, t0, scale_px: float) -> tuple[np.ndarray, np.ndarray, float]:
    """Levenberg-Marquardt-style robust least squares on (rotation vector, translation direction) minimising the
    Sampson error (computed on normalised coordinates, scaled by the focal length to pixels)."""
    from scipy.optimize import least_squares
    f = float(K[0, 0])
    xa = np.c_[pa, np.ones(len(pa))] @ np.linalg.inv(K).T
    xb = np.c_[pb, np.ones(len(pb))] @ np.linalg.inv(K).T
    r0 = cv2.Rodrigues(R0)[0].ravel()
    a = t0 / np.linalg.norm(t0)
    b = np.cross(a, [1.0, 0, 0]) if abs(a[0]) < 0.9 else np.cross(a, [0, 1.0, 0])
    b /= np.linalg.norm(b)
    c = np.cross(a, b)

    def unpack(x):
        t = a + x[3] * b + x[4] * c     # the direction as two offsets around t0 (no singularity near the start)
        return cv2.Rodrigues(x[:3])[0], t / np.linalg.norm(t)

    def res(x):
        R, t = unpack(x)
        E = _skew(t) @ R
        Ex, Etx = xa @ E.T, xb @ E
        den = Ex[:, 0] ** 2 + Ex[:, 1] ** 2 + Etx[:, 0] ** 2 + Etx[:, 1] ** 2
        return f * (xb * Ex).sum(1) / np.sqrt(np.maximum(den, 1e-18))

    sol = least_squares(res, np.r_[r0, 0.0, 0.0], loss="huber", f_scale=scale_px, max_nfev=25)
    R, t = unpack(sol.x)
    return R, t, float(sol.cost)


def _homography_candidates(H, K, pa, pb) -> list:
    """(R, t/d, how much the plane faces the camera) for the physically valid decompositions of H: the plane point
    behind each match lies in front of both cameras for nearly all matches."""
    n_sol, Rs, ts, ns = cv2.decomposeHomographyMat(H, K)
    ma = np.c_[pa, np.ones(len(pa))] @ np.linalg.inv(K).T
    out = []
    for k in range(n_sol):
        R, t, nv = Rs[k], ts[k].reshape(3), ns[k].reshape(3)
        s = ma @ nv                                  # plane n.X = 1 (d = 1): the point is m / (n.m)
        with np.errstate(divide="ignore", invalid="ignore"):
            X = ma / s[:, None]
        front = (s > 0) & (((X @ R.T) + t)[:, 2] > 0)
        out.append((float(front.mean()), _project_so3(R), t, abs(float(nv[2]))))
    top = max((o[0] for o in out), default=0.0)
    return [(R, t, max(facing, 1e-6)) for f, R, t, facing in out if f >= 0.9 * top and f > 0.5]


def triangulate(pa, pb, Ra, Ca, Rb, Cb, K, max_px: float) -> tuple[np.ndarray, np.ndarray]:
    """World points of matches under two posed cameras: (X [n, 3], ok mask): in front of both cameras and
    reprojecting within ``max_px`` in both."""
    Pa = K @ np.c_[Ra, -Ra @ Ca]
    Pb = K @ np.c_[Rb, -Rb @ Cb]
    if len(pa) == 0:
        return np.zeros((0, 3)), np.zeros(0, bool)
    Xh = cv2.triangulatePoints(Pa, Pb, pa.T.astype(np.float64), pb.T.astype(np.float64))
    w = Xh[3]
    w = np.where(np.abs(w) < 1e-12, 1e-12, w)
    X = (Xh[:3] / w).T
    ok = np.ones(len(X), bool)
    for P, p in ((Pa, pa), (Pb, pb)):
        x = np.c_[X, np.ones(len(X))] @ P.T
        ok &= x[:, 2] > 1e-9
        err = np.linalg.norm(x[:, :2] / np.where(np.abs(x[:, 2:]) < 1e-12, 1e-12, x[:, 2:]) - p, axis=1)
        ok &= err < max_px
    return X, ok


def project(X: np.ndarray, R: np.ndarray, C: np.ndarray, K: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Pixels of world points and whether each is in front of the camera."""
    cam = (X - C) @ R.T
    z = cam[:, 2:]
    return (cam @ K.T)[:, :2] / np.where(np.abs(z) < 1e-12, 1e-12, z), cam[:, 2] > 1e-9


# --------------------------------------------------------------------------------------- trajectory

@dataclass
class Trajectory:
    Rs: list                          # world-to-camera rotations
    C: np.ndarray                     # [n, 3] camera centres, path length 1 (unless the camera never moved)
    failed: list                      # per step: could not be estimated (pose repeated)
    kinds: list = field(default_factory=list)   # per step: how the frame was placed
    loop: Optional[dict] = None       # the loop closure applied, if any

    def __iter__(self):               # (Rs, C, failed) unpacking, as the pose slot's interface
        return iter((self.Rs, self.C, self.failed))


def loop_grid(n: int, cfg: VOConfig = DEFAULT) -> set[int]:
    """The frames ``_close_loop`` tries as the two ends of a loop (an even stride over the video)."""
    if n <= cfg.loop_min_gap:
        return set()
    stride = max(1, n // cfg.loop_candidates)
    return set(range(cfg.loop_min_gap, n, stride)) | set(range(0, n, stride))


def trajectory(frames: Iterable[np.ndarray], K: np.ndarray, cfg: VOConfig = DEFAULT) -> Trajectory:
    """One camera trajectory for the whole video (see the module docstring).

    Streamed: ``frames`` is walked once, in order (a list, or a one-pass sequence with ``len()``); each frame's
    features are kept only while a later step can read them (the current keyframe, the last rotation-only frame
    after it, the loop-closure grid, and the mapped keyframe nearest below each grid frame), so memory does not
    grow with the video's length."""
    n = len(frames)
    grid = loop_grid(n, cfg)
    feats: dict[int, Features] = {}
    frame_iter = iter(frames)
    Rs, Cs = [np.eye(3)], [np.zeros(3)]
    failed, kinds = [], []
    kf = 0
    kf_map: dict[int, np.ndarray] = {}       # keypoint index in the keyframe -> world point
    kf_matches0 = None                         # matches to the keyframe right after it became one
    maps: dict[int, dict[int, np.ndarray]] = {}
    step_len: list[float] = []
    last_rot = None                            # the last rotation-only frame after the keyframe (the end's "held")
    last_mapped = None                         # the latest keyframe in ``maps``
    retained: set[int] = set()                 # earlier mapped keyframes _close_loop can still read

    def keep(k: int) -> bool:
        return k in grid or k == kf or k == last_rot or k == last_mapped or k in retained

    def map_keyframe(k: int) -> None:
        # a mapped keyframe serves _close_loop only as the nearest one below a grid frame: drop the previous one
        # when no grid frame lies between it and this one
        nonlocal last_mapped
        prev, last_mapped = last_mapped, k
        if prev is None:
            return
        if any(prev <= i < k for i in grid):
            retained.add(prev)
        else:
            maps.pop(prev, None)
            if not keep(prev):
                feats.pop(prev, None)

    for k in range(n):
        try:
            f = next(frame_iter)
        except StopIteration:
            raise ValueError(f"trajectory: {n} frames announced, the walk ended after {k}") from None
        feats[k] = features(f, cfg)
        del f
        if k == 0:
            continue
        old_kf, old_rot = kf, last_rot
        ia, ib = match(feats[kf], feats[k], cfg)
        pa, pb = feats[kf].pts[ia].reshape(-1, 2), feats[k].pts[ib].reshape(-1, 2)
        R_k, C_k, kind = None, None, "failed"
        tv = two_view(pa, pb, K, cfg)
        mapped = np.array([i in kf_map for i in ia], bool) if len(ia) else np.zeros(0, bool)
        if tv.kind != "failed":
            # rotation and translation direction from the two views (well conditioned once the pair has baseline);
            # the length of the move from the points triangulated earlier (scale carried along the path)
            R_k = tv.R @ Rs[kf]
            moved = tv.kind in ("homography", "essential") and tv.parallax_deg >= cfg.min_parallax_deg
            C_k, kind = Cs[kf].copy(), ("still" if tv.kind == "still" else "rotation")
            if moved:
                scale = _scale_from_map(kf_map, ia, pb, tv, Rs[kf], Cs[kf], K, cfg) if mapped.sum() else None
                if scale is None:
                    # no map yet: the first baseline sets the scale; after a lost map, the mean step so far
                    moving = [x for x in step_len if x > 0]
                    scale = float(np.mean(moving)) * max(1, k - kf) if moving else 1.0
                    kind = tv.kind
                else:
                    kind = tv.kind + "+map"
                C_k = Cs[kf] + Rs[kf].T @ (-tv.R.T @ tv.t) * scale
        if R_k is None and kf_map and mapped.sum() >= cfg.min_matches:
            # no two-view model fits (e.g. too little overlap for RANSAC): place the frame against the map (PnP)
            obj = np.stack([kf_map[i] for i in ia[mapped]])
            rvec0, _ = cv2.Rodrigues(Rs[-1])
            ok, rvec, tvec, inl = cv2.solvePnPRansac(obj, pb[mapped], K, None, rvec0, -Rs[-1] @ Cs[-1],
                                                     useExtrinsicGuess=True, reprojectionError=cfg.pnp_px,
                                                     iterationsCount=200, confidence=0.999)
            if ok and inl is not None and len(inl) >= cfg.min_matches:
                R_p = cv2.Rodrigues(rvec)[0]
                C_p = -R_p.T @ tvec.reshape(3)

                R_k, C_k, kind = R_p, C_p, "pnp"
        if R_k is None:
            Rs.append(Rs[-1])
            Cs.append(Cs[-1])
            failed.append(True)
            kinds.append("failed")
            # lost the keyframe: restart from this frame if it has texture
            if len(feats[k].pts) >= cfg.min_features:
                kf, kf_map, kf_matches0 = k, {}, None
            _forget(feats, keep, k, old_kf, old_rot, kf, last_rot)
            continue
        Rs.append(R_k)
        Cs.append(C_k)
        failed.append(False)
        kinds.append(kind)
        step_len.append(float(np.linalg.norm(C_k - Cs[-2])))
        # keyframe policy: triangulate once the pair has baseline; move on when overlap shrinks
        if kf_matches0 is None:
            kf_matches0 = max(len(ia), 1)
        par = parallax_deg(pa, pb, R_k @ Rs[kf].T, K) if len(pa) else 0.0
        need = cfg.keyframe_parallax_deg if kf_map else cfg.min_parallax_deg
        baseline = np.linalg.norm(C_k - Cs[kf]) > 0 and par >= need
        if baseline:
            # frames between the keyframe and this one were held at the keyframe's centre (no usable baseline
            # yet): put them on the segment between the two centres
            held = [q for q in range(kf + 1, k) if kinds[q - 1] == "rotation" and np.allclose(Cs[q], Cs[kf])]
            stood = [q for q in range(kf + 1, k + 1) if kinds[q - 1] != "still"]   # frames that moved at all
            for q in held:
                a = (stood.index(q) + 1) / len(stood)
                Cs[q] = Cs[kf] + (C_k - Cs[kf]) * a
                # their rotation-only fit absorbed the translation's image motion: interpolate it too
                Rs[q] = _slerp_identity(R_k @ Rs[kf].T, a) @ Rs[kf]
            X, ok = triangulate(pa, pb, Rs[kf], Cs[kf], R_k, C_k, K, cfg.max_triangulation_px)
            new_map = {int(b): (X[q] if ok[q] else kf_map[int(a)]) for q, (a, b) in enumerate(zip(ia, ib))
                       if ok[q] or int(a) in kf_map}
            kf, kf_map, kf_matches0 = k, new_map, None
            maps[k] = kf_map
            map_keyframe(k)
        elif len(ia) < cfg.keyframe_overlap * kf_matches0 or len(ia) < 3 * cfg.min_matches:
            kf_map = {int(b): kf_map[int(a)] for a, b in zip(ia, ib) if int(a) in kf_map}
            kf, kf_matches0 = k, None
            if kf_map:
                maps[k] = kf_map
                map_keyframe(k)
        if kf != old_kf:
            last_rot = None
        elif kind == "rotation":
            last_rot = k
        _forget(feats, keep, k, old_kf, old_rot, kf, last_rot)
    # frames after the last keyframe that moved too little to pass the parallax bar: one more two-view with the
    # bar halved, so the end of a move is not dropped
    held = [q for q in range(kf + 1, n) if kinds[q - 1] == "rotation" and np.allclose(Cs[q], Cs[kf])]
    if held:
        q = held[-1]
        ia, ib = match(feats[kf], feats[q], cfg)
        pa, pb = feats[kf].pts[ia].reshape(-1, 2), feats[q].pts[ib].reshape(-1, 2)
        tv = two_view(pa, pb, K, cfg)
        if tv.kind in ("homography", "essential") and tv.parallax_deg >= cfg.min_parallax_deg / 2 and kf_map:
            scale = _scale_from_map(kf_map, ia, pb, tv, Rs[kf], Cs[kf], K, cfg)
            if scale is not None:
                end = Cs[kf] + Rs[kf].T @ (-tv.R.T @ tv.t) * scale
                R_end = tv.R @ Rs[kf]
                for r, h in enumerate(held):
                    Cs[h] = Cs[kf] + (end - Cs[kf]) * (r + 1) / len(held)
                    Rs[h] = _slerp_identity(R_end @ Rs[kf].T, (r + 1) / len(held)) @ Rs[kf]
                for h in range(q + 1, n):
                    Cs[h] = end.copy()
    traj = Trajectory(Rs, np.array(Cs), failed, kinds)
    traj.loop = _close_loop(traj, feats, maps, K, cfg)
    length = float(np.linalg.norm(np.diff(traj.C, axis=0), axis=1).sum())
    if length > 1e-9:
        traj.C = traj.C / length
    return traj


def _forget(feats: dict, keep, k: int, *candidates) -> None:
    """Drop the features of this step's frames that no later step reads."""
    for q in {k, *candidates}:
        if q is not None and q in feats and not keep(q):
            del feats[q]


def _scale_from_map(kf_map, ia, pb, tv: TwoView, R_kf, C_kf, K, cfg: VOConfig) -> Optional[float]:
    """Length of the move kf -> k along the unit direction tv.t that puts the mapped points on their rays in frame k:
    per point, s solves m x (R X + s t) = 0 in least squares; the median over the inlier matches."""
    sel = [q for q, a in enumerate(ia) if int(a) in kf_map and tv.inliers[q]]
    if len(sel) < cfg.min_matches:
        return None
    X = np.stack([R_kf @ (kf_map[int(ia[q])] - C_kf) for q in sel]) @ tv.R.T     # mapped points, rotated into k
    m = np.c_[pb[sel], np.ones(len(sel))] @ np.linalg.inv(K).T
    a = np.cross(m, tv.t)
    b = np.cross(m, X)
    den = (a * a).sum(1)
    ok = den > 1e-12
    if ok.sum() < cfg.min_matches:
        return None
    s = -(a[ok] * b[ok]).sum(1) / den[ok]
    # a negative length means the two-view direction has the wrong sign (a homography's twofold ambiguity):
    # the map's points decide
    s = float(np.median(s))
    return s if abs(s) > 1e-12 else None


def _slerp_identity(dR: np.ndarray, a: float) -> np.ndarray:
    rvec, _ = cv2.Rodrigues(dR)
    return cv2.Rodrigues(rvec * a)[0]


def _close_loop(traj: Trajectory, feats, maps, K, cfg: VOConfig) -> Optional[dict]:
    """Find the strongest revisit (i early, j late) and correct frames i+1.. so that j sits where its matches to i
    say it is: rotation spread by slerp, centre correction linearly; frames after j get the full correction."""
    n = len(traj.Rs)
    if n <= cfg.loop_min_gap:
        return None
    stride = max(1, n // cfg.loop_candidates)
    best = None
    for j in range(cfg.loop_min_gap, n, stride):
        if len(feats[j].pts) < cfg.min_features:
            continue
        for i in range(0, j - cfg.loop_min_gap + 1, stride):
            if rotation_angle_deg(traj.Rs[i], traj.Rs[j]) > cfg.loop_max_angle_deg:
                continue
            ia, ib = match(feats[i], feats[j], cfg)
            if len(ia) < cfg.loop_min_inliers:
                continue
            pa, pb = feats[i].pts[ia], feats[j].pts[ib]
            F, mask = cv2.findFundamentalMat(pa, pb, cv2.FM_RANSAC, cfg.homography_px, 0.999)
            inl = int(mask.sum()) if F is not None else 0
            if inl >= cfg.loop_min_inliers and (best is None or (j - i, inl) > (best[1] - best[0], best[2])):
                best = (i, j, inl)
    if best is None:
        return None
    i, j, inl = best
    # the corrected pose of j: PnP against the map nearest i (scale-consistent), else the two-view rotation
    R_new, C_new, how = None, None, None
    kfs = [k for k in maps if k <= i]
    if kfs:
        m = maps[max(kfs)]
        kfi = max(kfs)
        ia, ib = match(feats[kfi], feats[j], cfg)
        sel = [q for q, a in enumerate(ia) if int(a) in m]
        if len(sel) >= cfg.min_matches:
            obj = np.stack([m[int(ia[q])] for q in sel])
            ok, rvec, tvec, pin = cv2.solvePnPRansac(obj, feats[j].pts[ib[sel]], K, None,
                                                     reprojectionError=cfg.pnp_px, iterationsCount=200)
            if ok and pin is not None and len(pin) >= cfg.min_matches:
                R_new = cv2.Rodrigues(rvec)[0]
                C_new = -R_new.T @ tvec.reshape(3)
                how = f"PnP against the map of keyframe {kfi}"
    if R_new is None:
        ia, ib = match(feats[i], feats[j], cfg)
        tv = two_view(feats[i].pts[ia], feats[j].pts[ib], K, cfg)
        if tv.kind not in ("still", "rotation"):
            return None   # not back at the same place, and no map to measure how far: no closure
        R_new = tv.R @ traj.Rs[i]
        C_new = traj.C[i].copy()
        how = f"two-view {tv.kind} to frame {i}"
    dR = R_new @ traj.Rs[j].T
    dC = C_new - traj.C[j]
    Rs, C = list(traj.Rs), traj.C.copy()
    # spread the correction by path travelled (a camera standing still gets none of it), rotation by frames
    travelled = np.r_[0.0, np.cumsum(np.linalg.norm(np.diff(traj.C[i:j + 1], axis=0), axis=1))]
    for k in range(i + 1, n):
        a = min(1.0, (k - i) / (j - i))
        b = 1.0 if k >= j or travelled[-1] <= 1e-12 else travelled[k - i] / travelled[-1]
        Rs[k] = _slerp_identity(dR, a) @ traj.Rs[k]
        C[k] = traj.C[k] + b * dC if k <= j else C_new + dR @ (traj.C[k] - traj.C[j])
    traj.Rs, traj.C = Rs, C
    return {"i": i, "j": j, "inliers": inl, "how": how,
            "rotation_correction_deg": round(rotation_angle_deg(dR, np.eye(3)), 3),
            "centre_correction": round(float(np.linalg.norm(dC)), 6)}
