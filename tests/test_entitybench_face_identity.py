"""Issue 12 item 3 for EntityBench: ``cs_face_identity`` (YuNet + SFace through the ``face`` slot) beside the
paper's DINOv2 ``cs_face``, on real footage: a shot replaced by another person's drops it by >= 0.10."""
import cv2
import numpy as np
import pandas as pd
import pytest

from bench_assets.core.footage import require_footage
from bench_assets.core.media import decode_video
from bench_assets.entitybench import consistency as CS
from bench_assets.entitybench import dataset as D


class _Clip:
    def __init__(self, frame):
        self.frames = frame[None]


def _episode(n):
    return D.parse_episode({"episode_id": "e0001", "entities": [{"id": "c1", "type": "character", "name": "Ann",
                                                                 "description": "a woman"}],
                            "shots": [{"index": k, "cut": True, "entities": ["c1"], "action": "talks"}
                                      for k in range(1, n + 1)]})


def _grounding(boxes):
    return pd.DataFrame([{"shot": k, "entity_id": "c1", "entity_type": "character", "status": "present",
                          "crop_id": f"crop{k}", "frame_index": 0, "source_sha256": "x", "ambiguous": False,
                          "reason": None, "x1": b[0], "y1": b[1], "x2": b[2], "y2": b[3]}
                         for k, b in boxes.items()])


def _score(clips, boxes, face):
    rows = CS.face_identity_rows("g", _episode(len(clips)), _grounding(boxes), {}, clips, face, None, "YuNet+SFace")
    rec = next(r for r in rows if r["level"] == "item" and r["metric_id"] == "cs_face_identity")
    return rec, [r for r in rows if r["level"] == "appearance" and r["metric_id"] == "cs_face_identity"]


def test_face_identity_drops_when_a_shot_shows_another_person():
    paths = require_footage("carphone_pristine.mp4", "messi5.jpg")
    from bench_resources.models import ModelRegistry
    face = ModelRegistry(profile="offline").slot("face")
    talk = decode_video(paths["carphone_pristine.mp4"]).frames
    h, w = talk.shape[1:3]
    other = cv2.imread(str(paths["messi5.jpg"]))[..., ::-1].copy()
    whole = (0.0, 0.0, float(w), float(h))
    same_clips = {k: _Clip(talk[i]) for k, i in zip((1, 2, 3, 4), (0, 30, 60, 90))}
    same, rows = _score(same_clips, {k: whole for k in same_clips}, face)
    swap_clips = {**same_clips, 4: _Clip(other)}
    swapped, _ = _score(swap_clips, {1: whole, 2: whole, 3: whole, 4: (190.0, 60.0, 300.0, 200.0)}, face)
    # frame 0 at the clip's native 176x144 is below the detector-confidence floor: a low-quality skip in both
    assert same["n_eval"] == swapped["n_eval"] == 3 and same["n_skipped"] == swapped["n_skipped"] == 1
    assert same["value"] - swapped["value"] >= 0.10, (same["value"], swapped["value"])
    assert all('"embedder": "YuNet+SFace"' in r["detail"] for r in rows)  # the embedder on every row


def test_no_face_is_a_counted_skip_and_no_model_is_the_evaluators():
    blank = {k: _Clip(np.full((64, 64, 3), 120, np.uint8)) for k in (1, 2)}
    box = {k: (0.0, 0.0, 64.0, 64.0) for k in (1, 2)}

    class NoFace:
        def detect(self, images):
            import supervision as sv
            return [sv.Detections.empty() for _ in images]

        def faces(self, image, scale=1.0, offset=(0.0, 0.0)):
            return []

    rec, rows = _score(blank, box, NoFace())
    assert rec["value"] is None and rec["n_skipped"] == 2 and "no face" in rec["reason"]
    rows = CS.face_identity_rows("g", _episode(2), _grounding(box), {}, blank, None, "slot 'face' missing", "-")
    rec = next(r for r in rows if r["level"] == "item" and r["metric_id"] == "cs_face_identity")
    assert rec["value"] is None and rec["n_failed_evaluator"] == 2 and rec["n_skipped"] == 0
