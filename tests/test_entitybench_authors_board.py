"""Issue 36: each EntityBench metric says how it stands to the authors' evaluator (eval/evaluate_benchmark.py
3776439) in `bench metrics` and on the board; Pillar 1's ids compute what their code (VBench) computes per shot, the
paper text's Eq. 2 and pair fraction are additions beside them."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from bench_assets import cli
from bench_assets.core.metric_spec import board_frame, detail_of
from bench_assets.entitybench import board as eb_board
from bench_assets.entitybench import metrics as M
from bench_assets.entitybench.metric_specs import EQ23, METRICS, PAPER_TEXT, REFERENCE


def test_every_metric_names_its_reference_to_the_authors_code():
    allowed = {"authors' code", PAPER_TEXT, "addition"}
    for s in METRICS:
        assert s.reference in allowed or s.reference.startswith(("authors' code (", "differs from the authors' code:")), \
            s.id
        # a paper-text variant is an addition with its documented difference; an addition is never 'authors' code'
        if s.reference == PAPER_TEXT and s.kind != "diagnostic":
            assert s.addition and s.definition, s.id
        if s.addition and s.kind != "diagnostic":
            assert s.reference in (PAPER_TEXT, "addition"), s.id
    assert REFERENCE["subject_consistency"] == REFERENCE["dynamic_degree"] == "authors' code"
    assert METRICS["subject_consistency"].slots == ("vbench_dino",) and not METRICS["subject_consistency"].definition


def test_bench_metrics_lists_the_reference(capsys):
    assert cli.main(["metrics", "--benchmark", "entitybench", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["subject_consistency_eq2"]["reference"] == PAPER_TEXT and rows["subject_consistency_eq2"]["addition"]
    assert rows["dynamic_degree"]["reference"] == "authors' code"
    assert rows["intra_action_overall"]["reference"].startswith("authors' code (their prompt texts")
    assert cli.main(["metrics", "--benchmark", "entitybench"]) == 0
    text = capsys.readouterr().out
    at = text.index("  subject_consistency_eq2 ")
    assert "      reference: paper text" in text[at:text.index("  dynamic_degree_pair_fraction ")]


def _rec(gen, item, mid, value, n_eval):
    return dict(generator=gen, item=item, metric_id=mid, value=value, n_eval=n_eval, n_failed=0, n_skipped=0,
                reason=None, protocol="p", n_failed_evaluator=0, substitute=None)


def test_board_rows_carry_the_reference_and_the_authors_aggregate():
    """The board's value is the authors' report (aggregate_results: the plain mean over episodes with a value); the
    paper text's Eq. 23 pools instances and sits in the row's detail under its addition id: with 1 and 3 instances
    the two differ. Judged rows say which prompts answered. An episode without a value is excluded from the
    headline (the episode counts and the coverage show it) and is a zero under Eq. 23 ('applied')."""
    records = pd.DataFrame([_rec("g", "e1", "cs_face", 0.2, 1), _rec("g", "e2", "cs_face", 0.8, 3),
                            _rec("g", "e1", "llm_face_accuracy", 1.0, 2),
                            {**_rec("g", "e2", "llm_face_accuracy", None, 0), "n_failed": 2},
                            _rec("g", "e1", "subject_consistency_eq2", 0.9, 4)])
    tiers = pd.DataFrame({"item": ["e1", "e2"], "tier": ["easy", "hard"]})
    board = board_frame("entitybench", eb_board.leaderboard_rows(records, tiers, METRICS, judge_prompts="authors@x"),
                        METRICS)
    main = board[board.slice == "all"]
    at, da = main.set_index("metric_id"), detail_of(main).set_index(main["metric_id"])
    assert at.loc["cs_face", "value"] == pytest.approx(0.5) and at.loc["cs_face", "raw_mean"] == pytest.approx(0.5)
    assert (da.loc["cs_face", "n_episodes_evaluated"], da.loc["cs_face", "n_episodes_total"]) == (2, 2)
    assert da.loc["cs_face", "std"] == pytest.approx(0.3) and da.loc["cs_face", "min"] == pytest.approx(0.2)
    assert da.loc["cs_face", "eq23_value"] == pytest.approx((0.2 + 0.8 * 3) / 4)
    assert da.loc["cs_face", "eq23_raw_mean"] == pytest.approx((0.2 + 0.8 * 3) / 4)
    assert da.loc["cs_face", "eq23_reference"] == f"{PAPER_TEXT} (variant, {EQ23})"
    assert da.loc["cs_face", "reference"] == "authors' code"
    assert da.loc["cs_face", "aggregation_reference"] == "authors' code"
    # e2 has no value: the headline is e1's alone, marked by 1 of 2 episodes and coverage 2/4 beside it
    assert at.loc["llm_face_accuracy", "value"] == 1.0
    assert at.loc["llm_face_accuracy", "coverage"] == pytest.approx(0.5)
    assert (da.loc["llm_face_accuracy", "n_episodes_evaluated"], da.loc["llm_face_accuracy", "n_episodes_total"]) \
        == (1, 2)
    assert da.loc["llm_face_accuracy", "eq23_value"] == pytest.approx(0.5)   # applied: raw 1.0 x coverage .5
    assert da.loc["llm_face_accuracy", "eq23_policy"] == "applied"
    assert da.loc["llm_face_accuracy", "judge_prompts"] == "authors@x"
    assert pd.isna(da.loc["cs_face"].get("judge_prompts"))
    assert da.loc["subject_consistency_eq2", "reference"] == PAPER_TEXT
    assert at.loc["subject_consistency_eq2", "definition"].startswith("paper's definition: Eq. 2")
    # the tiers: each its own episodes
    hard = board[(board.slice == "hard") & (board.metric_id == "cs_face")]
    assert float(hard["value"].iloc[0]) == pytest.approx(0.8)


def test_bench_metrics_names_the_headline_and_the_eq23_addition(capsys):
    """`bench metrics` says, per board metric, that the value is the authors' episode mean and which Eq. 23-25
    aggregation the addition aggregation_eq23 applies."""
    assert cli.main(["metrics", "--benchmark", "entitybench", "--json"]) == 0
    rows = {r["id"]: r for r in json.loads(capsys.readouterr().out)}
    agg = rows["cs_face"]["aggregation"]
    assert agg.startswith("authors' code: per tier, mean over the episodes with a value (None excluded)")
    assert f"{EQ23} (paper text, Eq. 23-25, detail eq23_value): mean over admitted appearances" in agg
    assert not rows["_meta_cross_shot_gate"]["aggregation"].startswith("authors' code")   # a diagnostic: no board


def test_official_export_writes_their_means_and_eq23_beside_them():
    """`bench export --format official`: the report holds the authors' means (their rounding) as the board's value
    does; the paper text's Eq. 23-25 per tier goes to the additions sidecar under aggregation_eq23."""
    from bench_assets.entitybench import official_export as EO
    recs = pd.DataFrame([_rec("g", "e1", "cs_face", 0.2, 1), _rec("g", "e2", "cs_face", 0.8, 3),
                         _rec("g", "e1", "llm_face_accuracy", 1.0, 2),
                         {**_rec("g", "e2", "llm_face_accuracy", None, 0), "n_failed": 2}])
    eps = pd.DataFrame({"item": ["e1", "e2"], "tier": ["easy", "hard"], "n_shots": [4, 4]})
    files = EO.export(recs, eps, "g")
    rep, add = files["report_g.json"], files["_additions_g.json"]
    assert rep["all"]["cs_face"]["mean"] == 0.5 and rep["all"]["llm_face_accuracy"]["mean"] == 1.0
    assert rep["all"]["llm_face_accuracy"]["n_episodes_evaluated"] == 1
    assert add[EQ23]["all"]["cs_face"] == pytest.approx((0.2 + 0.8 * 3) / 4)
    assert add[EQ23]["all"]["llm_face_accuracy"] == pytest.approx(0.5)      # applied: 1.0 x coverage 2/4
    assert add[EQ23]["hard"]["llm_face_accuracy"] is None and add[EQ23]["easy"]["cs_face"] == pytest.approx(0.2)
    assert EQ23 in add["note"]


