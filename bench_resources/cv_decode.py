"""A decode fallback on OpenCV alone (no PyAV): a video's frames as RGB uint8 chunks, for the device kit on a
machine that has OpenCV and not PyAV. ``bench_assets.core.media`` (PyAV) stays the project's decoder: it counts
packets exactly, reads rotation and timestamps and records decode health, which OpenCV's VideoCapture does not
expose; this reader is for throughput runs and for footage whose frames need nothing of that."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import cv2
import numpy as np


class CvVideo:
    """One OpenCV pass over a file: ``fps`` and ``declared_frames`` from the container header, ``iter_chunks``
    yields [n, H, W, 3] RGB uint8 arrays of consecutive frames until the stream ends."""

    def __init__(self, path: str | Path):
        self.path = str(path)
        cap = cv2.VideoCapture(self.path)
        if not cap.isOpened():
            raise ValueError(f"{self.path}: OpenCV cannot open this file as a video")
        self.fps = float(cap.get(cv2.CAP_PROP_FPS)) or None
        self.declared_frames = int(cap.get(cv2.CAP_PROP_FRAME_COUNT))
        self.size = (int(cap.get(cv2.CAP_PROP_FRAME_WIDTH)), int(cap.get(cv2.CAP_PROP_FRAME_HEIGHT)))
        cap.release()
        self.frames_read = 0

    def iter_chunks(self, chunk: int = 32) -> Iterator[np.ndarray]:
        cap = cv2.VideoCapture(self.path)
        buf: list[np.ndarray] = []
        try:
            while True:
                ok, bgr = cap.read()
                if not ok:
                    break
                buf.append(cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB))
                self.frames_read += 1
                if len(buf) == chunk:
                    yield np.stack(buf)
                    buf = []
            if buf:
                yield np.stack(buf)
        finally:
            cap.release()


def write_video(path: str | Path, frames: np.ndarray, fps: float) -> Path:
    """RGB uint8 [T, H, W, 3] to an MP4 (OpenCV's mp4v writer): the synthetic shots of the device bench."""
    path = Path(path)
    h, w = frames.shape[1:3]
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (w, h))
    if not out.isOpened():
        raise ValueError(f"{path}: OpenCV cannot write an mp4v video here")
    for f in frames:
        out.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    out.release()
    return path
