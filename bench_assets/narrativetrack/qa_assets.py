"""The QA set per video, the answers per (answerer x video) and the leaderboard."""

import json
from collections import Counter
from typing import Optional

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.manifest import protocol_digest
from bench_assets.core.media import even_indices
from bench_assets.core.metric_spec import board_frame
from bench_assets.narrativetrack import board
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import dataset
from bench_assets.narrativetrack import judging
from bench_assets.narrativetrack import measured
from bench_assets.narrativetrack import qa
from bench_assets.narrativetrack import scoring
from bench_assets.narrativetrack.answering import ANSWER_COLUMNS, answer_frame, answer_rows, answerer_for
from bench_assets.narrativetrack.frame_cache import frame_view, video_row
from bench_assets.narrativetrack.judged import qa_filters
from bench_assets.narrativetrack.manifest import FACE_MERGE, manifest, protocol
from bench_assets.narrativetrack.metric_specs import METRICS
from bench_assets.narrativetrack.registry_assets import narrativetrack_pipeline_quality
from bench_assets.narrativetrack.tables import judge_failure_metadata, measured_inputs, registry_records
from bench_assets.narrativetrack.wiring import BENCH, GROUP, P, data_dir
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


# code version 4: the measured questions judge a face's size against the frame height (issue 23)
@asset(partitions_def=P.items, group_name=GROUP, code_version="4")
def narrativetrack_qa(context: AssetExecutionContext, paths: BenchPaths, narrativetrack_video: pd.DataFrame,
                      narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                      narrativetrack_tracklets: pd.DataFrame, narrativetrack_faces: pd.DataFrame,
                      narrativetrack_identities: pd.DataFrame,
                      narrativetrack_entity_registry: pd.DataFrame, judge: Judge) -> Output[pd.DataFrame]:
    """The QA pairs of this video: CRP templates over the entity registry, real and synthetic distractors
    (labelled), plus the measured questions (measured.py: face-anchored existence and identity questions whose
    answers rest only on detections, faces and identities), lexical and LLM filters, options permuted and balanced
    with the seed. Dropped pairs are kept with ``kept = False`` and the reason."""
    video = video_row(narrativetrack_video)
    vid = video["video_id"]
    entities = registry_records(narrativetrack_entity_registry)
    styles = set(narrativetrack_entity_registry["attribute_style"]) if len(narrativetrack_entity_registry) else set()
    style = "free_text" if "free_text" in styles else "heuristic"
    raw = qa.generate(vid, entities, dataset.load_pool(data_dir(paths)), constants.QA_SEED, style)
    fr, rows_m = measured_inputs(narrativetrack_frames, narrativetrack_detections, narrativetrack_tracklets,
                                 narrativetrack_faces, narrativetrack_identities)
    names = {e: f"P{e + 1}" for e in {r["entity"] for r in rows_m if r["entity"] is not None}}
    measured_qas = measured.generate(vid, fr, rows_m, float(video["duration"]), 1.0 / float(video["sample_fps"]),
                                     names, qa._rng(constants.QA_SEED, vid, "measured"), FACE_MERGE,
                                     frame_height=float(video["height"]))
    grammar, similar, model = qa_filters(judge)
    kept, dropped = qa.apply_filters(raw, grammar, similar)
    kept_m, dropped_m = qa.apply_filters(measured_qas, grammar, similar)
    # balanced apart: the template questions' options do not depend on whether measured questions exist
    kept = qa.balance(kept, constants.QA_SEED, vid) + qa.balance(kept_m, constants.QA_SEED, vid)
    dropped += dropped_m
    rows = [{**q, "kept": True, "drop_reason": None} for q in kept] + [{**q, "kept": False} for q in dropped]
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=["qa_id", "video_id", "entity_id", "dimension", "format", "direction",
                                   "track_type", "distractor", "question", "options", "answer", "template",
                                   "anchor_segment", "kept", "drop_reason", "filters"])
    df["options"] = pd.Series([scoring.dumps_options(o) for o in df["options"]], index=df.index, dtype="string")
    for c in ("question_original", "drop_reason"):
        if c in df:
            df[c] = df[c].astype("string")
    if "filters" not in df:
        df["filters"] = None
    df["filters"] = df["filters"].fillna("lexical" if model is None else "lexical+llm")
    df = df.drop(columns=[c for c in ("group",) if c in df])
    if "attribute_sources" in df:
        df["attribute_sources"] = df["attribute_sources"].astype("string")
    cells = Counter(zip(df.loc[df["kept"], "dimension"], df.loc[df["kept"], "format"]))
    return Output(df, metadata={"qa": int(df["kept"].sum()), "dropped": int((~df["kept"]).sum()),
                                "cells": MetadataValue.json({f"{d}.{f}": n for (d, f), n in sorted(cells.items())}),
                                "llm_filters": "on" if model else "off (judge unavailable)"})


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="2")
def narrativetrack_answers(context: AssetExecutionContext, paths: BenchPaths, narrativetrack_video: pd.DataFrame,
                           narrativetrack_qa: pd.DataFrame, judge: Judge,
                           models: ModelRegistry, store: Store) -> Output[pd.DataFrame]:
    """The answerer's answer to every QA of the video (frames sampled uniformly, default 20), strict and lenient
    correctness; unanswered items carry the reason (judge off / replay miss / failure)."""
    name, vid = P.split(context.partition_key)
    answerer = answerer_for(paths, name)
    video = video_row(narrativetrack_video)
    # read from the spill one at a time, each fitted and encoded before the next (never 20 native frames at once)
    frames = frame_view(video, even_indices(int(video["n_frames"]), answerer.frames))
    df = answer_frame(answer_rows(judge, answerer, narrativetrack_qa, frames))
    df["source_sha256"] = video["sha256"]
    df["protocol"] = protocol(models, judge)
    # the slots that built these questions, where not the paper's checkpoint (the board marks every cell with it)
    df["substitute"] = pd.array([board.qa_substitute(models)] * len(df), dtype="string")
    try:  # the answerer's own fingerprint (backend, model, sampling): two endpoints never read as one answerer
        df["answerer_fingerprint"] = json.dumps(judging.answerer_judge(judge, answerer.model, answerer.endpoint())
                                                .fingerprint(), sort_keys=True)
    except ValueError as e:
        df["answerer_fingerprint"] = json.dumps({"error": str(e)})
    st = Counter(df["status"])
    return Output(df, metadata={"answered": int(st.get("ok", 0)), "skipped": int(st.get("skipped", 0)),
                                "failed": int(st.get("failed", 0)),
                                # unanswered items are re-asked when the answerer's endpoint / judge state changes
                                **judge_failure_metadata(df.loc[df.status != "ok", "reason"].dropna(),
                                                         st.get("skipped", 0) + st.get("failed", 0)),
                                "answerer_endpoint": MetadataValue.json({k: v for k, v in answerer.endpoint().items()}),
                                "strict_accuracy": (round(100 * float(df.loc[df.status == "ok", "strict"].mean()), 2)
                                                    if st.get("ok") else "None")}
                  | _explain(df, narrativetrack_qa, name, vid, store))


