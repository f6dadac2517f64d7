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

import numpy as np
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

    Most frequent first; a row with no reason at all is grouped under "no reason recorded". A row marked
    ``evidence`` (a tracked box, a frame: what a value was computed from, never a value itself) is not a missing
    value and is listed with the instances instead. ``rows`` is a DataFrame or a list of dicts (pure Python: an
    audit build calls this hundreds of times on small inputs).
    """
    groups: dict[str, list[dict]] = {}
    for r in _records(rows):
        if value_col not in r or r[value_col] is not None or r.get("evidence"):
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


CROPS_DIR = "crops"   # the site's folder of crops cut from tracked boxes (beside ``frames/``)


def _box(v: Any) -> Optional[tuple[float, float, float, float]]:
    try:
        b = json.loads(v) if isinstance(v, str) else v
        x1, y1, x2, y2 = (float(t) for t in b)
    except (TypeError, ValueError):
        return None
    return x1, y1, x2, y2


def evenly(rows: list, k: int) -> list:
    """``k`` of ``rows`` evenly spaced, first and last included (all of them when there are no more than ``k``):
    the boxes an audit page cuts crops from."""
    if len(rows) <= k:
        return list(rows)
    return [rows[int(round(i * (len(rows) - 1) / (k - 1)))] for i in range(k)]


def crop_file(crops_dir: Path, video: str, frame: int, box) -> Optional[Path]:
    """Where the crop of ``box`` (xyxy, frame pixels) in frame ``frame`` of ``video`` is kept: named by the
    video's path, size and mtime, the frame and the box, so a rebuild (and every other page showing the same box)
    reuses it and a replaced video gets new crops. None when the video is gone."""
    import hashlib
    try:
        st = os.stat(video)
    except OSError:
        return None
    key = f"{os.path.abspath(video)}|{st.st_size}|{st.st_mtime_ns}|{int(frame)}|" \
          + ",".join(f"{v:.2f}" for v in box)
    return Path(crops_dir) / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.png"


def cut_box_crops(rows: list[dict], crops_dir: Path) -> None:
    """Rows that name a box in a frame of a video (``crop_video``, ``frame_index``, ``crop_box`` as xyxy in the
    frame's native pixels, as a tracker wrote it) get ``crop_path``: that region of that frame, clipped to the frame,
    as a PNG under ``crops_dir``. Frames are decoded once per video, in one pass (core.media.VideoSource), only for
    crops not already on disk. A row whose video is gone, whose frame cannot be decoded or whose box lies outside
    the frame gets no crop and says why in ``crop_note``."""
    import cv2

    from bench_assets.core.media import VideoSource
    need: dict[str, dict[int, list[tuple[dict, Path, tuple]]]] = {}
    for r in rows:
        video, box = r.get("crop_video"), _box(r.get("crop_box"))
        if not video or box is None or r.get("frame_index") is None:
            continue
        path = crop_file(crops_dir, str(video), int(r["frame_index"]), box)
        if path is None:
            r["crop_note"] = f"no crop: {video} is gone"
        elif path.exists():
            r["crop_path"] = str(path)
        else:
            need.setdefault(str(video), {}).setdefault(int(r["frame_index"]), []).append((r, path, box))
    for video, by_frame in need.items():
        try:
            src = VideoSource(video)
            idx = [k for k in by_frame if 0 <= k < src.n_frames]
            req = src.take(idx, name="audit crops")
            src.run()
            frames = dict(zip(req.indices, req.frames))
        except Exception as e:  # noqa: BLE001 - a video that cannot be read loses its crops, not the page
            for todo in by_frame.values():
                for r, _, _ in todo:
                    r["crop_note"] = f"no crop: {type(e).__name__}: {str(e)[:120]}"
            continue
        Path(crops_dir).mkdir(parents=True, exist_ok=True)
        for k, todo in by_frame.items():
            for r, path, (x1, y1, x2, y2) in todo:
                f = frames.get(k)
                if f is None:
                    r["crop_note"] = f"no crop: frame {k} is not in the video ({src.n_frames} frames)"
                    continue
                h, w = f.shape[:2]
                a, b = max(0, int(round(x1))), max(0, int(round(y1)))
                c, d = min(w, int(round(x2))), min(h, int(round(y2)))
                if c - a < 1 or d - b < 1:
                    r["crop_note"] = f"no crop: the box lies outside the {w}x{h} frame"
                    continue
                tmp = path.with_name(f"{path.stem}.tmp-{os.getpid()}.png")
                cv2.imwrite(str(tmp), cv2.cvtColor(np.ascontiguousarray(f[b:d, a:c]), cv2.COLOR_RGB2BGR))
                os.replace(tmp, path)
                r["crop_path"] = str(path)


def instance_records(instances, artifact_path: Callable[[str], str], out_dir: Path,
                     limit: int = MAX_ROWS, crops_dir: Optional[Path] = None) -> tuple[dict[str, list[dict]], int]:
    """Instance rows with a value (or with no reason to group them by) per item, crop paths relative to the page.
    Rows without a value but with a reason are left to ``group_reasons``. A crop is a stored artifact
    (``crop_id``) or the box a row names in a frame of its video (``cut_box_crops``, into ``crops_dir``)."""
    keep = [r for r in _records(instances) if r.get("value") is not None or not r.get("reason")]
    keep.sort(key=_sort_key)
    if crops_dir is not None and any(r.get("crop_box") is not None for r in keep[:limit]):
        cut_box_crops(keep[:limit], crops_dir)
    by_item: dict[str, list[dict]] = {}
    for r in keep[:limit]:
        crop = r.get("crop_id")
        r["crop_src"] = None
        if r.get("crop_path"):
            r["crop_src"] = os.path.relpath(r["crop_path"], out_dir)
        elif crop:
            try:
                r["crop_src"] = os.path.relpath(artifact_path(crop), out_dir)
            except ValueError:
                r["crop_src"] = None
        r["detail"] = _detail(r.get("detail"))
        if r.get("crop_note"):
            r["detail"] = f"{r['detail']}\n{r['crop_note']}" if r["detail"] else r["crop_note"]
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
    # the site's crops folder: audit pages sit in <site>/audit/<benchmark>/
    by_item, n_rows = instance_records(inst, artifact_path, out_dir, crops_dir=out_dir.parent.parent / CROPS_DIR)
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
