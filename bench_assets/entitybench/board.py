"""EntityBench's board maths: item records in, the common board's rows out (core/metric_spec.board_frame).
Pure functions; the leaderboard asset only queries the tables and passes them here.

The board's ``value`` is the authors' per-tier aggregate (eval/evaluate_benchmark.py 3776439 ``aggregate_results``,
the code behind the paper's tables): the plain mean of the episode values that are not None (unrounded here; their
report rounds to 4 places), with std / min / max and ``n_episodes_evaluated`` / ``n_episodes_total`` in the row's
detail. An episode without a value is excluded, not a zero, so that mean does not penalise a generator that
delivered fewer shots: the row's ``coverage`` (instances evaluated over the instances the metric should have read,
the generator's failures included) and the episode counts mark it on every surface.

The paper text's aggregation (Eq. 23-25, spec "Aggregation across episodes") is the addition ``aggregation_eq23``
(metric_specs.EQ23), in each row's detail: ``eq23_raw_mean = sum_E v_E n_eval_E / sum_E n_eval_E`` and
``eq23_value`` by the metric's coverage policy:
- "applied": raw mean x coverage (every skipped or failed instance a zero contribution);
- "reported" (the families the spec fixes at coverage 1): gated-out or not computable instances are not
  instances there, so they do not lower the value; an instance the generator failed (a shot it did not deliver)
  still counts as a zero, as the paper's Eq. 23 counts a failed instance: ``sum v n_eval / sum (n_eval + n_fail)``.
So under Eq. 23-25 a generator that delivers fewer shots gains nothing: the row builders count every instance an
undelivered shot would have fed as ``n_failed`` (see the asset's row builders), and both policies divide by it.
Evaluator failures (``n_failed_evaluator``: judge outage, missing weights) are shown apart and enter neither.
"""
from __future__ import annotations

from typing import Optional

import pandas as pd

from bench_assets.core.stats import cohens_d
from bench_assets.core.stats import paired_dz_by_key as paired_dz
from bench_assets.core.metric_spec import (GATE_UNKNOWN_STATE, GATED, UNGATED_STATE, MetricSpecs, board_row,
                                          comparability, join_gates, join_substitutes, split_not_evaluated,
                                          split_substitutes)
from bench_assets.entitybench.counts import EVAL
from bench_assets.entitybench.dataset import TIERS
from bench_assets.entitybench.judged import GATE_UNKNOWN, GATED_IDS, UNGATED
from bench_assets.entitybench.metric_specs import BOARD_AGGREGATION, EQ23_REFERENCE

MAIN_SLICE = "all"
_COLUMNS = ("n_items", "n_eval", "n_failed", "n_skipped", "coverage", "raw_mean")   # cell()'s board columns


def gate_states(sub: pd.DataFrame) -> list[Optional[str]]:
    """The fidelity gate's state of each item row (judged.withhold_unknown_gate recorded it): a gated family's row
    is 'gate unknown' when a fidelity question failed (its reason says so), 'ungated' when the judge was off (its
    substitute carries UNGATED), else 'gated'; None for every metric the gate does not touch."""
    out: list[Optional[str]] = []
    for mid, reason, subst in zip(sub["metric_id"], sub["reason"], sub["substitute"]):
        if mid not in GATED_IDS:
            out.append(None)
        elif isinstance(reason, str) and reason.startswith(GATE_UNKNOWN):
            out.append(GATE_UNKNOWN_STATE)
        elif UNGATED in split_substitutes(subst):
            out.append(UNGATED_STATE)
        else:
            out.append(GATED)
    return out


def _models_only(substitutes: pd.Series) -> Optional[str]:
    """The cell's substitute models; the UNGATED label moves to the board's ``gate`` column (its own mark)."""
    return join_substitutes([None if p == UNGATED else p for v in substitutes for p in split_substitutes(v) or [None]])


