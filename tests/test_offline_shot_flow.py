"""The offline flow (OpenCV DIS after a global gain fit) asked for a pair both ways, as motion smoothness asks
(issue 38: the offline per-shot CPU cost): the grey frames and the gain moments are shared, and every flow is
bitwise the one of the pair asked alone."""
from __future__ import annotations

import numpy as np

from bench_resources.models import base
from bench_resources.models.flow import DisFlow, gain_aligned, gain_aligned_both


def frames(seed: int, n: int = 5, h: int = 48, w: int = 64) -> list[np.ndarray]:
    """Moving texture with a per-frame gain (flicker), one nearly black frame (too few pixels to fit a gain) and
    one flat frame (no variance)."""
    rng = np.random.default_rng(seed)
    base_img = rng.integers(0, 256, (h, w + 4 * n, 3)).astype(np.float32)
    out = [np.clip(base_img[:, 4 * i:4 * i + w] * (0.8 + 0.1 * i), 0, 255).astype(np.uint8) for i in range(n)]
    out.append(np.full((h, w, 3), 2, np.uint8))                    # all below the fit's lower clip
    out.append(np.full((h, w, 3), 120, np.uint8))                  # flat: variance 0
    return out


def test_both_ways_is_bitwise_two_single_fits():
    for seed in (0, 1, 2):
        fs = [f[..., 0] for f in frames(seed)]
        for i in range(len(fs)):
            for j in range(len(fs)):
                if i == j:
                    continue
                (a1, b1), (b2, a2) = gain_aligned_both(fs[i], fs[j])
                r1, r2 = gain_aligned(fs[i], fs[j]), gain_aligned(fs[j], fs[i])
                assert np.array_equal(a1, r1[0]) and np.array_equal(b1, r1[1])
                assert np.array_equal(b2, r2[0]) and np.array_equal(a2, r2[1])


def test_disflow_pairs_both_ways_equal_pairs_alone_and_count_every_flow():
    fs = frames(3)
    pairs = []
    for p in range(0, 4, 2):
        pairs += [(fs[p], fs[p + 2]), (fs[p + 2], fs[p])]
    pairs += [(fs[5], fs[0]), (fs[0], fs[5]), (fs[6], fs[1]), (fs[1], fs[6]), (fs[0], fs[4])]
    dis = DisFlow()
    f0 = base._forwards if hasattr(base, "_forwards") else None
    together = dis.flow(pairs)
    if f0 is not None:
        assert base._forwards - f0 == len(pairs)   # one forward per flow, as before
    alone = [DisFlow().flow([pr])[0] for pr in pairs]
    assert len(together) == len(alone) == len(pairs)
    for x, y in zip(together, alone):
        assert np.array_equal(x, y)
    # the flows differ by direction and pair: the equality above is not of constants
    assert not np.array_equal(together[0], together[1]) and not np.array_equal(together[0], together[2])
