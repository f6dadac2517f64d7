"""EntityBench's gap-decay table and plot. (Its audit pages are rendered by the shared core/audit.py through
entitybench/report.py's write_audit_pages.)"""
from __future__ import annotations

import io
import json
from collections import defaultdict
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from bench_assets.entitybench import judging


SIGNALS = {"gap_decay_embedding": "embedding_cosine", "gap_decay_embedding_allpairs": "embedding_cosine_allpairs",
           "llm_face_mean_score": "llm_sim", "llm_object_mean_score": "llm_sim", "llm_scene_pair": "llm_sim"}
GAP_COLUMNS = ["generator", "signal", "entity_type", "tier", "gap_bin", "mean", "pairs", "embedder", "std", "binning"]
# ``binning``: the range bins are the project's addition (the paper text's Tables 19-21 bin by range); the authors'
# aggregate_results reports one point per integer gap over every pair (signal AUTHORS_SIGNAL)
PROJECT_BINS = "project's addition: range bins"
AUTHORS_BINS = "authors' code: integer gaps"
AUTHORS_SIGNAL = "embedding_cosine_authors"
# The authors' evaluator (eval/evaluate_benchmark.py 3776439, compute_gap_decay) pairs EVERY two appearances of an
# entity; the project stores the adjacent ones as gap_decay_embedding and the rest as gap_decay_embedding_allpairs.
AUTHORS_GAP_IDS = ("gap_decay_embedding", "gap_decay_embedding_allpairs")


def authors_gap_points(pairs: Optional[pd.DataFrame], names: Optional[dict] = None) -> dict[str, list[dict]]:
    """Per episode (item), the authors' ``gap_decay_data``: one ``{entity_name, entity_type, gap, similarity}`` per
    pair of appearances, from one generator's pair rows of AUTHORS_GAP_IDS (item, metric_id, entity_id, value,
    detail with shot_distance / from_shot / entity_type). ``names``: {item: {entity_id: the registry's name}} (their
    records name entities; without it the id stands in). Pairs whose cosine was not computed (value None) are left
    out, as the authors leave out crops without an embedding."""
    if pairs is None or pairs.empty:
        return {}
    d = pairs[pairs["metric_id"].isin(AUTHORS_GAP_IDS)].dropna(subset=["value"])
    if "level" in d:
        d = d[d["level"] == "pair"]
    out: dict[str, list[dict]] = defaultdict(list)
    for item, g in d.groupby("item", sort=True):
        det = [json.loads(x) if isinstance(x, str) else dict(x or {}) for x in g["detail"]]
        if any("shot_distance" not in x for x in det):
            raise ValueError(f"episode {item}: a gap-decay pair row without shot_distance in its detail")
        recs = [(str(e), x.get("entity_type") or "character", int(x["shot_distance"]), int(x.get("from_shot", 0)),
                 float(v)) for e, x, v in zip(g["entity_id"], det, g["value"])]
        first = {}
        for r in recs:
            first.setdefault(r[0], len(first))
        # their order: entity, type, then i < j over the appearances sorted by shot
        named = (names or {}).get(str(item), {})
        for e, t, gap, _frm, v in sorted(recs, key=lambda r: (first[r[0]], r[1], r[3], r[3] + r[2])):
            out[str(item)].append({"entity_name": named.get(e, e), "entity_type": t, "gap": gap, "similarity": v})
    return dict(out)


def _curve(bins: dict) -> dict:
    # aggregate_results: np.mean / np.std (population), 4 decimals, keys the integer gap as a string, in gap order
    return {str(g): {"mean_sim": round(float(np.mean(s)), 4), "std_sim": round(float(np.std(s)), 4),
                     "n_pairs": len(s)} for g, s in sorted(bins.items())}


