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
    frames = faces_frames()
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
    # the reference carries its own quality record, as vistorybench_references writes it (code version 3)
    refs = pd.DataFrame([{"character": "Ellen", "ref_index": 0, "embedding": list(ref[0]), "reason": None,
                          "mirror_embedding": None, "face_quality": json.dumps(ref[1])}])
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


# ----------------------------------------------------------------------------------------- reference side, board

def _ellen_only_story(tmp_path, sharp_ref: np.ndarray, blurred_ref: np.ndarray) -> Path:
    """Story 01 with Ellen (realistic human) the only character on stage, her two references replaced by the
    carphone man: 00 sharp (frame 60), 01 the same frame blurred (Gaussian sigma 6)."""
    d = tmp_path / "data" / "vistorybench" / "01"
    import shutil
    shutil.copytree(ROOT / "data" / "vistorybench" / "01", d)
    raw = json.loads((d / "story.json").read_text(encoding="utf-8-sig"))
    for shot in raw["Shots"]:
        shot["Characters Appearing"] = {lang: [n for n in names if n == raw["Characters"]["Ellen"][f"name_{lang}"]]
                                        for lang, names in shot["Characters Appearing"].items()}
    (d / "story.json").write_text(json.dumps(raw, ensure_ascii=False), encoding="utf-8")
    for name, im in (("00.jpg", sharp_ref), ("01.jpg", blurred_ref)):
        cv2.imwrite(str(d / "image" / "Ellen" / name), np.ascontiguousarray(im[..., ::-1]),
                    [cv2.IMWRITE_JPEG_QUALITY, 95])
    return d


@pytest.fixture(scope="module")
def reference_world(faces, tmp_path_factory):
    """vistorybench_story + vistorybench_references materialised (real Dagster, offline profile) on that story."""
    from dagster import instance_for_test, materialize
    from bench_assets.vistorybench.input_assets import vistorybench_references, vistorybench_story
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    model, ref, sharp, blurred = faces
    frames = faces_frames()
    tmp = tmp_path_factory.mktemp("vsq")
    d = _ellen_only_story(tmp, frames[60], cv2.GaussianBlur(frames[60], (0, 0), 6))
    story = dataset.load_story(d)
    paths = BenchPaths(data_root=str(tmp / "data"), generators_root=str(tmp / "data" / "generators"))
    resources = build_resources(paths=paths, store_root=str(tmp / "store"))
    from bench_assets.vistorybench.wiring import P
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(P.items.name, ["01"])
        assert materialize([vistorybench_story, vistorybench_references], partition_key="01", instance=instance,
                           resources=resources).success
    refs = resources["store"].query("SELECT * FROM vistorybench_references")
    return story, refs


def faces_frames() -> list[np.ndarray]:
    """The carphone clip's frames, RGB, upscaled 2x (its faces are small)."""
    path = footage.footage_path("carphone_pristine.mp4")
    cap, frames = cv2.VideoCapture(str(path)), []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(cv2.resize(f[..., ::-1], None, fx=2, fy=2, interpolation=cv2.INTER_CUBIC))
    return frames


def _ellen_rows(story, refs: pd.DataFrame, crops) -> pd.DataFrame:
    matches = [{"kind": "shot", "shot": s.index, "n_detections": 1, "reason": None, "matched": None,
                "crop_id": None, "source_sha256": None, "box": None, "match_score": None, "face": None,
                "face_quality": None, "features": None} for s in story.shots]
    for shot, (vec, q) in crops:
        matches.append({"kind": "crop", "shot": shot, "n_detections": None, "reason": None, "matched": "Ellen",
                        "crop_id": f"c{shot}", "source_sha256": "s", "box": json.dumps([0, 0, 10, 10]),
                        "match_score": 0.5, "face": list(vec), "face_quality": json.dumps(q), "features": None})
    from bench_assets.core.tables import metric_frame
    from bench_assets.vistorybench.scores import with_evaluator_counts
    rows = metric_frame(character_rows("g", story, "en", refs, pd.DataFrame(matches), [1, 2, 3, 4, 5, 6], True))
    return with_evaluator_counts(rows, [])


