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


def _records(rows) -> list[dict]:
    if rows is None:
        return []
    if isinstance(rows, pd.DataFrame):
        return [{k: clean(v) for k, v in r.items()} for r in rows.to_dict("records")]
    return [{k: clean(v) for k, v in r.items()} for r in rows]


def group_reasons(rows, *, item_col: str = "item", value_col: str = "value") -> list[dict]:
    """Rows without a value, one entry per distinct reason: reason, count, the first items, how many more.

    Most frequent first; a row with no reason at all is grouped under "no reason recorded". ``rows`` is a
    DataFrame or a list of dicts (pure Python: an audit build calls this hundreds of times on small inputs).
    """
    groups: dict[str, list[dict]] = {}
    for r in _records(rows):
        if value_col not in r or r[value_col] is not None:
            continue
        groups.setdefault(str(r.get("reason") or "no reason recorded"), []).append(r)
    out = []
    for reason, part in groups.items():
        items = sorted({str(r[item_col]) for r in part if r.get(item_col) is not None})
        out.append({"reason": reason, "count": len(part), "items": items[:MAX_ITEMS_LISTED],
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


def _sort_key(r: dict) -> tuple:
    return tuple((r.get(k) is not None, str(r.get(k)) if not isinstance(r.get(k), (int, float)) else "",
                  r.get(k) if isinstance(r.get(k), (int, float)) else 0) for k in ("item", "shot", "entity_id"))


def instance_records(instances, artifact_path: Callable[[str], str], out_dir: Path,
                     limit: int = MAX_ROWS) -> tuple[dict[str, list[dict]], int]:
    """Instance rows with a value (or with no reason to group them by) per item, crop paths relative to the page.
    Rows without a value but with a reason are left to ``group_reasons``."""
    keep = [r for r in _records(instances) if r.get("value") is not None or not r.get("reason")]
    keep.sort(key=_sort_key)
    by_item: dict[str, list[dict]] = {}
    for r in keep[:limit]:
        crop = r.get("crop_id")
        r["crop_src"] = None
        if crop:
            try:
                r["crop_src"] = os.path.relpath(artifact_path(crop), out_dir)
            except ValueError:
                r["crop_src"] = None
        r["detail"] = _detail(r.get("detail"))
        by_item.setdefault(str(r.get("item", "")), []).append(r)
    return by_item, len(keep)


def render_audit(*, metric_id: str, generator: str, headline: dict, episodes: pd.DataFrame,
                 instances: pd.DataFrame, artifact_path, out_dir: Path, back: str = "../index.html",
                 item_label: str = "item", css: str = "../site.css", benchmark: str = "",
                 extra_columns: tuple[str, ...] = ()) -> Path:
    """One audit page: the headline cell, per-item values, instance rows, None rows grouped by reason."""
    out_dir = Path(out_dir)
    items = _records(episodes)
    inst = _records(instances)
    by_item, n_rows = instance_records(inst, artifact_path, out_dir)
    item_rows = [r for r in items if r.get("value") is not None or not r.get("reason")]
    columns = set().union(*(r.keys() for r in item_rows)) if item_rows else set()
    html = environment().get_template("site/audit.html.j2").render(
        css=css, back=back, benchmark=benchmark, metric=metric_id, generator=generator, item_label=item_label,
        headline={k: clean(v) for k, v in headline.items()},
        item_reasons=group_reasons(items), instance_reasons=group_reasons(inst),
        items=item_rows, n_items=len(items), instances=by_item, n_instances=n_rows, shown=min(n_rows, MAX_ROWS),
        extra_columns=[c for c in extra_columns if c in columns], fmt=fmt,
        has_frames=any(r.get("frames") for r in item_rows))
    return write_atomic(out_dir / audit_filename(metric_id, generator), html)
