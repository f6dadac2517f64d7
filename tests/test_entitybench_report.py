"""EntityBench's pages on the store-wide report site (core/site.py; issue 27: one report system, the
entitybench_report asset is gone) on a real Store's Parquet tables: every audit link of the benchmark page
resolves, an audit page goes headline -> per episode -> per instance -> crops and judge answers, a reason shared
by many rows is shown once with its count, the episode's tier is beside it, a page left from an earlier board is
removed, and the run's manifest (entitybench_manifest) names the models on the page."""
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bench_assets.core.metric_spec import board_frame, board_row
from bench_assets.entitybench.metric_specs import METRICS
from bench_resources.store import Store

SHARED = "judge off: no judge configured (BENCH_JUDGE_MODE=off)"
ANSWER = {"judge_status": "ok", "answer": {"same": 1, "sim": 0.9, "rationale": "same red scarf"}}


class Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs, self.srcs = [], []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "a" and a.get("href"):
            self.hrefs.append(a["href"])
        if tag in ("img", "link") and (a.get("src") or a.get("href")):
            self.srcs.append(a.get("src") or a.get("href"))


def links(path: Path) -> Links:
    p = Links()
    p.feed(path.read_text(encoding="utf-8"))
    return p


def cell(metric, gen, value, reason=None, slice="all"):
    return board_row(gen, metric, slice, value, raw_mean=value, coverage=None if value is None else 1.0,
                     n_eval=0 if value is None else 2, n_failed=0, n_skipped=0, n_items=2, reason=reason,
                     comparable=True)


def populate(store: Store) -> pd.DataFrame:
    crop = store.put_png(np.full((8, 8, 3), 120, np.uint8))
    rows = [cell("cs_face", "faithful", 0.9), cell("cs_face", "drift", 0.4),
            cell("intra_face_fidelity", "faithful", None, SHARED),
            # drift has no cell for this metric at all: the metric name must link faithful's page
            cell("llm_face_accuracy", "faithful", 0.8)]
    board = board_frame("entitybench", rows + [r | {"slice": "easy"} for r in rows], METRICS)
    store.write_table(board, store.table_path("entitybench_leaderboard", None))
    store.write_table(pd.DataFrame({"episode_id": ["e0001", "e0002"], "tier": ["easy", "hard"]}),
                      store.table_path("entitybench_episode", None))
    store.write_table(pd.DataFrame([{"protocol_digest": "d", "profile": "offline", "judge_mode": "off",
                                     "manifest_json": json.dumps({"profile": "offline", "models": {
                                         "image_embedder": {"checkpoint": "EfficientNet-Lite0 ImageNet",
                                                            "available": True}}})}]),
                      store.table_path("entitybench_manifest", None))
    rows = []
    for gen, v in (("faithful", 0.9), ("drift", 0.4)):
        for ep in ("e0001", "e0002"):
            rows.append({"generator": gen, "item": ep, "level": "item", "metric_id": "cs_face", "value": v})
            rows.append({"generator": gen, "item": ep, "level": "appearance", "metric_id": "cs_face", "shot": 1,
                         "entity_id": "c1", "value": v, "crop_id": crop, "detail": json.dumps({"pair": [0, 1]})})
    # 117 judged rows without a value, all for the same reason: the page says it once, with its count
    for k in range(117):
        rows.append({"generator": "faithful", "item": f"e000{1 + k % 2}", "level": "shot",
                     "metric_id": "intra_face_fidelity", "shot": k, "entity_id": "c1", "value": None,
                     "reason": SHARED})
    rows.append({"generator": "faithful", "item": "e0001", "level": "item", "metric_id": "llm_face_accuracy",
                 "value": 0.8})
    rows.append({"generator": "faithful", "item": "e0001", "level": "pair", "metric_id": "llm_face_accuracy",
                 "shot": 3, "entity_id": "c1", "value": 1.0, "crop_id": crop, "detail": json.dumps(ANSWER)})
    df = pd.DataFrame(rows)
    for c in ("shot", "frame_index", "n_eval", "n_failed", "n_skipped"):
        df[c] = pd.array(df[c] if c in df else [None] * len(df), dtype="Int64")
    for c in ("entity_id", "reason", "crop_id", "source_sha256", "detail"):
        df[c] = df[c].astype("string") if c in df else pd.Series([None] * len(df), dtype="string")
    df["value"] = df["value"].astype(float)
    for table, part in (("entitybench_presence_consistency", df[df.metric_id != "llm_face_accuracy"]),
                        ("entitybench_llm_consistency", df[df.metric_id == "llm_face_accuracy"])):
        for gen, g in part.groupby("generator"):
            store.write_table(g, store.table_path(table, {"generator": gen}))
    return board


