"""Shared report rendering for the report site (core/site.py, the one report system): the jinja2 environment,
helpers for cells and files, and hand-built static SVG charts.

Charts are plain SVG strings (no script, no external font) so a page opened from disk shows them; every
function returns a complete ``<svg>`` element, or a short ``<p class="none">`` when there is nothing to draw,
never an empty picture.
"""
from __future__ import annotations

import functools
import math
import os
import shutil
from html import escape
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import pandas as pd
from jinja2 import Environment, FileSystemLoader, select_autoescape

TEMPLATES = Path(__file__).resolve().parents[1] / "templates"
STYLESHEET = TEMPLATES / "site" / "site.css"
PALETTE = ("#3366cc", "#dc3912", "#ff9900", "#109618", "#990099", "#0099c6", "#dd4477", "#66aa00",
           "#b82e2e", "#316395", "#994499", "#22aa99")


@functools.lru_cache(maxsize=1)
def environment() -> Environment:
    """One jinja2 environment per process, so each template is compiled once."""
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(["html", "j2"]))
    env.filters["fmt"] = fmt
    env.filters["count"] = count
    return env


def is_none(v: Any) -> bool:
    if v is None or v is pd.NA:
        return True
    try:
        return bool(pd.isna(v))
    except (TypeError, ValueError):
        return False


def fmt(v: Any, digits: int = 3) -> str:
    """A number for a table cell: None stays the word None (no silent zero)."""
    if is_none(v):
        return "None"
    if isinstance(v, bool):
        return str(v)
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if abs(x) >= 100:
        return f"{x:.1f}"
    return f"{x:.{digits}f}"


def count(v: Any) -> str:
    """A count for a table cell: 5, not 5.0; None stays None."""
    if is_none(v):
        return "None"
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    return str(int(f)) if f.is_integer() else f"{f:g}"