def _explain(answers: pd.DataFrame, qa_df: pd.DataFrame, answerer: str, video_id: str, store: Store) -> dict:
    """The UI's answer to "why this number" (core/explain.py), strict mode: the board's averages and dimension x
    format cells over this video's questions rounded with coverage and audit links, the questions worst first
    (unanswered, then wrong) and the characters worst first with their canonical crop (page.explain_rows)."""
    from bench_assets.core.explain import artifact_url_fn, explain_metadata
    from bench_assets.core.site import audit_link, report_base_url
    from bench_assets.narrativetrack.page import CHARACTER_COLUMNS, QUESTION_COLUMNS, explain_rows
    registry = None
    if "narrativetrack_entity_registry" in set(store.asset_tables()):
        try:  # the registry partition this video's questions were built from (its crops are stored artifacts)
            reg = store.query("SELECT video_id, entity_id, track_type, crop_id FROM narrativetrack_entity_registry")
            registry = reg[reg["video_id"].astype(str) == str(video_id)]
        except Exception:  # noqa: BLE001 - no preview is no reason to fail the answers
            registry = None
    items, questions, characters = explain_rows(answers, qa_df[qa_df["kept"].astype(bool)], answerer, registry)
    dirs = {s.id: s.direction for s in METRICS.specs}
    link = audit_link(BENCH, answerer, METRICS.specs)
    md = explain_metadata(pd.concat([items, questions], ignore_index=True), benchmark=BENCH, generator=answerer,
                          directions=dirs, audit_url=link, unit_cols=QUESTION_COLUMNS,
                          unit_label="questions; 100 right, 0 wrong, strict", within_metric=False)
    if len(characters):
        per = explain_metadata(characters, benchmark=BENCH, generator=answerer, directions=dirs, audit_url=link,
                               artifact_url=artifact_url_fn(store, report_base_url()) if store.is_local else None,
                               unit_cols=CHARACTER_COLUMNS, unit_label="characters; strict accuracy of their "
                               "questions")
        md["per_character"] = per["per_unit"]
        if "worst_crops" in per:
            md["character_crops"] = per["worst_crops"]
    return md