def build(store: Store) -> Path:
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import build_site
    return build_site(store, BENCHMARKS).parent


def test_site_audit_links_resolve_and_reasons_are_grouped(tmp_path):
    store = Store(root=str(tmp_path / "store"))
    populate(store)
    site = build(store)
    page = site / "entitybench.html"
    audit_dir = site / "audit" / "entitybench"
    # one page per (metric, generator) with rows behind it; drift has no llm_face_accuracy cell, so no page
    assert sorted(p.name for p in audit_dir.glob("*.html")) == [
        "cs_face__drift.html", "cs_face__faithful.html", "intra_face_fidelity__faithful.html",
        "llm_face_accuracy__faithful.html"]
    hrefs = [h for h in links(page).hrefs if h.startswith("audit/")]
    assert len(hrefs) >= 4, hrefs
    missing = [h for h in hrefs if not (page.parent / h).is_file()]
    assert not missing, missing
    assert "audit/entitybench/llm_face_accuracy__faithful.html" in hrefs  # not drift's, which has no cell
    for p in audit_dir.glob("*.html"):
        ln = links(p)
        assert (p.parent / ln.hrefs[0]).resolve() == page.resolve()
        assert all((p.parent / s).resolve().is_file() for s in ln.srcs), (p.name, ln.srcs)

    judged = (audit_dir / "intra_face_fidelity__faithful.html").read_text()
    assert judged.count(SHARED) == 1 + 1  # the headline's reason and one grouped line, not 117 rows
    assert re.search(r'id="instance-reasons".*?<td class="count">117</td>', judged, re.S)
    face = (audit_dir / "cs_face__faithful.html").read_text()
    # per episode (with its tier) -> per instance -> its crop
    assert face.count('class="crop"') == 2 and "e0001" in face and "e0002" in face
    assert "hard" in face and "easy" in face
    # a judged instance shows the judge's answer
    llm = (audit_dir / "llm_face_accuracy__faithful.html").read_text()
    assert "same red scarf" in llm and 'class="crop"' in llm


def test_site_removes_an_audit_page_left_from_an_earlier_board(tmp_path):
    store = Store(root=str(tmp_path / "store"))
    populate(store)
    stale = tmp_path / "store" / "reports" / "site" / "audit" / "entitybench" / "gone_metric__old_generator.html"
    stale.parent.mkdir(parents=True)
    stale.write_text("stale")
    build(store)
    assert not stale.exists()


def test_site_page_names_the_models_of_the_run(tmp_path):
    store = Store(root=str(tmp_path / "store"))
    populate(store)
    html = (build(store) / "entitybench.html").read_text()
    assert "EfficientNet-Lite0 ImageNet" in html


def test_report_metadata_links_the_pages_build_site_writes(tmp_path):
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import report_base_url, report_metadata
    store = Store(root=str(tmp_path / "store"))
    populate(store)
    before = report_metadata(store, "entitybench")
    assert before["report_status"].value.startswith("not written when this materialised")
    index = build(store) / "index.html"
    for name in BENCHMARKS:
        meta = report_metadata(store, name)
        page = Path(meta["report_page"].value)
        # the page the metadata names is one build_site wrote, and the URL opens that same file
        assert page.is_file() and page.name == f"{name}.html", page
        # ... and the URL is that file on the site `bench ui` serves over HTTP (a browser refuses file:// from the UI),
        # root-relative so that it opens on whatever address the UI is shown on (tests/test_report_links.py)
        base = report_base_url()
        assert base == "/reports/site"
        assert meta["report_url"].value == f"{base}/{page.relative_to(index.parent.resolve()).as_posix()}"
        assert meta["report_status"].value == "written"
        assert Path(meta["report_index"].value) == index.resolve()
    with pytest.raises(ValueError, match="unknown benchmark"):
        report_metadata(store, "nosuch")
    assert report_metadata(Store(root="memory://bucket/store"), "entitybench") == {}
