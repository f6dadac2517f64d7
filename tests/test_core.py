"""Core pieces: value records, aggregation, names, manifest comparability, frame sampling, metric math."""
import json

import cv2
import numpy as np
import pandas as pd
import pytest

from bench_assets.core import media
from bench_assets.core.stats import cohens_d
from bench_assets.core.stats import paired_dz_by_key as paired_dz
from bench_assets.core.grounding import Candidate, a_area, a_sharp, crop_box, decide_status
from bench_assets.core.manifest import build_manifest, comparability, protocol_digest
from bench_assets.core.names import BadName, sanitize_key, validate_key
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.entitybench.wiring import P as ENTITYBENCH
from bench_assets.core.records import MetricRecord, record_from_values
from bench_assets.entitybench import metrics as M
from bench_assets.entitybench.board import cell, eq23


def test_record_refuses_silent_numbers():
    with pytest.raises(ValueError, match="silent"):
        MetricRecord("m", 0.0, n_eval=0)
    with pytest.raises(ValueError):
        MetricRecord("m", None, n_eval=3)
    rec = record_from_values("m", [None, None], reason="slot missing")
    assert rec.value is None and rec.n_skipped == 2 and rec.reason == "slot missing"
    rec = record_from_values("m", [0.5, None, 1.0], n_failed=1)
    assert rec.value == pytest.approx(0.75) and (rec.n_eval, rec.n_skipped, rec.n_failed) == (2, 1, 1)


def test_corrected_mean_matches_paper_example():
    """The gate-corrected mean of the paper text's Eq. 23-25 (entitybench/board.py ``eq23``, coverage policy
    "applied"): since issue 36 the addition aggregation_eq23 in each board row's detail; the board's value is the
    authors' episode mean (``cell``), which skips the episode without a value."""
    # Table 15: raw .678 x coverage .60 = .407
    rows = pd.DataFrame([{"value": 0.678, "n_eval": 6, "n_failed": 0, "n_skipped": 4}])
    agg = eq23(rows, "applied")
    assert agg["raw_mean"] == pytest.approx(0.678) and agg["coverage"] == pytest.approx(0.6)
    assert agg["value"] == pytest.approx(0.4068)
    rows = pd.DataFrame([{"value": 1.0, "n_eval": 1, "n_failed": 0, "n_skipped": 0},
                         {"value": 0.0, "n_eval": 3, "n_failed": 0, "n_skipped": 0},
                         {"value": None, "n_eval": 0, "n_failed": 2, "n_skipped": 0}])
    agg = eq23(rows, "applied")
    assert agg["raw_mean"] == pytest.approx(0.25) and agg["coverage"] == pytest.approx(4 / 6)
    assert agg["value"] == pytest.approx(1 / 6) and agg["n_items"] == 2
    head = cell(rows, "applied")   # the authors' aggregate_results: (1.0 + 0.0) / 2, None excluded
    assert head["value"] == head["raw_mean"] == pytest.approx(0.5) and head["coverage"] == pytest.approx(4 / 6)
    assert head["episodes"]["n_episodes_evaluated"] == 2 and head["eq23"]["value"] == pytest.approx(1 / 6)
    none = eq23(pd.DataFrame([{"value": None, "n_eval": 0, "n_failed": 0, "n_skipped": 5}]), "applied")
    assert none["value"] is None and none["coverage"] == 0.0


def test_effect_sizes():
    a, b = [1.0, 2.0, 3.0], [0.0, 1.0, 2.0]
    assert cohens_d(a, b) == pytest.approx(1.0)
    assert paired_dz({"x": 1, "y": 3, "z": 2}, {"x": 0, "y": 1, "z": 1.5}) == pytest.approx(
        np.mean([1, 2, .5]) / np.std([1, 2, .5], ddof=1))
    assert cohens_d([1.0], [2.0, 3.0]) is None


@pytest.mark.parametrize("bad", ["a|b", "a/b", "..", "x..y", "a b", "", "é", "g" * 101, "x" * 250])
def test_bad_names_rejected(bad):
    with pytest.raises(BadName):
        validate_key(bad)


