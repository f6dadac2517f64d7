"""The NarrativeTrack board as pure functions: answers and questions in, rows of the common schema out
(core/metric_spec.py ``board_row``; the asset wraps them in ``board_frame``).

* generator = the answerer; slice = the scoring mode ("strict", "lenient"), never mixed.
* The paper's cells, the paper's slices and ``accuracy.avg`` read the paper's question types only: Table 2's
  "Avg." is the micro-average over every question (GPT-4o, 20 frames: 714 / 1006 = 70.97, where the mean of its 13
  cells is 69.32), so the average pools questions, not cells. The face-anchored measured questions (measured.py) are
  another construct: their own ids (``measured.*``, additions), never in a paper cell, slice or average.
* Each question of the QA is counted on every row that would read it: answered (``n_eval``), the answerer's failure
  (``n_failed``: invalid output, refusal, unreachable endpoint after retries), the evaluator's (``n_failed_evaluator``:
  replay miss, no key, outage: never final), not evaluated by choice (``n_not_evaluated``: judge off, a slot the
  profile lacks; per question, from its own reason), or not asked yet (``n_skipped``: no answer row). ``value`` =
  correct / (answered + answerer failures), the paper's denominator (every question of the cell; an answer that is
  not one is wrong), so failing on hard questions never ranks higher; ``raw_mean`` = correct / answered;
  coverage = answered / questions. None (with the counts and the reason) when nothing was answered.
* The random baseline is generator "random" (baseline=True), one row per mode (the same expectation beside each
  mode's table, so each slice's view has its reference): the expected accuracy of uniform guessing over the cell's
  questions (binary 50, MC 25 with "None of the above", ordering 1/6), micro-averaged over the actual question mix
  as the answerers are. (The paper's Random row, Avg. 32.69, is the mean of its 13 cell chances; over the paper's
  item counts the micro-average is 36.20.)
"""
from __future__ import annotations

import re
from typing import Iterator, Optional

import pandas as pd

from bench_assets.core.metric_spec import board_row, by_choice, comparability, split_substitutes, substitute_label
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import metric_specs as specs

MODES = ("strict", "lenient")
PAPER, MEASURED = "paper", "measured"
MISSING = "missing"   # status of a question without an answer row (its answers partition not materialised)
_MEASURED_TEMPLATE = re.compile(r"^(EE|EA)\.(binary|mc)\.face\.")
_MEASURED_QA_ID = re.compile(r"\.m\d+$")
RANDOM_REASON = "random baseline (expected accuracy of uniform guessing)"
# slots whose shared paper checkpoint (bench_resources/models/specs.py, YOLOv8x / ArcFace) is not the one the
# NarrativeTrack paper used: a value built on the shared one is still a substitute here (not in constants.py: that
# dict is the protocol manifest, and this changes no computation)
PAPER_CHECKPOINTS = {"person_detector": "Detectron2 Faster R-CNN + OWLv2 ensemble",
                     "face": "dlib face_recognition"}
# a question whose attributes the offline heuristic described (no judge answer): not the paper's MLLM recognition
CONTEXT_HEURISTIC = ("contextual recognition: offline heuristic (box motion, dominant colours), not the paper's "
                     "MLLM")


def question_set(template: Optional[str], qa_id: Optional[str] = None) -> str:
    """"measured" for measured.py's face-anchored questions (templates ``EE.binary.face.*``, ``EE.mc.face.*``,
    ``EA.binary.face.*``; qa ids ending ``.mNN`` where the template is not at hand), else "paper"."""
    if isinstance(template, str) and template:
        return MEASURED if _MEASURED_TEMPLATE.match(template) else PAPER
    return MEASURED if isinstance(qa_id, str) and _MEASURED_QA_ID.search(qa_id) else PAPER


def tag_questions(qas: pd.DataFrame) -> pd.DataFrame:
    """The kept questions with a ``question_set`` column."""
    templates = qas["template"] if "template" in qas else pd.Series([None] * len(qas), index=qas.index)
    return qas.assign(question_set=[question_set(t, q) for t, q in zip(templates, qas["qa_id"])])


