"""The decode contract of core/media.py: one pass per video, only the needed frames converted, consecutive frames
in bounded chunks, clear errors for inputs that are not usable videos, a cache bounded in bytes."""
from __future__ import annotations

import gc
import weakref

import av
import numpy as np
import pytest

from bench_assets.core import media
from tests.support.video import write_video

W, H, N = 96, 64, 40


def _write(path, n=N, w=W, h=H, fps=8, seed=0, faststart=False):
    return write_video(path, n=n, w=w, h=h, fps=fps, seed=seed, faststart=faststart)


@pytest.fixture
def clip(tmp_path):
    return _write(tmp_path / "shot_01.mp4")


@pytest.fixture
def conversions(monkeypatch):
    """Counts RGB conversions at the decoder boundary and keeps weak references to every converted frame."""
    log = {"n": 0, "refs": []}
    real = media._to_rgb

    def counting(frame, size):
        out = real(frame, size)
        log["n"] += 1
        log["refs"].append(weakref.ref(out))
        return out

    monkeypatch.setattr(media, "_to_rgb", counting)
    log["alive"] = lambda: sum(r() is not None for r in log["refs"])
    return log


def test_one_pass_serves_every_consumer_and_converts_only_the_union(clip, conversions):
    full = media.decode_video(clip).frames  # reference decode (counted separately below)
    c0, n0 = media.counters(), conversions["n"]
    src = media.VideoSource(clip)
    assert (src.n_frames, src.size, src.fps) == (N, (W, H), 8.0)
    grid = src.even(5)
    rate = src.at_fps(2.0)
    some = src.take([3, 4, 5, 36])
    walked = []
    src.chunks(lambda idx, fr: walked.append((idx, fr.copy())), indices=range(10, 20), chunk=4)
    stats = src.run()
    c1 = media.counters()

    assert c1["passes"] - c0["passes"] == 1
    union = set(grid.indices) | set(rate.indices) | {3, 4, 5, 36} | set(range(10, 20))
    assert conversions["n"] - n0 == len(union) == stats.frames_converted == stats.frames_needed
    assert stats.frames_decoded == N  # the last needed frame is the last frame
    assert grid.indices == [0, 10, 20, 29, 39] and rate.indices == list(range(0, N, 4))
    for req in (grid, rate, some):
        assert np.array_equal(req.frames, full[req.indices])
    assert [w[0] for w in walked] == [[10, 11, 12, 13], [14, 15, 16, 17], [18, 19]]
    assert np.array_equal(np.concatenate([w[1] for w in walked]), full[10:20])


def test_decoding_stops_after_the_last_needed_frame(clip, conversions):
    src = media.VideoSource(clip)
    head = src.take([0, 2, 5])
    stats = src.run()
    assert stats.frames_decoded == 6 and conversions["n"] == 3 and head.frames.shape == (3, H, W, 3)


def test_chunks_overlap_and_hold_at_most_chunk_plus_overlap_frames(clip, conversions):
    src = media.VideoSource(clip)
    seen, alive = [], []

    def consume(idx, frames):
        gc.collect()
        alive.append(conversions["alive"]())  # converted frames the source still holds right now
        seen.append(idx)

    src.chunks(consume, chunk=8, overlap=1)
    stats = src.run()
    assert seen[0] == list(range(0, 8)) and seen[1] == list(range(7, 16)) and seen[-1][-1] == N - 1
    assert all(b[0] == a[-1] and b == list(range(b[0], b[-1] + 1)) for a, b in zip(seen, seen[1:]))
    assert max(alive) <= 8 + 1 and stats.peak_chunk_frames <= 8 + 1
    assert conversions["n"] == N  # consecutive walk: every frame converted once, none twice for the overlap


def test_pull_iteration_drives_the_same_single_pass(clip):
    p0 = media.decode_count()
    src = media.VideoSource(clip)
    grid = src.even(3)
    got = [idx for idx, fr in src.iter_chunks(indices=range(0, 12), chunk=5, overlap=2)]
    assert got == [[0, 1, 2, 3, 4], [3, 4, 5, 6, 7, 8, 9], [8, 9, 10, 11]]
    assert grid.frames.shape == (3, H, W, 3) and media.decode_count() - p0 == 1


def test_resize_is_shared_between_requests_of_the_same_size(clip, conversions):
    src = media.VideoSource(clip)
    a = src.take([0, 8, 16], size=(48, 32))
    b = src.at_fps(1.0, size=(48, 32))  # 0, 8, 16, 24, 32: three of them shared with `a`
    c = src.take([0])  # native size: its own conversion
    src.run()
    assert a.frames.shape == (3, 32, 48, 3) and b.frames.shape == (5, 32, 48, 3) and c.frames.shape == (1, H, W, 3)
    assert conversions["n"] == 5 + 1
    assert np.array_equal(a.frames, b.frames[:3])


