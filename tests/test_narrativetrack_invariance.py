"""NarrativeTrack identities do not depend on the file's size or on what else the file holds (issue 23, item 3).

Pure and fast: synthetic detections with ReID / colour / face vectors go through ``stages.identities``.
* Fixed link thresholds: appending unrelated footage (another shot with other people whose pairs would move a
  threshold learned from the file) leaves every original row's identity and every merge and its margin unchanged.
* Relative face size: the same boxes and faces at 0.5x and 2x (frame height scaled too) give the same identities;
  with an absolute pixel limit the 0.5x copy loses the face that joins a person across an outfit change.
* Every row carries the signed margin of the nearest decision that touched it.
* The link thresholds are fitted on calibration sources only and measured on validation ones.
"""
import json

import numpy as np
import pytest

from bench_assets.core import footage as F
from bench_assets.narrativetrack import calibration, constants, pipeline, stages

LINKS = {"reid": 0.8, "colour": 0.7, "source": "test"}


def unit(*v):
    v = np.asarray(v, float)
    return (v / np.linalg.norm(v)).tolist()


def colour(hot: int):
    h = np.full(12, 0.01)
    h[hot] = 1.0
    return (h / h.sum()).tolist()


def world(scale: float = 1.0, extra: bool = False):
    """Person A (red) in samples 0-3, then A again after a cut in another outfit (blue, other ReID look) in samples
    6-9: only the face joins the two; person B (green) beside A in samples 0-3. With ``extra``: an unrelated shot
    (samples 12-17) of three look-alike people standing close together."""
    dets, tracks, reid, faces, cols, shots = [], [], [], [], [], []
    face_a, face_b = unit(1, 0.1, 0, 0), unit(0, 0, 1, 0.1)

    def add(sample, box, tid, emb, col, face=None, face_h=20.0):
        b = [x * scale for x in box]
        dets.append({"sample": sample, "box": b, "score": 0.9})
        tracks.append(tid)
        reid.append(emb)
        cols.append(col)
        fb = None if face is None else [b[0], b[1], b[0] + face_h * scale, b[1] + face_h * scale]
        faces.append({"face_embedding": face, "face_box": fb})
    for k in range(4):
        add(k, [100 + k, 100, 160 + k, 260], 0, unit(1, 0, 0, 0.05 * k), colour(0), face_a)
        add(k, [300, 100, 360, 260], 1, unit(0, 1, 0, 0.05 * k), colour(4), face_b)
    for k in range(6, 10):
        add(k, [120 + k, 100, 180 + k, 260], 2, unit(0, 0, 1, 0.05 * k), colour(8), face_a)
    shots = [0] * 6 + [1] * 4
    if extra:
        for k in range(12, 18):
            for j in range(3):
                add(k, [50 + 70 * j, 80, 110 + 70 * j, 240], 3 + j, unit(0.5, 0.5, 0.5, 0.1 * j + 0.01 * k),
                    colour(2), None)
        shots += [1, 1] + [2] * 6
    return dets, tracks, reid, faces, cols, shots


def run(scale=1.0, extra=False, frame_height=576.0, links=LINKS):
    """(identity per row: every person, not only the 4 main characters, as the validity check reads it; info)"""
    dets, tracks, reid, faces, cols, shots = world(scale, extra)
    _, info = stages.identities(dets, tracks, reid, faces, 0.8, 0.45, shots=shots, sample_fps=1.0, colours=cols,
                                links=links, frame_height=None if frame_height is None else frame_height * scale)
    return [info["cluster_of"].get(i) for i in range(len(dets))], info


def test_unrelated_footage_in_the_file_changes_no_decision():
    ids, info = run()
    ids2, info2 = run(extra=True)
    n = len(ids)
    assert ids2[:n] == ids
    # the merges taken are the same, with the same margins (how near the nearest *other* identity is may change:
    # the file now holds more people)
    merges = lambda inf: sorted((d["op"], d["margin"]) for d in inf["face_log"] + inf["reid_log"]  # noqa: E731
                                if d["op"] in ("merge", "reid_merge") and max(d.get("tracklets", d.get("a", [0]))) < 3)
    assert merges(info2) == merges(info) and merges(info)
    assert info2["link_threshold"] == info["link_threshold"] == LINKS["reid"]
    assert info2["colour_threshold"] == LINKS["colour"]
    # A (both outfits, joined by the face) and B are two people
    assert ids[0] == ids[8 + 0] != ids[1] and len({ids[0], ids[1]}) == 2


@pytest.mark.parametrize("scale", [0.5, 2.0])
def test_same_identities_at_half_and_twice_the_size(scale):
    ids, info = run()
    ids_s, info_s = run(scale=scale)
    assert ids_s == ids and info_s["decision_margin"] == info["decision_margin"]
    # the 20 px faces become 10 px at 0.5x: an absolute pixel limit (15 px) would drop them and split A in two
    if scale == 0.5:
        ids_abs, _ = run(scale=scale, frame_height=None)
        assert ids_abs[0] != ids_abs[8], "without the frame height the absolute limit applies"


