"""The store's report site (core/site.py) in a real headless Chromium.

A store is populated by materialising a small slice of every embedded benchmark (one or two items, two or three
generators each, offline, judge off); the site is built from it; the browser opens every page reachable from
index.html (overview, five benchmark pages, every audit page), checks that every chart drew something, that
every image loaded and that every link resolves (files and #anchors). A second test builds the site from a store
whose tables are missing, empty or of an unexpected schema, plus a validity table, and checks the pages say
"not evaluated" instead of failing.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path
from urllib.parse import unquote, urlparse

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
CHROMIUM = "/usr/bin/chromium" if Path("/usr/bin/chromium").exists() else shutil.which("chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
BENCHES = ("entitybench", "vistorybench", "mbench", "locot2v", "narrativetrack")

# (items, generators) per benchmark: enough for every chart kind, small enough for CI
SLICE = {
    "entitybench": (["e0001"], ["faithful", "drift"]),
    "vistorybench": (["08"], ["vistory_faithful", "vistory_copy_paste"]),
    "mbench": (["a_obj01", "t_obj01"], ["mbench_consistent", "mbench_changing"]),
    "locot2v": (["life_1"], ["locot2v_smooth", "locot2v_drift"]),
    "narrativetrack": (["nt001"], ["narrativetrack_claude_haiku"]),
}


def copy_slice(dst: Path, slice_: dict = SLICE) -> Path:
    """The embedded benchmarks cut down to ``slice_``, in each benchmark's own layout, under ``dst/data``."""
    d = dst / "data"
    for b, (items, gens) in slice_.items():
        if b == "entitybench":
            (d / b / "episodes").mkdir(parents=True, exist_ok=True)
            for i in items:
                shutil.copy(DATA / b / "episodes" / f"{i}.json", d / b / "episodes")
        elif b == "vistorybench":
            for i in items:
                shutil.copytree(DATA / b / i, d / b / i)
            shutil.copy(DATA / b / "human_ratings.csv", d / b)
        elif b == "mbench":
            (d / b / "cases").mkdir(parents=True, exist_ok=True)
            for i in items:
                shutil.copy(DATA / b / "cases" / f"{i}.json", d / b / "cases")
            shutil.copytree(DATA / b / "frames", d / b / "frames")
        elif b == "locot2v":
            (d / b / "samples").mkdir(parents=True, exist_ok=True)
            for i in items:
                shutil.copy(DATA / b / "samples" / f"{i}.json", d / b / "samples")
        elif b == "narrativetrack":
            (d / b / "videos").mkdir(parents=True, exist_ok=True)
            (d / b / "groundtruth").mkdir(parents=True, exist_ok=True)
            index = json.loads((DATA / b / "videos.json").read_text())
            index["videos"] = [v for v in index["videos"] if v["video_id"] in items]
            (d / b / "videos.json").write_text(json.dumps(index))
            for i in items:
                shutil.copy(DATA / b / "videos" / f"{i}.mp4", d / b / "videos")
                shutil.copy(DATA / b / "groundtruth" / f"{i}.json", d / b / "groundtruth")
            shutil.copy(DATA / b / "synthetic_pool.json", d / b)
        for g in gens:
            src, gd = DATA / "generators" / g, d / "generators" / g
            gd.mkdir(parents=True, exist_ok=True)
            shutil.copy(src / "generator.yaml", gd)
            for p in src.iterdir():
                if p.name != "generator.yaml" and (p.stem in items or p.name in items):
                    (shutil.copytree if p.is_dir() else shutil.copy)(p, gd / p.name)
    return d


def populate(tmp: Path) -> tuple[object, dict[str, float]]:
    """Materialise the slice of every benchmark into a fresh store; returns the store and seconds per benchmark."""
    from dagster import instance_for_test

    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    data = copy_slice(tmp)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    seconds = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("BENCH_JUDGE_MODE", "off")
        mp.setenv("BENCH_DATA_ROOT", str(data))
        mp.setenv("BENCH_GENERATORS_ROOT", str(data / "generators"))
        resources = build_resources(store_root=str(tmp / "store"), paths=paths)
        with instance_for_test() as instance:
            for name in BENCHES:
                b = BENCHMARKS[name]
                t0 = time.perf_counter()
                gens, errors = discover_generators(paths.generators_dir, name)
                assert not errors, errors
                stats = evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions,
                                 items=b.item_ids(paths), generators=gens, item_assets=b.item_assets,
                                 generator_assets=b.generator_assets, aggregate_assets=b.aggregate_assets,
                                 progress=lambda _s: None)
                assert not stats.failed, (name, stats.failed)
                seconds[name] = time.perf_counter() - t0
    return resources["store"], seconds


