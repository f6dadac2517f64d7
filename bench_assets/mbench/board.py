"""MBench board maths (pure): the trigger-conditioned M-Score of every sub-dimension per generator and mode, the
dimension M-Scores, and the rows of the one board schema (core/metric_spec.py ``board_frame``).

Per (generator, mode, sub-dimension k) over the N cases of the mode that k applies to (paper Eq. 1-3):
- C_k = triggered cases / N (an A case is triggered by its actions; a case whose output video is missing never
  entered the challenge: not triggered, and counted as the generator's failure);
- S_k = (1 / N_trig) x the sum of the scores of the triggered cases: every triggered case is in the denominator, so a
  triggered case the generator left without a score (the face lost, the target never back in view, a video shorter
  than its action schedule) counts 0. The mean over the scored cases only is kept in ``detail`` as
  ``reliability_observed`` (ours, not a ranking value);
- M_k = 100 x 2 S_k C_k / (S_k + C_k), 0 when nothing triggered.
A cell is None with its reason while anything it needs is unknown: a case not evaluated, a T trigger the judge did
not answer, or a triggered case whose score is missing for the evaluator's reason (a model slot, the judge): an
evaluator's gap is never final and never a zero.

Board columns: ``slice`` = mode (A, T: separate leaderboards in the paper), ``value`` = M_k, ``raw_mean`` = 100 S_k,
``coverage`` = cases scored / cases k applies to (not the paper's C_k, which is ``detail.trigger_coverage``),
``detail`` = cases, triggered, scored, trigger_coverage C_k, reliability S_k, reliability_observed, ...
"""
from __future__ import annotations

import json
from typing import Iterable, Mapping, Optional

import numpy as np
import pandas as pd

from bench_assets.core.metric_spec import (all_parts, board_frame, board_row, by_choice, comparability,
                                          join_substitutes)
from bench_assets.mbench import metrics
from bench_assets.mbench.metric_specs import ADDITION_SUBS, ADDITION_SUBSETS, METRICS, board_id

MODES = ("A", "T")
SUBS = tuple(metrics.ALL_METRICS) + tuple(ADDITION_SUBS)
SCORE_COLUMNS = ["generator", "case_id", "metric_id", "value", "reason", "triggered", "trigger_reason", "protocol",
                 "n_failed", "n_failed_evaluator", "substitute"]


TRANSLATIONS = frozenset(a for a, t in metrics.IDEAL_TWIST.items() if any(t[:3]))


def case_motion(mode: str, frame_actions: list[str]) -> dict:
    """What an A case's schedule asks of the camera: ``moves`` (any transition outside the wait phase) and
    ``translates`` (a translation among them). T cases: both True (their camera instructions are free text)."""
    if mode != "A":
        return {"moves": True, "translates": True}
    return {"moves": any(a != "wait" for a in frame_actions),
            "translates": any(a in TRANSLATIONS for a in frame_actions)}


def applicable_cases(cases: pd.DataFrame, mode: str, sub: str) -> pd.DataFrame:
    """The cases of ``mode`` that sub-dimension ``sub`` applies to: its subset; text instruction every T case,
    action instruction every A case whose schedule moves the camera (an all-wait schedule has no twist to follow);
    reprojection needs a baseline, so an A case whose schedule only rotates is not one of its cases (spec: rotation-
    only pairs skip reprojection), for every generator alike. Anything else a triggered case lacks counts 0."""
    mine = cases[cases["mode"] == mode]
    if sub == "text_instruction":
        return mine if mode == "T" else mine.iloc[0:0]
    if sub == "action_instruction":
        return _where(mine, "moves") if mode == "A" else mine.iloc[0:0]
    subsets = [ADDITION_SUBSETS[sub]] if sub in ADDITION_SUBSETS else \
        [s for s, ms in metrics.SUBSET_METRICS.items() if sub in ms]
    mine = mine[mine["subset"].isin(subsets)]
    return _where(mine, "translates") if sub == "reprojection" and mode == "A" else mine


def _where(cases: pd.DataFrame, column: str) -> pd.DataFrame:
    """The cases whose flag is set (a case table without the column: all of them)."""
    if column not in cases or cases.empty:
        return cases
    return cases[cases[column].map(lambda v: True if _none(v) else bool(v))]


def classify(row: Optional[Mapping], output_missing: bool) -> str:
    """One case of one cell: 'missing' (no output video), 'not_evaluated' (no score row), 'trigger_unknown',
    'not_triggered', 'scored', 'evaluator' (triggered, no score: a slot or the judge failed) or 'no_value'
    (triggered, no score from this output: counts 0 in S)."""
    if row is None:
        return "missing" if output_missing else "not_evaluated"
    trig = row.get("triggered")
    if trig is None or (isinstance(trig, float) and np.isnan(trig)) or trig is pd.NA:
        return "trigger_unknown"
    if not bool(trig):
        return "not_triggered"
    if not _none(row.get("value")):
        return "scored"
    return "evaluator" if (row.get("n_failed_evaluator") or 0) > 0 else "no_value"