def test_names_and_partitions():
    assert validate_key("faith-ful_1.0") == "faith-ful_1.0"
    assert sanitize_key("My Model / v2") == "My_Model_v2"
    key = ENTITYBENCH.key("faithful", "e0001")
    assert str(key) == "e0001|faithful"
    assert ENTITYBENCH.split("e0001|faithful") == ("faithful", "e0001")
    assert ENTITYBENCH.items.name == "entitybench_episodes" and ENTITYBENCH.generators.name == "entitybench_generators"
    # the item dimension and its plural are the caller's words (core knows no benchmark)
    stories = BenchmarkPartitions("b", "story", "stories")
    assert stories.items.name == "b_stories" and str(stories.key("g", "s1")) == "g|s1"
    assert stories.split("g|s1") == ("g", "s1")


def test_long_names_fail_before_any_model_runs():
    assert validate_key("g" * 100) == "g" * 100
    with pytest.raises(BadName, match="250 characters long; at most 100"):
        validate_key("x" * 250, "generator name")
    derived = sanitize_key("a long title " * 30)
    assert len(derived) <= 100 and derived != sanitize_key("a long title " * 31)  # a digest keeps them apart


@pytest.mark.parametrize("content,expect", [
    (b"name: [unclosed\nbenchmark: entitybench\n", "not valid YAML (expected ',' or ']', but got ':' at line 2"),
    ("name: g\nbenchmark: entitybench\n".encode("utf-16"), "not UTF-8 text"),
    (b"- just\n- a list\n", "must be a mapping"),
    (b"", "must be a mapping"),
    (b"name: 123\nbenchmark: entitybench\n", "'name' must be text"),
    (b"name: other\nbenchmark: entitybench\n", "differs from the folder name"),
    (b"name: g\n", "needs a 'benchmark'"),
    (b"name: g\nbenchmark: [1]\n", "needs a 'benchmark'"),
    (b"name: 'g|x'\nbenchmark: entitybench\n", "silently drops"),
])
def test_generator_yaml_errors_are_one_line(tmp_path, content, expect):
    from bench_assets.core.generators import GeneratorError, discover_generators, read_generator
    folder = tmp_path / "g"
    folder.mkdir()
    (folder / "generator.yaml").write_bytes(content)
    with pytest.raises(GeneratorError) as e:
        read_generator(folder)
    assert expect in str(e.value) and "\n" not in str(e.value) and "'g'" in str(e.value)
    gens, errors = discover_generators(tmp_path)
    assert gens == [] and len(errors) == 1


def test_generator_folder_problems(tmp_path):
    from bench_assets.core.generators import GeneratorError, read_generator
    with pytest.raises(GeneratorError, match="does not exist"):
        read_generator(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(GeneratorError, match="no generator.yaml"):
        read_generator(tmp_path / "empty")
    long = tmp_path / ("x" * 200)
    long.mkdir()
    (long / "generator.yaml").write_text(f"name: {'x' * 200}\nbenchmark: entitybench\n")
    with pytest.raises(GeneratorError, match="200 characters long"):
        read_generator(long)


def test_manifest_comparability():
    base = dict(benchmark="entitybench", protocol="p1", judge={"model": "m"}, constants={"tau": 0.5},
                models={"image_embedder": {"fingerprint": "abc"}})
    a, b = build_manifest(**base), build_manifest(**base)
    assert comparability(a, b) == (True, [])
    assert protocol_digest(a) == protocol_digest(b)
    c = build_manifest(**{**base, "models": {"image_embedder": {"fingerprint": "xyz"}}})
    ok, diffs = comparability(a, c)
    assert not ok and diffs == ["models.image_embedder.fingerprint"]
    d = dict(a, code_revision="other")
    assert comparability(a, d)[0]


def _write_video(path, frames, fps=8):
    h, w = frames[0].shape[:2]
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    for f in frames:
        vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    vw.release()


def test_clip_cache_decodes_once(tmp_path):
    rng = np.random.default_rng(0)
    frames = [rng.integers(0, 255, (64, 96, 3), dtype=np.uint8) for _ in range(10)]
    p = tmp_path / "shot_01.mp4"
    _write_video(p, frames)
    cache = media.ClipCache()
    d0 = media.decode_count()
    c1 = cache.get(p)
    c2 = cache.get(p)
    idx, sub = c1.even(5)
    assert c1 is c2 and media.decode_count() - d0 == 1
    assert c1.n_frames == 10 and c1.size == (96, 64) and idx == [0, 2, 4, 7, 9] and sub.shape == (5, 64, 96, 3)
    bad = tmp_path / "bad.mp4"
    bad.write_bytes(b"not a video")
    with pytest.raises(media.DecodeError, match="bad.mp4"):
        cache.get(bad)
    assert media.fps_indices(24, 24.0, 8.0) == [0, 3, 6, 9, 12, 15, 18, 21]


def test_grounding_factors():
    flat = np.full((50, 50, 3), 128, np.uint8)
    noisy = np.random.default_rng(0).integers(0, 255, (50, 50, 3), dtype=np.uint8)
    assert a_sharp(flat) == pytest.approx(1 / (1 + np.exp(0.5)))
    assert a_sharp(noisy) > 0.99
    assert a_area(np.array([0, 0, 10, 10]), (100, 100)) == pytest.approx(1 / (1 + np.exp(0.2)))
    crop = crop_box(noisy, np.array([10, 10, 30, 30]))
    assert crop.shape == (224, 224, 3)
    c = Candidate(0, (0, 0, 1, 1), 0.9, "person", None, 0.5, 0.5)
    assert c.score == pytest.approx(0.225)
    assert decide_status(None, False, 0.5) == "absent"
    assert decide_status(c, False, 0.5) == "present"
    assert decide_status(Candidate(0, (0, 0, 1, 1), 0.9, "p", 0.1, 1, 1), True, 0.5) == "weak"


def _dis(pairs):
    out = []
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_MEDIUM)
    for a, b in pairs:
        out.append(dis.calc(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY), None))
    return out


