"""The per-video assets built on the identities: context per segment, the entity registry, pipeline quality against
the ground-truth sidecar."""

import json
from collections import Counter, defaultdict

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.kernels import l2_normalise
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import dataset
from bench_assets.narrativetrack import judging
from bench_assets.narrativetrack import pipeline
from bench_assets.narrativetrack import stages
from bench_assets.narrativetrack import states
from bench_assets.narrativetrack.frame_cache import sampled_frames, video_row
from bench_assets.narrativetrack.tables import as_strings, entity_boxes, even_positions, judge_failure_metadata
from bench_assets.narrativetrack.wiring import GROUP, P, data_dir
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def narrativetrack_context(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                           narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                           narrativetrack_identities: pd.DataFrame, judge: Judge) -> Output[pd.DataFrame]:
    """Segments (presence runs split at cuts) and contextual recognition per segment: the judge sees the segment's
    frames with the target in a green box and returns action / outfit / scene; where it gives no answer the offline
    heuristic describes it (source column says which)."""
    video = video_row(narrativetrack_video)
    frames, times, _ = sampled_frames(video, narrativetrack_frames)
    shots = [int(s) for s in narrativetrack_frames.sort_values("sample")["shot"]]
    step = 1.0 / float(video["sample_fps"])
    gap = max(constants.GAP_TOLERANCE_S, 1.5 * step)
    by_entity = entity_boxes(narrativetrack_detections, narrativetrack_identities)
    all_boxes = defaultdict(list)
    for r in narrativetrack_detections.itertuples():
        all_boxes[int(r.sample)].append([float(v) for v in r.box])
    ok, why = judge.available()
    rows, reqs = [], []
    for ent, boxes in sorted(by_entity.items()):
        own = {b["sample"]: b["box"] for b in boxes}
        ks = sorted(own)
        segs = pipeline.context_segments([times[k] for k in ks], [shots[k] for k in ks], gap, step)
        k_of_t = {times[k]: k for k in ks}
        for j, seg in enumerate(segs):
            seg["samples"] = [k_of_t[t] for t in seg["times"]]
            offline = stages.offline_context(frames, times, seg, all_boxes, own)
            offline["measures"] = json.dumps(offline["measures"], sort_keys=True)
            row = {"entity": ent, "segment": j, "start": seg["start"], "end": seg["end"], "shot": seg["shot"],
                   "samples": seg["samples"], **offline, "source": "offline heuristic",
                   "reason": None if ok else f"contextual recognition by the judge: {why}", "cache_key": None}
            rows.append(row)
            if ok:
                pick = [seg["samples"][i] for i in even_positions(len(seg["samples"]), constants.CONTEXT_FRAMES)]
                boxed = [pipeline.green_box(frames[k], own[k]) for k in pick]
                reqs.append((len(rows) - 1, judging.context_request(boxed, f"P{ent + 1}", j)))
    # segments the judge was meant to describe and did not (its call failed, or it was configured but unreachable):
    # the evaluator's failures, counted for the re-run rule (core/automation.py: re-asked while the judge is live)
    unanswered = [] if ok or getattr(judge, "mode", "off") == "off" else [r["reason"] for r in rows]
    if reqs:
        for (i, _), res in zip(reqs, judge.ask_many([r for _, r in reqs])):
            rows[i]["cache_key"] = res.cache_key
            a = res.answer or {}
            if res.status == "ok" and "INVALID" not in {str(a.get(k)).strip().upper() for k in ("action", "outfit",
                                                                                                   "scene")}:
                rows[i].update(action=a["action"], outfit=a["outfit"], scene=a["scene"], measures=None,
                               source=f"judge:{judge.model}", reason=None)
            else:  # the heuristic's words stay for reading, but never beside the judge's in a change list
                rows[i]["reason"] = ((f"judge {res.status}: {res.reason}" if res.status != "ok"
                                      else "judge: INVALID (no green box seen)")
                                     + "; offline attributes shown, left out of change lists")
                if res.status != "ok":   # an INVALID answer is the judge's verdict, not a failure
                    unanswered.append(rows[i]["reason"])
    df = pd.DataFrame(rows, columns=["entity", "segment", "start", "end", "shot", "samples", "action", "outfit",
                                     "scene", "measures", "source", "reason", "cache_key"])
    df["video_id"] = video["video_id"]
    as_strings(df, "reason", "cache_key", "source", "action", "outfit", "scene", "measures")
    return Output(df, metadata={"segments": len(df), "sources": MetadataValue.json(
        dict(Counter(df["source"]))) if len(df) else "none", **judge_failure_metadata(unanswered)})


