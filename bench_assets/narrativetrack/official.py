"""NarrativeTrack answers in the official pipeline's format, out and in (issue 35).

The official evaluation (GitHub ``apple/ml-narrativetrack`` 8591344, ``eval_pipeline.py --task eval``) writes
``<save_dir>/<model_name>-eval.json``: a list, one record per released QA, ``{**qa_pair, "model_response": <the
model's reply: a JSON string or object with "answer">, "correct": 0|1, "prompt": ...}``, where ``qa_pair`` is the
released ``narrativetrack_qa.json`` record (video_path, question, answer, question_type, dimension, track_type,
template_type, ...); its ``--task get_acc`` (``get_accuracy``) reads the file back.

``read_results`` imports such a file as an answerer: each reply's answer is taken out as ``get_accuracy`` takes it
(a ```json fence stripped, ``json.loads(...)['answer']``, else the bare text), then scored by this platform's own
strict and lenient parsers against the released gold (scoring.score), and the board rows are the same cells our
answerers get (board.leaderboard_rows). The file's own ``correct`` is kept per question and as the overall
``official_accuracy`` (their exact-substring rule, not one of our metrics). ``export`` writes our released-QA
answers back in that format. Pure: records in, records out.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from bench_assets.narrativetrack import dataset, scoring

RESULTS_CODE = "apple/ml-narrativetrack eval_pipeline.py"
QA_FIELDS = ("video_path", "question", "answer", "question_type", "dimension", "track_type", "template_type")
EVAL_SUFFIX = "-eval.json"


def reply_answer(response: Any) -> Optional[str]:
    """The answer text of one ``model_response`` as the official get_accuracy takes it out (None: no reply)."""
    if response is None:
        return None
    if isinstance(response, dict):
        a = response.get("answer")
        return None if a is None else str(a)
    text = re.sub(r"```json|```", "", str(response)).strip()
    try:
        obj = json.loads(text)
        if isinstance(obj, dict) and "answer" in obj:
            return str(obj["answer"])
    except json.JSONDecodeError:
        pass
    m = re.search(r'"answer"\s*:\s*"([^"]+)"', text)
    return m.group(1) if m else text


def model_name(path: Path) -> str:
    return path.name[:-len(EVAL_SUFFIX)] if path.name.endswith(EVAL_SUFFIX) else path.stem


def _qa(r: dict, i: int, source: str) -> dict:
    """One record's released-QA fields as our QA record (dataset.load_released_qa's reading, per record so one bad
    record is named and the others still score)."""
    missing = [k for k in ("video_path", "question", "answer", "question_type", "dimension") if k not in r]
    if missing:
        raise ValueError(f"{source}: record {i} lacks {missing}")
    dim = dataset._DIM_ALIASES.get(str(r["dimension"]).strip().lower().replace(" ", "_"))
    fmt = dataset._FMT_ALIASES.get(str(r["question_type"]).strip().lower())
    if dim is None or fmt is None:
        raise ValueError(f"{source}: record {i}: unknown dimension {r['dimension']!r} or question_type "
                         f"{r['question_type']!r}")
    gold = scoring.strict_parse(r["answer"], fmt) or scoring.lenient_parse(r["answer"], fmt)
    if gold is None:
        raise ValueError(f"{source}: record {i}: answer {r['answer']!r} is not a {fmt} answer")
    return {"qa_id": f"released_{i:04d}", "video_id": Path(str(r["video_path"])).stem, "video_path": r["video_path"],
            "dimension": dim, "format": fmt, "direction": r.get("template_type"), "track_type": r.get("track_type"),
            "distractor": r.get("distractor_type"), "question": r["question"], "options": None, "answer": gold,
            "answer_published": str(r["answer"]), "kept": True}


def answers_from_eval(records: list[dict], answerer: str, source: str) -> tuple[pd.DataFrame, pd.DataFrame,
                                                                                  list[str]]:
    """(our QA records, our answers table rows, problems) from the official eval records. A record whose QA
    fields cannot be read is a problem naming it; the others are scored."""
    from bench_assets.narrativetrack.answering import answer_frame
    qas, answers, problems = [], [], []
    for i, r in enumerate(records):
        if not isinstance(r, dict):
            problems.append(f"{source}: record {i}: not an object")
            continue
        try:
            qa = _qa(r, i, source)
        except ValueError as e:
            problems.append(str(e))
            continue
        qas.append(qa)
        raw = reply_answer(r.get("model_response", r.get("model_answer")))
        row = {"qa_id": qa["qa_id"], "video_id": qa["video_id"], "entity_id": None, "dimension": qa["dimension"],
               "format": qa["format"], "direction": qa["direction"], "track_type": qa["track_type"],
               "distractor": qa["distractor"], "answerer": answerer, "model": answerer, "backend": "imported",
               "cache_key": None, "raw_answer": raw, "strict": None, "lenient": None, "parsed_strict": None,
               "parsed_lenient": None}
        if raw is None:
            # the official pipeline's own failure to get a reply: counted as the answerer's failure, as theirs is
            row.update(status="failed", reason=f"{qa['qa_id']}: no model_response in the official file")
        else:
            row.update(status="ok", reason=None, **scoring.score(raw, qa["answer"], qa["format"], None))
        answers.append(row)
    return pd.DataFrame(qas), answer_frame(answers), problems


def read_results(path: str | Path, known: set[str]) -> tuple[str, list[dict], list[str], dict]:
    """``<model>-eval.json`` -> (model, imported rows, problems, info)."""
    from bench_assets.core.imported_results import row
    from bench_assets.narrativetrack import board
    p = Path(path)
    try:
        records = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{p}: not a readable JSON file ({type(e).__name__})") from None
    if not isinstance(records, list):
        raise ValueError(f"{p}: expected the list eval_pipeline.py writes, got {type(records).__name__}")
    name = model_name(p)
    qas, answers, problems = answers_from_eval(records, name, p.name)
    if qas.empty:
        raise ValueError(f"{p}: no readable QA record" + (f" ({'; '.join(problems[:3])})" if problems else ""))
    rows = []
    for qa, a in zip(qas.itertuples(), answers.itertuples()):
        c = records[int(qa.qa_id.split("_")[1])].get("correct")
        rows.append(row("item", "correct", c if isinstance(c, (int, float)) else None, item=qa.qa_id,
                        slice=qa.dimension, note=f"{qa.video_id}: {qa.question[:80]}"))
        for mode in ("strict", "lenient"):
            v = getattr(a, mode)
            rows.append(row("item", f"scored.{mode}", None if pd.isna(v) else float(bool(v)), item=qa.qa_id,
                            slice=mode, note="their answer, scored by this platform's parser"))
    corr = [r.get("correct") for r in records if isinstance(r, dict) and isinstance(r.get("correct"), (int, float))]
    rows.append(row("overall", "official_accuracy", sum(corr) / len(corr) if corr else None, slice="official",
                    n_eval=len(corr), note="the file's own 'correct' (exact substring rule of eval_pipeline.py)"))
    for b in board.leaderboard_rows(answers, qas, [name]):
        if b["generator"] != name or b["metric_id"] not in known:
            continue
        rows.append(row("overall", b["metric_id"], b.get("value"), slice=b.get("slice"), metric_id=b["metric_id"],
                        n_eval=b.get("n_eval"), n_failed=b.get("n_failed"), n_skipped=b.get("n_skipped"),
                        note="their answers scored as one of our answerers, on the released QA"))
    return name, rows, problems, {"questions": len(qas)}


def export(answers: pd.DataFrame, qas: pd.DataFrame, answerer: str) -> dict[str, list[dict]]:
    """Our answers on the released QA as ``<answerer>-eval.json``. ``qas``: the released QA table (qa_id,
    video_path, question, answer_published, format, dimension, track_type, direction); ``answers``: the released
    answers table. ``correct`` is our strict score (the platform's own parser), None where the answerer gave no
    reply; the published gold answer and question type are written back as the release spells them."""
    fmt_name = {"binary": "binary", "mc": "multiple_choice", "ordering": "ordering"}
    sub = answers[answers["answerer"] == answerer].set_index("qa_id")
    if sub.empty:
        raise ValueError(f"no released-QA answers for answerer {answerer!r}")
    out = []
    for q in qas.sort_values("qa_id").itertuples():
        if q.qa_id not in sub.index:
            continue
        a = sub.loc[q.qa_id]
        ok = a["status"] == "ok" and isinstance(a["raw_answer"], str)
        out.append({"video_path": q.video_path, "question": q.question, "answer": q.answer_published,
                    "question_type": fmt_name.get(q.format, q.format), "dimension": q.dimension,
                    "track_type": q.track_type, "template_type": q.direction,
                    "model_response": json.dumps({"answer": a["raw_answer"]}) if ok else None,
                    "correct": (int(bool(a["strict"])) if ok and not pd.isna(a["strict"]) else None),
                    "prompt": None})
    return {f"{answerer}{EVAL_SUFFIX}": out}
