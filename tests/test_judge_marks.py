"""Judges as model slots (issue 40 item 4): each judged metric names its paper's judge (EntityBench gemini-2.5-pro,
ViStoryBench GPT-4.1, LoCoT2V Qwen2.5-VL-7B), a value another model judged carries the substitute mark on the
EntityBench, ViStoryBench and LoCoT2V boards and in the W&B export (summary marks, every board column in its table)."""
from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from bench_assets.core.board_text import format_board
from bench_assets.core.metric_spec import BOARD_COLUMNS, board_frame, is_paper_model, mark_judged
from bench_assets.entitybench import board as eb_board
from bench_assets.entitybench import metric_specs as EBS
from bench_assets.locot2v import board as lb
from bench_assets.locot2v import constants as LC
from bench_assets.locot2v import metric_specs as LS
from bench_assets.vistorybench import board as vb
from bench_assets.vistorybench import metric_specs as VS

CLAUDE, LOCAL = "claude-sonnet-4-6", "Qwen/Qwen2.5-VL-72B-Instruct"
TIERS = pd.DataFrame({"item": ["e0001", "e0002"], "tier": ["T1", "T1"]})


@pytest.mark.parametrize("specs,paper,same,other", [
    (EBS, "gemini-2.5-pro", "google/gemini-2.5-pro-preview-06-05", "gemini-2.5-flash"),
    (VS, "gpt-4.1", "gpt-4.1-2025-04-14", "gpt-4.1-mini"),
    (LS, "Qwen2.5-VL-7B", "Qwen/Qwen2.5-VL-7B-Instruct", LOCAL),
])
def test_each_benchmark_names_its_papers_judge(specs, paper, same, other):
    assert specs.PAPER_JUDGE == paper
    assert specs.judge_label(paper) is None and specs.judge_label(same) is None and specs.judge_label(None) is None
    assert specs.judge_label(other) == f"judge: {other} (paper: {paper})"
    assert specs.judge_label(CLAUDE) == f"judge: {CLAUDE} (paper: {paper})"
    assert not is_paper_model(other, paper) and is_paper_model(same, paper)


def _eb_rows(gen: str, judge_model: str, base: float) -> pd.DataFrame:
    rows = [dict(generator=gen, item=item, metric_id=mid, value=base + k / 10 + j / 100, n_eval=1, n_failed=0,
                 n_skipped=0, reason=None, protocol=f"p-{judge_model}", n_failed_evaluator=0, substitute=None)
            for k, mid in enumerate(("intra_face_fidelity", "cs_face")) for j, item in enumerate(("e0001", "e0002"))]
    rows.append(dict(generator=gen, item="e0003", metric_id="intra_face_fidelity", value=None, n_eval=0, n_failed=0,
                     n_skipped=1, reason="judge failed: timeout", protocol=f"p-{judge_model}", n_failed_evaluator=1,
                     substitute=None))
    df = pd.DataFrame(rows)
    fid = df["metric_id"] == "intra_face_fidelity"
    judged = mark_judged(df[fid].copy(), EBS.judge_label(judge_model))
    gated = mark_judged(df[~fid].copy(), EBS.gate_judge_label(f"gated by {judge_model}"), ["cs_face"])
    return pd.concat([judged, gated], ignore_index=True)


