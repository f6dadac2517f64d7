"""The calibration / validation split the code enforces (issue 23): every footage source is on one side, every
validity case reads only validation sources and is frozen, every fitted threshold was fitted only on calibration
sources and carries its error rates on validation sources. Fast: no footage is decoded."""
import importlib
import json
import sys
from pathlib import Path

import pandas as pd
import pytest

from bench_assets.core import face_calibration as FC
from bench_assets.core import footage as F
from bench_assets.core import validity as V
from bench_assets.core.metric_spec import MetricSpec, MetricSpecs

ROOT = Path(__file__).resolve().parents[1]
BENCHMARKS = ("entitybench", "vistorybench", "locot2v", "mbench", "narrativetrack")
CALIBRATED = {"narrativetrack": ROOT / "bench_assets" / "narrativetrack" / "face_calibration.json",
              "mbench": ROOT / "bench_assets" / "mbench" / "identity_calibration.json"}


def _cases():
    return {b: importlib.import_module(f"bench_assets.{b}.validity").CASES for b in BENCHMARKS}


def test_every_source_is_on_one_side_and_both_sides_have_several():
    assert F.check_registry() == []
    for s in F.SOURCES.values():
        assert s.split in F.SPLITS and s.package in F.PACKAGES, s
        assert len(s.sha256) == 64
    cal, val = F.sources(F.CALIBRATION), F.sources(F.VALIDATION)
    assert not set(cal) & set(val)
    assert len(cal) >= 5 and len(val) >= 5
    # real faces on both sides; several real people with more than one photograph on the calibration side
    real = {sp: [n for n in F.sources(sp) if n in F.SOURCES and F.SOURCES[n].faces == "real"] for sp in F.SPLITS}
    assert len(real[F.CALIBRATION]) >= 5 and len(real[F.VALIDATION]) >= 5
    # drawn / animated faces on both sides too (issue 23 item 2): Ren'Py's sprites for calibration (reported only,
    # never fitted on: tests/test_drawn_calibration.py), the animated clips the validity cases read for validation
    drawn = {sp: [n for n in F.sources(sp) if n in F.SOURCES and F.SOURCES[n].faces == "animated"] for sp in F.SPLITS}
    assert len(drawn[F.CALIBRATION]) >= 5 and len(drawn[F.VALIDATION]) >= 2
    assert {F.SOURCES[n].content for n in drawn[F.CALIBRATION]}.isdisjoint(
        {F.SOURCES[n].content for n in drawn[F.VALIDATION]})


def test_a_group_on_both_sides_is_a_registry_error(monkeypatch):
    fake = dict(F.SOURCES)
    src = F.SOURCES["carphone_distorted.mp4"]
    fake["carphone_distorted.mp4"] = F.Source(src.name, src.package, src.member, src.sha256, src.kind,
                                              F.CALIBRATION, src.group)
    monkeypatch.setattr(F, "SOURCES", fake)
    assert any("carphone" in p for p in F.check_registry())


def test_every_validity_case_names_only_validation_sources():
    for b, cases in _cases().items():
        for c in cases:
            assert c.sources, f"{b}/{c.case_id} names no source"
            for s in c.sources:
                assert F.split_of(s) == F.VALIDATION, f"{b}/{c.case_id} reads {s} ({F.split_of(s)})"
        V.check_split(V.Suite(b, Path("."), Path("."), "reference", list(cases)))


def test_a_case_reading_a_calibration_source_or_naming_none_is_refused():
    bad = V.Case("x", "x", "p_x", [V.Expect("m", -1, 0.1)], sources=("carphone_pristine.mp4", "obama.jpg"))
    with pytest.raises(F.SplitViolation, match="obama.jpg"):
        V.check_split(V.Suite("b", Path("."), Path("."), "reference", [bad]))
    with pytest.raises(F.SplitViolation, match="names no source"):
        V.check_split(V.Suite("b", Path("."), Path("."), "reference", [V.Case("y", "y", "p_y", [])]))
    with pytest.raises(F.SplitViolation, match="not registered"):
        F.require_split(["no_such_clip.mp4"], F.VALIDATION, "a case")


def test_the_split_in_force_refuses_the_other_side_at_read_time():
    with F.use_split(F.VALIDATION):
        with pytest.raises(F.SplitViolation, match="calibration source"):
            F.footage_path("obama.jpg")
        with F.use_split(F.CALIBRATION):
            with pytest.raises(F.SplitViolation, match="validation source"):
                F.footage_path("Megamind.avi")
    assert F.split_in_force() is None
    # outside any split a missing file is only missing (not a split error)
    with pytest.raises((F.FootageMissing, FileNotFoundError)) if not F.available("obama.jpg") else _nothing():
        F.footage_path("obama.jpg")


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