def episode_summary(values: pd.Series) -> dict:
    """The authors' summary of one tier's episode values (aggregate_results' ``_s``, unrounded): the mean of the
    values that are not None, population std, min, max, n_episodes_evaluated; all None when no episode has one."""
    v = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if not len(v):
        return {"mean": None, "std": None, "min": None, "max": None, "n_episodes_evaluated": 0}
    return {"mean": float(v.mean()), "std": float(v.std(ddof=0)), "min": float(v.min()), "max": float(v.max()),
            "n_episodes_evaluated": int(len(v))}


def eq23(sub: pd.DataFrame, policy: str) -> dict:
    """The paper text's Eq. 23-25 of one cell (the addition aggregation_eq23): raw mean weighted by n_eval, the
    instance coverage, and the value by the coverage policy ("applied", "reported", else the raw mean)."""
    n_eval = pd.to_numeric(sub["n_eval"], errors="coerce").fillna(0).astype(int)
    n_failed = int(pd.to_numeric(sub["n_failed"], errors="coerce").fillna(0).sum())
    n_skipped = int(pd.to_numeric(sub["n_skipped"], errors="coerce").fillna(0).sum())
    values = pd.to_numeric(sub["value"], errors="coerce")
    has = values.notna() & (n_eval > 0)
    ev = int(n_eval[has].sum())
    total = int(n_eval.sum()) + n_failed + n_skipped
    out = {"n_items": int(has.sum()), "n_eval": ev, "n_failed": n_failed, "n_skipped": n_skipped,
           "coverage": (ev / total) if total else None, "raw_mean": None, "value": None}
    if not ev:
        return out
    weighted = float((values[has] * n_eval[has]).sum())
    out["raw_mean"] = weighted / ev
    if policy == "applied":
        out["value"] = weighted / total
    elif policy == "reported":
        out["value"] = weighted / (ev + n_failed)
    else:
        out["value"] = out["raw_mean"]
    return out


def cell(sub: pd.DataFrame, policy: str) -> dict:
    """One (generator, metric, slice) from its item records: ``value`` (= ``raw_mean``) the authors' mean over the
    episodes with a value, the instance coverage and counts, the authors' summary (``episodes``) and the paper
    text's Eq. 23-25 under ``policy`` (``eq23``)."""
    e = eq23(sub, policy)
    summary = episode_summary(sub["value"])
    summary["n_episodes_total"] = int(sub["item"].nunique()) if "item" in sub else int(len(sub))
    mean = summary.pop("mean")
    return {"n_items": summary["n_episodes_evaluated"], "n_eval": e["n_eval"], "n_failed": e["n_failed"],
            "n_skipped": e["n_skipped"], "coverage": e["coverage"], "raw_mean": mean, "value": mean,
            "episodes": summary, "eq23": {"value": e["value"], "raw_mean": e["raw_mean"], "policy": policy}}


def _reason(sub: pd.DataFrame, c: dict, n_eval_fail: int) -> Optional[str]:
    reasons = sorted({r for r in sub["reason"].dropna() if r})
    if c["value"] is None:
        return reasons[0] if reasons else "no data"
    if (n_eval_fail or c["n_failed"]) and reasons:
        return "; ".join(reasons)[:300]
    return None


def row_detail(spec, c: dict, judge_prompts: Optional[str]) -> dict:
    """What a board row says beside its value: the metric's ``reference`` to the authors' code
    (metric_specs.REFERENCE), the value's aggregation (theirs) with their episode summary, the paper text's Eq.
    23-25 value under its addition id (``eq23_*``), and for judged metrics which judge prompts answered."""
    out = {"reference": None if spec is None else spec.reference, "aggregation_reference": BOARD_AGGREGATION,
           **c["episodes"], "eq23_value": c["eq23"]["value"], "eq23_raw_mean": c["eq23"]["raw_mean"],
           "eq23_policy": c["eq23"]["policy"], "eq23_reference": EQ23_REFERENCE}
    if judge_prompts is not None and spec is not None and spec.reference and "judge_prompts" in spec.reference:
        out["judge_prompts"] = judge_prompts
    return out


