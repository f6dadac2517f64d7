"""Asking an answerer (a video MLLM) the kept QA of a video and scoring its answers: shared by the video answers,
the released-QA answers and the episode QA (bridges/), so none of them imports the assets module."""
from __future__ import annotations

import json
from typing import Optional, Sequence

import numpy as np
import pandas as pd
from dagster import Failure

from bench_assets.core.generators import read_generator
from bench_assets.narrativetrack import constants, dataset, judging, qa, scoring
from bench_resources.judge import Judge, png_bytes
from bench_resources.paths import BenchPaths

BENCH = constants.BENCH


def answerer_for(paths: BenchPaths, name: str) -> dataset.Answerer:
    info = read_generator(paths.generator_dir(name))
    if info.benchmark != BENCH:
        raise Failure(f"generator {name!r} is a {info.benchmark} generator, not a NarrativeTrack answerer")
    try:
        return dataset.answerer_from_card(name, info.card)
    except dataset.DatasetError as e:
        raise Failure(str(e)) from None


def card_problem(info) -> Optional[str]:
    """Why a NarrativeTrack generator card cannot answer (one line naming the answerer and the field), None when
    it can: checked when the card is read (`bench evaluate`), before any video is processed, so a card without a
    ``model`` is one error, never minutes of work ending in a failure per video."""
    try:
        dataset.answerer_from_card(info.name, info.card)
    except dataset.DatasetError as e:
        return str(e)
    return None


def options_of(value) -> Optional[dict]:
    """The options column (JSON text; null for binary questions) as a dict or None."""
    return json.loads(value) if isinstance(value, str) and value else None


def question_columns(r, answerer: str, model, backend) -> dict:
    """The columns an answer row starts with, whatever became of the question: the QA's and the answerer's."""
    return {"qa_id": r.qa_id, "video_id": r.video_id, "entity_id": getattr(r, "entity_id", None),
            "dimension": r.dimension, "format": r.format, "direction": r.direction, "track_type": r.track_type,
            "distractor": r.distractor, "answerer": answerer, "model": model, "backend": backend}


def answer_rows(judge: Judge, answerer: dataset.Answerer, qas: pd.DataFrame,
                frames: Sequence[np.ndarray]) -> list[dict]:
    """Ask the answerer every kept QA (its frames sampled uniformly), score strict and lenient."""
    qas = qas[qas["kept"].astype(bool)]
    try:
        ans_judge = judging.answerer_judge(judge, answerer.model, answerer.endpoint())
        ok, why = ans_judge.available()
    except ValueError as e:
        ans_judge, ok, why = None, False, str(e)
    rows = []
    base = lambda r: question_columns(r, answerer.name, answerer.model, answerer.backend)  # noqa: E731
    recs = list(qas.itertuples())
    if not ok:
        return [{**base(r), "status": "skipped", "reason": f"no answerer reachable: {why}", "raw_answer": None,
                 "strict": None, "lenient": None, "parsed_strict": None, "parsed_lenient": None, "cache_key": None}
                for r in recs]
    pngs = [png_bytes(judging.fit(f, answerer.image_size)) for f in frames]
    reqs = [judging.answer_request(pngs, qa.prompt_text({"question": r.question, "format": r.format,
                                                    "options": options_of(r.options)}), r.qa_id) for r in recs]
    for r, res in zip(recs, ans_judge.ask_many(reqs)):
        row = {**base(r), "status": res.status, "reason": res.reason, "cache_key": res.cache_key,
               "raw_answer": None, "strict": None, "lenient": None, "parsed_strict": None, "parsed_lenient": None}
        if res.status == "ok":
            opts = options_of(r.options)
            raw = res.answer.get("answer")
            try:
                row.update(raw_answer=str(raw), **scoring.score(raw, r.answer, r.format, opts))
            except ValueError as e:  # a gold answer that is not an answer: the item fails, it is not a zero
                row.update(status="failed", reason=f"{r.qa_id}: {e}", raw_answer=str(raw))
        rows.append(row)
    return rows


ANSWER_COLUMNS = ["qa_id", "video_id", "entity_id", "dimension", "format", "direction", "track_type", "distractor",
                  "answerer", "model", "backend", "status", "reason", "raw_answer", "strict", "lenient", "parsed_strict",
                  "parsed_lenient", "cache_key"]
# explicit types: a partition whose column is all null must still union with the others (DuckDB reads them together)
ANSWER_TYPES = {**{c: "string" for c in ANSWER_COLUMNS}, "strict": "boolean", "lenient": "boolean"}


def answer_frame(rows: list[dict]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=ANSWER_COLUMNS).astype(ANSWER_TYPES)
