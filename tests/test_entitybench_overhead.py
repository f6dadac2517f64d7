"""EntityBench Pillar 1's non-model arithmetic was rewritten for speed (flow magnitude, warp maps, in-place
midpoint error, L1 flicker): each fast form must give the same bits as the plain expression it replaced, so no
stored value moves. Random frames and flows at an odd size (not a multiple of any SIMD width)."""
from __future__ import annotations

import cv2
import numpy as np

from bench_assets.core import kernels
from bench_assets.entitybench import metrics as M

H, W = 37, 53


def _frames(n: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, H, W, 3), dtype=np.uint8)


def _flow(seed: int, scale: float = 6.0) -> np.ndarray:
    return (np.random.default_rng(seed).standard_normal((H, W, 2)) * scale).astype(np.float32)


def _plain_warp(img, flow, t):
    gx, gy = np.meshgrid(np.arange(flow.shape[1], dtype=np.float32), np.arange(flow.shape[0], dtype=np.float32))
    mx = gx + t * flow[..., 0].astype(np.float32)
    my = gy + t * flow[..., 1].astype(np.float32)
    return cv2.remap(img, mx, my, interpolation=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def test_warp_and_midpoint_error_match_the_plain_expressions_bit_for_bit():
    p, m, n = _frames(3, 1)
    f_pn, f_np = _flow(2), _flow(3)
    for t in (-0.5, 0.5, 1.0):
        assert np.array_equal(kernels.warp(p.astype(np.float32), f_pn, t), _plain_warp(p.astype(np.float32), f_pn, t))
    plain_mid = 0.5 * (_plain_warp(p.astype(np.float32), f_pn, -0.5) + _plain_warp(n.astype(np.float32), f_np, -0.5))
    assert np.array_equal(M.interpolate_midpoint(p, n, f_pn, f_np), plain_mid)
    plain = float(np.mean(np.abs(plain_mid - m.astype(np.float32))))
    assert M._midpoint_error(p, m, n, f_pn, f_np) == plain
    # a second size reuses nothing of the first size's grid
    small = np.ascontiguousarray(p[:20, :30])
    assert np.array_equal(kernels.warp(small.astype(np.float32), f_pn[:20, :30], -0.5),
                          _plain_warp(small.astype(np.float32), f_pn[:20, :30], -0.5))


def test_flow_magnitude_matches_the_float64_norm_bit_for_bit():
    for seed in range(3):
        f = _flow(seed, scale=40.0)
        assert np.array_equal(M.flow_magnitude(f), np.sqrt((f.astype(np.float64) ** 2).sum(-1)).ravel())


def test_streamed_flicker_is_the_float64_mean_of_absdiff():
    frames = _frames(9, 4)
    acc = M._Flicker(None, 16.0, len(frames))
    acc.update(frames[:4])
    acc.update(frames[4:])
    diffs = [float(cv2.absdiff(a, b).mean(dtype=np.float64)) for a, b in zip(frames[:-1], frames[1:])]
    total = 0.0
    for d in diffs:  # the same running sum, in the same order
        total += d
    assert acc.result() == 1.0 - total / len(diffs) / 255.0
    assert acc.result() != 1.0  # random frames flicker: the test sees a real difference


def test_streamed_smoothness_and_dynamic_match_the_whole_shot_functions():
    """Chunked accumulators (fast paths) against the whole-array reference functions, with a flow that varies
    per pair (DIS on random frames)."""
    frames = _frames(11, 5)
    dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)

    def flow(pairs):
        return [dis.calc(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY), None)
                for a, b in pairs]

    class Model:
        pass

    model = Model()
    model.flow = flow
    out = M.stream_pillar1([frames[:4], frames[4:9], frames[9:]], 16.0, len(frames),
                           {m: model for m in M.PILLAR1 if m.metric_id in ("motion_smoothness", "dynamic_degree")})
    assert out["motion_smoothness"] == (M.motion_smoothness(frames, flow), None)
    assert out["dynamic_degree"][0] == M.dynamic_degree(frames, 16.0, flow)
