"""Issue 26 item 4 for LoCoT2V: a real Dagster materialization of one embedded sample (locot2v_smooth x nature_1,
judge off, offline models) carries, through core/explain.py, the rounded values with their coverage, the events and
subjects behind the event-consistency values as a Markdown table worst first, and audit links on the report site
served over HTTP (as `bench ui` does) that open the page listing those events and the crops of the subject's
grounded appearances (cut from the boxes the metric used)."""
from __future__ import annotations

import json
import os
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from dagster import AssetKey, instance_for_test

ROOT = Path(__file__).resolve().parents[1]
GEN, SAMPLE = "locot2v_smooth", "nature_1"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_assets.core.site import REPORT_URL_ENV, serve_site
    from bench_assets.locot2v import assets, dataset
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths
    from tests.support.locot2v import one_sample_world
    tmp = tmp_path_factory.mktemp("explain_locot2v")
    data = tmp / "data"
    one_sample_world(data, GEN, SAMPLE)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(tmp / "store"), judge=Judge(mode="off"))
    store = resources["store"]
    server, base = serve_site(store, 0)          # what `bench ui` starts, on a free port
    old = os.environ.get(REPORT_URL_ENV)
    old_gens = os.environ.get("BENCH_GENERATORS_ROOT")
    os.environ[REPORT_URL_ENV] = base            # what `bench ui` passes to the webserver's runs
    os.environ["BENCH_GENERATORS_ROOT"] = str(data / "generators")   # where the site finds the videos
    try:
        gens, errors = discover_generators(paths.generators_dir, "locot2v")
        with instance_for_test() as instance:
            stats = evaluate(instance, assets=assets.ASSETS, resources=resources, partitions=assets.P,
                             items=dataset.discover_samples(data / "locot2v" / "samples"), generators=gens,
                             item_assets=assets.ITEM_ASSETS, generator_assets=assets.GENERATOR_ASSETS,
                             aggregate_assets=assets.AGGREGATE_ASSETS, progress=lambda s: None)
            assert not errors and not stats.failed, stats.failed
            md = {a: instance.get_latest_materialization_event(AssetKey(a)).asset_materialization.metadata
                  for a in ("locot2v_visual", "locot2v_judged")}
        from bench_assets.benchmarks import BENCHMARKS
        from bench_assets.core.site import build_site
        build_site(store, {"locot2v": BENCHMARKS["locot2v"]})
        yield md, store, base, data / "generators" / GEN / f"{SAMPLE}.mp4"
    finally:
        server.shutdown()
        if old_gens is None:
            os.environ.pop("BENCH_GENERATORS_ROOT", None)
        else:
            os.environ["BENCH_GENERATORS_ROOT"] = old_gens
        if old is None:
            os.environ.pop(REPORT_URL_ENV, None)
        else:
            os.environ[REPORT_URL_ENV] = old


def _text(v) -> str:
    return str(getattr(v, "value", v))


def _lines(v) -> list[str]:
    return [x for x in _text(v).splitlines() if x.startswith("| ")]


def test_values_are_rounded_with_coverage_and_an_http_audit_link(run):
    md, store, base, video = run
    vis = store.query("SELECT * FROM locot2v_visual")
    assert len(vis) == 13
    rows = {line.split(" | ")[0][2:]: line for line in _lines(md["locot2v_visual"]["values"])[1:]}
    assert set(rows) == set(vis["metric_id"])
    for r in vis.to_dict("records"):
        mid, v = r["metric_id"], r["value"]
        link = f"[audit]({base}/audit/locot2v/{mid}__{GEN}.html)"
        if v is None or v != v:
            assert md["locot2v_visual"][mid].value == "None", mid
            total = int(r["n_eval"] + r["n_failed"] + r["n_skipped"])
            assert rows[mid].startswith(f"| {mid} | None | 0/{total} evaluated ("), rows[mid]
        else:
            assert md["locot2v_visual"][mid].value == round(v, 4), mid
            n = int(r["n_eval"])
            assert rows[mid] == f"| {mid} | {round(v, 4)} | {n}/{n} evaluated |  | {link} |", rows[mid]
    assert rows["inter_event_subject_face_identity"] == (
        "| inter_event_subject_face_identity | None | 0/1 evaluated (1 skipped) | no subject shows a good-quality "
        "face in >= 2 events (no face detected in the grounded subjects) | "
        f"[audit]({base}/audit/locot2v/inter_event_subject_face_identity__{GEN}.html) |")
    # the judged sub-dimensions: None with the reason; a metric id with a space is a link that is not cut there
    judged = {line.split(" | ")[0][2:]: line for line in _lines(md["locot2v_judged"]["values"])[1:]}
    assert judged["herd.Emotional Response"] == (
        "| herd.Emotional Response | None | 0/1 evaluated (1 skipped) | judge off | "
        f"[audit]({base}/audit/locot2v/herd.Emotional%20Response__{GEN}.html) |")


