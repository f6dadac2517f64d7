"""The pipeline's model-using stages as plain functions (models passed in), one per asset; each returns table rows.
The asset modules (stage_assets.py, registry_assets.py) wire them; scripts and tests can call them directly."""
from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Iterator, Optional, Sequence

import cv2
import numpy as np

from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import pipeline

# Working sizes, not protocol constants (results do not depend on them): native frames a detector gets at a time,
# and crops handed to the ReID model at a time (rounded up to a multiple of its batch, so its batches are the same).
DETECT_CHUNK = 16
REID_CHUNK = 64


def detect(frames: Sequence[np.ndarray], detector, second=None, second_query: str = "a person",
           min_score: float = constants.DETECTOR_MIN_SCORE) -> list[dict]:
    """Person boxes per sampled frame; with a second detector, boxes merged at IoU >= 0.5 keeping the higher score."""
    rows = []
    for k, (a, b) in enumerate(_detections(frames, detector, second, second_query)):
        ba, sa = _clean(a, min_score)
        if b is not None and len(b):
            bb, sb = _clean(b, min_score)
            boxes, scores, src = pipeline.merge_detections(ba, sa, bb, sb)
        else:
            boxes, scores, src = np.asarray(ba, float).reshape(-1, 4), np.asarray(sa, float), [1] * len(ba)
        for j in range(len(boxes)):
            rows.append({"sample": k, "box": [round(float(v), 2) for v in boxes[j]], "score": float(scores[j]),
                         "detector": int(src[j])})
    return rows


def _chunks(frames: Sequence[np.ndarray], size: int) -> Iterator[list[np.ndarray]]:
    """Consecutive frames ``size`` at a time, read only when their chunk comes (a FrameView reads from disk)."""
    if hasattr(frames, "chunks"):
        yield from frames.chunks(size)
        return
    for s in range(0, len(frames), size):
        yield [frames[k] for k in range(s, min(len(frames), s + size))]


def _detections(frames, detector, second, second_query: str):
    """(first, second) detector output per frame, a chunk of frames at a time: the detectors look at each image on
    its own, so chunking changes no box, and only a chunk of native frames is ever held."""
    for chunk in _chunks(frames, DETECT_CHUNK):
        d1 = detector.detect(chunk)
        d2 = second.detect(chunk, second_query, kind="character") if second is not None else [None] * len(chunk)
        del chunk  # before the next chunk is read: one chunk of frames at a time, not two
        yield from zip(d1, d2)


def _clean(d, min_score: float) -> tuple[np.ndarray, np.ndarray]:
    if d is None or not len(d):
        return np.zeros((0, 4)), np.zeros(0)
    k = d.confidence >= min_score
    b, s = np.asarray(d.xyxy[k], float), np.asarray(d.confidence[k], float)
    keep, scores = pipeline.suppress_duplicates(b, s)
    return b[keep], scores


def tracklets(dets: list[dict], n_samples: int, shots: Sequence[int], sample_fps: float) -> list[int]:
    """ByteTrack id per detection row (same order); -1 for an untracked low-score box."""
    per = defaultdict(list)
    for i, r in enumerate(dets):
        per[r["sample"]].append(i)
    frame_boxes = [(np.array([dets[i]["box"] for i in per[k]], float).reshape(-1, 4),
                    np.array([dets[i]["score"] for i in per[k]], float)) for k in range(n_samples)]
    ids = pipeline.track_boxes(frame_boxes, shots, sample_fps)
    out = [-1] * len(dets)
    for k in range(n_samples):
        for i, tid in zip(per[k], ids[k]):
            out[i] = int(tid)
    return out


def _model_batch(model) -> Optional[int]:
    """The batch a (possibly wrapped) embedding model cuts its input into, or None when it does not say."""
    for m in (model, getattr(model, "embedder", None)):
        b = getattr(m, "batch_size", None)
        if isinstance(b, int) and b > 0:
            return b
    return None


