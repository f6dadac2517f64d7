"""Pillar 1's decode ahead (issue 38): the next shot opens on a worker and every shot's chunks are decoded by a
background thread; the records are the ones of the plain walk, failures included, and no thread outlives the
episode."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from bench_assets.core.media import DecodeError
from bench_assets.entitybench import dataset as D
from bench_assets.entitybench import pillar1 as PL


def episode(n: int):
    return D.parse_episode({"episode_id": "e0001", "entities": [{"id": "c1", "type": "character", "name": "Ann",
                                                                 "description": "a woman"}],
                            "shots": [{"index": k, "cut": True, "entities": ["c1"], "action": "waves"}
                                      for k in range(1, n + 1)]})


class Frames:
    """Each shot's own frames (seeded by its index), chunked; ``break_at``: raise DecodeError after that many
    chunks (a truncated file); ``opened`` records the thread each shot was opened on."""

    def __init__(self, lengths: dict, break_at: dict | None = None, undecodable=()):
        self.lengths, self.break_at, self.undecodable = lengths, break_at or {}, set(undecodable)
        self.opened: dict[int, str] = {}

    def __call__(self, k: int):
        self.opened[k] = threading.current_thread().name
        if k in self.undecodable:
            raise DecodeError(f"shot {k}: not a video")
        rng = np.random.default_rng(k)
        frames = rng.integers(0, 256, (self.lengths[k], 12, 16, 3), dtype=np.uint8)
        stream = PL.ArrayStream(frames, 16.0, sha256=f"sha{k}", chunk=4)
        if k in self.break_at:
            inner, cut = stream.chunks, self.break_at[k]

            def chunks():
                for j, c in enumerate(inner()):
                    if j == cut:
                        raise DecodeError(f"shot {k}: truncated")
                    yield c
            stream.chunks = chunks
        return stream


class Embedder:
    """A real function of the frames (mean colour per frame, normalised), slow enough that decoding runs ahead."""

    def embed(self, frames):
        time.sleep(0.005)
        return np.stack([f.reshape(-1, 3).mean(0) + 1.0 for f in frames])


SLOTS = {"vbench_dino": (Embedder(), None), "image_embedder": (None, "not loaded here")}


def rows(src, prefetch, n):
    return PL.pillar1_rows("g", episode(n), src, {}, SLOTS, prefetch=prefetch)


def test_prefetched_records_equal_the_plain_walk_and_differ_per_shot():
    lengths = {1: 9, 2: 14, 3: 5, 4: 11}
    plain, ahead = Frames(lengths), Frames(lengths)
    a, b = rows(plain, False, 4), rows(ahead, True, 4)
    assert a == b
    subject = [r["value"] for r in a if r["metric_id"] == "subject_consistency" and r["level"] == "shot"]
    flicker = [r["value"] for r in a if r["metric_id"] == "temporal_flickering" and r["level"] == "shot"]
    assert len(set(subject)) == 4 and len(set(flicker)) == 4 and None not in subject
    assert set(plain.opened.values()) == {threading.current_thread().name}
    assert all(name.startswith("pillar1-open") for name in ahead.opened.values())   # opened on the worker


def test_failures_are_the_same_with_prefetch():
    lengths = {1: 9, 2: 14, 3: 5, 4: 11}
    kw = {"break_at": {2: 2}, "undecodable": [3]}
    a, b = rows(Frames(lengths, **kw), False, 4), rows(Frames(lengths, **kw), True, 4)
    assert a == b
    failed = {(r["shot"], r["reason"]) for r in a if r["level"] == "shot" and r["n_failed"]}
    assert {s for s, _ in failed} == {2, 3}
    assert any("truncated" in (why or "") for _, why in failed)
    assert any("not a video" in (why or "") for _, why in failed)


def test_no_decode_thread_outlives_the_episode():
    before = {t.ident for t in threading.enumerate()}
    rows(Frames({1: 30, 2: 30, 3: 30}), True, 3)
    time.sleep(0.5)
    left = [t.name for t in threading.enumerate() if t.ident not in before and t.name.startswith("pillar1")]
    assert left == []


def test_an_unwalked_prefetched_shot_stops_its_thread():
    stream = PL.Prefetched(Frames({1: 40})(1), depth=1)
    time.sleep(0.2)                      # the producer fills the queue and waits
    assert stream._thread.is_alive()
    stream.close()
    stream._thread.join(timeout=2)
    assert not stream._thread.is_alive()


def test_an_error_of_the_consumer_stops_the_episode_and_its_threads():
    class Boom(Exception):
        pass

    class Crash:
        def embed(self, frames):
            raise Boom

    before = {t.ident for t in threading.enumerate()}
    # a model crash is caught per metric (the evaluator's failure), so crash the stream's consumer instead
    src = Frames({1: 9, 2: 9})

    def open_shot(k):
        if k == 2:
            raise Boom("not a DecodeError: propagates")
        return src(k)
    with pytest.raises(Boom):
        PL.pillar1_rows("g", episode(2), open_shot, {}, {"vbench_dino": (Crash(), None)}, prefetch=True)
    time.sleep(0.5)
    assert [t.name for t in threading.enumerate() if t.ident not in before and t.name.startswith("pillar1")] == []
