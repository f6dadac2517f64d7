"""Track splitting: a tracker follows boxes, not people; a track is cut where consecutive boxes disagree."""
import numpy as np
import pytest

from bench_assets.narrativetrack.pipeline import split_on, split_tracklets


def test_split_where_appearance_changes_and_never_on_a_missing_embedding():
    a, a2, b = np.array([1.0, 0.0]), np.array([1.0, 0.1]), np.array([0.0, 1.0])
    # samples out of order: the cut follows time, not list order
    assert split_tracklets([0, 0, 0, 0, 0], [0, 1, 2, 3, 4], [a, a2, b, None, b], 0.5) == [0, 0, 1, 1, 1]
    assert split_tracklets([0, 0, 0], [2, 0, 1], [b, a, a2], 0.5) == [1, 0, 0]
    # untracked boxes (-1) stay untracked; new tracklets get fresh ids
    assert split_tracklets([0, -1, 1, 1], [0, 1, 2, 3], [a, a, a, b], 0.5) == [0, -1, 1, 2]


def test_split_on_any_similarity():
    heights = [100.0, 104.0, 50.0]
    ratio = lambda x, y: min(x, y) / max(x, y)  # noqa: E731
    assert split_on([3, 3, 3], [0, 1, 2], heights, 0.8, ratio) == [3, 3, 4]


def test_face_refine_logs_the_margin_of_every_decision_and_the_closest_refusal():
    import numpy as np

    from bench_assets.narrativetrack import pipeline as PL
    e = {0: np.array([1.0, 0.0, 0.0]), 1: np.array([0.9, 0.436, 0.0]), 2: np.array([0.0, 0.0, 1.0])}
    frames = {0: {0}, 1: {1}, 2: {2}}
    labels, log = PL.face_refine({0: 0, 1: 1, 2: 2}, e, frames, merge=0.5)
    assert labels[0] == labels[1] != labels[2]
    merge = [x for x in log if x["op"] == "merge"]
    kept = [x for x in log if x["op"] == "kept_apart"]
    assert len(merge) == 1 and merge[0]["margin"] == pytest.approx(0.9 - 0.5, abs=1e-3)
    assert len(kept) == 1 and kept[0]["margin"] < 0 and kept[0]["face_cosine"] == pytest.approx(kept[0]["margin"] + 0.5,
                                                                                                abs=1e-3)
