"""EntityBench Pillar 1 (intra-shot quality): the shot streams every native frame is walked through, and the
per-shot and episode rows of the six metrics. Pure (no Dagster)."""

from collections import defaultdict

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


def pillar1_rows(generator: str, ep: dataset.Episode, open_shot, errors: dict, slots: dict[str, tuple]) -> list[dict]:
    """Per-shot values of the six intra-shot metrics plus one episode record each.

    ``open_shot(index)`` returns a stream (``fps``, ``n_frames``, ``sha256``, ``chunks()``) or raises
    DecodeError; every native frame is walked once. A missing or bad shot is the generator's failure; a
    missing model or a model crash is the evaluator's."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    values: dict[str, list] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    evaluator: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    rows = []
    for shot in ep.shots:
        stream, err = None, errors.get(shot.index)
        if err is None:
            try:
                stream = open_shot(shot.index)
            except DecodeError as e:
                err = str(e)
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
