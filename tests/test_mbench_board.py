"""MBench's board in the common schema (bench_assets/mbench/board.py): S averages over every triggered case, a
dimension M-Score needs all its sub-dimensions, the identity addition stays out of the paper's cells, and the
materialised board of the embedded data has a spec for every id and a substitute mark on every substituted cell."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from bench_assets.core.metric_spec import check_board, detail_of
from bench_assets.mbench import board as mboard
from bench_assets.mbench import metrics
from bench_assets.mbench.metric_specs import (IDENTITY_FIRST_APPEARANCE, METRICS, POSE_BOX_STAND_IN, label_text,
                                              slots_used)
from bench_resources.models.specs import SLOTS
from tests.support.mbench import CASES, _row, _scores  # noqa: F401


def _cell(b: pd.DataFrame, g: str, metric: str, mode: str = "A") -> pd.Series:
    return b[(b.generator == g) & (b.metric_id == metric) & (b.slice == mode)].iloc[0]


def test_reliability_counts_a_triggered_case_without_a_value():
    """The paper's S_k divides by every triggered case: a generator that loses the face in one case (no track with
    two detections: no value, not the evaluator's failure) scores that case 0, so it cannot outrank one that kept
    the face and scored lower where the other lost it."""
    scores = _scores({"loses": [0.9, 0.8, None, 0.7], "keeps": [0.9, 0.8, 0.5, 0.7]})
    b = mboard.leaderboard(scores, CASES, ["keeps", "loses"])
    d = detail_of(b)
    loses, keeps = _cell(b, "loses", "m_score.identity"), _cell(b, "keeps", "m_score.identity")
    dl = d.loc[loses.name]
    assert dl["triggered"] == 4 and dl["scored"] == 3 and dl["triggered_without_value"] == 1
    assert dl["reliability"] == pytest.approx((0.9 + 0.8 + 0.7) / 4)       # the lost case counts 0
    assert dl["reliability_observed"] == pytest.approx(0.8)               # the scored cases only, kept apart
    assert loses["raw_mean"] == pytest.approx(100 * 2.4 / 4)
    assert loses["value"] == pytest.approx(metrics.m_score(1.0, 0.6))
    assert loses["coverage"] == pytest.approx(3 / 4) and loses["n_eval"] == 3 and loses["n_skipped"] == 1
    assert "count 0 in S" in loses["reason"]
    assert keeps["value"] > loses["value"]                                 # delivering less never ranks higher
    assert d.loc[keeps.name, "reliability"] == pytest.approx(0.725)


def test_evaluator_gaps_and_unknown_triggers_are_none_never_zero():
    ev = _row("g", "h3", "identity", None, n_failed_evaluator=1, reason="face slot unavailable")
    scores = _scores({"g": [0.9, 0.8, 0.5, 0.7]})
    scores = pd.concat([scores[~((scores.case_id == "h3") & (scores.metric_id == "identity"))],
                        pd.DataFrame([ev])], ignore_index=True)
    b = mboard.leaderboard(scores, CASES, ["g"])
    c = _cell(b, "g", "m_score.identity")
    assert pd.isna(c["value"]) and "face slot unavailable" in c["reason"] and c["n_failed_evaluator"] == 1
    # the paper's dimension needs every sub-dimension that applies in the mode
    e = _cell(b, "g", "m_score.entity")
    assert pd.isna(e["value"]) and "m_score.identity" in e["reason"] and e["coverage"] == pytest.approx(3 / 4)
    # T: a trigger the judge did not answer leaves the coverage unknown; a missing output video never triggered
    t = pd.DataFrame([dict(_row("g", "t1", "identity", None, triggered=None), trigger_reason="judge off")])
    bt = mboard.leaderboard(pd.concat([scores, t]), CASES, ["g"], missing={"g": {"t2"}})
    ct = _cell(bt, "g", "m_score.identity", "T")
    assert pd.isna(ct["value"]) and "judge off" in ct["reason"] and ct["n_failed"] == 1
    t_ok = pd.DataFrame([_row("g", "t1", "identity", 0.8)])
    ct = _cell(mboard.leaderboard(pd.concat([scores, t_ok]), CASES, ["g"], missing={"g": {"t2"}}),
               "g", "m_score.identity", "T")
    assert ct["value"] == pytest.approx(metrics.m_score(0.5, 0.8)) and ct["n_failed"] == 1
    assert "no output video" in ct["reason"]
    # a mode without a case of the kind: None with its reason
    x = _cell(b, "g", "m_score.text_instruction", "A")
    assert pd.isna(x["value"]) and "no MBench-A case" in x["reason"]


def test_the_identity_addition_never_changes_the_paper_cells():
    base = _scores({"g": [0.9, 0.8, 0.6, 0.7]})
    b1 = mboard.leaderboard(base, CASES, ["g"])
    other = base.copy()
    is_add = other.metric_id == IDENTITY_FIRST_APPEARANCE
    other.loc[is_add, "value"] = 0.01                          # the addition collapses ...
    b2 = mboard.leaderboard(other, CASES, ["g"])
    b3 = mboard.leaderboard(base[~is_add], CASES, ["g"])      # ... or is absent
    for m in ("m_score.identity", "m_score.entity"):
        v1 = _cell(b1, "g", m)["value"]
        assert v1 is not pd.NA and _cell(b2, "g", m)["value"] == v1 == _cell(b3, "g", m)["value"], m
    add = _cell(b1, "g", f"m_score.{IDENTITY_FIRST_APPEARANCE}")
    assert bool(add["addition"]) and add["value"] == pytest.approx(metrics.m_score(1.0, 0.375))
    assert _cell(b2, "g", f"m_score.{IDENTITY_FIRST_APPEARANCE}")["value"] < add["value"]
    assert f"m_score.{IDENTITY_FIRST_APPEARANCE}" not in METRICS["m_score.entity"].parts
    assert json.loads(_cell(b1, "g", "m_score.entity")["detail"])["parts"] == sorted(
        f"m_score.{k}" for k in metrics.DIMENSIONS["entity"])


def test_slots_used_follow_the_mode_and_the_mask_source():
    assert slots_used("geometry", "A", "pose_box") == (("pose",), (POSE_BOX_STAND_IN,))
    assert slots_used("geometry", "T", "sam2_video") == (("pose", "object_segmenter", "open_vocab_detector"), ())
    assert slots_used("texture", "A", "sam2_video") == (("image_embedder", "object_segmenter"), ())
    assert slots_used("identity", "T") == (("face",), ())


# ----------------------------------------------------------------------------- the materialised board

@pytest.fixture(scope="module")
def materialised(mbench_offline):
    """The session's offline MBench world (tests/support/worlds.py), built once for this module and test_mbench."""
    stats, resources, errors, _, _ = mbench_offline
    assert not errors and not stats.failed, stats.failed
    return resources


