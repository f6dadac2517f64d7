"""VBench's motion smoothness (MotionSmoothness.motion_score: AMT-S, uint8 quantisation) against the project's
AMT-S path (bench_resources/models/amt.py), one seeded random AMT-S checkpoint for both, real clips."""
from __future__ import annotations

import pytest
import torch


@pytest.fixture(scope="module")
def amt_pair(tmp_path_factory):
    from bench_resources.models.amt import AmtInterpolator, amt_s_module
    torch.manual_seed(0)
    ref = amt_s_module().eval()
    d = tmp_path_factory.mktemp("amt")
    torch.save({"state_dict": ref.state_dict()}, d / "amt-s.pth")
    return ref, AmtInterpolator.load(d / "amt-s.pth", "cpu")


@pytest.mark.parametrize("name", ["carphone_pristine.mp4"])   # bikes.mp4 in scripts/parity.py
def test_motion_smoothness_amt(name, amt_pair, clip_frames, close, monkeypatch):
    from vbench.motion_smoothness import MotionSmoothness
    from bench_resources.models.amt import amt_smoothness
    ref_model, interp = amt_pair
    n = 5                                              # frames 0..4: 1 and 3 rebuilt
    frames, fps, path = clip_frames(name, n)
    ms = MotionSmoothness.__new__(MotionSmoothness)
    ms.device, ms.niters, ms.model = "cpu", 1, ref_model
    ms.initialization()
    orig = ms.fp.get_frames
    monkeypatch.setattr(ms.fp, "get_frames", lambda p: orig(p)[:n])
    ref = ms.motion_score(str(path))
    close(ref, amt_smoothness(frames, interp), f"{name} motion smoothness (AMT-S)")


def test_amt_checkpoint_loads_strictly(tmp_path):
    from bench_resources.models.amt import AmtInterpolator, amt_s_module
    from bench_resources.models.vision import CheckpointMismatch
    sd = {k: v for k, v in amt_s_module().state_dict().items() if not k.startswith("encoder")}
    torch.save({"state_dict": sd}, tmp_path / "amt-s.pth")
    with pytest.raises(CheckpointMismatch, match="interpolator"):
        AmtInterpolator.load(tmp_path / "amt-s.pth", "cpu")
