"""The UI explains its numbers (issue 26): a partition's materialization metadata carries rounded values with
coverage, the per-unit rows worst first as Markdown, crop previews and a link to the audit page that a browser
opens (the report site served over HTTP on 127.0.0.1, as `bench ui` does); the Launchpad of `<benchmark>_evaluate`
says what empty lists mean. Pure tests of the metadata builder, and a real webserver + headless Chromium test.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu"]


# ---------------------------------------------------------------------- pure: the metadata
def _rows():
    item = {"level": "item", "n_failed": 0, "n_skipped": 0, "n_failed_evaluator": 0, "reason": None}
    return pd.DataFrame([
        {**item, "metric_id": "cs_face", "value": 0.8577842159529534, "n_eval": 3, "n_failed": 1},
        {**item, "metric_id": "drift", "value": 0.12345678, "n_eval": 4},
        {**item, "metric_id": "cs_object", "value": None, "n_eval": 0, "n_failed_evaluator": 2,
         "reason": "no embedder"},
        {"level": "appearance", "metric_id": "cs_face", "shot": 1, "entity_id": "c1", "value": 0.91, "crop_id": "a"},
        {"level": "appearance", "metric_id": "cs_face", "shot": 2, "entity_id": "c1", "value": 0.62, "crop_id": "b"},
        {"level": "appearance", "metric_id": "cs_face", "shot": 3, "entity_id": "c2", "value": None, "crop_id": None,
         "reason": "shot missing"},
        {"level": "appearance", "metric_id": "drift", "shot": 4, "entity_id": "c1", "value": 0.05, "crop_id": "c"},
        {"level": "appearance", "metric_id": "drift", "shot": 5, "entity_id": "c1", "value": 0.40, "crop_id": "d"},
    ])


def test_metadata_rounds_with_coverage_and_ranks_units_worst_first():
    from bench_assets.core.explain import explain_metadata
    md = explain_metadata(_rows(), benchmark="entitybench", generator="g1",
                          directions={"cs_face": "higher", "drift": "lower", "cs_object": "higher"},
                          audit_url=lambda m: f"http://h/audit/entitybench/{m}__g1.html",
                          artifact_url=lambda c: f"http://h/artifacts/{c}.png")
    assert md["cs_face"] == 0.8578 and md["drift"] == 0.1235 and md["cs_object"] == "None"
    values = md["values"].value.splitlines()
    assert values[2:] == [
        "| metric | value | coverage | reason | audit |", "|---|---|---|---|---|",
        "| cs_face | 0.8578 | 3/4 evaluated (1 failed) |  | [audit](http://h/audit/entitybench/cs_face__g1.html) |",
        "| drift | 0.1235 | 4/4 evaluated |  | [audit](http://h/audit/entitybench/drift__g1.html) |",
        "| cs_object | None | 0/2 evaluated (2 evaluator failures) | no embedder | "
        "[audit](http://h/audit/entitybench/cs_object__g1.html) |"]
    # no value first; then each metric's worst (cs_face: higher is better, drift: lower is better), then the next
    assert md["per_unit"].value.splitlines()[2:] == [
        "| metric_id | level | shot | entity_id | crop_id | value | reason |",
        "|---|---|---|---|---|---|---|",
        "| cs_face | appearance | 3 | c2 |  |  | shot missing |",
        "| cs_face | appearance | 2 | c1 | b | 0.62 |  |",
        "| drift | appearance | 5 | c1 | d | 0.4 |  |",
        "| cs_face | appearance | 1 | c1 | a | 0.91 |  |",
        "| drift | appearance | 4 | c1 | c | 0.05 |  |"]
    assert md["worst_crops"].value.split("\n\n") == [
        "![cs_face 0.62](http://h/artifacts/b.png) cs_face = 0.62 (shot 2, c1)",
        "![drift 0.4](http://h/artifacts/d.png) drift = 0.4 (shot 5, c1)",
        "![cs_face 0.91](http://h/artifacts/a.png) cs_face = 0.91 (shot 1, c1)",
        "![drift 0.05](http://h/artifacts/c.png) drift = 0.05 (shot 4, c1)"]


def test_coverage_text():
    from bench_assets.core.explain import coverage_text
    assert coverage_text(12, 0, 0) == "12/12 evaluated"
    assert coverage_text(9, 2, 1, 1) == "9/13 evaluated (2 failed, 1 skipped; 1 evaluator failure)"


def test_report_server_serves_the_site_and_artifacts_only(tmp_path):
    from bench_assets.core.site import serve_site
    from bench_resources.store import Store
    store = Store(root=str(tmp_path / "store"))
    (tmp_path / "store" / "reports" / "site").mkdir(parents=True)
    (tmp_path / "store" / "reports" / "site" / "index.html").write_text("<h1>overview</h1>")
    (tmp_path / "store" / "artifacts" / "ab").mkdir(parents=True)
    (tmp_path / "store" / "artifacts" / "ab" / "x.png").write_bytes(b"\x89PNG")
    (tmp_path / "store" / "tables").mkdir()
    (tmp_path / "store" / "tables" / "secret.parquet").write_bytes(b"no")
    server, url = serve_site(store, 0)
    try:
        assert url.startswith("http://127.0.0.1:") and url.endswith("/reports/site")
        assert urllib.request.urlopen(f"{url}/index.html").read() == b"<h1>overview</h1>"
        assert urllib.request.urlopen(f"{url}/../../artifacts/ab/x.png".replace("/reports/site/../..", "")
                                      ).read() == b"\x89PNG"
        for bad in ("/tables/secret.parquet", "/reports/site/../../tables/secret.parquet", "/reports/"):
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(url.rsplit("/reports/site", 1)[0] + bad)
            assert e.value.code == 404, bad
    finally:
        server.shutdown()


# ---------------------------------------------------------------------- the real UI in headless Chromium
BUILD = """
import sys
from bench_assets import cli
from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.generators import discover_generators
from bench_assets.core.runner import evaluate, open_instance
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths
b = BENCHMARKS["entitybench"]
paths = BenchPaths()
res = build_resources(paths=paths)
gens, errors = discover_generators(paths.generators_dir, "entitybench")
assert not errors, errors
# what cs_face needs (grounding, presence / consistency) and the leaderboard: the audit page of cs_face exists
st = evaluate(open_instance(), assets=b.assets, resources=res, partitions=b.partitions, items=b.item_ids(paths),
              generators=gens, item_assets=b.item_assets, generator_assets=cli.metric_assets(b, "cs_face"),
              aggregate_assets=[b.leaderboard], show_progress=False)
