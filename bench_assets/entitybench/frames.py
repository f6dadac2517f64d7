"""The frames EntityBench's frame-sampling metrics read from one shot, decoded in one pass and shared.

Grounding (5 even frames; cs_face_identity reads the grounded frame, one of them), cs_transition_boundary
(first and last frame), the action grid (6 even frames) and the location metrics (middle frame, 8 even
frames) each read a few frames of a shot. Their union is known from the frame count alone, so one pass of
``core.media.VideoSource`` converts only those (15 of 81 frames for a typical shot) and a byte-bounded
per-process cache hands them to every asset of the run. Pillar 1 walks every frame of the shot anyway: its
pass adds this request to the same decode and fills the cache (``ShotStream`` in pillar1.py), so when it runs
first (it has the higher step priority) every shot is decoded exactly once per run.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from bench_assets.core.media import Request, VideoSource, even_indices
from bench_assets.entitybench.constants import ACTION_FRAMES, GROUNDING_FRAMES, LOCATION_FRAMES

SAMPLE_COUNTS = (GROUNDING_FRAMES, ACTION_FRAMES, LOCATION_FRAMES)


def authors_indices(n_frames: int, k: int) -> list[int]:
    """The authors' ``extract_frames`` (evaluate_benchmark.py): k frames from index 1 to n-2 with a fractional step,
    each index truncated (14 frames, k = 5: 1, 3, 6, 9, 12), skipping the first and last frame ("often
    duplicate/black"). Fewer frames than k: all of them (the authors' non-strict branch; strict mode raises)."""
    if n_frames <= 0:
        return []
    if n_frames < k:
        return list(range(n_frames))
    start, end = 1, n_frames - 2
    step = max(1, (end - start) / max(1, k - 1))
    return [min(int(start + i * step), n_frames - 1) for i in range(k)]


def sample_indices(n_frames: int) -> list[int]:
    """Every native frame index some sampling metric reads from a shot of ``n_frames`` frames."""
    if n_frames <= 0:
        return []
    need = {0, n_frames - 1, n_frames // 2}
    for k in SAMPLE_COUNTS:
        need.update(even_indices(n_frames, k))
    need.update(authors_indices(n_frames, GROUNDING_FRAMES))
    return sorted(need)


class SparseFrames:
    """Native-index access to the sampled frames only (negative indices count from the end, like an array)."""

    def __init__(self, n_frames: int, frames: dict[int, np.ndarray], path: str = ""):
        self.n_frames, self._frames, self.path = n_frames, frames, path

    def __len__(self) -> int:
        return self.n_frames

    def __getitem__(self, i) -> np.ndarray:
        i = int(i)
        j = i + self.n_frames if i < 0 else i
        if j not in self._frames:
            raise IndexError(f"{self.path}: frame {i} was not sampled (sampled: {sorted(self._frames)}); add its "
                             f"index to entitybench.frames.sample_indices")
        return self._frames[j]

    @property
    def nbytes(self) -> int:
        return sum(f.nbytes for f in self._frames.values())


@dataclass
class ShotFrames:
    """What the sampling metrics need of a shot: its identity, geometry and the sampled frames."""

    path: str
    sha256: str
    fps: float
    n_frames: int
    size: tuple[int, int]
    frames: SparseFrames

    def even(self, k: int) -> tuple[list[int], np.ndarray]:
        idx = even_indices(self.n_frames, k)
        return idx, np.stack([self.frames[i] for i in idx])

    def grounding(self, k: int) -> tuple[list[int], np.ndarray]:
        """The frames the grounding pass reads: the authors' sampling (``authors_indices``)."""
        idx = authors_indices(self.n_frames, k)
        return idx, np.stack([self.frames[i] for i in idx])

    @property
    def nbytes(self) -> int:
        return self.frames.nbytes


def request(src: VideoSource) -> Request:
    """State the sampled frames on a source (before its pass); ``collect`` turns the filled request into frames."""
    return src.take(sample_indices(src.n_frames), name="entitybench_samples")


def collect(src: VideoSource, req: Request) -> ShotFrames:
    frames = req.frames
    return ShotFrames(src.path, src.sha256, src.fps, src.n_frames, src.size,
                      SparseFrames(src.n_frames, {i: frames[j] for j, i in enumerate(req.indices)}, src.path))


def _key(path: str | Path) -> tuple:
    p = Path(path)
    st = p.stat() if p.is_file() else None
    return str(path), st.st_size if st else None, st.st_mtime_ns if st else None


class ShotFrameCache:
    """Per-process cache of ``ShotFrames`` keyed by (path, size, mtime), bounded in bytes of frames held
    (``BENCH_SHOT_FRAMES_BYTES``, default 1 GiB: ~56 shots of 832x480 or ~24 of 1280x720).

    Eviction suits how a run reads shots: every asset of a (generator, episode) partition walks the episode's
    shots in order. A plain LRU thrashes on such a scan once the episode does not fit (every read a miss: a 31-shot
    episode with room for 28 decoded each shot 5 times). So a new shot first evicts shots of other folders
    (earlier episodes), least recently used first; when the cache holds only its own episode, the new shot is
    served but not kept, and the shots already held stay hits for every later asset."""

    def __init__(self, max_bytes: Optional[int] = None):
        self.max_bytes = int(os.environ.get("BENCH_SHOT_FRAMES_BYTES", str(1 << 30))) if max_bytes is None \
            else int(max_bytes)
        self._items: "OrderedDict[tuple, ShotFrames]" = OrderedDict()
        self._lock = threading.Lock()
        self.bytes = 0

    def __len__(self) -> int:
        return len(self._items)

    def cached(self, path: str | Path) -> Optional[ShotFrames]:
        key = _key(path)
        with self._lock:
            shot = self._items.get(key)
            if shot is not None:
                self._items.move_to_end(key)
            return shot

    def put(self, path: str | Path, shot: ShotFrames) -> None:
        key = _key(path)
        folder = str(Path(key[0]).parent)
        with self._lock:
            if shot.nbytes > self.max_bytes or key in self._items:
                return
            for k in [k for k in self._items if str(Path(k[0]).parent) != folder]:   # least recently used first
                if self.bytes + shot.nbytes <= self.max_bytes:
                    break
                self.bytes -= self._items.pop(k).nbytes
            if self.bytes + shot.nbytes > self.max_bytes:
                return   # full of this episode's shots: keep them (hits for every later asset), serve this one
            self._items[key] = shot
            self.bytes += shot.nbytes

    def get(self, path: str | Path) -> ShotFrames:
        """The shot's sampled frames: cached, or one pass that converts only them (DecodeError names the file)."""
        shot = self.cached(path)
        if shot is None:
            src = VideoSource(path)
            req = request(src)
            src.run()
            shot = collect(src, req)
            self.put(path, shot)
        return shot

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self.bytes = 0


SHOTS = ShotFrameCache()
