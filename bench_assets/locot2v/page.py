"""LoCoT2V-Bench's page on the report site (core/page.py). Its five dimensions and overall are aggregates in their
own family ("dimensions and overall", metric_specs.py), drawn with the other families: each None with the missing
parts named unless all its parts have a value; the partial means are additions, apart. What only this page adds:
each sample's frames."""
from __future__ import annotations

from bench_assets.core import site
from bench_assets.core.page import BenchmarkPage, PageContext


def frame_galleries(ctx: PageContext) -> list[dict]:
    from bench_resources.paths import BenchPaths
    paths = BenchPaths()
    return site.video_frames(ctx, "locot2v_visual", "item", lambda g, i: paths.generator_dir(g) / f"{i}.mp4")


def item_video(generator: str, item: str):
    """The generated video behind an item's audit rows (its frames sit beside the row)."""
    from bench_resources.paths import BenchPaths
    return BenchPaths().generator_dir(generator) / f"{item}.mp4"


PAGE = BenchmarkPage(
    name="locot2v", title="LoCoT2V-Bench",
    about="Long text-to-video: 26 sub-dimensions in %, five dimensions (unweighted mean of their sub-dimensions) "
          "and overall (the mean of the five; None with its reason unless all five have a value).",
    leaderboard="locot2v_leaderboard", headline=("overall",),
    metric_tables=("locot2v_visual", "locot2v_judged"), item_label="sample", item_column="sample_id",
    gallery_tables=("locot2v_derived",), scale_note="% (mean over samples)", frame_galleries=frame_galleries,
    item_video=item_video)