def _chromium_or_skip():
    if not CHROMIUM:
        if os.environ.get("BENCH_REQUIRE_BROWSER") == "1":
            pytest.fail("BENCH_REQUIRE_BROWSER=1 but no chromium (apt-get install chromium)", pytrace=False)
        pytest.skip("no chromium (apt-get install chromium); CI installs it")
    try:
        from playwright import sync_api
    except ImportError:
        if os.environ.get("BENCH_REQUIRE_BROWSER") == "1":
            pytest.fail("BENCH_REQUIRE_BROWSER=1 but playwright is not installed", pytrace=False)
        pytest.skip("playwright is not installed")
    return sync_api


@pytest.fixture(scope="module")
def browser():
    sync_api = _chromium_or_skip()
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def populated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("site")
    store, seconds = populate(tmp)
    return store, seconds, tmp


PAGE_CHECK = """() => {
  const images = Array.from(document.images).map(i => ({src: i.getAttribute('src'),
      ok: i.complete && i.naturalWidth > 0}));
  const charts = Array.from(document.querySelectorAll('svg.chart')).map(s => {
      const r = s.getBoundingClientRect();
      return {title: (s.querySelector('title') || {}).textContent || '', w: r.width, h: r.height,
              drawn: s.querySelectorAll('rect, circle, polyline, line').length};
  });
  const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.href);
  const ids = Array.from(document.querySelectorAll('[id]')).map(e => e.id);
  const css = getComputedStyle(document.body).marginTop === '0px';  // site.css sets it (default: 8px)
  return {images, charts, links, ids, css, title: document.title, text: document.body.innerText};
}"""


def crawl(browser, index: Path, limit: int = 2000) -> dict[str, dict]:
    """Open every local page reachable from ``index``; return what PAGE_CHECK saw on each, by file path."""
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    seen: dict[str, dict] = {}
    todo = [index.resolve().as_uri()]
    while todo and len(seen) < limit:
        url = todo.pop()
        path = unquote(urlparse(url).path)
        if path in seen:
            continue
        assert Path(path).is_file(), f"link to a missing page: {path}"
        page.goto(url, wait_until="load")
        info = page.evaluate(PAGE_CHECK)
        seen[path] = info
        for href in info["links"]:
            u = urlparse(href)
            assert u.scheme == "file", f"{path}: link leaves the site: {href}"
            target = unquote(u.path)
            if target.endswith(".html") and target not in seen:
                todo.append(u._replace(fragment="").geturl())
            elif not target.endswith(".html"):
                assert Path(target).exists(), f"{path}: link to a missing file {target}"
    page.close()
    # anchors: every #fragment names an element of its page
    for path, info in seen.items():
        for href in info["links"]:
            u = urlparse(href)
            if u.fragment:
                target = unquote(u.path)
                assert u.fragment in seen[target]["ids"], f"{path}: anchor #{u.fragment} missing in {target}"
    return seen


@pytest.mark.slow
def test_site_over_every_benchmark_in_chromium(browser, populated):
    from bench_assets.core.site import build_site
    store, seconds, tmp = populated
    t0 = time.perf_counter()
    index = build_site(store)
    build_s = time.perf_counter() - t0
    assert index == Path(store.root) / "reports" / "site" / "index.html"
    seen = crawl(browser, index)
    site = index.parent
    pages = {Path(p).relative_to(site).as_posix(): info for p, info in seen.items()}
    for b in BENCHES:
        assert f"{b}.html" in pages, sorted(pages)[:20]
    audits = {p: i for p, i in pages.items() if p.startswith("audit/")}
    for b in BENCHES[:4]:  # NarrativeTrack's answers are all unanswered offline, but they are still rows
        assert any(p.startswith(f"audit/{b}/") for p in audits), b
    # every page: its stylesheet loaded, every image decoded, every chart drew marks in a visible box
    for p, info in pages.items():
        assert info["css"], f"{p}: site.css did not apply" 
        bad = [i["src"] for i in info["images"] if not i["ok"]]
        assert not bad, f"{p}: images that did not load: {bad[:5]}"
        for c in info["charts"]:
            assert c["w"] > 100 and c["h"] > 40 and c["drawn"] >= 3, (p, c)
    # the overview: one headline cell per generator and benchmark, every benchmark card has its chart
    text = pages["index.html"]["text"]
    for g in ("faithful", "drift", "vistory_faithful", "mbench_consistent", "locot2v_smooth",
              "narrativetrack_claude_haiku"):
        assert g in text
    assert len(pages["index.html"]["charts"]) == 5
    # each benchmark page has its leaderboard and its charts
    eb = pages["entitybench.html"]
    titles = " | ".join(c["title"] for c in eb["charts"])
    assert "Pillar 1" in titles and "per tier" in titles, titles
    # gap decay: a curve per entity type where the slice has admitted pairs, else the page says why not
    assert ": character" in titles or "not evaluated: no gap-decay pair" in eb["text"], titles
    assert "subject_consistency" in eb["text"] and "not evaluated" not in eb["text"].split("Leaderboard")[0][:50]
    assert any("crop" in i["src"] or "artifacts" in i["src"] for i in eb["images"]), "no crop gallery"
    assert "judge off" in eb["text"]  # grouped reason for the judged metrics
    mb = " | ".join(c["title"] for c in pages["mbench.html"]["charts"])
    assert "MBench-A: dimension M-Scores" in mb and "MBench-T" in pages["mbench.html"]["text"], mb
    nt = pages["narrativetrack.html"]
    assert any("(strict)" in c["title"] for c in nt["charts"]) and "random" in nt["text"]
    vs = pages["vistorybench.html"]
    assert "baseline" in vs["text"] and "character identity" in " ".join(c["title"] for c in vs["charts"])
    assert any(c["title"].startswith("dimensions") for c in pages["locot2v.html"]["charts"])
    # an audit page groups the shared reason once, with its count, instead of one line per row
    judged = next(i for p, i in audits.items() if p.startswith("audit/entitybench/intra_face_fidelity__"))
    assert "no value because" in judged["text"] and "judge off" in judged["text"]
    assert judged["text"].count("judge off") <= 3, judged["text"][:2000]
    sc = audits.get("audit/entitybench/subject_consistency__faithful.html")
    assert sc is not None and "e0001" in sc["text"] and "Per instance" in sc["text"]
    shots = os.environ.get("BENCH_SCREENSHOT_DIR")  # full-page screenshots of the main pages, for a reviewer
    if shots:
        Path(shots).mkdir(parents=True, exist_ok=True)
        page = browser.new_page(viewport={"width": 1300, "height": 900})
        for name in ("index", *BENCHES):
            page.goto((site / f"{name}.html").as_uri(), wait_until="load")
            page.screenshot(path=str(Path(shots) / f"{name}.png"), full_page=True)
        page.close()
    print(f"populate {seconds}, build {build_s:.1f}s, {len(pages)} pages ({len(audits)} audit pages)")