def test_entitybench_board_marks_a_non_paper_judge_and_only_it():
    records = pd.concat([_eb_rows("by_claude", CLAUDE, 0.4), _eb_rows("by_gemini", "gemini-2.5-pro", 0.6)],
                        ignore_index=True)
    assert records.loc[records["value"].isna(), "substitute"].isna().all()   # a value not judged carries no judge
    board = board_frame("entitybench", eb_board.leaderboard_rows(records, TIERS, EBS.METRICS), EBS.METRICS)
    b = board[board["slice"] == "all"].set_index(["generator", "metric_id"])
    assert b.loc[("by_claude", "intra_face_fidelity"), "substitute"] == f"judge: {CLAUDE} (paper: gemini-2.5-pro)"
    assert b.loc[("by_claude", "cs_face"), "substitute"] == \
        f"fidelity-gate judge: {CLAUDE} (paper: gemini-2.5-pro)"
    assert pd.isna(b.loc[("by_gemini", "intra_face_fidelity"), "substitute"])
    assert pd.isna(b.loc[("by_gemini", "cs_face"), "substitute"])
    text = format_board(board, {"slice": "all"})
    claude_v = b.loc[("by_claude", "intra_face_fidelity"), "value"]
    gemini_v = b.loc[("by_gemini", "intra_face_fidelity"), "value"]
    assert f"{claude_v:.3f}*" in text and f"{gemini_v:.3f}*" not in text and CLAUDE in text


def _loco_records(gen: str, judge_model: str, offset: float) -> pd.DataFrame:
    rows = [{"generator": gen, "item": s, "metric_id": m, "value": float(offset + 3 * i + 7 * j), "n_eval": 1,
             "n_failed": 0, "n_skipped": 0, "reason": None, "protocol": "p", "substitute": None}
            for j, s in enumerate(("s1", "s2")) for i, m in enumerate(LC.SUB_DIMENSIONS)]
    df = pd.DataFrame(rows)
    judged = df["metric_id"].isin(LC.DIMENSIONS["herd"])
    marked = mark_judged(df[judged].copy(), LS.judge_label(judge_model))
    return pd.concat([marked, df[~judged]], ignore_index=True)


def test_locot2v_board_marks_the_judged_parts_and_their_aggregates():
    records = pd.concat([_loco_records("local", LOCAL, 10.0), _loco_records("paper", "Qwen2.5-VL-7B-Instruct", 20.0)],
                        ignore_index=True)
    table = lb.leaderboard_table(records, ["s1", "s2"], ["local", "paper"]).set_index(["generator", "metric_id"])
    label = f"judge: {LOCAL} (paper: Qwen2.5-VL-7B)"
    herd0 = LC.DIMENSIONS["herd"][0]
    assert table.loc[("local", herd0), "substitute"] == label
    assert table.loc[("local", "herd"), "substitute"] == label and label in table.loc[("local", "overall"), "substitute"]
    assert pd.isna(table.loc[("local", "warping_error"), "substitute"])          # not judged
    assert pd.isna(table.loc[("paper", herd0), "substitute"]) and pd.isna(table.loc[("paper", "overall"), "substitute"])


def test_vistorybench_alignment_cell_marks_a_non_paper_judge():
    stories = pd.DataFrame({"story_id": ["01", "08"]})

    def recs(model, base):
        df = pd.DataFrame([{"item": s, "metric_id": "alignment", "value": base + k, "n_eval": 4, "n_failed": 0,
                            "n_skipped": 0, "n_failed_evaluator": 0, "reason": None, "substitute": None}
                           for k, s in enumerate(("01", "08"))])
        return mark_judged(df, VS.judge_label(model))

    other = vb.story_cell("g", "alignment", "all", recs(CLAUDE, 60.0), stories)
    paper = vb.story_cell("h", "alignment", "all", recs("gpt-4.1", 70.0), stories)
    assert other["substitute"] == f"judge: {CLAUDE} (paper: gpt-4.1)" and other["value"] == pytest.approx(60.5)
    assert paper["substitute"] is None and paper["value"] == pytest.approx(70.5)


