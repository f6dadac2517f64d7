"""Issue 26 item 4 for NarrativeTrack: a real Dagster materialization of one embedded video (nt002, judge off for
the pipeline) answered by an answerer behind a real HTTP server (right about one character, wrong about the others)
carries, through core/explain.py, the board's strict values over this video rounded with coverage, the questions
and the characters worst first as Markdown, the characters' crops served over HTTP, and audit links on the report
site (as `bench ui` serves it) that open the page listing the questions."""
from __future__ import annotations

import os
import urllib.request
from pathlib import Path

import pytest
from dagster import AssetKey, instance_for_test, materialize

from tests.support.fake_anthropic import FakeAnthropic, tool_answer

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
VIDEO, ANSWERER = "nt002", "narrativetrack_claude_sonnet"
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


@pytest.fixture(scope="module")
def run(tmp_path_factory, narrativetrack_items):
    import torch

    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import REPORT_URL_ENV, build_site, serve_site
    from bench_assets.narrativetrack import answering as AN
    from bench_assets.narrativetrack import assets as A
    from bench_assets.narrativetrack import qa as Q
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths
    from tests.support.narrativetrack import fork_items
    tmp = tmp_path_factory.mktemp("explain_nt")
    # the video's item tables from the session world (its pipeline ran there with the judge off), not recomputed
    fork_items(narrativetrack_items[4], tmp / "store", A.ITEM_ASSETS, [VIDEO])
    paths = BenchPaths(data_root=str(DATA), generators_root=str(DATA / "generators"))
    resources = build_resources(store_root=str(tmp / "store"), paths=paths,
                                judge=Judge(mode="off", cache_dir=str(tmp / "jc")))
    store = resources["store"]
    server, base = serve_site(store, 0)
    saved = {k: os.environ.get(k) for k in (REPORT_URL_ENV, "ANTHROPIC_API_KEY")}
    os.environ[REPORT_URL_ENV] = base
    os.environ["ANTHROPIC_API_KEY"] = "test-key-not-real"
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with instance_for_test() as instance:
            instance.add_dynamic_partitions(A.P.items.name, [VIDEO])
            instance.add_dynamic_partitions(A.P.generators.name, [ANSWERER])
            qa = store.query(f"SELECT * FROM narrativetrack_qa WHERE kept AND video_id = '{VIDEO}'")
            favourite = sorted(qa["entity_id"].dropna().unique())[0]
            by_text = {}
            for r in qa.itertuples():
                opts = AN.options_of(r.options)
                by_text[Q.prompt_text({"question": r.question, "format": r.format, "options": opts})] = r

            def responder(body):  # right (strictly formatted) about one character, wrong about every other
                r = by_text[body["messages"][0]["content"][-1]["text"].split("Question: ", 1)[1]]
                right = r.entity_id == favourite
                if r.format == "binary":
                    ans = r.answer if right else ("no" if r.answer == "yes" else "yes")
                elif r.format == "mc":
                    ans = f"({r.answer})" if right else f"({'a' if r.answer != 'a' else 'b'})"
                else:
                    ans = r.answer if right else ", ".join(reversed(r.answer.split(", ")))
                return tool_answer({"answer": ans, "justification": "seen"})

            with FakeAnthropic(responder=responder) as srv:
                live = {**resources, "judge": Judge(mode="live", base_url=srv.base_url,
                                                    cache_dir=str(tmp / "jc_live"), max_retries=0)}
                assert materialize(A.ASSETS, selection=["narrativetrack_answers"],
                                   partition_key=str(A.P.key(ANSWERER, VIDEO)), instance=instance, resources=live,
                                   run_config=QUIET).success
                assert materialize(A.ASSETS, selection=["narrativetrack_leaderboard"], instance=instance,
                                   resources=live, run_config=QUIET).success
            md = instance.get_latest_materialization_event(
                AssetKey("narrativetrack_answers")).asset_materialization.metadata
        build_site(store, {"narrativetrack": BENCHMARKS["narrativetrack"]})
        yield md, store, base, qa, favourite
    finally:
        torch.set_num_threads(threads)
        server.shutdown()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _text(v) -> str:
    return str(getattr(v, "value", v))


def _lines(v) -> list[str]:
    return [x for x in _text(v).splitlines() if x.startswith("| ")]


def _paper(qa):
    from bench_assets.narrativetrack.board import PAPER, question_set
    return qa[[question_set(t, q) == PAPER for t, q in zip(qa["template"], qa["qa_id"])]]


