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
``compensated`` is ``raw``: the pair is judged as before.

A global transform does not undo parallax (near and far things move at different speeds) or a large object passing
in front of the camera (a car crossing the view), which a real pan over parked cars showed (issue 23: the held-out
case ``cuts_moving_camera`` failed on such pairs). Two more readings of a sample pair were tried on the calibration
material (scripts/calibrate_cuts.py prints them; neither is in the rule, both lose more cuts than they save):
- ``local``: each cell of a grid over the later thumbnail matched on its own anywhere in the earlier one, the changed
  share after that per-cell alignment averaged (parallax moves cells their own way; but a cut's cells find look-alikes);
- ``colour``: the Bhattacharyya distance between the two frames' HSV histograms (a pan keeps the colours; so does a cut
  between two shots of one room).
A change between a near-black frame and a picture is a cut (a cut from black to a dark shot changes few pixels by
much): ``bright``, a frame's 95th percentile of grey, below ``CUT_BLACK_LEVEL`` is black.
None of the readings of two samples a second apart tells a cut between two shots of one room (a dialogue's
shot / reverse shot keeps the colours, and its pixels change about as much as a parallax pan's) from continuous motion.
What does is time: a cut happens between two consecutive native frames, motion spreads over all of them. So where the
video's native frames are at hand (``shot_ids(..., video_path=, frame_index=)``), every sampled interval the raw rule
flags is re-read frame by frame (one streamed decode pass over the flagged intervals only): ``abrupt``, the largest
``compensated`` reading between two consecutive native frames in it, must reach ``CUT_ABRUPT_FRACTION`` (a camera or
object moving a 25th of a second changes little once the camera's motion is undone; a cut changes as much as at 1 fps),
or the second must be a dissolve: every frame in it close to a mix of its two ends (``blend_residual`` at most
``CUT_BLEND_RESIDUAL``; a moved view is no mix of the two ends).
Without the native frames the sample pair is judged on ``raw`` and ``compensated``.
The thresholds (constants.CUT_*) are fitted on calibration material only (scripts/calibrate_cuts.py: pans, zooms,
parallax pans and passing occluders over calibration stills, at 1 fps and frame by frame, vs cuts between and within
calibration stills; black frames vs dark pictures)."""
from __future__ import annotations

from typing import NamedTuple, Optional

import cv2
import numpy as np

THUMB = (96, 54)          # colour thumbnail the changes are counted on (16:9; other aspects are squeezed alike)
FEATURE_WIDTH = 320       # grey image ORB reads (features on a 96 px thumbnail are too few)
CHANGE_LEVEL = 40         # grey levels: a pixel "changes" (as the raw rule always read it)
MIN_INLIERS = 12          # RANSAC inliers for a camera motion to be believed
MIN_INLIER_SHARE = 0.25   # ... and this share of the cross-checked matches
MIN_OVERLAP = 0.3         # the warped earlier frame must cover this share of the later one
GRID = (4, 3)             # cells (x, y) of the later thumbnail matched on their own (``local``)
HIST_BINS = (16, 8, 8)    # H, S, V bins of the colour histogram (``colour``)
BRIGHT_PERCENTILE = 95    # a frame's brightness reading (``bright``): this percentile of its grey thumbnail


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
        t8 = self.thumb.astype(np.uint8)
        hsv = cv2.cvtColor(t8, cv2.COLOR_RGB2HSV) if t8.ndim == 3 else cv2.cvtColor(
            cv2.cvtColor(t8, cv2.COLOR_GRAY2RGB), cv2.COLOR_RGB2HSV)
        self.hist = cv2.calcHist([hsv], [0, 1, 2], None, list(HIST_BINS), [0, 180, 0, 256, 0, 256])
        cv2.normalize(self.hist, self.hist, 1.0, 0.0, cv2.NORM_L1)
        g = cv2.cvtColor(t8, cv2.COLOR_RGB2GRAY) if t8.ndim == 3 else t8
        self.bright = float(np.percentile(g, BRIGHT_PERCENTILE))


class Reading(NamedTuple):
    """Every reading of one pair of consecutive samples (see the module's doc)."""
    raw: float
    compensated: float
    moved: bool
    local: float
    colour: float
    bright_prev: float
    bright_cur: float


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


def local_share(prev: FrameFeatures, cur: FrameFeatures) -> float:
    """The mean, over a GRID of cells of the later thumbnail, of the changed share between each cell and its best
    match (least squared colour difference) anywhere in the earlier thumbnail: parallax and a moving object shift
    parts of the frame each their own way, a cut leaves the cells nothing to match."""
    a = prev.thumb.astype(np.float32)
    b = cur.thumb.astype(np.float32)
    if a.ndim == 2:
        a, b = a[..., None], b[..., None]
    h, w = b.shape[:2]
    cw, chh = w // GRID[0], h // GRID[1]
    shares = []
    for gy in range(GRID[1]):
        for gx in range(GRID[0]):
            cell = b[gy * chh:(gy + 1) * chh, gx * cw:(gx + 1) * cw]
            res = cv2.matchTemplate(a, cell, cv2.TM_SQDIFF)
            _, _, (x, y), _ = cv2.minMaxLoc(res)
            shares.append(changed_share(a[y:y + chh, x:x + cw], cell))
    return float(np.mean(shares))


def colour_distance(prev: FrameFeatures, cur: FrameFeatures) -> float:
    """Bhattacharyya distance (0 same, 1 disjoint) between the two frames' HSV histograms."""
    return float(cv2.compareHist(prev.hist, cur.hist, cv2.HISTCMP_BHATTACHARYYA))


def full_reading(prev: FrameFeatures, cur: FrameFeatures) -> Reading:
    raw, comp, moved = readings(prev, cur)
    return Reading(raw, comp, moved, local_share(prev, cur), colour_distance(prev, cur), prev.bright, cur.bright)


def _consecutive(frames, read) -> list:
    """``read(prev, cur)`` of every consecutive pair of ``frames`` (RGB), in order (each frame's features once)."""
    orb = cv2.ORB_create(nfeatures=500)
    out, prev = [], None
    for f in frames:
        cur = FrameFeatures(np.asarray(f), orb)
        if prev is not None:
            out.append(read(prev, cur))
        prev = cur
    return out


def pair_signals(frames) -> list[Reading]:
    """Every reading of every consecutive pair of ``frames`` (RGB), in order."""
    return _consecutive(frames, full_reading)


def black_change(bright_prev: float, bright_cur: float, black_level: float) -> bool:
    """Pure: one frame near-black (even its bright parts dark), the other a picture."""
    return (bright_prev < black_level) != (bright_cur < black_level)


def cut_from_black(r: Reading, black_level: float) -> bool:
    return black_change(r.bright_prev, r.bright_cur, black_level)


def is_cut_reading(r: Reading, raw_min: float, compensated_min: float, local_min: float, colour_min: float,
                   black_level: float) -> bool:
    """Pure: a cut from / to black, or frames that differ on every reading (pixels, after the camera's global motion,
    after each cell's own motion, in colour distribution)."""
    return cut_from_black(r, black_level) or (is_cut(r.raw, r.compensated, raw_min, compensated_min)
                                              and r.local >= local_min and r.colour >= colour_min)


def pair_readings(frames) -> list[tuple[float, float, bool]]:
    """Readings of every consecutive pair of ``frames`` (RGB), in order."""
    return _consecutive(frames, readings)


def is_cut(raw: float, compensated: float, raw_min: float, compensated_min: float) -> bool:
    """Pure: a cut where the frames differ (``raw``) and still differ once the camera's motion is undone."""
    return raw >= raw_min and compensated >= compensated_min


def abrupt_reading(frames) -> float:
    """The largest ``compensated`` reading between two consecutive frames of ``frames`` (native rate, RGB): high at a
    cut, low for motion spread over the frames."""
    return max((r[1] for r in pair_readings(frames)), default=0.0)


def blend_residual(thumbs) -> float:
    """How far the frames between the first and the last of ``thumbs`` (consecutive native frames, colour thumbnails)
    are from mixes of those two: for each, the least-squares mix (1 - w) first + w last (w in [0, 1]), its mean absolute
    residual over the mean absolute difference of the two ends; the largest. About 0 for a dissolve (every frame is
    such a mix), large for motion (a moved view is no mix of the two ends). 1.0 where the ends barely differ."""
    a = np.asarray(thumbs[0], np.float32)
    d = np.asarray(thumbs[-1], np.float32) - a
    den = float(np.abs(d).mean())
    dd = float((d * d).sum())
    if den < 1.0 or dd <= 0:
        return 1.0
    worst = 0.0
    for f in thumbs[1:-1]:
        f = np.asarray(f, np.float32) - a
        w = min(max(float((f * d).sum()) / dd, 0.0), 1.0)
        worst = max(worst, float(np.abs(f - w * d).mean()) / den)
    return worst


def abrupt_readings(video_path: str, spans) -> dict:
    """(``abrupt_reading``, ``blend_residual``) of the native frames a..b of each span (a, b) of the video at
    ``video_path``, from one streamed decode pass over those frames only (decoded at the feature image's width).
    {(a, b): (abrupt, blend) or None where the frames did not all decode}."""
    from bench_assets.core.media import DecodeError, VideoSource
    spans = sorted({(int(a), int(b)) for a, b in spans})
    if not spans:
        return {}
    src = VideoSource(video_path)
    w, h = src.size
    size = (FEATURE_WIDTH, max(2, int(round(h * FEATURE_WIDTH / max(w, 1) / 2)) * 2))
    need = sorted({i for a, b in spans for i in range(a, min(b, src.n_frames - 1) + 1)})
    orb = cv2.ORB_create(nfeatures=500)
    pair = {}          # native i -> compensated reading between frames i - 1 and i
    last = {"i": None, "f": None}
    thumbs, blend = {}, {}    # the open spans' thumbnails; span -> blend_residual
    ends = {}
    for a, b in spans:
        ends.setdefault(b, []).append((a, b))

    def put(indices, frames):
        for i, f in zip(indices, frames):
            cur = FrameFeatures(np.asarray(f), orb)
            if last["i"] is not None and last["i"] == i - 1:
                pair[i] = readings(last["f"], cur)[1]
            last["i"], last["f"] = i, cur
            thumbs[i] = cur.thumb
            for a, b in ends.get(i, ()):
                if all(k in thumbs for k in range(a, b + 1)):
                    blend[(a, b)] = blend_residual([thumbs[k] for k in range(a, b + 1)])
            # keep only what a span still open may need (memory flat in the video's length)
            nxt = min([a for a, b in spans if b > i] or [i + 1])
            for k in [k for k in thumbs if k < nxt]:
                del thumbs[k]
    src.chunks(put, indices=need, chunk=8, size=size, name="narrativetrack cut check")
    try:
        src.run()
    except DecodeError:   # what decoded is read; the rest keeps the sampled judgement (the sampling pass reports it)
        pass
    # a span whose frames did not decode (a truncated file) keeps the sampled judgement: its reading is None
    return {(a, b): ((max(pair[i] for i in range(a + 1, b + 1)), blend.get((a, b), 1.0))
                     if all(i in pair for i in range(a + 1, b + 1)) else None) for a, b in spans}


def cut_flags(frames, raw_min: float, compensated_min: float, black_level: float,
              abrupt_min: Optional[float] = None, video_path: Optional[str] = None, frame_index=None,
              blend_max: Optional[float] = None) -> list[bool]:
    """Whether each consecutive pair of sampled ``frames`` is a cut. With ``video_path`` and ``frame_index`` (the
    samples' native indices) and ``abrupt_min``: a cut from / to black, or raw >= ``raw_min`` confirmed frame by frame
    (``abrupt`` >= ``abrupt_min``) or a dissolve (every frame between a mix of the two ends: ``blend_residual`` <=
    ``blend_max``). Without them (or where the native frames do not decode): the sampled rule (black, or ``raw``
    and ``compensated``; ``is_cut_reading`` with no ``local`` / ``colour`` floor)."""
    # only the readings the rule reads (``local`` / ``colour`` are the calibration script's, not computed here)
    sig = _consecutive(frames, lambda p, c: (readings(p, c), black_change(p.bright, c.bright, black_level)))
    flags = [black or is_cut(raw, comp, raw_min, compensated_min) for (raw, comp, _), black in sig]
    if video_path is None or frame_index is None or abrupt_min is None:
        return flags
    idx = [int(i) for i in frame_index]
    spans = {j: (idx[j], idx[j + 1]) for j, ((raw, _, _), black) in enumerate(sig) if raw >= raw_min and not black}
    got = abrupt_readings(video_path, spans.values())
    for j, span in spans.items():
        if got.get(span) is not None:
            abrupt, blend = got[span]
            flags[j] = abrupt >= abrupt_min or (blend_max is not None and blend <= blend_max)
    return flags