def test_pillar1_math():
    rng = np.random.default_rng(1)
    base = cv2.GaussianBlur(rng.integers(0, 255, (96, 128, 3), dtype=np.uint8), (7, 7), 2)
    static = np.stack([base] * 8)
    moving = np.stack([np.roll(base, 2 * t, axis=1) for t in range(8)])
    jumpy = np.stack([np.roll(base, int(rng.integers(0, 60)), axis=1) for _ in range(8)])
    assert M.temporal_flickering(static) == 1.0
    assert M.temporal_flickering(moving) < 1.0
    assert M.motion_smoothness(static, _dis) == pytest.approx(1.0)
    assert M.motion_smoothness(moving, _dis) > M.motion_smoothness(jumpy, _dis)
    assert M.dynamic_degree(static, 8.0, _dis) == 0.0
    fast = np.stack([np.roll(base, 8 * t, axis=1) for t in range(8)])
    assert M.dynamic_degree(fast, 8.0, _dis) == 1.0
    e = np.array([[1, 0], [1, 0], [0, 1]], float)
    assert M.subject_consistency(e) == pytest.approx(0.5)
    c, s = M.centroid_scores(np.array([[1, 0], [0, 1]], float))
    assert np.allclose(s, [np.sqrt(.5), np.sqrt(.5)])
    assert M.presence_share(["present", "absent", "unavailable"]) == 0.5
    assert M.presence_share(["unavailable"]) is None


def test_effect_size_table_refuses_mixed_protocols():
    from bench_assets.entitybench.board import effect_size_table
    rec = pd.DataFrame([
        {"generator": "a", "item": "e1", "metric_id": "m", "value": 0.9, "protocol": "p"},
        {"generator": "a", "item": "e2", "metric_id": "m", "value": 0.8, "protocol": "p"},
        {"generator": "a", "item": "e3", "metric_id": "m", "value": 0.7, "protocol": "p"},
        {"generator": "b", "item": "e1", "metric_id": "m", "value": 0.5, "protocol": "p"},
        {"generator": "b", "item": "e2", "metric_id": "m", "value": 0.6, "protocol": "p"},
        {"generator": "b", "item": "e3", "metric_id": "m", "value": 0.2, "protocol": "p"},
        {"generator": "c", "item": "e1", "metric_id": "m", "value": 0.5, "protocol": "q"},
        {"generator": "c", "item": "e2", "metric_id": "m", "value": 0.4, "protocol": "q"},
    ])
    t = effect_size_table(rec).set_index(["generator_a", "generator_b"])
    ab = t.loc[("a", "b")]
    assert ab.comparable and ab.cohens_d == pytest.approx(cohens_d([.9, .8, .7], [.5, .6, .2]))
    assert ab.d_z == pytest.approx(paired_dz({"e1": .9, "e2": .8, "e3": .7}, {"e1": .5, "e2": .6, "e3": .2}))
    ac = t.loc[("a", "c")]
    assert not ac.comparable and pd.isna(ac.cohens_d) and pd.isna(ac.d_z) and "manifests differ" in ac.reason
