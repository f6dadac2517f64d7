"""Shot cuts between consecutive sampled frames that a moving camera does not fake (issue 23: a 300 s panning video
read as 195 shots for 37 cuts).

At 1 fps a pan, a tilt or a zoom moves most pixels between two samples, so a raw pixel difference reads it as a cut.
Here each frame pair gets two readings on small colour thumbnails:
- ``raw``: the share of pixels that change by more than ``CHANGE_LEVEL`` grey levels (any channel), as before;
- ``compensated``: the same share after the earlier frame is warped onto the later one by the camera's global motion
  (a similarity transform: shift, rotation, uniform scale, fitted by RANSAC to ORB feature matches), counted only
  where the warped frame covers the later one.
A pan that ORB cannot match (little texture) is undone by a pure shift from phase correlation instead; ``compensated``
is the lower of the two. A camera move is undone by a warp; a cut is not (two different views have no common global
motion, so the frames still differ after either warp). Where the frames share too little area after both,
``compensated`` is ``raw``: the pair is judged as before. The thresholds (constants.CUT_*) are fitted on calibration material only
(scripts/calibrate_cuts.py: pans / zooms over calibration stills vs cuts between calibration stills)."""
from __future__ import annotations

from typing import Optional

import cv2
import numpy as np

THUMB = (96, 54)          # colour thumbnail the changes are counted on (16:9; other aspects are squeezed alike)
FEATURE_WIDTH = 320       # grey image ORB reads (features on a 96 px thumbnail are too few)
CHANGE_LEVEL = 40         # grey levels: a pixel "changes" (as the raw rule always read it)
MIN_INLIERS = 12          # RANSAC inliers for a camera motion to be believed
MIN_INLIER_SHARE = 0.25   # ... and this share of the cross-checked matches
MIN_OVERLAP = 0.3         # the warped earlier frame must cover this share of the later one


class FrameFeatures:
    """What one frame contributes to both readings (computed once per frame, not once per pair)."""

    def __init__(self, frame_rgb: np.ndarray, orb=None):
        h, w = frame_rgb.shape[:2]
        self.thumb = cv2.resize(frame_rgb, THUMB, interpolation=cv2.INTER_AREA).astype(np.int16)
        fh = max(1, int(round(h * FEATURE_WIDTH / max(w, 1))))
        grey = cv2.cvtColor(frame_rgb, cv2.COLOR_RGB2GRAY) if frame_rgb.ndim == 3 else frame_rgb
        self.grey = cv2.resize(grey, (FEATURE_WIDTH, fh), interpolation=cv2.INTER_AREA)
        orb = orb or cv2.ORB_create(nfeatures=500)
        self.kp, self.des = orb.detectAndCompute(self.grey, None)


def changed_share(a: np.ndarray, b: np.ndarray, mask: Optional[np.ndarray] = None) -> float:
    """Pure: the share of pixels whose largest channel difference exceeds ``CHANGE_LEVEL`` (within ``mask``)."""
    ch = np.abs(a.astype(np.int16) - b.astype(np.int16))
    ch = (ch.max(axis=2) if ch.ndim == 3 else ch) > CHANGE_LEVEL
    if mask is None:
        return float(ch.mean())
    return float(ch[mask].mean()) if mask.any() else 1.0


def camera_motion(prev: FrameFeatures, cur: FrameFeatures) -> Optional[np.ndarray]:
    """The 2x3 similarity transform taking the earlier frame's feature image onto the later one's, or None where too
    few matches agree on one (a cut, or frames without texture)."""
    if prev.des is None or cur.des is None or len(prev.kp) < MIN_INLIERS or len(cur.kp) < MIN_INLIERS:
        return None
    matches = cv2.BFMatcher(cv2.NORM_HAMMING, crossCheck=True).match(prev.des, cur.des)
    if len(matches) < MIN_INLIERS:
        return None
    src = np.float32([prev.kp[m.queryIdx].pt for m in matches])
    dst = np.float32([cur.kp[m.trainIdx].pt for m in matches])
    M, inl = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=3.0, maxIters=2000,
                                         confidence=0.995)
    if M is None or inl is None:
        return None
    n = int(inl.sum())
    if n < MIN_INLIERS or n < MIN_INLIER_SHARE * len(matches):
        return None
    return M


def shift_motion(prev: FrameFeatures, cur: FrameFeatures) -> np.ndarray:
    """The 2x3 pure translation that phase correlation finds between the two feature images (always one: on a cut it
    is meaningless, and the frames still differ after it; it covers the textureless pans ORB cannot match)."""
    win = cv2.createHanningWindow(prev.grey.shape[::-1], cv2.CV_32F)
    (dx, dy), _ = cv2.phaseCorrelate(prev.grey.astype(np.float32), cur.grey.astype(np.float32), win)
    return np.float32([[1, 0, dx], [0, 1, dy]])


def compensated_share(prev: FrameFeatures, cur: FrameFeatures, M: np.ndarray) -> Optional[float]:
    """The changed share after warping the earlier thumbnail by ``M`` (feature-image pixels), over the area it
    covers; None where it covers less than ``MIN_OVERLAP`` of the later frame."""
    # the transform in feature-image pixels, rescaled to thumbnail pixels (the two images differ in size per axis)
    sx, sy = THUMB[0] / prev.grey.shape[1], THUMB[1] / prev.grey.shape[0]
    S, Si = np.diag([sx, sy, 1.0]), np.diag([1 / sx, 1 / sy, 1.0])
    Mt = (S @ np.vstack([M, [0, 0, 1]]) @ Si)[:2]
    warped = cv2.warpAffine(prev.thumb.astype(np.uint8), Mt, THUMB, flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT)
    # the area the earlier frame covers after the warp, eroded by a pixel (interpolated edges)
    cover = cv2.warpAffine(np.full((THUMB[1], THUMB[0]), 255, np.uint8), Mt, THUMB, flags=cv2.INTER_NEAREST)
    mask = cv2.erode(cover, np.ones((3, 3), np.uint8)) > 0
    if mask.mean() < MIN_OVERLAP:
        return None
    return changed_share(warped, cur.thumb, mask)


def readings(prev: FrameFeatures, cur: FrameFeatures) -> tuple[float, float, bool]:
    """(raw, compensated, motion found) for one pair of consecutive sampled frames: ``compensated`` is the lower of
    the readings after the feature-matched motion (where one is believed) and after the phase-correlation shift."""
    raw = changed_share(prev.thumb, cur.thumb)
    M = camera_motion(prev, cur)
    got = [compensated_share(prev, cur, m) for m in ((M,) if M is not None else ()) + (shift_motion(prev, cur),)]
    got = [g for g in got if g is not None]
    if not got:
        return raw, raw, False
    return raw, min(raw, *got), M is not None


def pair_readings(frames) -> list[tuple[float, float, bool]]:
    """Readings of every consecutive pair of ``frames`` (RGB), in order."""
    orb = cv2.ORB_create(nfeatures=500)
    out, prev = [], None
    for f in frames:
        cur = FrameFeatures(np.asarray(f), orb)
        if prev is not None:
            out.append(readings(prev, cur))
        prev = cur
    return out


def is_cut(raw: float, compensated: float, raw_min: float, compensated_min: float) -> bool:
    """Pure: a cut where the frames differ (``raw``) and still differ once the camera's motion is undone."""
    return raw >= raw_min and compensated >= compensated_min
