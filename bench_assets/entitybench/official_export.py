"""EntityBench results in the authors' own output schema (GitHub ``Catherine-R-He/EntityBench`` 3776439,
``eval/evaluate_benchmark.py``), so their ``eval/compare_methods.py`` reads our runs beside theirs.

Pure: the board's item records (generator, item, metric_id, value, n_eval, n_failed, n_skipped) and the episodes
(item, tier, n_shots) in, ``{file name: JSON object}`` out; ``bench export --benchmark entitybench --format official``
writes them. Per episode ``<episode_id>.json`` as ``_episode_result_to_json`` writes it: ``episode_id, tier,
num_shots, vbench_means, metrics, per_entity_scores, gap_decay_data``, each metric a ``MetricValue`` ``{value,
n_evaluated, n_failed, n_skipped}`` (a None value stays null with its counts: the authors never write a 0 for it);
``report_<method>.json`` as ``aggregate_results`` writes it. Our additions (metric ids the authors do not compute)
and why each null value is null go to ``_additions_<method>.json``, which their loader skips by its leading
underscore, so nothing is dropped and their comparison sees only their own metrics. The report's per-tier means are
theirs (as the board's value); the paper text's Eq. 23-25 per tier (the addition aggregation_eq23, board.eq23) goes
to that sidecar too, under its id.
"""
from __future__ import annotations

import math
from collections import defaultdict
from typing import Any, Iterable, Optional

import pandas as pd

from bench_assets.core.records import number_or_none as _num
from bench_assets.entitybench.metric_specs import EQ23, METRICS

# eval/evaluate_benchmark.py VBENCH_DIMENSIONS and ALL_METRICS (the authors' ids, which our specs keep)
VBENCH_DIMENSIONS = ("subject_consistency", "temporal_flickering", "motion_smoothness", "dynamic_degree",
                     "aesthetic_quality", "imaging_quality")
_CRIT = {"face": ("face", "hair", "clothing", "build"),
         "object": ("shape", "color_texture", "proportions", "details"),
         "location": ("layout", "color_mood", "landmarks", "perspective")}
ALL_METRICS = (
    "intra_character_presence", "intra_object_presence", "intra_location_presence",
    *(f"intra_{p}_{c}" for p in ("face", "object", "location") for c in ("fidelity", *_CRIT[p])),
    *(f"intra_action_{c}" for c in ("overall", "subject_identity", "subject_action", "object_interaction",
                                    "motion_quality", "depicted")),
    "cs_face", "cs_object", "cs_transition_boundary",
    *(f"llm_{p}_{c}" for p, k in (("face", "face"), ("object", "object"), ("scene", "location"))
      for c in ("accuracy", "mean_score", *_CRIT[k])),
)
# written into the authors' ``metrics`` dict beside the board metrics (their evaluator does the same)
AUTHOR_EXTRA = ("_meta_cross_shot_gate",)
TIERS = ("easy", "medium", "hard")
EVAL = "n_failed_evaluator"   # counts.EVAL


def _count(v: Any) -> int:
    f = _num(v)
    return 0 if f is None else int(f)


def metric_value(row: Any) -> dict:
    """One item row -> the authors' MetricValue.to_json(); a missing value is null, never 0. Their n_failed is
    every instance attempted and not scored (a VLM rejection counts), so our evaluator failures join the
    generator's there (the authors have no third bucket; the board keeps them apart)."""
    return {"value": _num(row["value"]), "n_evaluated": _count(row["n_eval"]),
            "n_failed": _count(row["n_failed"]) + _count(row.get(EVAL)), "n_skipped": _count(row["n_skipped"])}


def episode_json(episode_id: str, tier: str, num_shots: int, rows: pd.DataFrame,
                 gap_decay_data: Optional[list] = None) -> tuple[dict, dict, dict]:
    """(the authors' per-episode JSON, our additions, why each null value is null) from one generator's rows of
    one episode; ``gap_decay_data``: its pairs in their record shape (audit.authors_gap_points)."""
    vb, metrics, additions, reasons = {}, {}, {}, {}
    for _, r in rows.sort_values("metric_id").iterrows():
        mid = r["metric_id"]
        target = vb if mid in VBENCH_DIMENSIONS else metrics if mid in ALL_METRICS or mid in AUTHOR_EXTRA \
            else additions
        target[mid] = metric_value(r)
        why = r.get("reason")
        if target[mid]["value"] is None and isinstance(why, str) and why:
            reasons[mid] = why
    ep = {"episode_id": episode_id, "tier": tier, "num_shots": int(num_shots), "vbench_means": vb,
          "metrics": metrics, "per_entity_scores": {}, "gap_decay_data": list(gap_decay_data or [])}
    return ep, additions, reasons


def _summary(vals: list[float], n_total: int) -> dict:
    # aggregate_results._s: population std, 4 decimals; no values -> value null with the coverage counts
    if not vals:
        return {"value": None, "n_episodes_evaluated": 0, "n_episodes_total": n_total}
    mean = sum(vals) / len(vals)
    std = math.sqrt(sum((v - mean) ** 2 for v in vals) / len(vals))
    return {"mean": round(mean, 4), "std": round(std, 4), "min": round(min(vals), 4), "max": round(max(vals), 4),
            "n_episodes_evaluated": len(vals), "n_episodes_total": n_total}