def reid_embeddings(frames: Sequence[np.ndarray], dets: list[dict], reid) -> list[Optional[list[float]]]:
    """ReID embedding per box, crops cut and embedded a chunk at a time (a multiple of the model's own batch, so every
    batch it runs is the one it ran on all crops at once: same numbers, only a chunk of crops held). A model that
    names no batch gets every crop at once."""
    batch = _model_batch(reid)
    size = -(-REID_CHUNK // batch) * batch if batch else max(1, len(dets))
    out: list[Optional[list[float]]] = [None] * len(dets)
    good: list[int] = []
    crops: list[np.ndarray] = []

    def flush():
        emb = reid.embed(crops) if crops else np.zeros((0, 0))
        for i, e in zip(good, emb):
            out[i] = np.asarray(e, np.float32).round(5).tolist()
        good.clear()
        crops.clear()
    for i, r in enumerate(dets):
        c = pipeline.crop(frames[r["sample"]], r["box"])
        if c is not None:
            good.append(i)
            crops.append(c)
            if len(crops) == size:
                flush()
    flush()
    return out


def face_subset(track_ids: Sequence[int], samples: Sequence[int],
                per_track: int = constants.FACE_BOXES_PER_TRACK) -> set:
    """The boxes whose faces are looked at: up to ``per_track`` evenly spaced boxes of every track (faces are
    averaged per tracklet; untracked boxes are never an entity's)."""
    by = defaultdict(list)
    for i, t in enumerate(track_ids):
        if t >= 0:
            by[t].append(i)
    out = set()
    for idx in by.values():
        idx.sort(key=lambda i: samples[i])
        out |= {idx[int(round(j))] for j in np.linspace(0, len(idx) - 1, min(per_track, len(idx)))}
    return out


def face_embeddings(frames: Sequence[np.ndarray], dets: list[dict], face, only: Optional[set] = None) -> list[dict]:
    """The largest face inside each person box (the crop upscaled first: faces in small boxes are tiny); boxes not in
    ``only`` are not looked at."""
    out = []
    for i, r in enumerate(dets):
        c = pipeline.crop(frames[r["sample"]], r["box"]) if only is None or i in only else None
        row = {"face_box": None, "face_score": None, "face_embedding": None}
        if c is not None:
            s = constants.FACE_UPSCALE_HEIGHT / c.shape[0]
            up = cv2.resize(c, (max(1, int(round(c.shape[1] * s))), constants.FACE_UPSCALE_HEIGHT),
                            interpolation=cv2.INTER_CUBIC if s > 1 else cv2.INTER_AREA)
            d = face.detect([up])[0]
            if len(d):
                j = int(np.argmax((d.xyxy[:, 2] - d.xyxy[:, 0]) * (d.xyxy[:, 3] - d.xyxy[:, 1])))
                emb = face.embed_faces(up, d[j:j + 1])[0]
                fb = d.xyxy[j] / s + np.array([r["box"][0], r["box"][1]] * 2)
                row = {"face_box": [round(float(v), 2) for v in fb], "face_score": float(d.confidence[j]),
                       "face_embedding": np.asarray(emb, np.float32).round(5).tolist()}
        out.append(row)
    return out


def split_tracks(dets: list[dict], track_ids: Sequence[int], reid: Sequence,
                 colours: Optional[Sequence] = None, motion_ids: Optional[Sequence[int]] = None) -> list[int]:
    """Tracklets before the torso-colour split: untracked boxes made one-box tracklets, tracks cut where ReID
    appearance breaks (``TRACKLET_SPLIT_COSINE``) and, with ``colours``, where consecutive boxes barely overlap.
    With ``motion_ids`` (the tracker's links redone with motion links through the native frames,
    flow_links.relink): those tracks, cut where ReID appearance breaks (motion already decided the overlaps)."""
    samples = [d["sample"] for d in dets]
    if motion_ids is not None:
        return pipeline.split_tracklets([int(t) for t in motion_ids], samples, reid, constants.TRACKLET_SPLIT_COSINE)
    # a box ByteTrack left untracked (a low score no live track wanted) is still a person: a one-box tracklet that
    # stitching can join to a track
    nxt = max(track_ids, default=-1) + 1
    track_ids = [t if t >= 0 else nxt + i for i, t in enumerate(track_ids)]
    track_ids = pipeline.split_tracklets(track_ids, samples, reid, constants.TRACKLET_SPLIT_COSINE)
    if colours is not None:
        # at 1 fps a track link between boxes that barely overlap is a guess (a walker moves a box width between
        # samples, and two walkers side by side swap): cut it, and let stitching decide on appearance and distance
        track_ids = pipeline.split_on(track_ids, samples, [d["box"] for d in dets], constants.LINK_POSITIVE_IOU,
                                      lambda a, b: float(pipeline.iou_matrix([a], [b])[0, 0]))
    return track_ids


def identities(dets: list[dict], track_ids: Sequence[int], reid: Sequence, faces: Sequence[dict],
               threshold: float, face_merge: float = constants.FACE_MERGE_COSINE, shots: Optional[Sequence[int]] = None,
               sample_fps: float = constants.SAMPLE_FPS, colours: Optional[Sequence] = None,
               links: Optional[dict] = None, frame_height: Optional[float] = None,
               motion_ids: Optional[Sequence[int]] = None) -> tuple[list[Optional[int]], dict]:
    """Identity per detection (None for untracked / noise): tracklets cut where appearance breaks and stitched where
    IoU tracking lost a moving person, ReID clustering of tracklets (cannot-link in time), then face refinement (faces
    too small to carry identity ignored), then the main characters (4 largest clusters) renumbered 0..3 by size.

    Issue 23: every decision is taken against fixed thresholds, never ones learned from the file's own pairs (they
    made who is merged depend on whatever else the file holds): ``links`` = {"reid": cosine, "colour":
    Bhattacharyya, ...} fitted on calibration videos (calibration.link_thresholds; without it the profile's ReID
    threshold and no colour check), and sizes are relative (box heights for distances; faces as a fraction of
    ``frame_height``), so the same frames at another size take the same decisions. ``motion_ids``: tracks linked by
    motion through the native frames between samples (narrativetrack_tracklets' ``motion_track``); appearance then
    stitches only what motion could not link."""
    samples = [d["sample"] for d in dets]
    links = dict(links or {"colour": constants.COLOUR_FALLBACK, "source": "fallback: no link calibration file"})
    if links.get("reid") is None:
        links["reid"] = threshold
    track_ids = split_tracks(dets, track_ids, reid, colours, motion_ids)
    col_t = None
    if colours is not None:
        col_t = float(links["colour"])
        track_ids = pipeline.split_on(track_ids, samples, colours, col_t, pipeline.bhattacharyya)
    link = float(links["reid"])
    shots = list(shots) if shots is not None else [0] * (max(samples, default=0) + 1)
    max_gap = max(1, int(math.floor(constants.LINK_MAX_GAP_S * sample_fps + 1e-9)))
    pre_stitch = list(track_ids)
    track_ids, links_log = pipeline.stitch_tracklets(track_ids, samples, [d["box"] for d in dets],
                                                     [shots[s] for s in samples], reid, link, max_gap,
                                                     1.0 / sample_fps, colour=colours, colour_threshold=col_t or 0.0)
    members, emb, frames, col = tracklet_means(dets, track_ids, reid, colours)
    reid_log: list = []
    labels = pipeline.cluster_tracklets(emb, frames, threshold, col, col_t or 0.0, log=reid_log)
    reid_clusters = len(set(labels.values()))
    # a face's size is judged against the frame's (the same frames at half or twice the size keep the same faces)
    min_face = min_face_height(frame_height)
    face = {}
    for t, m in members.items():
        fs = [np.asarray(faces[i]["face_embedding"], float) for i in m if faces[i]["face_embedding"] is not None
              and _face_height(faces[i]) >= min_face]
        if fs:
            face[t] = np.mean(fs, axis=0)
    labels, log = pipeline.face_refine(labels, face, frames, merge=face_merge)
    counts = defaultdict(int)
    for t, c in labels.items():
        counts[c] += len(members[t])
    main = pipeline.main_characters(dict(counts))
    rank = {c: k for k, c in enumerate(main)}
    out: list[Optional[int]] = [None] * len(dets)
    for t, m in members.items():
        if labels[t] in rank:
            for i in m:
                out[i] = rank[labels[t]]
    margin, decision = row_margins(pre_stitch, list(track_ids), links_log, reid_log, log)
    info = {"tracklets": len(members), "reid_clusters": reid_clusters, "clusters": len(counts),
            "main": len(main), "face_log": log, "threshold": threshold, "face_merge_cosine": face_merge,
            "link_threshold": round(link, 4), "link_calibration": {k: v for k, v in links.items()
                                                                   if k not in ("reid", "colour")},
            "links": len(links_log), "link_log": links_log,
            "colour_threshold": None if col_t is None else round(col_t, 4),
            "cluster_of": {i: labels[t] for t, m in members.items() for i in m},
            "reid_log": reid_log, "decision_margin": margin, "decision": decision,
            "tracklet_ids": list(track_ids)}
    return out, info


def tracklet_means(dets: list[dict], track_ids: Sequence[int], reid: Sequence, colours: Optional[Sequence] = None
                   ) -> tuple[dict, dict, dict, Optional[dict]]:
    """The tracklets the ReID clustering sees (after splitting and stitching): tracklet -> its detection rows (at
    least ``MIN_TRACKLET_BOXES`` with a ReID embedding), -> mean ReID embedding, -> sampled frames, and (with
    ``colours``) -> mean torso-colour histogram. One function for the pipeline and its calibration script, so the
    clustering threshold is fitted on exactly what it decides on."""
    members = defaultdict(list)
    for i, t in enumerate(track_ids):
        if t >= 0 and reid[i] is not None:
            members[t].append(i)
    members = {t: m for t, m in members.items() if len(m) >= constants.MIN_TRACKLET_BOXES}
    emb = {t: np.mean([np.asarray(reid[i], float) for i in m], axis=0) for t, m in members.items()}
    frames = {t: {dets[i]["sample"] for i in m} for t, m in members.items()}
    col = None
    if colours is not None:
        col = {t: np.mean([np.asarray(colours[i], float) for i in m if colours[i] is not None], axis=0)
               for t, m in members.items() if any(colours[i] is not None for i in m)}
    return dict(members), emb, frames, col


def row_margins(pre_stitch: Sequence[int], tracklet: Sequence[int], link_log: Sequence[dict],
                reid_log: Sequence[dict], face_log: Sequence[dict]) -> tuple[list[Optional[float]], list[Optional[str]]]:
    """Pure: per detection, the signed margin of the closest identity decision that touched it (a stitching link,
    a ReID merge or the nearest ReID cluster kept apart, a face merge / split / the nearest pair kept apart) and
    which decision that was. Positive: a merge (or link) taken by that much; negative: a merge refused by that much.
    Issue 23: a reader of the identities table sees per row how close its identity came to being another."""
    by_pre: dict = defaultdict(list)
    by_trk: dict = defaultdict(list)
    for d in link_log:
        for t in (d["from"], d["to"]):
            by_pre[t].append((d["margin"], "stitch link"))
    for d in reid_log:
        for t in list(d["a"]) + list(d["b"]):
            by_trk[t].append((d["margin"], d["op"].replace("_", " ")))
    for d in face_log:
        for t in d.get("tracklets", []):
            by_trk[t].append((d["margin"], f"face {d['op'].replace('_', ' ')}"))
    margin: list[Optional[float]] = []
    what: list[Optional[str]] = []
    for p, t in zip(pre_stitch, tracklet):
        cands = by_pre.get(p, []) + by_trk.get(t, [])
        if not cands:
            margin.append(None)
            what.append(None)
            continue
        m, w = min(cands, key=lambda c: (abs(c[0]), c[1]))
        margin.append(round(float(m), 4))
        what.append(w)
    return margin, what


def torso_colours(frames: Sequence[np.ndarray], dets: list[dict]) -> list[Optional[list[float]]]:
    out = []
    for r in dets:
        c = pipeline.crop(frames[r["sample"]], r["box"])
        out.append(pipeline.torso_colour(c) if c is not None else None)
    return out


def min_face_height(frame_height: Optional[float]) -> float:
    """The smallest face (native pixels) that carries identity: ``FACE_MIN_FRACTION`` of the frame height, so the same
    frames at half or twice the size keep the same faces; the absolute ``FACE_MIN_HEIGHT`` where no height is known."""
    return constants.FACE_MIN_FRACTION * float(frame_height) if frame_height else float(constants.FACE_MIN_HEIGHT)


def _face_height(row: dict) -> float:
    """Native height of a face box; inf where the row does not say (older tables kept only the embedding)."""
    b = row.get("face_box")
    return float(b[3] - b[1]) if b is not None else float("inf")


def offline_context(frames: Sequence[np.ndarray], times: Sequence[float], seg: dict, boxes_by_sample: dict,
                    own_boxes: dict) -> dict:
    """Offline contextual recognition of one segment: action from motion, outfit and scene from colours, and the
    measurements they are named from."""
    ks = seg["samples"]
    ts, bs = [times[k] for k in ks], [own_boxes[k] for k in ks]
    others = [boxes_by_sample.get(k, []) for k in ks]
    # crops and frames streamed into their small pixel samples (16x16 per crop, 48x27 per frame), never all held
    outfit, outfit_m = pipeline.outfit_from_pixels(pipeline._outfit_pixels(
        c for c in (pipeline.crop(frames[k], own_boxes[k]) for k in ks) if c is not None))
    scene, scene_m = pipeline.scene_from_pixels(pipeline._scene_pixels((frames[k] for k in ks), others))
    # the words are labels; states compare on the measured quantities behind them (states.py)
    return {"action": pipeline.describe_action(ts, bs), "outfit": outfit, "scene": scene,
            "measures": {"action": pipeline.motion_measure(ts, bs), "outfit": outfit_m, "scene": scene_m}}


def dumps(x: Any) -> str:
    return json.dumps(x, sort_keys=True, default=float)
