"""The validity suite's pieces: perturbation builders, effect-size math and verdicts, rows with reasons, footage."""

import numpy as np
import pandas as pd
import pytest

from bench_assets.core import footage as F
from bench_assets.core import stats
from bench_assets.core import validity as V
from bench_assets.core.metric_spec import MetricSpec, MetricSpecs


def _clip(t=12, h=48, w=64, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    # a textured square moving right: real motion, so order and freezing are visible
    frames = []
    for i in range(t):
        f = (base // 2).copy()
        f[10:30, 4 + 3 * i:24 + 3 * i] = 230
        frames.append(f)
    return np.stack(frames)


def test_cohens_d_by_hand():
    assert stats.cohens_d([4, 5, 6], [1, 2, 3]) == pytest.approx(3.0)
    assert stats.cohens_d([1, 2, 3], [4, 5, 6]) == pytest.approx(-3.0)
    # zero spread: d is undefined (core/stats.py), whether or not the means differ
    assert stats.cohens_d([2, 2], [2, 2]) is None and stats.cohens_d([3, 3], [2, 2]) is None


def test_paired_d_uses_the_spread_of_the_changes():
    # every unit rises by about .01 while the units themselves differ a lot: pooled d is small, d_z large
    r = [0.60, 0.95, 0.80, 0.70]
    p = [0.61, 0.962, 0.809, 0.711]
    assert abs(stats.cohens_d(p, r)) < 0.2
    assert stats.paired_dz(p, r) == pytest.approx(0.0105 / np.std([0.01, 0.012, 0.009, 0.011], ddof=1))
    assert stats.paired_dz(p, r) > 5
    # changes of both signs: no effect however far the means are apart in pooled units
    assert abs(stats.paired_dz([0.7, 0.5, 0.9, 0.3], [0.6, 0.6, 0.8, 0.4])) < 0.1
    assert stats.paired_dz([3, 4], [2, 3]) is None and stats.paired_dz([2, 3], [2, 3]) is None
    # the verdict of paired units uses d_z: a consistent small rise passes, a mixed one does not
    assert V.judge_expectation(V.Expect("m", +1), r, p, paired=True)["passed"]
    assert not V.judge_expectation(V.Expect("m", +1), r, p, paired=False)["passed"]
    assert not V.judge_expectation(V.Expect("m", +1), [0.6, 0.6, 0.8, 0.4], [0.7, 0.5, 0.9, 0.3],
                                   paired=True)["passed"]


def test_bootstrap_interval_contains_the_estimate_and_is_ordered():
    rng = np.random.default_rng(1)
    r = rng.normal(0, 1, 30)
    p = r - 1.5 + rng.normal(0, 0.3, 30)
    d = stats.paired_dz(p, r)
    lo, hi = stats.bootstrap_interval(p, r, paired=True, resamples=500)
    assert lo <= d <= hi and hi < 0


def test_verdicts_need_the_right_direction_and_a_large_enough_effect():
    ref = [0.9, 0.92, 0.91, 0.93]
    assert V.judge_expectation(V.Expect("m", -1), ref, [0.5, 0.52, 0.49, 0.55], True)["passed"]
    assert not V.judge_expectation(V.Expect("m", +1), ref, [0.5, 0.52, 0.49, 0.55], True)["passed"]
    # a tiny move in the right direction with large spread fails without a margin, passes with one it meets
    noisy_ref, noisy_p = [0.2, 0.9, 0.5, 0.7], [0.15, 0.85, 0.45, 0.65]
    assert not V.judge_expectation(V.Expect("m", -1), noisy_ref, noisy_p, False)["passed"]
    assert V.judge_expectation(V.Expect("m", -1, 0.04), noisy_ref, noisy_p, False)["passed"]
    # invariance: passes inside the tolerance only
    assert V.judge_expectation(V.Expect("m", 0, 0.1), ref, [0.88, 0.9, 0.9, 0.92], True)["passed"]
    assert not V.judge_expectation(V.Expect("m", 0, 0.1), ref, [0.5, 0.5, 0.5, 0.5], True)["passed"]


def test_rows_pair_units_and_list_metrics_that_cannot_run_with_their_reason():
    suite = V.Suite("b", None, None, "ref", [V.Case("c", "p", "gen_p", [V.Expect("m1", -1), V.Expect("m2", -1)])])
    values = pd.DataFrame([
        {"generator": g, "unit": u, "metric_id": "m1", "value": v, "reason": None}
        for g, vals in (("ref", [0.9, 0.8, 0.85]), ("gen_p", [0.3, 0.2, 0.25])) for u, v in zip("abc", vals)
    ] + [{"generator": g, "unit": "a", "metric_id": "m2", "value": None, "reason": "judge off"}
         for g in ("ref", "gen_p")])
    specs = MetricSpecs("b", [MetricSpec("m1", "f", "higher", "m1"),
                              MetricSpec("m2", "f", "higher", "m2", paper_id=None)])
    rows = V.validity_rows(suite, values, specs).set_index("metric_id")
    assert rows.loc["m1", "passed"] and rows.loc["m1", "n_units"] == 3
    assert rows.loc["m1", "difference"] == pytest.approx(-0.6)
    assert rows.loc["m2", "passed"] is None and "judge off" in rows.loc["m2", "reason"]
    text = V.format_table(rows.reset_index())
    assert "PASS" in text and "cannot run" in text and "1 pass, 0 fail, 1 cannot run" in text


def test_a_perturbation_of_one_unit_is_compared_with_that_unit_not_every_reference_unit():
    """One perturbed unit (too few for a paired d): its reference is the same unit, not the mean of every reference
    unit (another sample in the reference must not move the row)."""
    suite = V.Suite("b", None, None, "ref", [V.Case("c", "p", "gen_p", [V.Expect("m", -1, 5.0)])])
    values = pd.DataFrame([{"generator": "ref", "unit": u, "metric_id": "m", "value": v, "reason": None}
                           for u, v in (("a", 90.0), ("b", 60.0))]
                          + [{"generator": "gen_p", "unit": "a", "metric_id": "m", "value": 70.0, "reason": None}])
    row = V.validity_rows(suite, values, MetricSpecs("b", [MetricSpec("m", "f", "higher", "m")])).iloc[0]
    assert row["reference_mean"] == pytest.approx(90.0) and row["difference"] == pytest.approx(-20.0)
    assert row["passed"] == True  # noqa: E712 (with every reference unit it would read 75 -> 70, -5)


def test_a_documented_limitation_reads_limit_never_pass_and_is_no_failure():
    """An expectation that documents a blind spot of the metric's definition keeps its row and numbers; a miss reads
    LIMIT (counted apart: not a pass, not a failure), a move it can see still reads PASS, and the text is frozen."""
    suite = V.Suite("b", None, None, "ref", [V.Case("c", "p", "gen_p", [
        V.Expect("blind", -1, 0.1, limitation="the definition averages per track; a replaced person is a new track"),
        V.Expect("seen", -1, 0.1, limitation="documented, yet it moves here"), V.Expect("plain", -1, 0.1)])])
    values = pd.DataFrame([
        {"generator": g, "unit": u, "metric_id": m, "value": v, "reason": None}
        for m, moves in (("blind", 0.0), ("seen", -0.5), ("plain", 0.01))
        for g in ("ref", "gen_p") for u, v in zip("abc", (0.8, 0.85, 0.9))
        for v in [v + (moves if g == "gen_p" else 0.0)]])
    specs = MetricSpecs("b", [MetricSpec(m, "f", "higher", m) for m in ("blind", "seen", "plain")])
    rows = V.validity_rows(suite, values, specs)
    got = {r["metric_id"]: V.verdict(r) for r in rows.to_dict("records")}
    assert got == {"blind": "LIMIT", "seen": "PASS", "plain": "FAIL"}
    blind = rows.set_index("metric_id").loc["blind"]
    assert blind["passed"] == False and blind["difference"] == pytest.approx(0.0)  # noqa: E712 (numbers kept)
    assert V.verdict_counts(rows) == {"PASS": 1, "FAIL": 1, "LIMIT": 1, "n/a": 0}
    text = V.format_table(rows)
    assert "known limitation of the definition: the definition averages per track" in text
    assert "1 pass, 1 fail, 1 known limitation" in text
    # the limitation is part of what is frozen; a case without one keeps its old fingerprint
    case = suite.cases[0]
    bare = V.Case("c", "p", "gen_p", [V.Expect(e.metric_id, e.direction, e.margin) for e in case.expectations])
    assert V.case_fingerprint(bare) != V.case_fingerprint(case)
    old_style = {"case": "c", "perturbation": "p", "generator": "gen_p", "sources": [],
                 "expect": [[e.metric_id, e.direction, e.margin, e.units] for e in bare.expectations]}
    import hashlib
    import json
    assert V.case_fingerprint(bare) == hashlib.sha256(json.dumps(old_style, sort_keys=True).encode()).hexdigest()[:16]


def test_perturbations_do_what_they_say():
    x = _clip()
    fz = V.freeze(x)
    assert fz.shape == x.shape and all((f == x[0]).all() for f in fz)
    sh = V.shuffle(x, seed=3)
    assert sorted(map(bytes, sh)) == sorted(map(bytes, x)) and not (sh == x).all()
    fl = V.flicker(x).reshape(len(x), -1).mean(1)
    assert (fl[0::2][:5] > fl[1::2][:5] + 20).all()
    lap = lambda a: np.mean([np.var(np.diff(f.astype(float), 2, axis=1)) for f in a])  # noqa: E731
    assert lap(V.blur(x)) < 0.2 * lap(x)
    assert np.abs(V.compress(x).astype(int) - x).mean() > 5
    cs = V.colour_shift(x)
    assert cs.shape == x.shape and np.abs(cs.astype(int) - x).mean() > 10


def test_identity_swap_and_duplication_replace_one_shot_at_its_size():
    shots = [_clip(10, seed=0), _clip(8, seed=1), _clip(6, seed=2)]
    donor = _clip(20, 96, 128, seed=9)
    sw = V.identity_swap(shots, 1, donor)
    assert sw[0] is shots[0] and sw[2] is shots[2]
    assert sw[1].shape == shots[1].shape and not (sw[1] == shots[1]).all()
    du = V.duplicate_shot(shots, 0, 2)
    assert du[2].shape == shots[2].shape and (du[2][0] == shots[0][0]).all()


def test_written_videos_read_back(tmp_path):
    x = _clip(9)
    p = V.write_video(x, tmp_path / "g" / "s.mp4", 10)
    back = V.read_segment(p, 2, 7)
    assert back.shape == (5, *x.shape[1:])
    # a lossy codec on noise, but each frame read back is closest to the frame written there
    for j, f in enumerate(back):
        assert int(np.argmin([np.abs(f.astype(int) - y).mean() for y in x])) == j + 2


def test_footage_cache_refuses_missing_and_tampered_files(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_FOOTAGE_DIR", str(tmp_path))
    with pytest.raises(F.FootageMissing, match="fetch_footage.py"):
        F.footage_path("bikes.mp4")
    (tmp_path / "bikes.mp4").write_bytes(b"not the clip")
    with pytest.raises(F.FootageMissing, match="sha256"):
        F.footage_path("bikes.mp4")
    with pytest.raises(KeyError):
        F.footage_path("nope.mp4")


def test_bikes_ground_truth_cuts_are_the_clip_cuts():
    """The hand-written cuts agree with the footage: the five largest frame changes are exactly there."""
    p = F.require_footage("bikes.mp4")["bikes.mp4"]
    gt = F.ground_truth("bikes.mp4")
    frames = V.read_segment(p, 0, gt["frames"], (64, 32)).astype(float).mean(-1)
    diffs = np.abs(np.diff(frames, axis=0)).mean((1, 2))
    top = sorted(int(i) + 1 for i in np.argsort(diffs)[-len(gt["cuts"]):])
    assert top == gt["cuts"]
    assert [s["start"] for s in gt["shots"][1:]] == gt["cuts"]


def test_identity_pair_agreement_fails_on_one_merge_or_one_lost_person():
    from bench_assets.narrativetrack.validity import pair_agreement
    assert pair_agreement([("w", 1), ("w", 1), ("m", 2), ("m", 2)]) == (1.0, 6)
    merged, _ = pair_agreement([("w", 1), ("w", 1), ("m", 1), ("m", 1)])   # the two people share an identity
    assert merged == pytest.approx(2 / 6)
    lost, _ = pair_agreement([("w", 1), ("w", None), ("m", 2)])             # one appearance not found
    assert lost == pytest.approx(1 / 3)


def test_entitybench_duplicates_copy_a_shot_of_the_same_people_and_judge_only_those_shots():
    import re

    from bench_assets.entitybench import validity as EV
    for eid, clip, spans, size, entities in EV.EPISODES:
        src, dst = EV.DUPLICATE[eid]
        who = lambda shot: {d for d, shots in entities if shot + 1 in shots}  # noqa: E731
        assert who(src) == who(dst) and who(src), (eid, src, dst)
    rx = re.compile(EV.DUPLICATED_UNITS)
    assert rx.search("vdialogue/3/c1") and rx.search("vdialogue/1/c1")
    assert not rx.search("vdialogue/2/c2") and not rx.search("vcarphone/3/c1") and rx.search("vcarphone/2/c1")
