"""LoCoT2V's streamed temporal metrics compute each flow field once per pass: a transition window's pair that is
also an analysis pair (videos at <= 12 fps), a consecutive native pair flickering's static rule flowed, or a pair of
an overlapping window reuses the flow already computed (its mean magnitude), and every value equals the one
computed with fresh flows for every use."""
import hashlib

import cv2
import numpy as np
import pytest

from bench_assets.locot2v import constants, metrics
from bench_assets.locot2v.pipeline import embed_unique
from bench_assets.locot2v.stream import RING_FRAMES, TemporalStream
from bench_resources.models.flow import DisFlow
from tests.support.locot2v import _MeanColour  # frame features that follow the picture

SHAPE = (96, 160)


class _Counting:
    """DIS that records every (frame, frame) pair it is asked for, by content."""

    def __init__(self):
        self.inner, self.asked = DisFlow(), []

    def flow(self, pairs):
        self.asked += [(hashlib.sha1(a.tobytes()).hexdigest(), hashlib.sha1(b.tobytes()).hexdigest())
                       for a, b in pairs]
        return self.inner.flow(pairs)


def _frames(n: int, cuts: tuple[int, ...]) -> list[np.ndarray]:
    """A 2 px per frame pan over a wide texture, a new texture at each cut: every frame distinct."""
    out, edges = [], [0, *cuts, n]
    for s, (a, b) in enumerate(zip(edges, edges[1:])):
        rng = np.random.default_rng(s)
        wide = cv2.resize(rng.integers(0, 255, (6, 24, 3)).astype(np.uint8), (160 + 2 * (b - a), 96),
                          interpolation=cv2.INTER_CUBIC)
        out += [np.ascontiguousarray(wide[:, 2 * k:2 * k + 160]) for k in range(b - a)]
    return out


def _stream(frames, fps, chunk):
    flow = _Counting()
    ts = TemporalStream(len(frames), fps, SHAPE, flow, None, _MeanColour(), None)
    mags_held = 0
    for a in range(0, len(frames), chunk):
        ts.push(list(range(a, min(a + chunk, len(frames)))), np.stack(frames[a:a + chunk]))
        mags_held = max(mags_held, len(ts.mags))
    return ts, {v.metric_id: v for v in ts.finish()}, flow, mags_held


def _reference(frames, fps, cuts):
    """Every metric from fresh flows for every use (what the stream computed before sharing)."""
    flow, emb = DisFlow(), _MeanColour()
    af = [frames[i] for i in metrics.analysis_indices(len(frames), fps)]
    fwd = flow.flow(list(zip(af[:-1], af[1:])))
    bwd = flow.flow(list(zip(af[1:], af[:-1])))
    # motion smoothness and flickering: native frames (VBench's protocol)
    skips = [tuple(flow.flow([(frames[2 * j], frames[2 * j + 2]), (frames[2 * j + 2], frames[2 * j])]))
             for j in range((len(frames) - 1) // 2)]
    nfwd = flow.flow(list(zip(frames[:-1], frames[1:])))
    windows = []
    for t in cuts:
        a, b = metrics.window_bounds(t, len(frames))
        w = frames[a:b + 1]
        windows.append(metrics.transition_window_score(w, embed_unique(emb, w),
                                                 flow.flow(list(zip(w[:-1], w[1:]))))[0])
    return {"dynamic_degree": metrics.dynamic_degree(fwd, SHAPE)[0],
            "warping_error": metrics.warping_error(af, fwd, bwd)[0],
            "motion_smoothness": metrics.motion_smoothness(frames, skips),
            "temporal_flickering": metrics.temporal_flickering(frames, metrics.static_pairs(nfwd, SHAPE)),
            "transition_smoothness": 100.0 * float(np.mean(windows))}, len(fwd), 2 * len(skips)


def _native_flows(n, fps):
    """Consecutive native pairs that are not analysis pairs: flickering flows them itself."""
    keep = set(metrics.analysis_indices(n, fps))
    return sum(1 for j in range(n - 1) if not (j in keep and j + 1 in keep))


@pytest.mark.parametrize("fps, cuts, chunk, shared", [
    (8.0, (70, 150), 32, 2 * 2 * constants.TRANSITION_K),   # every window pair is an analysis pair: all 16 reused
    (8.0, (70, 150), 7, 2 * 2 * constants.TRANSITION_K),    # windows complete mid-chunk: same flows, same values
    (24.0, (70, 150), 32, 2 * 2 * constants.TRANSITION_K),  # window pairs are native pairs flickering flowed
    (24.0, (70, 76), 32, 2 * 2 * constants.TRANSITION_K),   # overlapping windows [66, 74] and [72, 80] too
])
def test_each_flow_once_and_values_unchanged(fps, cuts, chunk, shared):
    n = 180
    frames = _frames(n, cuts)
    ts, got, flow, mags_held = _stream(frames, fps, chunk)
    assert sorted(ts.cuts) == list(cuts)
    ref, pairs, skip = _reference(frames, fps, cuts)
    for m, v in ref.items():
        assert got[m].value == v, m                  # a pure de-duplication: bit-identical values
    # no (frame, frame) pair's flow was asked for twice, and the counts add up
    assert len(flow.asked) == len(set(flow.asked))
    c = ts.flows_per_pair()
    native = _native_flows(n, fps)
    assert (c["forward"], c["backward"], c["skip"], c["native"], c["pairs"]) == (pairs, pairs, skip, native, pairs)
    windows = 2 * constants.TRANSITION_K * len(cuts)         # the old count: every window computed all its 2k flows
    assert (c["window"], c["window_reused"]) == (windows - shared, shared)
    assert c["computed"] == len(flow.asked) == 2 * pairs + skip + native + windows - shared
    assert c["per_pair"] == round(c["computed"] / pairs, 4)
    # what is kept to share: one float per consecutive native pair still in the ring, never a flow field
    assert mags_held <= RING_FRAMES and all(isinstance(x, float) for x in ts.mags.values())


def test_fallback_window_reuses_analysis_flows():
    """No cut: the most abrupt adjacent pair's window is scored at the end from the magnitudes it kept."""
    frames = _frames(120, ())
    frames[60] = cv2.GaussianBlur(frames[60], (0, 0), 3)   # the most abrupt pair, not a cut
    ts, got, flow, _ = _stream(frames, 8.0, 32)
    assert ts.cuts == [] and got["transition_smoothness"].value is not None
    t = got["transition_smoothness"].detail["transitions"][0]
    a, b = metrics.window_bounds(t, len(frames))
    w = frames[a:b + 1]
    flows = DisFlow().flow(list(zip(w[:-1], w[1:])))
    ref = metrics.transition_window_score(w, embed_unique(_MeanColour(), w), flows)[0]
    assert got["transition_smoothness"].value == 100.0 * ref
    c = ts.flows_per_pair()
    assert (c["window"], c["window_reused"]) == (0, 2 * constants.TRANSITION_K)
    assert len(flow.asked) == len(set(flow.asked)) == c["computed"]
