"""VBench's sampling and verdict rules (no footage, no weights): its own functions against the project's."""
from __future__ import annotations

import itertools

import numpy as np
import pytest


@pytest.mark.parametrize("n,fps", [(120, 29.97), (100, 30.0), (90, 25.0), (48, 24.0), (40, 10.0), (30, 12.0),
                                   (33, 60.0), (5, 8.0), (1, 30.0)])
def test_frame_sampling_is_vbench_extract_frame(n, fps):
    """DynamicDegree.get_frames keeps every max(1, round(fps / 8))-th frame (``extract_frame``): EntityBench's
    dynamic frames and LoCoT2V's analysis frames are those (the fractional step took frame 11 at 30 fps)."""
    from vbench.dynamic_degree import DynamicDegree
    from bench_assets.entitybench.metrics import dynamic_indices
    from bench_assets.locot2v.metrics import analysis_indices
    ref = DynamicDegree.extract_frame(None, list(range(n)), max(1, round(fps / 8)))
    assert dynamic_indices(n, fps) == ref
    assert analysis_indices(n, fps) == ref


@pytest.mark.parametrize("frames", range(2, 40))
def test_dynamic_verdict_is_vbench_check_move(frames):
    """check_move with count_num = round(4 * frames / 16) (frames, not pairs; Python's round; a need of 0 makes any
    video with a pair dynamic) against LoCoT2V's dynamic_verdict, over every count of moving pairs."""
    from vbench.dynamic_degree import DynamicDegree
    from bench_assets.locot2v.metrics import dynamic_verdict
    dd = DynamicDegree.__new__(DynamicDegree)
    dd.params = {"thres": 1.0, "count_num": round(4 * (frames / 16.0))}
    pairs = frames - 1
    for moving in range(pairs + 1):
        ref = dd.check_move([2.0] * moving + [0.0] * (pairs - moving))
        assert dynamic_verdict(moving, pairs)[0] == (100.0 if ref else 0.0), (frames, moving)


def test_pair_score_truncates_the_top_fraction_as_vbench():
    """DynamicDegree.get_score: mean of the int(h * w * 0.05) largest magnitudes (truncated, not rounded)."""
    import torch
    from vbench.dynamic_degree import DynamicDegree
    from bench_assets.locot2v.metrics import top_mean
    rng = np.random.default_rng(0)
    for h, w in itertools.product((9, 13, 31), (7, 22)):
        flow = rng.normal(0, 3, (h, w, 2)).astype(np.float32)
        t = torch.from_numpy(flow).permute(2, 0, 1)[None]
        ref = DynamicDegree.get_score(None, torch.zeros(1, 3, h, w), t)
        assert top_mean(flow, 0.05) == pytest.approx(ref, abs=1e-5), (h, w)
