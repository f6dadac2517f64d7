"""ViStoryBench's page on the report site (core/page.py): the Lite split's breakdown, the mean rank (the board's
detail.mean_rank; baselines are shown, not ranked), each story's shot images, and whether a story is in Lite on
the audit pages."""
from __future__ import annotations

import os

from bench_assets.core import report as charts
from bench_assets.core import site
from bench_assets.core.metric_spec import detail_of
from bench_assets.core.page import BenchmarkPage, PageContext
from bench_assets.vistorybench.dataset import LITE

METRIC_TABLES = ("vistorybench_scores", "vistorybench_alignment", "vistorybench_inception_score")


def sections(ctx: PageContext) -> list[dict]:
    bars = []
    paper = ctx.paper()
    for split, part in paper.groupby("slice"):
        if split == ctx.main_slice:
            continue
        for fam, p in part.groupby("family"):
            bars.append(site.chart_or_note(site.bar_rows(p), ctx.order, title=f"{fam} ({split})",
                                           scale=site.metric_scale(p), width=520))
    out = [{"title": "Per-split breakdown (Lite)", "note": "The Lite subset's values, per family.",
            "charts": bars or ['<p class="none">not evaluated: no Lite story in the store</p>']}]
    main = ctx.board[ctx.board["slice"] == ctx.main_slice]
    detail = detail_of(main)
    if "mean_rank" in detail.columns:
        ranks = main.assign(mean_rank=site.num(detail["mean_rank"])).drop_duplicates("generator")
        ranks = ranks[ranks["mean_rank"].notna() | ranks["baseline"]]
        rows = [{"label": "mean rank (lower is better)", "series": g, "coverage": None,
                 "value": None if site.is_none(v) else float(v),
                 "note": "a baseline: shown, not ranked" if b else None}
                for g, v, b in zip(ranks["generator"], ranks["mean_rank"], ranks["baseline"])]
        if rows:
            out.append({"title": "Mean rank over the quality columns",
                        "note": "Baselines (the copy-paste reference) are shown but not ranked: they have no rank.",
                        "charts": [charts.bar_chart_svg(rows, ctx.order, title="mean rank", width=520)]})
    return out


def frame_galleries(ctx: PageContext) -> list[dict]:
    """The shot images of the first story, per generator (a video shot shows its first frame)."""
    out = []
    df = ctx.reader.table("vistorybench_outputs")
    if df is None or not {"generator", "story_id", "shot", "path"} <= set(df.columns):
        return out
    for gen, item, part in site.first_per_generator(df.dropna(subset=["path"]), "generator", "story_id"):
        imgs = []
        for r in part.sort_values("shot").head(site.GALLERY_MAX).itertuples():
            if str(r.path).lower().endswith(site.IMAGE_EXT) and os.path.exists(r.path):
                imgs.append({"src": os.path.relpath(r.path, ctx.out_dir), "caption": f"shot {r.shot}"})
            else:
                for path, _ in site.thumbnails(r.path, ctx.out_dir, indices=[0]):
                    imgs.append({"src": os.path.relpath(path, ctx.out_dir), "caption": f"shot {r.shot}"})
        if imgs:
            out.append({"title": f"shot images: {gen} story {item}", "kind": "frame", "images": imgs})
    return out


def item_columns(reader) -> dict[str, dict]:
    """Whether each story is in the Lite subset (the paper's 20 stories) or only in the full set."""
    rows = site.read_metric_rows(reader, METRIC_TABLES, "story_id")
    items = set() if rows is None else set(rows["item"].astype(str))
    return {i: {"split": "lite" if i in LITE else "full"} for i in items}


PAGE = BenchmarkPage(
    name="vistorybench", title="ViStoryBench",
    about="Story visualisation against character references: mean over stories (0-100 for the starred columns, "
          "raw for IS and aesthetics); raw mean = the paper's mean over what was delivered; value (ranked) counts "
          "every instance an undelivered shot would have given as a 0; coverage = instances evaluated / instances "
          "the metric should have read.",
    leaderboard="vistorybench_leaderboard",
    headline=("cids_cross", "cids_self", "occm", "alignment"),
    metric_tables=METRIC_TABLES, item_label="story", item_column="story_id", slice_label="split",
    gallery_tables=("vistorybench_scores", "vistorybench_matches"), scale_note="mean over stories",
    sections=sections, frame_galleries=frame_galleries, item_columns=item_columns)
