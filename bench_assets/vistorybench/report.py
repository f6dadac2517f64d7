"""ViStoryBench HTML report and audit pages, rendered with the shared jinja2 templates."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from bench_assets.core.report import render_report
from bench_assets.core.audit import audit_filename, render_audit

METRIC_TABLES = ("vistorybench_scores", "vistorybench_alignment", "vistorybench_inception_score")


def report_board(board: pd.DataFrame) -> pd.DataFrame:
    """The full-set leaderboard in the shared report's shape: value, raw mean (= value: no gate here), coverage
    = stories scored / stories."""
    full = board[board["split"] == "full"].copy()
    full["tier"] = "all"
    full["raw_mean"] = full["value"]
    full["coverage"] = full["stories_scored"] / full["stories"].where(full["stories"] > 0)
    full["n_items"] = full["stories"]
    full["n_failed"] = 0
    full["n_skipped"] = full["stories"] - full["stories_scored"]
    return full


def write_report(store, manifest: dict[str, Any], out: Path) -> tuple[Path, int]:
    board = report_board(store.query("SELECT * FROM vistorybench_leaderboard"))
    tables = set(store.asset_tables())
    union = " UNION ALL ".join(
        f"SELECT generator, item, level, metric_id, shot, entity_id, value, n_eval, n_failed, n_skipped, reason, "
        f"crop_id, frame_index, source_sha256, detail FROM {t}" for t in METRIC_TABLES if t in tables)
    rows = store.query(union) if union else pd.DataFrame(columns=["generator", "item", "level", "metric_id"])
    audit_dir = Path(out).parent / "vistorybench_audit"
    pages = 0
    for cell in board.to_dict("records"):
        mid, gen = cell["metric_id"], cell["generator"]
        mine = rows[(rows["generator"] == gen) & ((rows["metric_id"] == mid) | rows["metric_id"].str.startswith(f"{mid}."))]
        items = mine[mine["level"] == "item"].copy()
        items["tier"] = ["lite" if str(i) in _lite() else "full" for i in items["item"]]
        render_audit(metric_id=mid, generator=gen, headline=cell, episodes=items,
                     instances=mine[mine["level"] != "item"], artifact_path=store.artifact_path, out_dir=audit_dir,
                     back="../vistorybench.html", item_label="story", benchmark="ViStoryBench",
                     extra_columns=("tier",))
        pages += 1
    path = render_report(benchmark="vistorybench", board=board, manifest=manifest, out_path=out,
                         audit_link=lambda m, g: f"vistorybench_audit/{audit_filename(m, g)}")
    return path, pages


def _lite() -> frozenset:
    from bench_assets.vistorybench.dataset import LITE
    return LITE
