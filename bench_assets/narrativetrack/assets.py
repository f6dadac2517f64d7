"""NarrativeTrack wiring: each pipeline stage an asset partitioned by video, the QA set per video, answers per
(answerer x video), the leaderboard; QA over generated EntityBench episodes lives in
bridges/narrativetrack_episodes.py. Math in
pipeline.py / qa.py / scoring.py / metrics.py, model work in stages.py, prompts in judging.py."""

import json
import os
import time
from collections import Counter, OrderedDict, defaultdict
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.kernels import l2_normalise
from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.core.media import DecodeError, VideoSource, even_indices
from bench_assets.core.metric_spec import board_frame
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.slots import load_slot
from bench_assets.narrativetrack import board
# answer_rows / answer_frame / options_of stay importable from here (tests and scripts read them as assets.*)
from bench_assets.narrativetrack.answering import (ANSWER_COLUMNS, answer_frame, answer_rows,  # noqa: F401
                                                   answerer_for, options_of)
from bench_assets.narrativetrack import calibration
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import dataset
from bench_assets.narrativetrack import framestore
from bench_assets.narrativetrack import judging
from bench_assets.narrativetrack import measured
from bench_assets.narrativetrack import pipeline
from bench_assets.narrativetrack import qa
from bench_assets.narrativetrack import scoring
from bench_assets.narrativetrack import stages
from bench_assets.narrativetrack import states
from bench_assets.narrativetrack.metric_specs import METRICS
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

BENCH = constants.BENCH
P = BenchmarkPartitions(BENCH)
GROUP = "narrativetrack"
SLOTS = ("person_detector", "reid", "face", "image_embedder")


def data_dir(paths: BenchPaths):
    return paths.benchmark_dir(BENCH)


FACE_MERGE, FACE_CALIBRATION = calibration.face_merge_threshold(constants.FACE_MERGE_COSINE)


def manifest(models: ModelRegistry, judge: Judge) -> dict[str, Any]:
    slots = SLOTS + ((constants.SECOND_DETECTOR,) if constants.SECOND_DETECTOR else ())
    return build_manifest(benchmark=BENCH, protocol=constants.PROTOCOL, models=models.manifest(slots),
                          judge=judge.fingerprint(),
                          constants={k: (list(v) if isinstance(v, tuple) else v)
                                     for k, v in constants.CONSTANTS.items()},
                          extra={"profile": models.profile,
                                 "reid_threshold": constants.REID_THRESHOLD[models.profile],
                                 "face_merge_cosine": FACE_MERGE,
                                 "face_merge_calibration": FACE_CALIBRATION,
                                 "tracker": "ByteTrack (own implementation; supervision 0.31 has none)",
                                 "context_offline": "heuristic: action from box motion, outfit and scene from "
                                                    "dominant colours (used where the judge gives no answer)"})


def _protocol(models: ModelRegistry, judge: Judge) -> str:
    return protocol_digest(manifest(models, judge))


def _video_row(df: pd.DataFrame) -> dict:
    return df.iloc[0].to_dict()


def _source(video: dict) -> VideoSource:
    try:
        return VideoSource(video["path"])
    except DecodeError as e:
        raise Failure(f"video {video['video_id']}: {e}") from None


# (video path, sha256) -> the frames decoded for this video in this process, on disk (framestore.FrameSpill), so a
# later stage (detections, crops, the answerers' evenly spaced frames) reads them back without a second decode pass
# and without holding them in memory; bounded in disk bytes (the current video is never dropped)
_FRAMES: "OrderedDict[tuple, framestore.FrameSpill]" = OrderedDict()
_SPILL_BYTES = int(os.environ.get("BENCH_NT_SPILL_BYTES", str(8 << 30)))
DECODE_CHUNK = 8  # frames handed from the decoder to the spill at a time


def _spilled_bytes() -> int:
    return sum(s.nbytes for s in _FRAMES.values())


