"""LoCoT2V-Bench's page on the report site (core/page.py). Its five dimensions and overall are aggregates in their
own family ("dimensions and overall", metric_specs.py), drawn with the other families: each None with the missing
parts named unless all its parts have a value; the partial means are additions, apart. What only this page adds:
each sample's frames, and on the audit pages the events and subjects behind the event-consistency values."""
from __future__ import annotations

import json
from typing import Optional

import pandas as pd

from bench_assets.core import site
from bench_assets.core.page import BenchmarkPage, PageContext


def frame_galleries(ctx: PageContext) -> list[dict]:
    from bench_resources.paths import BenchPaths
    paths = BenchPaths()
    return site.video_frames(ctx, "locot2v_visual", "item", lambda g, i: paths.generator_dir(g) / f"{i}.mp4")


INTRA_EVENT = ("intra_event_subject_consistency", "intra_event_background_consistency")
INTER_SUBJECT = ("inter_event_subject_consistency", "inter_event_subject_face_identity")
UNIT_COLUMNS = ("entity_id", "subject", "frames")   # what the UI's per-unit table shows of a unit row


def _detail(v) -> dict:
    if isinstance(v, dict):
        return v
    try:
        d = json.loads(v) if isinstance(v, str) else {}
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def unit_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The units behind a sample's event-consistency values, from the rows' own detail (pipeline.event_consistency,
    metrics.intra/inter_event_consistency): per event its intra-event consistency (subject or background; None
    where it had fewer than 2 appearances, which is why the video value leaves it out), per subject its
    inter-event consistency (paper: crop embedding; addition: face identity; None where the subject shows in
    fewer than 2 events). In % like the value (metrics.cos100). Level 'event' / 'subject', the metric id of the
    value they explain, ``frames`` the event's native frame range."""
    from bench_assets.locot2v.metrics import cos100
    out = []
    for r in df.to_dict("records"):
        mid = str(r.get("metric_id"))
        if mid not in INTRA_EVENT + INTER_SUBJECT:
            continue
        d = _detail(r.get("detail"))
        base = {"generator": r.get("generator"), "item": r.get("item"), "metric_id": mid, "n_eval": None,
                "n_failed": None, "n_skipped": None, "shot": None, "frame_index": None, "crop_id": None,
                "source_sha256": r.get("source_sha256")}
        names = d.get("subjects") or {}
        if mid in INTRA_EVENT and isinstance(d.get("events"), list):
            ranges = d.get("ranges") or []
            who = {}
            for f in d.get("found") or []:
                who.setdefault(int(f["event"]), f.get("text") or f.get("subject"))
            what = "subject" if mid.startswith("intra_event_subject") else "background"
            for e, v in enumerate(d["events"]):
                a, b = (ranges[e] if e < len(ranges) else (None, None))
                frames = f"{a}-{b - 1}" if a is not None and b is not None else None
                subj = who.get(e) if what == "subject" else "background"
                out.append({**base, "level": "event", "entity_id": f"event {e}", "subject": subj, "frames": frames,
                            "value": None if v is None else cos100(v),
                            "reason": None if v is not None else f"fewer than 2 {what} appearances in this event",
                            "detail": json.dumps({"event": e, "frames": frames, "subject": subj}, sort_keys=True)})
        elif mid in INTER_SUBJECT and (isinstance(d.get("elements"), dict) or names):
            elements = d.get("elements") or {}
            for name in sorted(set(elements) | set(names)):
                v = elements.get(name)
                text = "; ".join(names.get(name) or []) or None
                out.append({**base, "level": "subject", "entity_id": name, "subject": text, "frames": None,
                            "value": None if v is None else cos100(v),
                            "reason": None if v is not None else ("no good-quality face in >= 2 events"
                                                                  if mid.endswith("face_identity") else
                                                                  "grounded in fewer than 2 events"),
                            "detail": json.dumps({"subject": name, "descriptions": names.get(name)},
                                                 sort_keys=True)})
    return pd.DataFrame(out)


MAX_APPEARANCE_CROPS = 4   # grounded subject appearances per event cut into crops on an audit page
SUBJECT_METRICS = ("intra_event_subject_consistency", "inter_event_subject_consistency")   # both read these crops


def appearance_rows(rows: pd.DataFrame, video_of=None, sha_of=None) -> pd.DataFrame:
    """The grounded subject appearances behind the subject-consistency values (``found`` in the intra-event row's
    detail: event, native frame index, xyxy box, grounding score): up to MAX_APPEARANCE_CROPS per event, evenly
    spaced, under both subject metrics, naming the video, frame and box the audit page cuts the crop from
    (core/audit.cut_box_crops). A video that is no longer the one scored (sha256) gets no box to cut."""
    from bench_assets.core import audit as AU
    from bench_assets.core.media import sha256_file
    video_of, sha_of = video_of or item_video, sha_of or sha256_file
    out = []
    for r in rows.to_dict("records"):
        if r.get("metric_id") != "intra_event_subject_consistency" or r.get("level", "item") != "item":
            continue
        found = _detail(r.get("detail")).get("found") or []
        if not found:
            continue
        video, scored = video_of(str(r["generator"]), str(r["item"])), r.get("source_sha256")
        try:
            same = video is not None and isinstance(scored, str) and sha_of(str(video)) == scored
        except OSError:
            same = False
        by_event: dict[int, list] = {}
        for f in found:
            by_event.setdefault(int(f["event"]), []).append(f)
        for e in sorted(by_event):
            for f in AU.evenly(sorted(by_event[e], key=lambda x: int(x["frame"])), MAX_APPEARANCE_CROPS):
                detail = {"event": e, "subject": f.get("text"), "box_xyxy": f["box"], "grounding": f.get("a")}
                if not same:
                    detail["no_crop"] = "the video is not the one scored (sha256 differs) or is gone"
                for mid in SUBJECT_METRICS:
                    out.append({"generator": r["generator"], "item": r["item"], "level": "appearance",
                                "metric_id": mid, "value": None, "reason": None, "n_eval": None, "n_failed": None,
                                "n_skipped": None, "shot": None, "frame_index": int(f["frame"]),
                                "entity_id": f"{f.get('subject')} (event {e})", "crop_id": None,
                                "source_sha256": scored, "detail": json.dumps(detail, sort_keys=True),
                                "crop_box": json.dumps(f["box"]) if same else None,
                                "crop_video": str(video) if same else None})
    return pd.DataFrame(out)


def audit_rows(reader, tables) -> Optional[pd.DataFrame]:
    """The item rows of the metric tables, and under the event-consistency values their events and subjects
    (``unit_rows``) and the subject's grounded appearances with their crops (``appearance_rows``): an audit page
    reaches the event, subject and crop that pulled a value down."""
    rows = site.read_metric_rows(reader, tables, "sample_id")
    if rows is None:
        return None
    extra = [d for d in (unit_rows(rows), appearance_rows(rows)) if len(d)]
    return pd.concat([rows, *extra], ignore_index=True) if extra else rows


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
    audit_rows=audit_rows, item_video=item_video)
