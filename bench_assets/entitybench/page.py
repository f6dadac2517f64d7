"""EntityBench's page on the report site (core/page.py): its words, the tables behind its board, and what only
EntityBench shows: gap decay per entity type, the per-tier breakdown, the dataset statistics, the first frame of
each shot, and the episode tier on the audit pages."""
from __future__ import annotations

import json
import os

import pandas as pd

from bench_assets.core import report as charts
from bench_assets.core import site
from bench_assets.core.page import BenchmarkPage, PageContext

METRIC_TABLES = ("entitybench_pillar1", "entitybench_presence_consistency", "entitybench_fidelity",
                 "entitybench_action", "entitybench_llm_consistency")
# metrics whose per-tier bars are drawn (the first six with a value)
TIER_METRICS = ("cs_face", "cs_object", "intra_face_fidelity", "llm_face_accuracy", "intra_character_presence",
                "subject_consistency", "temporal_flickering")


def _gap_bins(detail: pd.Series) -> list:
    out = []
    for d in detail:
        try:
            out.append(json.loads(d).get("gap_bin") if isinstance(d, str) else None)
        except ValueError:
            out.append(None)
    return out


def _bin_key(b: str) -> tuple:
    try:
        return (int(str(b).split("-")[0]), str(b))
    except ValueError:
        return (10**6, str(b))


def gap_decay_by_type(reader) -> pd.DataFrame:
    """Mean similarity and pair count per (signal, entity type, generator, shot-distance bin).

    Uses ``entitybench_gap_decay`` when it carries an entity type column; otherwise bins the pair rows it was
    made from (embedding adjacent-appearance pairs joined to the registry's types, LLM anchor comparisons whose
    metric names the type)."""
    g = reader.table("entitybench_gap_decay")
    type_col = next((c for c in ("entity_type", "type") if g is not None and c in g.columns), None)
    if g is not None and type_col and {"generator", "signal", "gap_bin", "mean"} <= set(g.columns):
        g = g.rename(columns={type_col: "entity_type"})
        if "tier" in g.columns and (g["tier"] == "all").any():
            g = g[g["tier"] == "all"]  # the per-tier rows repeat the pairs of the overall curve
        g["pairs"] = site.num(site.col(g, "pairs", 0)).fillna(0)
        if "embedder" in g.columns:  # the model behind a cosine belongs in the curve's name
            emb = g["embedder"].fillna("").astype(str)
            g["signal"] = [f"{s} ({e})" if e and e != "judge" else s for s, e in zip(g["signal"], emb)]
        g["entity_type"] = g["entity_type"].fillna("unknown")
        return g[["signal", "entity_type", "generator", "gap_bin", "mean", "pairs"]]
    frames = []
    dino = reader.table("entitybench_presence_consistency",
                        "SELECT generator, item, entity_id, value, detail FROM entitybench_presence_consistency "
                        "WHERE metric_id IN ('gap_decay_dino', 'gap_decay_embedding') AND value IS NOT NULL")
    reg = reader.table("entitybench_entity_registry")
    if dino is not None and reg is not None and {"episode_id", "entity_id", "type"} <= set(reg.columns):
        d = dino.merge(reg[["episode_id", "entity_id", "type"]].rename(columns={"episode_id": "item"}),
                       on=["item", "entity_id"], how="left")
        d["signal"], d["entity_type"] = "embedding_cosine", d["type"].fillna("unknown")
        frames.append(d)
    llm = reader.table("entitybench_llm_consistency",
                       "SELECT generator, item, entity_id, metric_id, value, detail FROM entitybench_llm_consistency "
                       "WHERE level = 'pair' AND metric_id IN ('llm_face_mean_score', 'llm_object_mean_score') "
                       "AND value IS NOT NULL")
    if llm is not None:
        llm["signal"] = "llm_sim"
        llm["entity_type"] = llm["metric_id"].map({"llm_face_mean_score": "character",
                                                   "llm_object_mean_score": "object"})
        frames.append(llm)
    if not frames:
        return pd.DataFrame(columns=["signal", "entity_type", "generator", "gap_bin", "mean", "pairs"])
    df = pd.concat(frames, ignore_index=True)
    df["gap_bin"] = _gap_bins(df["detail"])
    df = df.dropna(subset=["gap_bin"])
    df["value"] = site.num(df["value"])
    agg = df.groupby(["signal", "entity_type", "generator", "gap_bin"])["value"].agg(["mean", "count"])
    return agg.reset_index().rename(columns={"count": "pairs"})


