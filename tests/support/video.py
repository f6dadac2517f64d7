"""Small test videos written with PyAV: frames that differ from each other, so a wrong index shows."""
from __future__ import annotations

import av
import numpy as np


def write_video(path, n=40, w=96, h=64, fps=8, seed=0, faststart=False):
    """A video whose frames differ from each other (so a wrong index shows), written with PyAV's mpeg4."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
    c = av.open(str(path), "w", options={"movflags": "faststart"} if faststart else {})
    s = c.add_stream("mpeg4", rate=fps)
    s.width, s.height, s.pix_fmt = w, h, "yuv420p"
    s.bit_rate = 4_000_000
    for i in range(n):
        img = np.roll(base, 3 * i, axis=1)
        img[:8, :8] = (i * 6) % 256  # a frame-number patch
        for pkt in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
            c.mux(pkt)
    for pkt in s.encode():
        c.mux(pkt)
    c.close()
    return path
