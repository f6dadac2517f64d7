"""The shared kernels (core/kernels.py) and statistics (core/stats.py): each benchmark's former copy is replaced by
the core one with the same bits (the plain expressions they replaced are written out here and compared exactly),
every benchmark reads the core function, the zero-spread policy and validity's verdicts under it, validity's
refusal of an expectation without a MetricSpec, and the one slot loader."""
from __future__ import annotations

import ast
import math
from pathlib import Path
from types import SimpleNamespace

import cv2
import numpy as np
import pandas as pd
import pytest

from bench_assets.core import kernels, stats
from bench_assets.core import validity as V
from bench_assets.core.metric_spec import MetricSpec, MetricSpecs

ROOT = Path(__file__).resolve().parents[1]
H, W = 29, 47   # odd: not a multiple of any SIMD width


def _rng(seed):
    return np.random.default_rng(seed)


def _flow(seed, scale=6.0):
    return (_rng(seed).standard_normal((H, W, 2)) * scale).astype(np.float32)


def _frames(n, seed):
    return _rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


# ------------------------------------------------------------------ the plain forms the kernels replaced

def _plain_maps(flow, t=1.0):     # LoCoT2V's warp_maps
    h, w = flow.shape[:2]
    gx, gy = np.meshgrid(np.arange(w, dtype=np.float32), np.arange(h, dtype=np.float32))
    return gx + t * flow[..., 0].astype(np.float32), gy + t * flow[..., 1].astype(np.float32)


