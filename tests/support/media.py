"""Small videos written with PyAV for the media-hygiene tests (container, codec, rate and timestamps chosen)."""
from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from tests.support import DATA, QUIET, ROOT  # noqa: F401


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

