"""Issue 37 item 1, the pure functions: an identity from several faces (quality-weighted geometric median of the
top-k), a shot's beginning and end sets, and the within-shot value that reads a set's low-quality faces when it has
no other (with a finding) instead of dropping them."""
import numpy as np
import pytest

from bench_assets.entitybench import identity as M


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


def test_robust_identity_resists_one_odd_frame_where_a_mean_does_not():
    rng = np.random.default_rng(3)
    person = _unit(rng.normal(size=128))
    frames = [_unit(person + 0.3 * rng.normal(size=128)) for _ in range(4)]
    stranger = _unit(rng.normal(size=128))
    got = M.robust_identity(frames + [stranger], [0.9] * 5)
    mean = _unit(np.mean(frames + [stranger], axis=0))
    assert got @ person > mean @ person > 0   # the median moves less toward the odd frame
    assert np.linalg.norm(got) == pytest.approx(1.0)
    assert M.robust_identity([], []) is None
    with pytest.raises(ValueError, match="2 vectors but 1 weights"):
        M.robust_identity(frames[:2], [1.0])


def test_robust_identity_reads_the_top_k_faces_by_quality():
    a, b = _unit([1, 0, 0]), _unit([0, 1, 0])
    # k=2: the two best-quality faces are b; the three poor ones (a) are not read
    assert M.robust_identity([a, a, a, b, b], [0.5, 0.5, 0.5, 0.95, 0.93], k=2) @ b == pytest.approx(1.0)
    assert M.robust_identity([a, a, a, b, b], [0.8, 0.8, 0.8, 0.95, 0.93], k=5) @ a > 0.9   # the weighted majority


def test_end_sets_never_share_a_frame():
    assert M.end_sets(list(range(20))) == ([0, 1, 2, 3, 4], [15, 16, 17, 18, 19])
    assert M.end_sets([9, 2, 5]) == ([2], [9])
    assert M.end_sets([3]) == ([], []) and M.end_sets([]) == ([], [])


def test_within_shot_reads_low_quality_faces_only_where_a_set_has_no_other():
    a, b = _unit([1, 0.1, 0]), _unit([0, 1, 0.1])
    steady, note = M.within_shot([(a, .9, True)] * 3, [(a, .9, True)] * 3)
    assert steady == pytest.approx(1.0) and note is None
    # the end set has one good face of the same person and low-quality faces of another: the good face decides
    v, note = M.within_shot([(a, .9, True)] * 3, [(a, .9, True), (b, .8, False), (b, .8, False)])
    assert v == pytest.approx(1.0) and note is None
    # the end set has only low-quality faces, of another person: read, not dropped, and said
    v, note = M.within_shot([(a, .9, True)] * 3, [(b, .8, False)] * 3)
    assert v == pytest.approx(float(a @ b)) and "end shows only low-quality faces (3)" in note
    assert M.within_shot([], [(a, .9, True)]) == (None, None)
