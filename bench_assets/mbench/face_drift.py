"""A face that drifts into another person's within one continuous shot (pure builder, for the validity case
``within_track_drift``).

The paper's identity (Eq. 6) reads each face track's consistency with its own centroid. A person replaced between
shots starts a track of their own and is invisible to it (``changed_world``'s documented limitation); a face that
turns gradually into someone else's inside one shot is what it is built to see: consecutive faces stay close, so
the tracker keeps one track, and the track's early and late faces belong to different people.

Each frame of a real clip keeps its own pixels outside the face. Inside a feathered ellipse around the clip's face,
a donor face is laid over it: the donor photograph is warped onto the frame by the similarity transform from its
five face landmarks to the frame face's landmarks, its colour is matched to the frame face's (CIELAB mean and
spread inside the ellipse, so no seam or tint tells the faces apart), and it is blended in with a weight that
rises linearly from 0 to 1 over the ramp. The control runs the same machinery with the clip's own face (one of its
frames) as the donor: the same warp, colour match, blend and ramp, the same person throughout.

Landmarks are YuNet's five points (right eye, left eye, nose tip, right and left mouth corner) as rows of
``[x, y, w, h, 10 landmark coordinates, score]``; the caller detects them (this module does no model work).
"""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

FEATHER = 0.12       # the ellipse's edge softening, a Gaussian sigma as a share of the face box's width
ELLIPSE = (0.50, 0.55)   # the ellipse's half-axes as shares of the face box's width and height (centred in the box)


def landmarks(row: np.ndarray) -> np.ndarray:
    """The five (x, y) landmark points of a YuNet row."""
    return np.asarray(row[4:14], np.float32).reshape(5, 2)


def ramp(n: int, start: int, end: int) -> np.ndarray:
    """The donor's weight per frame: 0 before ``start``, rising linearly to 1 at ``end - 1``, 1 after."""
    t = np.arange(n, dtype=np.float64)
    return np.clip((t - start) / max(1, end - 1 - start), 0.0, 1.0)


def face_mask(row: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    """A feathered ellipse (float32 in [0, 1], shape ``hw``) centred in the face box of a YuNet row."""
    x, y, w, h = (float(v) for v in row[:4])
    m = np.zeros(hw, np.float32)
    cv2.ellipse(m, (int(round(x + w / 2)), int(round(y + h / 2))),
                (max(1, int(round(ELLIPSE[0] * w))), max(1, int(round(ELLIPSE[1] * h)))), 0, 0, 360, 1.0, -1)
    return cv2.GaussianBlur(m, (0, 0), max(0.5, FEATHER * w))


def warp_donor(donor: np.ndarray, donor_row: np.ndarray, target_row: np.ndarray, hw: tuple[int, int]) -> np.ndarray:
    """The donor photograph (RGB uint8) warped onto a frame of size ``hw`` so its face lands on the target face:
    the least-squares similarity transform (rotation, uniform scale, shift) between the two five-point sets."""
    M, _ = cv2.estimateAffinePartial2D(landmarks(donor_row), landmarks(target_row), method=cv2.LMEDS)
    if M is None:
        raise ValueError("no similarity transform between the donor's and the frame's face landmarks")
    return cv2.warpAffine(donor, M, (hw[1], hw[0]), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def match_colour(src: np.ndarray, ref: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``src`` (RGB uint8) with its CIELAB mean and spread inside ``mask`` (> .5) set to ``ref``'s there. A channel
    with (almost) no spread in ``src`` (a grey photograph's a and b) is only shifted."""
    inside = mask > 0.5
    if not inside.any():
        return src
    s = cv2.cvtColor(src, cv2.COLOR_RGB2LAB).astype(np.float32)
    r = cv2.cvtColor(ref, cv2.COLOR_RGB2LAB).astype(np.float32)
    for c in range(3):
        ms, ss = s[..., c][inside].mean(), s[..., c][inside].std()
        mr, sr = r[..., c][inside].mean(), r[..., c][inside].std()
        gain = sr / ss if ss > 1.0 else 1.0
        s[..., c] = (s[..., c] - ms) * gain + mr
    return cv2.cvtColor(np.clip(s, 0, 255).astype(np.uint8), cv2.COLOR_LAB2RGB)


def cross_fade(frames: np.ndarray, rows: Sequence[np.ndarray], donor: np.ndarray, donor_row: np.ndarray,
               weights: Sequence[float]) -> np.ndarray:
    """``frames`` (RGB uint8 [T, H, W, 3]) with the donor face blended over each frame's face (``rows``: that
    frame's YuNet row) at ``weights[t]``: the frame's own pixels where the weight is 0, the colour-matched donor face
    inside the ellipse where it is 1."""
    if not (len(frames) == len(rows) == len(weights)):
        raise ValueError(f"{len(frames)} frames, {len(rows)} face rows and {len(weights)} weights differ")
    hw = frames.shape[1:3]
    out = []
    for f, row, a in zip(frames, rows, weights):
        if a <= 0:
            out.append(f.copy())
            continue
        m = face_mask(row, hw)
        warped = match_colour(warp_donor(donor, donor_row, row, hw), f, m)
        k = (float(a) * m)[..., None]
        out.append(np.clip(f.astype(np.float32) * (1 - k) + warped.astype(np.float32) * k + 0.5, 0, 255)
                   .astype(np.uint8))
    return np.stack(out)