def test_a_blurred_reference_is_recorded_as_low_quality_and_set_aside_by_the_addition(faces, reference_world):
    _, _, sharp, _ = faces
    story, refs = reference_world
    ellen = refs[refs.character == "Ellen"].sort_values("ref_index")
    q = [json.loads(x) for x in ellen["face_quality"]]
    # the asset keeps a record per reference face: the sharp one passes, the blurred one is below the blur floor
    assert characters.low_quality(q[0]) == [] and q[0]["blur"] > 50, q[0]
    assert any(w.startswith("blur") for w in characters.low_quality(q[1])), q[1]
    assert ellen["embedding"].notna().all()          # still a face, still embedded: the paper reads it
    assert refs.loc[refs.character != "Ellen", "face_quality"].isna().all()   # features space: no face record
    rows = _ellen_rows(story, refs, [(1, sharp)])
    ch = rows[(rows.level == "character") & (rows.metric_id == "cids_cross")].iloc[0]
    d = json.loads(ch["detail"])
    assert d["n_low_quality_references"] == 1 and d["low_quality_references"]["1"].startswith("blur")
    assert d["n_low_quality"] == 0
    R = np.stack([np.asarray(v, np.float32) for v in ellen["embedding"]])
    # the paper's value reads both references (the blurred one drags it down) ...
    assert ch["value"] == pytest.approx(float((R @ sharp[0]).mean()) * STARRED_SCALE, abs=1e-3)
    # ... the addition only the sharp one, so it is the sharp face against the sharp reference
    add = rows[(rows.level == "character") & (rows.metric_id == "cids_cross_good_faces_only")].iloc[0]
    assert add["value"] == pytest.approx(float(R[0] @ sharp[0]) * STARRED_SCALE, abs=1e-3)
    assert add["value"] > ch["value"] + 5
    item = rows[(rows.level == "item") & (rows.metric_id == "cids_cross_good_faces_only")].iloc[0]
    assert item["value"] == pytest.approx(add["value"]) and json.loads(item["detail"])["n_low_quality_references"] == 1


def _board(story, rows: pd.DataFrame) -> pd.DataFrame:
    from bench_assets.vistorybench import board as B
    records = rows[rows.level == "item"].copy()
    chars = rows[rows.level == "character"].copy()
    stories = pd.DataFrame({"story_id": [story.story_id], "lite": [True], "loaded": [True],
                            "n_shots": [len(story.shots)]})
    return B.leaderboard(records, stories, pd.DataFrame(), {}, story_defs={story.story_id: story}, characters=chars)


def test_good_faces_only_is_an_addition_on_the_board_with_its_counts(faces, reference_world, capsys):
    from bench_assets import cli
    from bench_assets.core.board_text import board_markdown
    from bench_assets.vistorybench.metric_specs import METRICS
    _, _, sharp, blurred = faces
    story, refs = reference_world
    board = _board(story, _ellen_rows(story, refs, [(1, sharp), (2, blurred)]))
    full = board[board.slice == "full"].set_index("metric_id")
    for mid in ("cids_cross_good_faces_only", "cids_self_good_faces_only"):
        assert METRICS[mid].addition and METRICS[mid].paper_id is None
        assert bool(full.loc[mid, "addition"]) and pd.notna(full.loc[mid, "value"])
        d = json.loads(full.loc[mid, "detail"])
        assert (d["n_low_quality"], d["n_low_quality_references"]) == (1, 1)
    assert not full.loc["cids_cross", "addition"] and json.loads(full.loc["cids_cross", "detail"])["n_low_quality"] == 1
    # the addition reads the sharp face against the sharp reference only; the paper's value reads all four pairs
    assert full.loc["cids_cross_good_faces_only", "value"] > full.loc["cids_cross", "value"] + 20
    assert full.loc["cids_self_good_faces_only", "value"] == pytest.approx(100.0)      # one good face
    # the text board marks it as an addition (and only it), with the legend line
    md = board_markdown(board, {"slice": "full"})
    line = {ln.split("|")[1].strip(): ln.split("|")[2].strip() for ln in md.splitlines()
            if ln.startswith("| cids")}
    assert line["cids_cross_good_faces_only"].endswith("+") and "+" not in line["cids_cross"]
    assert "+ an addition of this platform" in md
    # the metric registry lists them as additions
    assert cli.main(["metrics", "--benchmark", "vistorybench"]) == 0
    text = capsys.readouterr().out
    listed = [ln for ln in text.splitlines() if "good_faces_only" in ln]
    assert len(listed) == 2 and all(" addition " in ln for ln in listed), listed


def test_no_good_face_gives_none_with_its_reason_on_the_board(faces, reference_world):
    _, _, _, blurred = faces
    story, refs = reference_world
    rows = _ellen_rows(story, refs, [(2, blurred), (3, blurred)])
    item = rows[(rows.level == "item") & (rows.metric_id == "cids_cross_good_faces_only")].iloc[0]
    assert pd.isna(item["value"]) and item["n_skipped"] == 1
    assert "all 2 matched faces are below the quality floors (blur" in item["reason"]
    paper = rows[(rows.level == "item") & (rows.metric_id == "cids_cross")].iloc[0]
    assert pd.notna(paper["value"])                   # the paper's value reads them all the same
    board = _board(story, rows)
    cell = board[(board.slice == "full") & (board.metric_id == "cids_cross_good_faces_only")].iloc[0]
    assert pd.isna(cell["value"]) and "below the quality floors" in cell["reason"] and bool(cell["addition"])
    assert json.loads(cell["detail"])["n_low_quality"] == 2
    # a character never matched still counts 0 in the addition, as in the paper (absence is not a quality question)
    none = _ellen_rows(story, refs, [])
    assert none[(none.level == "item") & (none.metric_id == "cids_cross_good_faces_only")]["value"].iloc[0] == 0.0