def test_report_site_shows_the_episodes_and_the_eq23_addition_beside_the_value(tmp_path):
    """The report site (a real Store's board, core/site.build_site): each EntityBench cell says 'cov NN% · ep n/N'
    beside the authors' mean, its tooltip names the Eq. 23-25 addition with its value, and the overview's headline
    cell keeps coverage and episodes too."""
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.site import build_site
    from bench_resources.store import Store
    records = pd.DataFrame([_rec("a", "e1", "llm_face_accuracy", 1.0, 2),
                            {**_rec("a", "e2", "llm_face_accuracy", None, 0), "n_failed": 2},
                            _rec("b", "e1", "llm_face_accuracy", 0.6, 2), _rec("b", "e2", "llm_face_accuracy", 0.8, 2)])
    tiers = pd.DataFrame({"item": ["e1", "e2"], "tier": ["easy", "easy"]})
    store = Store(root=str(tmp_path / "store"))
    store.write_table(board_frame("entitybench", eb_board.leaderboard_rows(records, tiers, METRICS), METRICS),
                      store.table_path("entitybench_leaderboard", None))
    store.write_table(tiers.rename(columns={"item": "episode_id"}), store.table_path("entitybench_episode", None))
    site = build_site(store, BENCHMARKS, out_dir=tmp_path / "site").parent
    page = (site / "entitybench.html").read_text()
    assert "cov 50% &middot; ep 1/2" in page and "cov 100% &middot; ep 2/2" in page
    assert f"+^ paper text (variant, {EQ23}): eq23_value 0.500" in page      # a: raw 1.0 x coverage .5
    assert "mean of 1 of 2 episodes with a value (authors&#39; code; None excluded)" in page
    index = (site / "index.html").read_text()
    assert "coverage 50% &middot; ep 1/2" in index


