"""Human alignment: Kendall tau, Spearman rho and Pearson r between human ratings of methods and metric values.

The paper's Table 2 is computed over the Lite split (20 stories), so Lite is the default. The leaderboard calls a
story split a ``slice`` (the common board schema); an outside table may name the column ``slice`` or ``split``.
Inputs, each wide or long:

* ratings: long ``method, dimension, rating`` (one row per rater is fine: ratings are averaged per method), or wide
  ``method, <dimension>, <dimension>, ...``;
* metric values: the leaderboard (``generator, slice, metric_id, value``) or an outside table, long
  ``method|generator, metric_id, value[, slice]`` or wide ``method|generator, <metric_id>, ...[, slice]``.

Pure functions (no Dagster, no store); the asset and ``bench human-alignment`` call them. ``add_arguments`` and
``table_from_args`` are the CLI's argument parsing and run, so the CLI only wires them.
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Callable, Optional

import pandas as pd

from bench_assets.vistorybench import metrics

SLICES = ("lite", "full")
DEFAULT_SLICE = "lite"  # the paper's Table 2
_METHOD_COLUMNS = ("method", "generator", "model")
COLUMNS = ["slice", "dimension", "metric_id", "kendall_tau", "kendall_p", "spearman_rho", "spearman_p", "pearson_r",
           "pearson_p", "n_methods", "methods", "reason"]


class TableError(ValueError):
    """A ratings or metrics table that cannot be read; the message names the file and what is wrong."""


def _method_column(df: pd.DataFrame, where: str) -> str:
    for c in _METHOD_COLUMNS:
        if c in df.columns:
            return c
    raise TableError(f"{where}: no method column (one of {list(_METHOD_COLUMNS)}); found {list(df.columns)}")


def _numeric(series: pd.Series, where: str, column: str) -> pd.Series:
    values = pd.to_numeric(series, errors="coerce")
    bad = series[values.isna() & series.notna() & (series.astype(str).str.strip() != "")]
    if len(bad):
        raise TableError(f"{where}: column {column!r} holds non-numeric value {str(bad.iloc[0])!r}")
    return values


def ratings_long(df: pd.DataFrame, where: str = "ratings") -> pd.DataFrame:
    """Wide or long ratings -> long ``method, dimension, rating`` (numeric; rows without a rating dropped)."""
    df = df.rename(columns={c: str(c).strip() for c in df.columns})
    method = _method_column(df, where)
    if {"dimension", "rating"} <= set(df.columns):
        out = df[[method, "dimension", "rating"]].rename(columns={method: "method"})
    else:
        dims = [c for c in df.columns if c not in (method, "slice", "split", "rater", "story", "story_id")]
        if not dims:
            raise TableError(f"{where}: neither long (method, dimension, rating) nor wide (method, <dimension>...)")
        out = df.melt(id_vars=[method], value_vars=dims, var_name="dimension", value_name="rating") \
            .rename(columns={method: "method"})
    out = out.assign(method=out["method"].astype(str).str.strip(), dimension=out["dimension"].astype(str),
                     rating=_numeric(out["rating"], where, "rating"))
    out = out.dropna(subset=["rating"])
    if out.empty:
        raise TableError(f"{where}: no numeric rating")
    return out.reset_index(drop=True)


def metrics_long(df: pd.DataFrame, where: str = "metrics") -> pd.DataFrame:
    """Wide or long metric values -> long ``generator, metric_id, value[, slice]`` (a ``split`` column, the
    paper's word, is read as ``slice``)."""
    df = df.rename(columns={c: str(c).strip() for c in df.columns})
    if "split" in df.columns and "slice" not in df.columns:
        df = df.rename(columns={"split": "slice"})
    method = _method_column(df, where)
    keep = ["slice"] if "slice" in df.columns else []
    if {"metric_id", "value"} <= set(df.columns):
        out = df[[method, "metric_id", "value", *keep]]
    else:
        cols = [c for c in df.columns if c not in (method, *keep)]
        if not cols:
            raise TableError(f"{where}: neither long (method, metric_id, value) nor wide (method, <metric_id>...)")
        out = df.melt(id_vars=[method, *keep], value_vars=cols, var_name="metric_id", value_name="value")
    out = out.rename(columns={method: "generator"})
    out = out.assign(generator=out["generator"].astype(str).str.strip(), metric_id=out["metric_id"].astype(str),
                     value=_numeric(out["value"], where, "value"))
    if "slice" in out.columns:
        out["slice"] = out["slice"].astype(str).str.strip().str.lower()
    return out.reset_index(drop=True)


def _read_csv(path: str | Path, what: str) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise TableError(f"{what} {path}: no such file")
    try:
        return pd.read_csv(path, encoding="utf-8-sig")
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise TableError(f"{what} {path}: not a readable CSV ({str(e).strip().splitlines()[0]})") from None


def read_ratings(path: str | Path) -> pd.DataFrame:
    return ratings_long(_read_csv(path, "ratings"), f"ratings {path}")


def read_metrics(path: str | Path) -> pd.DataFrame:
    return metrics_long(_read_csv(path, "metrics"), f"metrics {path}")


def select_slice(board: pd.DataFrame, slice_name: Optional[str]) -> pd.DataFrame:
    """Rows of one slice when the table has a slice column (an outside table without one is taken as is)."""
    if slice_name is None or "slice" not in board.columns:
        return board
    if slice_name not in SLICES:
        raise TableError(f"slice {slice_name!r}: use one of {list(SLICES)}")
    return board[board["slice"] == slice_name]


def human_alignment_table(ratings: pd.DataFrame, board: pd.DataFrame,
                          slice_name: Optional[str] = None) -> pd.DataFrame:
    """One row per (rating dimension, metric): the three correlations over the methods both tables have, their
    count and names, and a reason where a correlation cannot be computed (fewer than 3 methods, constant values).
    ``ratings``/``board`` may be wide or long; ``slice_name`` selects the board's slice when it has a slice
    column."""
    ratings = ratings_long(ratings) if not {"method", "dimension", "rating"} <= set(ratings.columns) else ratings
    if not {"generator", "metric_id", "value"} <= set(board.columns) or "split" in board.columns:
        board = metrics_long(board)
    board = select_slice(board, slice_name)
    label = slice_name if slice_name is not None else (",".join(sorted(set(board["slice"])))
                                                      if "slice" in board.columns and len(board) else "table")
    rows = []
    for dim, r in ratings.groupby("dimension", sort=True):
        human = r.groupby("method")["rating"].mean().to_dict()
        for mid, b in board.groupby("metric_id", sort=True):
            metric = {str(g): (float(v) if pd.notna(v) else None) for g, v in zip(b["generator"], b["value"])}
            c = metrics.human_alignment(human, metric)
            rows.append({"slice": label, "dimension": dim, "metric_id": mid,
                         **{k: getattr(c, k) for k in ("kendall_tau", "kendall_p", "spearman_rho", "spearman_p",
                                                       "pearson_r", "pearson_p", "n_methods")},
                         "methods": json.dumps(list(c.methods)), "reason": c.reason})
    return pd.DataFrame(rows, columns=COLUMNS)


# ----------------------------------------------------------------------------------------- the CLI's part

def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``bench human-alignment``."""
    parser.add_argument("--ratings", required=True, metavar="CSV",
                        help="human ratings: long (method,dimension,rating) or wide (method,<dimension>...)")
    parser.add_argument("--metrics", default=None, metavar="CSV",
                        help="metric values from an outside table, long (method,metric_id,value[,slice]) or wide "
                             "(method,<metric_id>...[,slice]); default: this store's leaderboard")
    parser.add_argument("--slice", "--split", dest="slice", choices=SLICES, default=DEFAULT_SLICE,
                        help="ViStoryBench story split (default: lite, as the paper's Table 2)")
    parser.add_argument("--metric", action="append", default=None, metavar="ID",
                        help="only this metric id (repeatable, or comma-separated)")


def wanted_metrics(args: argparse.Namespace) -> list[str]:
    return [m.strip() for arg in (getattr(args, "metric", None) or []) for m in arg.split(",") if m.strip()]


def table_from_args(args: argparse.Namespace, leaderboard: Callable[[], pd.DataFrame]) -> pd.DataFrame:
    """Run ``bench human-alignment``: ratings from ``--ratings``, metric values from ``--metrics`` or from
    ``leaderboard()`` (called only then), one slice, optional metric filter. Raises TableError with the message
    to print."""
    ratings = read_ratings(args.ratings)
    board = read_metrics(args.metrics) if getattr(args, "metrics", None) else leaderboard()
    if "split" in board.columns and "slice" not in board.columns:
        board = board.rename(columns={"split": "slice"})
    slice_name = getattr(args, "slice", DEFAULT_SLICE)
    if "slice" in board.columns and slice_name not in set(board["slice"]):
        raise TableError(f"no metric value for slice {slice_name!r} (the table has {sorted(set(board['slice']))})")
    wanted = wanted_metrics(args)
    if wanted:
        unknown = sorted(set(wanted) - set(board["metric_id"]))
        if unknown:
            raise TableError(f"unknown metric id(s) {', '.join(unknown)}; the table has "
                             f"{', '.join(sorted(set(board['metric_id']))[:16])}")
        board = board[board["metric_id"].isin(wanted)]
    table = human_alignment_table(ratings, board, slice_name)
    shared = set(ratings["method"]) & set(select_slice(board, slice_name)["generator"])
    if not shared:
        raise TableError(f"no method is in both tables (ratings: {sorted(set(ratings['method']))[:8]}, "
                         f"metrics: {sorted(set(board['generator']))[:8]})")
    return table
