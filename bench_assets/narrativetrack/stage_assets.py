"""The per-video pipeline stages as assets partitioned by video: video, frames, detections, tracklets, ReID, faces,
identities (model work in stages.py, the maths in pipeline.py)."""

import time

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import INPUT_SHA_KEY, content_data_version
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.media import even_indices
from bench_assets.core.slots import load_slot
from bench_assets.narrativetrack import calibration
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import dataset
from bench_assets.narrativetrack import flow_links
from bench_assets.narrativetrack import pipeline
from bench_assets.narrativetrack import stages
from bench_assets.narrativetrack.frame_cache import frame_view, open_video, sampled_frames, video_row
from bench_assets.narrativetrack.judged import verify_identities
from bench_assets.narrativetrack.manifest import FACE_MERGE, LINKS_VERSION, protocol
from bench_assets.narrativetrack.tables import as_list, as_strings, det_records
from bench_assets.narrativetrack.wiring import GROUP, P, data_dir, video_version
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def narrativetrack_video(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated video of the index: path, sha256, native fps, size, duration, sampling rate."""
    vid = context.partition_key
    try:
        v = dataset.load_video(data_dir(paths), vid)
    except dataset.DatasetError as e:
        raise Failure(description=str(e)) from None
    src = open_video({"video_id": vid, "path": v.path})  # probed, nothing decoded
    fps = src.fps if src.fps > 0 else 25.0
    row = {"video_id": vid, "path": v.path, "sha256": src.sha256, "native_fps": fps, "n_frames": src.n_frames,
           "width": src.size[0], "height": src.size[1], "duration": src.n_frames / fps,
           "sample_fps": v.sample_fps}
    sha = video_version(paths, vid)
    # content is the data version: a replaced video or a changed sampling rate marks its partitions stale
    return Output(pd.DataFrame([row]), data_version=content_data_version(sha, context.assets_def.code_versions_by_key[
        context.asset_key]), metadata={"duration_s": round(row["duration"], 2), "fps": fps, INPUT_SHA_KEY: sha})


# the cut thresholds are part of the code version: a refit (scripts/calibrate_cuts.py) re-cuts the shots
@asset(partitions_def=P.items, group_name=GROUP,
       code_version=f"3+cut{constants.CUT_CHANGED_FRACTION}/{constants.CUT_COMPENSATED_FRACTION}/"
                    f"{constants.CUT_BLACK_LEVEL}/{constants.CUT_ABRUPT_FRACTION}/{constants.CUT_BLEND_RESIDUAL}")
def narrativetrack_frames(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame) -> Output[pd.DataFrame]:
    """Frames at the sampling rate (t_j = j / f) and the shot each belongs to (cut detection)."""
    video = video_row(narrativetrack_video)
    idx = pipeline.sample_indices(int(video["n_frames"]), float(video["native_fps"]), float(video["sample_fps"]))
    # the default answerer's evenly spaced frames come from the same pass (issue 16: one decode per video)
    # (the native frames between flagged samples are re-read from the file: a cut is abrupt, motion is spread)
    shots = pipeline.shot_ids(frame_view(video, idx,
                                         also=even_indices(int(video["n_frames"]), constants.ANSWER_FRAMES)),
                              video_path=video["path"], frame_index=idx)
    df = pd.DataFrame({"sample": range(len(idx)), "frame_index": idx,
                       "t": [i / float(video["native_fps"]) for i in idx], "shot": shots})
    df["video_id"] = video["video_id"]
    return Output(df, metadata={"frames": len(df), "shots": int(max(shots, default=-1) + 1)})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", pool="gpu", op_tags=GPU_OP_TAGS)
def narrativetrack_detections(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                              narrativetrack_frames: pd.DataFrame, models: ModelRegistry,
                              device: Device) -> Output[pd.DataFrame]:
    """Person boxes per sampled frame (person_detector; a configured second detector merged at IoU 0.5 keeping the
    higher score); one detector's duplicate boxes for one person suppressed."""
    video = video_row(narrativetrack_video)
    vid = video["video_id"]
    frames, _, idx = sampled_frames(video, narrativetrack_frames)
    det, _ = load_slot(models, device, "person_detector", needed_by=f"video {vid}")
    second = None
    if constants.SECOND_DETECTOR:
        second, _ = load_slot(models, device, constants.SECOND_DETECTOR, needed_by=f"video {vid}")
    t0 = time.perf_counter()
    rows = stages.detect(frames, det, second)
    df = pd.DataFrame(rows, columns=["sample", "box", "score", "detector"])
    df.insert(0, "det", range(len(df)))
    df["frame_index"] = [idx[s] for s in df["sample"]]
    df["video_id"], df["seconds"] = vid, time.perf_counter() - t0
    return Output(df, metadata={"boxes": len(df), "frames": len(frames)})


# 3: the motion tracks (flow_links; issue 23) beside ByteTrack's ids
@asset(partitions_def=P.items, group_name=GROUP,
       code_version=f"3+flow{constants.FLOW_HEIGHT}/{constants.FLOW_INNER}/{constants.LINK_POSITIVE_IOU}")
def narrativetrack_tracklets(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                             narrativetrack_frames: pd.DataFrame,
                             narrativetrack_detections: pd.DataFrame) -> Output[pd.DataFrame]:
    """ByteTrack tracklet id per box (reset at shot cuts; lost-track buffer in seconds), and ``motion_track``: those
    links redone with motion through the native frames between consecutive samples of a shot (each box carried by
    dense optical flow to the next sample and linked one to one to the box it overlaps at IoU >= LINK_POSITIVE_IOU;
    flow_links), so a walker who moves a box width between samples keeps one track at any resolution."""
    video = video_row(narrativetrack_video)
    t0 = time.perf_counter()
    dets = det_records(narrativetrack_detections)
    frames = narrativetrack_frames.sort_values("sample")
    shots = [int(s) for s in frames["shot"]]
    ids = stages.tracklets(dets, len(shots), shots, float(video["sample_fps"]))
    df = narrativetrack_detections.sort_values("det")[["det", "sample", "frame_index"]].copy()
    df["track_id"] = ids
    samples, boxes = [d["sample"] for d in dets], [d["box"] for d in dets]
    got = flow_links.flow_links(video["path"], [int(i) for i in frames["frame_index"]], shots,
                                flow_links.boxes_by_sample(samples, boxes), constants.LINK_POSITIVE_IOU,
                                frame_size=(int(video["width"]), int(video["height"])))
    df["motion_track"] = flow_links.relink(ids, samples, boxes, [(a, b) for a, b, _ in got["links"]], got["pairs"],
                                           constants.LINK_POSITIVE_IOU)
    df["video_id"], df["seconds"] = video["video_id"], time.perf_counter() - t0
    return Output(df, metadata={"tracks": int(len(set(i for i in ids if i >= 0))),
                                "motion_links": len(got["links"]), "sample_pairs_followed": len(got["pairs"]),
                                "sample_pairs_undecoded": len(got["undecoded"])})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", pool="gpu", op_tags=GPU_OP_TAGS)
def narrativetrack_reid(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                        narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                        models: ModelRegistry, device: Device) -> Output[pd.DataFrame]:
    """A ReID embedding per box (reid slot: OSNet-x1.0 in the paper profile; offline: image embedder + colour
    statistics, named in the manifest)."""
    video = video_row(narrativetrack_video)
    frames, _, _ = sampled_frames(video, narrativetrack_frames)
    reid, _ = load_slot(models, device, "reid", needed_by=f"video {video['video_id']}")
    t0 = time.perf_counter()
    emb = stages.reid_embeddings(frames, det_records(narrativetrack_detections), reid)
    df = pd.DataFrame({"det": sorted(narrativetrack_detections["det"]), "embedding": emb})
    df["video_id"], df["seconds"] = video["video_id"], time.perf_counter() - t0
    df["reid_model"] = models.status("reid").checkpoint
    return Output(df, metadata={"boxes": len(df), "model": models.status("reid").checkpoint})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", pool="gpu", op_tags=GPU_OP_TAGS)
def narrativetrack_faces(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                         narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                         narrativetrack_tracklets: pd.DataFrame, models: ModelRegistry,
                         device: Device) -> Output[pd.DataFrame]:
    """The face (face slot) inside person boxes where one is visible (up to 8 evenly spaced boxes per track): box,
    score, identity embedding."""
    video = video_row(narrativetrack_video)
    dets = sorted(narrativetrack_detections["det"])
    face, why = load_slot(models, device, "face")
    t0 = time.perf_counter()
    if face is None:
        rows = [{"face_box": None, "face_score": None, "face_embedding": None}] * len(dets)
    else:
        frames, _, _ = sampled_frames(video, narrativetrack_frames)
        tr = narrativetrack_tracklets.sort_values("det")
        only = stages.face_subset([int(t) for t in tr["track_id"]], [int(x) for x in tr["sample"]])
        rows = stages.face_embeddings(frames, det_records(narrativetrack_detections), face, only)
    df = pd.DataFrame(rows, columns=["face_box", "face_score", "face_embedding"])
    df.insert(0, "det", dets)
    df["video_id"], df["seconds"], df["reason"] = video["video_id"], time.perf_counter() - t0, why
    as_strings(df, "reason")
    return Output(df, metadata={"faces": int(df["face_embedding"].notna().sum()),
                                "face_slot": MetadataValue.text(why or "available")})


# the face-merge and link thresholds are part of the code version: a refit (scripts/calibrate_faces.py,
# scripts/calibrate_links.py) re-runs the identities
@asset(partitions_def=P.items, group_name=GROUP,
       code_version=f"5+merge{FACE_MERGE:.4f}+links{LINKS_VERSION}+motion+domain{calibration.DOMAIN_VERSION}")
def narrativetrack_identities(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                              narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                              narrativetrack_tracklets: pd.DataFrame, narrativetrack_reid: pd.DataFrame,
                              narrativetrack_faces: pd.DataFrame, models: ModelRegistry,
                              judge: Judge) -> Output[pd.DataFrame]:
    """Identity per box: tracklets cut where appearance breaks, agglomerative clustering of tracklet ReID
    embeddings (never merging tracklets that share a frame), face refinement, the 4 largest clusters as main
    characters, then judge-based identity verification (majority vote) dropping false members."""
    video = video_row(narrativetrack_video)
    t0 = time.perf_counter()
    dets = det_records(narrativetrack_detections)
    tr = narrativetrack_tracklets.sort_values("det")
    tids = [int(t) for t in tr["track_id"]]
    # tracks linked by motion through the native frames (a table stored before them has none: the tracker's alone)
    motion = [int(t) for t in tr["motion_track"]] if "motion_track" in tr.columns else None
    emb = list(narrativetrack_reid.sort_values("det")["embedding"])
    emb = [None if e is None or (isinstance(e, float) and np.isnan(e)) else list(e) for e in emb]
    faces = narrativetrack_faces.sort_values("det")
    face_rows = [{"face_embedding": as_list(f), "face_box": as_list(b)} for f, b in zip(faces["face_embedding"],
                                                                                   faces["face_box"])]
    frames, _, _ = sampled_frames(video, narrativetrack_frames)
    shots = [int(s) for s in narrativetrack_frames.sort_values("sample")["shot"]]
    # fixed link thresholds (calibration videos only) and face sizes relative to the frame: the same frames give the
    # same identities whatever the file's size or whatever else it holds (issue 23)
    links = calibration.link_thresholds(models.status("reid").checkpoint)
    # the clustering threshold fitted on the calibration videos where they allowed a fit, else the profile's
    threshold = (links or {}).get("cluster") or constants.REID_THRESHOLD[models.profile]
    ids, info = stages.identities(dets, tids, emb, face_rows, threshold, FACE_MERGE, shots=shots,
                                  sample_fps=float(video["sample_fps"]), colours=stages.torso_colours(frames, dets),
                                  links=links, frame_height=float(video["height"]), motion_ids=motion)
    # identity needs a face model fitted on the video's kind of faces (issue 37): drawn or uncertain faces (the
    # domain classifier, core/face_domain.json) have none, so every identity is unknown with the reason, never a merge
    big = stages.min_face_height(float(video["height"]))
    domain = calibration.identity_domain([r["face_embedding"] for r in face_rows
                                          if r["face_embedding"] is not None and stages._face_height(r) >= big],
                                         models.status("face").checkpoint)
    if domain["unknown_reason"]:
        why = (f"identity unknown: {domain['unknown_reason']} ({domain['n_drawn']} of {domain['n_faces']} faces read "
               f"as drawn, core/face_domain.json)")
        ids = [None] * len(ids)
        info.update(cluster_of={}, decision=[why] * len(ids), decision_margin=[None] * len(ids))
    faces_df = faces.assign(face_box=[r["face_box"] for r in face_rows])
    seconds = time.perf_counter() - t0  # the judge's latency is not the pipeline's speed
    judged, vlog = verify_identities(judge, frames, dets, ids, info["tracklet_ids"], faces_df)
    verified = []
    for i, e in enumerate(ids):
        v = judged.get(info["tracklet_ids"][i]) if e is not None else None
        if v is False:
            ids[i] = None
        verified.append(v)
    df = pd.DataFrame({"det": [d for d in sorted(narrativetrack_detections["det"])],
                       "sample": [d["sample"] for d in dets], "tracklet": info["tracklet_ids"],
                       "entity": pd.array(ids, dtype="Int64"), "verified": pd.array(verified, dtype="boolean"),
                       # every identity, main character or not (the validity check compares people with it)
                       "identity": pd.array([info["cluster_of"].get(i) for i in range(len(dets))], dtype="Int64"),
                       # how close this row's identity came to being another: the signed margin of the nearest
                       # decision that touched it (positive: a merge taken; negative: one refused) and which one
                       "decision_margin": pd.array(info["decision_margin"], dtype="Float64"),
                       "decision": pd.array(info["decision"], dtype="string")})
    df["video_id"], df["seconds"] = video["video_id"], seconds
    df["protocol"] = protocol(models, judge)
    meta = {k: v for k, v in info.items() if k not in ("tracklet_ids", "face_log", "cluster_of", "link_calibration",
                                                       "link_log", "reid_log", "decision_margin", "decision")}
    meta["calibration"] = MetadataValue.json({"link": info["link_calibration"]})
    meta["link_decisions"] = MetadataValue.json(info["link_log"][:50])
    meta["reid_decisions"] = MetadataValue.json(info["reid_log"][:50])
    meta["voted_out_tracklets"] = sum(v is False for v in judged.values())
    meta["face_domain"] = MetadataValue.json({k: v for k, v in domain.items() if k != "face_merge"})
    return Output(df, metadata={**meta, "face_decisions": MetadataValue.json(info["face_log"]),
                                "verification": MetadataValue.json(vlog[:20])})