def test_materialised_board_is_sound_and_marks_every_substitute(materialised):
    store, models = materialised["store"], materialised["models"]
    b = store.query("SELECT * FROM mbench_leaderboard")
    assert check_board(b, METRICS) == []
    assert set(b["slice"]) == {"A", "T"} and b[b.value.isna()]["reason"].notna().all()
    # every cell that was scored with a slot whose offline checkpoint is not the paper's names it
    checked = 0
    for r in b[b.n_eval > 0].itertuples():
        spec = METRICS[r.metric_id]
        for slot in spec.slots:
            if slot == "object_segmenter" or (slot == "open_vocab_detector" and r.slice == "A"):
                continue   # not used in A; without SAM 2 the pose box stands in (its own label, checked below)
            st = models.status(slot)
            if st.available and st.checkpoint != SLOTS[slot].paper.name and spec.kind == "metric":
                assert isinstance(r.substitute, str) and label_text(f"{slot}: {st.checkpoint}") in r.substitute, \
                    (r.metric_id, r.slice, r.generator, slot, r.substitute)
                checked += 1
    assert checked
    for m, slot in (("identity", "face"), ("texture", "image_embedder"), ("appearance", "image_embedder"),
                    ("action_instruction", "pose")):
        cells = b[(b.metric_id == f"m_score.{m}") & (b.n_eval > 0)]
        assert len(cells) and cells["substitute"].str.contains(f"{slot}: ", regex=False).all(), m
    if not models.status("object_segmenter").available:
        geo = b[(b.metric_id == "m_score.geometry") & (b.n_eval > 0)]
        assert len(geo) and geo["substitute"].str.contains(POSE_BOX_STAND_IN, regex=False).all()
    # a dimension with a value carries its parts' marks
    dims = b[b.metric_id.isin(["m_score.entity", "m_score.environment", "m_score.causal"]) & b.value.notna()]
    assert dims["substitute"].notna().all()
    # the paper's identity is the tracks' centroid consistency; the drift-scaled one is the addition's
    scores = store.query("SELECT * FROM mbench_scores")
    ident = scores[(scores.metric_id == "identity") & scores.value.notna()]
    assert len(ident)
    for r in ident.itertuples():
        assert r.value == pytest.approx(json.loads(r.detail)["track_consistency"])
    assert scores["substitute"].notna().any()


def test_spec_validity_names_are_the_cases_that_expect_the_metric():
    from bench_assets.mbench import validity as mbench_validity
    cases = {c.case_id: c for c in mbench_validity.CASES}
    named = 0
    for spec in METRICS:
        for name in spec.validity:
            assert any(e.metric_id == spec.id.split(".", 1)[1] for e in cases[name].expectations), (spec.id, name)
            named += 1
    assert named and any(e.metric_id == IDENTITY_FIRST_APPEARANCE for e in cases["changed_world"].expectations)


def test_case_design_decides_applicability_not_the_generator():
    """An all-wait A schedule has no twist to follow and a rotation-only one no baseline to triangulate: those cases
    are not action-instruction / reprojection cases for any generator, while a triggered case that lacks a score
    for the generator's reasons still counts 0."""
    assert mboard.case_motion("A", ["wait", "wait"]) == {"moves": False, "translates": False}
    assert mboard.case_motion("A", ["yaw_left", "wait", "yaw_right"]) == {"moves": True, "translates": False}
    assert mboard.case_motion("A", ["forward", "wait"]) == {"moves": True, "translates": True}
    cases = pd.DataFrame({"case_id": ["e1", "e2", "w1"], "subset": ["environment", "environment", "human"],
                          "mode": ["A", "A", "A"], "moves": [True, True, False], "translates": [False, True, False]})
    assert list(mboard.applicable_cases(cases, "A", "reprojection")["case_id"]) == ["e2"]
    assert list(mboard.applicable_cases(cases, "A", "epipolar")["case_id"]) == ["e1", "e2"]
    assert list(mboard.applicable_cases(cases, "A", "action_instruction")["case_id"]) == ["e1", "e2"]
    assert list(mboard.applicable_cases(cases[["case_id", "subset", "mode"]], "A", "action_instruction")
                ["case_id"]) == ["e1", "e2", "w1"]