def sections(ctx: PageContext) -> list[dict]:
    out = []
    gap = gap_decay_by_type(ctx.reader)
    lines = []
    if len(gap):
        for (signal, etype), part in gap.groupby(["signal", "entity_type"]):
            # per curve: the authors' integer gaps and the project's range bins are different axes
            bins = sorted(part["gap_bin"].astype(str).unique(), key=_bin_key)
            series = {}
            for gen, p in part.groupby("generator"):
                by = {str(b): (m, int(n)) for b, m, n in zip(p["gap_bin"], p["mean"], p["pairs"])}
                series[gen] = [by.get(b, (None, 0)) for b in bins]
            lines.append(charts.line_chart_svg(bins, series, ctx.order, title=f"{signal}: {etype}",
                                               y_label="shot distance (k_j - k_i)"))
    out.append({"title": "Gap decay per entity type",
                "note": "Similarity of an entity's admitted appearances by shot distance, one line per generator, "
                        "n = pairs per bin (a diagnostic, not one of the 51 metrics). Range bins (1-2, 3-5, ...) "
                        "are the project's addition; embedding_cosine_authors is the authors' code: every pair, "
                        "one point per integer gap.",
                "charts": lines or ['<p class="none">not evaluated: no gap-decay pair in the store</p>']})
    paper = ctx.paper()
    tiers = paper[paper["slice"] != ctx.main_slice]
    bars = []
    if len(tiers):
        keys = [m for m in TIER_METRICS if tiers.loc[tiers["metric_id"] == m, "value"].notna().any()][:6]
        for m in keys:
            part = tiers[tiers["metric_id"] == m]
            bars.append(charts.bar_chart_svg(site.bar_rows(part, "slice"), ctx.order, title=f"{m} per tier",
                                             scale=site.metric_scale(part), width=520))
    out.append({"title": "Per-tier breakdown", "note": "The same metric per episode tier (rows), one bar per "
                "generator; the thin line is the coverage within the tier.",
                "charts": bars or ['<p class="none">not evaluated: no per-tier value</p>']})
    stats = ctx.reader.table("entitybench_dataset_statistics")
    out.append({"title": "Dataset (the paper's Table 3 / Table 10 quantities)",
                "note": "What the episodes hold, per tier and overall, from entitybench_dataset_statistics.",
                "charts": [site.table_html(stats, "dataset")]})
    return out


def frame_galleries(ctx: PageContext) -> list[dict]:
    """The first frame of each shot of the first episode, per generator."""
    out = []
    df = ctx.reader.table("entitybench_outputs")
    if df is None or not {"generator", "episode_id", "shot", "path"} <= set(df.columns):
        return out
    for gen, item, part in site.first_per_generator(df.dropna(subset=["path"]), "generator", "episode_id"):
        imgs = []
        for r in part.sort_values("shot").head(12).itertuples():
            for path, _ in site.thumbnails(r.path, ctx.out_dir, indices=[0]):
                imgs.append({"src": os.path.relpath(path, ctx.out_dir), "caption": f"shot {r.shot}"})
        if imgs:
            out.append({"title": f"first frame of each shot: {gen} episode {item}", "kind": "frame",
                        "images": imgs})
    return out


def item_columns(reader) -> dict[str, dict]:
    """The episode's tier beside each episode on the audit pages."""
    ep = reader.table("entitybench_episode")
    if ep is None or not {"episode_id", "tier"} <= set(ep.columns):
        return {}
    return {str(e): {"tier": t} for e, t in zip(ep["episode_id"], ep["tier"])}


PAGE = BenchmarkPage(
    name="entitybench", title="EntityBench",
    about="Multi-shot video generators: entity presence, fidelity and cross-shot consistency (51 metrics, [0,1]; "
          "imaging quality [0,100]). Values are the authors' per-tier means over the episodes with a value (their "
          "aggregate_results; None excluded), with the instance coverage and 'ep n/N' (episodes with a value) "
          "beside each; the paper text's Eq. 23-25 (instance-weighted, coverage applied where the metric's spec "
          "says so) is the addition aggregation_eq23, in each cell's tooltip and detail (eq23_value).",
    leaderboard="entitybench_leaderboard",
    headline=("llm_face_accuracy", "cs_face", "intra_face_fidelity", "cs_object", "subject_consistency"),
    metric_tables=METRIC_TABLES, item_label="episode", item_column="episode_id", slice_label="tier",
    gallery_tables=("entitybench_grounding",), manifest_tables=("entitybench_manifest",),
    scale_note="the authors' mean over episodes", sections=sections, frame_galleries=frame_galleries,
    item_columns=item_columns)
