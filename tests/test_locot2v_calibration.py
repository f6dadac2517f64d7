"""LoCoT2V transition smoothness on the spec's three reference transitions (steady ~0.95-1.0, gradual fade ~0.7,
hard cut ~0.15), with the offline slots the pipeline uses (DIS flow, EfficientNet-Lite0 frame features), and the
layout rule that bench_resources imports nothing from bench_assets."""
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from bench_assets.locot2v import constants, metrics, pipeline

ROOT = Path(__file__).resolve().parents[1]
N = 2 * constants.TRANSITION_K + 1   # the 9-frame window


def _scene(seed: int, shift: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = cv2.resize(rng.integers(0, 255, (12, 20, 3)).astype(np.uint8), (160, 96), interpolation=cv2.INTER_CUBIC)
    return np.roll(base, shift, axis=1)


def _fade(a, b, length: int) -> list[np.ndarray]:
    """A 9-frame window holding a cross-fade of ``length`` frames centred on the window (1: a hard cut)."""
    c, h = (N - 1) / 2, (length - 1) / 2
    out = []
    for i in range(N):
        t = 0.0 if i < c - h else 1.0 if i > c + h else (i - (c - h)) / max(length - 1, 1)
        out.append(cv2.addWeighted(a, 1 - t, b, t, 0))
    return out


@pytest.fixture(scope="module")
def slots():
    from bench_resources.config import build_resources
    res = build_resources()
    flow, why = res["models"].slot_or_reason("flow", res["device"])
    emb, why2 = res["models"].slot_or_reason("siglip2", res["device"])
    assert flow is not None and emb is not None, (why, why2)
    return flow, emb


def _score(window, slots) -> float:
    flow, emb = slots
    flows = flow.flow([(window[i], window[i + 1]) for i in range(len(window) - 1)])
    return metrics.transition_window_score(window, pipeline.embed_unique(emb, window), flows)[0]


def test_three_reference_transitions(slots):
    a, b = _scene(1), _scene(2)
    steady = _score([_scene(1, k) for k in range(N)], slots)       # a pan, 1 px per frame
    by_len = {n: _score(_fade(a, b, n), slots) for n in (1, 3, 5, 9)}
    fade, cut = by_len[5], by_len[1]          # a gradual fade inside the window; a hard cut mid-window
    assert steady >= 0.95, steady
    assert 0.6 <= fade <= 0.85, fade          # spec: ~0.7
    assert 0.08 <= cut <= 0.3, cut            # spec: ~0.15
    # monotone in the fade's length: the longer the fade, the smoother the transition
    assert list(by_len.values()) == sorted(by_len.values()), by_len
    # a cross-fade as long as the window (9 frames) changes by the same step on every pair: eq. 4 measures how
    # uneven the change is, so it is as smooth as a steady pan (0.99), not ~0.7; pinned so the reading is explicit
    assert by_len[N] > 0.95


def test_motion_consistency_is_relative_to_the_window_motion():
    # a real pan at ~5 px/frame wobbling by 0.8 px is consistent motion; a 10 px jump in a still window is not
    assert metrics.motion_consistency(5.8, 5.6) > 0.95
    assert metrics.motion_consistency(10.0, 0.0) < 0.1
    assert metrics.motion_consistency(0.3, 0.2) > 0.9          # sub-pixel noise in a still shot (1 px floor)
    assert metrics.motion_consistency(50.0, 10.0) == pytest.approx(1 / 5)


def test_steady_real_footage_window_scores_smooth(slots):
    from bench_assets.core.footage import require_footage
    from bench_assets.core.media import VideoSource
    path = require_footage("bikes.mp4")["bikes.mp4"]
    src = VideoSource(path)
    req = src.take(range(20, 20 + N))        # inside shot 2 (30..76 is shot 2; 0..30 the road): a steady top view
    src.run()
    s = _score(list(req.frames), slots)
    assert s >= 0.95, s                      # was 0.88 with an absolute 1 px motion tolerance
    # and a true hard cut of the same clip (frame 30, data/footage/bikes.yaml) scores as a cut
    src = VideoSource(path)
    req = src.take(range(30 - constants.TRANSITION_K - 1 + 1, 30 + constants.TRANSITION_K + 1))
    src.run()
    assert _score(list(req.frames), slots) < 0.35


def test_bench_resources_imports_nothing_from_bench_assets():
    code = ("import sys, bench_resources.models.slots_locot2v as s; "
            "assert s.sentence_chunks('a b. c.', 2) == ['a b.', 'c.']; "
            "bad = [m for m in sys.modules if m.startswith('bench_assets')]; assert not bad, bad")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
