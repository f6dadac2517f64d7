"""Issue 39 on the report site (core/site.py, templates/site/{audit,benchmark}.html.j2): an audit page names each
entity by the episode's own name (the id kept in small text and a title attribute), looked up per episode, since
two episodes may reuse an id for different entities; and the benchmark page's header shows one short protocol
line, with one line per distinct protocol and the metrics it covers in a collapsed block, not every digest in one
line. Real Store (Parquet + DuckDB), real build_site; no Dagster run."""
from __future__ import annotations

import html as H
import re

import numpy as np
import pandas as pd

from bench_assets.core.metric_spec import board_frame, board_row
from bench_assets.entitybench.metric_specs import METRIC_TABLES, METRICS
from bench_resources.store import Store

# four distinct digests, each the protocol of the metric tables it scored (as entitybench's assets write them)
DIGESTS = {"subject_consistency": "a1" * 32, "cs_face": "b2" * 32, "intra_face_fidelity": "c3" * 32,
           "llm_face_accuracy": "d4" * 32}


def _store(tmp_path) -> Store:
    store = Store(root=str(tmp_path / "store"))
    rows = [board_row(g, m, "all", v, raw_mean=v, coverage=1.0, n_eval=2, n_failed=0, n_skipped=0, n_items=2,
                      comparable=True, protocol=DIGESTS[m])
            for g in ("faithful", "drift") for m, v in (("subject_consistency", 0.9), ("cs_face", 0.7),
                                                         ("intra_face_fidelity", 0.6), ("llm_face_accuracy", 0.5))]
    store.write_table(board_frame("entitybench", rows, METRICS), store.table_path("entitybench_leaderboard", None))
    store.write_table(pd.DataFrame({"episode_id": ["e0001", "e0002"], "tier": ["easy", "easy"]}),
                      store.table_path("entitybench_episode", None))
    # the same id names different entities in two episodes: the name is looked up per episode
    reg = pd.DataFrame([{"episode_id": e, "entity_id": i, "type": t, "name": n}
                        for e, i, t, n in (("e0001", "char_1", "character", "Mira Okafor"),
                                           ("e0001", "obj_1", "object", "red kite"),
                                           ("e0002", "char_1", "character", "Tomas Reyes"))])
    store.write_table(reg, store.table_path("entitybench_entity_registry", None))
    crop = store.put_png(np.full((8, 8, 3), 90, np.uint8))
    inst = []
    for gen in ("faithful", "drift"):
        for ep, ents in (("e0001", ("char_1", "obj_1", "char_9")), ("e0002", ("char_1",))):
            inst.append({"generator": gen, "item": ep, "level": "item", "metric_id": "cs_face", "value": 0.7})
            for k, ent in enumerate(ents):
                inst.append({"generator": gen, "item": ep, "level": "appearance", "metric_id": "cs_face",
                             "shot": k + 1, "entity_id": ent, "value": 0.5 + 0.1 * k, "crop_id": crop})
    df = pd.DataFrame(inst)
    df["shot"] = pd.array(df["shot"], dtype="Int64")
    for c in ("entity_id", "crop_id"):
        df[c] = df[c].astype("string")
    store.write_table(df, store.table_path(METRIC_TABLES["presence"], None))
    return store


def _build(store: Store):
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import build_site
    return build_site(store, BENCHMARKS).parent


def _entity_cells(page: str) -> dict[str, list[str]]:
    """Per episode section of the audit page: the entity cell (second td) of each instance row, as HTML."""
    out = {}
    for ep, table in re.findall(r'<h3 id="ep-([^"]+)">.*?<table class="instances">(.*?)</table>', page, re.S):
        out[ep] = [re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)[1]
                   for tr in re.findall(r"<tr><td>.*?</tr>", table, re.S)]
    return out


def test_audit_page_shows_entity_names_with_the_id_beside(tmp_path):
    site = _build(_store(tmp_path))
    page = (site / "audit" / "entitybench" / "cs_face__faithful.html").read_text()
    cells = _entity_cells(page)
    assert sorted(cells) == ["e0001", "e0002"] and len(cells["e0001"]) == 3, cells
    text = {ep: [re.sub(r"<[^>]+>", " ", c).split() for c in cs] for ep, cs in cells.items()}
    # e0001: names first, the id after in small text and as the title; e0002's char_1 is another person
    assert [" ".join(t) for t in text["e0001"]] == ["Mira Okafor char_1", "red kite obj_1", "char_9"]
    assert [" ".join(t) for t in text["e0002"]] == ["Tomas Reyes char_1"]
    for c in cells["e0001"][:2] + cells["e0002"]:
        assert re.search(r'title="(char|obj)_1"', c) and 'class="small"' in c, c
    # an id the episode's registry lacks is shown as it is, not given another episode's name
    assert cells["e0001"][2].strip() == "char_9"


def test_benchmark_header_shows_one_protocol_line_and_each_protocol_collapsed(tmp_path):
    site = _build(_store(tmp_path))
    page = (site / "entitybench.html").read_text()
    lead = re.search(r'<p class="lead">(.*?)</p>', page, re.S).group(1)
    # the header names the protocols once, shortly: no digest written out in it
    shown = [d for d in DIGESTS.values() if d in lead or d[:12] in lead]
    assert len(shown) <= 1, lead
    assert "4 protocols" in lead, lead
    block = re.search(r'<details[^>]*id="protocols"[^>]*>(.*?)</details>', page, re.S)
    assert block, "no collapsed protocol block"
    lines = re.findall(r"<li>(.*?)</li>", block.group(1), re.S)
    assert len(lines) == 4, lines
    for mid, digest in DIGESTS.items():
        mine = [H.unescape(re.sub(r"<[^>]+>", " ", ln)) for ln in lines if digest[:12] in ln]
        assert len(mine) == 1, (digest, lines)
        assert mid in mine[0] and not any(m in mine[0] for m in DIGESTS if m != mid), mine
