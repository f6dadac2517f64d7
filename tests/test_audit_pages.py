"""Audit links from the UI's metadata go only to pages the site writes (issue 26): a diagnostic row of the metric
tables (not a board cell, so no audit page) gets no link instead of one that answers 404."""
from __future__ import annotations

import pandas as pd

from bench_assets.core import audit as AU
from bench_assets.core.explain import explain_metadata
from bench_assets.core.site import audit_link, report_base_url


def test_audit_link_only_for_board_metrics():
    from bench_assets.entitybench.metric_specs import METRICS
    link = audit_link("entitybench", "gen_a", METRICS.specs)
    diagnostics = [s.id for s in METRICS.specs if s.kind == "diagnostic"]
    board = [s.id for s in METRICS.specs if s.kind != "diagnostic"]
    assert "_meta_cross_shot_gate" in diagnostics and "cs_face" in board
    for m in diagnostics:
        assert link(m) is None, m
    assert link("no_such_metric") is None
    for m in board:  # the file name write_audits gives the page of that board cell
        assert link(m) == f"{report_base_url()}/audit/entitybench/{AU.audit_filename(m, 'gen_a')}"
    assert link("cs_face").endswith("/audit/entitybench/cs_face__gen_a.html")


def test_unit_ids_link_the_board_page_they_feed():
    from bench_assets.mbench.metric_specs import METRICS
    to_board = {(s.unit_id or s.id): s.id for s in METRICS.specs}
    unit, board_id = next((u, b) for u, b in to_board.items() if u != b)
    link = audit_link("mbench", "g", METRICS.specs, to_board)
    assert link(unit).endswith(f"/audit/mbench/{AU.audit_filename(board_id, 'g')}")
    assert audit_link("mbench", "g", METRICS.specs)(unit) is None  # without the map the unit id has no page


def test_metadata_values_table_has_no_link_for_a_diagnostic():
    from bench_assets.entitybench.metric_specs import METRICS
    df = pd.DataFrame([
        {"metric_id": "cs_face", "level": "item", "value": 0.857784, "n_eval": 3, "n_failed": 0, "n_skipped": 0,
         "n_failed_evaluator": 0, "reason": None},
        {"metric_id": "_meta_cross_shot_gate", "level": "item", "value": 2.0, "n_eval": 5, "n_failed": 0,
         "n_skipped": 0, "n_failed_evaluator": 0, "reason": None},
    ])
    md = explain_metadata(df, benchmark="entitybench", generator="gen_a",
                          directions={s.id: s.direction for s in METRICS.specs},
                          audit_url=audit_link("entitybench", "gen_a", METRICS.specs))
    table = str(getattr(md["values"], "value", md["values"]))
    rows = {line.split("|")[1].strip(): line for line in table.splitlines() if line.startswith("| ")}
    assert "cs_face__gen_a.html" in rows["cs_face"]
    assert "[audit]" not in rows["_meta_cross_shot_gate"] and ".html" not in rows["_meta_cross_shot_gate"]


def _video(path, n=12, w=64, h=48):
    import cv2
    import numpy as np
    path.parent.mkdir(parents=True, exist_ok=True)
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 8, (w, h))
    for i in range(n):
        out.write(np.full((h, w, 3), (i * 20) % 255, np.uint8))
    out.release()
    return path


def _rows(item_col, items, metric, gen):
    return pd.DataFrame([{"generator": gen, item_col: i, "metric_id": metric, "value": 0.1 * k, "reason": None,
                          "n_eval": 1, "n_failed": 0, "n_skipped": 0, "detail": None}
                         for k, i in enumerate(items)])


def test_mbench_and_locot2v_audit_rows_link_existing_frames(tmp_path, monkeypatch):
    """Each item row of MBench's and LoCoT2V's audit pages shows frames of the video behind it, as files that exist
    (relative to the page); an item whose video is missing gets no frame and the page is still written."""
    import re

    from bench_assets.core.site import Reader, write_audits
    from bench_assets.locot2v.page import PAGE as LOCOT2V
    from bench_assets.mbench.page import PAGE as MBENCH
    from bench_resources.store import Store

    gens = tmp_path / "generators"
    monkeypatch.setenv("BENCH_GENERATORS_ROOT", str(gens))
    store = Store(root=str(tmp_path / "store"))
    cases = {"mbench": ("mbench_scores", "case_id", "epipolar", "m_score.epipolar", "A", MBENCH),
             "locot2v": ("locot2v_visual", "item", "subject_consistency", "subject_consistency", "all", LOCOT2V)}
    for name, (table, col, metric, board_id, slice_, page) in cases.items():
        gen = f"{name}_gen"
        _video(gens / gen / "i1.mp4", n=12)
        _video(gens / gen / "i2.mp4", n=30, w=80)   # another video: other frames
        df = _rows(col, ["i1", "i2", "i3"], metric, gen)   # i3 has no video
        if name == "mbench":
            df["trigger_reason"] = "triggered"
        store.write_table(df, store.table_path(table, None))
        board = pd.DataFrame([{"generator": gen, "metric_id": board_id, "slice": slice_, "value": 0.1,
                               "coverage": 1.0, "n_eval": 3, "n_failed": 0, "n_skipped": 0, "reason": None}])
        out = tmp_path / "site"
        written = write_audits(page, Reader(store), board, slice_, out)
        assert written == {(board_id, gen)}, name
        page_path = out / "audit" / name / f"{board_id}__{gen}.html"
        html = page_path.read_text()
        rows = {m.group(1): m.group(0) for m in re.finditer(r'<tr><td class="text">(?:<a [^>]*>)?(i\d)(?:</a>)?</td>'
                                                           r'.*?</tr>', html, re.S)}
        assert set(rows) == {"i1", "i2", "i3"}, (name, list(rows))
        srcs = {i: re.findall(r'<img class="frame" src="([^"]+)"', rows[i]) for i in rows}
        assert len(srcs["i1"]) == 4 and len(srcs["i2"]) == 4 and srcs["i3"] == [], (name, srcs)
        assert set(srcs["i1"]).isdisjoint(srcs["i2"])
        for i in ("i1", "i2"):
            for src in srcs[i]:
                assert (page_path.parent / src).resolve().is_file(), (name, src)
        assert "frame 29" in rows["i2"] and "frame 11" in rows["i1"]  # the last frame of each own video
