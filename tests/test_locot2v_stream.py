"""LoCoT2V's streamed temporal reducer: the same values as the in-memory path, and memory flat in video length
(flows reduced per chunk, never all held)."""
import cv2
import numpy as np
import pytest

from bench_assets.locot2v import constants, metrics
from bench_assets.locot2v.stream import RING_FRAMES, TemporalStream
from bench_resources.models.flow import DisFlow
from tests.support.locot2v import _MeanColour  # noqa: F401


def _frame(i: int) -> np.ndarray:
    """A pan over a texture with a hard cut every 120 frames."""
    rng = np.random.default_rng(i // 120)
    base = cv2.resize(rng.integers(0, 255, (12, 20, 3)).astype(np.uint8), (160, 96), interpolation=cv2.INTER_CUBIC)
    return np.roll(base, 2 * (i % 120), axis=1)


def _feed(n: int, chunk: int = 32) -> tuple[TemporalStream, list]:
    ts = TemporalStream(n, 8.0, (96, 160), DisFlow(), None, _MeanColour(), None)
    for a in range(0, n, chunk):   # frames made per chunk: the test holds no more than the source would
        idx = list(range(a, min(a + chunk, n)))
        ts.push(idx, np.stack([_frame(i) for i in idx]))
    return ts, ts.finish()


def test_streamed_equals_in_memory_metrics():
    n = 200
    ts, vals = _feed(n)
    got = {v.metric_id: v.value for v in vals}
    frames = [_frame(i) for i in range(n)]      # the reference: every flow held, the old way
    flow = DisFlow()
    fwd = flow.flow(list(zip(frames[:-1], frames[1:])))
    bwd = flow.flow(list(zip(frames[1:], frames[:-1])))
    assert got["dynamic_degree"] == metrics.dynamic_degree(fwd, (96, 160))[0]
    assert got["warping_error"] == pytest.approx(metrics.warping_error(frames, fwd, bwd)[0])
    skips = [(flow.flow([(frames[2 * j], frames[2 * j + 2])])[0], flow.flow([(frames[2 * j + 2], frames[2 * j])])[0])
             for j in range((n - 1) // 2)]
    assert got["motion_smoothness"] == pytest.approx(metrics.motion_smoothness(frames, skips))
    assert ts.cuts == [120] == metrics.detect_transitions(np.stack(frames), 8.0)
    assert got["transition_smoothness"] < 40          # the hard cut's window


def test_frames_held_flat_in_video_length():
    held, kept = {}, {}
    for n in (90, 360):
        ts, vals = _feed(n)
        held[n] = ts.held_peak
        assert all(v.value is not None for v in vals if v.metric_id != "temporal_flickering")
        # what survives the pass: scalars per pair, never a flow field or a frame per pair
        for name in ("native_static_maes", "warp_errs", "interp_errs", "cosines", "window_scores"):
            assert all(isinstance(x, float) for x in getattr(ts, name)), name
        kept[n] = len(ts.ring) + len(ts.carry)
    # frames held at once: one chunk + the ring + a transition window + two carried analysis frames + the native
    # triple's carried frames (<= 2) + the first frame (VBench's per-video static filter), whatever n
    assert held[90] == held[360] <= 32 + RING_FRAMES + 2 * constants.TRANSITION_K + 1 + 2 + 3
    assert kept[90] == kept[360] == RING_FRAMES + 2


def _steppy(i: int) -> np.ndarray:
    """A texture that moves 3 px every fourth frame (else still: static pairs) under a per-frame brightness flicker."""
    rng = np.random.default_rng(7)
    base = cv2.resize(rng.integers(0, 255, (12, 20, 3)).astype(np.uint8), (160, 96), interpolation=cv2.INTER_CUBIC)
    f = np.roll(base, 3 * (i // 4), axis=1).astype(np.int16) + (i * 5) % 7
    return np.clip(f, 0, 255).astype(np.uint8)


def test_smoothness_and_flickering_on_native_frames_as_vbench():
    """At 24 fps the analysis frames are every third frame; LoCoT2V's smoothness and flickering follow VBench on
    NATIVE frames (every native triple rebuilt; every consecutive native pair under the static rule), whatever the
    chunking. The old analysis-frame values differ on this clip."""
    n, fps = 61, 24.0
    frames = [_steppy(i) for i in range(n)]
    flow = DisFlow()
    fwd = flow.flow(list(zip(frames[:-1], frames[1:])))
    static = [j for j, f in enumerate(fwd) if metrics.is_static(f, (96, 160))]
    assert 0 < len(static) < n - 1
    want_tf = metrics.temporal_flickering(frames, static)
    skips = [(flow.flow([(frames[2 * j], frames[2 * j + 2])])[0], flow.flow([(frames[2 * j + 2], frames[2 * j])])[0])
             for j in range((n - 1) // 2)]
    want_ms = metrics.motion_smoothness(frames, skips)
    for chunk in (5, 32):
        ts = TemporalStream(n, fps, (96, 160), DisFlow(), None, _MeanColour(), None)
        for a in range(0, n, chunk):
            ts.push(list(range(a, min(a + chunk, n))), np.stack(frames[a:a + chunk]))
        got = {v.metric_id: v for v in ts.finish()}
        assert got["temporal_flickering"].value == pytest.approx(want_tf, abs=1e-9), chunk
        assert got["temporal_flickering"].detail["static_pairs"] == len(static)
        assert got["temporal_flickering"].detail["pairs"] == n - 1
        allp = metrics.mae_score([np.mean([metrics.pair_mae(a, b) for a, b in zip(frames[:-1], frames[1:])])])
        assert got["temporal_flickering"].detail["all_pairs"] == pytest.approx(allp, abs=1e-9)
        assert got["motion_smoothness"].value == pytest.approx(want_ms, abs=1e-9), chunk
        assert got["motion_smoothness"].n_eval == (n - 1) // 2
    af = [frames[i] for i in metrics.analysis_indices(n, fps)]
    afwd = flow.flow(list(zip(af[:-1], af[1:])))
    old_tf = metrics.temporal_flickering(af, metrics.static_pairs(afwd, (96, 160)))
    old_ms = metrics.motion_smoothness(af, [tuple(flow.flow([(af[2 * j], af[2 * j + 2]), (af[2 * j + 2], af[2 * j])]))
                                            for j in range((len(af) - 1) // 2)])
    assert old_tf is None or abs(old_tf - want_tf) > 1e-3
    assert abs(old_ms - want_ms) > 1e-3


def test_interpolator_slot_unavailable_is_a_reason_not_a_number():
    ts = TemporalStream(20, 8.0, (96, 160), DisFlow(), None, None, "no emb", interp=None,
                        interp_why="interpolator: amt-s.pth missing")
    ts.push(list(range(20)), np.stack([_steppy(i) for i in range(20)]))
    got = {v.metric_id: v for v in ts.finish()}
    assert got["motion_smoothness"].value is None
    assert got["motion_smoothness"].reason == "interpolator: amt-s.pth missing"
    assert got["dynamic_degree"].value is not None
