"""EntityBench's report and its audit pages through the shared core/audit.py, on a real Store's Parquet tables:
every audit link of the report resolves, a reason shared by many rows is shown once with its count, a page left
from an earlier board is removed."""
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pandas as pd

from bench_assets.entitybench.report import write_audit_pages, write_entitybench_report
from bench_resources.store import Store

SHARED = "judge off: no judge configured (BENCH_JUDGE_MODE=off)"


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


def cell(metric, gen, value, reason=None, **kw):
    return {"metric_id": metric, "generator": gen, "tier": "all", "value": value, "raw_mean": value,
            "coverage": None if value is None else 1.0, "n_eval": 0 if value is None else 2, "n_failed": 0,
            "n_skipped": 0, "n_items": 2, "reason": reason, "comparable": True, **kw}


def populate(store: Store) -> pd.DataFrame:
    crop = store.put_png(np.full((8, 8, 3), 120, np.uint8))
    board = pd.DataFrame([cell("cs_face", "faithful", 0.9), cell("cs_face", "drift", 0.4),
                          cell("intra_face_fidelity", "faithful", None, SHARED),
                          # drift has no cell for this metric at all: the metric name must link faithful's page
                          cell("llm_face_accuracy", "faithful", None, SHARED)])
    board = pd.concat([board, board.assign(tier="easy")], ignore_index=True)
    store.write_table(board, store.table_path("entitybench_leaderboard", None))
    store.write_table(pd.DataFrame({"episode_id": ["e0001", "e0002"], "tier": ["easy", "hard"]}),
                      store.table_path("entitybench_episode", None))
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
    df = pd.DataFrame(rows)
    for c in ("shot", "frame_index", "n_eval", "n_failed", "n_skipped"):
        df[c] = pd.array(df[c] if c in df else [None] * len(df), dtype="Int64")
    for c in ("entity_id", "reason", "crop_id", "source_sha256", "detail"):
        df[c] = df[c].astype("string") if c in df else pd.Series([None] * len(df), dtype="string")
    df["value"] = df["value"].astype(float)
    for gen, part in df.groupby("generator"):
        store.write_table(part, store.table_path("entitybench_presence_consistency", {"generator": gen}))
    return board


def test_report_audit_links_resolve_and_reasons_are_grouped(tmp_path):
    store = Store(root=str(tmp_path / "store"))
    board = populate(store)
    out = tmp_path / "store" / "reports" / "entitybench.html"
    audit_dir = out.parent / "audit"
    audit_dir.mkdir(parents=True)
    (audit_dir / "gone_metric__old_generator.html").write_text("stale")
    n = write_audit_pages(store, board, audit_dir, ("entitybench_pillar1", "entitybench_presence_consistency"))
    assert n == 4  # one page per cell of the overall board (tier 'all'), the easy tier adds none
    assert sorted(p.name for p in audit_dir.glob("*.html")) == [
        "cs_face__drift.html", "cs_face__faithful.html", "intra_face_fidelity__faithful.html",
        "llm_face_accuracy__faithful.html"]
    manifest = {"protocol": "p", "profile": "offline", "judge_mode": "off", "code_revision": "x", "models": {}}
    report = write_entitybench_report(store, manifest, board, out)

    hrefs = [h for h in links(report).hrefs if h.startswith("audit/")]
    # every cell with a value and every metric name link a page, and each of those pages exists
    assert len(hrefs) >= 5, hrefs
    missing = [h for h in hrefs if not (report.parent / h).is_file()]
    assert not missing, missing
    assert "audit/llm_face_accuracy__faithful.html" in hrefs  # not drift's, which has no cell
    for page in audit_dir.glob("*.html"):
        ln = links(page)
        assert ln.hrefs[0] == "../entitybench.html" and (page.parent / ln.hrefs[0]).is_file()
        assert all((page.parent / s).resolve().is_file() for s in ln.srcs), (page.name, ln.srcs)

    judged = (audit_dir / "intra_face_fidelity__faithful.html").read_text()
    assert judged.count(SHARED) == 1 + 1  # the headline's reason and one grouped line, not 117 rows
    assert re.search(r'id="instance-reasons".*?<td class="count">117</td>', judged, re.S)
    face = (audit_dir / "cs_face__faithful.html").read_text()
    assert face.count('class="crop"') == 2 and "e0001" in face and "e0002" in face


def test_report_metadata_links_the_pages_build_site_writes(tmp_path):
    from bench_assets.core.site import BENCH_ORDER, build_site, report_metadata
    store = Store(root=str(tmp_path / "store"))
    populate(store)
    before = report_metadata(store, "entitybench")
    assert before["report_status"].value.startswith("not written when this materialised")
    index = build_site(store)
    for name in BENCH_ORDER:
        meta = report_metadata(store, name)
        page = Path(meta["report_page"].value)
        # the page the metadata names is one build_site wrote, and the URL opens that same file
        assert page.is_file() and page.name == f"{name}.html", page
        assert meta["report_url"].value == page.as_uri() and meta["report_status"].value == "written"
        assert Path(meta["report_index"].value) == index.resolve()
    import pytest
    with pytest.raises(ValueError, match="unknown benchmark"):
        report_metadata(store, "nosuch")
    assert report_metadata(Store(root="memory://bucket/store"), "entitybench") == {}
