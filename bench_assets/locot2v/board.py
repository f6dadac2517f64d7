"""LoCoT2V board maths, pure (item records in, the common board out): the 26 sub-dimensions over samples, the five
dimensions and overall under the paper's names only when every part has a value, and each one's partial mean under
its own addition id (``<name>_available``) with its coverage. No Dagster, no store: assets.py moves the tables."""
from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np
import pandas as pd

from bench_assets.core.metric_spec import (all_parts, board_frame, board_row, by_choice, comparability,
                                          join_substitutes)
from bench_assets.locot2v import constants
from bench_assets.locot2v.metric_specs import ADDITIONS, METRICS

SLICE = "all"
HEADLINE_IDS = (*constants.DIMENSIONS, "overall", *(f"{d}_available" for d in constants.DIMENSIONS),
                "overall_available")


def _has(v: Any) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and np.isnan(v))


def _mean(values: Sequence[Any]) -> Optional[float]:
    v = [float(x) for x in values if _has(x)]
    return float(np.mean(v)) if v else None


def aggregate_coverage(parts: Sequence[Any]) -> float:
    """Coverage of an unweighted mean: the mean of its parts' coverage (a part without any value counts 0)."""
    return float(np.mean([float(p) if _has(p) else 0.0 for p in parts])) if len(parts) else 0.0


def _protocols(values: Sequence[Any]) -> Optional[str]:
    seen = sorted({p for v in values if _has(v) for p in str(v).split("+") if p})
    return "+".join(seen) or None


def sub_dimension_row(generator: str, metric_id: str, rows: pd.DataFrame, sample_ids: Sequence[str],
                      delivered: Optional[set], protocol: Optional[str] = None,
                      comparable: Optional[bool] = None) -> dict:
    """One sub-dimension of one generator. ``rows``: its item records on ``sample_ids``. Per sample: scored (a
    value), the evaluator's failure (None with n_failed, e.g. the judge failed), skipped (None otherwise: not
    applicable, a slot unavailable), not delivered (no row and no output video: the generator's failure), or not
    evaluated (no row although the video is there). raw_mean = mean over scored samples; value = the same with each
    undelivered sample counted 0, so delivering less never ranks higher; coverage = scored / samples."""
    vals = pd.to_numeric(rows["value"], errors="coerce")
    have = rows[vals.notna()]
    failed = pd.to_numeric(rows["n_failed"], errors="coerce").fillna(0) > 0
    evaluator = rows[vals.isna() & failed]
    # per sample, by its own reason: a judge switched off or a slot the profile lacks is not evaluated (by choice)
    choice = evaluator["reason"].map(by_choice).astype(bool) if "reason" in evaluator and len(evaluator) else \
        pd.Series(False, index=evaluator.index)
    skipped = rows[vals.isna() & ~failed]
    rowless = [s for s in sample_ids if s not in set(rows["item"])]
    undelivered = [s for s in rowless if delivered is not None and s not in delivered]
    pending = [s for s in rowless if s not in undelivered]
    scores = vals[vals.notna()].astype(float)
    raw = float(scores.mean()) if len(scores) else None
    value = float(scores.sum()) / (len(scores) + len(undelivered)) if len(scores) else None
    reasons = sorted(set(rows.loc[vals.isna(), "reason"].dropna().astype(str)))
    if undelivered:
        reasons.append(f"no output video from the generator (counts 0 in value): {undelivered}")
    if pending:
        reasons.append(f"samples not evaluated (no row): {pending}")
    n = len(sample_ids)
    dim = METRICS[metric_id].family
    subst = rows["substitute"] if "substitute" in rows else pd.Series(dtype="object")
    return board_row(
        generator, metric_id, SLICE, value, raw_mean=raw, coverage=len(have) / n if n else None, n_items=n,
        n_eval=len(have), n_skipped=len(skipped) + len(pending), n_failed=len(undelivered),
        n_failed_evaluator=int((~choice).sum()), n_not_evaluated=int(choice.sum()),
        reason="; ".join(reasons)[:800] or None, protocol=protocol,
        substitute=join_substitutes(subst[vals.notna()]) if value is not None else None, comparable=comparable,
        baseline=False,
        detail={"level": "sub_dimension", "dimension": dim, "samples": n, "samples_scored": len(have),
                "instances_evaluated": int(pd.to_numeric(have["n_eval"], errors="coerce").fillna(0).sum())})


def _needs(name: str, parts: Mapping[str, Any], noun: str) -> tuple[bool, Optional[str]]:
    """core.metric_spec.all_parts, its reason naming the parts by what they are (dimensions, sub-dimensions)."""
    ok, why = all_parts(dict(parts), name)
    return bool(ok), (why.replace(f"all {len(parts)} parts", f"all {len(parts)} {noun}") if why else None)