assert not st.failed, st.failed
print("SITE", cli._write_site(res))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            urllib.request.urlopen(url, timeout=5)
            return
        except Exception:  # noqa: BLE001 - not up yet
            time.sleep(1)
    raise AssertionError(f"{url} did not answer in {timeout:.0f} s")


def _skip_dialog(page) -> None:
    """Dagster's first-visit community dialog covers the page: dismiss it when it shows."""
    try:
        page.get_by_role("button", name="Skip").click(timeout=4000)
    except Exception:  # noqa: BLE001 - not shown
        pass


def check_ui(page, ui: str, shots: Path) -> dict:
    """Open a partition's metadata, the per-unit table and the audit link; then the Launchpad. -> what was seen."""
    seen = {}
    page.goto(f"{ui}/assets/entitybench_presence_consistency?view=events&partition=e0002%7Cfaithful")
    page.wait_for_selector("text=per_unit", timeout=120000)
    _skip_dialog(page)
    row = page.locator("tr", has=page.locator("td", has_text=re.compile(r"^per_unit$")))
    row.get_by_text("Show Markdown").click()
    dialog = page.get_by_role("dialog").filter(has_text="worst first")
    dialog.get_by_text("worst first").first.wait_for(timeout=20000)
    seen["per_unit"] = dialog.inner_text()
    page.screenshot(path=str(shots / "partition_per_unit.png"), full_page=True)
    page.keyboard.press("Escape")
    row = page.locator("tr", has=page.locator("td", has_text=re.compile(r"^values$")))
    row.get_by_text("Show Markdown").click()
    # the per-unit dialog may still be open (Escape does not always reach it while it animates): take the one that
    # holds the values table
    dialog = page.get_by_role("dialog").filter(has_text="rounded values, coverage")
    dialog.get_by_text("rounded values, coverage").first.wait_for(timeout=20000)
    seen["values"] = dialog.inner_text()
    seen["audit_href"] = dialog.locator("a[href*='/audit/entitybench/cs_face__faithful.html']").first \
        .get_attribute("href")
    page.screenshot(path=str(shots / "partition_values.png"), full_page=True)
    page.keyboard.press("Escape")
    seen["cs_face_cell"] = page.locator("tr", has=page.locator("td", has_text=re.compile(r"^cs_face$"))) \
        .first.inner_text()
    # follow the link as the browser does
    resp = page.goto(seen["audit_href"])
    seen["audit_status"] = resp.status
    seen["audit_text"] = page.inner_text("body")
    page.screenshot(path=str(shots / "audit_page.png"), full_page=True)
    # the Launchpad: the op's config fields with their descriptions in the schema panel
    page.goto(f"{ui}/locations/__repository__@bench/jobs/entitybench_evaluate/playground")
    page.wait_for_selector("text=Scaffold all default config", timeout=120000)
    _skip_dialog(page)
    # the schema panel documents the field under the editor's cursor: put it on `items: []`
    page.locator(".CodeMirror-line", has_text="items:").first.click()
    page.wait_for_selector("text=EMPTY = every item found", timeout=20000)
    seen["launchpad"] = page.inner_text("body")
    page.screenshot(path=str(shots / "launchpad.png"), full_page=True)
    return seen


