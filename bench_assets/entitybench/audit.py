"""EntityBench's gap-decay table and plot. (Its audit pages are rendered by the shared core/audit.py through
entitybench/report.py's write_audit_pages.)"""
from __future__ import annotations

import io
import json
from typing import Optional

import pandas as pd

from bench_assets.entitybench import judging


SIGNALS = {"gap_decay_embedding": "embedding_cosine", "gap_decay_embedding_allpairs": "embedding_cosine_allpairs",
           "llm_face_mean_score": "llm_sim", "llm_object_mean_score": "llm_sim", "llm_scene_pair": "llm_sim"}
GAP_COLUMNS = ["generator", "signal", "entity_type", "tier", "gap_bin", "mean", "pairs", "embedder"]


def gap_decay_table(dino_pairs: Optional[pd.DataFrame], llm_pairs: Optional[pd.DataFrame],
                    tiers: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """Mean and pair count per (generator, signal, entity type, tier, bin); bins in the paper's order.

    One curve per entity type: pooling a character pair at .9 with an object pair at .1 would make one bin at
    .5 that matches neither the paper's face curve nor its object curve. ``embedding_cosine`` pairs adjacent
    admitted appearances (the paper's Tables 19-21), ``embedding_cosine_allpairs`` every pair (the spec's
    option); ``embedder`` says which model produced the cosines (DINOv2 in the paper profile)."""
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
    out["_b"], out["_t"] = out["gap_bin"].map(order), out["tier"].map(tier_order)
    out = out.sort_values(["signal", "entity_type", "_t", "generator", "_b"]).drop(columns=["_b", "_t"])
    return out[GAP_COLUMNS].reset_index(drop=True)


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
    t = table[table["tier"] == "all"]
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