def write_atomic(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.tmp-{os.getpid()}")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path


def copy_stylesheet(out_dir: Path) -> Path:
    """The one stylesheet every page links (``site.css`` in the report's root folder)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    dst = out_dir / "site.css"
    shutil.copyfile(STYLESHEET, dst)
    return dst


# ----------------------------------------------------------------------------- SVG charts

def _color(series: str, order: Sequence[str]) -> str:
    try:
        i = list(order).index(series)
    except ValueError:
        i = abs(hash(series))
    return PALETTE[i % len(PALETTE)]


def _nothing(what: str) -> str:
    return f'<p class="none">{escape(what)}</p>'


def _scale(values: Iterable[float]) -> tuple[float, float]:
    """Axis range that keeps each benchmark's published scale readable: [0,1], [0,100] or the data's range."""
    vals = [float(v) for v in values if not is_none(v)]
    lo = min([0.0, *vals])
    hi = max([0.0, *vals])
    if hi <= 1.0 and lo >= 0.0:
        return 0.0, 1.0
    if 1.0 < hi <= 100.0 and lo >= 0.0:
        return 0.0, 100.0
    if hi == lo:
        hi = lo + 1.0
    return lo, hi


def bar_chart_svg(rows: Sequence[dict], series_order: Sequence[str], *, title: str = "",
                  scale: Optional[tuple[float, float]] = None, width: int = 760) -> str:
    """Horizontal grouped bars, one group per metric and one bar per generator.

    ``rows``: dicts with ``label`` (the metric), ``series`` (the generator), ``value`` (or None) and optional
    ``coverage`` in [0,1], ``note`` (tooltip) and ``mark`` (written after the value: ``*`` a substitute model
    produced it, ``+`` an addition, ``^`` the paper's definition where it differs from the reference code, ``~``
    ungated, ``?`` gate unknown; the same marks as core/board_text). The thick bar is the value; the thin strip under it is the coverage
    (full axis width = 100 %), so a high value computed on few items is visibly thin underneath. A None value
    is written as None with no bar.
    """
    rows = [r for r in rows if r.get("label") is not None]
    if not rows:
        return _nothing(f"{title}: not evaluated" if title else "not evaluated")
    labels: list[str] = []
    for r in rows:
        if r["label"] not in labels:
            labels.append(r["label"])
    series = [s for s in series_order if any(r["series"] == s for r in rows)]
    series += sorted({r["series"] for r in rows} - set(series))
    lo, hi = scale or _scale(r.get("value") for r in rows)
    longest = max(len(str(lab)) for lab in labels)
    left, right, bar_h, gap, top = min(210, 12 + 6 * min(longest, 34)), 90, 11, 10, 34
    plot_w = width - left - right
    group_h = len(series) * (bar_h + 4) + gap
    legend_h = 18 * math.ceil(len(series) / _legend_columns(width))
    height = top + len(labels) * group_h + 26 + legend_h

    def x(v: float) -> float:
        return left + (min(max(v, lo), hi) - lo) / (hi - lo) * plot_w

    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
           f'<title>{escape(title)}</title>',
           f'<text x="{left}" y="16" class="ct">{escape(title)}</text>']
    for t in range(5):  # grid
        v = lo + (hi - lo) * t / 4
        out.append(f'<line x1="{x(v):.1f}" y1="{top - 6}" x2="{x(v):.1f}" y2="{top + len(labels) * group_h}" '
                   f'class="grid"/><text x="{x(v):.1f}" y="{top + len(labels) * group_h + 14}" class="tick" '
                   f'text-anchor="middle">{fmt(v, 2)}</text>')
    by = {(r["label"], r["series"]): r for r in rows}
    for gi, lab in enumerate(labels):
        y0 = top + gi * group_h
        out.append(f'<text x="{left - 6}" y="{y0 + group_h / 2:.1f}" class="lab" text-anchor="end">'
                   f'{escape(str(lab))[:34]}</text>')
        for si, s in enumerate(series):
            r = by.get((lab, s))
            if r is None:
                continue
            y = y0 + si * (bar_h + 4)
            tip = f"{lab} / {s}: {fmt(r.get('value'))}"
            cov = r.get("coverage")
            if not is_none(cov):
                tip += f", coverage {float(cov):.2f}"
            if r.get("note"):
                tip += f" ({r['note']})"
            if is_none(r.get("value")):
                out.append(f'<text x="{left + 4}" y="{y + bar_h - 2}" class="nonev"><title>{escape(tip)}</title>'
                           f'None</text>')
                continue
            v = float(r["value"])
            x0, x1 = sorted((x(max(lo, 0.0)), x(v)))
            out.append(f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1.0):.1f}" height="{bar_h - 3}" '
                       f'fill="{_color(s, series_order)}"><title>{escape(tip)}</title></rect>')
            if not is_none(cov):
                c = min(max(float(cov), 0.0), 1.0)
                out.append(f'<rect x="{left}" y="{y + bar_h - 2}" width="{plot_w:.1f}" height="2" class="covbg"/>'
                           f'<rect x="{left}" y="{y + bar_h - 2}" width="{c * plot_w:.1f}" height="2" '
                           f'class="cov"><title>coverage {c:.2f}</title></rect>')
            out.append(f'<text x="{x1 + 4:.1f}" y="{y + bar_h - 3}" class="val">{fmt(v)}{escape(r.get("mark") or "")}'
                       f'{"" if is_none(cov) else f" ({float(cov):.0%})"}</text>')
    out.append(_legend(series, series_order, top + len(labels) * group_h + 22, width))
    out.append("</svg>")
    return "".join(out)


_LEGEND_LABEL_CHARS = 24


def _legend_columns(width: int) -> int:
    """As many columns as fit a swatch and a full label (about 6.6 px a character): four fixed columns made long
    generator names run into the next entry."""
    return max(1, (width - 20) // (14 + int(6.6 * _LEGEND_LABEL_CHARS) + 10))


def _legend(series: Sequence[str], order: Sequence[str], y: float, width: int) -> str:
    parts = []
    cols = _legend_columns(width)
    col_w = (width - 20) // cols
    for i, s in enumerate(series):
        cx = 10 + (i % cols) * col_w
        cy = y + 18 * (i // cols)
        parts.append(f'<rect x="{cx}" y="{cy}" width="10" height="10" fill="{_color(s, order)}"/>'
                     f'<text x="{cx + 14}" y="{cy + 9}" class="lab">{escape(s[:_LEGEND_LABEL_CHARS])}</text>')
    return "".join(parts)


def line_chart_svg(x_labels: Sequence[str], series: dict[str, Sequence[tuple[Optional[float], int]]],
                   series_order: Sequence[str], *, title: str = "", y_label: str = "", width: int = 520,
                   height: int = 300) -> str:
    """One line per series over ordered x labels; each point carries its pair count (n=...) in the tooltip and
    as a label. A None point breaks the line (nothing is interpolated)."""
    pts = [v for s in series.values() for v, _ in s if not is_none(v)]
    if not pts:
        return _nothing(f"{title}: not evaluated" if title else "not evaluated")
    lo, hi = _scale(pts)
    if lo == 0.0 and hi == 1.0:
        lo = max(0.0, math.floor(min(pts) * 10) / 10 - 0.1)
    extra_rows = math.ceil(len(series) / _legend_columns(width)) - 1
    height += 18 * max(extra_rows, 0)           # legend rows below the plot, never cut off
    left, right, top, bottom = 54, 16, 28, 64 + 18 * max(extra_rows, 0)
    pw, ph = width - left - right, height - top - bottom
    n = max(len(x_labels), 1)

    def px(i: int) -> float:
        return left + (i + 0.5) * pw / n

    def py(v: float) -> float:
        return top + ph - (v - lo) / ((hi - lo) or 1.0) * ph

    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
           f'<text x="{left}" y="16" class="ct">{escape(title)}</text>']
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        out.append(f'<line x1="{left}" y1="{py(v):.1f}" x2="{left + pw}" y2="{py(v):.1f}" class="grid"/>'
                   f'<text x="{left - 4}" y="{py(v) + 3:.1f}" class="tick" text-anchor="end">{fmt(v, 2)}</text>')
    for i, lab in enumerate(x_labels):
        out.append(f'<text x="{px(i):.1f}" y="{top + ph + 14}" class="tick" text-anchor="middle">{escape(lab)}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{top + ph + 30}" class="lab" text-anchor="middle">'
               f'{escape(y_label)}</text>')
    names = [s for s in series_order if s in series] + sorted(set(series) - set(series_order))
    for s in names:
        col = _color(s, series_order)
        seg: list[str] = []
        for i, (v, cnt) in enumerate(series[s]):
            if is_none(v):
                if len(seg) > 1:
                    out.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{col}" stroke-width="2"/>')
                seg = []
                continue
            seg.append(f"{px(i):.1f},{py(float(v)):.1f}")
            out.append(f'<circle cx="{px(i):.1f}" cy="{py(float(v)):.1f}" r="3.5" fill="{col}">'
                       f'<title>{escape(s)} {escape(x_labels[i])}: {fmt(v)} (n={cnt})</title></circle>'
                       f'<text x="{px(i) + 5:.1f}" y="{py(float(v)) - 5:.1f}" class="tick">n={cnt}</text>')
        if len(seg) > 1:
            out.append(f'<polyline points="{" ".join(seg)}" fill="none" stroke="{col}" stroke-width="2"/>')
    out.append(_legend(names, series_order, height - 22 - 18 * max(extra_rows, 0), width))
    out.append("</svg>")
    return "".join(out)


def heatmap_svg(row_labels: Sequence[str], col_labels: Sequence[str], values: dict[tuple[str, str], Any], *,
                title: str = "", vmax: float = 100.0, width: int = 360,
                marks: Optional[dict[tuple[str, str], str]] = None,
                tips: Optional[dict[tuple[str, str], str]] = None) -> str:
    """A grid of cells coloured by value (white = 0, dark = vmax), the number written in each; a missing cell
    is an empty grey box and a None cell says None. ``marks``: text after a cell's number (``*``: a substitute
    model produced it); ``tips``: added to its tooltip (which model)."""
    marks = marks or {}
    tips = tips or {}
    if not row_labels or not col_labels:
        return _nothing(f"{title}: not evaluated" if title else "not evaluated")
    left, top, cw, ch = 60, 40, (width - 70) / len(col_labels), 26
    height = int(top + ch * len(row_labels) + 10)
    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
           f'<text x="4" y="14" class="ct">{escape(title)}</text>']
    for j, c in enumerate(col_labels):
        out.append(f'<text x="{left + (j + 0.5) * cw:.1f}" y="{top - 6}" class="tick" text-anchor="middle">'
                   f'{escape(c)}</text>')
    for i, r in enumerate(row_labels):
        y = top + i * ch
        out.append(f'<text x="{left - 6}" y="{y + ch / 2 + 4:.1f}" class="lab" text-anchor="end">{escape(r)}</text>')
        for j, c in enumerate(col_labels):
            x = left + j * cw
            if (r, c) not in values:
                out.append(f'<rect x="{x:.1f}" y="{y}" width="{cw - 2:.1f}" height="{ch - 2}" class="missing">'
                           f'<title>{escape(r)} x {escape(c)}: no item</title></rect>')
                continue
            v = values[(r, c)]
            if is_none(v):
                out.append(f'<rect x="{x:.1f}" y="{y}" width="{cw - 2:.1f}" height="{ch - 2}" class="missing">'
                           f'<title>{escape(r)} x {escape(c)}: None</title></rect>'
                           f'<text x="{x + cw / 2:.1f}" y="{y + ch / 2 + 4:.1f}" class="nonev" '
                           f'text-anchor="middle">None</text>')
                continue
            t = min(max(float(v) / vmax, 0.0), 1.0)
            shade = int(245 - 180 * t)
            fill = f"rgb({shade},{int(250 - 120 * t)},{255 - int(40 * t)})"
            txt = "#fff" if t > 0.6 else "#222"
            out.append(f'<rect x="{x:.1f}" y="{y}" width="{cw - 2:.1f}" height="{ch - 2}" fill="{fill}">'
                       f'<title>{escape(r)} x {escape(c)}: {fmt(v)}{escape(tips.get((r, c), ""))}</title></rect>'
                       f'<text x="{x + cw / 2:.1f}" y="{y + ch / 2 + 4:.1f}" fill="{txt}" class="tick" '
                       f'text-anchor="middle">{fmt(v, 1)}{escape(marks.get((r, c), ""))}</text>')
    out.append("</svg>")
    return "".join(out)


def interval_chart_svg(rows: Sequence[dict], *, title: str = "", width: int = 760) -> str:
    """Effect sizes with their interval (validity page): ``label``, ``value``, ``low``, ``high``, ``passed``, ``limit`` (a miss documented as a blind spot of the definition: amber)."""
    rows = [r for r in rows if r.get("label") is not None]
    if not rows:
        return _nothing(f"{title}: not evaluated" if title else "not evaluated")
    vals = [float(r[k]) for r in rows for k in ("value", "low", "high") if not is_none(r.get(k))]
    lo, hi = (min([0.0, *vals]), max([0.0, *vals])) if vals else (-1.0, 1.0)
    if hi == lo:
        hi = lo + 1.0
    pad = (hi - lo) * 0.08
    lo, hi = lo - pad, hi + pad
    left, right, top, rh = 260, 40, 30, 18
    pw = width - left - right
    height = top + rh * len(rows) + 30

    def x(v: float) -> float:
        return left + (v - lo) / (hi - lo) * pw

    out = [f'<svg class="chart" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}"><title>{escape(title)}</title>',
           f'<text x="{left}" y="16" class="ct">{escape(title)}</text>',
           f'<line x1="{x(0):.1f}" y1="{top - 4}" x2="{x(0):.1f}" y2="{top + rh * len(rows)}" class="zero"/>']
    for i, r in enumerate(rows):
        y = top + i * rh + rh / 2
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" class="lab" text-anchor="end">'
                   f'{escape(str(r["label"]))[:44]}</text>')
        col = ("#e69f00" if r.get("limit") else "#109618" if r.get("passed") is True
               else "#dc3912" if r.get("passed") is False else "#888")
        if not is_none(r.get("low")) and not is_none(r.get("high")):
            out.append(f'<line x1="{x(float(r["low"])):.1f}" y1="{y:.1f}" x2="{x(float(r["high"])):.1f}" '
                       f'y2="{y:.1f}" stroke="{col}" stroke-width="2"/>')
        if is_none(r.get("value")):
            out.append(f'<text x="{x(0) + 4:.1f}" y="{y + 4:.1f}" class="nonev">None</text>')
        else:
            out.append(f'<circle cx="{x(float(r["value"])):.1f}" cy="{y:.1f}" r="4" fill="{col}">'
                       f'<title>{escape(str(r["label"]))}: d = {fmt(r["value"])} '
                       f'[{fmt(r.get("low"))}, {fmt(r.get("high"))}]</title></circle>')
    for t in range(5):
        v = lo + (hi - lo) * t / 4
        out.append(f'<text x="{x(v):.1f}" y="{top + rh * len(rows) + 16}" class="tick" text-anchor="middle">'
                   f'{fmt(v, 2)}</text>')
    out.append("</svg>")
    return "".join(out)
