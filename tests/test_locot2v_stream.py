"""LoCoT2V's streamed temporal reducer: the same values as the in-memory path, and memory flat in video length
(flows reduced per chunk, never all held)."""
import cv2
import numpy as np
import pytest

from bench_assets.locot2v import constants, metrics
from bench_assets.locot2v.stream import RING_FRAMES, TemporalStream
from bench_resources.models.flow import DisFlow


class _MeanColour:
    """Frame features that follow the picture: mean colour per quadrant."""

    def embed(self, images):
        out = []
        for im in images:
            h, w = im.shape[0] // 2, im.shape[1] // 2
            out.append(np.concatenate([im[a:a + h, b:b + w].reshape(-1, 3).mean(0)
                                       for a in (0, h) for b in (0, w)]) + 1.0)
        return np.stack(out)


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
        for name in ("static_maes", "warp_errs", "interp_errs", "cosines", "window_scores"):
            assert all(isinstance(x, float) for x in getattr(ts, name)), name
        kept[n] = len(ts.ring) + len(ts.carry)
    # frames held at once: one chunk + the ring + a transition window + two carried analysis frames, whatever n
    assert held[90] == held[360] <= 32 + RING_FRAMES + 2 * constants.TRANSITION_K + 1 + 2
    assert kept[90] == kept[360] == RING_FRAMES + 2
