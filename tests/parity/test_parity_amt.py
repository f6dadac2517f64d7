"""VBench's motion smoothness (MotionSmoothness.motion_score: AMT-S, uint8 quantisation) against the project's
AMT-S path (bench_resources/models/amt.py) and the paper profile's ``interpolator`` slot as EntityBench's Pillar 1
and LoCoT2V's temporal stream use it; one seeded random AMT-S checkpoint for both, real clips."""
from __future__ import annotations

import numpy as np
import pytest
import torch

N = 5                                                  # frames 0..4: 1 and 3 rebuilt
NAME = "carphone_pristine.mp4"                         # bikes.mp4 in scripts/parity.py


@pytest.fixture(scope="module")
def amt_pair(tmp_path_factory):
    """(VBench's module, the interpolator slot loaded by the paper-profile registry from the same checkpoint)."""
    from bench_resources.device import Device
    from bench_resources.models import ModelRegistry
    from bench_resources.models.amt import amt_s_module
    torch.manual_seed(0)
    ref = amt_s_module().eval()
    d = tmp_path_factory.mktemp("amt")
    torch.save({"state_dict": ref.state_dict()}, d / "amt-s.pth")
    reg = ModelRegistry(profile="paper", weights_dir=str(d / "w"))
    reg.import_weights("interpolator", d / "amt-s.pth")
    return ref, reg.slot("interpolator", Device(device="cpu", batch_size=4))


@pytest.fixture(scope="module")
def vbench_value(amt_pair, clip_frames):
    """VBench's own score on the clip's first N frames (its loader is handed the cut; its code runs unchanged)."""
    from vbench.motion_smoothness import MotionSmoothness
    frames, fps, path = clip_frames(NAME, N)
    ms = MotionSmoothness.__new__(MotionSmoothness)
    ms.device, ms.niters, ms.model = "cpu", 1, amt_pair[0]
    ms.initialization()
    orig = ms.fp.get_frames
    ms.fp.get_frames = lambda p: orig(p)[:N]
    return ms.motion_score(str(path))


def test_motion_smoothness_amt(amt_pair, vbench_value, clip_frames, close):
    from bench_resources.models.amt import amt_smoothness
    frames, _, _ = clip_frames(NAME, N)
    close(vbench_value, amt_smoothness(frames, amt_pair[1]), f"{NAME} motion smoothness (AMT-S)")


def test_entitybench_paper_profile_smoothness_is_vbench(amt_pair, vbench_value, clip_frames, close):
    """EntityBench's Pillar 1 through the interpolator slot, chunk borders inside triples; the old flow-midpoint
    path on the same frames (RAFT or DIS) is not VBench's number."""
    from bench_assets.entitybench import metrics as M
    from bench_resources.models.flow import DisFlow
    frames, fps, _ = clip_frames(NAME, N)
    smooth = next(m for m in M.PILLAR1 if m.metric_id == "motion_smoothness")
    assert smooth.slot == "interpolator"
    for size in (2, 5):
        out = M.stream_pillar1([frames[i:i + size] for i in range(0, N, size)], fps, N, {smooth: amt_pair[1]})
        close(vbench_value, out["motion_smoothness"][0], f"{NAME} EntityBench smoothness, chunks of {size}")
    old = M.motion_smoothness(frames, DisFlow().flow)
    assert abs(old - vbench_value) > 1e-3, (old, vbench_value)


def test_locot2v_paper_profile_smoothness_is_vbench(amt_pair, vbench_value, clip_frames, close):
    """LoCoT2V's streamed reducer with the interpolator slot: VBench's motion smoothness x 100 on native frames
    (the analysis frames are every round(fps / 8)-th; smoothness no longer reads them)."""
    from bench_assets.locot2v.stream import TemporalStream
    frames, fps, _ = clip_frames(NAME, N)
    ts = TemporalStream(N, fps, frames.shape[1:3], None, "flow not compared here", None, "no embedder here",
                        interp=amt_pair[1])
    for a in range(0, N, 2):                           # chunk borders inside triples
        ts.push(list(range(a, min(a + 2, N))), frames[a:a + 2])
    got = {v.metric_id: v for v in ts.finish()}["motion_smoothness"]
    close(100.0 * vbench_value, got.value, f"{NAME} LoCoT2V smoothness (AMT-S, native frames)")
    assert got.n_eval == (N - 1) // 2


def test_amt_checkpoint_loads_strictly(tmp_path):
    from bench_resources.models.amt import AmtInterpolator, amt_s_module
    from bench_resources.models.vision import CheckpointMismatch
    sd = {k: v for k, v in amt_s_module().state_dict().items() if not k.startswith("encoder")}
    torch.save({"state_dict": sd}, tmp_path / "amt-s.pth")
    with pytest.raises(CheckpointMismatch, match="interpolator"):
        AmtInterpolator.load(tmp_path / "amt-s.pth", "cpu")
