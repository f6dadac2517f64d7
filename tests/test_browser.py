"""A real browser (headless Chromium) opens the Dagster UI's asset graph (the report site has its own: test_site_browser.py)."""
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--no-first-run", "--disable-quic", "--disable-sync"]

if not CHROMIUM:
    if os.environ.get("BENCH_REQUIRE_BROWSER") == "1":
        pytest.fail("BENCH_REQUIRE_BROWSER=1 but no chromium on PATH (apt-get install chromium)", pytrace=False)
    pytest.skip("no chromium on PATH (apt-get install chromium); CI installs it", allow_module_level=True)

sync_api = pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.mark.slow
def test_ui_shows_asset_graph(browser, tmp_path):
    port = free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "BENCH_STORE_ROOT": str(tmp_path / "store")}
    shutil.copy(ROOT / "dagster.yaml", tmp_path / "dagster.yaml")
    proc = subprocess.Popen([sys.executable, "-m", "dagster_webserver", "-w", str(ROOT / "workspace.yaml"),
                             "-h", "127.0.0.1", "-p", str(port)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/server_info", timeout=2)
                break
            except OSError:
                assert proc.poll() is None, proc.stdout.read().decode()[-3000:]
                time.sleep(1)
        page = browser.new_page(viewport={"width": 1600, "height": 2400})
        from bench_assets.benchmarks import BENCHMARKS
        for name, b in BENCHMARKS.items():  # one asset group per benchmark; the list view shows full names
            page.goto(f"http://127.0.0.1:{port}/locations/bench/asset-groups/{name}/list", wait_until="domcontentloaded")
            page.get_by_text(b.leaderboard).first.wait_for(timeout=90_000)
            body = page.inner_text("body")
            for asset in (*b.item_assets, *b.generator_assets):
                assert asset in body, asset
            page.screenshot(path=str(tmp_path / f"asset_group_{name}.png"))
        page.goto(f"http://127.0.0.1:{port}/automation", wait_until="domcontentloaded")
        page.get_by_text("entitybench_generators_sensor").first.wait_for(timeout=60_000)
        body = page.inner_text("body")
        assert "bench_automation_sensor" in body and "vistorybench_generators_sensor" in body
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
