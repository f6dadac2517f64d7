"""EntityBench's protocol manifest and its HTML report (the leaderboard, models, dataset, crops)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.core.audit import audit_filename, render_audit
from bench_assets.core.manifest import build_manifest
from bench_assets.core.report import render_report
from bench_assets.entitybench.constants import CONSTANTS, PROTOCOL


def entitybench_manifest(models, judge) -> dict[str, Any]:
    slots = {s.slot: {"checkpoint": s.checkpoint, "source": s.source, "fingerprint": s.fingerprint,
                      "available": s.available, "reason": s.reason} for s in models.statuses()}
    m = build_manifest(benchmark="entitybench", protocol=PROTOCOL, models=slots, judge=judge.fingerprint(),
                       constants=CONSTANTS)
    m["profile"] = models.profile
    m["judge_mode"] = judge.mode
    clip = slots.get("clip_b32", {})
    m["grounding_status_rule"] = (
        "weak iff a_clip(c*) < 0.20 (CLIP ViT-B/32)" if clip.get("available") else
        f"CLIP unavailable: a_clip recorded as None, a = detector confidence x a_sharp x a_area, weak iff detector "
        f"confidence < {CONSTANTS['offline_weak_conf_threshold']}; entities sharing a class in a shot are flagged "
        f"ambiguous and kept out of identity metrics")
    return m


def write_entitybench_report(store, manifest: dict[str, Any], board: pd.DataFrame, out: Path,
                             gap_decay: pd.DataFrame | None = None) -> Path:
    tables = set(store.asset_tables())
    dataset = store.query("SELECT * FROM entitybench_dataset_statistics") \
        if "entitybench_dataset_statistics" in tables else None
    crops: dict[str, list[dict]] = {}
    if "entitybench_grounding" in tables:
        g = store.query("SELECT generator, episode_id, shot, entity_id, status, crop_id FROM entitybench_grounding "
                        "WHERE crop_id IS NOT NULL ORDER BY generator, episode_id, shot, entity_id")
        if len(g):
            first = g["episode_id"].min()
            for gen, part in g[g.episode_id == first].groupby("generator"):
                crops[gen] = [{"src": os.path.relpath(store.artifact_path(r.crop_id), Path(out).parent),
                               "shot": r.shot, "entity_id": r.entity_id, "status": r.status}
                              for r in part.head(24).itertuples()]
    plot = None
    if gap_decay is not None and len(gap_decay) and gap_decay["plot_id"].notna().any():
        plot = os.path.relpath(store.artifact_path(gap_decay["plot_id"].dropna().iloc[0]), Path(out).parent)
    audit = (Path(out).parent / "audit").is_dir()
    return render_report(benchmark="entitybench", board=board, manifest=manifest, out_path=out,
                         dataset=dataset, crops=crops, gap_decay=gap_decay, gap_plot=plot,
                         audit_link=(lambda m, g: f"audit/{audit_filename(m, g)}") if audit else None)


AUDIT_COLUMNS = ["generator", "item", "level", "metric_id", "shot", "entity_id", "value", "n_eval", "n_failed",
                 "n_skipped", "reason", "crop_id", "frame_index", "source_sha256", "detail"]


def write_audit_pages(store, board: pd.DataFrame, audit_dir: Path, metric_tables: tuple[str, ...]) -> int:
    """One audit page per (metric, generator) of the overall board, rendered by the shared core/audit.py (None
    rows grouped by reason with their count). Returns the number of pages; the report links ``audit/<page>``,
    so every cell of the overall board gets its page, even one whose metric table is absent."""
    tables = set(store.asset_tables())
    present = [t for t in metric_tables if t in tables]
    rows = store.query(" UNION ALL ".join(f"SELECT {', '.join(AUDIT_COLUMNS)} FROM {t}" for t in present)) \
        if present else pd.DataFrame(columns=AUDIT_COLUMNS)
    tiers = store.query("SELECT episode_id AS item, tier FROM entitybench_episode") \
        if "entitybench_episode" in tables else pd.DataFrame(columns=["item", "tier"])
    items = rows[rows.level == "item"].merge(tiers, on="item", how="left")
    inst = rows[rows.level != "item"]
    overall = board[board.tier == "all"] if "tier" in board.columns else board
    by_item = {k: g for k, g in items.groupby(["metric_id", "generator"])}
    by_inst = {k: g for k, g in inst.groupby(["metric_id", "generator"])}
    written = set()
    for head in overall.to_dict("records"):
        key = (head["metric_id"], head["generator"])
        page = render_audit(metric_id=key[0], generator=key[1], headline=head,
                            episodes=by_item.get(key, items.iloc[0:0]).sort_values("item"),
                            instances=by_inst.get(key, inst.iloc[0:0]), artifact_path=store.artifact_path,
                            out_dir=Path(audit_dir), back="../entitybench.html", item_label="episode",
                            benchmark="EntityBench", extra_columns=("tier",))
        written.add(page.name)
    # a page left from an earlier board (a generator or metric since removed) would be linked by nothing
    for old in Path(audit_dir).glob("*__*.html"):
        if old.name not in written:
            old.unlink(missing_ok=True)
    return len(written)