def authors_gap_curves(points: Iterable[dict]) -> dict:
    """aggregate_results' ``gap_decay_curve`` (all types pooled) and ``gap_decay_curve_by_type`` over the
    ``gap_decay_data`` records of a tier's episodes; {} when there is no pair (they then write neither key)."""
    bins_all: dict[int, list] = defaultdict(list)
    by_type: dict[str, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for d in points:
        bins_all[int(d["gap"])].append(d["similarity"])
        by_type[d.get("entity_type", "character")][int(d["gap"])].append(d["similarity"])
    if not bins_all:
        return {}
    return {"gap_decay_curve": _curve(bins_all),
            "gap_decay_curve_by_type": {t: _curve(b) for t, b in by_type.items()}}


def authors_gap_report(points: dict[str, list[dict]], tier_of: dict) -> dict:
    """{tier: curves} for "all" and each tier, as aggregate_results adds them to each tier's report: ``points`` per
    episode (authors_gap_points), ``tier_of`` episode -> tier (its keys are the tier lists' episodes)."""
    out = {}
    for tier in ("all", "easy", "medium", "hard"):
        eps = [e for e in sorted(tier_of) if tier in ("all", tier_of[e])]
        if not eps:
            continue
        curves = authors_gap_curves(p for e in eps for p in points.get(e, []))
        if curves:
            out[tier] = curves
    return out


def gap_decay_table(dino_pairs: Optional[pd.DataFrame], llm_pairs: Optional[pd.DataFrame],
                    tiers: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """Mean and pair count per (generator, signal, entity type, tier, bin); bins in the paper's order.

    One curve per entity type: pooling a character pair at .9 with an object pair at .1 would make one bin at
    .5 that matches neither the paper's face curve nor its object curve. ``embedding_cosine`` pairs adjacent
    admitted appearances (the paper's Tables 19-21), ``embedding_cosine_allpairs`` every pair (the spec's
    option); ``embedder`` says which model produced the cosines (DINOv2 in the paper profile). These range bins
    are the project's addition (``binning``); the authors' integer-gap curves over every pair (their report's
    gap_decay_curve, pooled types under 'all types', and gap_decay_curve_by_type) follow as ``AUTHORS_SIGNAL`` rows
    with ``std``."""
    parts = [df for df in (dino_pairs, llm_pairs) if df is not None and not df.empty]
    if not parts:
        return pd.DataFrame(columns=GAP_COLUMNS)
    d = pd.concat(parts, ignore_index=True).dropna(subset=["value"])
    details = [json.loads(x) if isinstance(x, str) else {} for x in d["detail"]]
    d["gap_bin"] = [x.get("gap_bin") for x in details]
    d["entity_type"] = [x.get("entity_type") or _type_of(m) for x, m in zip(details, d["metric_id"])]
    d["embedder"] = [x.get("embedder") or ("judge" if str(m).startswith("llm_") else None)
                     for x, m in zip(details, d["metric_id"])]
    d["signal"] = d["metric_id"].map(SIGNALS)
    d = d.dropna(subset=["gap_bin", "signal"])
    if d.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    if tiers is not None and len(tiers):
        d = d.merge(tiers, on="item", how="left")
    else:
        d["tier"] = None
    d["embedder"] = d["embedder"].fillna("")
    frames = []
    for tier_name, sub in [("all", d), *[(t, d[d["tier"] == t]) for t in ("easy", "medium", "hard")]]:
        if sub.empty:
            continue
        g = sub.groupby(["generator", "signal", "entity_type", "embedder", "gap_bin"])["value"] \
            .agg(["mean", "count"]).reset_index()
        g["tier"] = tier_name
        frames.append(g)
    out = pd.concat(frames).rename(columns={"count": "pairs"})
    order = {f"{lo}-{hi}": i for i, (lo, hi) in enumerate(judging.GAP_BINS)}
    tier_order = {"all": 0, "easy": 1, "medium": 2, "hard": 3}
    out["_b"] = out["gap_bin"].map(order)
    out["binning"], out["std"] = PROJECT_BINS, np.nan
    out = pd.concat([out, _authors_rows(dino_pairs, tiers)], ignore_index=True)
    out["_b"] = [int(b) if bn == AUTHORS_BINS else o for b, bn, o in zip(out["gap_bin"], out["binning"], out["_b"])]
    out["_t"] = out["tier"].map(tier_order)
    out = out.sort_values(["signal", "entity_type", "_t", "generator", "_b"]).drop(columns=["_b", "_t"])
    return out[GAP_COLUMNS].reset_index(drop=True)


def _authors_rows(dino_pairs: Optional[pd.DataFrame], tiers: Optional[pd.DataFrame]) -> pd.DataFrame:
    """aggregate_results' gap_decay_curve (entity_type 'all types': characters and objects pooled, as theirs is)
    and gap_decay_curve_by_type per generator and tier, as rows: gap_bin = the integer gap, mean / std rounded to
    4 decimals as they write them."""
    if dino_pairs is None or dino_pairs.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    d = dino_pairs[dino_pairs["metric_id"].isin(AUTHORS_GAP_IDS)]
    d = d[[isinstance(x, str) and "shot_distance" in x for x in d["detail"]]]   # rows of older code lack it
    tier_of = dict(zip(tiers["item"], tiers["tier"])) if tiers is not None and len(tiers) else \
        {i: None for i in d["item"].unique()}
    rows = []
    for gen, g in d.groupby("generator", sort=True):
        emb = ", ".join(sorted({json.loads(x).get("embedder") or "" for x in g["detail"]} - {""}))
        report = authors_gap_report(authors_gap_points(g), {i: tier_of.get(i) for i in g["item"].unique()})
        for tier, curves in report.items():
            for etype, curve in [("all types", curves["gap_decay_curve"]),
                                 *curves["gap_decay_curve_by_type"].items()]:
                rows += [{"generator": gen, "signal": AUTHORS_SIGNAL, "entity_type": etype, "tier": tier,
                          "gap_bin": gap, "mean": c["mean_sim"], "pairs": c["n_pairs"], "embedder": emb,
                          "std": c["std_sim"], "binning": AUTHORS_BINS} for gap, c in curve.items()]
    return pd.DataFrame(rows, columns=GAP_COLUMNS)


def _type_of(metric_id: str) -> Optional[str]:
    return {"llm_face_mean_score": "character", "llm_object_mean_score": "object",
            "llm_scene_pair": "location"}.get(str(metric_id))


def gap_decay_plot(table: pd.DataFrame) -> Optional[bytes]:
    """PNG: one panel per (signal, entity type) over all tiers, one line per generator, pair counts at points."""
    if table.empty:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    bins = [f"{lo}-{hi}" for lo, hi in judging.GAP_BINS]
    t = table[(table["tier"] == "all") & (table["binning"] != AUTHORS_BINS)]   # the range-bin panels
    panels = sorted({(r.signal, r.entity_type) for r in t.itertuples()})
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 4), squeeze=False)
    for ax, (signal, etype) in zip(axes[0], panels):
        part = t[(t.signal == signal) & (t.entity_type == etype)]
        for gen, g in part.groupby("generator"):
            xs = [bins.index(b) for b in g["gap_bin"]]
            ax.plot(xs, g["mean"], marker="o", label=gen)
            for x, y, n in zip(xs, g["mean"], g["pairs"]):
                ax.annotate(f"n={n}", (x, y), textcoords="offset points", xytext=(0, 6), fontsize=7, ha="center")
        emb = ", ".join(sorted({e for e in part["embedder"] if e}))
        ax.set_xticks(range(len(bins)), bins)
        ax.set_xlabel("shot distance (k_j - k_i)")
        ax.set_ylabel(signal)
        ax.set_title(f"{signal} / {etype}" + (f"\n({emb[:40]})" if emb else ""), fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()
