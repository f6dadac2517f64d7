"""Static HTML report from the leaderboard table (jinja2)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

import pandas as pd
from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"


def render_report(*, benchmark: str, board: pd.DataFrame, manifest: dict[str, Any], out_path: str | Path,
                  dataset: Optional[pd.DataFrame] = None, crops: Optional[dict[str, list[dict]]] = None,
                  gap_decay: Optional[pd.DataFrame] = None, gap_plot: Optional[str] = None,
                  audit_link=None) -> Path:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    overall = board[board.tier == "all"]
    generators = sorted(overall["generator"].unique())
    metrics = sorted(overall["metric_id"].unique(), key=lambda m: (m.startswith("_"), m))
    cells = {(r["metric_id"], r["generator"]): r for r in overall.to_dict("records")}
    for c in cells.values():
        for k in ("value", "raw_mean", "coverage"):
            if pd.isna(c.get(k)):
                c[k] = None
    html = env.get_template("report.html.j2").render(
        benchmark=benchmark, generators=generators, metrics=metrics, cells=cells, manifest=manifest,
        n_items=int(board["n_items"].max()) if len(board) else 0,
        dataset=dataset.to_dict("records") if dataset is not None and len(dataset) else None, crops=crops,
        gap_decay=gap_decay.to_dict("records") if gap_decay is not None and len(gap_decay) else None,
        gap_plot=gap_plot, audit_link=audit_link)
    out = Path(out_path)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(f".tmp-{os.getpid()}")
    tmp.write_text(html, encoding="utf-8")
    os.replace(tmp, out)
    return out