def metric_groups(df: pd.DataFrame) -> Iterator[tuple[str, pd.DataFrame]]:
    """(metric id, the rows it reads) for every id of the board, empty groups included (a paper cell without a
    question is None with its reason, not absent). ``df`` has dimension, format, direction, track_type, distractor
    and question_set."""
    paper = df[df["question_set"] == PAPER]
    measured = df[df["question_set"] == MEASURED]
    yield "accuracy.avg", paper
    cells = list(specs.PAPER_CELLS) + sorted(set(zip(paper["dimension"], paper["format"])) - set(specs.PAPER_CELLS))
    for d, f in cells:  # a cell outside the paper's 13 has no spec: board_frame says so rather than drop it
        yield specs.cell_id(d, f), paper[(paper["dimension"] == d) & (paper["format"] == f)]
    for col, known in specs.SLICE_VALUES.items():
        vals = paper[col].fillna("none").astype(str)
        for v in list(known) + sorted(set(vals) - set(known)):
            yield f"accuracy.{col}.{v}", paper[vals == v]
    yield "measured.avg", measured
    for d, f in specs.MEASURED_CELLS:
        yield specs.cell_id(d, f, measured=True), measured[(measured["dimension"] == d) & (measured["format"] == f)]


def _reason(g: pd.DataFrame, counts: dict) -> Optional[str]:
    if counts["n_items"] == 0:
        return "no question of this kind in the QA"
    parts = []
    if counts["n_skipped"]:
        vids = sorted(set(g.loc[g["status"] == MISSING, "video_id"].astype(str)))
        parts.append(f"{counts['n_skipped']} questions not asked yet (videos not answered: {vids[:10]})")
    bad = g[g["status"].isin(["failed", "skipped"])]
    parts += sorted(set(bad["reason"].dropna().astype(str)))
    if counts["n_eval"] == 0:
        parts.insert(0, "no question was answered")
    return "; ".join(parts)[:500] or None


def cell(g: pd.DataFrame, mode: str) -> dict:
    """Counts and values of one (metric, mode) cell from its questions' answer rows (status ok / failed / skipped /
    missing; ``mode`` column True where correct)."""
    st = g["status"]
    ok = st == "ok"
    # a question skipped by choice (judge off, a slot the profile lacks) is not evaluated, per its own reason; any
    # other skip (outage, replay miss, no key) is the evaluator's failure
    choice = (st == "skipped") & (g["reason"].map(by_choice).astype(bool) if "reason" in g else False)
    c = {"n_items": int(len(g)), "n_eval": int(ok.sum()), "n_failed": int((st == "failed").sum()),
         "n_failed_evaluator": int(((st == "skipped") & ~choice).sum()), "n_not_evaluated": int(choice.sum()),
         "n_skipped": int((st == MISSING).sum())}
    correct = int(g.loc[ok, mode].fillna(False).astype(bool).sum())
    scored = c["n_eval"] + c["n_failed"]
    failed_wrong = 100.0 * correct / scored if scored else None
    value = failed_wrong if c["n_eval"] else None  # nothing answered: None, never a 0 made of failures
    return {**c, "value": value, "raw_mean": (100.0 * correct / c["n_eval"]) if c["n_eval"] else None,
            "coverage": c["n_eval"] / c["n_items"] if c["n_items"] else None, "reason": _reason(g, c),
            "detail": {"correct": correct, "value_failed_wrong": failed_wrong}}


def _protocols(g: pd.DataFrame) -> list[str]:
    return sorted(set(g["protocol"].dropna().astype(str))) if "protocol" in g else []


def context_mark(sources: Optional[str]) -> Optional[str]:
    """The mark of a question whose gold attributes come from the offline heuristic instead of the paper's MLLM
    contextual recognition (its ``attribute_sources`` say so, per question)."""
    return CONTEXT_HEURISTIC if isinstance(sources, str) and "offline heuristic" in sources else None


def _with_context(labels, sources) -> list[Optional[str]]:
    return [distinct_labels([lab, context_mark(src)]) for lab, src in zip(labels, sources)]


def answer_rows_for(answers: pd.DataFrame, qas: pd.DataFrame, answerer: str) -> pd.DataFrame:
    """Every kept question with this answerer's answer row (status MISSING where it has none); an answer to a
    question no longer in the QA is left out (the QA was rebuilt since). ``substitute``: the answer row's slot
    mark and the question's contextual-recognition mark."""
    q = tag_questions(qas)
    a = answers[answers["answerer"] == answerer].drop_duplicates("qa_id", keep="last")
    keep = ["qa_id", "status", "reason", "strict", "lenient"] + [c for c in ("protocol", "substitute") if c in a]
    merged = q.merge(a[keep], on="qa_id", how="left", suffixes=("_qa", ""))
    merged["status"] = merged["status"].astype(object).where(merged["status"].notna(), MISSING)
    labels = merged["substitute"] if "substitute" in merged else [None] * len(merged)
    answered = merged["status"] != MISSING  # a question without an answer row produced no value to mark
    merged["substitute"] = [lab if ok else None for lab, ok in
                            zip(_with_context(labels, _sources(merged)), answered)]
    return merged


def _sources(df: pd.DataFrame) -> list:
    return list(df["attribute_sources"]) if "attribute_sources" in df else [None] * len(df)