def _plain_remap(img, maps):
    return cv2.remap(img, maps[0], maps[1], interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def _plain_midpoint(a, b, fab, fba):
    return 0.5 * (_plain_remap(a.astype(np.float32), _plain_maps(fab, -0.5))
                  + _plain_remap(b.astype(np.float32), _plain_maps(fba, -0.5)))


def _plain_warp_pair_error(prev, cur, fwd, bwd, tol):   # LoCoT2V's warp_pair_error before the swap
    f, b = fwd.astype(np.float32), bwd.astype(np.float32)
    maps = _plain_maps(b)
    ok = np.linalg.norm(b + _plain_remap(f, maps), axis=-1) < tol
    if not ok.any():
        return None
    warped = _plain_remap(prev.astype(np.float32), maps)
    diff = np.abs(warped - cur.astype(np.float32)).mean(axis=-1) / 255.0
    return float(diff[ok].mean())


def _plain_l2n(x):
    x = np.asarray(x, np.float64)
    return x / np.clip(np.linalg.norm(x, axis=-1, keepdims=True), 1e-12, None)


def _plain_iou(a, b):   # NarrativeTrack validity's _iou (no float conversion)
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


# ------------------------------------------------------------------------------------------------ kernels

def test_warp_map_and_remap_give_the_bits_of_two_meshgrid_maps_for_1_2_and_3_channels():
    p = _frames(1, 1)[0]
    for seed, t in ((2, 1.0), (3, -0.5), (4, 0.5)):
        fl = _flow(seed)
        for img in (p.astype(np.float32), p[..., :1].astype(np.float32).copy(), _flow(seed + 10)):
            assert np.array_equal(kernels.warp(img, fl, t), _plain_remap(img, _plain_maps(fl, t)))
    g = kernels.pixel_grid(H, W)
    assert g is kernels.pixel_grid(H, W) and not g.flags.writeable


def test_midpoint_error_is_the_plain_interpolation_error_bit_for_bit():
    for seed in range(3):
        p, m, n = _frames(3, seed)
        fab, fba = _flow(seed + 5), _flow(seed + 6)
        plain_mid = _plain_midpoint(p, n, fab, fba)
        assert np.array_equal(kernels.interpolate_midpoint(p, n, fab, fba), plain_mid)
        assert kernels.midpoint_error(p, m, n, fab, fba) == float(np.mean(np.abs(plain_mid - m.astype(np.float32))))


def test_locot2v_warping_error_after_the_swap_matches_its_former_code():
    from bench_assets.locot2v import constants, metrics

    frames = _frames(4, 7)
    for i in range(3):
        fwd, bwd = _flow(20 + i, 2.0), _flow(30 + i, 2.0)
        new = metrics.warp_pair_error(frames[i], frames[i + 1], fwd, bwd)
        old = _plain_warp_pair_error(frames[i], frames[i + 1], fwd, bwd, constants.WARP_FB_TOLERANCE_PX)
        assert new == old and new is not None


def test_smoothness_score_keeps_both_benchmarks_arithmetic():
    errs = list(_rng(3).uniform(0, 40, 17))
    assert kernels.smoothness_score(errs) == float((255.0 - np.mean(errs)) / 255.0)              # EntityBench
    assert kernels.smoothness_score(errs, 100.0) == float(100.0 * (255.0 - np.mean(errs)) / 255.0)  # LoCoT2V
    assert kernels.smoothness_score([]) is None
    assert kernels.smoothness_score([255.0]) == 0.0


def test_l2_normalise_and_iou():
    x = _rng(5).standard_normal((6, 33))
    assert np.array_equal(kernels.l2_normalise(x), _plain_l2n(x))
    assert np.allclose(np.linalg.norm(kernels.l2_normalise(x), axis=1), 1.0)
    assert np.array_equal(kernels.l2_normalise(np.zeros(4)), np.zeros(4))       # a zero vector stays zero
    assert kernels.iou((0, 0, 2, 2), (1, 1, 3, 3)) == pytest.approx(1 / 7)
    assert kernels.iou((0, 0, 1, 1), (2, 2, 3, 3)) == 0.0 and kernels.iou((1, 1, 1, 1), (1, 1, 1, 1)) == 0.0
    boxes = np.sort(_rng(6).uniform(0, 50, (40, 2, 2)), axis=1).transpose(0, 2, 1).reshape(40, 4)[:, [0, 2, 1, 3]]
    boxes = np.column_stack([boxes[:, 0], boxes[:, 2], boxes[:, 1], boxes[:, 3]])  # x1 <= x2, y1 <= y2
    m = kernels.iou_matrix(boxes[:20], boxes[20:])
    assert (m > 0).any() and (m == 0).any()
    for i in range(20):
        for j in range(20):
            a, b = [float(v) for v in boxes[i]], [float(v) for v in boxes[20 + j]]
            assert kernels.iou(a, b) == m[i, j] == _plain_iou(a, b)


def test_each_benchmark_reads_the_core_kernel():
    from bench_assets.entitybench import metrics as entitybench_metrics
    from bench_assets.locot2v import metrics as locot2v_metrics
    from bench_assets.locot2v import pipeline as locot2v_pipeline
    from bench_assets.narrativetrack import pipeline as narrativetrack_pipeline
    from bench_assets.narrativetrack import validity as narrativetrack_validity

    assert entitybench_metrics._l2n is locot2v_metrics.l2n is kernels.l2_normalise
    assert entitybench_metrics.interpolate_midpoint is kernels.interpolate_midpoint
    assert entitybench_metrics._midpoint_error is locot2v_metrics.interpolation_error is kernels.midpoint_error
    assert locot2v_pipeline.iou is narrativetrack_validity.iou is kernels.iou
    assert narrativetrack_pipeline.iou_matrix is kernels.iou_matrix
    from bench_assets.entitybench import board as entitybench_board
    assert entitybench_board.cohens_d is stats.cohens_d and entitybench_board.paired_dz is stats.paired_dz_by_key


# names of the shared kernels and statistics (and of the copies they replaced): defined only in core/kernels.py,
# core/stats.py and core/slots.py, so a copy cannot come back under its old name
_SHARED = {"l2n", "_l2n", "l2_normalise", "iou", "_iou", "iou_matrix", "warp", "_warp", "warp_maps", "warp_map",
           "remap", "_grid", "pixel_grid", "interpolate_midpoint", "interpolation_error", "_midpoint_error",
           "midpoint_error", "smoothness_score", "cohens_d", "paired_d", "paired_dz", "bootstrap_d",
           "bootstrap_interval", "_slot", "load_slot"}
_HOMES = {"bench_assets/core/kernels.py", "bench_assets/core/stats.py", "bench_assets/core/slots.py"}


def test_no_module_outside_core_defines_a_shared_kernel_again():
    found = []
    for pkg in ("bench_assets", "bench_resources"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in _HOMES:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name in _SHARED:
                    found.append(f"{rel}:{node.lineno} def {node.name}")
    assert not found, "\n".join(found)


# ------------------------------------------------------------------------------------------------ stats

def _old_validity_d(p, r, paired):
    """core/validity.py's former d (the +-inf policy), to compare verdicts and intervals with."""
    p, r = np.asarray(p, float), np.asarray(r, float)
    if paired:
        delta = p - r
        mean, sd = float(delta.mean()), (float(delta.std(ddof=1)) if len(delta) > 1 else 0.0)
        return (0.0 if abs(mean) < 1e-12 else math.copysign(math.inf, mean)) if sd < 1e-12 else mean / sd
    diff, dof = p.mean() - r.mean(), len(p) + len(r) - 2
    pooled = math.sqrt(((len(p) - 1) * p.var(ddof=1 if len(p) > 1 else 0)
                        + (len(r) - 1) * r.var(ddof=1 if len(r) > 1 else 0)) / dof) if dof > 0 else 0.0
    if pooled < 1e-12:
        return 0.0 if abs(diff) < 1e-12 else math.copysign(math.inf, diff)
    return float(diff / pooled)


def _old_bootstrap(p, r, paired, resamples=2000, seed=0, level=0.95):
    p, r = np.asarray(p, float), np.asarray(r, float)
    rng = np.random.default_rng(seed)
    ds = []
    for _ in range(resamples):
        if paired:
            idx = rng.integers(0, len(p), len(p))
            ds.append(_old_validity_d(p[idx], r[idx], True))
        else:
            ds.append(_old_validity_d(p[rng.integers(0, len(p), len(p))], r[rng.integers(0, len(r), len(r))], False))
    ds = np.clip(np.asarray(ds), -1e6, 1e6)
    a = (1 - level) / 2
    return float(np.quantile(ds, a)), float(np.quantile(ds, 1 - a))


def test_effect_sizes_by_hand_and_the_zero_spread_policy():
    assert stats.cohens_d([4, 5, 6], [1, 2, 3]) == pytest.approx(3.0)
    assert stats.paired_dz([1, 3, 2], [0, 1, 1.5]) == pytest.approx(np.mean([1, 2, .5]) / np.std([1, 2, .5], ddof=1))
    assert stats.paired_dz_by_key({"x": 1, "y": 3, "z": 2, "only_a": 9}, {"x": 0, "y": 1, "z": 1.5}) == \
        stats.paired_dz([1, 3, 2], [0, 1, 1.5])
    # too few values: None; zero spread: None whatever the difference (undefined, never +-inf or 0)
    assert stats.cohens_d([1.0], [2.0, 3.0]) is None and stats.paired_dz([1.0], [0.0]) is None
    assert stats.cohens_d([3, 3], [2, 2]) is None and stats.cohens_d([2, 2], [2, 2]) is None
    assert stats.paired_dz([3, 4], [2, 3]) is None
    assert stats.zero_spread([3, 4], [2, 3], paired=True) and not stats.zero_spread([3, 5], [2, 3], paired=True)
    assert not stats.zero_spread([1.0], [2.0, 3.0], paired=False)
    assert "zero spread" in stats.undefined_reason([3, 4], [2, 3], paired=True)
    assert "2 a side" in stats.undefined_reason([1.0], [2.0, 3.0], paired=False)
    assert stats.undefined_reason([4, 5, 6], [1, 2, 3], paired=False) is None
    # where d is defined it is the former code's, bit for bit
    rng = _rng(8)
    for _ in range(20):
        a, b = rng.normal(0, 1, 7), rng.normal(0.5, 2, 9)
        assert stats.cohens_d(a, b) == _old_validity_d(a, b, False)
        assert stats.paired_dz(a, b[:7]) == _old_validity_d(a, b[:7], True)


def test_bootstrap_interval_is_the_former_one_where_bounded_and_none_where_not():
    rng = _rng(1)
    r = rng.normal(0, 1, 30)
    p = r - 1.5 + rng.normal(0, 0.3, 30)
    for paired in (True, False):
        assert stats.bootstrap_interval(p, r, paired, resamples=300) == _old_bootstrap(p, r, paired, resamples=300)
    lo, hi = stats.bootstrap_interval(p, r, True, resamples=300)
    assert lo <= stats.paired_dz(p, r) <= hi < 0
    # changes [-1, -1, -1, 0]: a third of resamples pick only -1s (zero spread, a shift): the low bound is unbounded
    lo, hi = stats.bootstrap_interval([0, 0, 0, 1], [1, 1, 1, 1], paired=True, resamples=500)
    assert lo is None and hi is not None
    assert _old_bootstrap([0, 0, 0, 1], [1, 1, 1, 1], True, resamples=500)[0] == -1e6   # what it was: a sentinel
    assert stats.bootstrap_interval([2, 3], [1, 2], paired=True) == (None, None)       # every resample: exact shift
    assert stats.bootstrap_interval([1.0], [2.0, 3.0], paired=False) == (None, None)


def test_validity_verdicts_under_the_policy_match_the_former_ones(monkeypatch):
    """Same verdicts as the former +-inf rule wherever it could decide with two units a side, zero spread included,
    except that a stated margin now binds (issue 37: d decides only where no margin is stated)."""
    monkeypatch.setattr(stats, "bootstrap_interval", lambda *a, **k: (None, None))  # the verdict never reads it
    rng = _rng(11)
    cases = []
    for k in range(150):
        n = int(rng.integers(2, 6))
        r = np.round(rng.uniform(0, 1, n), 1)
        kind = k % 3
        p = (r + np.round(rng.normal(0, 0.3), 1) if kind == 0          # exact shift (zero spread of the changes)
             else np.full(n, np.round(rng.uniform(0, 1), 1)) if kind == 1   # a constant perturbed side
             else r + rng.normal(0, 0.2, n))
        cases.append((r, p))
    cases += [([0.9, 0.9], [0.5, 0.5]), ([0.5, 0.5], [0.5, 0.5]), ([0.2, 0.4], [0.2, 0.4])]
    for r, p in cases:
        for paired in (True, False):
            for direction in (-1, 1, 0):
                for margin in (None, 0.05, 0.3):
                    exp = V.Expect("m", direction, margin)
                    new = V.judge_expectation(exp, r, p, paired)
                    d = _old_validity_d(p, r, paired)
                    diff = float(np.mean(p) - np.mean(r))
                    if direction == 0:
                        old = abs(diff) <= (margin or 0.0)
                    elif margin is not None:   # issue 37: a stated margin binds, d no longer passes such a row
                        old = diff * direction > 0 and abs(diff) >= margin
                    else:
                        old = diff * direction > 0 and abs(d) >= 1
                    assert new["passed"] is bool(old), (r, p, paired, direction, margin, new)
                    if new["effect_size_d"] is None and direction != 0:
                        assert "zero spread" in new["reason"]


def test_one_unit_a_side_is_judged_on_the_margin_or_not_at_all():
    by_margin = V.judge_expectation(V.Expect("m", -1, 0.1), [0.9], [0.5], paired=False)
    assert by_margin["passed"] is True and by_margin["effect_size_d"] is None and "margin" in by_margin["reason"]
    assert V.judge_expectation(V.Expect("m", -1, 0.5), [0.9], [0.5], paired=False)["passed"] is False
    none = V.judge_expectation(V.Expect("m", -1), [0.9], [0.5], paired=False)
    assert none["passed"] is None and none["reason"].startswith("cannot judge")


# ------------------------------------------------------------------------------------ validity reads the specs

SPECS = MetricSpecs("b", [
    MetricSpec("paper_m", "f", "higher", "a paper metric"),
    MetricSpec("added_m", "f", "higher", "an addition", paper_id=None),
    MetricSpec("fam", "f", "higher", "a family", pattern=r"fam\.\w+"),
])


def _suite(*metrics):
    return V.Suite("b", None, None, "ref", [V.Case("c1", "p", "gen_p", [V.Expect(m, -1) for m in metrics])])


def _values(metric_ids):
    return pd.DataFrame([{"generator": g, "unit": u, "metric_id": m, "value": v, "reason": None}
                         for m in metric_ids for g, vals in (("ref", [0.9, 0.8, 0.85]), ("gen_p", [0.3, 0.2, 0.26]))
                         for u, v in zip("abc", vals)])


def test_rows_carry_the_specs_paper_id_and_addition_flag():
    rows = V.validity_rows(_suite("paper_m", "added_m", "fam.x"), _values(["paper_m", "added_m", "fam.x"]), SPECS)
    assert list(rows.columns) == V.VALIDITY_COLUMNS
    rows = rows.set_index("metric_id")
    assert rows.loc["paper_m", "paper_id"] == "paper_m" and not rows.loc["paper_m", "addition"]
    assert pd.isna(rows.loc["added_m", "paper_id"]) and rows.loc["added_m", "addition"]
    assert rows.loc["fam.x", "paper_id"] == "fam" and rows["passed"].all()


def test_an_expectation_without_a_spec_is_refused_naming_case_and_metric():
    with pytest.raises(V.UndeclaredMetric, match=r"case 'c1' expects metric 'nobody'"):
        V.validity_rows(_suite("paper_m", "nobody"), _values(["paper_m", "nobody"]), SPECS)
    with pytest.raises(V.UndeclaredMetric, match="no MetricSpec"):
        V.check_expectations(_suite("paper_m"), MetricSpecs("b", []))
    # evaluate_suite refuses before any work (no paths, store or assets are touched)
    bench = SimpleNamespace(metrics=SPECS, assets=None)
    with pytest.raises(V.UndeclaredMetric):
        V.evaluate_suite(_suite("nobody"), bench, Path("/nonexistent"), progress=lambda _s: None)


def test_a_case_a_spec_names_without_an_expectation_on_it_is_a_row():
    specs = MetricSpecs("b", [MetricSpec("paper_m", "f", "higher", "checked", validity=("c1",)),
                              MetricSpec("other", "f", "higher", "declared, not checked", validity=("c1", "absent"))])
    rows = V.validity_rows(_suite("paper_m"), _values(["paper_m"]), specs)
    assert len(rows) == 2 and rows.iloc[0]["passed"]
    gap = rows.iloc[1]
    assert gap["metric_id"] == "other" and gap["case"] == "c1" and pd.isna(gap["passed"])
    assert "names validity case 'c1'" in gap["reason"]    # 'absent' is not a case of this suite: not asked


def test_run_validity_turns_each_problem_into_a_row_with_its_reason(tmp_path):
    benchmarks = {"b": SimpleNamespace(metrics=SPECS), "quiet": SimpleNamespace(metrics=SPECS)}

    def broken(_wd):
        raise RuntimeError("footage missing")

    table = V.run_validity(benchmarks, {"b": lambda wd: _suite("nobody"), "other": broken},
                           names=["b", "quiet", "other"], work_dir=tmp_path, progress=lambda _s: None)
    reasons = dict(zip(table["benchmark"], table["reason"]))
    assert "expects metric 'nobody'" in reasons["b"] and "UndeclaredMetric" in reasons["b"]
    assert "no validity cases registered" in reasons["quiet"]
    assert "unknown benchmark" in reasons["other"]
    assert table["passed"].isna().all()


# ------------------------------------------------------------------------------------------- the slot loader

def test_load_slot_gives_the_reason_or_fails_the_step_when_needed():
    from dagster import Failure

    from bench_assets.core.slots import load_slot

    class Registry:
        def slot_or_reason(self, name, device):
            return (("model", None) if name == "here" else (None, f"no weights for {name}"))

    assert load_slot(Registry(), None, "here") == ("model", None)
    assert load_slot(Registry(), None, "gone") == (None, "no weights for gone")
    assert load_slot(Registry(), None, "here", needed_by="video 07") == ("model", None)
    with pytest.raises(Failure, match=r"video 07: the pipeline needs slot 'gone': no weights for gone"):
        load_slot(Registry(), None, "gone", needed_by="video 07")
