"""EntityBench Pillar 1 (intra-shot quality): the shot streams every native frame is walked through, and the
per-shot and episode rows of the six metrics. Pure (no Dagster)."""

import queue
import threading
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd

from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.tables import instance_row
from bench_assets.entitybench import counts, dataset, metrics
from bench_assets.entitybench import frames as shot_frames  # "frames" names the decoded arrays everywhere here
from bench_assets.entitybench.constants import BENCH, PILLAR1_CHUNK

# The sampled frames of each shot, decoded once per process (one pass, only the sampled frames converted) and
# shared by every sampling asset of a run; Pillar 1's full walk fills it (frames.py).
SHOTS = shot_frames.SHOTS

PILLAR1_SLOTS = sorted({m.slot for m in metrics.PILLAR1 if m.slot})


class ShotStream:
    """One shot's native frames, streamed in consecutive chunks by one PyAV pass (memory flat in length). The
    same pass gathers the frames the sampling metrics read and leaves them in ``SHOTS`` (no second decode)."""

    def __init__(self, path: str, chunk: int = PILLAR1_CHUNK):
        self.src = VideoSource(path)
        self.fps, self.n_frames, self.chunk = self.src.fps, self.src.n_frames, chunk
        self._samples = shot_frames.request(self.src) if SHOTS.cached(path) is None else None

    @property
    def sha256(self) -> str:
        return self.src.sha256

    def chunks(self):
        for _, frames in self.src.iter_chunks(chunk=self.chunk, overlap=0, name="pillar1"):
            yield frames
        if self._samples is not None and self.src.done:
            SHOTS.put(self.src.path, shot_frames.collect(self.src, self._samples))


def with_decode_health(df, records: dict[int, dict]):
    """Pillar 1's pass reads every native frame of every shot, so it is where decode health is known: each shot row
    gets its shot's ``corrupt_frames`` / ``lost_frames`` / ``decode_warnings`` (``VideoSource.decode_record``);
    rows of shots with no record (missing, undecodable, in-memory streams) and episode rows get None (unknown)."""
    df = df.copy()
    for col in ("corrupt_frames", "lost_frames"):
        df[col] = pd.array([None] * len(df), dtype="Int64")
    df["decode_warnings"] = pd.array([None] * len(df), dtype="string")
    if len(df) and "shot" in df:
        for shot, rec in records.items():
            at = (df["level"] == "shot") & (pd.to_numeric(df["shot"], errors="coerce") == shot)
            for col in ("corrupt_frames", "lost_frames", "decode_warnings"):
                df.loc[at, col] = rec[col]
    return df


class ArrayStream:
    """The same contract over frames already in memory (tests, the embedded data)."""

    def __init__(self, frames: np.ndarray, fps: float, sha256: str = "", chunk: int = PILLAR1_CHUNK):
        self.frames, self.fps, self.n_frames, self.sha256, self.chunk = frames, fps, len(frames), sha256, chunk

    def chunks(self):
        for i in range(0, len(self.frames), self.chunk):
            yield self.frames[i:i + self.chunk]


# Decode ahead (issue 38): the next shot is opened (probe, sha256) and every shot's chunks are decoded by a
# background thread while the current chunk's models run (FFmpeg and the models release the GIL), at most
# PREFETCH_CHUNKS chunks held per shot. The frames and their order are the same; values cannot change. False
# (scripts/benchmark_scale.py's unoptimised path): open and decode in the caller's thread, as before.
PREFETCH = True
PREFETCH_CHUNKS = 2


class Prefetched:
    """A stream (``fps``, ``n_frames``, ``sha256``, ``chunks()``) whose chunks a daemon thread decodes ahead into
    a bounded queue. An error of the decode (DecodeError for a truncated file) is raised where the consumer reaches
    it, after the chunks before it; a consumer that stops early stops the thread."""

    def __init__(self, stream, depth: int = PREFETCH_CHUNKS):
        self.stream = stream
        self.fps, self.n_frames = stream.fps, stream.n_frames
        self._q: queue.Queue = queue.Queue(maxsize=max(1, depth))
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._produce, daemon=True, name="pillar1-decode")
        self._thread.start()

    @property
    def sha256(self) -> str:
        return self.stream.sha256

    def _put(self, item) -> bool:
        while not self._stop.is_set():
            try:
                self._q.put(item, timeout=0.2)
                return True
            except queue.Full:
                continue
        return False

    def _produce(self) -> None:
        try:
            for frames in self.stream.chunks():
                if not self._put(("chunk", frames)):
                    return
            self._put(("end", None))
        except BaseException as e:  # noqa: BLE001 - handed to the consumer, raised there
            self._put(("error", e))

    def chunks(self):
        try:
            while True:
                kind, x = self._q.get()
                if kind == "chunk":
                    yield x
                elif kind == "end":
                    return
                else:
                    raise x
        finally:
            self.close()

    def close(self) -> None:
        """Stop the decode thread (a shot opened ahead and never walked, an episode cut short)."""
        self._stop.set()


