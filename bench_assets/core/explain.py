"""What a partition's materialization metadata shows in the UI: the answers to "why is this number what it is".

Per metric of the partition a rounded value with its coverage, one Markdown table of the values (evaluated / what
should have been, generator and evaluator failures apart, the reason for a None, a link to the metric's audit page),
one Markdown table of the per-unit rows (shots, appearances, pairs) worst first, and crop previews of the worst rows
that the report server (`bench ui`) serves. Pure: the rows in, the metadata out; the asset modules pass their frame.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Optional

import pandas as pd

from bench_assets.core.records import number_or_none as _num

MAX_UNIT_ROWS = 15
MAX_PREVIEWS = 6


def _int(v: Any) -> int:
    f = _num(v)
    return int(f) if f is not None else 0


def _href(url: Optional[str]) -> Optional[str]:
    """A URL as a Markdown link target: characters a metric id may hold (``herd.Emotional Response``) escaped, so
    the link is not cut at the space; the server unquotes them back to the file name."""
    from urllib.parse import quote
    return quote(url, safe=":/?#[]@!$&'*+,;=%") if url else None


def fmt_value(v: Any, digits: int = 4) -> str:
    f = _num(v)
    return "None" if f is None else f"{f:.{digits}g}" if abs(f) >= 1000 else f"{round(f, digits)}"


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA:
        return ""
    try:
        if pd.isna(v):
            return ""
    except (TypeError, ValueError):
        pass
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return str(v).replace("|", "\\|").replace("\n", " ")[:120]


def _shot(r: Mapping) -> str:
    return f"shot {_cell(r.get('shot'))}" if _cell(r.get("shot")) else ""


def coverage_text(n_eval: int, n_failed: int, n_skipped: int, n_failed_evaluator: int = 0) -> str:
    """'12/12 evaluated' or '9/12 evaluated (2 failed, 1 skipped; 1 evaluator failure)'."""
    total = n_eval + n_failed + n_skipped + n_failed_evaluator
    gen = ", ".join(f"{n} {what}" for n, what in ((n_failed, "failed"), (n_skipped, "skipped")) if n)
    ev = f"{n_failed_evaluator} evaluator failure{'s' if n_failed_evaluator != 1 else ''}" if n_failed_evaluator \
        else ""
    note = "; ".join(x for x in (gen, ev) if x)
    return f"{n_eval}/{total} evaluated" + (f" ({note})" if note else "")


def worst_first(units: pd.DataFrame, direction: Callable[[str], str], within_metric: bool = True) -> pd.DataFrame:
    """Rows without a value (failed, skipped) first; then each metric's worst row, then each metric's second worst,
    ... (metrics have different scales, so rows are ranked within their metric: ascending where higher is better,
    descending where lower is better), metrics in their first-appearance order. ``within_metric=False``: the
    metrics share one scale (e.g. questions right / wrong in %), so the rows are ranked together, worst first."""
    if units.empty:
        return units
    vals = pd.to_numeric(units["value"], errors="coerce").astype(float)
    lower = units["metric_id"].map(lambda m: direction(str(m)) == "lower")
    key = vals.where(~lower, -vals)  # worst = smallest key
    metric = units["metric_id"].astype(str)
    first = {m: i for i, m in reversed(list(enumerate(metric)))}
    rank = key.groupby(metric.values).rank(method="first") if within_metric else key.rank(method="first")
    order = sorted(range(len(units)), key=lambda i: (not math.isnan(key.iloc[i]),
                                                     0.0 if math.isnan(key.iloc[i]) else rank.iloc[i],
                                                     first[metric.iloc[i]]))
    return units.iloc[order]


def explain_metadata(df: pd.DataFrame, *, benchmark: str, generator: str,
                     directions: Mapping[str, str], audit_url: Callable[[str], Optional[str]],
                     artifact_url: Optional[Callable[[str], Optional[str]]] = None,
                     unit_cols: tuple[str, ...] = ("shot", "entity_id", "frame_index", "crop_id"),
                     unit_label: str = "shots, appearances, pairs", within_metric: bool = True) -> dict:
    """``{metric_id: rounded value, ..., 'values': Markdown, 'per_unit': Markdown, 'worst_crops': Markdown}``.

    ``df``: the partition's long metric table (``level`` 'item' rows are the partition's values, other levels the
    units behind them; a table without ``level`` is all values). ``directions``: metric id -> 'higher' / 'lower'.
    ``audit_url(metric_id)``: the audit page of the metric for this generator. ``artifact_url(crop_id)``: where a
    browser gets the crop (None: no preview). ``unit_label``: what the unit rows are on this benchmark (the per-unit
    table's title says it); ``within_metric``: see ``worst_first``."""
    from dagster import MetadataValue

    direction = (lambda m: directions.get(m, "higher"))
    if "level" in df.columns:
        items = df[df["level"] == "item"]
        units = df[df["level"] != "item"]
    else:
        items, units = df, df.iloc[0:0]
    out: dict[str, Any] = {}
    lines = ["| metric | value | coverage | reason | audit |", "|---|---|---|---|---|"]
    for r in items.to_dict("records"):
        mid = str(r["metric_id"])
        v = _num(r.get("value"))
        out[mid] = round(v, 4) if v is not None else "None"
        cov = coverage_text(_int(r.get("n_eval")), _int(r.get("n_failed")), _int(r.get("n_skipped")),
                            _int(r.get("n_failed_evaluator")))
        url = _href(audit_url(mid))
        lines.append(f"| {mid} | {fmt_value(v)} | {cov} | {_cell(r.get('reason'))} | "
                     f"{f'[audit]({url})' if url else ''} |")
    if len(items):
        out["values"] = MetadataValue.md(f"**{generator}** on {benchmark}: rounded values, coverage "
                                         f"(evaluated / what the metric should have read) and the audit page\n\n"
                                         + "\n".join(lines))
    if len(units):
        ranked = worst_first(units, direction, within_metric)
        cols = ["metric_id", "level", *[c for c in unit_cols if c in ranked.columns], "value", "reason"]
        head = ranked.head(MAX_UNIT_ROWS)
        rows = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
        for r in head.to_dict("records"):
            rows.append("| " + " | ".join(fmt_value(r[c]) if c == "value" and _num(r[c]) is not None
                                          else _cell(r[c])[:12] if c == "crop_id" else _cell(r[c])
                                          for c in cols) + " |")
        more = len(ranked) - len(head)
        note = f"\n\n{more} more rows: the audit pages list every one." if more > 0 else ""
        out["per_unit"] = MetadataValue.md(f"{len(ranked)} unit rows ({unit_label}), worst first "
                                           f"(no value, then the lowest where higher is better)\n\n"
                                           + "\n".join(rows) + note)
        if artifact_url is not None and "crop_id" in ranked.columns:
            pics = []
            for r in ranked.to_dict("records"):
                url = _href(artifact_url(r["crop_id"])) if _cell(r.get("crop_id")) else None
                if url:
                    pics.append(f"![{_cell(r['metric_id'])} {fmt_value(r['value'])}]({url}) "
                                f"{_cell(r['metric_id'])} = {fmt_value(r['value'])} "
                                f"({', '.join(x for x in (_shot(r), _cell(r.get('entity_id'))) if x)})")
                if len(pics) >= MAX_PREVIEWS:
                    break
            if pics:
                out["worst_crops"] = MetadataValue.md("\n\n".join(pics))
    return out


def artifact_url_fn(store, base_url: str) -> Callable[[str], Optional[str]]:
    """crop id (an artifact's sha256) -> its URL on the report server (``base_url`` is the site's, the artifacts sit
    two levels up: ``<store>/reports/site`` vs ``<store>/artifacts``)."""
    import os
    root = base_url.rsplit("/reports/site", 1)[0]

    def url(sha: str) -> Optional[str]:
        try:
            path = store.artifact_path(str(sha))
        except (ValueError, TypeError):
            return None
        if not os.path.exists(path):
            return None
        rel = os.path.relpath(path, str(store.root)).replace(os.sep, "/")
        return None if rel.startswith("..") else f"{root}/{rel}"

    return url