def leaderboard_rows(answers: pd.DataFrame, qas: pd.DataFrame, answerers: list[str],
                     qa_substitute: Optional[str] = None) -> list[dict]:
    """Board rows (core ``board_row``) for every answerer x mode x metric, then the random baseline. ``answers``:
    the answers table (answerer, qa_id, status, reason, strict, lenient, and protocol / substitute where present);
    ``qas``: the kept questions; ``qa_substitute``: the substitute label of the slots that built these questions
    (for the random rows; answer rows carry their own)."""
    rows, records = [], []
    for a in answerers:
        merged = answer_rows_for(answers, qas, a)
        for mid, g in metric_groups(merged):
            protos = _protocols(g)
            records += [{"generator": a, "metric_id": mid, "protocol": p} for p in protos]
            sub = distinct_labels(g["substitute"]) if "substitute" in g else None
            for mode in MODES:
                c = cell(g, mode)
                rows.append(board_row(a, mid, mode, c.pop("value"), protocol="+".join(protos) or None,
                                      substitute=sub, baseline=False, **c))
    comp = comparability(pd.DataFrame(records, columns=["generator", "metric_id", "protocol"]))
    flag = {(r.generator, r.metric_id): bool(r.comparable) for r in comp.itertuples()}
    for r in rows:
        r["comparable"] = flag.get((r["generator"], r["metric_id"]))
    return rows + random_rows(qas, qa_substitute)


def random_rows(qas: pd.DataFrame, substitute: Optional[str] = None) -> list[dict]:
    """The random baseline: generator "random", baseline=True, one row per mode and metric."""
    df = tag_questions(qas)
    df = df.assign(_chance=df["format"].map(constants.RANDOM_BASELINE),
                   _substitute=_with_context([substitute] * len(df), _sources(df)))
    rows = []
    for mid, g in metric_groups(df):
        n = int(len(g))
        value = float(g["_chance"].mean()) if n else None
        for mode in MODES:
            rows.append(board_row("random", mid, mode, value, raw_mean=value, coverage=1.0 if n else None,
                                  n_items=n, n_eval=n, n_skipped=0, n_failed=0, n_failed_evaluator=0,
                                  reason=RANDOM_REASON if n else "no question of this kind in the QA",
                                  substitute=distinct_labels(g["_substitute"]), baseline=True, comparable=True,
                                  detail={"expected": "uniform guessing"}))
    return rows


# ----------------------------------------------------------------------------- substitutes

def _checkpoint_needs(slot: str, checkpoint: str) -> tuple[str, ...]:
    from bench_resources.models.specs import SLOTS
    spec = SLOTS.get(slot)
    if spec is None:
        return ()
    for c in (spec.paper, spec.offline, *spec.alternatives.values()):
        if c is not None and c.name == checkpoint:
            return tuple(c.needs)
    return ()


def qa_slots(models) -> tuple[str, ...]:
    """The slots that build the questions in this registry: detector (and a configured second one), ReID, face,
    and whatever the ReID checkpoint in use is built on (the offline ReID runs on the image embedder)."""
    slots = ["person_detector", "reid", "face"] + ([constants.SECOND_DETECTOR] if constants.SECOND_DETECTOR else [])
    reid = models.status("reid")
    for dep in _checkpoint_needs("reid", reid.checkpoint):
        if dep not in slots:
            slots.append(dep)
    return tuple(slots)


def qa_substitute(models) -> Optional[str]:
    """The substitute mark of every value built on these questions: each slot in use whose checkpoint is not the
    paper's (core ``substitute_label``), and, for slots whose shared paper checkpoint is not NarrativeTrack's (its
    detector is Detectron2 Faster R-CNN + OWLv2, its faces dlib), the shared checkpoint named with the paper's."""
    from bench_resources.models.specs import SLOTS
    slots = qa_slots(models)
    parts = [substitute_label(slots, models)]
    for slot, paper in PAPER_CHECKPOINTS.items():
        if slot not in slots or slot not in SLOTS:
            continue
        st = models.status(slot)
        if st.available and st.checkpoint == SLOTS[slot].paper.name:
            parts.append(f"{slot}: {st.checkpoint} (NarrativeTrack paper: {paper})")
    return distinct_labels(parts)


def distinct_labels(values) -> Optional[str]:
    """The distinct 'slot: checkpoint' parts of a cell's labels, '; '-joined in order; None when no row has one.
    (Core ``join_substitutes`` sorts the parts; here the order of the slots is kept.)"""
    seen: list[str] = []
    for v in values:
        if isinstance(v, str) and v:
            for part in split_substitutes(v):
                if part not in seen:
                    seen.append(part)
    return "; ".join(seen) or None
