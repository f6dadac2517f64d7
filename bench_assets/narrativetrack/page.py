"""NarrativeTrack's page on the report site (core/page.py): accuracy by dimension x format (a heatmap per
answerer and mode), the average against the random baseline, each input video's frames, and the audit rows: one
per question, the answerer's answer and whether it was right (strict), under the cell that reads it (the paper's
cells read the paper's questions only; the measured additions theirs)."""
from __future__ import annotations

import json
import os
import re
from typing import Optional

import pandas as pd

from bench_assets.core import report as charts
from bench_assets.core import site
from bench_assets.core.page import BenchmarkPage, PageContext
from bench_assets.narrativetrack.board import MEASURED, PAPER, question_set

DIMENSION_ORDER = ("EE", "AC", "OC", "SC", "EA")
FORMAT_ORDER = ("binary", "mc", "ordering")
CELL = re.compile(r"^accuracy\.([A-Z]{2})\.([a-z]+)$")
SLICE_COLUMNS = ("direction", "track_type", "distractor")


def sections(ctx: PageContext) -> list[dict]:
    heat, avg = [], []
    paper = ctx.paper()
    for mode, part in paper.groupby("slice", sort=False):
        for gen, p in part.groupby("generator"):
            vals, marks, tips = {}, {}, {}
            for mid, v, sub in zip(p["metric_id"], p["value"], p["substitute"]):
                m = CELL.match(str(mid))
                if m:
                    vals[m.groups()] = None if site.is_none(v) else float(v)
                    if sub and not site.is_none(v):  # a substitute model built the questions: marked, named
                        marks[m.groups()], tips[m.groups()] = "*", f"; substitute: {sub}"
            if not vals:
                continue
            rows = [d for d in DIMENSION_ORDER if any(k[0] == d for k in vals)]
            rows += sorted({k[0] for k in vals} - set(rows))
            cols = [f for f in FORMAT_ORDER if any(k[1] == f for k in vals)]
            cols += sorted({k[1] for k in vals} - set(cols))
            heat.append(charts.heatmap_svg(rows, cols, vals, title=f"{gen} ({mode})", vmax=100.0, marks=marks,
                                           tips=tips))
        a = part[part["metric_id"] == "accuracy.avg"]
        avg.append(site.chart_or_note(site.bar_rows(a, "slice"), ctx.order, title=f"average accuracy ({mode})",
                                      scale=(0.0, 100.0), width=520))
    return [{"title": "Accuracy by dimension and format", "note": "Rows: dimensions (EE, AC, OC, SC, EA); "
             "columns: formats; grey: no item of that kind. None: no question was answered; *: a substitute model "
             "built the questions (which: the legend under the leaderboard). The paper's questions only (the "
             "measured additions are apart, below).",
             "charts": heat or ['<p class="none">not evaluated</p>']},
            {"title": "Average accuracy against the random baseline", "note": "Table 2's Avg.: the micro-average "
             "over every paper question; 'random' is the expected accuracy of uniform guessing.", "charts": avg}]


def frame_galleries(ctx: PageContext) -> list[dict]:
    """Frames of the input videos (the answerers answer about them; they generate nothing)."""
    out = []
    df = ctx.reader.table("narrativetrack_video")
    if df is None or not {"video_id", "path"} <= set(df.columns):
        return out
    for r in df.sort_values("video_id").head(2).itertuples():
        imgs = [{"src": os.path.relpath(p, ctx.out_dir), "caption": f"frame {i}"}
                for p, i in site.thumbnails(str(r.path), ctx.out_dir, n=8)]
        if imgs:
            out.append({"title": f"input video {r.video_id}", "kind": "frame", "images": imgs})
    return out


def audit_rows(reader, tables) -> Optional[pd.DataFrame]:
    """Answers as audit rows: value = strict correctness (1/0) of an answered question, None otherwise (with the
    answer row's reason); the detail is the question, the expected and the given answer."""
    ans = reader.table("narrativetrack_answers")
    if ans is None:
        return None
    status = site.col(ans, "status").astype("string")
    strict = site.col(ans, "strict")
    value = [None if s != "ok" or site.is_none(v) else float(bool(v)) for s, v in zip(status, strict)]
    detail = []
    for r in ans.to_dict("records"):
        keep = {k: r.get(k) for k in ("question", "qa_id", "dimension", "format", "direction", "track_type",
                                      "distractor", "answer", "expected", "strict", "lenient", "raw", "raw_answer")
                if k in r and not site.is_none(r.get(k))}
        detail.append(json.dumps(keep, default=str, sort_keys=True))
    gen = site.col(ans, "generator") if "generator" in ans.columns else site.col(ans, "answerer")
    templates = site.col(ans, "template")
    return pd.DataFrame({
        "generator": gen.astype("string"), "item": site.col(ans, "video_id").astype("string"),
        "level": "question", "metric_id": "accuracy", "value": value, "n_eval": None, "n_failed": None,
        "n_skipped": None, "shot": None, "frame_index": None, "entity_id": site.col(ans, "qa_id"),
        "reason": site.col(ans, "reason"), "crop_id": None, "source_sha256": site.col(ans, "source_sha256"),
        "detail": detail, "dimension": site.col(ans, "dimension"), "format": site.col(ans, "format"),
        "direction": site.col(ans, "direction"), "track_type": site.col(ans, "track_type"),
        "distractor": site.col(ans, "distractor"),
        "question_set": [question_set(None if site.is_none(t) else t, None if site.is_none(q) else q)
                         for t, q in zip(templates, site.col(ans, "qa_id"))]})