@asset(partitions_def=P.items, group_name=GROUP, code_version="2")
def narrativetrack_entity_registry(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                                   narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                                   narrativetrack_identities: pd.DataFrame, narrativetrack_reid: pd.DataFrame,
                                   narrativetrack_context: pd.DataFrame, judge: Judge,
                                   store: Store) -> Output[pd.DataFrame]:
    """One record per main character: presence runs and track type (appear / disappear / reappear), segments with
    action / outfit / scene, change lists, flags (judge's second step when available, else computed from the change
    lists), and the canonical crop (sharpest, largest box) in the artifact store."""
    video = video_row(narrativetrack_video)
    frames, times, _ = sampled_frames(video, narrativetrack_frames)
    step = 1.0 / float(video["sample_fps"])
    gap = max(constants.GAP_TOLERANCE_S, 1.5 * step)
    duration = float(video["duration"])
    by_entity = entity_boxes(narrativetrack_detections, narrativetrack_identities)
    emb = narrativetrack_reid.set_index("det")["embedding"]
    ctx = narrativetrack_context
    seg_of = {e: [dict(r._asdict()) for r in g.sort_values("segment").itertuples()] for e, g in ctx.groupby("entity")}
    centroid = {e: l2_normalise(np.mean([np.asarray(emb[b["det"]], float) for b in boxes], axis=0))
                for e, boxes in by_entity.items()}
    ok, why = judge.available()
    # one attribute source per video: the judge's where it answered any segment, else the heuristic; segments of
    # the other source (a judge failure filled by the heuristic) are left out of change lists (states.usable)
    style = "free_text" if len(ctx) and ctx["source"].astype(str).str.startswith("judge:").any() else "heuristic"
    rows, unanswered = [], []
    for ent, boxes in sorted(by_entity.items()):
        segs = [{"start": float(s["start"]), "end": float(s["end"]), "action": s["action"], "outfit": s["outfit"],
                 "scene": s["scene"], "source": s["source"],
                 "measures": json.loads(s["measures"]) if isinstance(s.get("measures"), str) else None}
                for s in seg_of.get(ent, [])]
        usable = [s for s in segs if states.usable(s, style)]
        runs = pipeline.presence_runs([times[b["sample"]] for b in boxes], gap, step)
        tt = pipeline.track_type(runs, duration)
        others = [s for e, ss in seg_of.items() if e != ent for s in ss]
        own_outfits = {pipeline.norm_text(s["outfit"]) for s in segs}
        similar = any(pipeline.norm_text(o["outfit"]) in own_outfits for o in others) or any(
            float(centroid[ent] @ centroid[e]) >= constants.REID_THRESHOLD["paper"] for e in centroid if e != ent)
        fl = pipeline.flags(segs, [{"action": o["action"], "outfit": o["outfit"]} for o in others], similar, style)
        computed = dict(fl)
        changes = {a: states.change_texts(usable, a, style) for a in states.ATTRS}
        flag_source, flag_reason, cache_key = "computed from the change lists", (
            None if ok else f"second-step flags by the judge: {why}"), None
        if not ok and getattr(judge, "mode", "off") != "off":
            unanswered.append(flag_reason)
        # crops not all held
        best = pipeline.canonical_best((b, pipeline.crop(frames[b["sample"]], b["box"])) for b in boxes)
        if best is None:
            raise Failure(f"video {video['video_id']}: entity {ent} has no box of at least 4x4 pixels to crop")
        best_box, best_crop = best
        if ok:
            pick = [boxes[i] for i in even_positions(len(boxes), 8)]
            boxed = [pipeline.green_box(frames[b["sample"]], b["box"]) for b in pick]
            res = judge.ask(judging.flags_request(boxed, f"P{ent + 1}", changes["action"] or [],
                                                  changes["outfit"] or [], changes["scene"] or []))
            cache_key = res.cache_key
            if res.status == "ok":
                fl = {k: res.answer[k] for k in judging.FLAG_KEYS} | {"other_entities": res.answer["other_entities"]}
                for k in computed:  # the judge can veto a change, never make one the states do not show
                    if k.startswith(("significant_", "over_three_")):
                        fl[k] = bool(fl[k]) and computed[k]
                flag_source, flag_reason = f"judge:{judge.model}", None
            else:
                flag_reason = f"judge {res.status}: {res.reason}"
                unanswered.append(flag_reason)
        rows.append({
            "entity_id": f"P{ent + 1}", "entity": ent, "track_type": tt, "n_boxes": len(boxes),
            "runs": json.dumps([[round(a, 3), round(b, 3)] for a, b in runs]),
            "segments": json.dumps(segs, sort_keys=True),
            "action_changes": json.dumps(changes["action"]), "outfit_changes": json.dumps(changes["outfit"]),
            "scene_changes": json.dumps(changes["scene"]), "n_usable_segments": len(usable),
            "flags": json.dumps(fl, sort_keys=True), "flag_source": flag_source, "reason": flag_reason,
            "cache_key": cache_key, "crop_id": store.put_png(best_crop), "crop_frame": int(best_box["sample"]),
            "crop_box": json.dumps(best_box["box"]),
            "attribute_style": style})
    df = pd.DataFrame(rows, columns=["entity_id", "entity", "track_type", "n_boxes", "runs", "segments",
                                     "action_changes", "outfit_changes", "scene_changes", "n_usable_segments",
                                     "flags", "flag_source",
                                     "reason", "cache_key", "crop_id", "crop_frame", "crop_box", "attribute_style"])
    df["video_id"], df["source_sha256"], df["duration"] = video["video_id"], video["sha256"], duration
    as_strings(df, "reason", "cache_key")
    return Output(df, metadata={"entities": len(df), "track_types": MetadataValue.json(
        dict(Counter(df["track_type"])) if len(df) else {}), **judge_failure_metadata(unanswered)})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def narrativetrack_pipeline_quality(context: AssetExecutionContext, paths: BenchPaths,
                                    narrativetrack_video: pd.DataFrame, narrativetrack_frames: pd.DataFrame,
                                    narrativetrack_detections: pd.DataFrame, narrativetrack_tracklets: pd.DataFrame,
                                    narrativetrack_reid: pd.DataFrame, narrativetrack_faces: pd.DataFrame,
                                    narrativetrack_identities: pd.DataFrame,
                                    narrativetrack_entity_registry: pd.DataFrame) -> Output[pd.DataFrame]:
    """Against the ground-truth sidecar where one exists: identity purity / recall of the clustering, box recall,
    track-type accuracy; always: the pipeline's frames per second. None with a reason without a sidecar."""
    video = video_row(narrativetrack_video)
    vid = video["video_id"]
    n = len(narrativetrack_frames)
    secs = sum(float(df["seconds"].iloc[0]) for df in (narrativetrack_detections, narrativetrack_tracklets,
                                                         narrativetrack_reid, narrativetrack_faces,
                                                         narrativetrack_identities) if len(df))
    rows = [{"metric_id": "pipeline_fps", "value": n / secs if secs > 0 else None, "n_eval": n,
             "reason": None if secs > 0 else "no timed stage", "detail": json.dumps({"frames": n, "seconds": secs})}]
    gt = dataset.load_groundtruth(data_dir(paths), vid)
    if gt is None:
        for m in ("identity_purity", "identity_recall", "box_recall", "track_type_accuracy"):
            rows.append({"metric_id": m, "value": None, "n_eval": 0, "reason": "no ground-truth sidecar"})
    else:
        idx = [int(i) for i in narrativetrack_frames.sort_values("sample")["frame_index"]]
        truth = {k: [(p["person"], tuple(p["box"])) for p in gt["frames"][i]["persons"]] for k, i in enumerate(idx)}
        d = narrativetrack_detections.set_index("det")
        pred = [(int(r.sample), tuple(d.loc[r.det, "box"]), None if pd.isna(r.entity) else int(r.entity))
                for r in narrativetrack_identities.itertuples()]
        q = pipeline.identity_quality(pred, truth)
        tt = dict(zip(narrativetrack_entity_registry["entity"], narrativetrack_entity_registry["track_type"]))
        checks = {p: (tt.get(q["mapping"].get(p)), info["track_type"]) for p, info in gt["people"].items()}
        rows += [{"metric_id": "identity_purity", "value": q["purity"], "n_eval": q["matched"],
                  "reason": None if q["purity"] is not None else "no matched box"},
                 {"metric_id": "identity_recall", "value": q["recall"], "n_eval": q["matched"],
                  "reason": None if q["recall"] is not None else "no matched box"},
                 {"metric_id": "box_recall", "value": q["box_recall"], "n_eval": q["gt_boxes"], "reason": None},
                 {"metric_id": "track_type_accuracy",
                  "value": float(np.mean([a == b for a, b in checks.values()])) if checks else None,
                  "n_eval": len(checks), "reason": None if checks else "no person in the sidecar",
                  "detail": json.dumps({p: {"predicted": a, "truth": b} for p, (a, b) in checks.items()})}]
    df = pd.DataFrame(rows, columns=["metric_id", "value", "n_eval", "reason", "detail"])
    df["video_id"] = vid
    as_strings(df, "reason", "detail")
    df["value"] = df["value"].astype("Float64")
    return Output(df, metadata={r["metric_id"]: (round(r["value"], 4) if r["value"] is not None else "None")
                                for r in rows})