@pytest.mark.slow
def test_ui_partition_metadata_audit_link_and_launchpad(tmp_path):
    if not CHROMIUM:
        pytest.skip("no chromium (apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api")
    from bench_assets.core.site import serve_site
    from bench_resources.store import Store
    # an episode and a generator (the second smallest embedded episode, as tests/conftest.py's small_world)
    data = tmp_path / "data"
    eps = ROOT / "data" / "entitybench" / "episodes"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    shutil.copy(eps / "e0002.json", data / "entitybench" / "episodes" / "e0002.json")
    gen = data / "generators" / "faithful"
    gen.mkdir(parents=True)
    shutil.copy(ROOT / "data" / "generators" / "faithful" / "generator.yaml", gen / "generator.yaml")
    shutil.copytree(ROOT / "data" / "generators" / "faithful" / "e0002", gen / "e0002")
    store_root = tmp_path / "store"
    server, site_url = serve_site(Store(root=str(store_root)), 0)  # what `bench ui` starts beside the webserver
    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCH_") and k != "DAGSTER_HOME"}
    env.update(BENCH_DATA_ROOT=str(data), BENCH_GENERATORS_ROOT=str(data / "generators"),
               BENCH_STORE_ROOT=str(store_root), DAGSTER_HOME=str(tmp_path / "home"), BENCH_JUDGE_MODE="off",
               BENCH_REPORT_URL=site_url)
    web = None
    try:
        build = subprocess.run([sys.executable, "-c", BUILD], env=env, capture_output=True, text=True, timeout=900)
        assert build.returncode == 0 and "SITE " in build.stdout, build.stderr[-3000:]
        port = _free_port()
        web = subprocess.Popen([sys.executable, "-m", "dagster_webserver", "-w", str(ROOT / "workspace.yaml"),
                                "-h", "127.0.0.1", "-p", str(port)], env=env, cwd=ROOT,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        ui = f"http://127.0.0.1:{port}"
        _wait_http(f"{ui}/server_info", 180)
        shots = Path(os.environ.get("BENCH_SCREENSHOTS_DIR", tmp_path / "shots"))
        shots.mkdir(parents=True, exist_ok=True)
        with sync_api.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            page = browser.new_page(viewport={"width": 1600, "height": 1300})
            try:
                seen = check_ui(page, ui, shots)
            finally:
                browser.close()
    finally:
        if web is not None:
            os.killpg(web.pid, 15)
            web.wait(timeout=30)
        server.shutdown()
    # the per-unit table, worst first, in the UI
    assert "unit rows (shots, appearances, pairs), worst first" in seen["per_unit"]
    assert "metric_id" in seen["per_unit"] and "appearance" in seen["per_unit"]
    # rounded values with coverage, and the audit link the browser followed to the page
    cell = seen["cs_face_cell"].split()
    assert cell[0] == "cs_face" and re.fullmatch(r"-?\d+(\.\d{1,4})?|None", cell[1]), cell
    assert re.search(r"cs_face\s+\S+\s+\d+/\d+ evaluated", seen["values"]), seen["values"][:800]
    assert seen["audit_href"] == f"{site_url}/audit/entitybench/cs_face__faithful.html"
    assert seen["audit_status"] == 200 and "cs_face" in seen["audit_text"] and "faithful" in seen["audit_text"]
    # the Launchpad says what empty lists mean
    assert "EMPTY = every item found" in seen["launchpad"]
    assert "EMPTY = every generator folder" in seen["launchpad"]
    for name in ("partition_per_unit.png", "partition_values.png", "audit_page.png", "launchpad.png"):
        assert (shots / name).stat().st_size > 10_000, name
    json.dumps(seen)  # everything seen is plain text
