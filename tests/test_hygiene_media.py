"""Files as they come (issue 23 item 6, issue 26 item 6): a file cut short is evaluated on what it holds, frame times
come from the timestamps, concealed decode errors are reported, a display rotation is applied, 4K frames are streamed downscaled
with the scale recorded, a second video stream is named (issue 39), and every finding reaches the Dagster step's log."""
from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import yaml

from bench_assets.core import media
from tests.support.media import _frame, write  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------------------------------ cut short

def test_file_cut_short_is_evaluated_on_what_it_holds(tmp_path, caplog):
    full = write(tmp_path / "full.mp4", 120, "mp4", faststart=True).read_bytes()
    cut = tmp_path / "cut.mp4"
    cut.write_bytes(full[: int(len(full) * 0.4)])
    with caplog.at_level(logging.WARNING, logger="bench.media"):
        src = media.VideoSource(cut)
        grid = src.even(16)
        walked = []
        src.chunks(lambda idx, frames: walked.extend(idx), chunk=8)
        src.run()
    assert src.declared_frames == 120 and media.MIN_FRAMES_CUT_SHORT <= src.n_frames < 60
    assert grid.frames.shape[0] == len(grid.indices) and max(grid.indices) < src.n_frames
    assert walked == list(range(src.stats.frames_decoded))
    h = src.health()
    assert h["declared_frames"] == 120 and h["present_frames"] == src.n_frames
    assert f"declares 120 frames but the file holds {src.n_frames}" in h["warnings"][0]
    assert any("declares 120 frames" in r.getMessage() for r in caplog.records)   # logged for the step