def _spill(video: dict, idx: Sequence[int], also: Sequence[int] = ()) -> framestore.FrameSpill:
    """The spill holding at least the frames at ``idx``; one streamed decode pass for the missing ones (and ``also``,
    indices a later stage will ask for), each frame written to disk as it is decoded."""
    key = (video["path"], video.get("sha256"))  # a file rewritten at the same path is another video
    spill = _FRAMES.get(key)
    if spill is None:
        spill = framestore.FrameSpill()
    missing = sorted({int(i) for i in idx} - spill.indices)
    if missing:
        src = _source(video)

        def put(indices, frames):
            for i, f in zip(indices, frames):
                spill.add(i, f)
        src.chunks(put, indices=sorted(set(missing) | ({int(i) for i in also} - spill.indices)), chunk=DECODE_CHUNK,
                   name="narrativetrack")
        try:
            src.run()
        except DecodeError as e:
            raise Failure(f"video {video['video_id']}: {e}") from None
    _FRAMES[key] = spill
    _FRAMES.move_to_end(key)
    while len(_FRAMES) > 1 and _spilled_bytes() > _SPILL_BYTES:
        _FRAMES.popitem(last=False)  # its file goes when no view reads it any more
    return spill


def frames_at(video: dict, idx: Sequence[int], also: Sequence[int] = ()) -> np.ndarray:
    """Only the frames at ``idx`` (native indices), stacked in memory: for a few frames (the answerer's). From one
    streamed decode pass that keeps nothing else in memory; ``also``: indices a later stage will ask for, decoded in
    the same pass. Frames already decoded for this video in this process are not decoded again."""
    spill = _spill(video, idx, also)
    want = [int(i) for i in idx]
    return np.stack([spill.get(i) for i in want]) if want else np.zeros((0, 0, 0, 3), np.uint8)


def frame_view(video: dict, idx: Sequence[int], also: Sequence[int] = ()) -> framestore.FrameView:
    """The frames at ``idx`` as a sequence read from disk one at a time (memory flat in the number of samples)."""
    return framestore.FrameView(_spill(video, idx, also), idx)


def _samples(video: dict, frames_df: pd.DataFrame) -> tuple[framestore.FrameView, list[float], list[int]]:
    idx = [int(i) for i in frames_df.sort_values("sample")["frame_index"]]
    return frame_view(video, idx), [float(t) for t in frames_df.sort_values("sample")["t"]], idx


