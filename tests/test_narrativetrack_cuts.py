"""Cut detection (issue 23): the validity case's scoring (pure) and shot_ids on camera motion vs cuts.

The footage tests read only validation clips' frames for checks that were not fitted on them (the case itself runs
under ``bench validate``); the camera-motion checks use frames built here."""
from __future__ import annotations

import numpy as np
import pytest

from bench_assets.narrativetrack import validity as NV


def test_cut_counts_scores_intervals_between_samples():
    idx = [0, 25, 50, 75, 100]
    # a cut at 30 (interval 25-50) and two at 60 and 70 (one interval, counted once); one at 120: after the last sample
    cuts = [30, 60, 70, 120]
    # found the first, missed the second, a false change in 75-100
    shots = [0, 0, 1, 1, 2]
    assert NV.cut_counts(idx, shots, cuts) == {"intervals_with_cut": 2, "found": 1, "false": 1}
    # a cut on a sampled frame belongs to the interval that ends there (a < c <= b)
    assert NV.cut_counts([0, 25, 50], [0, 1, 1], [25]) == {"intervals_with_cut": 1, "found": 1, "false": 0}
    assert NV.cut_counts([0, 25, 50], [0, 0, 1], [25]) == {"intervals_with_cut": 1, "found": 0, "false": 1}


def test_cut_rows_pool_the_clips_and_keep_no_cut_clips_apart():
    rows = NV.cut_rows({"a": ({"intervals_with_cut": 4, "found": 3, "false": 1}, 0.5),
                        "b": ({"intervals_with_cut": 0, "found": 0, "false": 2}, 1.5)})
    got = {(r["generator"], r["unit"], r["metric_id"]): r for r in rows}
    assert got[(NV.PIPELINE, "a", NV.CUT_RECALL)]["value"] == pytest.approx(0.75)
    assert got[(NV.PIPELINE, "a", NV.FALSE_CUTS)]["value"] == pytest.approx(2.0)
    assert got[(NV.PIPELINE, "b", NV.CUT_RECALL)]["value"] is None
    assert "no labelled cut" in got[(NV.PIPELINE, "b", NV.CUT_RECALL)]["reason"]
    assert got[(NV.PIPELINE, "all", NV.CUT_RECALL)]["value"] == pytest.approx(0.75)
    assert got[(NV.PIPELINE, "all", NV.FALSE_CUTS)]["value"] == pytest.approx(3 / 2.0)
    assert got[(NV.TRUTH, "all", NV.CUT_RECALL)]["value"] == 1.0
    assert got[(NV.TRUTH, "all", NV.FALSE_CUTS)]["value"] == 0.0


def test_the_cut_case_reads_validation_clips_and_expects_the_pooled_unit():
    from bench_assets.core import footage
    case = next(c for c in NV.CASES if c.case_id == "cuts_moving_camera")
    assert all(footage.SOURCES[s].split == footage.VALIDATION for s in case.sources)
    assert {e.metric_id: (e.direction, e.margin, e.units) for e in case.expectations} == {
        NV.CUT_RECALL: (0, 0.2, "^all$"), NV.FALSE_CUTS: (0, 1.0, "^all$")}
    # every clip's cuts are labelled in its footage sidecar
    for clip in NV.CUT_VIDEOS:
        assert isinstance(footage.ground_truth(clip)["cuts"], list)
