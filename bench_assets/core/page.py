"""What the report site needs to know about one benchmark beyond its board and its MetricSpecs: words, the tables
behind the board, and the callables for the parts only that benchmark has (its own charts, frame galleries, the
rows behind an audit page). Each benchmark declares its ``PAGE`` in ``bench_assets/<benchmark>/page.py`` and its
``Benchmark`` entry carries it; ``core/site.py`` renders any benchmark from page + specs + the common board and
names none.

A metric's family, direction, scale and whether it is the paper's or an addition are NOT here: they come from
the benchmark's MetricSpecs, so the site cannot disagree with the board or the CLI.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

import pandas as pd


@dataclass(frozen=True)
class BenchmarkPage:
    """One benchmark's page on the report site.

    ``leaderboard``: the table in the common board schema (core.metric_spec.BOARD_COLUMNS).
    ``main_slice``: the slice shown first and on the overview; None = the Benchmark entry's ``headline["slice"]``.
    ``headline``: metric ids in preference order; the overview shows the first one any generator has a value for
    (a None cell shows its reason; an addition is never a headline).
    ``metric_tables``: long metric tables (generator, item, level, metric_id, value, reason, ...) behind the board:
    the rows of the audit pages and the crop galleries.
    ``item_column``: where a table has no ``item`` column, the one naming the item (e.g. ``episode_id``).
    ``slice_label``: what a slice is called on this benchmark (tier, split, mode).
    ``gallery_tables``: further tables whose ``crop_id`` / ``*frame_id`` columns name stored images.
    ``manifest_tables``: tables whose ``manifest_json`` column holds the run's manifest (models, profile, judge).
    Callables (each optional; every one receives a ``PageContext`` unless said otherwise):
    ``sections(ctx) -> [{"title", "note", "charts": [html]}]``: the benchmark's own charts and tables;
    ``frame_galleries(ctx) -> [{"title", "kind": "frame", "images": [{"src", "caption"}]}]``;
    ``audit_rows(reader, tables) -> DataFrame | None``: the rows behind the board in the audit shape (default:
    ``core.site.read_metric_rows``);
    ``rows_for(index, metric_id, generator) -> DataFrame``: the rows behind one cell (default: the metric id and
    its ``<id>.*`` children);
    ``item_columns(reader) -> {item: {column: value}}``: extra per-item columns on the audit pages (e.g. tier).
    ``item_video(generator, item) -> Path | None``: the generated video behind an item's rows; its audit pages then
    show a few of its frames beside each item row (for benchmarks whose rows carry no crop of their own).
    """
    name: str
    title: str
    about: str
    leaderboard: str
    main_slice: Optional[str] = None
    headline: tuple[str, ...] = ()
    metric_tables: tuple[str, ...] = ()
    item_label: str = "item"
    item_column: str = "item"           # the column naming an item in tables without an ``item`` column
    slice_label: str = "slice"
    gallery_tables: tuple[str, ...] = ()
    manifest_tables: tuple[str, ...] = ()
    scale_note: str = ""
    sections: Optional[Callable[["PageContext"], list[dict]]] = None
    frame_galleries: Optional[Callable[["PageContext"], list[dict]]] = None
    audit_rows: Optional[Callable[[Any, tuple[str, ...]], Optional[pd.DataFrame]]] = None
    rows_for: Optional[Callable[[Any, str, str], pd.DataFrame]] = None
    item_columns: Optional[Callable[[Any], dict[str, dict]]] = None
    item_video: Optional[Callable[[str, str], Any]] = None

    @property
    def href(self) -> str:
        return f"{self.name}.html"


@dataclass
class PageContext:
    """What a page's callables get: the store reader, the board (common schema, plus ``family``, ``direction``,
    ``kind``, ``declared`` from the specs), the generator order (baselines last), the specs, the main slice and
    the folder the page is written to (images are linked relative to it)."""
    reader: Any
    board: pd.DataFrame
    order: list[str]
    specs: Any
    main_slice: str
    out_dir: Path
    page: BenchmarkPage

    def paper(self, slice_: Optional[str] = None) -> pd.DataFrame:
        """The paper's metrics (no addition, no diagnostic) of one slice, or of every slice."""
        b = self.board[~self.board["addition"] & (self.board["kind"] != "diagnostic")]
        return b if slice_ is None else b[b["slice"] == slice_]
