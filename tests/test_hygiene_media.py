"""Files as they come (issue 23 item 6, issue 26 item 6): a file cut short is evaluated on what it holds, frame times
come from the timestamps, concealed decode errors and rotation are reported, 4K frames are streamed downscaled
with the scale recorded, and every finding reaches the Dagster step's log."""
from __future__ import annotations

import logging
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pytest
import yaml

from bench_assets.core import media

ROOT = Path(__file__).resolve().parents[1]


def _frame(i: int, w: int, h: int) -> np.ndarray:
    a = np.zeros((h, w, 3), np.uint8)
    a[:, (i * 5) % w] = 255                       # a moving bar: every frame differs
    a[..., 1] = (i * 9) % 256
    return a


def write(path: Path, n: int, fmt: str, codec: str = "libx264", w: int = 64, h: int = 48, rate=24,
          time_base: Fraction | None = None, step: int = 1, rotation: int = 0, faststart: bool = False) -> Path:
    """A video of ``n`` frames; ``rate`` is what the header states, ``time_base`` x ``step`` what the timestamps do."""
    out = av.open(str(path), "w", format=fmt, options={"movflags": "faststart"} if faststart else {})
    s = out.add_stream(codec, rate=rate)
    s.width, s.height, s.pix_fmt = w, h, "yuv420p"
    if rotation:
        s.set_display_rotation(rotation)
    if time_base is not None:
        s.codec_context.time_base = time_base
        s.time_base = Fraction(1, 1000) if fmt == "matroska" else time_base
    for i in range(n):
        f = av.VideoFrame.from_ndarray(_frame(i, w, h), format="rgb24")
        if time_base is not None:
            f.pts, f.time_base = i * step, time_base
        for p in s.encode(f):
            out.mux(p)
    for p in s.encode():
        out.mux(p)
    out.close()
    return path


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

def test_rotation_is_reported(tmp_path):
    src = media.VideoSource(write(tmp_path / "rot.mp4", 10, "mp4", rotation=90))
    src.take([0])
    src.run()
    assert src.rotation == 90 and src.health()["rotation"] == 90
    assert any("display rotation 90 degrees is not applied" in w for w in src.warnings)
    plain = media.VideoSource(write(tmp_path / "plain.mp4", 10, "mp4"))
    plain.take([0])
    plain.run()
    assert plain.rotation == 0 and plain.warnings == []


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
