"""MBench's page on the report site (core/page.py): the dimension M-Scores per mode (MBench-A and MBench-T are
separate leaderboards, the board's slices), MBench-T's sub-dimensions, each case's frames, and the audit rows:
one per (case, sub-dimension), the case being the item, its trigger reason where no score was computed."""
from __future__ import annotations

import json
from typing import Optional

import pandas as pd

from bench_assets.core import audit as AU
from bench_assets.core import site
from bench_assets.core.page import BenchmarkPage, PageContext
from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE

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


# the sub-dimensions that read each kind of tracked box (scoring.case_scores): the object's box per frame feeds
# geometry and texture, the face boxes identity, the person box around a face appearance
BOX_METRICS = {"object": ("geometry", "texture"), "face": ("identity", IDENTITY_FIRST_APPEARANCE),
               "person": ("appearance",)}
MAX_BOX_CROPS = 6   # crops per (case, kind of box) on an audit page: evenly spaced over the tracked frames
TRACK_SQL = ('SELECT generator, case_id, kind, frame, box, person_box, track, mask_source, source_sha256 '
             'FROM mbench_tracks WHERE kind IN (\'object\', \'face\')')


def box_rows(tracks: Optional[pd.DataFrame], video_of=None, sha_of=None) -> pd.DataFrame:
    """Instance rows for the audit pages: per (generator, case) up to MAX_BOX_CROPS boxes of each kind the tracker
    wrote (the object's box per frame, face boxes, the person box around a face), each under every sub-dimension
    that reads that kind (BOX_METRICS), naming the video, frame and xyxy box its crop is cut from
    (core/audit.cut_box_crops). A video whose content is no longer the one tracked (sha256) gets no box to cut.
    ``video_of(generator, case)``: the video; ``sha_of(path)``: its sha256."""
    from bench_assets.core.media import sha256_file
    video_of, sha_of = video_of or item_video, sha_of or sha256_file
    out = []
    if tracks is None or tracks.empty:
        return pd.DataFrame(out)
    for (gen, case), g in tracks.groupby(["generator", "case_id"], sort=True):
        video = video_of(str(gen), str(case))
        tracked = next((s for s in g["source_sha256"] if isinstance(s, str)), None) \
            if "source_sha256" in g else None
        try:
            same = video is not None and tracked is not None and sha_of(str(video)) == tracked
        except OSError:
            same = False
        g = g.sort_values(["frame", "track"], na_position="first")
        picks = {"object": [(r, r["box"]) for r in g[g["kind"] == "object"].to_dict("records")
                            if isinstance(r["box"], str)],
                 "face": [(r, r["box"]) for r in g[g["kind"] == "face"].to_dict("records")
                          if isinstance(r["box"], str)],
                 "person": [(r, r["person_box"]) for r in g[g["kind"] == "face"].to_dict("records")
                            if isinstance(r.get("person_box"), str)]}
        for kind, found in picks.items():
            for r, box in AU.evenly(found, MAX_BOX_CROPS):
                track = r.get("track")
                who = "object" if kind == "object" else f"{kind} track {int(track)}" \
                    if track is not None and not pd.isna(track) else kind
                detail = {"box_xyxy": json.loads(box), "kind": f"{kind} box", "tracked_frames": len(found)}
                if kind == "object" and isinstance(r.get("mask_source"), str):
                    detail["mask_source"] = r["mask_source"]
                if not same:
                    detail["no_crop"] = ("the video is not the one tracked (sha256 differs)" if video is not None
                                         and tracked is not None else "no video or no tracked sha256")
                for mid in BOX_METRICS[kind]:
                    out.append({"generator": str(gen), "item": str(case), "level": f"{kind} box",
                                "metric_id": mid, "value": None, "reason": None, "n_eval": None, "n_failed": None,
                                "n_skipped": None, "shot": None, "frame_index": int(r["frame"]), "entity_id": who,
                                "crop_id": None, "source_sha256": tracked,
                                "detail": json.dumps(detail, sort_keys=True),
                                "crop_box": box if same else None, "crop_video": str(video) if same else None,
                                # what the score was computed from, not a score: never "no value because ..."
                                "evidence": True})
    return pd.DataFrame(out)


def audit_rows(reader, tables) -> Optional[pd.DataFrame]:
    """One row per (case, sub-dimension): the case is the item; a case without a score says why (its trigger).
    Under the sub-dimensions that read tracked boxes, the boxes themselves (``box_rows``): the audit page shows
    the crop cut from each beside the case's frames."""
    frames = []
    for t in tables:
        df = reader.table(t)
        if df is None or "metric_id" not in df.columns:
            continue
        d = site.metric_rows(df, "case_id")
        d["level"] = "item"
        if "trigger_reason" in df.columns:
            d["reason"] = d["reason"].where(d["reason"].notna(), df["trigger_reason"])
        if "triggered" in df.columns:   # a trigger verdict without the judge's words is still the reason
            untriggered = d["reason"].isna() & d["value"].isna()
            verdict = df["triggered"].map(lambda t: "trigger unknown: no verdict recorded" if t is None or pd.isna(t)
                                          else None if bool(t) else "not triggered: the case's memory challenge "
                                          "was not enforced (left out of the M-Score)")
            d.loc[untriggered, "reason"] = verdict[untriggered]
        frames.append(d)
    if frames:
        boxes = box_rows(reader.table("mbench_tracks", TRACK_SQL))
        if len(boxes):
            frames.append(boxes)
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