def test_file_cut_below_the_minimum_is_an_error_naming_it(tmp_path):
    full = write(tmp_path / "full.mp4", 120, "mp4", faststart=True).read_bytes()
    data = full.index(b"mdat") + 4            # the index (moov) comes first: cut inside the first frames' data
    cut = tmp_path / "stub.mp4"
    cut.write_bytes(full[: data + (len(full) - data) // 60])
    with pytest.raises(media.DecodeError, match=rf"{cut}: the container declares 120 frames but the file holds "
                                                rf"[1-7]; .*fewer than {media.MIN_FRAMES_CUT_SHORT} frames"):
        media.VideoSource(cut)


def test_complete_file_has_no_warning(tmp_path):
    src = media.VideoSource(write(tmp_path / "ok.mp4", 30, "mp4"))
    src.even(4)
    src.run()
    assert src.warnings == [] and src.health()["lost_frames"] == 0 and src.health()["corrupt_frames"] == 0


# ------------------------------------------------------------------------------------------ frame times

def test_frame_times_follow_timestamps_not_the_header(tmp_path, caplog):
    """A 23.976 fps clip whose header states 30 fps (Matroska's default duration): sampling at 1 fps must step
    by 23.976 frames, as the timestamps say, not by 30."""
    p = write(tmp_path / "hdr30.mkv", 120, "matroska", rate=30, time_base=Fraction(1, 24000), step=1001)
    with caplog.at_level(logging.WARNING, logger="bench.media"):
        src = media.VideoSource(p)
    assert src.fps_header == pytest.approx(30.0)
    assert src.fps == pytest.approx(24000 / 1001, rel=1e-3)
    assert "header states 30.000 fps but the timestamps give 23.97" in src.warnings[0]
    t = src.frame_times()
    assert len(t) == 120 and t[24] == pytest.approx(1.001, abs=0.002) and t[-1] == pytest.approx(119 * 1.001 / 24,
                                                                                               abs=0.002)
    assert src.at_fps(1.0).indices == [0, 24, 48, 72, 96]   # at the header's 30: 0, 30, 60, 90


def test_agreeing_header_keeps_its_rate(tmp_path):
    src = media.VideoSource(write(tmp_path / "ok.mkv", 48, "matroska", rate=Fraction(24000, 1001),
                                  time_base=Fraction(1, 24000), step=1001))
    assert src.fps == src.fps_header and src.warnings == []


# ------------------------------------------------------------------------------------------ decode errors

def _corrupt_avi(tmp_path: Path) -> Path:
    good = write(tmp_path / "good.avi", 120, "avi", codec="mpeg4")
    raw = bytearray(good.read_bytes())
    for i in range(len(raw) // 3, len(raw) // 3 + 400):   # damage inside the data, headers intact
        raw[i] ^= 0xFF
    bad = tmp_path / "bad.avi"
    bad.write_bytes(bytes(raw))
    return bad


def test_corrupted_avi_that_ffmpeg_conceals_is_flagged(tmp_path):
    bad = _corrupt_avi(tmp_path)
    src = media.VideoSource(bad)
    seen = []
    src.chunks(lambda idx, frames: seen.extend(idx), chunk=16)
    src.run()
    h = src.health()
    assert h["corrupt_frames"] + h["lost_frames"] >= 1, h
    assert h["decoded_frames"] == len(seen) == src.n_frames - h["lost_frames"]
    assert any("concealed" in w or "ended after" in w for w in src.warnings), src.warnings
    clean = media.VideoSource(tmp_path / "good.avi")
    clean.chunks(lambda idx, frames: None)
    clean.run()
    assert clean.health()["corrupt_frames"] == clean.health()["lost_frames"] == 0 and clean.warnings == []


# ------------------------------------------------------------------------------------------ rotation

def _upright(w: int = 48, h: int = 64) -> np.ndarray:
    """A portrait picture whose only bright block is its top-left corner (16 rows x 12 columns)."""
    a = np.full((h, w, 3), 20, np.uint8)
    a[:16, :12] = 235
    return a


def write_rotated(path: Path, upright: np.ndarray, rotation: int, n: int = 12) -> Path:
    """``n`` frames stored turned so that a player applying the display rotation ``rotation`` (counter-clockwise
    degrees, FFmpeg's display matrix as phones write it) shows ``upright``."""
    stored = np.ascontiguousarray(np.rot90(upright, -(rotation // 90)))
    out = av.open(str(path), "w", format="mp4")
    s = out.add_stream("libx264", rate=24)
    s.height, s.width = stored.shape[:2]
    s.pix_fmt = "yuv420p"
    if rotation:
        s.set_display_rotation(rotation)
    for _ in range(n):
        for p in s.encode(av.VideoFrame.from_ndarray(stored, format="rgb24")):
            out.mux(p)
    for p in s.encode():
        out.mux(p)
    out.close()
    return path


def _bright_box(rgb: np.ndarray) -> tuple[int, int, int, int]:
    ys, xs = np.nonzero(rgb[..., 0] > 128)
    return int(ys.min()), int(ys.max()), int(xs.min()), int(xs.max())


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotation_is_applied_frames_upright(tmp_path, rotation):
    up = _upright()
    path = write_rotated(tmp_path / f"rot{rotation}.mp4", up, rotation)
    plain = write_rotated(tmp_path / "plain.mp4", up, 0)
    src = media.VideoSource(path)
    assert src.rotation == rotation and src.rotation_applied
    assert src.size == (48, 64)                                      # upright (W, H)
    assert src.stored_size == ((64, 48) if rotation in (90, 270) else (48, 64))
    one = src.take([0])
    small = src.take([0, 5], size=(24, 32), name="small")            # a resize is asked for in upright terms
    walked = []
    src.chunks(lambda idx, frames: walked.append(frames), chunk=4)
    src.run()
    frame = one.frames[0]
    assert frame.shape == (64, 48, 3) and frame.flags["C_CONTIGUOUS"]
    y0, y1, x0, x1 = _bright_box(frame)                              # the bright corner is top-left again
    assert (y0, x0) == (0, 0) and 14 <= y1 <= 17 and 10 <= x1 <= 13, (y0, y1, x0, x1)
    assert np.abs(frame.astype(int) - up.astype(int)).mean() < 4
    assert small.frames.shape == (2, 32, 24, 3)
    y0, y1, x0, x1 = _bright_box(small.frames[1])
    assert (y0, x0) == (0, 0) and y1 <= 9 and x1 <= 7
    assert all(f.shape[1:] == (64, 48, 3) for f in walked) and sum(len(f) for f in walked) == 12
    assert np.abs(walked[0][0].astype(int) - frame.astype(int)).max() == 0
    # an independent reader: OpenCV's capture applies the display matrix itself; the pictures agree
    import cv2
    cap = cv2.VideoCapture(str(path))
    ok, bgr = cap.read()
    cap.release()
    assert ok and np.abs(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB).astype(int) - frame.astype(int)).mean() < 2
    h = src.health()
    assert h["rotation"] == rotation and h["rotation_applied"] is True
    # a note, not a decode warning: the board's decode-warnings count (the warnings) stays clean
    assert src.warnings == [] and h["warnings"] == []
    assert len(h["notes"]) == 1 and f"display rotation {rotation} degrees applied" in h["notes"][0], h
    # frame indices, times and rate are the stream's, as for the same frames stored upright
    ref = media.VideoSource(plain)
    assert ref.rotation == 0 and not ref.rotation_applied and ref.warnings == []
    assert ref.health()["rotation_applied"] is False
    assert (src.n_frames, src.fps) == (ref.n_frames, ref.fps)
    assert np.allclose(src.frame_times(), ref.frame_times())
    assert media.VideoSource(path).at_fps(6.0).indices == ref.at_fps(6.0).indices == [0, 4, 8]


def test_rotated_shot_through_the_legacy_clip_and_a_benchmark_reader(tmp_path):
    """decode_video (whole clips), EntityBench's frame reader and ViStoryBench's shot reader (OpenCV, which applies
    the display matrix itself) hand the same upright picture."""
    from bench_assets.entitybench import frames as eb_frames
    from bench_assets.vistorybench.dataset import read_shot_image
    path = write_rotated(tmp_path / "rot270.mp4", _upright(), 270)
    clip = media.decode_video(path)
    assert clip.size == (48, 64) and _bright_box(clip.frames[3])[::2] == (0, 0)
    shot = eb_frames.ShotFrameCache().get(path)
    assert shot.size == (48, 64)
    sampled = [shot.frames[i] for i in eb_frames.sample_indices(shot.n_frames)]
    assert sampled and all(f.shape == (64, 48, 3) and _bright_box(f)[::2] == (0, 0) for f in sampled)
    first = read_shot_image(path)
    assert first.shape == (64, 48, 3) and np.abs(first.astype(int) - clip.frames[0].astype(int)).mean() < 2


# ------------------------------------------------------------------------------------------ several video streams

def write_two_streams(path: Path, n: int = 12, levels=(220, 30), sizes=((64, 48), (32, 32))) -> Path:
    """One container, two video streams of ``n`` frames: the first a flat grey of ``levels[0]`` at ``sizes[0]``,
    the second of ``levels[1]`` at ``sizes[1]`` (a shot muxed with a second angle or a leftover draft)."""
    out = av.open(str(path), "w", format="mp4")
    streams = []
    for w, h in sizes:
        s = out.add_stream("libx264", rate=24)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        streams.append(s)
    for _ in range(n):
        for s, level, (w, h) in zip(streams, levels, sizes):
            for pkt in s.encode(av.VideoFrame.from_ndarray(np.full((h, w, 3), level, np.uint8), format="rgb24")):
                out.mux(pkt)
    for s in streams:
        for pkt in s.encode():
            out.mux(pkt)
    out.close()
    return path


@pytest.mark.parametrize("levels, sizes", [((220, 30), ((64, 48), (32, 32))), ((40, 200), ((48, 48), (80, 64)))])
def test_second_video_stream_is_a_decode_finding_naming_the_file(tmp_path, caplog, levels, sizes):
    """Was: scored on the first stream in silence. The first is still the one scored (its frames, its size), and the
    file carries a decode warning naming it and each ignored stream, in the health record and the step's log."""
    path = write_two_streams(tmp_path / "two.mp4", levels=levels, sizes=sizes)
    with caplog.at_level(logging.WARNING, logger="bench.media"):
        src = media.VideoSource(path)
        grid = src.even(4)
        src.run()
    found = [x for x in src.warnings if "video streams" in x]
    assert len(found) == 1, src.warnings
    w = found[0]
    assert src.size == sizes[0] and src.n_frames == 12 and src.video_streams == 2
    assert abs(float(grid.frames.mean()) - levels[0]) < 3              # the first stream's pictures
    assert w.startswith(f"{path}: holds 2 video streams; only the first is scored (stream #0: h264 "
                        f"{sizes[0][0]}x{sizes[0][1]}"), w
    assert f"ignored (stream #1: h264 {sizes[1][0]}x{sizes[1][1]}" in w, w
    assert w in src.decode_warnings and w in src.decode_record()["decode_warnings"]
    assert src.health()["video_streams"] == 2 and w in src.health()["warnings"]
    assert any("holds 2 video streams" in r.getMessage() for r in caplog.records)
    one = media.VideoSource(write(tmp_path / "one.mp4", 12, "mp4"))
    assert one.video_streams == 1 and one.warnings == []


# ------------------------------------------------------------------------------------------ size bound

def test_bounded_size():
    assert media.bounded_size((4096, 2160), 2048) == ((2048, 1080), 0.5)
    assert media.bounded_size((1920, 1080), 2048) == (None, 1.0)
    assert media.bounded_size((4096, 2160), 0) == (None, 1.0)
    size, scale = media.bounded_size((3000, 1001), 1024)
    assert size[0] == 1024 and size[1] % 2 == 0 and scale == pytest.approx(1024 / 3000)


def test_4k_frames_are_streamed_downscaled_with_the_scale_recorded(tmp_path):
    p = write(tmp_path / "uhd.mp4", 3, "mp4", w=4096, h=2160)
    src = media.VideoSource(p)
    native = src.take([0])                         # gathered frames keep their native size
    shapes = []
    src.chunks(lambda idx, frames: shapes.append(frames.shape), chunk=2, name="flow")
    src.run()
    assert shapes == [(2, 1080, 2048, 3), (1, 1080, 2048, 3)]
    assert native.frames.shape == (1, 2160, 4096, 3)
    assert src.stats.stream_scale == 0.5 and src.health()["stream_scale"] == 0.5
    assert any("4096x2160 frames are streamed to flow at 2048x1080 (scale 0.500" in w for w in src.warnings)


def test_stream_bound_is_configurable(tmp_path, monkeypatch):
    p = write(tmp_path / "small.mp4", 4, "mp4", w=64, h=48)
    monkeypatch.setenv("BENCH_MAX_STREAM_SIDE", "32")
    src = media.VideoSource(p)
    got = []
    src.chunks(lambda idx, frames: got.append(frames.shape), chunk=4)
    src.run()
    assert got == [(4, 24, 32, 3)] and src.stats.stream_scale == 0.5
    monkeypatch.setenv("BENCH_MAX_STREAM_SIDE", "0")       # 0: no bound
    src = media.VideoSource(p)
    src.chunks(lambda idx, frames: got.append(frames.shape), chunk=4)
    src.run()
    assert got[-1] == (4, 48, 64, 3) and src.stats.stream_scale == 1.0


def test_stream_bound_setting_is_validated():
    from bench_resources.settings import ConfigError, validate_environment
    with pytest.raises(ConfigError, match="BENCH_MAX_STREAM_SIDE='big' is not an integer"):
        validate_environment({"BENCH_MAX_STREAM_SIDE": "big"})
    with pytest.raises(ConfigError, match="BENCH_MAX_STREAM_SIDE='-1'"):
        validate_environment({"BENCH_MAX_STREAM_SIDE": "-1"})


# ------------------------------------------------------------------------------------------ reaches the step log

def test_media_warnings_reach_the_dagster_step_log(tmp_path):
    """dagster.yaml manages the ``bench.media`` logger: a finding made inside a step is in the run's event log,
    where the UI shows it on the step and `bench evaluate` prints it in its warning summary."""
    from dagster import asset, instance_for_test, materialize
    cfg = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    assert "bench.media" in cfg["python_logs"]["managed_python_loggers"]
    p = write(tmp_path / "hdr30.mkv", 30, "matroska", rate=30, time_base=Fraction(1, 24000), step=1001)

    @asset
    def probe_it() -> int:
        return media.VideoSource(p).n_frames

    with instance_for_test(overrides={"python_logs": cfg["python_logs"]}) as instance:
        res = materialize([probe_it], instance=instance)
        assert res.success
        msgs = [r.user_message for r in instance.all_logs(res.run_id) if not r.is_dagster_event]
    assert any("header states 30.000 fps" in m for m in msgs), msgs


def test_applied_rotation_is_an_info_note_in_the_dagster_step_log(tmp_path):
    import logging
    from dagster import asset, instance_for_test, materialize
    cfg = yaml.safe_load((ROOT / "dagster.yaml").read_text())
    p = write_rotated(tmp_path / "portrait.mp4", _upright(), 90)

    @asset
    def open_it() -> int:
        return media.VideoSource(p).size[1]

    with instance_for_test(overrides={"python_logs": cfg["python_logs"]}) as instance:
        res = materialize([open_it], instance=instance)
        assert res.success and res.output_for_node("open_it") == 64
        recs = [r for r in instance.all_logs(res.run_id) if not r.is_dagster_event and "display rotation" in
                (r.user_message or "")]
    assert [r.level for r in recs] == [logging.INFO], [(r.level, r.user_message) for r in recs]
    assert "display rotation 90 degrees applied" in recs[0].user_message
