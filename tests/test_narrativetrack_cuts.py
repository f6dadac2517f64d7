"""Cut detection (issue 23): the validity case's scoring (pure) and shot_ids on camera motion vs cuts.

The footage tests read only validation clips' frames for checks that were not fitted on them (the case itself runs
under ``bench validate``); the camera-motion checks use frames built here."""
from __future__ import annotations

import numpy as np
import pytest

from bench_assets.narrativetrack import validity as NV


def test_cut_counts_scores_intervals_between_samples():
    idx = [0, 25, 50, 75, 100]
    # a cut at 30 (interval 25-50) and two at 60 and 70 (one interval, counted once); one at 120: after the last sample
    cuts = [30, 60, 70, 120]
    # found the first, missed the second, a false change in 75-100
    shots = [0, 0, 1, 1, 2]
    assert NV.cut_counts(idx, shots, cuts) == {"intervals_with_cut": 2, "found": 1, "false": 1}
    # a cut on a sampled frame belongs to the interval that ends there (a < c <= b)
    assert NV.cut_counts([0, 25, 50], [0, 1, 1], [25]) == {"intervals_with_cut": 1, "found": 1, "false": 0}
    assert NV.cut_counts([0, 25, 50], [0, 0, 1], [25]) == {"intervals_with_cut": 1, "found": 0, "false": 1}


def test_cut_rows_pool_the_clips_and_keep_no_cut_clips_apart():
    rows = NV.cut_rows({"a": ({"intervals_with_cut": 4, "found": 3, "false": 1}, 0.5),
                        "b": ({"intervals_with_cut": 0, "found": 0, "false": 2}, 1.5)})
    got = {(r["generator"], r["unit"], r["metric_id"]): r for r in rows}
    assert got[(NV.PIPELINE, "a", NV.CUT_RECALL)]["value"] == pytest.approx(0.75)
    assert got[(NV.PIPELINE, "a", NV.FALSE_CUTS)]["value"] == pytest.approx(2.0)
    assert got[(NV.PIPELINE, "b", NV.CUT_RECALL)]["value"] is None
    assert "no labelled cut" in got[(NV.PIPELINE, "b", NV.CUT_RECALL)]["reason"]
    assert got[(NV.PIPELINE, "all", NV.CUT_RECALL)]["value"] == pytest.approx(0.75)
    assert got[(NV.PIPELINE, "all", NV.FALSE_CUTS)]["value"] == pytest.approx(3 / 2.0)
    assert got[(NV.TRUTH, "all", NV.CUT_RECALL)]["value"] == 1.0
    assert got[(NV.TRUTH, "all", NV.FALSE_CUTS)]["value"] == 0.0


def test_the_cut_case_reads_validation_clips_and_expects_the_pooled_unit():
    from bench_assets.core import footage
    case = next(c for c in NV.CASES if c.case_id == "cuts_moving_camera")
    assert all(footage.SOURCES[s].split == footage.VALIDATION for s in case.sources)
    assert {e.metric_id: (e.direction, e.margin, e.units) for e in case.expectations} == {
        NV.CUT_RECALL: (0, 0.2, "^all$"), NV.FALSE_CUTS: (0, 1.0, "^all$")}
    # every clip's cuts are labelled in its footage sidecar
    for clip in NV.CUT_VIDEOS:
        assert isinstance(footage.ground_truth(clip)["cuts"], list)