def _strings(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    """Text columns typed as strings, so a partition where they are all null still unions with the others."""
    for c in cols:
        if c in df:
            df[c] = df[c].astype("string")
    return df


def _seq(v) -> Optional[list]:
    """A stored list (box, embedding) as a Python list, or None where the cell is missing (None, NaN, pd.NA)."""
    return None if v is None or isinstance(v, float) or v is pd.NA else list(v)


def _dets(df: pd.DataFrame) -> list[dict]:
    return [{"sample": int(r.sample), "box": [float(v) for v in r.box], "score": float(r.score)}
            for r in df.sort_values("det").itertuples()]


# ------------------------------------------------------------------------------------------------ pipeline stages

@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def narrativetrack_video(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated video of the index: path, sha256, native fps, size, duration, sampling rate."""
    vid = context.partition_key
    try:
        v = dataset.load_video(data_dir(paths), vid)
    except dataset.DatasetError as e:
        raise Failure(description=str(e)) from None
    src = _source({"video_id": vid, "path": v.path})  # probed, nothing decoded
    fps = src.fps if src.fps > 0 else 25.0
    row = {"video_id": vid, "path": v.path, "sha256": src.sha256, "native_fps": fps, "n_frames": src.n_frames,
           "width": src.size[0], "height": src.size[1], "duration": src.n_frames / fps,
           "sample_fps": v.sample_fps}
    return Output(pd.DataFrame([row]), metadata={"duration_s": round(row["duration"], 2), "fps": fps})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def narrativetrack_frames(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame) -> Output[pd.DataFrame]:
    """Frames at the sampling rate (t_j = j / f) and the shot each belongs to (cut detection)."""
    video = _video_row(narrativetrack_video)
    idx = pipeline.sample_indices(int(video["n_frames"]), float(video["native_fps"]), float(video["sample_fps"]))
    # the default answerer's evenly spaced frames come from the same pass (issue 16: one decode per video)
    shots = pipeline.shot_ids(frame_view(video, idx,
                                         also=even_indices(int(video["n_frames"]), constants.ANSWER_FRAMES)))
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
    video = _video_row(narrativetrack_video)
    vid = video["video_id"]
    frames, _, idx = _samples(video, narrativetrack_frames)
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


@asset(partitions_def=P.items, group_name=GROUP, code_version="2")
def narrativetrack_tracklets(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                             narrativetrack_frames: pd.DataFrame,
                             narrativetrack_detections: pd.DataFrame) -> Output[pd.DataFrame]:
    """ByteTrack tracklet id per box (reset at shot cuts; lost-track buffer in seconds)."""
    video = _video_row(narrativetrack_video)
    t0 = time.perf_counter()
    dets = _dets(narrativetrack_detections)
    shots = [int(s) for s in narrativetrack_frames.sort_values("sample")["shot"]]
    ids = stages.tracklets(dets, len(shots), shots, float(video["sample_fps"]))
    df = narrativetrack_detections.sort_values("det")[["det", "sample", "frame_index"]].copy()
    df["track_id"] = ids
    df["video_id"], df["seconds"] = video["video_id"], time.perf_counter() - t0
    return Output(df, metadata={"tracks": int(len(set(i for i in ids if i >= 0)))})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", pool="gpu", op_tags=GPU_OP_TAGS)
def narrativetrack_reid(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                        narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                        models: ModelRegistry, device: Device) -> Output[pd.DataFrame]:
    """A ReID embedding per box (reid slot: OSNet-x1.0 in the paper profile; offline: image embedder + colour
    statistics, named in the manifest)."""
    video = _video_row(narrativetrack_video)
    frames, _, _ = _samples(video, narrativetrack_frames)
    reid, _ = load_slot(models, device, "reid", needed_by=f"video {video['video_id']}")
    t0 = time.perf_counter()
    emb = stages.reid_embeddings(frames, _dets(narrativetrack_detections), reid)
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
    video = _video_row(narrativetrack_video)
    dets = sorted(narrativetrack_detections["det"])
    face, why = load_slot(models, device, "face")
    t0 = time.perf_counter()
    if face is None:
        rows = [{"face_box": None, "face_score": None, "face_embedding": None}] * len(dets)
    else:
        frames, _, _ = _samples(video, narrativetrack_frames)
        tr = narrativetrack_tracklets.sort_values("det")
        only = stages.face_subset([int(t) for t in tr["track_id"]], [int(x) for x in tr["sample"]])
        rows = stages.face_embeddings(frames, _dets(narrativetrack_detections), face, only)
    df = pd.DataFrame(rows, columns=["face_box", "face_score", "face_embedding"])
    df.insert(0, "det", dets)
    df["video_id"], df["seconds"], df["reason"] = video["video_id"], time.perf_counter() - t0, why
    _strings(df, "reason")
    return Output(df, metadata={"faces": int(df["face_embedding"].notna().sum()),
                                "face_slot": MetadataValue.text(why or "available")})


def _verify(judge: Judge, frames, dets, ids, tracklet_ids, faces_df) -> tuple[dict, list[dict]]:
    """Majority vote of the configured judges on face crops against the entity's reference crop; returns
    tracklet -> False for tracklets voted out (and the log)."""
    ok, why = judge.available()
    if not ok:
        return {}, [{"status": "skipped", "reason": f"identity verification needs the judge: {why}"}]
    models = list(constants.VERIFY_MODELS) or [judge.model]
    crop_votes: dict[int, list] = {}
    log = []
    faces = faces_df.set_index("det")
    for ent in sorted({e for e in ids if e is not None}):
        members = [i for i, e in enumerate(ids) if e == ent]
        # the reference: the sharpest, largest crop, found without holding every member's crop
        best = pipeline.canonical_best((i, pipeline.crop(frames[dets[i]["sample"]], dets[i]["box"])) for i in members)
        if best is None:
            continue
        ref, ref_crop = best
        with_face = [i for i in members if faces.loc[i, "face_box"] is not None and i != ref]
        n_pick = min(constants.VERIFY_FACE_CROPS, len(with_face))
        pick = [with_face[j] for j in np.linspace(0, len(with_face) - 1, n_pick).round().astype(int)] \
            if with_face else []
        pick = list(dict.fromkeys(pick))
        if not pick:
            continue
        face_crops = [pipeline.crop(frames[dets[i]["sample"]], faces.loc[i, "face_box"]) for i in pick]
        keep = [(i, c) for i, c in zip(pick, face_crops) if c is not None]
        if not keep:
            continue
        req = judging.verify_request(ref_crop, [c for _, c in keep], f"P{ent + 1}")
        votes = defaultdict(list)
        for m in models:
            res = judging.answerer_judge(judge, m).ask(req)
            log.append({"entity": ent, "model": m, "status": res.status, "reason": res.reason,
                        "cache_key": res.cache_key})
            if res.status != "ok":
                continue
            for (i, _), v in zip(keep, res.answer["verdicts"]):
                votes[i].append(v.get("same_identity"))
        crop_votes.update(votes)
    # tracklet -> False (voted out by the majority of its judged crops) or True (judged and kept)
    return pipeline.tracklet_verdicts(crop_votes, {i: tracklet_ids[i] for i in crop_votes}, len(models)), log


@asset(partitions_def=P.items, group_name=GROUP, code_version="3")
def narrativetrack_identities(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                              narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                              narrativetrack_tracklets: pd.DataFrame, narrativetrack_reid: pd.DataFrame,
                              narrativetrack_faces: pd.DataFrame, models: ModelRegistry,
                              judge: Judge) -> Output[pd.DataFrame]:
    """Identity per box: tracklets cut where appearance breaks, agglomerative clustering of tracklet ReID
    embeddings (never merging tracklets that share a frame), face refinement, the 4 largest clusters as main
    characters, then judge-based identity verification (majority vote) dropping false members."""
    video = _video_row(narrativetrack_video)
    t0 = time.perf_counter()
    dets = _dets(narrativetrack_detections)
    tids = [int(t) for t in narrativetrack_tracklets.sort_values("det")["track_id"]]
    emb = list(narrativetrack_reid.sort_values("det")["embedding"])
    emb = [None if e is None or (isinstance(e, float) and np.isnan(e)) else list(e) for e in emb]
    faces = narrativetrack_faces.sort_values("det")
    face_rows = [{"face_embedding": _seq(f), "face_box": _seq(b)} for f, b in zip(faces["face_embedding"],
                                                                                   faces["face_box"])]
    threshold = constants.REID_THRESHOLD[models.profile]
    frames, _, _ = _samples(video, narrativetrack_frames)
    shots = [int(s) for s in narrativetrack_frames.sort_values("sample")["shot"]]
    ids, info = stages.identities(dets, tids, emb, face_rows, threshold, FACE_MERGE, shots=shots,
                             sample_fps=float(video["sample_fps"]), colours=stages.torso_colours(frames, dets))
    faces_df = faces.assign(face_box=[r["face_box"] for r in face_rows])
    seconds = time.perf_counter() - t0  # the judge's latency is not the pipeline's speed
    judged, vlog = _verify(judge, frames, dets, ids, info["tracklet_ids"], faces_df)
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
                       "identity": pd.array([info["cluster_of"].get(i) for i in range(len(dets))], dtype="Int64")})
    df["video_id"], df["seconds"] = video["video_id"], seconds
    df["protocol"] = _protocol(models, judge)
    meta = {k: v for k, v in info.items() if k not in ("tracklet_ids", "face_log", "cluster_of", "link_calibration",
                                                       "colour_calibration")}
    meta["calibration"] = MetadataValue.json({"link": info["link_calibration"],
                                              "colour": info["colour_calibration"]})
    meta["voted_out_tracklets"] = sum(v is False for v in judged.values())
    return Output(df, metadata={**meta, "face_decisions": MetadataValue.json(info["face_log"]),
                                "verification": MetadataValue.json(vlog[:20])})


def _entity_boxes(dets_df: pd.DataFrame, ident: pd.DataFrame) -> dict[int, list[dict]]:
    d = dets_df.set_index("det")
    out = defaultdict(list)
    for r in ident.itertuples():
        if pd.notna(r.entity):
            out[int(r.entity)].append({"det": int(r.det), "sample": int(r.sample), "box": [float(v) for v in
                                                                                           d.loc[r.det, "box"]]})
    return out


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def narrativetrack_context(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                           narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                           narrativetrack_identities: pd.DataFrame, judge: Judge) -> Output[pd.DataFrame]:
    """Segments (presence runs split at cuts) and contextual recognition per segment: the judge sees the segment's
    frames with the target in a green box and returns action / outfit / scene; where it gives no answer the offline
    heuristic describes it (source column says which)."""
    video = _video_row(narrativetrack_video)
    frames, times, _ = _samples(video, narrativetrack_frames)
    shots = [int(s) for s in narrativetrack_frames.sort_values("sample")["shot"]]
    step = 1.0 / float(video["sample_fps"])
    gap = max(constants.GAP_TOLERANCE_S, 1.5 * step)
    by_entity = _entity_boxes(narrativetrack_detections, narrativetrack_identities)
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
                pick = [seg["samples"][i] for i in _even(len(seg["samples"]), constants.CONTEXT_FRAMES)]
                boxed = [pipeline.green_box(frames[k], own[k]) for k in pick]
                reqs.append((len(rows) - 1, judging.context_request(boxed, f"P{ent + 1}", j)))
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
    df = pd.DataFrame(rows, columns=["entity", "segment", "start", "end", "shot", "samples", "action", "outfit",
                                     "scene", "measures", "source", "reason", "cache_key"])
    df["video_id"] = video["video_id"]
    _strings(df, "reason", "cache_key", "source", "action", "outfit", "scene", "measures")
    return Output(df, metadata={"segments": len(df), "sources": MetadataValue.json(
        dict(Counter(df["source"]))) if len(df) else "none"})


def _even(n: int, k: int) -> list[int]:
    if n <= 0:
        return []
    return sorted(set(int(round(x)) for x in np.linspace(0, n - 1, min(k, n))))


@asset(partitions_def=P.items, group_name=GROUP, code_version="2")
def narrativetrack_entity_registry(context: AssetExecutionContext, narrativetrack_video: pd.DataFrame,
                                   narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                                   narrativetrack_identities: pd.DataFrame, narrativetrack_reid: pd.DataFrame,
                                   narrativetrack_context: pd.DataFrame, judge: Judge,
                                   store: Store) -> Output[pd.DataFrame]:
    """One record per main character: presence runs and track type (appear / disappear / reappear), segments with
    action / outfit / scene, change lists, flags (judge's second step when available, else computed from the change
    lists), and the canonical crop (sharpest, largest box) in the artifact store."""
    video = _video_row(narrativetrack_video)
    frames, times, _ = _samples(video, narrativetrack_frames)
    step = 1.0 / float(video["sample_fps"])
    gap = max(constants.GAP_TOLERANCE_S, 1.5 * step)
    duration = float(video["duration"])
    by_entity = _entity_boxes(narrativetrack_detections, narrativetrack_identities)
    emb = narrativetrack_reid.set_index("det")["embedding"]
    ctx = narrativetrack_context
    seg_of = {e: [dict(r._asdict()) for r in g.sort_values("segment").itertuples()] for e, g in ctx.groupby("entity")}
    centroid = {e: l2_normalise(np.mean([np.asarray(emb[b["det"]], float) for b in boxes], axis=0))
                for e, boxes in by_entity.items()}
    ok, why = judge.available()
    # one attribute source per video: the judge's where it answered any segment, else the heuristic; segments of
    # the other source (a judge failure filled by the heuristic) are left out of change lists (states.usable)
    style = "free_text" if len(ctx) and ctx["source"].astype(str).str.startswith("judge:").any() else "heuristic"
    rows = []
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
        # crops not all held
        best = pipeline.canonical_best((b, pipeline.crop(frames[b["sample"]], b["box"])) for b in boxes)
        if best is None:
            raise Failure(f"video {video['video_id']}: entity {ent} has no box of at least 4x4 pixels to crop")
        best_box, best_crop = best
        if ok:
            pick = [boxes[i] for i in _even(len(boxes), 8)]
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
    _strings(df, "reason", "cache_key")
    return Output(df, metadata={"entities": len(df), "track_types": MetadataValue.json(
        dict(Counter(df["track_type"])) if len(df) else {})})


def registry_records(reg: pd.DataFrame) -> list[dict]:
    return [{"entity_id": r.entity_id, "track_type": r.track_type, "segments": json.loads(r.segments),
             "flags": json.loads(r.flags), "runs": json.loads(r.runs),
             "duration": float(r.duration) if "duration" in reg and pd.notna(r.duration) else None}
            for r in reg.itertuples()]


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def narrativetrack_pipeline_quality(context: AssetExecutionContext, paths: BenchPaths,
                                    narrativetrack_video: pd.DataFrame, narrativetrack_frames: pd.DataFrame,
                                    narrativetrack_detections: pd.DataFrame, narrativetrack_tracklets: pd.DataFrame,
                                    narrativetrack_reid: pd.DataFrame, narrativetrack_faces: pd.DataFrame,
                                    narrativetrack_identities: pd.DataFrame,
                                    narrativetrack_entity_registry: pd.DataFrame) -> Output[pd.DataFrame]:
    """Against the ground-truth sidecar where one exists: identity purity / recall of the clustering, box recall,
    track-type accuracy; always: the pipeline's frames per second. None with a reason without a sidecar."""
    video = _video_row(narrativetrack_video)
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
    _strings(df, "reason", "detail")
    df["value"] = df["value"].astype("Float64")
    return Output(df, metadata={r["metric_id"]: (round(r["value"], 4) if r["value"] is not None else "None")
                                for r in rows})


def _filters(judge: Judge):
    ok, _ = judge.available()
    if not ok:
        return None, None, None

    def grammar(question):
        res = judge.ask(judging.grammar_request(question["template"], question["question"]))
        if res.status != "ok":
            return None, res.status
        a = res.answer
        fixed = [x for x in (a.get("understandable"), a.get("grammar")) if isinstance(x, str)
                 and x.strip().lower() not in ("yes", "")]
        return (fixed[0] if fixed else None), "ok"

    def similar(o1, o2):
        res = judge.ask(judging.similar_request(o1, o2))
        return (res.answer["answer"] == "yes" if res.status == "ok" else None), res.status

    return grammar, similar, judge.model


def measured_inputs(frames: pd.DataFrame, dets: pd.DataFrame, tracklets: pd.DataFrame, faces: pd.DataFrame,
                    idents: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """The per-sample facts measured.py asks about: every box with its main-character identity, its face box and
    whether its face was looked at (the faces stage looks at up to FACE_BOXES_PER_TRACK boxes per track)."""
    tr = tracklets.sort_values("det")
    examined = {int(tr["det"].iloc[i]) for i in stages.face_subset([int(t) for t in tr["track_id"]],
                                                                [int(x) for x in tr["sample"]])}
    fb = {int(d): (None if _seq(b) is None else [float(v) for v in b]) for d, b in zip(faces["det"], faces["face_box"])}
    fe = {int(d): (None if _seq(e) is None else np.asarray(e, float))
          for d, e in zip(faces["det"], faces["face_embedding"])}
    ent = {int(d): (None if pd.isna(e) else int(e)) for d, e in zip(idents["det"], idents["entity"])}
    idc = idents["identity"] if "identity" in idents else idents["entity"]
    ident = {int(d): (None if pd.isna(e) else int(e)) for d, e in zip(idents["det"], idc)}
    rows = [{"sample": int(r.sample), "box": [float(v) for v in r.box], "entity": ent.get(int(r.det)),
             "identity": ident.get(int(r.det)), "face_box": fb.get(int(r.det)), "face_emb": fe.get(int(r.det)),
             "examined": int(r.det) in examined} for r in dets.itertuples()]
    fr = [{"sample": int(r.sample), "t": float(r.t)} for r in frames.itertuples()]
    return fr, rows


@asset(partitions_def=P.items, group_name=GROUP, code_version="3")
def narrativetrack_qa(context: AssetExecutionContext, paths: BenchPaths, narrativetrack_video: pd.DataFrame,
                      narrativetrack_frames: pd.DataFrame, narrativetrack_detections: pd.DataFrame,
                      narrativetrack_tracklets: pd.DataFrame, narrativetrack_faces: pd.DataFrame,
                      narrativetrack_identities: pd.DataFrame,
                      narrativetrack_entity_registry: pd.DataFrame, judge: Judge) -> Output[pd.DataFrame]:
    """The QA pairs of this video: CRP templates over the entity registry, real and synthetic distractors
    (labelled), plus the measured questions (measured.py: face-anchored existence and identity questions whose
    answers rest only on detections, faces and identities), lexical and LLM filters, options permuted and balanced
    with the seed. Dropped pairs are kept with ``kept = False`` and the reason."""
    video = _video_row(narrativetrack_video)
    vid = video["video_id"]
    entities = registry_records(narrativetrack_entity_registry)
    styles = set(narrativetrack_entity_registry["attribute_style"]) if len(narrativetrack_entity_registry) else set()
    style = "free_text" if "free_text" in styles else "heuristic"
    raw = qa.generate(vid, entities, dataset.load_pool(data_dir(paths)), constants.QA_SEED, style)
    fr, rows_m = measured_inputs(narrativetrack_frames, narrativetrack_detections, narrativetrack_tracklets,
                                 narrativetrack_faces, narrativetrack_identities)
    names = {e: f"P{e + 1}" for e in {r["entity"] for r in rows_m if r["entity"] is not None}}
    measured_qas = measured.generate(vid, fr, rows_m, float(video["duration"]), 1.0 / float(video["sample_fps"]),
                                     names, qa._rng(constants.QA_SEED, vid, "measured"), FACE_MERGE)
    grammar, similar, model = _filters(judge)
    kept, dropped = qa.apply_filters(raw, grammar, similar)
    kept_m, dropped_m = qa.apply_filters(measured_qas, grammar, similar)
    # balanced apart: the template questions' options do not depend on whether measured questions exist
    kept = qa.balance(kept, constants.QA_SEED, vid) + qa.balance(kept_m, constants.QA_SEED, vid)
    dropped += dropped_m
    rows = [{**q, "kept": True, "drop_reason": None} for q in kept] + [{**q, "kept": False} for q in dropped]
    df = pd.DataFrame(rows)
    if df.empty:
        df = pd.DataFrame(columns=["qa_id", "video_id", "entity_id", "dimension", "format", "direction",
                                   "track_type", "distractor", "question", "options", "answer", "template",
                                   "anchor_segment", "kept", "drop_reason", "filters"])
    df["options"] = pd.Series([scoring.dumps_options(o) for o in df["options"]], index=df.index, dtype="string")
    for c in ("question_original", "drop_reason"):
        if c in df:
            df[c] = df[c].astype("string")
    if "filters" not in df:
        df["filters"] = None
    df["filters"] = df["filters"].fillna("lexical" if model is None else "lexical+llm")
    df = df.drop(columns=[c for c in ("group",) if c in df])
    if "attribute_sources" in df:
        df["attribute_sources"] = df["attribute_sources"].astype("string")
    cells = Counter(zip(df.loc[df["kept"], "dimension"], df.loc[df["kept"], "format"]))
    return Output(df, metadata={"qa": int(df["kept"].sum()), "dropped": int((~df["kept"]).sum()),
                                "cells": MetadataValue.json({f"{d}.{f}": n for (d, f), n in sorted(cells.items())}),
                                "llm_filters": "on" if model else "off (judge unavailable)"})


# ------------------------------------------------------------------------------------------------ answers

@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="2")
def narrativetrack_answers(context: AssetExecutionContext, paths: BenchPaths, narrativetrack_video: pd.DataFrame,
                           narrativetrack_qa: pd.DataFrame, judge: Judge,
                           models: ModelRegistry) -> Output[pd.DataFrame]:
    """The answerer's answer to every QA of the video (frames sampled uniformly, default 20), strict and lenient
    correctness; unanswered items carry the reason (judge off / replay miss / failure)."""
    name, vid = P.split(context.partition_key)
    answerer = answerer_for(paths, name)
    video = _video_row(narrativetrack_video)
    # read from the spill one at a time, each fitted and encoded before the next (never 20 native frames at once)
    frames = frame_view(video, even_indices(int(video["n_frames"]), answerer.frames))
    df = answer_frame(answer_rows(judge, answerer, narrativetrack_qa, frames))
    df["source_sha256"] = video["sha256"]
    df["protocol"] = _protocol(models, judge)
    # the slots that built these questions, where not the paper's checkpoint (the board marks every cell with it)
    df["substitute"] = pd.array([board.qa_substitute(models)] * len(df), dtype="string")
    try:  # the answerer's own fingerprint (backend, model, sampling): two endpoints never read as one answerer
        df["answerer_fingerprint"] = json.dumps(judging.answerer_judge(judge, answerer.model, answerer.endpoint())
                                                .fingerprint(), sort_keys=True)
    except ValueError as e:
        df["answerer_fingerprint"] = json.dumps({"error": str(e)})
    st = Counter(df["status"])
    why = Counter(df.loc[df.status != "ok", "reason"].dropna().astype(str).str[:120])
    return Output(df, metadata={"answered": int(st.get("ok", 0)), "skipped": int(st.get("skipped", 0)),
                                "failed": int(st.get("failed", 0)),
                                # unanswered items are re-asked when the answerer's endpoint / judge state changes
                                "evaluator_failures": int(st.get("skipped", 0) + st.get("failed", 0)),
                                "evaluator_failure_reasons": "; ".join(f"{n}x {r}" for r, n in why.most_common(5)),
                                "answerer_endpoint": MetadataValue.json({k: v for k, v in answerer.endpoint().items()}),
                                "strict_accuracy": (round(100 * float(df.loc[df.status == "ok", "strict"].mean()), 2)
                                                    if st.get("ok") else "None")})


def leaderboard_table(answers: pd.DataFrame, qas: pd.DataFrame, answerers: list[str],
                      qa_substitute: Optional[str] = None) -> pd.DataFrame:
    """The common board (core/metric_spec.py): per answerer (generator) x mode (slice) every paper cell, the
    average and the slices over the paper's questions, the measured questions under their own ids (board.py);
    the random baseline (generator 'random', baseline=True, one row per mode)."""
    return board_frame(BENCH, board.leaderboard_rows(answers, qas, answerers, qa_substitute), METRICS)


@asset(group_name=GROUP, code_version="2", deps=[narrativetrack_answers, narrativetrack_qa,
                                                  narrativetrack_pipeline_quality],
       automation_condition=board_condition("narrativetrack_qa", "narrativetrack_answers"))
def narrativetrack_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths,
                               models: ModelRegistry, judge: Judge) -> Output[pd.DataFrame]:
    """Accuracy (%) per (dimension x format) cell, the micro-average, slices by direction, track type and distractor
    type over the paper's questions, the measured questions apart (additions), strict and lenient separately, per
    answerer; the random baseline; pipeline quality in the metadata."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    if "narrativetrack_qa" not in tables:
        raise ValueError("no NarrativeTrack QA partition has been materialised yet")
    qas = store.query("SELECT * FROM narrativetrack_qa WHERE kept")
    if "narrativetrack_answers" in tables:
        answers = store.query("SELECT * FROM narrativetrack_answers")
    else:
        answers = pd.DataFrame(columns=ANSWER_COLUMNS)
    table = leaderboard_table(answers, qas, sorted(set(answers["answerer"])), board.qa_substitute(models))
    quality = store.query("SELECT * FROM narrativetrack_pipeline_quality") if \
        "narrativetrack_pipeline_quality" in tables else pd.DataFrame()
    man = manifest(models, judge)
    head = table[table["metric_id"].isin(["accuracy.avg", "measured.avg"])][
        ["generator", "metric_id", "slice", "value", "raw_mean", "coverage", "n_eval", "n_failed",
         "n_failed_evaluator", "substitute", "reason"]]
    return Output(table, metadata={
        "table": MetadataValue.md(board_markdown(table, {"slice": "strict"}, digits=2)),
        "table_lenient": MetadataValue.md(board_markdown(table, {"slice": "lenient"}, digits=2)),
        "avg": MetadataValue.md(head.to_markdown(index=False)),
        "pipeline_quality": MetadataValue.md(quality[["video_id", "metric_id", "value"]].to_markdown(index=False))
        if len(quality) else "none",
        "manifest": MetadataValue.json(man), "protocol_digest": protocol_digest(man)} | report_metadata(store, BENCH))


from bench_assets.narrativetrack import released  # noqa: E402

ASSETS = [narrativetrack_video, narrativetrack_frames, narrativetrack_detections, narrativetrack_tracklets,
          narrativetrack_reid, narrativetrack_faces, narrativetrack_identities, narrativetrack_context,
          narrativetrack_entity_registry, narrativetrack_pipeline_quality, narrativetrack_qa, narrativetrack_answers,
          narrativetrack_leaderboard, *released.ASSETS]
ITEM_ASSETS = ["narrativetrack_video", "narrativetrack_frames", "narrativetrack_detections",
               "narrativetrack_tracklets", "narrativetrack_reid", "narrativetrack_faces", "narrativetrack_identities",
               "narrativetrack_context", "narrativetrack_entity_registry", "narrativetrack_pipeline_quality",
               "narrativetrack_qa"]
GENERATOR_ASSETS = ["narrativetrack_answers"]