def test_site_tolerates_missing_empty_and_odd_tables(browser, tmp_path):
    from bench_assets.core.site import build_site
    from bench_resources.store import Store
    store = Store(root=str(tmp_path / "store"))
    # no table at all: every benchmark page says not evaluated
    index = build_site(store, tmp_path / "empty")
    seen = crawl(browser, index)
    for b in BENCHES:
        text = seen[str(tmp_path / "empty" / f"{b}.html")]["text"]
        assert "not evaluated" in text and "table not in the store" in text, (b, text[:300])
    # a leaderboard in a schema the site does not know, an empty one, and one with substitute/comparable columns
    store.write_table(pd.DataFrame({"who": ["a"], "score": [1.0]}), store.table_path("mbench_leaderboard", None))
    store.write_table(pd.DataFrame({"generator": pd.Series([], dtype="string")}),
                      store.table_path("locot2v_leaderboard", None))
    store.write_table(pd.DataFrame([
        {"generator": "g1", "metric_id": "cs_face", "tier": "all", "value": 0.8, "raw_mean": 0.9, "coverage": 0.5,
         "n_eval": 4, "n_failed": 0, "n_skipped": 4, "reason": None, "comparable": False,
         "substitute": "EfficientNet-Lite0 stands in for DINOv2"},
        {"generator": "g2", "metric_id": "cs_face", "tier": "all", "value": None, "raw_mean": None, "coverage": 0.0,
         "n_eval": 0, "n_failed": 0, "n_skipped": 9, "reason": "output folder is missing", "comparable": True,
         "substitute": None},
        {"generator": "g2", "metric_id": "subject_consistency", "tier": "all", "value": None, "raw_mean": None,
         "coverage": 0.0, "n_eval": 0, "n_failed": 0, "n_skipped": 9, "reason": "output folder is missing",
         "comparable": True, "substitute": None}]), store.table_path("entitybench_leaderboard", None))
    store.write_table(pd.DataFrame([
        {"benchmark": "entitybench", "case": "blur", "metric_id": "imaging_quality", "expected_direction": "down",
         "difference": -12.5, "effect_size_d": -1.8, "d_low": -2.6, "d_high": -1.0, "passed": True, "reason": None},
        {"benchmark": "mbench", "case": "relight", "metric_id": "lighting", "expected_direction": "down",
         "difference": None, "effect_size_d": None, "d_low": None, "d_high": None, "passed": None,
         "reason": "footage not fetched"}]), store.table_path("validity", None))
    index = build_site(store, tmp_path / "odd")
    seen = {Path(p).name: i for p, i in crawl(browser, index).items()}
    assert "has no generator / metric_id columns" in seen["mbench.html"]["text"]
    assert "not evaluated" in seen["locot2v.html"]["text"]
    eb = seen["entitybench.html"]["text"]
    assert "substitute" in eb and "not comparable" in eb
    assert "output folder is missing\t2\tcs_face, subject_consistency" in eb  # one reason line, its count
    assert "1 of 2 passed" in seen["validity.html"]["text"] and "footage not fetched" in seen["validity.html"]["text"]
    assert seen["validity.html"]["charts"] and seen["validity.html"]["charts"][0]["drawn"] >= 3
    assert "Validity" in seen["index.html"]["text"]
