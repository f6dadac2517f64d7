"""NarrativeTrack board (issue 27): the paper's cells and average reproduce Table 2's arithmetic from the paper's
questions only (the face-anchored measured questions under their own ids), answerer failures count against the
value, substitute marks from the slots actually used, and the embedded data's board against its specs."""
import numpy as np
import pandas as pd
import pytest
from dagster import instance_for_test, materialize

from bench_assets.core.metric_spec import board_frame, check_board
from bench_assets.narrativetrack import assets
from bench_assets.narrativetrack import board
from bench_assets.narrativetrack import metrics
from bench_assets.narrativetrack.metric_specs import METRICS, PAPER_CELLS
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.models.specs import SLOTS
from bench_resources.paths import BenchPaths
from tests.support import DATA, QUIET

# Table 2, GPT-4o (20 frames): questions per cell (the counts the table implies) and correct answers per cell
COUNTS = dict(zip(PAPER_CELLS, [100, 100, 92, 89, 41, 91, 83, 18, 95, 73, 23, 100, 101]))
CORRECT = dict(zip(PAPER_CELLS, [78, 58, 75, 54, 15, 73, 56, 11, 69, 55, 18, 85, 67]))
TABLE2 = dict(zip(PAPER_CELLS, [78.00, 58.00, 81.52, 60.67, 36.59, 80.22, 67.47, 61.11, 72.63, 75.34, 78.26, 85.00,
                                66.34]))
TABLE2_AVG = 70.97
# measured questions that would move EE / EA and the average if pooled: (cell, questions, correct)
MEASURED = [(("EE", "binary"), 40, 0), (("EE", "mc"), 30, 30), (("EA", "binary"), 20, 5)]


def _questions_and_answers(seed: int = 7):
    """The paper's 1006 questions (varied direction / track type / distractor) and measured ones, one answer each;
    which questions are right varies per question (random, seeded), the count per cell is Table 2's."""
    rng = np.random.default_rng(seed)
    qas, ans = [], []

    def add(qa_id, d, f, template, right):
        qas.append({"qa_id": qa_id, "video_id": f"v{len(qas) % 7}", "dimension": d, "format": f,
                    "direction": ["start_to_later", "later_to_start", "agnostic"][len(qas) % 3],
                    "track_type": ["appear", "disappear", "reappear"][len(qas) % 3 - 1],
                    "distractor": ["real", "synthetic"][len(qas) % 2], "template": template})
        ans.append({"qa_id": qa_id, "answerer": "gpt4o", "status": "ok", "reason": None, "strict": right,
                    "lenient": True, "protocol": "p1"})

    for (d, f), n in COUNTS.items():
        right = np.zeros(n, bool)
        right[rng.choice(n, CORRECT[(d, f)], replace=False)] = True
        for i in range(n):
            add(f"v.P1.{d}.{f}.start_to_later.{len(qas):03d}", d, f, f"{d}.{f}.start_to_later.{i % 5}", bool(right[i]))
    for (d, f), n, k in MEASURED:
        for i in range(n):
            add(f"v.P2.{d}.{f}.start_to_later.m{i:02d}", d, f, f"{d}.{f}.face.{i % 2}", i < k)
    return pd.DataFrame(qas), pd.DataFrame(ans)


def test_paper_cells_reproduce_table2_without_the_measured_questions():
    qas, ans = _questions_and_answers()
    b = board_frame("narrativetrack", board.leaderboard_rows(ans, qas, ["gpt4o"]), METRICS)
    assert check_board(b, METRICS) == []
    strict = b[(b.generator == "gpt4o") & (b.slice == "strict")].set_index("metric_id")
    for (d, f), want in TABLE2.items():
        row = strict.loc[f"accuracy.{d}.{f}"]
        assert round(float(row.value), 2) == want, (d, f)
        assert int(row.n_items) == COUNTS[(d, f)] and not bool(row.addition)
    # Avg. is the micro-average over the questions (714 / 1006), not the mean of the 13 cells (69.32)
    assert round(float(strict.loc["accuracy.avg", "value"]), 2) == TABLE2_AVG
    assert round(float(np.mean(list(TABLE2.values()))), 2) == 69.32
    assert int(strict.loc["accuracy.avg", "n_items"]) == 1006
    # the slices read the paper's questions only
    assert sum(int(strict.loc[f"accuracy.direction.{v}", "n_items"]) for v in
               ("start_to_later", "later_to_start", "agnostic")) == 1006
    # the measured questions: their own ids, additions
    assert strict.loc["measured.EE.binary", "value"] == 0.0 and strict.loc["measured.EE.mc", "value"] == 100.0
    assert strict.loc["measured.EA.binary", "value"] == 25.0
    assert strict.loc["measured.avg", "value"] == pytest.approx(100 * 35 / 90)
    assert strict[strict.index.str.startswith("measured.")]["addition"].all()
    # pooled, as before issue 27, EE binary would have read 78 / 140
    pooled = 100 * 78 / 140
    assert round(pooled, 2) != TABLE2[("EE", "binary")]
    # the episode-report shape (metrics.accuracy_table) does not pool them either
    old = {(r["mode"], r["metric_id"]): r for r in metrics.accuracy_table(ans.merge(qas, on="qa_id"))}
    assert round(old[("strict", "accuracy.EE.binary")]["value"], 2) == 78.00
    assert round(old[("strict", "accuracy.avg")]["value"], 2) == TABLE2_AVG
    # lenient is its own slice: every answer right there
    assert b[(b.generator == "gpt4o") & (b.slice == "lenient") & (b.metric_id == "accuracy.avg")].value.iloc[0] == 100


