"""Issue 39 (the daily loop): MBench's audit pages say why a row has no value wherever the store says it.

The tracked boxes an MBench page shows beside a case (mbench/page.box_rows) are evidence, not missing values: they
were grouped under "no reason recorded" with a count. A case with no score and no judge words but a trigger verdict
(not triggered / unknown) said "no reason recorded" too. Real Parquet tables in a real store, the real site code."""
import json
import re

import pandas as pd

from bench_assets.core import audit as AU
from bench_assets.core.site import Reader, write_audits
from bench_assets.mbench.page import PAGE, audit_rows, box_rows
from bench_resources.store import Store


def _tracks(gen, case, n=3):
    return pd.DataFrame([{"generator": gen, "case_id": case, "kind": "object", "frame": f,
                          "box": json.dumps([1.0 + f, 2.0, 10.0 + f, 12.0]), "person_box": None, "track": None,
                          "mask_source": None, "source_sha256": "abc"} for f in range(n)])


def test_tracked_boxes_are_not_grouped_as_missing_values(tmp_path):
    boxes = box_rows(_tracks("g", "t01"), video_of=lambda g, c: None, sha_of=lambda p: "abc")
    assert len(boxes)
    rows = [{"generator": "g", "item": "t01", "level": "item", "metric_id": "geometry", "value": 0.5,
             "reason": None, "n_eval": 1, "n_failed": 0, "n_skipped": 0}] + boxes[boxes["metric_id"] == "geometry"].to_dict("records")
    page = AU.render_audit(metric_id="m_score.geometry", generator="g", headline={"value": 50.0, "coverage": 1.0, "n_eval": 1,
                                                                             "n_failed": 0, "n_skipped": 0},
                           episodes=pd.DataFrame(rows[:1]), instances=pd.DataFrame(rows[1:]),
                           artifact_path=lambda s: str(tmp_path / s), out_dir=tmp_path / "site" / "audit" / "mbench")
    html = page.read_text()
    assert "no reason recorded" not in html
    assert 'id="instance-reasons"' not in html            # nothing is missing among the instance rows
    assert html.count('<td class="text">object box</td>') == 3                  # each box still listed, with its frame and detail
    # a real missing instance value with no reason is still said so
    assert AU.group_reasons([{"item": "a", "value": None}])[0]["reason"] == "no reason recorded"


def test_a_case_without_a_score_says_its_trigger_verdict(tmp_path, monkeypatch):
    monkeypatch.setenv("BENCH_GENERATORS_ROOT", str(tmp_path / "generators"))
    store = Store(root=str(tmp_path / "store"))
    scores = pd.DataFrame([
        {"generator": "g", "case_id": "t01", "metric_id": "geometry", "value": None, "reason": None,
         "triggered": False, "trigger_reason": None, "n_eval": 0, "n_failed": 0, "n_skipped": 1},
        {"generator": "g", "case_id": "t02", "metric_id": "geometry", "value": None, "reason": None,
         "triggered": None, "trigger_reason": None, "n_eval": 0, "n_failed": 0, "n_skipped": 1},
        {"generator": "g", "case_id": "t03", "metric_id": "geometry", "value": None, "reason": "no object tracked",
         "triggered": True, "trigger_reason": "the object returns", "n_eval": 0, "n_failed": 0, "n_skipped": 1},
        {"generator": "g", "case_id": "t04", "metric_id": "geometry", "value": 0.7, "reason": None,
         "triggered": True, "trigger_reason": "the object returns", "n_eval": 1, "n_failed": 0, "n_skipped": 0}])
    store.write_table(scores, store.table_path("mbench_scores", None))
    rows = audit_rows(Reader(store), ("mbench_scores",)).set_index("item")["reason"].to_dict()
    assert rows["t01"].startswith("not triggered") and rows["t02"].startswith("trigger unknown")
    assert rows["t03"] == "no object tracked" and rows["t04"] == "the object returns"
    board = pd.DataFrame([{"generator": "g", "metric_id": "m_score.geometry", "slice": "T", "value": 70.0,
                           "coverage": 0.33, "n_eval": 1, "n_failed": 0, "n_skipped": 3, "reason": None}])
    write_audits(PAGE, Reader(store), board, "T", tmp_path / "site")
    html = (tmp_path / "site" / "audit" / "mbench" / "m_score.geometry__g.html").read_text()
    assert "no reason recorded" not in html
    assert re.search(r"not triggered: .*?</td><td class=\"count\">1<", html), html