def test_wandb_export_keeps_every_board_column_and_the_marks(tmp_path):
    from bench_assets.core.results import export_wandb, read_wandb_run
    records = pd.concat([_eb_rows("by_claude", CLAUDE, 0.4), _eb_rows("by_gemini", "gemini-2.5-pro", 0.6)],
                        ignore_index=True)
    rows = eb_board.leaderboard_rows(records, TIERS, EBS.METRICS)
    rows[0]["baseline"] = True                        # every column holds something to lose
    board = board_frame("entitybench", rows, EBS.METRICS)
    run_dir = export_wandb(board, "entitybench", tmp_path / "wb", {})
    table = json.loads(next(Path(run_dir).glob("files/media/table/leaderboard_*.json")).read_text())
    assert table["columns"][:4] == ["generator", "metric_id", "slice", "value"] and table["columns"][-1] == "marked"
    assert sorted(table["columns"][:-1]) == sorted(BOARD_COLUMNS) and len(table["data"]) == len(board)
    for col in ("comparable", "gate", "definition", "n_not_evaluated", "baseline", "substitute"):
        i = table["columns"].index(col)
        assert [r[i] for r in table["data"]] == [None if pd.isna(v) else (v.item() if hasattr(v, "item") else v)
                                                 for v in board[col]], col
    summary = read_wandb_run(run_dir)["summary"]
    key = "by_claude/intra_face_fidelity/all"
    v = board.set_index(["generator", "metric_id", "slice"]).loc[("by_claude", "intra_face_fidelity", "all"), "value"]
    assert summary[key] == pytest.approx(v)
    assert summary[f"substitute/{key}"] == f"judge: {CLAUDE} (paper: gemini-2.5-pro)"
    assert summary[f"marks/{key}"].startswith(f"{v:.3f}*")
    assert "substitute/by_gemini/intra_face_fidelity/all" not in summary


def test_entitybench_assets_mark_the_judge_that_answered(tmp_path, monkeypatch):
    """End to end on an embedded episode: the assets judged by Claude (the fake Messages server) put the judge's
    mark on every judged cell with a value; Pillar 1 (no judge) has none."""
    import shutil

    from dagster import instance_for_test

    from bench_assets import definitions as d
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths
    from tests.support.entitybench import varied
    from tests.support.fake_anthropic import FakeAnthropic

    src = Path(__file__).resolve().parents[1] / "data"
    data = tmp_path / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    shutil.copy(src / "entitybench" / "episodes" / "e0002.json", data / "entitybench" / "episodes")
    shutil.copytree(src / "generators" / "faithful" / "e0002", data / "generators" / "faithful" / "e0002")
    (data / "generators" / "faithful" / "generator.yaml").write_text(
        "name: faithful\nbenchmark: entitybench\ndescription: judged by a non-paper judge\n")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeAnthropic(responder=varied) as srv, instance_for_test() as instance:
        judge = Judge(mode="live", model=CLAUDE, base_url=srv.base_url, cache_dir=str(tmp_path / "cache"),
                      backoff_s=0.01)
        paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
        resources = build_resources(paths=paths, store_root=str(tmp_path / "store"), judge=judge)
        gens, errors = discover_generators(paths.generators_dir, "entitybench")
        stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH,
                         items=["e0002"], generators=gens, item_assets=d.ENTITYBENCH_ITEM_ASSETS,
                         generator_assets=d.ENTITYBENCH_GENERATOR_ASSETS,
                         aggregate_assets=["entitybench_leaderboard"], progress=lambda s: None)
        assert not errors and not stats.failed, (errors, stats.failed)
        board = resources["store"].query("SELECT * FROM entitybench_leaderboard WHERE slice = 'all'")
    label = f"judge: {CLAUDE} (paper: gemini-2.5-pro)"
    valued = board[board["value"].notna()].set_index("metric_id")["substitute"].fillna("")
    judged = [m for m in valued.index if m.startswith(("intra_face_", "intra_action_", "llm_"))
              and m != "intra_face_within_shot"]
    assert len(judged) >= 10, list(valued.index)
    assert all(label in valued[m] for m in judged), {m: valued[m] for m in judged if label not in valued[m]}
    assert f"fidelity-gate judge: {CLAUDE}" in valued["cs_face"]
    assert "judge:" not in valued["temporal_flickering"] and "judge:" not in valued["subject_consistency"]