def aggregate_rows(generator: str, name: str, parts: Mapping[str, dict], noun: str, level: str,
                   samples: int) -> tuple[dict, dict]:
    """(the paper's aggregate, its partial mean ``<name>_available``) over ``parts`` (board rows by metric id).

    The paper's row has a value only when every part has one, else None with the reason naming what lacks one; the
    partial mean averages whichever parts have a value, under its own id (an addition) with the same coverage
    (mean of the parts' coverage, a part without a value counting 0). Each carries the union of its valued parts'
    substitutes; counts are in parts (n_items parts, n_eval with a value)."""
    values = {p: r["value"] for p, r in parts.items()}
    ok, why = _needs(name, values, noun)
    valued = [r for r in parts.values() if _has(r["value"])]
    coverage = aggregate_coverage([r.get("coverage") for r in parts.values()])
    comps = [r.get("comparable") for r in valued if r.get("comparable") is not None]
    common = dict(coverage=coverage, n_items=len(parts), n_eval=len(valued), n_skipped=len(parts) - len(valued),
                  n_failed=0, n_failed_evaluator=0, protocol=_protocols([r.get("protocol") for r in parts.values()]),
                  comparable=all(comps) if comps else None, baseline=False)
    detail = {"level": level, "dimension": name if level == "dimension" else None, "samples": samples,
              "parts": len(parts), "parts_with_value": len(valued)}
    paper = board_row(generator, name, SLICE, _mean(values.values()) if ok else None,
                      raw_mean=_mean([r.get("raw_mean") for r in parts.values()]) if ok else None, reason=why,
                      substitute=join_substitutes(r.get("substitute") for r in valued) if ok else None,
                      detail=detail, **common)
    missing = [p for p, r in parts.items() if not _has(r["value"])]
    partial_why = None if not missing else (
        f"no {noun[:-1] if noun.endswith('s') else noun} has a value" if not valued else
        f"mean over {len(valued)} of {len(parts)} {noun} with a value; without one: {', '.join(missing)}")
    incomplete = [p for p, r in parts.items() if _has(r["value"]) and _has(r.get("reason"))]
    if incomplete:   # e.g. overall_available over a dimension that is itself a partial mean
        partial_why = "; ".join(x for x in (partial_why, f"parts with gaps: {', '.join(incomplete)}") if x)
    partial = board_row(generator, f"{name}_available", SLICE, _mean([r["value"] for r in valued]),
                        raw_mean=_mean([r.get("raw_mean") for r in valued]), reason=partial_why,
                        substitute=join_substitutes(r.get("substitute") for r in valued),
                        detail={**detail, "level": f"{level}_available"}, **common)
    return paper, partial


def generator_rows(generator: str, records: pd.DataFrame, sample_ids: Sequence[str], delivered: Optional[set],
                   comp: Mapping[tuple[str, str], tuple[Optional[str], Optional[bool]]]) -> list[dict]:
    """Every board row of one generator: 26 sub-dimensions, 5 dimensions, overall, 6 partial means, the additions
    (metric_specs.ADDITIONS)."""
    part = records[(records["generator"] == generator) & records["item"].isin(list(sample_ids))]
    subs: dict[str, dict] = {}
    for mid in constants.SUB_DIMENSIONS:
        protocol, comparable = comp.get((generator, mid), (None, None))
        subs[mid] = sub_dimension_row(generator, mid, part[part["metric_id"] == mid], sample_ids, delivered,
                                      protocol, comparable)
    dims, dims_partial = {}, {}
    for dim, ids in constants.DIMENSIONS.items():
        dims[dim], dims_partial[dim] = aggregate_rows(generator, dim, {m: subs[m] for m in ids}, "sub-dimensions",
                                                      "dimension", len(sample_ids))
    overall, _ = aggregate_rows(generator, "overall", dims, "dimensions", "overall", len(sample_ids))
    # overall's partial mean averages the dimensions' partial means (the number `overall` used to show)
    _, overall_partial = aggregate_rows(generator, "overall", dims_partial, "dimensions", "overall",
                                        len(sample_ids))
    # additions (issue 23: face identity), per sample as a sub-dimension, read by no aggregate above
    adds = []
    for spec in ADDITIONS:
        protocol, comparable = comp.get((generator, spec.id), (None, None))
        row = sub_dimension_row(generator, spec.id, part[part["metric_id"] == spec.id], sample_ids, delivered,
                                protocol, comparable)
        row["detail"] = {**row["detail"], "level": "addition"}
        adds.append(row)
    return [*subs.values(), *dims.values(), overall, *dims_partial.values(), overall_partial, *adds]


def leaderboard_table(records: pd.DataFrame, sample_ids: Sequence[str], generators: Sequence[str],
                      delivered: Optional[Mapping[str, set]] = None,
                      decode_warnings: Optional[Mapping[str, Optional[int]]] = None) -> pd.DataFrame:
    """The LoCoT2V board in the common schema (core.metric_spec.board_frame). ``records``: item rows (generator,
    item, metric_id, value, n_eval, n_failed, n_skipped, reason, protocol[, substitute]); ``delivered``: per
    generator the samples with an output video (None: a sample without a row is 'not evaluated', never a
    generator failure); ``decode_warnings``: generator -> videos read with decode warnings (board_frame)."""
    records = records.copy()
    if "substitute" not in records:
        records["substitute"] = None
    on = records[records["item"].isin(list(sample_ids))]
    comp = {(r.generator, r.metric_id): (r.protocol, bool(r.comparable))
            for r in comparability(on[["generator", "metric_id", "protocol"]]).itertuples()} if len(on) else {}
    rows = []
    for g in generators:
        rows += generator_rows(g, records, sample_ids, None if delivered is None else set(delivered.get(g, ())),
                               comp)
    return board_frame(constants.BENCH, rows, METRICS, decode_warnings=decode_warnings)


def headline_markdown(board: pd.DataFrame) -> str:
    """Dimensions, overall and their partial means per generator as 'value (coverage %)' cells ('*' when an offline
    substitute produced it): no aggregate without its coverage."""
    head = board[board["metric_id"].isin(HEADLINE_IDS)].copy()
    head["cell"] = [("None" if not _has(v) else f"{float(v):.2f}" + ("*" if _has(s) else ""))
                    + f" ({100 * float(c):.0f}% covered)"
                    for v, s, c in zip(head["value"], head["substitute"], head["coverage"].fillna(0.0))]
    order = [m for m in HEADLINE_IDS if m in set(head["metric_id"])]
    return head.pivot(index="metric_id", columns="generator", values="cell").reindex(order).to_markdown()