def leaderboard_rows(records: pd.DataFrame, tiers: pd.DataFrame, specs: MetricSpecs,
                     judge_prompts: Optional[str] = None) -> list[dict]:
    """One row per (generator, metric, slice): slice "all", then each tier with episodes. ``records``: item-level
    rows (generator, item, metric_id, value, n_eval, n_failed, n_skipped, reason, protocol, n_failed_evaluator,
    substitute); ``tiers``: item, tier. Diagnostics (spec kind "diagnostic") stay off the board; an id without a
    spec is kept, so board_frame refuses it loudly. Each row's ``detail`` holds ``row_detail`` (the reference to
    the authors' code, their aggregate, and ``judge_prompts``: the prompt set in force, judging.prompt_set_id)."""
    df = records.merge(tiers, on="item", how="left")
    df = df[[(s := specs.get(m)) is None or s.kind != "diagnostic" for m in df["metric_id"]]]
    for col in (EVAL, "substitute", "protocol"):
        if col not in df:
            df[col] = 0 if col == EVAL else None
    rows = []
    for name, part in [(MAIN_SLICE, df), *[(t, df[df["tier"] == t]) for t in TIERS]]:
        if part.empty:
            continue
        comp = comparability(part[["generator", "metric_id", "protocol"]]).set_index(["generator", "metric_id"])
        for (gen, mid), sub in part.groupby(["generator", "metric_id"], sort=True):
            spec = specs.get(mid)
            c = cell(sub, spec.coverage_policy if spec is not None else "applied")
            # per item row: a judge switched off / a slot the profile lacks is not evaluated (by choice)
            ef, ne = split_not_evaluated(sub, EVAL)
            n_eval_fail, n_not_eval = int(ef.sum()), int(ne.sum())
            pc = comp.loc[(gen, mid)] if (gen, mid) in comp.index else None
            reason = _reason(sub, c, n_eval_fail + n_not_eval)
            detail = row_detail(spec, c, judge_prompts)
            rows.append(board_row(gen, mid, name, c["value"], **{k: c[k] for k in _COLUMNS},
                                  n_failed_evaluator=n_eval_fail,
                                  n_not_evaluated=n_not_eval,
                                  reason=reason, protocol=None if pc is None else pc["protocol"],
                                  comparable=True if pc is None else bool(pc["comparable"]),
                                  substitute=_models_only(sub["substitute"]), gate=join_gates(gate_states(sub)),
                                  baseline=False, detail=detail))
    return rows


def gate_diagnostics(records: pd.DataFrame) -> pd.DataFrame:
    """Per generator: gated-out appearances over the present ones (from ``_meta_cross_shot_gate``)."""
    m = records[records["metric_id"] == "_meta_cross_shot_gate"]
    if m.empty:
        return pd.DataFrame(columns=["generator", "gated_out", "present"])
    return m.groupby("generator").agg(gated_out=("value", lambda v: float(v.fillna(0).sum())),
                                      present=("n_eval", "sum")).reset_index()


def effect_size_table(records: pd.DataFrame) -> pd.DataFrame:
    """Per metric and ordered generator pair: pooled Cohen's d over episode values and paired d_z over the
    episodes both have; refused (None, with the reason) when the two were scored under different protocols."""
    rows = []
    vals = records.dropna(subset=["value"])
    for mid, part in vals.groupby("metric_id"):
        gens = sorted(part["generator"].unique())
        for a in gens:
            for b in gens:
                if a >= b:
                    continue
                pa, pb = part[part.generator == a], part[part.generator == b]
                protocols = set(pa["protocol"].dropna()) | set(pb["protocol"].dropna())
                ok = len(protocols) <= 1
                ea, eb = dict(zip(pa["item"], pa["value"])), dict(zip(pb["item"], pb["value"]))
                rows.append({"metric_id": mid, "generator_a": a, "generator_b": b, "comparable": ok,
                             "cohens_d": cohens_d(ea.values(), eb.values()) if ok else None,
                             "d_z": paired_dz(ea, eb) if ok else None,
                             "n_a": len(ea), "n_b": len(eb), "n_shared": len(set(ea) & set(eb)),
                             "reason": None if ok else "not comparable: manifests differ"})
    return pd.DataFrame(rows)
