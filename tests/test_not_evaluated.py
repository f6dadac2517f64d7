"""Issue 25, item 5: a judge switched off (or a model slot the profile does not have) is `not evaluated` by
choice, never an evaluator failure; a judge that fails (HTTP 500) is an evaluator failure. The split is made once,
in the common board layer (core/metric_spec: by_choice, split_not_evaluated, board_frame's n_not_evaluated)."""

import pandas as pd
from dagster import instance_for_test

from bench_assets import definitions as d
from bench_assets.core.board_text import format_board
from bench_assets.core.generators import discover_generators
from bench_assets.core.metric_spec import BOARD_COLUMNS, MetricSpec, MetricSpecs, board_frame, by_choice
from bench_assets.core.runner import evaluate
from bench_resources.config import build_resources
from bench_resources.judge import JUDGE_OFF, Judge
from bench_resources.paths import BenchPaths
from tests.support.fake_anthropic import FakeAnthropic, server_error
from tests.support.entitybench import world  # one episode x faithful, as the outage test

NO_OFFLINE = ("slot 'identity' (offline profile: ArcFace) is unavailable: no offline substitute ships in a package "
              "(never pretend). ")


def test_by_choice_only_when_every_part_is_a_choice():
    assert by_choice(JUDGE_OFF) and by_choice(f"judge skipped: {JUDGE_OFF}") and by_choice(NO_OFFLINE)
    assert by_choice(f"{JUDGE_OFF}; {NO_OFFLINE}")
    # an outage, a replay miss, missing weights: failures, also when mixed with a choice
    for r in ("judge failed: HTTP 500 after 0 retries", "not in judge cache (replay mode)",
              "slot 'clip' (paper profile: ViT-L/14) is unavailable: no weights at /w/clip/",
              f"{JUDGE_OFF}; judge failed: timeout", None, "", "judge offline"):
        assert not by_choice(r), r


def test_board_frame_splits_by_reason_and_keeps_a_given_split():
    specs = MetricSpecs("t", [MetricSpec("m", "f", "higher", "a metric"), MetricSpec("k", "f", "higher", "another")])
    rows = [{"generator": "g", "metric_id": "m", "slice": "all", "value": None, "n_failed_evaluator": 4,
             "reason": JUDGE_OFF},
            {"generator": "h", "metric_id": "m", "slice": "all", "value": None, "n_failed_evaluator": 3,
             "reason": "judge failed: HTTP 500"},
            {"generator": "g", "metric_id": "k", "slice": "all", "value": None, "n_failed_evaluator": 2,
             "reason": NO_OFFLINE},
            # split already made from item rows (a board summing items): kept as given
            {"generator": "h", "metric_id": "k", "slice": "all", "value": 0.5, "n_eval": 1, "n_failed_evaluator": 1,
             "n_not_evaluated": 2, "reason": JUDGE_OFF}]
    board = board_frame("t", rows, specs)
    assert "n_not_evaluated" in BOARD_COLUMNS and list(board.columns) == list(BOARD_COLUMNS)
    b = board.set_index(["generator", "metric_id"])
    assert (b.loc[("g", "m"), "n_failed_evaluator"], b.loc[("g", "m"), "n_not_evaluated"]) == (0, 4)
    assert (b.loc[("h", "m"), "n_failed_evaluator"], b.loc[("h", "m"), "n_not_evaluated"]) == (3, 0)
    assert (b.loc[("g", "k"), "n_failed_evaluator"], b.loc[("g", "k"), "n_not_evaluated"]) == (0, 2)
    assert (b.loc[("h", "k"), "n_failed_evaluator"], b.loc[("h", "k"), "n_not_evaluated"]) == (1, 2)
    text = format_board(board, benchmark="t")
    assert "g: " in text and "not evaluated (by choice) 6 in 2 metrics" in text
    assert "evaluator failures 4 in 2 metrics" in text  # h only


GEN = ["entitybench_outputs", "entitybench_grounding", "entitybench_fidelity", "entitybench_action"]
JUDGED = ("llm_", "fidelity", "action")  # the judge-only families' metric ids (fidelity, intra_action_*, ...)


def board_of(instance, data, store, judge) -> pd.DataFrame:
    """One episode x one generator through the runner, then the real leaderboard asset; its stored board."""
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(store), judge=judge)
    gens, _ = discover_generators(paths.generators_dir, "entitybench")
    stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH, items=["e0001"],
                     generators=gens, item_assets=list(d.ENTITYBENCH_ITEM_ASSETS), generator_assets=GEN,
                     aggregate_assets=["entitybench_leaderboard"], progress=lambda s: None, show_progress=False)
    assert not stats.failed, stats.failed
    return resources["store"].query("SELECT * FROM entitybench_leaderboard WHERE slice = 'all'")


def judge_rows(board):
    ids = board["metric_id"].astype(str)
    return board[[any(k in i for k in JUDGED) for i in ids]]


def test_judge_off_is_not_evaluated_and_a_failing_judge_is_an_evaluator_failure(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    data = world(tmp_path)
    with instance_for_test() as instance:
        off = board_of(instance, data, tmp_path / "store_off", Judge(mode="off", cache_dir=str(tmp_path / "c0")))
    jr = judge_rows(off)
    assert len(jr), sorted(off["metric_id"])
    assert int(off["n_failed_evaluator"].fillna(0).sum()) == 0, \
        off.loc[off["n_failed_evaluator"] > 0, ["metric_id", "n_failed_evaluator", "reason"]]
    assert int(jr["n_not_evaluated"].fillna(0).sum()) > 0
    text = format_board(off)
    assert "evaluator failures" not in text and "not evaluated (by choice)" in text

    with FakeAnthropic(responder=lambda body: server_error(500)) as srv, instance_for_test() as instance:
        judge = Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "c1"), backoff_s=0.001,
                      max_retries=0, breaker_threshold=0)
        down = board_of(instance, data, tmp_path / "store_down", judge)
        assert len(srv.requests) > 0
    jd = judge_rows(down)
    assert int(down["n_not_evaluated"].fillna(0).sum()) == 0
    assert int(jd["n_failed_evaluator"].fillna(0).sum()) > 0
    # the same metrics, the same instances: what judge-off counted as a choice, the outage counts as failures
    per_off = jr.set_index("metric_id")["n_not_evaluated"]
    per_down = jd.set_index("metric_id")["n_failed_evaluator"]
    hit = per_off[per_off > 0].index
    assert (per_down.reindex(hit).fillna(0) > 0).all(), pd.concat([per_off, per_down], axis=1)
    assert "evaluator failures" in format_board(down)
