"""EntityBench's sampled frames: one decode pass per shot per run, only the sampled frames converted, and Pillar 1's
full walk fills the cache so the sampling assets decode nothing more."""
from __future__ import annotations

import numpy as np
import pytest

from bench_assets.core import media
from bench_assets.entitybench import frames as FR
from tests.support.video import write_video

W, H, N = 96, 64, 41


def _write(path, n=N, seed=0):
    return write_video(path, n=n, w=W, h=H, fps=8, seed=seed)


@pytest.fixture
def shot(tmp_path):
    return _write(tmp_path / "shot_01.mp4")


@pytest.fixture
def conversions(monkeypatch):
    log = {"n": 0}
    real = media._to_rgb

    def counting(frame, size):
        log["n"] += 1
        return real(frame, size)

    monkeypatch.setattr(media, "_to_rgb", counting)
    return log


def test_sample_indices_cover_every_sampling_metric():
    idx = FR.sample_indices(81)
    for k in FR.SAMPLE_COUNTS:
        assert set(media.even_indices(81, k)) <= set(idx)
    assert {0, 40, 80} <= set(idx)
    assert FR.authors_indices(81, 5) == [1, 20, 40, 59, 79]   # the authors' extract_frames: [1, n-2], truncated
    assert set(FR.authors_indices(81, 5)) <= set(idx)
    assert len(idx) == 18  # of 81 frames: what the cache converts and holds
    assert FR.sample_indices(3) == [0, 1, 2] and FR.sample_indices(0) == []


def test_one_pass_converts_only_the_sampled_frames_and_the_cache_serves_the_rest(shot, conversions):
    full = media.decode_video(shot).frames
    cache = FR.ShotFrameCache()
    c0, n0 = media.counters(), conversions["n"]
    s = cache.get(shot)
    c1 = media.counters()
    assert c1["passes"] - c0["passes"] == 1
    assert conversions["n"] - n0 == len(FR.sample_indices(N)) == c1["frames_converted"] - c0["frames_converted"]
    # every access the metrics make, against the full decode
    idx, grid = s.even(5)
    assert np.array_equal(grid, full[idx])
    assert np.array_equal(s.frames[-1], full[-1]) and np.array_equal(s.frames[0], full[0])
    assert np.array_equal(s.frames[s.n_frames // 2], full[N // 2])
    assert np.array_equal(s.even(6)[1], full[media.even_indices(N, 6)])
    assert s.sha256 == media.sha256_file(shot) and s.n_frames == N
    gidx, gframes = s.grounding(5)
    assert gidx == FR.authors_indices(N, 5) and np.array_equal(gframes, full[gidx])
    with pytest.raises(IndexError, match="not sampled"):
        s.frames[2]
    # every later asset of the run: no pass, no conversion
    for _ in range(4):
        assert cache.get(shot) is s
    assert media.counters()["passes"] == c1["passes"] and conversions["n"] - n0 == len(FR.sample_indices(N))


def test_pillar1_walk_fills_the_cache_in_its_own_pass(shot, conversions, monkeypatch):
    from bench_assets.entitybench import pillar1 as PL
    cache = FR.ShotFrameCache()
    monkeypatch.setattr(PL, "SHOTS", cache)
    c0, n0 = media.counters(), conversions["n"]
    stream = PL.ShotStream(str(shot), chunk=8)
    walked = sum(len(f) for f in stream.chunks())
    assert walked == N
    s = cache.get(str(shot))  # grounding, action, presence, LLM: served from the walk
    c1 = media.counters()
    assert c1["passes"] - c0["passes"] == 1  # one pass for Pillar 1 and every sampling metric together
    assert conversions["n"] - n0 == N  # each frame converted once, however many consumers share it
    assert np.array_equal(s.even(5)[1], media.decode_video(shot).frames[media.even_indices(N, 5)])


def test_cache_is_bounded_in_bytes(tmp_path):
    paths = [_write(tmp_path / f"s{i}.mp4", seed=i) for i in range(3)]
    one = len(FR.sample_indices(N)) * W * H * 3
    cache = FR.ShotFrameCache(max_bytes=int(2.5 * one))
    for p in paths:
        cache.get(p)
    # one episode larger than the cache: the shots held stay, the one that does not fit is served, not kept
    assert len(cache) == 2 and cache.bytes == 2 * one and cache.cached(paths[2]) is None
    tiny = FR.ShotFrameCache(max_bytes=one - 1)
    assert tiny.get(paths[0]).n_frames == N and len(tiny) == 0  # served, not kept


def test_an_episode_larger_than_the_cache_does_not_thrash(tmp_path):
    """Every asset of a partition reads the episode's shots in order. A plain LRU with room for 3 of 4 shots misses
    on every read of such a scan (each read evicts the shot the next read needs); this cache misses once per scan,
    and a later episode's shots replace the earlier episode's."""
    one = len(FR.sample_indices(N)) * W * H * 3
    (tmp_path / "e1").mkdir()
    (tmp_path / "e2").mkdir()
    first = [_write(tmp_path / "e1" / f"shot_{i}.mp4", seed=i) for i in range(4)]
    later = [_write(tmp_path / "e2" / f"shot_{i}.mp4", seed=10 + i) for i in range(2)]
    cache = FR.ShotFrameCache(max_bytes=int(3.5 * one))
    p0 = media.counters()["passes"]
    for _asset in range(5):
        for p in first:
            cache.get(p)
    assert media.counters()["passes"] - p0 == 4 + 4 * 1      # 4 once, then 1 miss per later scan (LRU: 4 + 4 * 4)
    assert [cache.cached(p) is not None for p in first] == [True, True, True, False]
    for _asset in range(3):
        for p in later:
            cache.get(p)
    assert media.counters()["passes"] - p0 == 8 + 2          # the next episode: each shot once
    assert all(cache.cached(p) is not None for p in later) and cache.bytes <= 3.5 * one
    assert sum(cache.cached(p) is not None for p in first) == 1   # the earlier episode made room, LRU first


def test_pillar1_runs_first_among_the_generator_steps():
    from bench_assets.entitybench.input_assets import entitybench_grounding
    from bench_assets.entitybench.metric_assets import entitybench_pillar1
    tags = entitybench_pillar1.op.tags
    assert int(tags["dagster/priority"]) > 0
    assert "dagster/priority" not in entitybench_grounding.op.tags