def test_answerer_failures_count_against_the_value():
    """The same answers, except that a second answerer fails (invalid output) where the first was wrong: it cannot
    rank higher. Questions the evaluator could not ask (judge off) are counted apart, never scored."""
    qas, ans = _questions_and_answers()
    qas = qas[qas.dimension == "AC"]
    ans = ans[ans.qa_id.isin(qas.qa_id)]
    failing = ans.assign(answerer="failing", strict=ans["strict"].astype("boolean"))
    wrong = ~failing["strict"].astype(bool)
    failing.loc[wrong, "status"], failing.loc[wrong, "strict"] = "failed", pd.NA
    failing.loc[wrong, "reason"] = "invalid output"
    off = ans.assign(answerer="offline", status="skipped", strict=None, lenient=None, reason="judge off")
    b = board_frame("narrativetrack", board.leaderboard_rows(pd.concat([ans, failing, off]), qas,
                                                             ["gpt4o", "failing", "offline"]), METRICS)
    row = b[(b.slice == "strict") & (b.metric_id == "accuracy.AC.binary")].set_index("generator")
    assert row.loc["failing", "value"] == row.loc["gpt4o", "value"] == pytest.approx(100 * 75 / 92)
    assert row.loc["failing", "raw_mean"] == 100.0 and row.loc["failing", "n_failed"] == 92 - 75
    assert row.loc["failing", "coverage"] == pytest.approx(75 / 92)
    # judge off is not evaluated by choice (issue 25), per question by its own reason: never the evaluator's failure
    assert pd.isna(row.loc["offline", "value"]) and row.loc["offline", "n_not_evaluated"] == 92
    assert row.loc["offline", "n_failed_evaluator"] == 0
    assert "judge off" in row.loc["offline", "reason"] and row.loc["offline", "coverage"] == 0.0
    # a question without an answer row is counted as not asked
    part = board_frame("narrativetrack", board.leaderboard_rows(ans.iloc[:10], qas, ["gpt4o"]), METRICS)
    avg = part[(part.slice == "strict") & (part.metric_id == "accuracy.avg") & (part.generator == "gpt4o")].iloc[0]
    assert avg.n_items == len(qas) and avg.n_eval == 10 and avg.n_skipped == len(qas) - 10
    assert "not asked yet" in avg.reason
    # the random baseline: one row per mode, baseline, micro over the question mix
    rnd = b[(b.generator == "random") & (b.metric_id == "accuracy.avg")]
    assert set(rnd.slice) == {"strict", "lenient"} and rnd.baseline.all()
    assert rnd.value.iloc[0] == pytest.approx((92 * 50 + 89 * 25 + 41 * 100 / 6) / 222)


def _expected_marks(models) -> list[str]:
    """Every slot building the questions whose checkpoint in this registry is not the paper's (the slot table's, or
    NarrativeTrack's where the paper used another model)."""
    marks = []
    for slot in board.qa_slots(models):
        st = models.status(slot)
        if not st.available:
            continue
        paper = board.PAPER_CHECKPOINTS.get(slot, SLOTS[slot].paper.name)
        if st.checkpoint != paper:
            marks.append(f"{slot}: {st.checkpoint}")
    return marks


def test_substitute_marks_from_the_slots_in_use(tmp_path):
    offline = ModelRegistry(profile="offline")
    label = board.qa_substitute(offline)
    marks = _expected_marks(offline)
    assert {m.split(":")[0] for m in marks} >= {"person_detector", "reid", "face", "image_embedder"}
    for m in marks:
        assert m in label
    # the paper profile with the shared paper checkpoints present: OSNet is the paper's ReID (no mark), YOLOv8x and
    # ArcFace are not NarrativeTrack's detector and face model (marked, with the paper's named)
    for slot in ("person_detector", "reid", "face"):
        for f in SLOTS[slot].paper.files:
            (tmp_path / slot).mkdir(exist_ok=True)
            (tmp_path / slot / f).write_bytes(b"not weights: status only")
    paper = ModelRegistry(profile="paper", weights_dir=str(tmp_path))
    plabel = board.qa_substitute(paper)
    assert "reid:" not in plabel and "image_embedder" not in plabel
    assert "person_detector: YOLOv8x" in plabel and "Detectron2" in plabel and "face: ArcFace" in plabel
    # on the board: every cell with a value carries the mark of the answers' rows; random rows the QA's
    qas, ans = _questions_and_answers()
    b = board_frame("narrativetrack", board.leaderboard_rows(ans.assign(substitute=label), qas, ["gpt4o"], label),
                    METRICS)
    valued = b[b.value.notna()]
    assert len(valued) and (valued.substitute == label).all()
    assert b[b.value.isna()].substitute.isna().all()
    # questions whose attributes the offline heuristic described carry that mark too, on every cell that reads them
    heur = qas.assign(attribute_sources=[('{"answer": "offline heuristic"}' if d == "AC" else '{"answer": "judge:m"}')
                                         for d in qas.dimension])
    b = board_frame("narrativetrack", board.leaderboard_rows(ans.assign(substitute=label), heur, ["gpt4o"], label),
                    METRICS).set_index(["generator", "slice", "metric_id"])
    for gen in ("gpt4o", "random"):
        assert board.CONTEXT_HEURISTIC in b.loc[(gen, "strict", "accuracy.AC.mc"), "substitute"]
        assert board.CONTEXT_HEURISTIC in b.loc[(gen, "strict", "accuracy.avg"), "substitute"]
        assert b.loc[(gen, "strict", "accuracy.EE.mc"), "substitute"] == label
        assert label in b.loc[(gen, "strict", "accuracy.AC.mc"), "substitute"]