def test_events_and_subjects_worst_first_explain_the_value(run):
    md, store, base, video = run
    vis = store.query("SELECT * FROM locot2v_visual").set_index("metric_id")
    intra = json.loads(vis.loc["intra_event_subject_consistency", "detail"])
    bg = json.loads(vis.loc["intra_event_background_consistency", "detail"])
    inter = json.loads(vis.loc["inter_event_subject_consistency", "detail"])
    subject = {f["event"]: f["text"] for f in intra["found"]}
    expect = set()
    for mid, d, who in (("intra_event_subject_consistency", intra, subject),
                        ("intra_event_background_consistency", bg, None)):
        for e, (x, (a, b)) in enumerate(zip(d["events"], d["ranges"])):
            expect.add(f"| {mid} | event | event {e} | {who[e] if who else 'background'} | {a}-{b - 1} | "
                       f"{round(100 * max(0.0, x), 4)} |  |")
    for name, x in inter["elements"].items():
        expect.add(f"| inter_event_subject_consistency | subject | {name} | {'; '.join(inter['subjects'][name])} "
                   f"|  | {round(100 * max(0.0, x), 4)} |  |")
    table = md["locot2v_visual"]["per_unit"]
    assert _text(table).startswith(f"{len(expect)} unit rows (events, subjects), worst first")
    lines = _lines(table)
    assert lines[0] == "| metric_id | level | entity_id | subject | frames | value | reason |"
    assert set(lines[1:]) == expect and len(lines[1:]) == len(expect) == 7
    for mid in ("intra_event_subject_consistency", "intra_event_background_consistency"):
        vals = [float(x.split(" | ")[5]) for x in lines[1:] if x.startswith(f"| {mid} |")]
        assert vals == sorted(vals) and len(vals) == 3, (mid, vals)   # worst (lowest) first
    assert lines[1].startswith("| intra_event_subject_consistency | event |")
    # the event rows are what the value is made of: its event-length-weighted mean
    w = [b - a for a, b in intra["ranges"]]
    per = [100 * max(0.0, x) for x in intra["events"]]
    assert sum(p * k for p, k in zip(per, w)) / sum(w) == pytest.approx(vis.loc["intra_event_subject_consistency",
                                                                                "value"], abs=1e-6)


def test_the_audit_link_opens_the_page_with_those_events(run):
    md, store, base, video = run
    line = next(x for x in _lines(md["locot2v_visual"]["values"]) if x.startswith("| intra_event_subject_consistency"))
    url = line.rsplit("[audit](", 1)[1].split(")", 1)[0]
    assert url.startswith("http://127.0.0.1:") and "/reports/site/audit/locot2v/" in url
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    assert "intra_event_subject_consistency" in page and "a small orange tabby cat" in page
    for e in range(3):
        assert f"event {e}" in page
    # the subject's grounded appearances, each with the crop of its box cut from its frame, served over HTTP
    import cv2
    import numpy as np

    from tests.support.site import _instance_rows
    intra = json.loads(store.query("SELECT detail FROM locot2v_visual WHERE metric_id = "
                                   "'intra_event_subject_consistency'")["detail"].iloc[0])
    found = {(f["frame"], tuple(f["box"])) for f in intra["found"]}
    shown = [r for r in _instance_rows(page) if r["level"] == "appearance"]
    assert len(shown) == 3 * 4 and all(r["src"] for r in shown)     # 4 per event, 3 events
    cap = cv2.VideoCapture(str(video))
    for r in shown:
        box = json.loads(r["detail"].split("</pre>")[0].replace("<pre>", ""))["box_xyxy"]
        assert (r["frame"], tuple(box)) in found, r
        png = urllib.request.urlopen(urllib.parse.urljoin(url, r["src"]), timeout=10).read()
        crop = cv2.imdecode(np.frombuffer(png, np.uint8), cv2.IMREAD_COLOR).astype(int)
        cap.set(cv2.CAP_PROP_POS_FRAMES, r["frame"])
        ok, frame = cap.read()
        x1, y1, x2, y2 = box
        assert ok and crop.shape[:2] == (y2 - y1, x2 - x1)
        assert np.abs(crop - frame[y1:y2, x1:x2].astype(int)).mean() < 4, r
    cap.release()
    judged = next(x for x in _lines(md["locot2v_judged"]["values"]) if x.startswith("| herd.Emotional Response"))
    url = judged.rsplit("[audit](", 1)[1].split(")", 1)[0]
    assert "herd.Emotional Response" in urllib.request.urlopen(url, timeout=10).read().decode()
