"""Issue 35 item 3 on the report site: results imported with `bench import-results` are shown on the benchmark's
page (core/site.py imported_sources, templates/site/benchmark.html.j2), each source marked '[imported]' with the
code and commit it came from and the protocol's verdict on comparability with its reason, kept out of the
leaderboard tables, charts and headline (never ranked among ours), with the per-episode side by side against our
generator of the same name.

The imported files are written here in the EntityBench authors' per-episode schema (eval/evaluate_benchmark.py
``_episode_result_to_json``: MetricValue {value, n_evaluated, n_failed, n_skipped}); no release file is used. The
store is a real Store (Parquet + DuckDB), imported through the real `bench import-results`; no Dagster run.
"""
from __future__ import annotations

import html as H
import json
import re

import pandas as pd
import pytest

from bench_assets.core import imported_results as IR
from bench_assets.core.metric_spec import board_frame
from bench_assets.entitybench import official as EOff
from bench_assets.entitybench.metric_specs import METRIC_TABLES, METRICS
from bench_resources.store import Store
from tests.support import cli_env


def _mv(value, n=3):
    return {"value": value, "n_evaluated": n, "n_failed": 0, "n_skipped": 0}


def _write_run(d, bases=(("ep_a", 0.8), ("ep_b", 0.6), ("ep_c", 0.4))):
    """An authors'-schema run: one JSON per episode, values varying with the episode (cs_face = base / 2)."""
    d.mkdir(parents=True, exist_ok=True)
    for eid, base in bases:
        (d / f"{eid}.json").write_text(json.dumps({
            "episode_id": eid, "tier": "easy", "num_shots": 6,
            "vbench_means": {"subject_consistency": _mv(base)},
            "metrics": {"cs_face": _mv(base / 2), "cs_face_v2": _mv(base)},   # cs_face_v2: none of ours
            "per_entity_scores": {}, "gap_decay_data": []}))
    return d


def _store(tmp_path, monkeypatch, board: bool = True) -> Store:
    cli_env(monkeypatch, tmp_path)
    store = Store(root=str(tmp_path / "store"))
    if board:
        rows = [{"generator": g, "metric_id": m, "slice": "all", "value": v, "n_eval": 3, "comparable": True}
                for g, m, v in (("mymethod", "cs_face", 0.55), ("mymethod", "subject_consistency", 0.9),
                                ("zeta", "cs_face", 0.25), ("zeta", "subject_consistency", 0.7))]
        store.write_table(board_frame("entitybench", rows, METRICS), store.table_path("entitybench_leaderboard", None))
        items = pd.DataFrame([{"generator": "mymethod", "item": e, "metric_id": "cs_face", "value": v, "level": "item"}
                              for e, v in (("ep_a", 0.41), ("ep_b", 0.33), ("ep_z", 0.1))])
        store.write_table(items, store.table_path(METRIC_TABLES["presence"], None))
    return store


def _import(path, *extra) -> None:
    from bench_assets import cli
    assert cli.main(["import-results", "entitybench", str(path), *extra]) == 0


def _site(store):
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import build_site
    return build_site(store, {"entitybench": BENCHMARKS["entitybench"]}).parent


def _table(page: str, table_id: str) -> list[list[str]]:
    m = re.search(rf'<table id="{re.escape(table_id)}">(.*?)</table>', page, re.S)
    assert m, f"no table {table_id}"
    return [[H.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)]
            for tr in re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)]


def _records(rows: list[list[str]]) -> list[dict]:
    return [dict(zip(rows[0], r)) for r in rows[1:]]


def _section(page: str, start: str, end: str) -> str:
    i = page.index(start)
    return page[i:page.index(end, i)]


