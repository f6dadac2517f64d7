"""LoCoT2V headline honesty and sampling: coverage beside every aggregate, and the content-clarity temperature either
sent or recorded as not sent."""
import json

import pandas as pd
import pytest

from bench_assets.locot2v import board, constants, judging, pipeline
from bench_resources.judge import Judge


def _records(values: dict[tuple[str, str], float]) -> pd.DataFrame:
    rows = []
    for item in ("s1", "s2"):
        for mid in (*constants.SUB_DIMENSIONS, "inter_event_subject_face_identity"):   # + the addition
            v = values.get((item, mid))
            rows.append({"generator": "g", "item": item, "metric_id": mid, "value": v, "n_eval": int(v is not None),
                         "n_failed": 0, "n_skipped": int(v is None), "reason": None if v is not None else "off",
                         "protocol": "p"})
    return pd.DataFrame(rows)


def test_coverage_beside_every_aggregate():
    # one dimension of five has values: temporal quality, 10 of 11 sub-dimensions on both samples, one on s1 only
    vals = {(i, m): 80.0 for i in ("s1", "s2") for m in constants.TEMPORAL_IDS if m != "human_action"}
    del vals[("s2", "inter_event_subject_consistency")]
    table = board.leaderboard_table(_records(vals), ["s1", "s2"], ["g"]).set_index("metric_id")
    assert table["coverage"].notna().all()
    assert table.loc["inter_event_subject_consistency", "coverage"] == 0.5
    assert json.loads(table.loc["inter_event_subject_consistency", "detail"])["samples_scored"] == 1
    assert table.loc["human_action", "coverage"] == 0.0
    tq = (9 * 1.0 + 0.5 + 0.0) / 11
    assert table.loc["temporal_quality", "coverage"] == pytest.approx(tq)
    assert table.loc["static_quality", "coverage"] == 0.0
    # the paper's overall needs all five: None with its reason; the partial mean keeps the one dimension's value ...
    assert pd.isna(table.loc["overall", "value"]) and "needs all 5 dimensions" in table.loc["overall", "reason"]
    assert table.loc["overall_available", "value"] == pytest.approx(80.0)
    assert table.loc["overall_available", "coverage"] == pytest.approx(tq / 5)    # ... with its 17 % coverage
    assert "1 of 5 dimensions" in table.loc["overall_available", "reason"]
    assert table.loc["overall_available", "addition"] and not table.loc["overall", "addition"]
    md = board.headline_markdown(table.reset_index())
    assert "80.00 (17% covered)" in md and "None (0% covered)" in md
    # everything scored: full coverage, and the paper's aggregates equal their partial means
    full = {(i, m): 50.0 for i in ("s1", "s2") for m in constants.SUB_DIMENSIONS}
    # the face-identity addition (issue 23) at another value: no aggregate reads it, so overall stays 50
    full |= {(i, "inter_event_subject_face_identity"): 10.0 for i in ("s1", "s2")}
    b2 = board.leaderboard_table(_records(full), ["s1", "s2"], ["g"]).set_index("metric_id")
    assert (b2["coverage"] == 1.0).all()
    assert b2.loc["overall", "value"] == b2.loc["overall_available", "value"] == 50.0


def test_content_clarity_sampling_sent_or_recorded():
    anth = Judge(mode="replay")
    used, rec = pipeline.clarity_sampling(anth)
    assert used is anth and rec["temperature_sent"] is None and rec["temperature_protocol"] == constants.CC_TEMPERATURE
    assert "none sent" in rec["note"]
    configured = Judge(mode="replay", temperature=0.2)
    assert pipeline.clarity_sampling(configured)[1]["temperature_sent"] == 0.2
    if "backend" not in Judge.model_fields:
        pytest.skip("this judge has no backend choice: only the not-sent record applies")
    oa = Judge(mode="replay", backend="openai", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="")
    used, rec = pipeline.clarity_sampling(oa)
    assert used.temperature == constants.CC_TEMPERATURE and rec["temperature_sent"] == constants.CC_TEMPERATURE
    req = judging.clarity_request([__import__("numpy").zeros((16, 16, 3), "uint8")], 0)
    assert used.cache_key(req) != oa.cache_key(req)      # the sent temperature is part of the answer's identity