def test_needs_are_stated_before_the_pass_and_the_pass_runs_once(clip):
    src = media.VideoSource(clip)
    req = src.even(4)
    with pytest.raises(RuntimeError, match="after"):
        req.frames
    src.run()
    with pytest.raises(RuntimeError, match="before the decode pass"):
        src.take([1])
    with pytest.raises(RuntimeError, match="already run"):
        src.run()
    with pytest.raises(media.DecodeError, match=f"frame {N} requested"):
        media.VideoSource(clip).take([N])


def test_unusable_inputs_raise_one_clear_error_naming_the_file(tmp_path):
    import cv2
    png = tmp_path / "still.png"
    cv2.imwrite(str(png), np.zeros((64, 64, 3), np.uint8))
    renamed = tmp_path / "renamed_png.mp4"
    renamed.write_bytes(png.read_bytes())
    tiny = _write(tmp_path / "tiny.mp4", n=4, w=2, h=2)
    zero = tmp_path / "zero.avi"
    c = av.open(str(zero), "w")
    s = c.add_stream("mpeg4", rate=8)
    s.width, s.height, s.pix_fmt = 64, 48, "yuv420p"
    c.start_encoding()
    c.close()
    full = _write(tmp_path / "whole.mp4").read_bytes()
    truncated = tmp_path / "truncated.mp4"  # index at the end: cut off with the tail
    truncated.write_bytes(full[: len(full) // 2])
    front = _write(tmp_path / "faststart.mp4", faststart=True).read_bytes()
    cut = tmp_path / "cut.mp4"  # index at the front: declares 40 frames, the data stops halfway
    cut.write_bytes(front[: len(front) // 2])
    garbage = tmp_path / "garbage.mp4"
    garbage.write_bytes(b"not a video at all" * 10)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    short = tmp_path / "short_cut.mp4"  # index at the front: declares 40 frames, holds fewer than the minimum
    short.write_bytes(front[: len(front) // 12])
    cases = {renamed: "still image", tmp_path: "is a directory", tiny: "2x2 is below the minimum",
             zero: "zero frames", truncated: "Invalid data", short: "the file is truncated", garbage: "cannot be opened",
             empty: "empty file", tmp_path / "missing.mp4": "not found"}

    def stream_all(path):  # probing alone cannot see a cut stream: the pass that needs the frames does
        src = media.VideoSource(path)
        src.chunks(lambda i, f: None)
        src.run()

    for path, why in cases.items():
        for fn in (stream_all, media.decode_video, media.ClipCache().get):
            with pytest.raises(media.DecodeError) as e:
                fn(path)
            assert str(path) in str(e.value) and why in str(e.value), (path, str(e.value))
    src = media.VideoSource(cut)  # a file cut short is evaluated on the frames it holds, the cut recorded
    assert src.declared_frames == N and media.MIN_FRAMES_CUT_SHORT <= src.n_frames < N
    head = src.take([0, 5, src.n_frames - 1])
    src.run()
    assert head.frames.shape == (3, H, W, 3)
    assert any(f"declares {N} frames but the file holds {src.n_frames}" in w for w in src.warnings)
    assert media.decode_video(cut).n_frames >= media.MIN_FRAMES_CUT_SHORT


def test_clip_cache_is_bounded_in_bytes(tmp_path):
    paths = [_write(tmp_path / f"shot_{i}.mp4", n=10, seed=i) for i in range(3)]
    one = 10 * H * W * 3
    cache = media.ClipCache(max_bytes=int(2.5 * one))
    p0 = media.decode_count()
    clips = [cache.get(p) for p in paths]
    assert len(cache) == 2 and cache.bytes == 2 * one <= cache.max_bytes
    assert cache.get(paths[2]) is clips[2] and media.decode_count() - p0 == 3  # kept: no decode
    assert cache.get(paths[0]) is not clips[0] and media.decode_count() - p0 == 4  # evicted: decoded again
    small = media.ClipCache(max_bytes=one - 1)  # a clip larger than the bound is served, not kept
    assert small.get(paths[0]).n_frames == 10 and len(small) == 0 and small.bytes == 0
    legacy = media.ClipCache(max_clips=1)  # callers that still pass a clip count
    legacy.get(paths[0]), legacy.get(paths[1])
    assert len(legacy) == 1


def test_decoder_info_names_the_decoder_and_versions():
    info = media.decoder_info()
    assert info["decoder"] == "pyav" and info["pyav"] == av.__version__ and info["ffmpeg"]
