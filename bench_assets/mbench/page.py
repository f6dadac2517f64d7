"""MBench's page on the report site (core/page.py): the dimension M-Scores per mode (MBench-A and MBench-T are
separate leaderboards, the board's slices), MBench-T's sub-dimensions, each case's frames, and the audit rows:
one per (case, sub-dimension), the case being the item, its trigger reason where no score was computed."""
from __future__ import annotations

from typing import Optional

import pandas as pd

from bench_assets.core import site
from bench_assets.core.page import BenchmarkPage, PageContext

METRIC_TABLES = ("mbench_scores",)


def sections(ctx: PageContext) -> list[dict]:
    dims, subs = [], []
    paper = ctx.paper()
    for mode, part in paper.groupby("slice"):
        is_dim = part["kind"] == "aggregate"   # the dimension M-Scores aggregate their sub-dimensions
        dims.append(site.chart_or_note(site.bar_rows(part[is_dim]), ctx.order,
                                       title=f"MBench-{mode}: dimension M-Scores", scale=(0.0, 100.0), width=520))
        if mode != ctx.main_slice:
            subs.append(site.chart_or_note(site.bar_rows(part[~is_dim]), ctx.order,
                                           title=f"MBench-{mode}: sub-dimensions", scale=(0.0, 100.0)))
    return [{"title": "Per-dimension M-Scores", "note": "Entity, environment and causal M-Scores per mode.",
             "charts": dims or ['<p class="none">not evaluated</p>']},
            {"title": "MBench-T sub-dimensions", "note": "A T case whose trigger is unknown leaves the coverage "
             "unknown (None), never 0.", "charts": subs or ['<p class="none">not evaluated: no MBench-T row</p>']}]


def frame_galleries(ctx: PageContext) -> list[dict]:
    from bench_resources.paths import BenchPaths
    paths = BenchPaths()
    return site.video_frames(ctx, "mbench_scores", "case_id", lambda g, i: paths.generator_dir(g) / f"{i}.mp4")


def audit_rows(reader, tables) -> Optional[pd.DataFrame]:
    """One row per (case, sub-dimension): the case is the item; a case without a score says why (its trigger)."""
    frames = []
    for t in tables:
        df = reader.table(t)
        if df is None or "metric_id" not in df.columns:
            continue
        d = site.metric_rows(df, "case_id")
        d["level"] = "item"
        if "trigger_reason" in df.columns:
            d["reason"] = d["reason"].where(d["reason"].notna(), df["trigger_reason"])
        frames.append(d)
    return pd.concat(frames, ignore_index=True) if frames else None


def rows_for(index: site.RowIndex, metric_id: str, generator: str) -> pd.DataFrame:
    """A board cell named ``m_score.<sub>`` reads the sub-dimension's score rows."""
    rows = index.rows_for(metric_id, generator)
    if rows.empty and metric_id.startswith("m_score."):
        rows = index.rows_for(metric_id[len("m_score."):], generator)
    return rows


def item_video(generator: str, item: str):
    """The generated video behind an item's audit rows (its frames sit beside the row)."""
    from bench_resources.paths import BenchPaths
    return BenchPaths().generator_dir(generator) / f"{item}.mp4"


PAGE = BenchmarkPage(
    name="mbench", title="MBench",
    about="Memory of video world models: trigger-conditioned M-Score per sub-dimension [0,100] (coverage = "
          "triggered cases evaluated / triggered cases); MBench-A and MBench-T are separate leaderboards.",
    leaderboard="mbench_leaderboard",
    headline=("m_score.entity", "m_score.environment", "m_score.causal"),
    metric_tables=METRIC_TABLES, item_label="case", item_column="case_id", slice_label="mode",
    gallery_tables=("mbench_tracks",),
    scale_note="M-Score", sections=sections, frame_galleries=frame_galleries, audit_rows=audit_rows,
    rows_for=rows_for,
    item_video=item_video)
