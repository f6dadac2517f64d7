"""One static report site for the whole store: an overview, a page per benchmark, audit pages, validity.

The site knows no benchmark. It renders each entry of the registry it is given from three things: the
benchmark's ``BenchmarkPage`` (core/page.py: words, tables, and callables for the parts only that benchmark has),
its ``MetricSpecs`` (family, direction, scale, the paper's metric or an addition) and its leaderboard in the
common board schema (core/metric_spec.BOARD_COLUMNS). So a metric is grouped, scaled and marked the same way on
the site as on the board and in the CLI, and "coverage" is the board's coverage column everywhere: items (or
instances) evaluated / items the metric should have read.

Everything is read from the store's tables through DuckDB (``Store.query``), nothing is recomputed. A table that
is missing, empty or not in the common schema makes its part say "not evaluated" (with why); the rest renders.
Charts are inline static SVG (core/report.py), images are relative links into the store's artifacts, so the site
opens from disk.

    build_site(store, benchmarks, out_dir=None) -> Path of index.html   (default out_dir: <store>/reports/site)
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional

import pandas as pd

from bench_assets.core import audit as AU
from bench_assets.core import imported_results as IR
from bench_assets.core import report as R
from bench_assets.core import validity as V
from bench_assets.core.board_text import detail_notes, episodes
from bench_assets.core.metric_spec import BOARD_COLUMNS, PAPER_DEFINITION, split_substitutes
from bench_assets.core.page import BenchmarkPage, PageContext
from bench_assets.core.report import fmt, is_none

GALLERY_MAX = 24
REQUIRED = ("generator", "metric_id", "slice", "value")   # without these a table is not a board
UNDECLARED = "undeclared (no MetricSpec)"
ARROWS = {"higher": "\u2191", "lower": "\u2193"}


# ----------------------------------------------------------------------------- reading

class Reader:
    """Store queries that return None (and remember why) instead of raising: a missing table, an empty one or a
    schema being changed by another writer must not take the site down."""

    def __init__(self, store):
        self.store = store
        try:
            self.tables = set(store.asset_tables())
        except Exception as e:  # noqa: BLE001 - an unreadable store is shown, not raised
            self.tables, self.error = set(), f"{type(e).__name__}: {e}"
        self.problems: dict[str, str] = {}
        self._cache: dict[str, Optional[pd.DataFrame]] = {}
        self._con = None

    def has(self, table: str) -> bool:
        return table in self.tables

    def table(self, table: str, sql: Optional[str] = None) -> Optional[pd.DataFrame]:
        if table not in self.tables:
            self.problems.setdefault(table, "table not in the store")
            return None
        sql = sql or f'SELECT * FROM "{table}"'
        if sql in self._cache:
            df = self._cache[sql]
            return None if df is None or df.empty else df.copy()
        try:
            df = self._query(sql)
        except Exception as e:  # noqa: BLE001 - e.g. a view with no complete Parquet file yet
            self.problems[table] = f"unreadable ({type(e).__name__}: {str(e).splitlines()[0][:160]})"
            self._cache[sql] = None
            return None
        self._cache[sql] = df
        if df.empty:
            self.problems.setdefault(table, "table is empty")
            return None
        return df.copy()

    def _query(self, sql: str) -> pd.DataFrame:
        """One DuckDB connection (views over every table) for the whole build: making the views is the slow
        part, not the queries."""
        if self._con is None:
            self._con = self.store.duckdb()
        return self._con.execute(sql).df()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def col(df: pd.DataFrame, name: str, default: Any = None) -> pd.Series:
    return df[name] if name in df.columns else pd.Series([default] * len(df), index=df.index, dtype="object")


def num(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce").astype("float64")


def _flag(v: Any) -> bool:
    return not is_none(v) and str(v).lower() not in ("false", "0", "")


# ----------------------------------------------------------------------------- the board, read with its specs

def prepare_board(raw: pd.DataFrame, specs) -> tuple[Optional[pd.DataFrame], Optional[str]]:
    """The common board with what the specs say about each metric: ``family``, ``direction``, ``kind``
    (metric | aggregate | diagnostic | undeclared), ``spec_scale``, ``description``; ``addition`` from the spec
    (a board cannot present an addition as the paper's). (None, why) when the table is not a board."""
    missing = [c for c in REQUIRED if c not in raw.columns]
    if missing:
        return None, (f"not in the common board schema (no {', '.join(missing)} column; has "
                      f"{', '.join(sorted(map(str, raw.columns)))[:200]})")
    b = raw.reindex(columns=list(BOARD_COLUMNS)).copy()
    b["generator"] = b["generator"].astype("string")
    b["metric_id"] = b["metric_id"].astype("string")
    b["slice"] = b["slice"].astype("string").fillna("none")
    b = b.dropna(subset=["generator", "metric_id"]).reset_index(drop=True)
    for c in ("value", "raw_mean", "coverage", "n_items", "n_eval", "n_skipped", "n_failed", "n_failed_evaluator",
              "n_decode_warnings"):
        b[c] = num(b[c])
    # object columns: a missing text stays None (a string dtype would hand the templates NaN)
    for c in ("reason", "substitute", "protocol", "detail", "definition", "gate"):
        b[c] = pd.Series([None if is_none(v) or str(v) == "" else str(v) for v in b[c]], index=b.index, dtype=object)
    b["baseline"] = [_flag(v) for v in b["baseline"]]
    b["comparable"] = pd.Series([None if is_none(v) else _flag(v) for v in b["comparable"]], index=b.index,
                                dtype=object)
    fam, dirn, kind, scale, desc, add, paper = [], [], [], [], [], [], []
    for mid, board_add in zip(b["metric_id"], b["addition"]):
        s = specs.get(mid) if specs is not None else None
        if s is None:
            fam.append(UNDECLARED), dirn.append("none"), kind.append("undeclared"), scale.append(None)
            desc.append("no MetricSpec declares this id"), add.append(_flag(board_add)), paper.append(None)
            continue
        fam.append(s.family), dirn.append(s.direction), kind.append(s.kind), scale.append(s.scale)
        desc.append(s.description), add.append(s.addition), paper.append(s.paper_id)
    for c, vals in (("family", fam), ("direction", dirn), ("kind", kind), ("spec_scale", scale),
                    ("description", desc), ("paper_id", paper)):
        b[c] = pd.Series(vals, index=b.index, dtype=object)
    b["addition"] = pd.Series(add, index=b.index, dtype=bool)
    return b, None


def family_order(specs, board: pd.DataFrame) -> dict[str, int]:
    """Families in the order the specs declare them (the benchmark's own order), then any other."""
    order: dict[str, int] = {}
    for s in (specs or ()):
        order.setdefault(s.family, len(order))
    for f in sorted(set(board["family"])):
        order.setdefault(f, len(order))
    return order


class Footnotes:
    """Numbers for the distinct substitute models of a page: a cell says ``*1``, the legend under its table says
    which model 1 is and for which metrics."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}
        self.metrics: dict[str, set] = {}

    def mark(self, label: Any, metric_id: str = "") -> list[int]:
        out = []
        for p in split_substitutes(label):
            n = self.numbers.setdefault(p, len(self.numbers) + 1)
            self.metrics.setdefault(p, set()).add(metric_id)
            out.append(n)
        return out

    def legend(self, numbers: Optional[Iterable[int]] = None) -> list[dict]:
        keep = None if numbers is None else set(numbers)
        return [{"n": n, "model": p, "metrics": sorted(self.metrics.get(p, ()))[:8],
                 "more": max(0, len(self.metrics.get(p, ())) - 8)}
                for p, n in self.numbers.items() if keep is None or n in keep]


# ----------------------------------------------------------------------------- the benchmark page

@dataclass
class BenchPage:
    name: str
    title: str
    href: str
    about: str
    status: str = "ok"
    status_reason: str = ""
    headline_label: str = ""
    headlines: dict = field(default_factory=dict)
    overview_chart: str = ""
    n_generators: int = 0
    n_metrics: int = 0
    n_values: int = 0
    n_cells: int = 0
    n_additions: int = 0
    family_charts: list = field(default_factory=list)
    addition_charts: list = field(default_factory=list)
    sections: list = field(default_factory=list)
    views: list = field(default_factory=list)
    addition_views: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    galleries: list = field(default_factory=list)
    models: dict = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)
    substitutes: list = field(default_factory=list)
    protocols: list = field(default_factory=list)
    baselines: set = field(default_factory=set)
    audit_count: int = 0
    tables: list = field(default_factory=list)
    decode_warnings: list = field(default_factory=list)   # "generator: N files read with decode warnings"
    definitions: list = field(default_factory=list)       # (metric id, the paper's definition vs the reference)
    imported: list = field(default_factory=list)          # imported official results, one block per source
    scale_note: str = ""
    item_label: str = "item"


def order_generators(gens, baselines) -> list[str]:
    return sorted(set(gens), key=lambda g: (g in baselines, g))


def scale_class(values) -> tuple[float, float]:
    """An axis for metrics without a declared scale: [0,1], [0,10], [0,100] or the data's range."""
    vals = [float(v) for v in values if not is_none(v)]
    hi = max(vals, default=0.0)
    lo = min(vals, default=0.0)
    if lo < 0:
        return R._scale(vals)
    for top in (1.0, 10.0, 100.0):
        if hi <= top:
            return 0.0, top
    return R._scale(vals)


def metric_scale(part: pd.DataFrame) -> tuple[float, float]:
    """The spec's scale when it declares one, else one from the values."""
    declared = [s for s in part["spec_scale"] if s is not None] if "spec_scale" in part else []
    if declared:
        return tuple(declared[0])
    return scale_class(part["value"])


def bar_rows(df: pd.DataFrame, label_col: str = "metric_id") -> list[dict]:
    """Chart rows; a substituted value carries its mark (``*``) beside the number and the model in the tooltip,
    an addition its ``+``."""
    out = []
    for r in df.to_dict("records"):
        gates = str(r["gate"]).split("+") if not is_none(r.get("gate")) else []
        mark = ("*" if r.get("substitute") and not is_none(r.get("value")) else "") + \
               ("+" if r.get("addition") else "") + ("^" if not is_none(r.get("definition")) else "") + \
               ("~" if "ungated" in gates else "") + ("?" if "gate unknown" in gates else "")
        note = [] if is_none(r.get("reason")) else [str(r["reason"])[:120]]
        if r.get("substitute") and not is_none(r.get("value")):
            note.append(f"substitute: {r['substitute']}")
        if not is_none(r.get("definition")):
            note.append(str(r["definition"]))
        if gates:
            note.append(f"fidelity gate: {r['gate']}")
        out.append({"label": r[label_col], "series": r["generator"],
                    "value": None if is_none(r["value"]) else r["value"],
                    "coverage": None if is_none(r.get("coverage")) else r["coverage"],
                    "note": "; ".join(note) or None, "mark": mark or None})
    return out


def family_charts(part: pd.DataFrame, order: list[str], fam_rank: Mapping[str, int], suffix: str = "") -> list[str]:
    """One bar chart per family in the specs' order, split by scale (a [0,100] metric does not flatten [0,1]
    ones). A family where nothing has a value is one line naming its reasons, not an empty chart."""
    charts = []
    for fam in sorted(part["family"].unique(), key=lambda f: (fam_rank.get(f, 10**6), f)):
        p = part[part["family"] == fam]
        title = f"{fam}{suffix}"
        if p["value"].isna().all():
            charts.append(none_note(title, p["reason"], p["metric_id"].nunique()))
            continue
        scales: dict[tuple, list[str]] = {}
        empty = []
        for mid, m in p.groupby("metric_id", sort=True):
            if m["spec_scale"].notna().any() or m["value"].notna().any():
                scales.setdefault(metric_scale(m), []).append(mid)
            else:
                empty.append(mid)  # drawn as None beside the others, on their scale
        if empty:
            biggest = max(scales, key=lambda k: len(scales[k]))
            scales[biggest] = sorted(scales[biggest] + empty)
        for sc, mids in scales.items():
            sub = p[p["metric_id"].isin(mids)].sort_values("metric_id", kind="stable")
            t = title if len(scales) == 1 else f"{title} ({sc[0]:g}-{sc[1]:g})"
            charts.append(R.bar_chart_svg(bar_rows(sub), order, title=t, scale=sc, width=620))
    return charts


def none_note(title: str, reasons: Iterable, n_metrics: Optional[int] = None) -> str:
    why = sorted({str(r)[:140] for r in reasons if not is_none(r)})[:3]
    count = f" ({n_metrics} metrics)" if n_metrics is not None else ""
    return (f'<p class="none family-none"><b>{escape(title)}</b>: no value{count}'
            f'{": " + escape("; ".join(why)) if why else ""}</p>')


def chart_or_note(rows: list[dict], order: list[str], title: str, **kw) -> str:
    """A bar chart, or one line saying why nothing has a value (an all-None chart is only noise)."""
    if rows and all(is_none(r.get("value")) for r in rows):
        return none_note(title, [r.get("note") for r in rows])
    return R.bar_chart_svg(rows, order, title=title, **kw)


def table_html(df: Optional[pd.DataFrame], table_id: str = "", limit: int = 200) -> str:
    """A small DataFrame as an HTML table (numbers through ``fmt``, None written out)."""
    if df is None or df.empty:
        return '<p class="none">not evaluated: no row</p>'
    head = "".join(f'<th class="text">{escape(str(c))}</th>' for c in df.columns)
    body = []
    for r in df.head(limit).itertuples(index=False):
        cells = []
        for v in r:
            if is_none(v):
                cells.append('<td class="none">None</td>')
            elif isinstance(v, (int, float)) and not isinstance(v, bool):
                cells.append(f"<td>{escape(R.count(v) if float(v).is_integer() else fmt(v))}</td>")
            else:
                cells.append(f'<td class="text">{escape(str(v))}</td>')
        body.append(f"<tr>{''.join(cells)}</tr>")
    more = f'<p class="small">first {limit} of {len(df)} rows</p>' if len(df) > limit else ""
    tid = f' id="{escape(table_id)}"' if table_id else ""
    return f"<table{tid}><tr>{head}</tr>{''.join(body)}</table>{more}"


def _cell(r: dict, notes: Footnotes, audit_href: Callable[[str, str], Optional[str]]) -> dict:
    c = {k: (None if is_none(v) else v) for k, v in r.items()}
    c["sub_marks"] = notes.mark(c.get("substitute"), c["metric_id"]) if c.get("value") is not None else []
    tip = [f"n_eval {R.count(c.get('n_eval'))}, n_failed {R.count(c.get('n_failed'))} (generator), "
           f"n_failed_evaluator {R.count(c.get('n_failed_evaluator'))}, n_skipped {R.count(c.get('n_skipped'))}"]
    if c.get("substitute"):
        tip.append(f"substitute: {c['substitute']}")
    if c.get("definition"):
        tip.append(str(c["definition"]))
    if c.get("gate"):
        tip.append(f"fidelity gate: {c['gate']}")
    c["gates"] = str(c["gate"]).split("+") if c.get("gate") else []
    if c.get("reason"):
        tip.append(str(c["reason"])[:300])
    tip += detail_notes(c.get("detail"))   # e.g. EntityBench: episodes averaged, the Eq. 23-25 addition's value
    ep = episodes(c.get("detail"))
    c["episodes"] = None if ep is None else f"ep {ep[0]}/{ep[1]}"
    if c.get("detail"):
        tip.append(str(c["detail"])[:300])
    c["tooltip"] = "; ".join(tip)
    c["audit"] = audit_href(c["metric_id"], c["generator"])
    return c


def _view(part: pd.DataFrame, key: str, label: str, main: bool, order: list[str], fam_rank: Mapping[str, int],
          notes: Footnotes, audit_href: Callable[[str, str], Optional[str]]) -> dict:
    """One table: a row per metric (grouped: the paper's metrics, then diagnostics, then undeclared ids), a
    column per generator; the substitute models of its cells listed under it."""
    groups: dict[str, list[dict]] = {}
    for mid, m in part.groupby("metric_id", sort=False):
        first = m.iloc[0]
        kind = first["kind"]
        group = ("undeclared" if kind == "undeclared" else "diagnostic" if kind == "diagnostic" else "metric")
        groups.setdefault(group, []).append({
            "metric_id": mid, "family": first["family"], "arrow": ARROWS.get(first["direction"], ""),
            "direction": first["direction"], "description": first["description"], "aggregate": kind == "aggregate",
            "paper_id": None if first["paper_id"] in (None, mid) or is_none(first["paper_id"]) else first["paper_id"]})
    for g in groups.values():
        g.sort(key=lambda m: (fam_rank.get(m["family"], 10**6), m["family"], m["metric_id"]))
    titles = {"metric": "", "diagnostic": "diagnostics (not ranked as metrics)",
              "undeclared": "undeclared: no MetricSpec names these ids"}
    cells = {}
    for r in part.to_dict("records"):
        cells[(r["metric_id"], r["generator"])] = _cell(r, notes, audit_href)
    used = sorted({n for c in cells.values() for n in c["sub_marks"]})
    gens = order_generators(part["generator"], set(part.loc[part["baseline"], "generator"]))
    return {"key": re.sub(r"[^A-Za-z0-9_-]", "_", key), "label": label, "main": main,
            "groups": [{"title": titles[g], "metrics": groups[g]} for g in ("metric", "diagnostic", "undeclared")
                       if g in groups],
            "n_metrics": sum(len(v) for v in groups.values()),
            "generators": [g for g in order if g in gens] + [g for g in gens if g not in order], "cells": cells,
            "legend": notes.legend(used)}


def decode_warning_notes(board: pd.DataFrame) -> list[str]:
    """One line per generator whose files were read with decode warnings (the board's ``n_decode_warnings``)."""
    n = board.dropna(subset=["n_decode_warnings"])
    n = n[n["n_decode_warnings"] > 0].groupby("generator")["n_decode_warnings"].max()
    return [f"{g}: {int(k)} file{'' if k == 1 else 's'} read with decode warnings (cut short, frames lost or "
            f"concealed, a wrong rate header); the values stand on what was decoded" for g, k in sorted(n.items())]


def reason_groups(main: pd.DataFrame, limit: int = 10) -> list[dict]:
    """Leaderboard cells without a value, one line per reason: how many cells, which metrics and generators."""
    none = main[main["value"].isna()]
    out = []
    for reason, part in none.groupby(none["reason"].fillna("no reason recorded"), sort=False):
        mids = sorted(part["metric_id"].unique())
        out.append({"reason": str(reason), "count": len(part), "metrics": mids[:limit],
                    "more_metrics": max(0, len(mids) - limit), "generators": sorted(part["generator"].unique())})
    return sorted(out, key=lambda g: (-g["count"], g["reason"]))


def headline(page: BenchmarkPage, main: pd.DataFrame, notes: Footnotes) -> tuple[str, dict]:
    """The first of the page's headline metrics any generator has a value for (never an addition or an undeclared
    id). Each generator's cell: value (None keeps its reason: an aggregate missing a part is no headline number),
    the board's coverage, the substitute model."""
    eligible = main[~main["addition"] & main["kind"].isin(["metric", "aggregate"])]
    chosen = next((m for m in page.headline if eligible.loc[eligible["metric_id"] == m, "value"].notna().any()),
                  next((m for m in page.headline if (eligible["metric_id"] == m).any()), None))
    out = {}
    for g in order_generators(main["generator"], set()):
        row = eligible[(eligible["generator"] == g) & (eligible["metric_id"] == chosen)] if chosen \
            else eligible.iloc[0:0]
        r = row.iloc[0] if len(row) else None
        value = None if r is None or is_none(r["value"]) else float(r["value"])
        reason = None if r is None or is_none(r["reason"]) else str(r["reason"])
        if r is None:
            reason = f"{chosen or 'the headline metric'} is not on the board for this generator"
        sub = None if r is None or value is None else r["substitute"]
        out[g] = {"value": value, "reason": reason,
                  "coverage": None if r is None or is_none(r["coverage"]) else float(r["coverage"]),
                  "substitute": sub, "sub_marks": notes.mark(sub, chosen or "") if sub else [],
                  "baseline": bool(main.loc[main["generator"] == g, "baseline"].any())}
        ep = None if r is None or value is None else episodes(r.get("detail"))
        out[g]["episodes"] = None if ep is None else f"ep {ep[0]}/{ep[1]}"   # items averaged (EntityBench)
    return chosen or "no headline metric", out


# ----------------------------------------------------------------------------- images

def artifact_src(store, sha: str, page_dir: Path) -> Optional[str]:
    try:
        path = store.artifact_path(str(sha))
    except ValueError:
        return None
    if not os.path.exists(path):
        return None
    return os.path.relpath(path, page_dir)


def galleries(page: BenchmarkPage, reader: Reader, page_dir: Path) -> list[dict]:
    """Crops (``crop_id``) and frames (``frame_id`` / ``*_frame_id`` columns that name a stored PNG) of the first
    item per generator, from the page's tables."""
    out = []
    for t in dict.fromkeys([*page.gallery_tables, *page.metric_tables]):
        df = reader.table(t)
        if df is None:
            continue
        id_cols = [c for c in df.columns if c == "crop_id" or c == "frame_id" or c.endswith("_frame_id")]
        if not id_cols:
            continue
        item_col = item_column(df, page.item_column)
        gen_col = "generator" if "generator" in df.columns else None
        for c in id_cols:
            d = df[df[c].notna()]
            if d.empty:
                continue
            kind = "crop" if c == "crop_id" else "frame"
            for gen, part in (d.groupby(gen_col) if gen_col else [("all", d)]):
                if item_col:
                    part = part[part[item_col] == sorted(part[item_col].astype(str))[0]]
                seen, images = set(), []
                for r in part.to_dict("records"):
                    if r[c] in seen or len(images) >= GALLERY_MAX:
                        continue
                    seen.add(r[c])
                    src = artifact_src(reader.store, r[c], page_dir)
                    if src is None:
                        continue
                    bits = [str(r.get(k)) for k in ("shot", "entity_id", "status", "frame_index", "character")
                            if k in r and not is_none(r.get(k))]
                    images.append({"src": src, "caption": " ".join(bits) or str(r[c])[:12]})
                if images:
                    where = f" {item_col} {part[item_col].iloc[0]}" if item_col else ""
                    out.append({"title": f"{kind}s from {t}: {gen}{where}", "kind": kind, "images": images})
        if len(out) >= 8:
            break
    return out[:8]


IMAGE_EXT = (".png", ".jpg", ".jpeg", ".webp")
THUMB_W = 192


def thumbnails(video: str, out_dir: Path, n: int = 6, indices: Optional[list[int]] = None) -> list[tuple[str, int]]:
    """A few evenly spaced frames of ``video`` as small PNGs under ``out_dir/frames`` (named by the file's path,
    size and mtime, so a rebuild reuses them); [(path, frame index)]. Seeks to each frame: the video is never
    decoded whole. A video that cannot be opened gives []."""
    import cv2
    try:
        st = os.stat(video)
    except OSError:
        return []
    key = hashlib.sha256(f"{os.path.abspath(video)}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:20]
    cap = cv2.VideoCapture(str(video))
    try:
        total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        if total <= 0:
            return []
        idx = indices if indices is not None else sorted({int(round(i * (total - 1) / max(n - 1, 1)))
                                                          for i in range(n)})
        out = []
        (out_dir / "frames").mkdir(parents=True, exist_ok=True)
        for i in idx:
            path = out_dir / "frames" / f"{key}_{i}.png"
            if not path.exists():
                cap.set(cv2.CAP_PROP_POS_FRAMES, i)
                ok, frame = cap.read()
                if not ok or frame is None:
                    continue
                h, w = frame.shape[:2]
                small = cv2.resize(frame, (THUMB_W, max(1, int(h * THUMB_W / w))), interpolation=cv2.INTER_AREA)
                tmp = path.with_name(f"{path.stem}.tmp-{os.getpid()}.png")
                cv2.imwrite(str(tmp), small)
                os.replace(tmp, path)
            out.append((str(path), i))
        return out
    finally:
        cap.release()


def first_per_generator(df: pd.DataFrame, gen_col: str, item_col: str) -> list[tuple[str, str, pd.DataFrame]]:
    """(generator, its first item, that item's rows) for each generator."""
    out = []
    for gen, part in df.groupby(gen_col, sort=True):
        first = sorted(part[item_col].astype(str))[0]
        out.append((str(gen), first, part[part[item_col].astype(str) == first]))
    return out


def video_frames(ctx: PageContext, table: str, item_col: str, video_of: Callable[[str, str], Path],
                 n: int = 8) -> list[dict]:
    """Evenly spaced frames of the first item's video per generator (``video_of(generator, item)``)."""
    df = ctx.reader.table(table, f'SELECT DISTINCT generator, "{item_col}" AS item FROM "{table}"')
    out = []
    if df is None:
        return out
    for gen, item, _ in first_per_generator(df, "generator", "item"):
        imgs = [{"src": os.path.relpath(p, ctx.out_dir), "caption": f"frame {i}"}
                for p, i in thumbnails(str(video_of(gen, item)), ctx.out_dir, n=n)]
        if imgs:
            out.append({"title": f"frames: {gen} {ctx.page.item_label} {item}", "kind": "frame", "images": imgs})
    return out


def _manifest(reader: Reader, page: BenchmarkPage) -> dict:
    for t in page.manifest_tables:
        df = reader.table(t)
        if df is None or "manifest_json" not in df.columns:
            continue
        try:
            return json.loads(df["manifest_json"].dropna().iloc[-1])
        except (ValueError, IndexError):
            continue
    return {}


# ----------------------------------------------------------------------------- audit sources

AUDIT_COLUMNS = ("generator", "item", "level", "metric_id", "value", "n_eval", "n_failed", "n_skipped", "shot",
                 "frame_index", "entity_id", "reason", "crop_id", "source_sha256", "detail")


def item_column(df: pd.DataFrame, other: str = "item") -> Optional[str]:
    """The column naming the item: ``item`` (the long metric tables), else the page's own (e.g. an episode id)."""
    return next((c for c in ("item", other) if c in df.columns), None)


def metric_rows(df: pd.DataFrame, item_col: str = "item") -> pd.DataFrame:
    """One long metric table in the audit shape (generator, item, level, metric_id, value, n_*, shot,
    frame_index, entity_id, reason, crop_id, source_sha256, detail); a column the table lacks is None."""
    item_col = item_column(df, item_col)
    d = pd.DataFrame({"generator": col(df, "generator").astype(object),
                      "item": (df[item_col] if item_col else pd.Series("", index=df.index)).astype(str),
                      "level": col(df, "level", "item").fillna("item").astype(object),
                      "metric_id": df["metric_id"].astype(object), "value": num(col(df, "value"))})
    for c in AUDIT_COLUMNS[5:]:
        d[c] = col(df, c)
    return d


def read_metric_rows(reader: Reader, tables: Iterable[str], item_col: str = "item") -> Optional[pd.DataFrame]:
    """Every row of the given metric tables in the audit shape, or None when none is readable."""
    frames = [metric_rows(df, item_col) for df in (reader.table(t) for t in tables)
              if df is not None and "metric_id" in df.columns]
    return pd.concat(frames, ignore_index=True) if frames else None


def board_unit_rows(page: BenchmarkPage, reader: Reader) -> Optional[pd.DataFrame]:
    """The rows behind the board in the audit shape (the page's own reader, else its metric tables)."""
    return page.audit_rows(reader, page.metric_tables) if page.audit_rows \
        else read_metric_rows(reader, page.metric_tables, page.item_column)


class RowIndex:
    """The audit rows split once by (generator, metric_id), so each audit page picks its rows without scanning
    the whole table again."""

    def __init__(self, rows: pd.DataFrame):
        self.rows = rows
        self.by_gen = {g: part for g, part in rows.groupby("generator", sort=False)}
        self.by_cell = {k: part for k, part in rows.groupby(["generator", "metric_id"], sort=False)}
        self.metrics: dict[str, list[str]] = {}
        for g, m in self.by_cell:
            self.metrics.setdefault(g, []).append(m)

    def generator_rows(self, generator: str) -> pd.DataFrame:
        mine = self.by_gen.get(generator)
        return mine if mine is not None else self.rows.iloc[0:0]

    def rows_for(self, metric_id: str, generator: str) -> pd.DataFrame:
        """The metric's own rows and those of its ``<metric_id>.*`` parts."""
        keys = [m for m in self.metrics.get(generator, []) if m == metric_id or str(m).startswith(f"{metric_id}.")]
        if not keys:
            return self.rows.iloc[0:0]
        return pd.concat([self.by_cell[(generator, k)] for k in keys]) if len(keys) > 1 \
            else self.by_cell[(generator, keys[0])]


AUDIT_FRAMES = 4  # frames per item row on an audit page (item_video benchmarks)


def entity_names(reader: Reader, page: BenchmarkPage) -> dict[tuple[str, str], str]:
    """(item, entity id) -> the entity's name, from the benchmark's ``<name>_entity_registry`` table when it has
    (item or ``page.item_column``, ``entity_id``, ``name``); per item, as two episodes may reuse an id for
    different entities. Empty when the benchmark keeps no such table: the audit pages then show the ids."""
    table = f"{page.name}_entity_registry"
    df = reader.table(table) if reader.has(table) else None
    item = item_column(df, page.item_column) if df is not None else None
    if item is None or not {"entity_id", "name"} <= set(df.columns):
        return {}
    return {(str(i), str(e)): str(n) for i, e, n in zip(df[item], df["entity_id"], df["name"])
            if not is_none(n) and str(n).strip()}


def write_audits(page: BenchmarkPage, reader: Reader, board: pd.DataFrame, main_key: str,
                 out_dir: Path) -> set[tuple[str, str]]:
    """One audit page per (metric, generator): the main slice's cell, or for a metric only other slices have
    (e.g. an addition's own slice) its first one. Headline -> per item -> per instance -> crops, frames, judge
    answers; None rows grouped by reason."""
    rows = board_unit_rows(page, reader)
    written: set[tuple[str, str]] = set()
    audit_dir = out_dir / "audit" / page.name
    if rows is not None and not rows.empty:
        _write_audit_pages(page, reader, board, main_key, rows, audit_dir, written)
    # a page left from an earlier board (a generator or metric since removed) would be linked by nothing
    keep = {AU.audit_filename(m, g) for m, g in written}
    for old in audit_dir.glob("*__*.html") if audit_dir.is_dir() else ():
        if old.name not in keep:
            old.unlink(missing_ok=True)
    return written


def _write_audit_pages(page: BenchmarkPage, reader: Reader, board: pd.DataFrame, main_key: str, rows: pd.DataFrame,
                       audit_dir: Path, written: set) -> None:
    index = RowIndex(rows)
    pick = page.rows_for or (lambda ix, m, g: ix.rows_for(m, g))
    extra_cols = page.item_columns(reader) if page.item_columns else {}
    extra = tuple(dict.fromkeys(k for v in extra_cols.values() for k in v))
    ordered = pd.concat([board[board["slice"] == main_key], board[board["slice"] != main_key]])
    site_root = audit_dir.parent.parent
    names = entity_names(reader, page)
    seen_frames: dict[tuple[str, str], list[dict]] = {}

    def frames_of(gen: str, item: str) -> list[dict]:
        """A few frames of the video behind an item's rows, linked relative to the audit page (once per video)."""
        if (gen, item) not in seen_frames:
            try:
                video = page.item_video(gen, item)
                found = thumbnails(str(video), site_root, n=AUDIT_FRAMES) if video is not None else []
            except Exception:  # noqa: BLE001 - a video that cannot be read loses its frames, not the page
                found = []
            seen_frames[(gen, item)] = [{"src": os.path.relpath(p, audit_dir), "caption": f"frame {i}"}
                                        for p, i in found]
        return seen_frames[(gen, item)]

    for cell in ordered.to_dict("records"):
        mid, gen = cell["metric_id"], cell["generator"]
        if (mid, gen) in written:
            continue
        mine = pick(index, mid, gen)
        if mine.empty:
            continue
        items = mine[mine["level"] == "item"].copy()
        for c in extra:
            items[c] = [extra_cols.get(str(i), {}).get(c) for i in items["item"]]
        if page.item_video is not None:
            items["frames"] = [frames_of(gen, str(i)) for i in items["item"]]
        head = {k: v for k, v in cell.items() if k not in ("spec_scale",)}
        inst = mine[mine["level"] != "item"]
        if names and len(inst):
            inst = inst.assign(entity_name=[names.get((str(i), str(e))) if not is_none(e) else None
                                            for i, e in zip(inst["item"], inst["entity_id"])])
        AU.render_audit(metric_id=mid, generator=gen, headline=head, episodes=items,
                        instances=inst, artifact_path=reader.store.artifact_path,
                        out_dir=audit_dir, back=f"../../{page.href}", item_label=page.item_label,
                        css="../../site.css", benchmark=page.title, extra_columns=extra)
        written.add((mid, gen))


# ----------------------------------------------------------------------------- building

PROTOCOL_METRICS_SHOWN = 12  # metric ids named per protocol line before "and N more"


def protocol_lines(board: pd.DataFrame) -> list[dict]:
    """One entry per distinct protocol digest on the board (a cell under several, '+'-joined, counts for each):
    the digest, the metrics it covers (in board order) and how many cells, so the page header can say how many
    protocols there are and list each with what it covers instead of writing every digest in one line."""
    cover: dict[str, dict[str, int]] = {}
    for mid, v in zip(board["metric_id"], board["protocol"]):
        if is_none(v):
            continue
        for p in filter(None, re.split(r"[,+]", str(v))):
            cover.setdefault(p, {}).setdefault(str(mid), 0)
            cover[p][str(mid)] += 1
    out = []
    for p, mids in cover.items():
        names = list(mids)
        out.append({"digest": p, "short": p[:12], "metrics": names[:PROTOCOL_METRICS_SHOWN],
                    "more": max(0, len(names) - PROTOCOL_METRICS_SHOWN), "n_metrics": len(names),
                    "n_cells": sum(mids.values())})
    return sorted(out, key=lambda d: (-d["n_metrics"], d["digest"]))

def registry(benchmarks) -> list:
    """The benchmarks to render, in the registry's order (a dict name -> entry, or entries)."""
    entries = list(benchmarks.values()) if isinstance(benchmarks, Mapping) else list(benchmarks)
    return [b for b in entries if getattr(b, "page", None) is not None]


def _main_slice(benchmark) -> Optional[str]:
    return benchmark.page.main_slice or (getattr(benchmark, "headline", None) or {}).get("slice")


def _nav(entries: list) -> list[dict]:
    return [{"name": b.page.name, "title": b.page.title, "href": b.page.href} for b in entries]


def build_benchmark(benchmark, reader: Reader, out_dir: Path) -> BenchPage:
    """The page of one registry entry (``.page``, ``.metrics``, ``.headline``) from its board."""
    spec, specs = benchmark.page, getattr(benchmark, "metrics", None)
    page = BenchPage(spec.name, spec.title, spec.href, spec.about, scale_note=spec.scale_note,
                     item_label=spec.item_label)

    def not_evaluated(reason: str) -> BenchPage:
        page.status, page.status_reason = "none", f"{spec.leaderboard}: {reason}"
        page.imported = imported_sources(spec, reader)  # an imported file shows before any run of ours
        return page

    raw = reader.table(spec.leaderboard)
    if raw is None:
        return not_evaluated(reader.problems.get(spec.leaderboard, 'not readable'))
    board, problem = prepare_board(raw, specs)
    if board is None:
        return not_evaluated(problem)
    if board.empty:
        return not_evaluated("no row with a generator and a metric id")
    page.baselines = set(board.loc[board["baseline"], "generator"])
    order = order_generators(board["generator"], page.baselines)
    slices = list(dict.fromkeys(board["slice"]))
    wanted = _main_slice(benchmark)
    paper_slices = [s for s in slices if (~board.loc[board["slice"] == s, "addition"]).any()]
    main_key = wanted if wanted in slices else (paper_slices or slices)[0]
    main = board[board["slice"] == main_key]
    paper_main = main[~main["addition"] & main["kind"].isin(["metric", "aggregate"])]
    fam_rank = family_order(specs, board)
    notes = Footnotes()
    page.protocols = protocol_lines(board)
    page.manifest = _manifest(reader, spec)
    page.models = page.manifest.get("models", {}) if isinstance(page.manifest.get("models"), dict) else {}
    page.headline_label, page.headlines = headline(spec, main, notes)
    page.n_generators, page.n_metrics = len(order), paper_main["metric_id"].nunique()
    page.n_cells, page.n_values = len(paper_main), int(paper_main["value"].notna().sum())
    page.n_additions = int(board.loc[board["addition"], "metric_id"].nunique())
    page.overview_chart = R.bar_chart_svg(
        [{"label": g, "series": g, "value": h["value"], "coverage": h["coverage"], "note": h["reason"],
          "mark": "*" if h["sub_marks"] else None} for g, h in page.headlines.items()],
        order, title=f"headline: {page.headline_label}",
        scale=metric_scale(main[main["metric_id"] == page.headline_label]) if len(main) else None, width=420)
    page.family_charts = family_charts(paper_main, order, fam_rank)
    adds = board[board["addition"]]
    ordered = list(dict.fromkeys([main_key, *slices]))
    for s in [x for x in ordered if x in set(adds["slice"])]:
        part = adds[(adds["slice"] == s) & adds["kind"].isin(["metric", "aggregate"])]
        if part.empty:
            continue
        suffix = "" if s == main_key else f" ({spec.slice_label} {s})"
        page.addition_charts += family_charts(part, order, fam_rank, suffix=f" [addition]{suffix}")
    ctx = PageContext(reader, board, order, specs, main_key, out_dir, spec)
    page.sections = spec.sections(ctx) if spec.sections else []

    written = write_audits(spec, reader, board, main_key, out_dir)
    page.audit_count = len(written)

    def href(mid: str, gen: str) -> Optional[str]:
        return f"audit/{spec.name}/{AU.audit_filename(mid, gen)}" if (mid, gen) in written else None

    one = len(ordered) == 1
    for s in ordered:
        part = board[board["slice"] == s]
        label = "" if one else f"{spec.slice_label} {s}"
        paper = part[~part["addition"]]
        if len(paper):
            page.views.append(_view(paper, f"{s}", label, s == main_key, order, fam_rank, notes, href))
        added = part[part["addition"]]
        if len(added):
            page.addition_views.append(_view(added, f"add-{s}", label, not page.addition_views, order, fam_rank,
                                             notes, href))
    page.reasons = reason_groups(main)
    page.decode_warnings = decode_warning_notes(board)
    defs = board.dropna(subset=["definition"]).drop_duplicates("metric_id")
    page.definitions = sorted(zip(defs["metric_id"],
                                  defs["definition"].map(lambda d: d.removeprefix(PAPER_DEFINITION))))
    page.substitutes = notes.legend()
    page.galleries = galleries(spec, reader, out_dir)
    if spec.frame_galleries:
        try:
            page.galleries += spec.frame_galleries(ctx)
        except Exception as e:  # noqa: BLE001 - a video that cannot be read loses its thumbnails, not the page
            page.galleries.append({"title": f"frames not shown ({type(e).__name__}: {str(e)[:120]})",
                                   "kind": "frame", "images": []})
    page.tables = sorted(t for t in reader.tables if t.startswith(spec.name))
    page.imported = imported_sources(spec, reader, board, main_key)
    if page.imported:
        page.tables.append(IR.TABLE)
    return page


# ----------------------------------------------------------------------------- imported official results

SIDE_BY_SIDE_MAX = 200  # per-item rows shown per source (the CSV of `bench import-results --side-by-side` has all)


def imported_sources(spec: BenchmarkPage, reader: Reader, board: Optional[pd.DataFrame] = None,
                     main_key: Optional[str] = None) -> list[dict]:
    """The benchmark's official result files imported by `bench import-results` (core/imported_results.py), one
    block per source: '<method> [imported]', the code and commit it came from, the protocol's verdict on
    comparability and its reason, its overall values (beside our same-named generator's board value, if any) and
    the per-item side by side with that generator. Kept out of the board's tables, charts and headline: an imported
    file is never ranked among ours."""
    if not reader.has(IR.TABLE):
        return []
    safe = spec.name.replace("'", "''")
    df = reader.table(IR.TABLE, f'SELECT * FROM "{IR.TABLE}" WHERE benchmark = \'{safe}\'')
    if df is None:
        return []
    df = df.reindex(columns=list(IR.COLUMNS))
    ours_items: Optional[pd.DataFrame] = None
    gens = set(board["generator"]) if board is not None else set()
    out = []
    for _, part in df.groupby("source", sort=True):
        first = part.iloc[0]
        method = str(first["method"])
        commit = None if is_none(first["commit"]) or str(first["commit"]) == "" else str(first["commit"])
        reason = None if is_none(first["comparable_reason"]) else str(first["comparable_reason"])
        block = {"label": f"{method}{IR.LABEL}", "method": method, "code": str(first["code"]),
                 "commit": commit or "commit not stated", "file": str(first["file"]),
                 "imported_at": None if is_none(first["imported_at"]) else str(first["imported_at"]),
                 "comparable": _flag(first["comparable"]), "reason": reason or IR.NOT_COMPARABLE,
                 "n_item_values": int((part["level"] == "item").sum()),
                 "n_items": int(part.loc[part["level"] == "item", "item"].nunique()),
                 "unmapped": sorted({str(m) for m in part.loc[part["metric_id"].isna(), "metric"]})}
        ov = _imported_overall(part, board, method if method in gens else None, main_key)
        valued = ov["value (our scale)"].notna() | ov["as published"].notna()
        block["overall"] = table_html(ov[valued], table_id=f"imported-overall-{_key(method)}")
        # the file's null values, one line per reason (the authors' reports list every metric, most null)
        none = ov[~valued].fillna({"note": "no value in the official file"})
        block["overall_none"] = [{"reason": str(r), "count": len(g), "slices": sorted(map(str, g["slice"].unique())),
                                  "metrics": sorted(map(str, g["metric (official key)"].unique()))}
                                 for r, g in none.groupby("note", sort=True)]
        if ours_items is None:
            rows = board_unit_rows(spec, reader)
            ours_items = (rows[rows["level"] == "item"][["generator", "item", "metric_id", "value"]]
                          if rows is not None else pd.DataFrame(columns=["generator", "item", "metric_id", "value"]))
        block.update(_imported_side_by_side(part, ours_items, method))
        out.append(block)
    return out


def _key(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", text)


def _imported_overall(part: pd.DataFrame, board: Optional[pd.DataFrame], ours: Optional[str],
                      main_key: Optional[str]) -> pd.DataFrame:
    """The source's overall values (main slice first), with our same-named generator's board value beside."""
    ov = part[part["level"] == "overall"].copy()
    ov["_main"] = ov["slice"].astype(object).map(lambda s: s != main_key)
    ov = ov.sort_values(["_main", "slice", "metric"], kind="stable")
    t = pd.DataFrame({"slice": ov["slice"].astype(object), "metric (official key)": ov["metric"].astype(object),
                      "metric (ours)": ov["metric_id"].astype(object), "value (our scale)": num(ov["value"]),
                      "as published": num(ov["value_official"])})
    if ours is not None and board is not None:
        mine = board[board["generator"] == ours].set_index(["metric_id", "slice"])["value"]
        mine = mine[~mine.index.duplicated()]
        t[f"ours: {ours}"] = [mine.get((m, s)) if not is_none(m) else None
                              for m, s in zip(ov["metric_id"], ov["slice"])]
    for c in ("n_eval", "n_failed", "n_skipped"):
        t[c] = num(ov[c])
    t["note"] = ov["note"].astype(object)
    return t.reset_index(drop=True)


def _imported_side_by_side(part: pd.DataFrame, ours: pd.DataFrame, method: str) -> dict:
    """Per item and metric, our value and theirs (IR.side_by_side) against our generator of the same name: a
    summary per metric and the rows themselves; without such a generator, why there is none."""
    if not (part["level"] == "item").any():
        return {"sbs_note": "the imported file has no per-item values", "sbs_summary": "", "sbs_rows": ""}
    if method not in set(ours["generator"]):
        return {"sbs_note": f"no generator of ours is named {method!r}: no per-item side by side here "
                            f"(bench import-results --against GENERATOR --side-by-side FILE writes one)",
                "sbs_summary": "", "sbs_rows": ""}
    sbs = IR.side_by_side(part, ours, method)
    o, t = sbs["ours"].notna(), sbs["theirs"].notna()
    both = sbs[o & t]
    summary = both.groupby("metric_id").agg(items=("item", "nunique"), ours=("ours", "mean"),
                                            theirs=("theirs", "mean"),
                                            mean_abs_delta=("delta", lambda d: d.abs().mean())).reset_index()
    rows = sbs[["item", "metric_id", "ours", "theirs", "delta"]]
    return {"sbs_note": f"against our {method}: {len(both)} item values on both sides, {int((t & ~o).sum())} only "
                        f"theirs, {int((o & ~t).sum())} only ours, {int((~o & ~t).sum())} null on both",
            "sbs_summary": table_html(summary, table_id=f"imported-sbs-summary-{_key(method)}"),
            "sbs_rows": table_html(rows, table_id=f"imported-sbs-{_key(method)}", limit=SIDE_BY_SIDE_MAX),
            "sbs_count": len(rows)}


def build_validity(reader: Reader) -> Optional[dict]:
    if not reader.has("validity"):
        return None
    df = reader.table("validity")
    cols = ["benchmark", "case", "metric_id", "expected_direction", "difference", "effect_size_d", "d_low",
            "d_high", "passed", "limitation", "reason"]
    if df is None:
        return {"rows": [], "columns": cols, "passed": 0, "limits": 0, "total": 0, "chart": ""}
    columns = [c for c in cols if c in df.columns] + [c for c in df.columns if c not in cols]
    rows = []
    for r in df.to_dict("records"):
        rows.append({k: (None if is_none(v) else v) for k, v in r.items()})
    for r in rows:
        if r.get("passed") is not None:
            r["passed"] = bool(r["passed"])
    for r in rows:
        r["verdict"] = V.verdict(r)
    passed = sum(1 for r in rows if r["verdict"] == "PASS")
    limits = sum(1 for r in rows if r["verdict"] == "LIMIT")
    chart = R.interval_chart_svg(
        [{"label": " / ".join(str(r.get(k)) for k in ("benchmark", "case", "metric_id") if r.get(k) is not None),
          "value": r.get("effect_size_d"), "low": r.get("d_low"), "high": r.get("d_high"), "passed": r.get("passed"),
          "limit": r["verdict"] == "LIMIT"}
         for r in rows], title="effect size d with its interval (green: passed, red: failed, amber: known "
                               "limitation of the definition)")
    return {"rows": rows, "columns": columns, "passed": passed, "limits": limits, "total": len(rows),
            "chart": chart}


def default_out_dir(store) -> Path:
    return Path(store.root) / "reports" / "site"


BENCH_ROOT = Path(__file__).resolve().parents[1]


REPORT_URL_ENV = "BENCH_REPORT_URL"
SITE_PREFIX = "reports/site"  # default_out_dir relative to the store root; the pages link ../../artifacts/...
SERVED = ("reports/", "artifacts/")
DEFAULT_REPORT_PORT = 3001


def report_base_url() -> str:
    """Where the links the assets write find the report site: root-relative (``/reports/site``) by default, so a
    link in the Dagster UI opens on the UI's own address, which `bench ui` makes serve the site
    (``core/ui_webserver``), and on ``serve_site``'s for any ``--report-port``: no port is baked into a stored
    link. BENCH_REPORT_URL (an absolute base ending in ``/reports/site``) is for a UI that is reached some other
    way, e.g. behind a proxy that serves the site elsewhere."""
    return (os.environ.get(REPORT_URL_ENV) or f"/{SITE_PREFIX}").rstrip("/")


def audit_url(benchmark: str, metric_id: str, generator: str) -> str:
    """The report site's audit page of one metric and generator (every unit row with its crops and frames)."""
    return f"{report_base_url()}/audit/{benchmark}/{AU.audit_filename(metric_id, generator)}"


def audit_link(benchmark: str, generator: str, specs, unit_to_board: Optional[Mapping[str, str]] = None):
    """``audit_url`` for the metrics that have an audit page, None for the rest: pages are written per board cell
    (``write_audits``), so a diagnostic row of the metric tables (``kind="diagnostic"``, e.g. EntityBench's
    ``_meta_cross_shot_gate``) or an id no spec declares gets no link rather than one that answers 404.
    ``unit_to_board``: a unit id the rows carry -> the board id whose page shows it (MBench's case scores)."""
    board = {s.id for s in specs if s.kind != "diagnostic"}
    # a spec with a pattern declares a family of board ids (NarrativeTrack's measured.<dim>.<format> cells)
    patterns = [s for s in specs if s.kind != "diagnostic" and getattr(s, "pattern", None)]
    exact = {s.id for s in specs}
    to_board = dict(unit_to_board or {})

    def link(metric_id: str) -> Optional[str]:
        mid = to_board.get(metric_id, metric_id)
        ok = mid in board or (mid not in exact and any(s.matches(mid) for s in patterns))
        return audit_url(benchmark, mid, generator) if ok else None
    return link


def serve_site(store, port: int = DEFAULT_REPORT_PORT):
    """An HTTP server on 127.0.0.1:``port`` over the store's report site and the artifacts its pages link (GET only,
    nothing else of the store); returns (server, the site's base URL). ``server.shutdown()`` stops it."""
    import functools
    import threading
    from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

    root = Path(store.root).resolve()
    default_out_dir(store).mkdir(parents=True, exist_ok=True)

    class Handler(SimpleHTTPRequestHandler):
        def send_head(self):
            from urllib.parse import unquote, urlsplit
            rel = unquote(urlsplit(self.path).path).lstrip("/")
            if ".." in rel.split("/") or not rel.startswith(SERVED):
                self.send_error(404, "only the report site and its artifacts are served")
                return None
            return super().send_head()

        def log_message(self, *_args) -> None:  # quiet: the UI's console is the webserver's
            pass

        def list_directory(self, path):  # pages and their images only, no folder listings
            self.send_error(404, "no listing")
            return None

    server = ThreadingHTTPServer(("127.0.0.1", port), functools.partial(Handler, directory=str(root)))
    threading.Thread(target=server.serve_forever, name="bench-report-http", daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/{SITE_PREFIX}"


def report_metadata(store, benchmark: str) -> dict:
    """Materialization metadata linking the store's report site: this benchmark's page and the overview, as
    path and the (root-relative, ``report_base_url``) URL of the same file on the site `bench ui` serves over HTTP
    (the pages ``build_site`` writes: ``<store>/reports/site/<benchmark>.html`` and ``index.html``). The site is
    written by `bench report`, `bench demo` and `bench evaluate`, so a leaderboard materialised from the UI says
    whether the page is there yet. A remote store has no local site: {}.
    Only the page's path is needed, so the registry is not imported: a name without a ``<name>/page.py`` is
    refused."""
    from dagster import MetadataValue
    if not re.fullmatch(r"[a-z0-9_]+", str(benchmark)) or not (BENCH_ROOT / str(benchmark) / "page.py").is_file():
        raise ValueError(f"unknown benchmark {benchmark!r}: no bench_assets/{benchmark}/page.py declares its page")
    if not getattr(store, "is_local", True):
        return {}
    out = default_out_dir(store).resolve()
    page, index = out / f"{benchmark}.html", out / "index.html"
    base = report_base_url()
    return {"report_page": MetadataValue.path(str(page)), "report_url": MetadataValue.url(f"{base}/{benchmark}.html"),
            "report_index": MetadataValue.path(str(index)), "report_index_url": MetadataValue.url(f"{base}/index.html"),
            "report_status": MetadataValue.text(
                "written" if page.is_file() else "not written when this materialised: `bench report` writes it "
                "(demo and evaluate do at their end)")}


SITE_STATE = ".site-state.json"


def site_fingerprint(store) -> str:
    """What the site is built from: every table file of the store (path, size, mtime) and the site's own code and
    templates. Equal fingerprints mean an identical site, so a run that changed nothing skips the rebuild."""
    h = hashlib.sha256()
    tables = Path(store.table_dir("x")).parent
    pkg = Path(__file__).resolve().parents[1]
    code = [Path(__file__), Path(R.__file__), Path(AU.__file__), pkg / "templates", *sorted(pkg.glob("*/page.py"))]
    for root in [tables, *code]:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for p in paths:
            try:
                st = p.stat()
            except OSError:
                continue
            h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def build_site(store, benchmarks, out_dir: Path | None = None, only_if_changed: bool = False) -> Path:
    """Write the whole site (index.html, <benchmark>.html, audit/<benchmark>/*.html, validity.html, site.css) for
    the registry's benchmarks (``bench_assets.benchmarks.BENCHMARKS``: entries with ``page``, ``metrics`` and
    ``headline``) and return the index.html path. Needs a local store (the pages link its artifacts by relative
    path). ``only_if_changed``: keep the site as it is when neither the store's tables nor the site's code changed
    since it was written (``site_fingerprint``)."""
    if not getattr(store, "is_local", True):
        raise ValueError(f"the report site is written next to a local store; {store.root} is remote")
    out = Path(out_dir) if out_dir is not None else default_out_dir(store)
    state = out / SITE_STATE
    fingerprint = site_fingerprint(store)
    if only_if_changed and (out / "index.html").is_file() and state.is_file() \
            and state.read_text(encoding="utf-8").strip() == fingerprint:
        return out / "index.html"
    state.unlink(missing_ok=True)  # a build that stops half-way leaves no claim to be current
    index = _build_site(store, benchmarks, out)
    R.write_atomic(state, fingerprint)
    return index


def _build_site(store, benchmarks, out: Path) -> Path:
    entries = registry(benchmarks)
    out.mkdir(parents=True, exist_ok=True)
    R.copy_stylesheet(out)
    env = R.environment()
    reader = Reader(store)
    nav = _nav(entries)
    validity = build_validity(reader)
    if validity is not None:
        nav = [*nav, {"name": "validity", "title": "Validity", "href": "validity.html"}]
        R.write_atomic(out / "validity.html", env.get_template("site/validity.html.j2").render(
            title="Validity", root="", nav=nav, here="validity", **validity))
    pages = []
    try:
        _build_pages(entries, reader, out, env, nav, pages)
    finally:
        reader.close()
    generators = sorted({g for p in pages for g in p.headlines})
    index = out / "index.html"
    overview_notes = Footnotes()
    for p in pages:  # the overview numbers its own substitute models (a page's numbers are its own)
        for h in p.headlines.values():
            h["overview_marks"] = overview_notes.mark(h.get("substitute"), f"{p.title}: {p.headline_label}")
    R.write_atomic(index, env.get_template("site/index.html.j2").render(
        title="Benchmarks overview", root="", nav=nav, here="index", benchmarks=pages, generators=generators,
        validity=validity, store_root=store.root, substitutes=overview_notes.legend(),
        built=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())))
    return index


def _build_pages(entries: list, reader: Reader, out: Path, env, nav: list, pages: list) -> None:
    for b in entries:
        try:
            page = build_benchmark(b, reader, out)
        except Exception as e:  # noqa: BLE001 - one benchmark's odd table must not take the other pages down
            page = BenchPage(b.page.name, b.page.title, b.page.href, b.page.about, status="error",
                             status_reason=f"the page could not be built from the store's tables "
                                           f"({type(e).__name__}: {str(e)[:200]})")
        R.write_atomic(out / page.href, env.get_template("site/benchmark.html.j2").render(
            title=f"{page.title}: leaderboard", root="", nav=nav, here=page.name, b=page))
        pages.append(page)
