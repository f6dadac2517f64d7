"""One container open per decode pass (issue 38 item 4): ``VideoSource`` probes and decodes through the same PyAV
container (the probe's, rewound), and the frames are those of a fresh open."""
from __future__ import annotations

import hashlib

import numpy as np
import pytest

from bench_assets.core import media


def _video(path, n=12, w=96, h=64, seed=0):
    import av
    rng = np.random.default_rng(seed)
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264", rate=16)
        s.width, s.height, s.pix_fmt = w, h, "yuv420p"
        s.options = {"bf": "2", "g": "5"}   # B-frames and several GOPs: the rewind must land on the first one
        for i in range(n):
            img = np.clip(rng.integers(0, 256, (h, w, 3)) // 2 + i * 8, 0, 255).astype(np.uint8)
            for pkt in s.encode(av.VideoFrame.from_ndarray(img, format="rgb24")):
                c.mux(pkt)
        for pkt in s.encode():
            c.mux(pkt)
    return path


def _fresh_frames(path):
    import av
    with av.open(str(path)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(c.streams.video[0])]


@pytest.mark.parametrize("n", [12, 40])
def test_one_open_per_pass_and_the_frames_of_a_fresh_open(tmp_path, n):
    path = _video(tmp_path / "v.mp4", n=n, seed=n)
    c0 = media.counters()
    src = media.VideoSource(path)
    every = src.take(range(src.n_frames))
    src.run()
    c1 = media.counters()
    assert c1["container_opens"] - c0["container_opens"] == 1      # was 2: probe, then pass
    assert c1["reopens"] == c0["reopens"]
    ref = _fresh_frames(path)
    assert len(ref) == n == len(every.frames)
    for a, b in zip(ref, every.frames):
        assert hashlib.sha256(a.tobytes()).digest() == hashlib.sha256(b.tobytes()).digest()


def test_a_rewind_that_lands_elsewhere_opens_afresh(tmp_path):
    """Control: when the rewound container's first frame is not the probe's first, the pass opens the file again
    (two opens, one reopen) and the frames are still a fresh open's."""
    path = _video(tmp_path / "v.mp4", n=12)
    src = media.VideoSource(path)
    src._first_pts = -12345   # a first timestamp the rewound decode cannot give
    every = src.take(range(src.n_frames))
    c0 = media.counters()
    src.run()
    c1 = media.counters()
    assert c1["reopens"] - c0["reopens"] == 1 and c1["container_opens"] - c0["container_opens"] == 1
    assert all(np.array_equal(a, b) for a, b in zip(_fresh_frames(path), every.frames))
