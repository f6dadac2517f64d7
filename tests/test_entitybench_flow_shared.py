"""Motion smoothness and dynamic degree share one shot's flows (entitybench/metrics.SharedFlow): at 16 fps dynamic
degree's pairs are smoothness's forward pairs, so 81 frames cost 80 flows instead of 120, with the same values."""
import cv2
import numpy as np

from bench_assets.entitybench import metrics as M

H, W = 48, 64


def _shot(n: int, seed: int) -> np.ndarray:
    """A textured square moving by a different step each frame, over noise (DIS has something to follow)."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (H, W, 3), dtype=np.uint8)
    frames = []
    x = 4
    for _ in range(n):
        f = base.copy()
        x = (x + int(rng.integers(0, 5))) % (W - 16)
        f[10:26, x:x + 16] = 255 - f[10:26, x:x + 16]
        frames.append(f)
    return np.stack(frames)


class CountingFlow:
    """DIS on the real frames, counting every pair it computes (and optionally failing)."""

    def __init__(self, fail: bool = False):
        self.dis = cv2.DISOpticalFlow_create(cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST)
        self.pairs, self.fail = 0, fail

    def flow(self, pairs):
        if self.fail:
            raise RuntimeError("flow weights missing")
        self.pairs += len(pairs)
        return [self.dis.calc(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY), None)
                for a, b in pairs]


FLOW_METRICS = [m for m in M.PILLAR1 if m.metric_id in ("motion_smoothness", "dynamic_degree")]
# dynamic degree as the authors' code runs VBench (a per-shot verdict) and the paper text's pair fraction read one
# accumulator: the fraction never costs a flow of its own
PAIR_FRACTION = next(m for m in M.PILLAR1 if m.metric_id == "dynamic_degree_pair_fraction")


def _chunks(frames, size):
    return [frames[i:i + size] for i in range(0, len(frames), size)]


def test_81_frames_at_16_fps_cost_80_flows_with_the_unshared_values():
    frames = _shot(81, 3)
    reference = CountingFlow()
    expected = {"motion_smoothness": M.motion_smoothness(frames, reference.flow),
                "dynamic_degree": M.dynamic_degree(frames, 16.0, reference.flow)}
    assert reference.pairs == 80 + 40
    fraction = M.dynamic_degree_pair_fraction(frames, 16.0, CountingFlow().flow)
    for size in (7, 32, 81):        # chunk borders inside triples and between kept frames
        shared = CountingFlow()
        out = M.stream_pillar1(_chunks(frames, size), 16.0, len(frames), {m: shared for m in FLOW_METRICS})
        assert {k: v[0] for k, v in out.items()} == expected and shared.pairs == 80, size
        # separate models: nothing shared, every flow computed
        a, b = CountingFlow(), CountingFlow()
        out = M.stream_pillar1(_chunks(frames, size), 16.0, len(frames), dict(zip(FLOW_METRICS, (a, b))))
        assert {k: v[0] for k, v in out.items()} == expected and (a.pairs, b.pairs) == (80, 40)
        both = CountingFlow()      # the verdict and the pair fraction from one set of flows
        out = M.stream_pillar1(_chunks(frames, size), 16.0, len(frames), {m: both for m in [*FLOW_METRICS,
                                                                                            PAIR_FRACTION]})
        assert out["dynamic_degree_pair_fraction"][0] == fraction and both.pairs == 80
        assert out["dynamic_degree"][0] == expected["dynamic_degree"]
    # 6 of 40 pairs move: VBench needs round(4 * 41 / 16) = 10, so the shot is static (0.0), its pair fraction 0.15
    assert expected["dynamic_degree"] in (0.0, 1.0) and 0.0 < fraction < 1.0 and expected["motion_smoothness"] < 1.0
    assert expected["dynamic_degree"] == (1.0 if round(fraction * 40) >= 10 else 0.0)


def test_held_flows_are_bounded_and_nothing_is_shared_where_pairs_differ():
    frames = _shot(33, 5)
    model = CountingFlow()
    sharing = M.SharedFlow(model, M.smoothness_forward_pairs(33) & M.dynamic_pairs(33, 16.0))
    smooth, dyn = M._Smoothness(sharing, 16.0, 33), M._Dynamic(sharing, 16.0, 33)
    most = 0
    for chunk in _chunks(frames, 8):
        smooth.update(chunk)
        most = max(most, len(sharing.held))
        dyn.update(chunk)
        assert not sharing.held          # dynamic degree took every flow smoothness held for it
    assert 0 < most <= 4 and model.pairs == 32
    # at 24 fps the ~8 fps pairs are (k, k+3): no forward pair of smoothness is one of them
    assert not (M.smoothness_forward_pairs(81) & M.dynamic_pairs(81, 24.0))


def test_a_failing_metric_stops_the_sharing_and_the_other_still_scores():
    frames = _shot(33, 7)

    class FailsAfterOneCall(CountingFlow):
        calls = 0

        def flow(self, pairs):
            self.calls += 1
            if self.calls > 1:
                raise RuntimeError("the flow server went away")
            return super().flow(pairs)

    # chunk 1: smoothness computes (and holds) what dynamic degree takes; chunk 2: every call fails. Both metrics
    # are None with the reason (no zero from a half-walked shot), and nothing stays held.
    failing = FailsAfterOneCall()
    out = M.stream_pillar1(_chunks(frames, 8), 16.0, 33, {m: failing for m in FLOW_METRICS})
    assert failing.calls >= 2
    for mid in ("motion_smoothness", "dynamic_degree"):
        assert out[mid][0] is None and "the flow server went away" in out[mid][1], out
    # the flow model fails for dynamic degree only (its own model): smoothness scores as without sharing
    out = M.stream_pillar1(_chunks(frames, 8), 16.0, 33, {FLOW_METRICS[0]: CountingFlow(),
                                                          FLOW_METRICS[1]: CountingFlow(fail=True)})
    assert out["motion_smoothness"][0] == M.motion_smoothness(frames, CountingFlow().flow)
    assert out["dynamic_degree"] == (None, "dynamic_degree failed: RuntimeError: flow weights missing")


def test_offline_interpolator_is_the_flow_midpoint_substitute_sharing_the_flow_slot():
    """The offline ``interpolator`` slot warps along the ``flow`` slot's own model (so the shot's flows are still
    shared with dynamic degree) and is marked as a substitute; the values are the flow-midpoint ones."""
    from bench_assets.core.metric_spec import substitute_label
    from bench_assets.entitybench.metric_specs import METRICS
    from bench_resources.models import ModelRegistry
    from bench_resources.models.amt import FlowMidpoint
    reg = ModelRegistry(profile="offline")
    interp = reg.slot("interpolator")
    assert isinstance(interp, FlowMidpoint) and interp.flow_model is reg.slot("flow")
    assert METRICS.get("motion_smoothness").slots == ("interpolator",)
    assert substitute_label(("interpolator",), reg).startswith("interpolator: flow-midpoint")
    assert ModelRegistry(profile="paper").status("interpolator").checkpoint.startswith("AMT-S")
    frames = _shot(33, 9)
    counting = CountingFlow()
    out = M.stream_pillar1(_chunks(frames, 8), 16.0, 33, {FLOW_METRICS[0]: FlowMidpoint(counting),
                                                         FLOW_METRICS[1]: counting})
    assert out["motion_smoothness"][0] == M.motion_smoothness(frames, CountingFlow().flow)
    assert out["dynamic_degree"][0] == M.dynamic_degree(frames, 16.0, CountingFlow().flow)
    assert counting.pairs == 32                     # shared: 32 smoothness flows, dynamic degree's taken from them
