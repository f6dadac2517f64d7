"""Drawn faces on the calibration side (issue 23 item 2): Ren'Py's sprites registered as calibration sources
(core/footage.py), fetched from Debian packages under names without spaces, read composited onto one plain
background; the face thresholds stay fitted on real faces only and the drawn faces are only reported
(core/face_calibration.py ``drawn_report``). Fast: no footage is decoded (a tiny .deb is built here)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from bench_assets.core import face_calibration as FC
from bench_assets.core import footage as F

ROOT = Path(__file__).resolve().parents[1]
CALIBRATED = {"narrativetrack": ROOT / "bench_assets" / "narrativetrack" / "face_calibration.json",
              "mbench": ROOT / "bench_assets" / "mbench" / "identity_calibration.json"}
DRAWN = sorted(n for n, s in F.SOURCES.items() if s.faces == "animated" and s.split == F.CALIBRATION)


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_drawn_sprites_are_calibration_drawings_with_labels_and_pinned_debs(monkeypatch):
    assert len(DRAWN) == 14 and all(F.SOURCES[n].kind == "drawing" and " " not in n for n in DRAWN)
    for n in DRAWN:
        pkg = F.PACKAGES[F.SOURCES[n].package]
        assert pkg.how == "deb" and pkg.version == "8.0.3+dfsg-1", n
    # every drawn source has hand labels, and every drawn identity names a labelled person of a drawn source
    stills = F.ground_truth("stills.yaml")
    assert all(any(p["face_visible"] for p in stills[n]["people"].values()) for n in DRAWN)
    for k, v in stills["drawn_identity"]["same_as"].items():
        for key in (k, v):
            src, person = key.rsplit("/", 1)
            assert src in DRAWN and person in stills[src]["people"], key
    # no drawn identity leaks into the real-face fit's identities
    assert not any(k.split("/")[0] in DRAWN or v.split("/")[0] in DRAWN
                   for k, v in stills["calibration_identity"]["same_as"].items())
    bad = dict(F.SOURCES)
    bad["x.png"] = F.Source("x.png", "renpy-demo", "x.png", "0" * 64, "sprite", F.CALIBRATION)
    monkeypatch.setattr(F, "SOURCES", bad)
    assert any("kind 'sprite'" in p for p in F.check_registry())


def test_read_drawing_composites_alpha_onto_the_one_background(tmp_path):
    rgba = np.zeros((2, 3, 4), np.uint8)
    rgba[0, 0] = (10, 20, 30, 255)      # opaque: its own colour
    rgba[0, 1] = (0, 0, 0, 0)           # transparent black: the background, not black
    rgba[0, 2] = (200, 0, 0, 0)         # transparent red: the background too (hidden RGB is not the drawing)
    rgba[1, 0] = (0, 0, 0, 128)         # half black: half-way to the background
    Image.fromarray(rgba, "RGBA").save(tmp_path / "s.png")
    got = F.read_drawing(tmp_path / "s.png")
    bg = np.array(F.DRAWING_BACKGROUND)
    assert got.shape == (2, 3, 3) and got.dtype == np.uint8
    assert tuple(got[0, 0]) == (10, 20, 30) and (got[0, 1] == bg).all() and (got[0, 2] == bg).all()
    assert np.allclose(got[1, 0], bg * 127 / 255, atol=1.5)
    Image.fromarray(rgba[..., :3], "RGB").save(tmp_path / "rgb.png")      # an RGB file is read as it is
    assert (F.read_drawing(tmp_path / "rgb.png") == rgba[..., :3]).all()


@pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="needs dpkg-deb (Debian)")
def test_a_deb_member_with_spaces_is_fetched_by_its_pinned_version_under_its_cache_name(tmp_path, monkeypatch):
    # a real .deb holding "x/eileen happy.png", served by an apt-get on PATH that records what it was asked for
    tree = tmp_path / "tree"
    (tree / "DEBIAN").mkdir(parents=True)
    (tree / "DEBIAN" / "control").write_text("Package: fake-renpy\nVersion: 1.2-3\nArchitecture: all\n"
                                             "Maintainer: t <t@t>\nDescription: t\n")
    (tree / "x").mkdir()
    (tree / "x" / "eileen happy.png").write_bytes(b"drawn bytes")
    deb = tmp_path / "fake-renpy_1.2-3_all.deb"
    subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(tree), str(deb)], check=True,
                   capture_output=True)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    apt = bindir / "apt-get"
    apt.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/asked\ncp {deb} .\n")
    apt.chmod(apt.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("BENCH_FOOTAGE_DIR", str(tmp_path / "cache"))
    import hashlib
    h = hashlib.sha256(b"drawn bytes").hexdigest()
    pkg = F.Package("fake-renpy", "1.2-3", "deb")
    src = F.Source("fake_eileen_happy.png", "fake-renpy", "x/eileen happy.png", h, "drawing", F.CALIBRATION)
    work = tmp_path / "work"
    work.mkdir()
    F._fetch_deb(work, pkg, [src], log=lambda m: None)
    assert (tmp_path / "asked").read_text().split() == ["download", "-q", "fake-renpy=1.2-3"]
    assert (tmp_path / "cache" / "fake_eileen_happy.png").read_bytes() == b"drawn bytes"
    # a pin the member does not match is refused, nothing enters the cache under the name
    wrong = F.Source("wrong.png", "fake-renpy", "x/eileen happy.png", "0" * 64, "drawing", F.CALIBRATION)
    work2 = tmp_path / "work2"
    work2.mkdir()
    with pytest.raises(RuntimeError, match="refusing"):
        F._fetch_deb(work2, pkg, [wrong], log=lambda m: None)
    assert not (tmp_path / "cache" / "wrong.png").exists()


def test_real_face_fit_selects_real_sources_and_refuses_a_drawn_one(monkeypatch, tmp_path):
    # no footage decoded: the labelled sources are listed with stand-in paths
    monkeypatch.setattr(F, "footage_path", lambda n: tmp_path / n)
    cal, _ = FC.calibration_sources(None)
    assert cal and all(F.SOURCES[n].faces == "real" for n in cal) and not set(cal) & set(DRAWN)
    drawn, same = FC.drawn_sources()
    assert sorted(drawn) == DRAWN and all(v["kind"] == "drawing" for v in drawn.values())
    assert same["renpy_concert1.png/eileen"] == "renpy_eileen_concerned.png/eileen"
    # a drawn source among the fitted ones (as a source or only through its faces) is refused
    face = {"source": "renpy_lucy_mad.png", "person": "lucy", "shot": 0, "t": 0, "emb": _unit([1, 0, 0])}
    with pytest.raises(FC.FitDomainError, match="renpy_lucy_mad.png"):
        FC.heldout_doc([face], {"renpy_lucy_mad.png": {}}, {}, [], {}, {}, 1, "t", None)
    with pytest.raises(FC.FitDomainError, match="renpy_lucy_mad.png"):
        FC.heldout_doc([face], {"obama.jpg": {}}, {}, [], {}, {}, 1, "t", None)
    FC.require_real_faces(["obama.jpg", "nt002"], "ok")        # photographs and the videos cut from them pass


def _faces(spec, rng):
    """spec: (source, person, direction) -> one face near that direction."""
    return [{"source": s, "person": p, "shot": 0, "t": 0, "emb": _unit(np.asarray(d, float) + rng.normal(0, .01, 3))}
            for s, p, d in spec]


def test_drawn_report_leaves_the_fit_alone_and_its_best_j_moves_with_the_pairs(tmp_path):
    rng = np.random.default_rng(3)
    for n in ("obama.jpg", "obama2.jpg", "biden.jpg", "renpy_lucy_happy.png", "renpy_lucy_mad.png",
              "renpy_concert1.png"):
        (tmp_path / n).write_bytes(n.encode())
    real = _faces([("obama.jpg", "obama", [1, 0, 0]), ("obama2.jpg", "obama", [1, .1, 0]),
                   ("biden.jpg", "biden", [0, 1, 0])], rng)
    real_srcs = {n: {"path": tmp_path / n} for n in ("obama.jpg", "obama2.jpg", "biden.jpg")}
    same = {"obama2.jpg/obama": "obama.jpg/obama"}
    dsrc = {n: {"path": tmp_path / n} for n in ("renpy_lucy_happy.png", "renpy_lucy_mad.png", "renpy_concert1.png")}
    dsame = {"renpy_lucy_mad.png/lucy": "renpy_lucy_happy.png/lucy", "renpy_concert1.png/lucy":
             "renpy_lucy_happy.png/lucy"}
    # separable drawn set: the three Lucys together, Eileen and the drummer far from them and from each other
    sep = _faces([("renpy_lucy_happy.png", "lucy", [0, 0, 1]), ("renpy_lucy_mad.png", "lucy", [0, .1, 1]),
                  ("renpy_concert1.png", "lucy", [.1, 0, 1]), ("renpy_concert1.png", "eileen", [1, 0, .1]),
                  ("renpy_concert1.png", "drummer", [0, 1, .1])], rng)
    plain = FC.heldout_doc(real, real_srcs, same, [], {}, {}, 1, "t", "m")
    with_sep = FC.heldout_doc(real, real_srcs, same, [], {}, {}, 1, "t", "m", drawn=(sep, dsrc, dsame))
    # the fitted document is the same with or without the drawn report
    assert {k: v for k, v in with_sep.items() if k != "drawn_calibration"} == plain
    d = with_sep["drawn_calibration"]
    assert d["at_threshold"]["n_same"] == 3 and d["at_threshold"]["n_different"] == 7     # C(5,2) = 10 pairs
    assert d["best_youden"]["j"] == 1.0 and d["at_threshold"]["j"] == pytest.approx(
        1 - d["at_threshold"]["false_split_rate"] - d["at_threshold"]["false_merge_rate"])
    assert {g["source"] for g in d["groups"]} == set(dsrc) and d["sources"]["renpy_concert1.png"]["faces"] == 3
    assert FC.drawn_rates(with_sep) == {k: d[k] for k in ("at_threshold", "best_youden")}
    # the same people drawn so that Eileen looks like Lucy: every threshold now errs, J falls, the fit does not move
    mixed = [dict(f) for f in sep]
    mixed[3]["emb"] = _unit([0, .05, 1])
    mixed[1]["emb"] = _unit([1, .2, 0])
    with_mixed = FC.heldout_doc(real, real_srcs, same, [], {}, {}, 1, "t", "m", drawn=(mixed, dsrc, dsame))
    m = with_mixed["drawn_calibration"]
    assert m["best_youden"]["j"] < 0.8 and with_mixed["threshold"] == plain["threshold"]
    assert m["at_threshold"]["false_merges"] >= 1
    # by hand: same .9 .5, different .6 .1 -> J .5 at .9 (the highest of the tied thresholds)
    pairs = [{"same": True, "cos": .9}, {"same": True, "cos": .5}, {"same": False, "cos": .6},
             {"same": False, "cos": .1}]
    assert FC.best_youden(pairs) == {"j": 0.5, "threshold": 0.9, "n_same": 2, "n_different": 2,
                                     "false_merge_rate": 0.0, "false_split_rate": 0.5}
    # no threshold better than merging nothing; no pair of a kind
    worst = FC.best_youden([{"same": True, "cos": .1}, {"same": False, "cos": .9}])
    assert worst["j"] == 0.0 and worst["threshold"] is None
    assert FC.best_youden(pairs[:2])["j"] is None


@pytest.mark.parametrize("bench", sorted(CALIBRATED))
def test_the_stored_drawn_report_recomputes_and_shows_in_the_threshold_rows(bench):
    doc = json.loads(CALIBRATED[bench].read_text())
    d = doc["drawn_calibration"]
    assert set(d["sources"]) == set(DRAWN) and all(v["kind"] == "animated" for v in d["sources"].values())
    # never fitted on: not among the fitted sources or groups, and the stored threshold recomputes without them
    fitted = set(doc["fitted_on"]) | set(doc["sources"]) | {g["source"] for g in doc["groups"]}
    assert not fitted & set(DRAWN) and all(FC.real_face_source(s) for s in fitted)
    assert FC.recompute(doc)["threshold"] == doc["threshold"]
    assert FC.drawn_rates(doc) == {k: d[k] for k in ("at_threshold", "best_youden")}
    n = len(d["groups"])
    assert d["at_threshold"]["n_same"] + d["at_threshold"]["n_different"] == n * (n - 1) // 2
    assert d["at_threshold"]["n_same"] >= 10 and d["at_threshold"]["n_different"] >= 20
    rows = FC.threshold_rows(doc, "T")
    row = [r for r in rows if r["threshold"] == "T [drawn cal]"]
    assert len(row) == 1 and row[0]["false_merge_rate"] == d["at_threshold"]["false_merge_rate"]
    assert "best Youden J" in row[0]["note"] and "not fitted on" in row[0]["note"]
    from bench_assets.core.validity import format_thresholds
    assert "T [drawn cal]" in format_thresholds([{"benchmark": bench, **r} for r in rows])