def test_every_case_is_frozen_and_a_changed_case_does_not_run():
    sys.path.insert(0, str(ROOT / "scripts"))
    freeze = importlib.import_module("freeze_validity_cases")
    lock = V.load_lock()
    assert freeze.diff(lock, freeze.current_cases()) == [], "run scripts/freeze_validity_cases.py (own commit)"
    case = _cases()["narrativetrack"][0]
    assert isinstance(V.frozen_versions("narrativetrack", [case])[case.case_id], int)
    changed = V.Case(case.case_id, case.perturbation, case.generator,
                     [V.Expect(e.metric_id, e.direction, 0.5, e.units) for e in case.expectations], case.description,
                     case.sources)
    got = V.frozen_versions("narrativetrack", [changed])[case.case_id]
    assert isinstance(got, V.CaseNotFrozen) and "differs from its frozen version 1" in str(got)
    # the description is prose, not part of what is frozen
    same = V.Case(case.case_id, case.perturbation, case.generator, case.expectations, "other words", case.sources)
    assert V.case_fingerprint(same) == V.case_fingerprint(case)
    # a row of an unfrozen case says so and carries no verdict; a frozen one carries its version
    specs = MetricSpecs("b", [MetricSpec("m", "f", "higher", "m")])
    suite = V.Suite("b", Path("."), Path("."), "ref", [V.Case("c", "c", "g", [V.Expect("m", -1, 0.1)], sources=("x",))])
    vals = pd.DataFrame({"generator": ["ref", "ref", "g", "g"], "unit": ["a", "b", "a", "b"], "metric_id": "m",
                         "value": [0.9, 0.8, 0.1, 0.2], "reason": None})
    rows = V.validity_rows(suite, vals, specs, {"c": V.CaseNotFrozen("case b/c is not frozen")})
    assert rows["passed"].isna().all() and rows["reason"].str.contains("not frozen").all()
    rows = V.validity_rows(suite, vals, specs, {"c": 3})
    assert rows["passed"].all() and (rows["case_version"] == 3).all()
    assert "c@v3" in V.format_table(rows)


def test_freezing_bumps_only_changed_cases_and_keeps_history():
    sys.path.insert(0, str(ROOT / "scripts"))
    freeze = importlib.import_module("freeze_validity_cases")
    a = V.Case("a", "a", "g", [V.Expect("m", -1, 0.1)], sources=("x",))
    b = V.Case("b", "b", "g", [V.Expect("m", +1, 0.1)], sources=("x",))
    lock = freeze.freeze({}, {"k/a": a, "k/b": b}, "first", "t0")
    assert lock["k/a"]["version"] == 1 and lock["k/b"]["version"] == 1
    a2 = V.Case("a", "a", "g", [V.Expect("m", -1, 0.2)], sources=("x",))
    lock2 = freeze.freeze(lock, {"k/a": a2, "k/b": b}, "margin widened because ...", "t1")
    assert lock2["k/a"]["version"] == 2 and lock2["k/b"] == lock["k/b"]
    assert lock2["k/a"]["history"][0]["reason"] == "first"


@pytest.mark.parametrize("bench", sorted(CALIBRATED))
def test_thresholds_are_fitted_on_calibration_sources_and_measured_on_validation_ones(bench):
    doc = json.loads(CALIBRATED[bench].read_text())
    fitted = set(doc["fitted_on"]) | set(doc["sources"]) | {g["source"] for g in doc["groups"]}
    assert fitted and all(F.split_of(s) == F.CALIBRATION for s in fitted), sorted(fitted)
    # and on real faces only: a drawn calibration source is reported beside the fit, never in it
    assert all(FC.real_face_source(s) for s in fitted), sorted(fitted)
    held = set(doc["held_out"]["sources"]) | {g["source"] for g in doc["held_out"]["groups"]}
    assert held and all(F.split_of(s) == F.VALIDATION for s in held), sorted(held)
    # the stored threshold is what the rule gives on the calibration groups alone, and the stored held-out rates
    # are the threshold's errors on the validation groups
    again = FC.recompute(doc)
    assert again["threshold"] == doc["threshold"]
    assert FC.held_out_rates(doc) == doc["held_out"]["rates"]


def test_held_out_rates_by_hand():
    doc = {"threshold": 0.5, "held_out": {
        "sources": {"x": {"kind": "real"}, "y": {"kind": "animated"}}, "same_as": {},
        "groups": [{"source": "x", "person": "a", "shot": 0, "emb": [1, 0, 0]},
                   {"source": "x", "person": "a", "shot": 1, "emb": [0.6, 0.8, 0]},    # same, cos .6: kept
                   {"source": "x", "person": "b", "shot": 0, "emb": [0.8, 0.6, 0]},    # vs a: .8 and .96: merges
                   {"source": "y", "person": "c", "shot": 0, "emb": [0, 0, 1]}]}}
    r = FC.held_out_rates(doc)
    assert r["real"]["n_same"] == 1 and r["real"]["false_splits"] == 0
    assert r["real"]["n_different"] == 2 and r["real"]["false_merges"] == 2 and r["real"]["false_merge_rate"] == 1.0
    assert r["all"]["n_different"] == 5 and r["all"]["false_merges"] == 2
    assert r["animated"]["n_same"] == 0 and r["animated"]["false_split_rate"] is None


def test_narrativetrack_invariance_cases_move_labels_with_the_frames():
    from bench_assets.narrativetrack import validity as NV
    lab = ("woman", 24, ("point", [300.0, 250.0]))
    assert NV.scale_label(lab, 0.5) == ("woman", 24, ("point", [150.0, 125.0]))
    assert NV.shift_label(lab, 359) == ("woman", 383, ("point", [300.0, 250.0]))
    box = ("red_jacket_man", 550, ("box", [168, 378, 225, 545]))
    # the campus (768x576, 10 fps) placed in a 720x528 file at 23.976 fps from its frame 500 on
    moved = NV.shift_label(box, 0, 720 / 768, 528 / 576, lambda f: int(round((f - 500) * 23.976 / 10)))
    assert moved[1] == 120 and moved[2][1] == pytest.approx([157.5, 346.5, 210.9375, 499.5833], abs=1e-3)
    # every invariance video belongs to a frozen case whose expectation names it, and reads validation footage
    cases = {c.case_id: c for c in NV.CASES}
    for vid, (case, base, _) in NV.INVARIANCE.items():
        assert any(vid in (e.units or "") for e in cases[case].expectations) and base in NV.CLIPS
        assert all(e.direction == 0 and e.margin == NV.INVARIANCE_MARGIN for e in cases[case].expectations)
