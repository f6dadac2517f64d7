"""The report and audit links the assets write survive the port (issue 39): they were written at evaluate time for
127.0.0.1:3001, so with `bench ui --report-port N` every one was dead. They are root-relative now: a browser
resolves them against the address it shows the UI on, which serves the site (core/ui_webserver), and against
serve_site's for any port. Each link is fetched over real HTTP on 127.0.0.1, resolved the way a browser does."""
import urllib.request
from urllib.parse import urljoin

import numpy as np
import pandas as pd
import pytest

from bench_assets.core.metric_spec import board_frame, board_row
from bench_assets.entitybench.metric_specs import METRICS
from bench_resources.store import Store

GENERATORS = ("faithful", "drift")


def _cell(metric, gen, value):
    return board_row(gen, metric, "all", value, raw_mean=value, coverage=1.0, n_eval=2, n_failed=0, n_skipped=0,
                     n_items=2, reason=None, comparable=True)


def _site(tmp_path, seed: int):
    """A store with an EntityBench board (values vary with ``seed``) and a crop, and the site build_site writes."""
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import build_site
    store = Store(root=str(tmp_path / f"store{seed}"))
    rng = np.random.default_rng(seed)
    crop = store.put_png(rng.integers(0, 255, (8, 8, 3), dtype=np.uint8))
    rows = [_cell(m, g, float(rng.uniform(0.1, 0.9))) for m in ("cs_face", "llm_face_accuracy") for g in GENERATORS]
    store.write_table(board_frame("entitybench", rows, METRICS), store.table_path("entitybench_leaderboard", None))
    store.write_table(pd.DataFrame({"episode_id": ["e0001"], "tier": ["easy"]}),
                      store.table_path("entitybench_episode", None))
    units = []  # the rows behind each cell: an audit page is written for a cell that has them
    for g in GENERATORS:
        for m, level in (("cs_face", "appearance"), ("llm_face_accuracy", "pair")):
            v = float(rng.uniform(0.1, 0.9))
            units += [{"generator": g, "item": "e0001", "level": "item", "metric_id": m, "value": v},
                      {"generator": g, "item": "e0001", "level": level, "metric_id": m, "shot": 1 + seed,
                       "entity_id": "c1", "value": v, "crop_id": crop}]
    df = pd.DataFrame(units)
    for c in ("shot", "frame_index", "n_eval", "n_failed", "n_skipped"):
        df[c] = pd.array(df[c] if c in df else [None] * len(df), dtype="Int64")
    for c in ("entity_id", "reason", "crop_id", "source_sha256", "detail"):
        df[c] = df[c].astype("string") if c in df else pd.Series([None] * len(df), dtype="string")
    for table, part in (("entitybench_presence_consistency", df[df.metric_id == "cs_face"]),
                        ("entitybench_llm_consistency", df[df.metric_id == "llm_face_accuracy"])):
        for g, rows_g in part.groupby("generator"):
            store.write_table(rows_g, store.table_path(table, {"generator": g}))
    build_site(store, BENCHMARKS)
    return store, crop


def _links(store, crop) -> dict:
    """Every link the assets put in their metadata for this store: the report pages (leaderboards), the audit
    pages (metric tables) and a crop (explain galleries)."""
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.explain import artifact_url_fn
    from bench_assets.core.site import audit_link, report_base_url, report_metadata
    out = {}
    for name in BENCHMARKS:
        meta = report_metadata(store, name)
        out[meta["report_url"].value] = meta["report_page"].value
        out[meta["report_index_url"].value] = meta["report_index"].value
    link = audit_link("entitybench", "faithful", METRICS.specs)
    site = store.root + "/reports/site"
    for m in ("cs_face", "llm_face_accuracy"):
        for g in GENERATORS:
            url = audit_link("entitybench", g, METRICS.specs)(m)
            out[url] = f"{site}/audit/entitybench/{url.rsplit('/', 1)[1]}"
    assert link("cs_face") in out
    out[artifact_url_fn(store, report_base_url())(crop)] = store.artifact_path(crop)
    return out


def _fetch(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=10) as r:
        assert r.status == 200, url
        return r.read()


