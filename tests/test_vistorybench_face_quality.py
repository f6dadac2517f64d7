"""ViStoryBench face quality per crop (issue 23): a heavily blurred real face is reported as low quality (its own
count and reason, and a value over good-quality faces only beside the paper's CIDS, which stays as defined); a sharp
face of the same man is scored as before.

Real footage: the man of carphone_pristine.mp4 (a validation clip; nothing here is fitted on it), frames 0 and 60
upscaled 2x; the offline face model (YuNet + SFace)."""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest

from bench_assets.core import footage
from bench_assets.vistorybench import characters, dataset
from bench_assets.vistorybench.constants import STARRED_SCALE
from bench_assets.vistorybench.scores import character_rows

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def faces():
    try:
        path = footage.footage_path("carphone_pristine.mp4")
    except footage.FootageMissing as e:
        pytest.skip(str(e))
    from bench_resources.models import ModelRegistry
    model = ModelRegistry(profile="offline").slot("face")
    cap, frames = cv2.VideoCapture(str(path)), []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(cv2.resize(f[..., ::-1], None, fx=2, fy=2, interpolation=cv2.INTER_CUBIC))
    ref = characters.largest_face(model, frames[60])
    sharp = characters.largest_face(model, frames[0])
    blurred = characters.largest_face(model, np.ascontiguousarray(cv2.GaussianBlur(frames[0], (0, 0), 6)))
    return model, ref, sharp, blurred


def test_quality_record_tells_a_blurred_face_from_a_sharp_one(faces):
    _, ref, sharp, blurred = faces
    assert sharp[0] is not None and blurred[0] is not None          # the detector still finds the blurred face
    assert characters.low_quality(sharp[1]) == [] and sharp[1]["blur"] > 50
    low = characters.low_quality(json.dumps(blurred[1]))
    assert low and any("blur" in w for w in low), blurred[1]
    # what the record prevents: the blurred face of the same man reads as someone else by identity alone
    assert float(blurred[0] @ ref[0]) < 0.363 < float(sharp[0] @ ref[0])


def _rows(ref, crops, with_quality=True):
    story = dataset.load_story(ROOT / "data" / "vistorybench" / "01")
    refs = pd.DataFrame([{"character": "Ellen", "ref_index": 0, "embedding": list(ref[0]), "reason": None,
                          "mirror_embedding": None}])
    matches = [{"kind": "shot", "shot": s.index, "n_detections": 1, "reason": None, "matched": None, "crop_id": None,
                "source_sha256": None, "box": None, "match_score": None, "face": None, "face_quality": None,
                "features": None} for s in story.shots]
    for shot, (vec, q) in crops:
        matches.append({"kind": "crop", "shot": shot, "n_detections": None, "reason": None, "matched": "Ellen",
                        "crop_id": f"c{shot}", "source_sha256": "s", "box": json.dumps([0, 0, 10, 10]),
                        "match_score": float(vec @ ref[0]), "face": list(vec),
                        "face_quality": json.dumps(q) if q is not None else None, "features": None})
    m = pd.DataFrame(matches)
    if not with_quality:
        m = m.drop(columns=["face_quality"])
    rows = pd.DataFrame(character_rows("g", story, "en", refs, m, [1, 2, 3, 4, 5, 6], True))
    return rows[rows.entity_id.eq("Ellen") | rows.level.eq("item")]


def test_a_low_quality_face_is_counted_apart_beside_the_papers_value(faces):
    _, ref, sharp, blurred = faces
    rows = _rows(ref, [(1, sharp), (2, blurred)])
    ch = rows[(rows.level == "character") & (rows.metric_id == "cids_cross")].iloc[0]
    # the paper's CIDS reads every matched crop and stays as defined (the same as without the quality record)
    old = _rows(ref, [(1, sharp), (2, blurred)], with_quality=False)
    old_v = old[(old.level == "character") & (old.metric_id == "cids_cross")]["value"].iloc[0]
    assert ch["value"] == pytest.approx(old_v)
    # ... the blurred face is counted apart with its reason, and the good-faces-only value reads only the sharp
    # face: well above the paper's value, which the blurred face drags down as if it were another person
    d = json.loads(ch["detail"])
    assert d["n_low_quality"] == 1 and d["low_quality_crops"]["c2"].startswith("blur")
    assert d["cids_cross_good_faces_only"] == pytest.approx(float(sharp[0] @ ref[0]) * STARRED_SCALE, abs=1e-4)
    assert d["cids_cross_good_faces_only"] > ch["value"] + 0.2 * STARRED_SCALE
    low = rows[(rows.level == "crop") & (rows.metric_id == "cids_cross") & rows["reason"].notna()]
    assert list(low["crop_id"]) == ["c2"] and low["reason"].iloc[0].startswith("low-quality face: blur")
    assert json.loads(low["detail"].iloc[0])["face_quality"]["low"]
    item = rows[(rows.level == "item") & (rows.metric_id == "cids_cross")].iloc[0]
    assert json.loads(item["detail"])["n_low_quality"] == 1


def test_a_character_seen_only_through_low_quality_faces_has_no_good_faces_value(faces):
    _, ref, _, blurred = faces
    rows = _rows(ref, [(2, blurred)])
    ch = rows[(rows.level == "character") & (rows.metric_id == "cids_cross")].iloc[0]
    d = json.loads(ch["detail"])
    assert d["cids_cross_good_faces_only"] is None and d["n_low_quality"] == 1 and d["crop_ids"] == ["c2"]
    assert ch["value"] == pytest.approx(float(blurred[0] @ ref[0]) * STARRED_SCALE, abs=1e-4)   # the paper's


def test_a_searched_face_character_never_matched_still_counts_zero(faces):
    """The quality record changes nothing for a character with no matched crop (protocol 1.3: searched, never
    matched -> 0); an empty selection must not drop the table's columns."""
    _, ref, _, _ = faces
    rows = _rows(ref, [])
    ch = rows[(rows.level == "character") & (rows.metric_id == "cids_cross")].iloc[0]
    assert ch["value"] == 0.0
    item = rows[(rows.level == "item") & (rows.metric_id == "cids_cross")].iloc[0]
    assert json.loads(item["detail"])["n_low_quality"] == 0