def test_report_shows_imported_rows_marked_apart_with_the_side_by_side(tmp_path, monkeypatch, capsys):
    store = _store(tmp_path, monkeypatch)
    _import(_write_run(tmp_path / "run"), "--method", "mymethod", "--commit", "3776439")
    _import(_write_run(tmp_path / "other", (("ep_a", 0.2), ("ep_d", 0.9))), "--method", "other")
    capsys.readouterr()
    site = _site(store)
    page = (site / "entitybench.html").read_text(encoding="utf-8")
    text = H.unescape(page)

    imp = H.unescape(_section(page, 'id="imported"', "Why values are None"))
    # each source marked, with its code and commit (or that none was stated) and the protocol's verdict + reason
    assert "mymethod [imported]" in imp and "other [imported]" in imp
    assert f"{EOff.RESULTS_CODE} @ 3776439" in re.sub(r"<[^>]+>", "", imp)
    assert f"{EOff.RESULTS_CODE} @ commit not stated" in re.sub(r"<[^>]+>", "", imp)
    stored = IR.read_rows(store, "entitybench")
    reasons = set(stored["comparable_reason"])
    assert len(reasons) == 1 and not stored["comparable"].any()
    assert imp.count('<span class="badge nc">not comparable</span>') == 2 and reasons.pop() in imp
    assert "kept, not one of our metrics: cs_face_v2" in imp

    # overall values as published, beside our same-named generator's board value
    ov = {r["metric (ours)"]: r for r in _records(_table(page, "imported-overall-mymethod"))
          if r["slice"] == "all"}
    assert ov["cs_face"]["value (our scale)"] == "0.300" and ov["cs_face"]["ours: mymethod"] == "0.550"
    assert ov["subject_consistency"]["value (our scale)"] == "0.600"
    assert ov["subject_consistency"]["ours: mymethod"] == "0.900"
    # the file's nulls are not table rows: one line per reason, the metrics named
    overall = _records(_table(page, "imported-overall-mymethod"))
    assert overall and all(r["value (our scale)"] != "None" for r in overall)
    nulls = H.unescape(_section(page, 'id="imported-none-1"', "</details>"))
    assert "intra_character_presence" in nulls and "overall values with no value in the file" in nulls

    # per episode: ep_a, ep_b both sides, ep_c only theirs, ep_z only ours (and subject_consistency only theirs)
    assert "against our mymethod: 2 item values on both sides, 4 only theirs, 1 only ours, 0 null on both" in imp
    summary = _records(_table(page, "imported-sbs-summary-mymethod"))
    assert [(r["metric_id"], r["items"], r["ours"], r["theirs"]) for r in summary] == \
        [("cs_face", "2", "0.370", "0.350")]
    per = {(r["item"], r["metric_id"]): r for r in _records(_table(page, "imported-sbs-mymethod"))}
    assert per[("ep_b", "cs_face")]["delta"] == "0.030"
    assert per[("ep_c", "cs_face")]["ours"] == "None" and per[("ep_z", "cs_face")]["theirs"] == "None"
    # a method none of ours is named after: said so, no side by side invented
    assert "no generator of ours is named 'other'" in imp
    assert 'id="imported-sbs-other"' not in page

    # never ranked among ours: not a column of the leaderboard, not in the charts, the headline or the overview
    board = _section(page, '<table class="leaderboard" id="leaderboard">', "</table>")
    assert "mymethod" in board and "zeta" in board and "[imported]" not in board
    assert "[imported]" not in _section(page, 'id="family-charts"', 'id="imported"')
    assert "[imported]" not in text[:text.index('id="family-charts"')]
    assert "[imported]" not in (site / "index.html").read_text(encoding="utf-8")


def test_report_shows_the_protocols_verdict_when_it_makes_a_source_comparable(tmp_path, monkeypatch):
    """The verdict is read from the stored rows, never assumed: a source the protocol made comparable says so with
    its reason; one it did not says not comparable."""
    store = _store(tmp_path, monkeypatch)
    rows = [IR.row("overall", "cs_face", 0.42, slice="all", metric_id="cs_face")]
    yes = IR.Source("entitybench", "theirs", "their/code eval.py", "abc1234", "/x/yes")
    IR.store_rows(store, IR.frame(rows, yes, "2026-11-29T00:00:00Z", True, "run manifests match (authors' rule)"))
    page = H.unescape((_site(store) / "entitybench.html").read_text(encoding="utf-8"))
    imp = page[page.index('id="imported"'):]
    assert "theirs [imported]" in imp and "their/code eval.py</b> @ <b>abc1234" in imp
    assert '<span class="badge ok">comparable</span> run manifests match (authors\' rule)' in imp
    assert "not comparable" not in imp[imp.index("theirs [imported]"):]
    assert "the imported file has no per-item values" in imp


def test_report_shows_imported_results_before_any_run_of_ours(tmp_path, monkeypatch):
    store = _store(tmp_path, monkeypatch, board=False)
    _import(_write_run(tmp_path / "run"), "--method", "mymethod")
    page = H.unescape((_site(store) / "entitybench.html").read_text(encoding="utf-8"))
    assert 'id="not-evaluated"' in page and "mymethod [imported]" in page
    assert "no generator of ours is named 'mymethod'" in page


@pytest.mark.skipif(not __import__("pathlib").Path("/usr/bin/chromium").exists(), reason="no /usr/bin/chromium")
def test_imported_section_renders_in_chromium(tmp_path, monkeypatch, capsys):
    """In a real headless Chromium: the imported block is visible, marked, and the per-episode rows open."""
    from playwright.sync_api import sync_playwright
    store = _store(tmp_path, monkeypatch)
    _import(_write_run(tmp_path / "run"), "--method", "mymethod", "--commit", "3776439")
    site = _site(store)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                    args=["--headless", "--no-sandbox", "--disable-gpu"])
        try:
            tab = browser.new_page()
            tab.goto((site / "entitybench.html").as_uri(), wait_until="load")
            block = tab.locator("#imported-1")
            assert block.is_visible()
            assert block.locator("h3").inner_text() == "mymethod [imported]"
            assert block.locator(".badge.nc").inner_text() == "not comparable"
            assert "3776439" in block.inner_text()
            rows = tab.locator("#imported-sbs-mymethod")
            assert not rows.is_visible()
            block.locator("#imported-sbs-rows-1 summary").click()
            assert rows.is_visible() and rows.locator("tr").count() == 1 + 7
            headers = tab.locator("#leaderboard tr").first.inner_text()
            assert "mymethod" in headers and "[imported]" not in headers
        finally:
            browser.close()
