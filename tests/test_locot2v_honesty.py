"""LoCoT2V headline honesty and sampling: coverage beside every aggregate, and the content-clarity temperature either
sent or recorded as not sent."""
import pandas as pd
import pytest

from bench_assets.locot2v import assets as A
from bench_assets.locot2v import constants as K
from bench_assets.locot2v import pipeline as PL
from bench_resources.judge import Judge


def _records(values: dict[tuple[str, str], float]) -> pd.DataFrame:
    rows = []
    for item in ("s1", "s2"):
        for mid in K.SUB_DIMENSIONS:
            v = values.get((item, mid))
            rows.append({"generator": "g", "item": item, "metric_id": mid, "value": v, "n_eval": int(v is not None),
                         "n_failed": 0, "n_skipped": int(v is None), "reason": None if v is not None else "off",
                         "protocol": "p"})
    return pd.DataFrame(rows)


def test_coverage_beside_every_aggregate():
    # one dimension of five has values: temporal quality, 10 of 11 sub-dimensions on both samples, one on s1 only
    vals = {(i, m): 80.0 for i in ("s1", "s2") for m in K.TEMPORAL_IDS if m != "human_action"}
    del vals[("s2", "inter_event_subject_consistency")]
    board = A.leaderboard_table(_records(vals), ["s1", "s2"], ["g"]).set_index("metric_id")
    assert board["coverage"].notna().all()
    assert board.loc["inter_event_subject_consistency", "coverage"] == 0.5
    assert board.loc["human_action", "coverage"] == 0.0
    tq = (9 * 1.0 + 0.5 + 0.0) / 11
    assert board.loc["temporal_quality", "coverage"] == pytest.approx(tq)
    assert board.loc["static_quality", "coverage"] == 0.0
    assert board.loc["overall", "value"] == pytest.approx(80.0)          # the one dimension's value ...
    assert board.loc["overall", "coverage"] == pytest.approx(tq / 5)     # ... shown with its 17 % coverage
    assert "1 of 5 dimensions" in board.loc["overall", "reason"]
    md = A.headline_markdown(board.reset_index())
    assert "80.00 (17% covered)" in md and "None (0% covered)" in md
    # everything scored: full coverage
    full = {(i, m): 50.0 for i in ("s1", "s2") for m in K.SUB_DIMENSIONS}
    b2 = A.leaderboard_table(_records(full), ["s1", "s2"], ["g"])
    assert (b2["coverage"] == 1.0).all()


def test_content_clarity_sampling_sent_or_recorded():
    anth = Judge(mode="replay")
    used, rec = PL.clarity_sampling(anth)
    assert used is anth and rec["temperature_sent"] is None and rec["temperature_protocol"] == K.CC_TEMPERATURE
    assert "none sent" in rec["note"]
    configured = Judge(mode="replay", temperature=0.2)
    assert PL.clarity_sampling(configured)[1]["temperature_sent"] == 0.2
    if "backend" not in Judge.model_fields:
        pytest.skip("this judge has no backend choice: only the not-sent record applies")
    oa = Judge(mode="replay", backend="openai", base_url="http://127.0.0.1:9/v1", model="m", api_key_env="")
    used, rec = PL.clarity_sampling(oa)
    assert used.temperature == K.CC_TEMPERATURE and rec["temperature_sent"] == K.CC_TEMPERATURE
    req = PL.J.clarity_request([__import__("numpy").zeros((16, 16, 3), "uint8")], 0)
    assert used.cache_key(req) != oa.cache_key(req)      # the sent temperature is part of the answer's identity