# ----------------------------------------------------------------------------- the UI's metadata (core/explain.py)
EXPLAINED = re.compile(r"^(accuracy|measured)\.(avg|[A-Z]{2}\.[a-z]+)$")   # the averages and the dimension x format cells
QUESTION_COLUMNS = ("qa_id", "entity_id", "dimension", "format", "expected", "answer")
CHARACTER_COLUMNS = ("entity_id", "track_type", "answered", "crop_id")


def explain_rows(answers: pd.DataFrame, qas: pd.DataFrame, answerer: str,
                 registry: Optional[pd.DataFrame] = None) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """What one (answerer, video) partition's metadata explains, strict mode (the board's main slice; lenient is
    never mixed in): the board's own cells over this video's questions (``board.leaderboard_rows``: the averages
    and the dimension x format cells this video has questions for, level 'item'), one row per question (100 right, 0 wrong, None unanswered
    with the answer's reason) and one per character (its questions' strict accuracy, its canonical crop from
    ``registry``). Question and character rows carry the average of their question set as metric id
    (``accuracy.avg``: the paper's questions, ``measured.avg``: the measured addition), whose audit page lists them."""
    from bench_assets.narrativetrack import board as B
    rows = [r for r in B.leaderboard_rows(answers, qas, [answerer])
            if r["generator"] == answerer and r["slice"] == "strict" and EXPLAINED.match(str(r["metric_id"]))
            and r.get("n_items")]   # a cell with no question on this video explains nothing here
    items = pd.DataFrame(rows).assign(level="item") if rows else pd.DataFrame(columns=["metric_id", "level"])
    merged = B.answer_rows_for(answers, qas, answerer)
    raw = dict(zip(answers["qa_id"].astype(str), answers["raw_answer"])) if "raw_answer" in answers else {}
    status = merged["status"].astype(str)
    strict = [None if st != "ok" or site.is_none(v) else 100.0 * bool(v) for st, v in zip(status, merged["strict"])]
    mid = ["accuracy.avg" if q == PAPER else "measured.avg" for q in merged["question_set"]]
    questions = pd.DataFrame({
        "metric_id": mid, "level": "question", "qa_id": merged["qa_id"].astype(str),
        "entity_id": site.col(merged, "entity_id"), "dimension": site.col(merged, "dimension"),
        "format": site.col(merged, "format"), "expected": site.col(merged, "answer"),
        "answer": [None if site.is_none(raw.get(str(q))) else raw.get(str(q)) for q in merged["qa_id"]],
        "value": pd.array(strict, dtype="Float64"),
        "reason": [None if v is not None else (r if not site.is_none(r) else f"not answered ({st})")
                   for v, r, st in zip(strict, site.col(merged, "reason"), status)]})
    crops, types = {}, {}
    if registry is not None and len(registry) and "entity_id" in registry:
        crops = dict(zip(registry["entity_id"].astype(str), site.col(registry, "crop_id")))
        types = dict(zip(registry["entity_id"].astype(str), site.col(registry, "track_type")))
    chars = []
    about = questions[questions["entity_id"].notna()]
    for (m, ent), g in about.groupby(["metric_id", "entity_id"], sort=True):
        ok = g["value"].dropna()
        chars.append({"metric_id": m, "level": "character", "entity_id": str(ent),
                      "track_type": types.get(str(ent)), "answered": f"{len(ok)}/{len(g)}",
                      "crop_id": crops.get(str(ent)), "value": float(ok.mean()) if len(ok) else None,
                      "reason": None if len(ok) else f"none of its {len(g)} questions answered: "
                      f"{g['reason'].dropna().astype(str).iloc[0] if g['reason'].notna().any() else 'no answer'}"})
    characters = pd.DataFrame(chars, columns=["metric_id", "level", "entity_id", "track_type", "answered", "crop_id",
                                              "value", "reason"])
    return items, questions, characters


def rows_for(index: site.RowIndex, metric_id: str, generator: str) -> pd.DataFrame:
    """The questions a cell reads: ``accuracy.*`` the paper's, ``measured.*`` the measured ones; ``.avg`` all of
    its set, ``<dim>.<format>`` one cell, ``<slice column>.<value>`` one slice."""
    mine = index.generator_rows(generator)
    parts = str(metric_id).split(".")
    if mine.empty or parts[0] not in ("accuracy", "measured") or len(parts) < 2:
        return mine.iloc[0:0]
    mine = mine[mine["question_set"] == (PAPER if parts[0] == "accuracy" else MEASURED)]
    if parts[1] == "avg":
        return mine
    if len(parts) == 3 and parts[1] in SLICE_COLUMNS:
        return mine[mine[parts[1]].fillna("none").astype(str) == parts[2]]
    if len(parts) == 3:
        return mine[(mine["dimension"] == parts[1]) & (mine["format"] == parts[2])]
    return mine.iloc[0:0]


PAGE = BenchmarkPage(
    name="narrativetrack", title="NarrativeTrack",
    about="Video MLLMs answering entity-centric QA: accuracy in % per dimension x format, strict and lenient "
          "never mixed; 'random' is the expected accuracy of uniform guessing. The face-anchored measured "
          "questions are an addition, shown apart.",
    leaderboard="narrativetrack_leaderboard", headline=("accuracy.avg",), item_label="video", item_column="video_id",
    slice_label="mode",
    gallery_tables=("narrativetrack_frames",), scale_note="accuracy %", sections=sections,
    frame_galleries=frame_galleries, audit_rows=audit_rows, rows_for=rows_for)
