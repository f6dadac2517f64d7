"""LoCoT2V's temporal flickering on VBench's protocol (native consecutive frames; ``vbench/temporal_flickering.py``
``cal_score``) through the streamed reducer the asset runs (``locot2v/stream.TemporalStream``), and VBench's
per-video static filter (``vbench/cli/static_filter.py`` ``check_static``) beside the spec's per-pair reading.
The static rule reads the flow slot: the offline DIS here (weightless, so no checkpoint is needed); both sides
are given the same flows. LoCoT2V's motion smoothness against VBench is in test_parity_amt.py (AMT-S)."""
from __future__ import annotations

import numpy as np
import pytest

N = 24


def _stream(frames, fps, flow, chunk=5):
    from bench_assets.locot2v.stream import TemporalStream
    n = len(frames)
    ts = TemporalStream(n, fps, frames.shape[1:3], flow, None, None, "no embedder here", interp=None,
                        interp_why="not compared here")
    for a in range(0, n, chunk):                       # chunk borders inside pairs
        ts.push(list(range(a, min(a + chunk, n))), frames[a:a + chunk])
    return {v.metric_id: v for v in ts.finish()}


@pytest.mark.parametrize("name", ["carphone_pristine.mp4", "vtest.avi"])
def test_locot2v_flickering_native_frames(name, clip_frames, close, monkeypatch):
    import vbench.temporal_flickering as vtf
    from bench_assets.locot2v import constants, metrics
    from bench_resources.models.flow import DisFlow
    frames, fps, path = clip_frames(name, N)
    orig = vtf.get_frames
    monkeypatch.setattr(vtf, "get_frames", lambda p: orig(p)[:N])
    ref = vtf.cal_score(str(path))
    got = _stream(frames, fps, DisFlow())["temporal_flickering"]
    # VBench's formula over every native pair (what VBench reports for a video its filter kept)
    close(100.0 * ref, got.detail["all_pairs"], f"{name} LoCoT2V flickering, all native pairs")
    # the value: VBench's MAE over the native pairs the static rule keeps (the same flows on both sides)
    flows = DisFlow().flow(list(zip(frames[:-1], frames[1:])))
    thr = constants.STATIC_FLOW_PER_256 * min(frames.shape[1:3]) / 256.0
    static = [j for j, f in enumerate(flows) if metrics.top_mean(f, constants.STATIC_TOP_FRACTION) < thr]
    assert got.detail["static_pairs"] == len(static) and got.detail["pairs"] == N - 1
    bgr = orig(str(path))[:N]
    want = (100.0 * (255.0 - np.mean([vtf.calculate_mae(bgr[j], bgr[j + 1]) for j in static])) / 255.0
            if static else None)
    if want is None:
        assert got.value is None
    else:
        close(want, got.value, f"{name} LoCoT2V flickering, {len(static)}/{N - 1} static native pairs")
    # VBench's per-video filter on the same per-pair scores (its check_static, its thresholds)
    from vbench.cli.static_filter import StaticFilter
    import torch
    sf = StaticFilter.__new__(StaticFilter)
    sf.set_params(frame=torch.zeros(1, 3, *frames.shape[1:3]), count=N)
    ends = DisFlow().flow([(frames[0], frames[-1]), (frames[-1], frames[0])])
    scores = [metrics.top_mean(f, constants.STATIC_TOP_FRACTION) for f in [*flows, *ends]]
    assert got.detail["vbench_static_video"] == sf.check_static(scores), name
    print(f"\nparity {name} LoCoT2V flickering: VBench static filter {sf.check_static(scores)}, "
          f"static pairs {len(static)}/{N - 1}")