def _none(v) -> bool:
    return v is None or v is pd.NA or (isinstance(v, float) and np.isnan(v))


def cell(rows: pd.DataFrame, applicable: pd.DataFrame, missing: Iterable[str] = (), mode: str = "A") -> dict:
    """The M-Score cell of one (generator, mode, sub-dimension) from its per-case score rows (one per case at most)
    and the applicable cases; ``missing``: case ids whose output video the generator did not deliver."""
    missing = set(missing)
    by_case = {r["case_id"]: r for r in rows.to_dict("records")}
    kinds = {c: classify(by_case.get(c), c in missing) for c in applicable["case_id"]}
    count = {k: sum(v == k for v in kinds.values()) for k in
             ("missing", "not_evaluated", "trigger_unknown", "not_triggered", "scored", "evaluator", "no_value")}
    total = len(kinds)
    values = [float(np.clip(by_case[c]["value"], 0, 1)) for c, k in kinds.items() if k == "scored"]
    n_trig = count["scored"] + count["evaluator"] + count["no_value"]
    gen_failed = count["missing"] + sum(1 for c, k in kinds.items() if k == "no_value"
                                        and (by_case[c].get("n_failed") or 0) > 0)
    reasons = sorted({str(by_case[c]["reason"]) for c, k in kinds.items()
                      if k in ("evaluator", "no_value") and not _none(by_case[c].get("reason"))}
                     | {str(by_case[c]["trigger_reason"]) for c, k in kinds.items()
                        if k == "trigger_unknown" and not _none(by_case[c].get("trigger_reason"))})
    for kind, text in (("missing", "no output video (not triggered)"), ("not_evaluated", "cases not evaluated")):
        ids = sorted(c for c, k in kinds.items() if k == kind)
        if ids:
            reasons.append(f"{text}: {ids}")
    # per case, by its own reason: a judge switched off or a slot the profile lacks is not evaluated (by choice);
    # any other evaluator gap (outage, missing weights, no score row yet) is the evaluator's failure
    choice = sum(1 for c, k in kinds.items()
                 if (k == "evaluator" and by_choice(by_case[c].get("reason")))
                 or (k == "trigger_unknown" and by_choice(by_case[c].get("trigger_reason"))))
    out = {"value": None, "raw_mean": None, "coverage": (len(values) / total) if total else None,
           "n_items": total, "n_eval": len(values),
           "n_skipped": count["not_triggered"] + count["no_value"] - (gen_failed - count["missing"]),
           "n_failed": gen_failed,
           "n_failed_evaluator": count["evaluator"] + count["trigger_unknown"] + count["not_evaluated"] - choice,
           "n_not_evaluated": choice,
           "reason": "; ".join(reasons)[:800] or None}
    detail = {"cases": total, "triggered": n_trig, "scored": len(values), "triggered_without_value":
              count["no_value"], "not_triggered": count["not_triggered"] + count["missing"],
              "missing_outputs": count["missing"], "trigger_unknown": count["trigger_unknown"],
              "evaluator_failed": count["evaluator"], "not_evaluated": count["not_evaluated"],
              "trigger_coverage": None, "reliability": None,
              "reliability_observed": float(np.mean(values)) if values else None}
    if total == 0:
        out["reason"] = f"no MBench-{mode} case of this kind in the dataset"
    elif count["not_evaluated"] or count["trigger_unknown"] or count["evaluator"]:
        pass   # the coverage or the reliability is unknown until the evaluator answers: not a zero
    else:
        c = n_trig / total
        s = (sum(values) / n_trig) if n_trig else None   # every triggered case in the denominator (paper Eq. 2)
        detail.update(trigger_coverage=c, reliability=s)
        out.update(value=metrics.m_score(c, s), raw_mean=None if s is None else 100.0 * s)
        if count["no_value"]:
            out["reason"] = (f"{count['no_value']} triggered case(s) without a score count 0 in S: "
                             + (out["reason"] or ""))[:800]
        elif not n_trig:
            out["reason"] = "no case triggered the memory challenge: C = 0, M = 0"
    out["detail"] = detail
    return out