def test_every_row_says_how_close_its_identity_was():
    ids, info = run()
    m, what = info["decision_margin"], info["decision"]
    assert len(m) == len(ids) and all(x is not None for x in m)
    # A's second outfit joined A by the face: a positive face-merge margin (cosine 1 - threshold .45)
    assert what[8] == "face merge" and m[8] == pytest.approx(1 - 0.45, abs=1e-3)
    # a pure log: the nearest decision of each row wins, a refusal is negative
    marg, dec = stages.row_margins([0, 1, 2], [0, 0, 2], [{"from": 0, "to": 1, "margin": 0.3}],
                                   [{"op": "reid_kept_apart", "a": [0], "b": [5], "margin": -0.5}],
                                   [{"op": "merge", "margin": 0.2, "tracklets": [2]}])
    assert marg == [0.3, 0.3, 0.2] and dec == ["stitch link", "stitch link", "face merge"]
    marg, dec = stages.row_margins([0], [0], [], [{"op": "reid_kept_apart", "a": [0], "b": [5], "margin": -0.05}], [])
    assert marg == [-0.05] and dec == ["reid kept apart"]


def test_link_thresholds_are_fitted_on_calibration_and_measured_on_validation():
    doc = calibration.link_thresholds_doc()
    assert doc is not None, "run scripts/calibrate_links.py"
    assert doc["fitted_on"] and all(F.split_of(s) == F.CALIBRATION for s in doc["fitted_on"])
    held = doc.get("held_out")
    assert held and all(F.split_of(s) == F.VALIDATION for s in held["sources"])
    for k in ("colour", "reid"):
        assert 0 < doc[k]["threshold"] < 1 and doc[k]["positives"] >= constants.LINK_MIN_PAIRS
    got = calibration.link_thresholds(doc["reid_model"])
    assert got["reid"] == doc["reid"]["threshold"] and got["colour"] == doc["colour"]["threshold"]
    other = calibration.link_thresholds("osnet_x1_0 (another model)")
    assert other["reid"] is None and other["colour"] == doc["colour"]["threshold"]
    # the pooled rule itself: the midpoint of a clean gap
    assert pipeline.youden_threshold([0.9, 0.8], [0.3, 0.5])[0] == pytest.approx(0.65)
    json.dumps(doc)


def test_clustering_threshold_is_fitted_only_with_enough_calibration_pairs(tmp_path):
    """REID_THRESHOLD['offline'] (tracklet clustering) is fitted by scripts/calibrate_links.py on the calibration
    videos' ground-truth tracklet pairs, and used by the pipeline only where both sides held LINK_MIN_PAIRS pairs;
    otherwise the file says it was not fitted and the pipeline keeps the profile's hand value."""
    import importlib.util
    from pathlib import Path
    spec = importlib.util.spec_from_file_location(
        "calibrate_links", Path(__file__).resolve().parents[1] / "scripts" / "calibrate_links.py")
    cl = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(cl)
    n = constants.LINK_MIN_PAIRS
    fit = cl.cluster_fit([0.9 + 0.001 * i for i in range(n)], [0.5 + 0.001 * i for i in range(n)], [0.9], [0.5])
    assert fit["fitted"] and 0.509 < fit["threshold"] < 0.9 and fit["tpr"] == 1.0 and fit["fpr"] == 0.0
    few = cl.cluster_fit([0.9] * (n - 1), [0.5] * n, [0.9], [0.5])
    assert not few["fitted"] and few["threshold"] == constants.REID_THRESHOLD["offline"]
    doc = calibration.link_thresholds_doc()
    model = doc["reid_model"]
    for entry, want in ((fit, fit["threshold"]), (few, None)):
        p = tmp_path / "links.json"
        p.write_text(json.dumps({**doc, "cluster": entry}))
        assert calibration.link_thresholds(model, p)["cluster"] == want
        assert calibration.link_thresholds("osnet_x1_0 (another model)", p)["cluster"] is None
    # the committed file: fitted on calibration videos, with its pair counts per video
    assert set(doc["cluster"]["per_video"]) == set(doc["fitted_on"])
    got = calibration.link_thresholds(model)["cluster"]
    assert got == (doc["cluster"]["threshold"] if doc["cluster"]["fitted"] else None)
    # tracklet pairs: cannot-link (a shared frame) and the colour check leave a pair out
    emb = {0: [1.0, 0.0], 1: [0.9, 0.1], 2: [0.0, 1.0], 3: [0.1, 1.0]}
    frames = {0: {0}, 1: {1}, 2: {0}, 3: {2}}
    person = {0: "a", 1: "a", 2: "b", 3: "b"}
    pos, neg = cl.tracklet_pairs(person, emb, frames, None, 0.0)
    assert len(pos) == 2 and len(neg) == 3                       # 0-2 share frame 0
    col = {0: colour(0), 1: colour(0), 2: colour(5), 3: colour(5)}
    pos, neg = cl.tracklet_pairs(person, emb, frames, col, 0.7)
    assert len(pos) == 2 and neg == []