def _opener(open_shot, errors: dict, prefetch: bool, made: list):
    """index -> (stream or None, error): the shot's opening, on a worker thread one shot ahead when ``prefetch``
    (each ``Prefetched`` made is appended to ``made``, for the caller to close)."""
    def open_one(index: int):
        if errors.get(index) is not None:
            return None, errors[index]
        try:
            stream = open_shot(index)
        except DecodeError as e:
            return None, str(e)
        if prefetch:
            _ = stream.sha256   # hashed on the worker too
            stream = Prefetched(stream)
            made.append(stream)
        return stream, None
    return open_one


def pillar1_rows(generator: str, ep: dataset.Episode, open_shot, errors: dict, slots: dict[str, tuple],
                 prefetch: bool | None = None) -> list[dict]:
    """Per-shot values of the six intra-shot metrics plus one episode record each.

    ``open_shot(index)`` returns a stream (``fps``, ``n_frames``, ``sha256``, ``chunks()``) or raises
    DecodeError; every native frame is walked once. A missing or bad shot is the generator's failure; a
    missing model or a model crash is the evaluator's. ``prefetch`` (default ``PREFETCH``): the next shot opens
    and every shot decodes ahead on background threads (``Prefetched``)."""
    prefetch = PREFETCH if prefetch is None else prefetch
    made: list[Prefetched] = []
    open_one = _opener(open_shot, errors, prefetch, made)
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pillar1-open") if prefetch else None
    try:
        return _pillar1_rows(generator, ep, open_one, slots, pool)
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
        for stream in made:
            stream.close()


def _pillar1_rows(generator: str, ep: dataset.Episode, open_one, slots: dict[str, tuple], pool) -> list[dict]:
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    values: dict[str, list] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    evaluator: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    rows = []
    ahead = pool.submit(open_one, ep.shots[0].index) if pool is not None and ep.shots else None
    for n, shot in enumerate(ep.shots):
        if ahead is not None:
            stream, err = ahead.result()
            ahead = pool.submit(open_one, ep.shots[n + 1].index) if n + 1 < len(ep.shots) else None
        else:
            stream, err = open_one(shot.index)
        if stream is None:  # missing or undecodable shot: a failure of this instance, not a zero
            for metric in metrics.PILLAR1:
                failed[metric.metric_id] += 1
                reasons[metric.metric_id].add("shot missing or undecodable")
                rows.append(counts.failed_instance(metric.metric_id, "shot", err or "shot missing", shot=shot.index,
                                                   **keys))
            continue
        # a slot the caller did not load is the evaluator's gap with that reason (never a KeyError mid-episode)
        slots = {m.slot: slots.get(m.slot, (None, f"{m.slot} slot not loaded")) for m in metrics.PILLAR1 if m.slot}
        run = {m: slots[m.slot][0] if m.slot else None for m in metrics.PILLAR1
               if not m.slot or slots[m.slot][0] is not None}
        try:
            out = metrics.stream_pillar1(stream.chunks(), stream.fps, stream.n_frames, run)
        except DecodeError as e:  # the stream broke mid-way (truncated file): the generator's failure
            for metric in metrics.PILLAR1:
                failed[metric.metric_id] += 1
                reasons[metric.metric_id].add("shot missing or undecodable")
                rows.append(counts.failed_instance(metric.metric_id, "shot", str(e), shot=shot.index, **keys))
            continue
        for metric in metrics.PILLAR1:
            mid = metric.metric_id
            if metric not in run:
                why = slots[metric.slot][1]
                evaluator[mid] += 1
                reasons[mid].add(why)
                rows.append(counts.evaluator_instance(mid, "shot", why, shot=shot.index, source_sha256=stream.sha256,
                                                      **keys))
                continue
            v, err = out[mid]
            if err:
                evaluator[mid] += 1
                reasons[mid].add(err)
                rows.append(counts.evaluator_instance(mid, "shot", err, shot=shot.index, source_sha256=stream.sha256,
                                                      **keys))
                continue
            values[mid].append(v)
            rows.append(instance_row(mid, v, "shot", reason=None if v is not None else "too few frames",
                                     shot=shot.index, source_sha256=stream.sha256,
                                     detail={"frames": stream.n_frames, "fps": stream.fps}, **keys))
    for metric in metrics.PILLAR1:
        mid = metric.metric_id
        rows.append(counts.record(mid, values[mid], n_failed=failed[mid], n_failed_evaluator=evaluator[mid],
                                  reason="; ".join(sorted(x for x in reasons[mid] if x))[:500] or None, **keys))
    return rows