def leaderboard_table(answers: pd.DataFrame, qas: pd.DataFrame, answerers: list[str],
                      qa_substitute: Optional[str] = None) -> pd.DataFrame:
    """The common board (core/metric_spec.py): per answerer (generator) x mode (slice) every paper cell, the
    average and the slices over the paper's questions, the measured questions under their own ids (board.py);
    the random baseline (generator 'random', baseline=True, one row per mode)."""
    return board_frame(BENCH, board.leaderboard_rows(answers, qas, answerers, qa_substitute), METRICS)


@asset(group_name=GROUP, code_version="2", deps=[narrativetrack_answers, narrativetrack_qa,
                                                  narrativetrack_pipeline_quality],
       automation_condition=board_condition("narrativetrack_qa", "narrativetrack_answers"))
def narrativetrack_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths,
                               models: ModelRegistry, judge: Judge) -> Output[pd.DataFrame]:
    """Accuracy (%) per (dimension x format) cell, the micro-average, slices by direction, track type and distractor
    type over the paper's questions, the measured questions apart (additions), strict and lenient separately, per
    answerer; the random baseline; pipeline quality in the metadata."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    if "narrativetrack_qa" not in tables:
        raise ValueError("no NarrativeTrack QA partition has been materialised yet")
    qas = store.query("SELECT * FROM narrativetrack_qa WHERE kept")
    if "narrativetrack_answers" in tables:
        answers = store.query("SELECT * FROM narrativetrack_answers")
    else:
        answers = pd.DataFrame(columns=ANSWER_COLUMNS)
    table = leaderboard_table(answers, qas, sorted(set(answers["answerer"])), board.qa_substitute(models))
    quality = store.query("SELECT * FROM narrativetrack_pipeline_quality") if \
        "narrativetrack_pipeline_quality" in tables else pd.DataFrame()
    man = manifest(models, judge)
    head = table[table["metric_id"].isin(["accuracy.avg", "measured.avg"])][
        ["generator", "metric_id", "slice", "value", "raw_mean", "coverage", "n_eval", "n_failed",
         "n_failed_evaluator", "substitute", "reason"]]
    return Output(table, metadata={
        "table": MetadataValue.md(board_markdown(table, {"slice": "strict"}, digits=2)),
        "table_lenient": MetadataValue.md(board_markdown(table, {"slice": "lenient"}, digits=2)),
        "avg": MetadataValue.md(head.to_markdown(index=False)),
        "pipeline_quality": MetadataValue.md(quality[["video_id", "metric_id", "value"]].to_markdown(index=False))
        if len(quality) else "none",
        "manifest": MetadataValue.json(man), "protocol_digest": protocol_digest(man)} | report_metadata(store, BENCH))