def test_cli_and_wandb_cells_mark_coverage_and_episodes_and_the_legend_names_both_aggregations():
    """`bench leaderboard`'s text and the W&B table's ``marked`` column: a cell averaging 1 of 2 episodes says
    '[50%]{1/2ep}'; a cell over every episode carries no episode mark; the legend names the headline's aggregation
    and the Eq. 23-25 addition by id."""
    from bench_assets.core.board_text import format_board
    from bench_assets.core.results import wandb_table
    records = pd.DataFrame([_rec("a", "e1", "llm_face_accuracy", 1.0, 2),
                            {**_rec("a", "e2", "llm_face_accuracy", None, 0), "n_failed": 2},
                            _rec("b", "e1", "llm_face_accuracy", 0.6, 2), _rec("b", "e2", "llm_face_accuracy", 0.8, 2)])
    tiers = pd.DataFrame({"item": ["e1", "e2"], "tier": ["easy", "easy"]})
    board = board_frame("entitybench", eb_board.leaderboard_rows(records, tiers, METRICS), METRICS)
    text = format_board(board, {"slice": "all"}, "entitybench")
    row = next(line for line in text.splitlines() if line.startswith("llm_face_accuracy "))
    assert row.split()[1:] == ["1.000[50%]{1/2ep}", "0.700"], row
    assert "{n/Nep} the value is the mean of the n of N episodes with a value (None excluded)" in text
    assert f"value: authors' code, the mean over the episodes with a value (None excluded); an addition, paper " \
           f"text (variant, {EQ23})" in text
    cols, rows = wandb_table(board[board.slice == "all"])
    marked = {(r[cols.index("generator")]): r[-1] for r in rows}
    assert marked == {"a": "1.000[50%]{1/2ep}", "b": "0.700"}


def _pan(n=12, seed=0):
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (24, 32, 3), dtype=np.uint8)
    return np.stack([np.roll(base, 2 * i, axis=1) for i in range(n)])


class Emb:
    """A frame 'embedder' whose features turn with the frame index (so the first-frame cosine decays)."""

    def __init__(self):
        self.calls = 0

    def embed(self, ims):
        self.calls += len(ims)
        return np.stack([np.array([np.cos(0.3 * im[0, 0, 0]), np.sin(0.3 * im[0, 0, 0]), 0.2]) for im in ims])


def test_pillar1_subject_consistency_is_vbench_and_eq2_an_addition_from_one_pass():
    frames = _pan()
    emb = Emb()
    ids = {m.metric_id: m for m in M.PILLAR1}
    run = {ids["subject_consistency"]: emb, ids["subject_consistency_eq2"]: emb}
    out = M.stream_pillar1([frames[i:i + 5] for i in range(0, 12, 5)], 24.0, 12, run)
    e = Emb().embed(list(frames))
    e = e / np.linalg.norm(e, axis=1, keepdims=True)
    pre, first = np.sum(e[1:] * e[:-1], 1), e[1:] @ e[0]
    vbench = float(np.mean((np.maximum(pre, 0) + np.maximum(first, 0)) / 2))
    assert out["subject_consistency"][0] == pytest.approx(vbench)
    assert out["subject_consistency_eq2"][0] == pytest.approx(float(np.mean(pre)))
    assert abs(vbench - float(np.mean(pre))) > 1e-3            # the clip tells the two formulas apart
    assert emb.calls == 12                                     # one embedding pass for both


def test_dynamic_degree_is_the_per_shot_verdict():
    assert M.dynamic_verdict([]) == 0.0                         # one sampled frame: VBench says static
    assert M.dynamic_verdict([True]) == 1.0                     # 2 frames need round(0.5) = 0 moving pairs
    assert M.dynamic_verdict([True, False, False, False, False, False, False, False]) == 0.0   # needs round(2.25)=2
    assert M.dynamic_verdict([True, True, False, False, False, False, False, False]) == 1.0


def test_offline_vbench_dino_is_the_image_embedder_marked_substitute():
    from bench_assets.core.metric_spec import substitute_label
    from bench_resources.models import ModelRegistry
    reg = ModelRegistry(profile="offline")
    assert reg.slot("vbench_dino") is reg.slot("image_embedder")
    assert "EfficientNet-Lite0" in substitute_label(("vbench_dino",), reg)
    assert ModelRegistry(profile="paper").status("vbench_dino").checkpoint.startswith("DINO ViT-B/16")