@pytest.fixture(scope="module")
def embedded_board(tmp_path_factory, narrativetrack_items):
    """One embedded video's item tables (forked from the session world: offline models, judge off), an answerer
    partition and the leaderboard: the board of the embedded data."""
    from tests.support.narrativetrack import fork_items
    world_store = narrativetrack_items[4]
    store = fork_items(world_store, tmp_path_factory.mktemp("nt_board_store"), assets.ITEM_ASSETS, ["nt002"])
    paths = BenchPaths(data_root=str(DATA), generators_root=str(DATA / "generators"))
    resources = build_resources(store_root=str(store), paths=paths, judge=Judge(mode="off", cache_dir=str(store / "jc")))
    with instance_for_test() as instance:
        instance.add_dynamic_partitions(assets.P.items.name, ["nt002"])
        instance.add_dynamic_partitions(assets.P.generators.name, ["narrativetrack_claude_haiku"])
        assert materialize(assets.ASSETS, selection=["narrativetrack_answers"],
                           partition_key=str(assets.P.key("narrativetrack_claude_haiku", "nt002")), instance=instance,
                           resources=resources, run_config=QUIET).success
        assert materialize(assets.ASSETS, selection=["narrativetrack_leaderboard"], instance=instance,
                           resources=resources, run_config=QUIET).success
        yield resources["store"].query("SELECT * FROM narrativetrack_leaderboard"), resources


def test_embedded_board_matches_its_specs_and_marks_substitutes(embedded_board):
    raw, resources = embedded_board
    assert list(raw.columns) == list(board_frame("narrativetrack", [], METRICS).columns)
    assert check_board(raw, METRICS) == []
    assert set(raw.slice) == {"strict", "lenient"} and set(raw.generator) == {"narrativetrack_claude_haiku", "random"}
    mine = raw[raw.generator == "narrativetrack_claude_haiku"]
    # judge off: nothing answered, every question counted as not evaluated by choice (issue 25; per question by its
    # own reason, not the evaluator's failure), no value
    assert mine.value.isna().all() and (mine.n_eval == 0).all()
    asked = mine[mine.n_items > 0]
    assert len(asked) and (asked.n_not_evaluated == asked.n_items).all() and (asked.n_failed_evaluator == 0).all()
    assert asked.reason.str.contains("judge off").all()
    # every random row with a value carries the offline slots' marks (the slot table's offline checkpoints)
    rnd = raw[(raw.generator == "random") & raw.value.notna()]
    assert len(rnd) and rnd.baseline.all()
    for m in _expected_marks(resources["models"]):
        assert rnd.substitute.str.contains(m, regex=False).all(), m
    # offline the judge is off: the template questions' attributes are the heuristic's, and say so
    qa = resources["store"].query("SELECT * FROM narrativetrack_qa WHERE kept")
    assert qa.attribute_sources.str.contains("offline heuristic").any()
    avg = raw[(raw.generator == "random") & (raw.metric_id == "accuracy.avg")]
    assert avg.substitute.str.contains(board.CONTEXT_HEURISTIC, regex=False).all()
    # the answers carry the slots' mark at compute time
    ans = resources["store"].query("SELECT DISTINCT substitute FROM narrativetrack_answers")
    assert ans.substitute.tolist() == [board.qa_substitute(resources["models"])]
    # the measured questions of the video (if any) are on their own ids, never in accuracy.*
    qa = resources["store"].query("SELECT * FROM narrativetrack_qa WHERE kept")
    n_measured = sum(board.question_set(t, q) == board.MEASURED for t, q in zip(qa.template, qa.qa_id))
    strict_rnd = raw[(raw.generator == "random") & (raw.slice == "strict")].set_index("metric_id")
    assert int(strict_rnd.loc["accuracy.avg", "n_items"]) == len(qa) - n_measured
    assert int(strict_rnd.loc["measured.avg", "n_items"]) == n_measured
