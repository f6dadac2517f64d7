"""Decode each video once per step and serve every metric's frame sampling from that decode.

VBench-style scripts re-decode a video for every dimension; here a ``Clip`` is decoded once and
metrics ask it for frame indices. ``decode_count()`` lets benchmarks print decodes per shot.
"""
from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import cv2
import numpy as np

_lock = threading.Lock()
_decodes = 0


def decode_count() -> int:
    return _decodes


class DecodeError(ValueError):
    pass


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def even_indices(n_frames: int, k: int) -> list[int]:
    """k evenly spaced frame indices over [0, n_frames-1] (all frames when k >= n_frames)."""
    if n_frames <= 0:
        return []
    if k >= n_frames:
        return list(range(n_frames))
    return [int(round(i)) for i in np.linspace(0, n_frames - 1, k)]


def fps_indices(n_frames: int, fps: float, target_fps: float) -> list[int]:
    """Indices that resample a clip at ~target_fps (never faster than native)."""
    if n_frames <= 0:
        return []
    step = max(1.0, fps / target_fps) if fps > 0 else 1.0
    return sorted({int(round(i * step)) for i in range(int((n_frames - 1) / step) + 1)})


@dataclass
class Clip:
    """All frames of one video, RGB uint8 [T,H,W,3], decoded once."""

    path: str
    sha256: str
    fps: float
    frames: np.ndarray = field(repr=False)

    @property
    def n_frames(self) -> int:
        return int(self.frames.shape[0])

    @property
    def size(self) -> tuple[int, int]:
        return int(self.frames.shape[2]), int(self.frames.shape[1])  # (W, H)

    def take(self, indices: list[int]) -> np.ndarray:
        return self.frames[indices]

    def even(self, k: int) -> tuple[list[int], np.ndarray]:
        idx = even_indices(self.n_frames, k)
        return idx, self.frames[idx]


def decode_video(path: str | Path) -> Clip:
    """Decode every frame; raises DecodeError naming the file when it cannot be read."""
    global _decodes
    p = Path(path)
    if not p.is_file():
        raise DecodeError(f"{p}: file not found")
    cap = cv2.VideoCapture(str(p))
    try:
        if not cap.isOpened():
            raise DecodeError(f"{p}: cannot be opened as a video")
        fps = float(cap.get(cv2.CAP_PROP_FPS) or 0.0)
        frames = []
        while True:
            ok, bgr = cap.read()
            if not ok:
                break
            frames.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
    finally:
        cap.release()
    if not frames:
        raise DecodeError(f"{p}: no decodable frame")
    with _lock:
        _decodes += 1
    return Clip(str(p), sha256_file(p), fps, np.stack(frames))


class ClipCache:
    """Per-step LRU of decoded clips keyed by (path, size, mtime): one decode serves all metrics."""

    def __init__(self, max_clips: int = 64) -> None:
        self._max = max_clips
        self._clips: "OrderedDict[tuple, Clip]" = OrderedDict()
        self._lock = threading.Lock()

    def get(self, path: str | Path) -> Clip:
        st = Path(path).stat() if Path(path).exists() else None
        key = (str(path), st.st_size if st else None, st.st_mtime_ns if st else None)
        with self._lock:
            if key in self._clips:
                self._clips.move_to_end(key)
                return self._clips[key]
        clip = decode_video(path)
        with self._lock:
            self._clips[key] = clip
            while len(self._clips) > self._max:
                self._clips.popitem(last=False)
        return clip
