"""The authors' released, manually verified QA file (``narrativetrack_qa.json``, obtained from the authors): loaded as
published, its counts per dimension and format checked against the paper's Table 2, and every answerer evaluated on
it exactly like the generated QA. The reference numbers of the paper hold only on this file. Absent file: empty
tables that say so (nothing is invented)."""

import json
from collections import Counter
from pathlib import Path

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from bench_assets.core.board_text import board_markdown
from bench_assets.core.generators import discover_generators
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.metric_spec import board_frame
from bench_assets.narrativetrack import board
from bench_assets.narrativetrack.answering import answer_frame, answer_rows, question_columns
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import dataset
from bench_assets.narrativetrack.metric_specs import METRICS
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths

GROUP = "narrativetrack_released"
QA_COLUMNS = ["qa_id", "video_id", "video_path", "dimension", "format", "direction", "track_type", "distractor",
              "question", "options", "answer", "answer_published", "kept"]


def released_path(paths: BenchPaths) -> Path:
    return paths.benchmark_dir(constants.BENCH) / dataset.RELEASED_QA


@asset(group_name=GROUP, code_version="1")
def narrativetrack_released_qa(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """The released QA as published (answers normalised for scoring, the published string kept), with the count
    check against the paper in the metadata."""
    p = released_path(paths)
    if not p.is_file():
        return Output(pd.DataFrame(columns=QA_COLUMNS), metadata={
            "status": MetadataValue.text(f"not provided: put the authors' file at {p}")})
    recs = dataset.load_released_qa(p)
    check = dataset.released_count_check(recs)
    df = pd.DataFrame(recs)
    df["kept"] = True
    return Output(df[QA_COLUMNS], metadata={"qa": len(df), "counts_match_paper": check["ok"],
                                            "count_check": MetadataValue.json(check)})


@asset(group_name=GROUP, code_version="2")
def narrativetrack_released_answers(context: AssetExecutionContext, paths: BenchPaths,
                                    narrativetrack_released_qa: pd.DataFrame, judge: Judge) -> Output[pd.DataFrame]:
    """Every NarrativeTrack answerer on every released QA (frames sampled uniformly from the QA's video)."""
    qas = narrativetrack_released_qa.assign(entity_id=None)
    gens, _ = discover_generators(paths.generators_dir, constants.BENCH)
    base = released_path(paths).parent
    rows, card_errors = [], []
    for g in gens:
        try:
            answerer = dataset.answerer_from_card(g.name, g.card)
        except dataset.DatasetError as e:
            # one bad card is its own answerer's error, named once; every other answerer is still asked and scored
            context.log.error(str(e))
            card_errors.append(str(e))
            rows += card_failed_rows(qas, g.name, g.card, str(e))
            continue
        for vpath, group in qas.groupby("video_path", sort=True):
            path = Path(vpath) if Path(vpath).is_absolute() else base / vpath
            try:  # only the answerer's frames are converted (one streamed pass)
                src = VideoSource(path)
                req = src.even(answerer.frames)
                src.run()
                frames = req.frames
            except (DecodeError, OSError) as e:
                rows += [{"qa_id": r.qa_id, "video_id": r.video_id, "dimension": r.dimension, "format": r.format,
                          "direction": r.direction, "track_type": r.track_type, "distractor": r.distractor,
                          # not the answerer's failure: it was never asked (counted as the evaluator's)
                          "answerer": g.name, "model": answerer.model, "status": "skipped",
                          "reason": f"video {path}: {e}"} for r in group.itertuples()]
                continue
            rows += answer_rows(judge, answerer, group, list(frames))
    df = answer_frame(rows)
    st = Counter(df["status"])
    return Output(df, metadata={"answered": int(st.get("ok", 0)), "failed": int(st.get("failed", 0)),
                                "skipped": int(st.get("skipped", 0)), "card_errors": len(card_errors),
                                "card_error_list": MetadataValue.json(card_errors)})


def card_failed_rows(qas: pd.DataFrame, name: str, card: dict, why: str) -> list[dict]:
    """Every kept question of an answerer whose card is invalid: its failure (the card is the answerer's), with the
    card's error as the reason, so the board shows it unscored (None, never 0 %) and says why."""
    model = card.get("model")
    return [{**question_columns(r, name, model if isinstance(model, str) else None, None),
             "status": "failed", "reason": why} for r in qas[qas["kept"].astype(bool)].itertuples()]


@asset(group_name=GROUP, code_version="2")
def narrativetrack_released_leaderboard(context: AssetExecutionContext, narrativetrack_released_qa: pd.DataFrame,
                                        narrativetrack_released_answers: pd.DataFrame) -> Output[pd.DataFrame]:
    """Accuracy on the released QA per answerer (generator), strict and lenient (slice), every cell and slice,
    beside random, in the common board schema; the paper's Table 2 applies to these numbers only. The questions are
    the authors': no model slot built them, so no substitute mark."""
    answers = narrativetrack_released_answers
    table = board_frame(constants.BENCH, board.leaderboard_rows(answers, narrativetrack_released_qa,
                                                                sorted(set(answers["answerer"].dropna()))), METRICS)
    avg = table[table["metric_id"] == "accuracy.avg"][["generator", "slice", "value", "raw_mean", "coverage",
                                                       "n_eval", "n_failed", "n_failed_evaluator", "reason"]]
    return Output(table, metadata={"table": MetadataValue.md(board_markdown(table, {"slice": "strict"}, digits=2)),
                                   "avg": MetadataValue.md(avg.to_markdown(index=False)) if len(avg) else
                                   "no released QA", "qa": json.dumps(len(narrativetrack_released_qa))})


ASSETS = [narrativetrack_released_qa, narrativetrack_released_answers, narrativetrack_released_leaderboard]