@pytest.mark.parametrize("seed", [1, 2])
def test_every_metadata_link_opens_on_any_report_port(tmp_path, monkeypatch, seed):
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import serve_site
    monkeypatch.delenv("BENCH_REPORT_URL", raising=False)  # as written by `bench evaluate`, outside any UI
    store, crop = _site(tmp_path, seed)
    links = _links(store, crop)
    assert len(links) == len(BENCHMARKS) + 1 + 4 + 1  # the pages, the overview, 4 audit pages, a crop
    for port_try in range(2):  # two servers on two random ports: the same stored links open on both
        server, site_url = serve_site(store, 0)
        try:
            page = f"{site_url}/index.html"  # the address a browser shows; links resolve against it
            for link, path in links.items():
                with open(path, "rb") as f:
                    assert _fetch(urljoin(page, link)) == f.read(), (port_try, link)
        finally:
            server.shutdown()
            server.server_close()


def test_an_absolute_base_is_still_honoured(monkeypatch):
    from bench_assets.core.site import audit_url, report_base_url
    monkeypatch.setenv("BENCH_REPORT_URL", "https://bench.example.org/reports/site/")
    assert report_base_url() == "https://bench.example.org/reports/site"
    assert audit_url("entitybench", "cs_face", "g1").startswith("https://bench.example.org/reports/site/audit/")
    monkeypatch.delenv("BENCH_REPORT_URL")
    assert report_base_url() == "/reports/site"


def test_the_ui_webserver_serves_the_site_before_its_own_pages(tmp_path):
    """The mounts `bench ui`'s webserver puts before Dagster's routes: a link resolves to the store's file, not to
    the UI's catch-all index page; anything else still reaches the UI."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient
    from bench_assets.core.ui_webserver import report_routes
    root = tmp_path / "store"
    (root / "reports" / "site" / "audit" / "entitybench").mkdir(parents=True)
    (root / "reports" / "site" / "audit" / "entitybench" / "cs_face__g.html").write_text("<p>audit cs_face</p>")
    (root / "artifacts" / "ab").mkdir(parents=True)
    (root / "artifacts" / "ab" / "c.png").write_bytes(b"\x89PNG-c")
    (root / "tables").mkdir()
    (root / "tables" / "t.parquet").write_bytes(b"table")

    async def index(_request):
        return PlainTextResponse("dagster index")
    app = Starlette(routes=report_routes(str(root)) + [Route("/{path:path}", index)])
    client = TestClient(app)
    assert client.get("/reports/site/audit/entitybench/cs_face__g.html").text == "<p>audit cs_face</p>"
    assert client.get("/artifacts/ab/c.png").content == b"\x89PNG-c"
    assert client.get("/reports/site/audit/entitybench/missing.html").status_code == 404
    assert client.get("/reports/").status_code == 404  # no listings
    assert client.get("/tables/t.parquet").text == "dagster index"  # the store's tables are not served
    assert report_routes("s3://bucket/store") == []


def test_bench_ui_opens_the_links_on_its_own_address_whatever_the_report_port(tmp_path, monkeypatch):
    """The real `bench ui --port P --report-port Q`: every link the assets wrote opens on the UI's address P (where
    a click in the UI resolves it) and on the report server's Q."""
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time
    monkeypatch.delenv("BENCH_REPORT_URL", raising=False)
    store, crop = _site(tmp_path, 3)
    links = _links(store, crop)
    ports = []
    for _ in range(2):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            ports.append(s.getsockname()[1])
    (tmp_path / "data").mkdir()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path / "home"), "BENCH_DATA_ROOT": str(tmp_path / "data"),
           "BENCH_STORE_ROOT": store.root, "BENCH_JUDGE_MODE": "off"}
    env.pop("BENCH_REPORT_URL", None)
    proc = subprocess.Popen([sys.executable, "-m", "bench_assets.cli", "ui", "--port", str(ports[0]),
                             "--report-port", str(ports[1])], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline, up = time.monotonic() + 240, False
        while time.monotonic() < deadline and proc.poll() is None and not up:
            try:
                up = urllib.request.urlopen(f"http://127.0.0.1:{ports[0]}/server_info", timeout=2).status == 200
            except OSError:
                time.sleep(1)
        assert up, "the webserver never answered"
        for port in ports:
            for link, path in links.items():
                with open(path, "rb") as f:
                    assert _fetch(urljoin(f"http://127.0.0.1:{port}/assets/entitybench_leaderboard", link)) \
                        == f.read(), (port, link)
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