def dimension_cell(sub_cells: Mapping[str, Optional[dict]], dim: str, mode: str) -> dict:
    """A dimension M-Score: the mean of its sub-dimensions' M-Scores that apply in the mode (have cases), None with
    the reason unless every one of them has a value. ``sub_cells``: sub-dimension -> its cell (None: no case)."""
    parts = {board_id(k): c["value"] for k, c in sub_cells.items() if c is not None and c["n_items"]}
    out = {"value": None, "raw_mean": None, "n_items": len(parts),
           "n_eval": sum(not _none(v) for v in parts.values()), "n_skipped": 0, "n_failed": 0,
           "n_failed_evaluator": 0, "coverage": None, "reason": None,
           "detail": {"parts": sorted(parts), "parts_with_value": sum(not _none(v) for v in parts.values())}}
    if not parts:
        out["reason"] = f"no MBench-{mode} case for the {dim} dimension"
        return out
    out["coverage"] = out["n_eval"] / len(parts)
    ok, why = all_parts(parts, board_id(dim))
    if ok:
        out["value"] = float(np.mean(list(parts.values())))
    else:
        out["reason"] = why
    return out


def board_rows(scores: pd.DataFrame, cases: pd.DataFrame, generators: list[str],
               missing: Optional[Mapping[str, set]] = None) -> list[dict]:
    """Every board row (schema of core/metric_spec.py) for the generators: per mode, the 12 sub-dimensions, the
    additions and the three dimensions. ``scores``: mbench_scores rows (SCORE_COLUMNS; ``substitute`` and
    ``protocol`` may be absent); ``missing``: generator -> case ids without an output video."""
    scores = scores.reindex(columns=list(dict.fromkeys(list(scores.columns) + SCORE_COLUMNS)))
    scores = scores.astype({"triggered": object}).where(scores.notna(), None)
    missing = missing or {}
    rows = []
    for mode in MODES:
        mode_ids = set(cases.loc[cases["mode"] == mode, "case_id"])
        mode_scores = scores[scores["case_id"].isin(mode_ids)]
        recs = mode_scores.assign(metric_id=board_id("") + mode_scores["metric_id"].astype(str))
        comp = comparability(recs[["generator", "metric_id", "protocol"]]).set_index(["generator", "metric_id"])
        for g in generators:
            sg = mode_scores[mode_scores["generator"] == g]
            sub_cells = {}
            for k in SUBS:
                applicable = applicable_cases(cases, mode, k)
                mine = sg[(sg["metric_id"] == k) & sg["case_id"].isin(applicable["case_id"])]
                c = cell(mine, applicable, missing.get(g, ()), mode)
                sub_cells[k] = c if c["n_items"] else None
                key = (g, board_id(k))
                rows.append(board_row(g, board_id(k), mode, c["value"], **_common(c),
                                      substitute=join_substitutes(mine["substitute"]),
                                      protocol=comp.loc[key, "protocol"] if key in comp.index else None,
                                      comparable=bool(comp.loc[key, "comparable"]) if key in comp.index else None))
            for dim, ks in metrics.DIMENSIONS.items():
                d = dimension_cell({k: sub_cells[k] for k in ks}, dim, mode)
                part_rows = [r for r in rows if r["generator"] == g and r["slice"] == mode
                             and r["metric_id"] in {board_id(k) for k in ks}]
                protocols = sorted({p for r in part_rows for p in str(r["protocol"] or "").split("+") if p})
                rows.append(board_row(g, board_id(dim), mode, d["value"], **_common(d),
                                      substitute=join_substitutes(r["substitute"] for r in part_rows
                                                                  if not _none(r["value"])),
                                      protocol="+".join(protocols) or None,
                                      comparable=all(r["comparable"] is not False for r in part_rows)
                                      and len(protocols) <= 1))
    return rows


def _common(c: dict) -> dict:
    return {k: c.get(k) for k in ("raw_mean", "coverage", "n_items", "n_eval", "n_skipped", "n_failed",
                                  "n_failed_evaluator", "n_not_evaluated", "reason", "detail")}


def leaderboard(scores: pd.DataFrame, cases: pd.DataFrame, generators: list[str],
                missing: Optional[Mapping[str, set]] = None,
                decode_warnings: Optional[Mapping[str, Optional[int]]] = None) -> pd.DataFrame:
    """The MBench board: ``board_frame("mbench", rows, METRICS)``; ``decode_warnings``: generator -> videos read with
    decode warnings (``decode_warning_counts``)."""
    return board_frame("mbench", board_rows(scores, cases, generators, missing), METRICS,
                       decode_warnings=decode_warnings)


def detail(board: pd.DataFrame, column: str) -> pd.Series:
    """One key of the board's detail JSON as a column (e.g. 'reliability', 'trigger_coverage')."""
    return pd.Series([json.loads(d).get(column) if isinstance(d, str) else None for d in board["detail"]],
                     index=board.index, dtype=object)
