"""Audit pages shared by every benchmark: headline -> per item -> per instance -> crops, frames, judge answers.

Rows whose value is None are grouped by reason (one line per reason with its count and the items it covers),
so a reason shared by 117 rows is read once; rows with a value are listed one by one (capped per page, the cap
said on the page).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional

import pandas as pd

from bench_assets.core.report import environment, fmt, is_none, write_atomic

MAX_ROWS = 400          # instance rows listed individually per audit page
MAX_ITEMS_LISTED = 12   # items named beside a grouped reason before "... and N more"


def audit_filename(metric_id: str, generator: str) -> str:
    return f"{metric_id}__{generator}.html"


def clean(v: Any) -> Any:
    return None if is_none(v) else v


def group_reasons(rows: pd.DataFrame, *, item_col: str = "item", value_col: str = "value") -> list[dict]:
    """Rows without a value, one entry per distinct reason: reason, count, the first items, how many more.

    Most frequent first; a row with no reason at all is grouped under "no reason recorded".
    """
    if rows is None or rows.empty or value_col not in rows.columns:
        return []
    none = rows[rows[value_col].isna()]
    if none.empty:
        return []
    reasons = none["reason"].astype("string").fillna("no reason recorded") if "reason" in none.columns \
        else pd.Series("no reason recorded", index=none.index)
    out = []
    for reason, part in none.groupby(reasons, sort=False):
        items = sorted({str(i) for i in part[item_col].dropna()}) if item_col in part.columns else []
        out.append({"reason": str(reason), "count": int(len(part)), "items": items[:MAX_ITEMS_LISTED],
                    "more_items": max(0, len(items) - MAX_ITEMS_LISTED), "n_items": len(items)})
    return sorted(out, key=lambda g: (-g["count"], g["reason"]))


def _detail(v: Any) -> Optional[str]:
    if is_none(v) or v == "":
        return None
    if isinstance(v, str):
        try:
            return json.dumps(json.loads(v), indent=1, sort_keys=True)
        except ValueError:
            return v
    return json.dumps(v, indent=1, sort_keys=True, default=str)


def instance_records(instances: pd.DataFrame, artifact_path: Callable[[str], str], out_dir: Path,
                     limit: int = MAX_ROWS) -> tuple[dict[str, list[dict]], int]:
    """Instance rows with a value (or with no reason to group them by) per item, crop paths relative to the page."""
    if instances is None or instances.empty:
        return {}, 0
    keep = instances
    if "value" in keep.columns:
        keep = keep[keep["value"].notna() | (keep["reason"].isna() if "reason" in keep.columns else True)]
    sort = [c for c in ("item", "shot", "entity_id") if c in keep.columns]
    if sort:
        keep = keep.sort_values(sort, na_position="first")
    total = len(keep)
    by_item: dict[str, list[dict]] = {}
    for r in keep.head(limit).to_dict("records"):
        r = {k: clean(v) for k, v in r.items()}
        crop = r.get("crop_id")
        r["crop_src"] = None
        if crop:
            try:
                r["crop_src"] = os.path.relpath(artifact_path(crop), out_dir)
            except ValueError:
                r["crop_src"] = None
        r["detail"] = _detail(r.get("detail"))
        by_item.setdefault(str(r.get("item", "")), []).append(r)
    return by_item, total


def render_audit(*, metric_id: str, generator: str, headline: dict, episodes: pd.DataFrame,
                 instances: pd.DataFrame, artifact_path, out_dir: Path, back: str = "../index.html",
                 item_label: str = "item", css: str = "../site.css", benchmark: str = "",
                 extra_columns: tuple[str, ...] = ()) -> Path:
    """One audit page: the headline cell, per-item values, instance rows, None rows grouped by reason."""
    out_dir = Path(out_dir)
    items = episodes if episodes is not None else pd.DataFrame()
    inst = instances if instances is not None else pd.DataFrame()
    by_item, n_rows = instance_records(inst, artifact_path, out_dir)
    item_rows = items
    if "value" in item_rows.columns and "reason" in item_rows.columns:
        item_rows = item_rows[item_rows["value"].notna() | item_rows["reason"].isna()]
    html = environment().get_template("site/audit.html.j2").render(
        css=css, back=back, benchmark=benchmark, metric=metric_id, generator=generator, item_label=item_label,
        headline={k: clean(v) for k, v in headline.items()},
        item_reasons=group_reasons(items), instance_reasons=group_reasons(inst),
        items=[{k: clean(v) for k, v in r.items()} for r in item_rows.to_dict("records")],
        n_items=len(items), instances=by_item, n_instances=n_rows, shown=min(n_rows, MAX_ROWS),
        extra_columns=[c for c in extra_columns if c in item_rows.columns], fmt=fmt)
    return write_atomic(out_dir / audit_filename(metric_id, generator), html)