def report_json(episodes: Iterable[dict], manifest: dict) -> dict:
    """The authors' ``report_<method>.json`` (aggregate_results): per tier ("all" = easy + medium + hard)
    num_episodes, num_shots, ``vbench`` per dimension (with n_episodes_with_failures), each metric's summary and,
    where the tier's episodes have gap-decay pairs, ``gap_decay_curve`` / ``gap_decay_curve_by_type``."""
    from bench_assets.entitybench.audit import authors_gap_curves
    eps = list(episodes)
    report: dict[str, Any] = {}
    for tier in ("all", *TIERS):
        trs = [e for e in eps if tier == "all" or e["tier"] == tier]
        if not trs:
            continue
        n = len(trs)
        vb: dict[str, dict] = {}
        for d in VBENCH_DIMENSIONS:
            vals = [e["vbench_means"][d]["value"] for e in trs
                    if d in e["vbench_means"] and e["vbench_means"][d]["value"] is not None]
            fails = sum(1 for e in trs if e["vbench_means"].get(d, {}).get("n_failed", 0) > 0)
            vb[d] = dict(_summary(vals, n), n_episodes_with_failures=fails)
        report[tier] = {"num_episodes": n, "num_shots": sum(e["num_shots"] for e in trs), "vbench": vb,
                        **{m: _summary([e["metrics"][m]["value"] for e in trs if m in e["metrics"]
                                        and e["metrics"][m]["value"] is not None], n) for m in ALL_METRICS}}
        report[tier].update(authors_gap_curves(d for e in trs for d in e.get("gap_decay_data", [])))
    report["_manifest"] = manifest
    return report


def eq23_tiers(rows: pd.DataFrame, tier_of: dict) -> dict:
    """The paper text's Eq. 23-25 (board.eq23 under each metric's coverage policy) per tier ("all" and each tier
    with episodes) and metric of the authors' report: {tier: {metric: value or None}}, unrounded."""
    from bench_assets.entitybench.board import eq23   # board imports the judged rows' module: only when asked
    rows = rows.assign(tier=rows["item"].map(tier_of))
    out: dict[str, dict] = {}
    for tier in ("all", *TIERS):
        part = rows if tier == "all" else rows[rows["tier"] == tier]
        if part.empty:
            continue
        out[tier] = {m: eq23(g, METRICS[m].coverage_policy)["value"]
                     for m, g in part.groupby("metric_id", sort=True)
                     if m in (*VBENCH_DIMENSIONS, *ALL_METRICS) and METRICS.get(m) is not None}
    return out


def export(records: pd.DataFrame, episodes: pd.DataFrame, generator: str, manifest: Optional[dict] = None,
           run_manifest: Optional[dict] = None, gap_pairs: Optional[pd.DataFrame] = None,
           names: Optional[dict] = None) -> dict:
    """``{file name: JSON}`` for one generator (the authors' method): every episode it has rows for, the report and
    the additions sidecar. ``episodes``: item, tier, n_shots (an episode without a row there is refused).
    ``run_manifest``: the authors' ``run_manifest.json`` for this run (entitybench/manifest.run_manifest), written
    as that file and, as their aggregate does, under the report's ``_manifest``; their ``manifest_comparable``
    compares it with one of theirs. ``gap_pairs``: the pair rows of the gap-decay ids (generator, item, metric_id,
    entity_id, value, detail) giving each episode's ``gap_decay_data`` and the report's curves; ``names``:
    {item: {entity_id: registry name}} for their records."""
    from bench_assets.entitybench.audit import authors_gap_points
    if run_manifest is not None:
        manifest = {**run_manifest, **(manifest or {})}
    sub = records[records["generator"] == generator]
    if sub.empty:
        raise ValueError(f"no EntityBench item rows for generator {generator!r}")
    info = episodes.set_index("item")
    missing = sorted(set(sub["item"]) - set(info.index))
    if missing:
        raise ValueError(f"episodes without tier / shot count: {', '.join(missing[:5])}")
    out: dict[str, dict] = {}
    additions: dict[str, dict] = defaultdict(dict)
    null_reasons: dict[str, dict] = {}
    eps = []
    points = authors_gap_points(None if gap_pairs is None else gap_pairs[gap_pairs["generator"] == generator], names)
    for eid, rows in sub.groupby("item", sort=True):
        ep, add, why = episode_json(eid, info.loc[eid, "tier"], info.loc[eid, "n_shots"], rows, points.get(eid))
        out[f"{eid}.json"] = ep
        eps.append(ep)
        if add:
            additions[eid] = add
        if why:
            null_reasons[eid] = why
    man = {"method_name": generator, "source": "entity-bench-platform", **(manifest or {})}
    out[f"report_{generator}.json"] = report_json(eps, man)
    if run_manifest is not None:
        out["run_manifest.json"] = {**run_manifest, "method_name": generator}
    out[f"_additions_{generator}.json"] = {"note": "metrics of this platform the authors' evaluator does not "
                                                   "compute, per episode, as MetricValue; null_reasons: why each null "
                                                   "value (theirs or ours) is null; " + EQ23 + ": the paper text's "
                                                   "Eq. 23-25 per tier (instance-weighted, coverage policy applied), "
                                                   "beside the report's means over episodes",
                                           "episodes": dict(additions), "null_reasons": null_reasons,
                                           EQ23: eq23_tiers(sub, info["tier"].to_dict())}
    return out