def _scene(seed: int, size=(600, 1000)) -> np.ndarray:
    """A textured colour 'scene' (smoothed noise at several scales), different per seed."""
    import cv2
    rng = np.random.default_rng(seed)
    img = np.zeros((*size, 3), np.float32)
    for k in (4, 16, 64):
        small = rng.uniform(0, 255, (size[0] // k + 1, size[1] // k + 1, 3)).astype(np.float32)
        img += cv2.resize(small, (size[1], size[0]), interpolation=cv2.INTER_CUBIC)
    return np.clip(img / 3, 0, 255).astype(np.uint8)


def _view(scene: np.ndarray, x: int, y: int = 100, w: int = 480, h: int = 270) -> np.ndarray:
    import cv2
    return cv2.resize(scene[y:y + h, x:x + w], (320, 180), interpolation=cv2.INTER_AREA)


def test_a_pan_is_one_shot_and_cuts_between_scenes_are_found():
    from bench_assets.narrativetrack import pipeline as PL
    a, b = _scene(1), _scene(2)
    # a pan of 120 px per sample (a quarter of the view) over scene a, a cut to scene b, a pan over b
    frames = [_view(a, x) for x in (0, 120, 240, 360, 480)] + [_view(b, x) for x in (0, 120, 240)]
    # the raw rule alone (compensation switched off) reads the pan as cuts: the case this change is for
    assert PL.shot_ids(frames, compensated=0.0)[:5] != [0] * 5
    assert PL.shot_ids(frames) == [0, 0, 0, 0, 0, 1, 1, 1]


def test_a_zoom_is_one_shot_and_a_cut_to_black_is_a_cut():
    import cv2
    from bench_assets.narrativetrack import pipeline as PL
    a = _scene(3)
    zoom = [cv2.resize(a[300 - h // 2:300 + h // 2, 500 - int(h * 16 / 18):500 + int(h * 16 / 18)], (320, 180),
                       interpolation=cv2.INTER_AREA) for h in (540, 460, 390)]
    black = np.zeros((180, 320, 3), np.uint8)
    assert PL.shot_ids(zoom + [black, black]) == [0, 0, 0, 1, 1]
    assert PL.shot_ids([]) == []


def test_readings_undo_the_camera_but_not_a_cut():
    from bench_assets.narrativetrack import cuts
    a, b = _scene(4), _scene(5)
    (raw_p, comp_p, moved), (raw_c, comp_c, _) = cuts.pair_readings([_view(a, 0), _view(a, 150), _view(b, 150)])
    assert moved and raw_p > 0.4 and comp_p < 0.1
    assert raw_c > 0.4 and comp_c > 0.4


def _write_video(path, frames, fps=25):
    import cv2
    h, w = frames[0].shape[:2]
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), fps, (w, h))
    for f in frames:
        out.write(np.ascontiguousarray(f[..., ::-1]))
    out.release()


def _parallax_then_cut() -> list:
    """100 native frames (25 fps): a fast pan over scene a whose lower band (nearer) moves 2.5x as fast, with a patch
    of scene c passing in front, then at frame 62 a hard cut to a slow pan over scene b."""
    a, b, c = _scene(11, (600, 1800)), _scene(12, (600, 1800)), _scene(13)
    patch = _view(c, 300)[:140, :130]
    frames = []
    for k in range(100):
        if k < 62:
            f = _view(a, 8 * k).copy()
            f[100:] = _view(a, 20 * k + 200, y=300)[100:]
            x = 340 - 6 * k                      # the occluder crosses the view right to left
            x0, x1 = max(x, 0), min(x + 130, 320)
            if x1 > x0:
                f[40:180, x0:x1] = patch[:, x0 - x:x1 - x]
        else:
            f = _view(b, 2 * k)
        frames.append(f)
    return frames


def test_the_frame_by_frame_check_passes_parallax_and_occluders_and_keeps_the_cut(tmp_path):
    from bench_assets.narrativetrack import pipeline as PL
    native = _parallax_then_cut()
    path = tmp_path / "parallax.avi"
    _write_video(path, native)
    idx = [0, 25, 50, 75]
    frames = [native[i] for i in idx]
    # at 1 fps the moving seconds change most pixels: the raw rule alone cuts them
    assert PL.shot_ids(frames, compensated=0.0, abrupt=None)[:3] != [0, 0, 0]
    # re-read frame by frame, only the abrupt change (frame 62, in 50-75) is a cut
    assert PL.shot_ids(frames, video_path=str(path), frame_index=idx) == [0, 0, 0, 1]
    # the check decides: a threshold no pair reaches drops every flagged second, the cut included
    assert PL.shot_ids(frames, video_path=str(path), frame_index=idx, abrupt=0.999, blend=None) == [0, 0, 0, 0]
    # a span past the frames the file holds has no reading (its pair keeps the sampled judgement)
    from bench_assets.narrativetrack import constants, cuts
    got = cuts.abrupt_readings(str(path), [(50, 75), (90, 130)])
    assert got[(90, 130)] is None and got[(50, 75)][0] > constants.CUT_ABRUPT_FRACTION
    # the moving second (parallax, occluder): its frames are no mix of its two ends (not read as a dissolve)
    assert cuts.abrupt_readings(str(path), [(0, 25)])[(0, 25)][1] > constants.CUT_BLEND_RESIDUAL


def test_abrupt_reading_is_low_for_motion_and_high_across_a_cut():
    from bench_assets.narrativetrack import constants, cuts
    native = _parallax_then_cut()
    assert cuts.abrupt_reading(native[25:51]) < constants.CUT_ABRUPT_FRACTION < cuts.abrupt_reading(native[50:76])


def test_a_cut_from_black_to_a_dark_picture_is_found():
    from bench_assets.narrativetrack import constants, cuts
    from bench_assets.narrativetrack import pipeline as PL
    rng = np.random.default_rng(0)
    black = np.clip(rng.normal(2, 1.5, (180, 320, 3)), 0, 255).astype(np.uint8)
    dark = (_view(_scene(6), 100).astype(np.float32) * 0.15).astype(np.uint8)
    dark2 = (_view(_scene(6), 110).astype(np.float32) * 0.15).astype(np.uint8)
    r = cuts.pair_signals([black, dark])[0]
    assert r.raw < constants.CUT_CHANGED_FRACTION      # too few pixels change by much: the raw rule misses it
    assert PL.shot_ids([black, black, dark, dark2]) == [0, 0, 1, 1]
    assert PL.shot_ids([black, dark], black=0.0) == [0, 0]    # the black rule is what finds it
    assert PL.shot_ids([dark, black]) == [0, 1]


def test_a_dissolve_is_a_cut_where_the_native_frames_are_read(tmp_path):
    from bench_assets.narrativetrack import constants, cuts
    from bench_assets.narrativetrack import pipeline as PL
    a, b = _view(_scene(21), 100).astype(np.float32), _view(_scene(22), 300).astype(np.float32)
    # a still shot of a, a 12-frame dissolve to b in frames 30-42 (inside the sampled second 25-50), then b
    native = [(a * (1 - w) + b * w).astype(np.uint8) for w in np.clip((np.arange(75) - 30) / 12, 0, 1)]
    path = tmp_path / "dissolve.avi"
    _write_video(path, native)
    idx = [0, 25, 50]
    frames = [native[i] for i in idx]
    assert PL.shot_ids(frames, video_path=str(path), frame_index=idx) == [0, 0, 1]
    # no consecutive pair changes much: without the dissolve reading the frame check drops it
    assert PL.shot_ids(frames, video_path=str(path), frame_index=idx, blend=None) == [0, 0, 0]
    th = [cuts.FrameFeatures(f).thumb for f in native[25:51]]
    assert cuts.blend_residual(th) < constants.CUT_BLEND_RESIDUAL
    # a pan's frames are no mix of its ends
    pan = [_view(_scene(23), 8 * k) for k in range(26)]
    assert cuts.blend_residual([cuts.FrameFeatures(f).thumb for f in pan]) > constants.CUT_BLEND_RESIDUAL