def test_board_values_over_the_video_rounded_with_coverage_and_audit_links(run):
    md, store, base, qa, favourite = run
    board = store.query(f"SELECT * FROM narrativetrack_leaderboard WHERE generator = '{ANSWERER}' "
                        "AND slice = 'strict'").set_index("metric_id")
    paper = _paper(qa)
    right = int((paper["entity_id"] == favourite).sum())
    v = board.loc["accuracy.avg", "value"]
    assert v == pytest.approx(100 * right / len(paper)) and 0 < v < 100
    assert md["accuracy.avg"].value == round(v, 4)
    rows = {x.split(" | ")[0][2:]: x for x in _lines(md["values"])[1:]}
    assert rows["accuracy.avg"] == (f"| accuracy.avg | {round(v, 4)} | {len(paper)}/{len(paper)} evaluated |  | "
                                    f"[audit]({base}/audit/narrativetrack/accuracy.avg__{ANSWERER}.html) |")
    for mid, line in rows.items():   # every value is the board's own cell, and links its audit page
        b = board.loc[mid]
        assert md[mid].value == ("None" if b["value"] != b["value"] else round(b["value"], 4)), mid
        if b["value"] == b["value"]:
            assert line.endswith(f"[audit]({base}/audit/narrativetrack/{mid}__{ANSWERER}.html) |"), line


def test_questions_and_characters_worst_first(run):
    md, store, base, qa, favourite = run
    paper = _paper(qa)
    n = len(qa)
    text = _text(md["per_unit"])
    assert text.startswith(f"{n} unit rows (questions; 100 right, 0 wrong, strict), worst first")
    lines = _lines(md["per_unit"])
    assert lines[0] == "| metric_id | level | qa_id | entity_id | dimension | format | expected | answer | value | " \
                       "reason |"
    shown = lines[1:]
    assert len(shown) == min(15, n)
    vals = [float(x.split(" | ")[8]) for x in shown]
    wrong = int((qa["entity_id"] != favourite).sum())
    assert vals == sorted(vals) and vals.count(0.0) == min(15, wrong)
    by_id = qa.set_index("qa_id")
    for x in shown:   # each row is that question with the answer the server gave
        cells = x[2:-2].split(" | ")
        q = by_id.loc[cells[2]]
        assert cells[3] == str(q["entity_id"]) and cells[4] == q["dimension"] and cells[5] == q["format"]
        assert cells[6] == str(q["answer"]) and (float(cells[8]) == 100.0) == (q["entity_id"] == favourite)
    # characters: the paper questions' strict accuracy per character, with its canonical crop, worst first
    reg = store.query(f"SELECT * FROM narrativetrack_entity_registry WHERE video_id = '{VIDEO}'").set_index("entity_id")
    expect = []
    for ent, g in paper.groupby("entity_id"):
        acc = 100.0 if ent == favourite else 0.0
        expect.append((acc, f"| accuracy.avg | character | {ent} | {reg.loc[ent, 'track_type']} | {len(g)}/{len(g)} "
                            f"| {reg.loc[ent, 'crop_id'][:12]} | {acc} |  |"))
    chars = [x for x in _lines(md["per_character"])[1:] if x.startswith("| accuracy.avg |")]
    assert chars == [line for _, line in sorted(expect, key=lambda t: t[0])]
    assert chars[-1].split(" | ")[2] == favourite and len(chars) >= 2
    # the worst characters' crops, served over HTTP: the very PNG the registry stored
    crops = _text(md["character_crops"]).split("\n\n")
    first = crops[0]
    url = first.split("](", 1)[1].split(")", 1)[0]
    assert url.startswith(base.rsplit("/reports/site", 1)[0] + "/artifacts/")
    ent = first.rsplit("(", 1)[1].rstrip(")")
    assert ent != favourite and first.startswith("![accuracy.avg 0.0](")
    got = urllib.request.urlopen(url, timeout=10).read()
    assert got[:4] == b"\x89PNG" and got == Path(store.artifact_path(reg.loc[ent, "crop_id"])).read_bytes()


def test_the_audit_link_opens_the_questions_page(run):
    md, store, base, qa, favourite = run
    line = next(x for x in _lines(md["values"]) if x.startswith("| accuracy.avg |"))
    url = line.rsplit("[audit](", 1)[1].split(")", 1)[0]
    page = urllib.request.urlopen(url, timeout=10).read().decode()
    assert "accuracy.avg" in page and ANSWERER in page
    for q in _paper(qa)["qa_id"].head(5):
        assert q in page
    links = [x.rsplit("[audit](", 1)[1].split(")", 1)[0] for x in _lines(md["values"]) if "[audit](" in x]
    assert len(links) == len(_lines(md["values"])) - 1 and any("/measured." in u for u in links)
    for u in links:   # every value's link opens its page (no 404 for a cell of this video)
        assert urllib.request.urlopen(u, timeout=10).status == 200, u
