"""The entity-centric pipeline's pure parts: sampling, cuts, detector merging, ByteTrack, tracklet stitching (ReID and
torso-colour thresholds fixed on calibration videos, distance gating in box heights), tracklet clustering with
cannot-link constraints, face refinement, segments and track types, offline contextual descriptors, change lists and
flags, canonical crops, and identity purity/recall against a ground-truth sidecar. No Dagster here."""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Iterable, Optional, Sequence

import cv2
import numpy as np
from scipy.optimize import linear_sum_assignment

from bench_assets.core.kernels import iou_matrix, l2_normalise
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import states


# ----------------------------------------------------------------------------------------------- frames and cuts

def sample_indices(n_frames: int, native_fps: float, sample_fps: float) -> list[int]:
    """Frame indices at ``sample_fps`` (t_j = j / f), never faster than the native rate."""
    if n_frames <= 0:
        return []
    fps = native_fps if native_fps > 0 else sample_fps
    step = max(1.0, fps / sample_fps)
    return sorted({min(n_frames - 1, int(round(j * step))) for j in range(int((n_frames - 1) / step) + 1)})


def shot_ids(frames: Sequence[np.ndarray], threshold: float = constants.CUT_CHANGED_FRACTION,
             compensated: float = constants.CUT_COMPENSATED_FRACTION, black: float = constants.CUT_BLACK_LEVEL,
             abrupt: Optional[float] = constants.CUT_ABRUPT_FRACTION, video_path: Optional[str] = None,
             frame_index: Optional[Sequence[int]] = None,
             blend: Optional[float] = constants.CUT_BLEND_RESIDUAL) -> list[int]:
    """Shot number per sampled frame (cuts.cut_flags; issue 23: at 1 fps a pan, parallax or a passing object moves
    most pixels). A cut where one frame is black and the other not, or where at least ``threshold`` of the pixels
    (thumbnails) change by more than 40 grey levels between consecutive samples and, given the video
    (``video_path``, the samples' native ``frame_index``), two consecutive native frames between them still differ by
    ``abrupt`` once the camera's motion is undone (a cut is abrupt, motion is spread) or every native frame between
    them is within ``blend`` of a mix of the two (a dissolve); without the video, at least
    ``compensated`` of the pixels still change once the earlier sample is warped by the camera's global motion.
    Sensitive on purpose: a spurious cut only splits a segment (the change lists collapse equal neighbours), a missed
    one merges two scenes."""
    from bench_assets.narrativetrack import cuts
    out, shot = [0] if len(frames) else [], 0
    for flag in cuts.cut_flags(frames, threshold, compensated, black, abrupt, video_path, frame_index, blend):
        shot += flag
        out.append(shot)
    return out


def split_tracklets(track_ids: Sequence[int], samples: Sequence[int], emb: Sequence, cos: float) -> list[int]:
    """A tracker follows boxes, not people: where consecutive boxes of one track disagree in appearance (ReID cosine
    < ``cos``) the track is cut into two tracklets (someone left and someone else came in at the same place)."""
    return split_on(track_ids, samples, emb, cos, lambda a, b: float(l2_normalise(a) @ l2_normalise(b)))


def link_pairs(track_ids: Sequence[int], samples: Sequence[int], emb: Sequence, sim=None,
               boxes: Optional[Sequence] = None) -> tuple[list[float], list[float]]:
    """Unlabelled pairs of one video that say what "the same person" and "two people" look like to ``sim``:
    positives are consecutive boxes of one IoU track (the same person by construction; with ``boxes``, only pairs
    overlapping at IoU >= ``constants.LINK_POSITIVE_IOU``, which a track cannot have jumped between), negatives two
    boxes of one frame (two people by construction). Returns (positive similarities, negative similarities)."""
    sim = sim or cosine
    unit = {i: e for i, e in enumerate(emb) if e is not None}
    by = defaultdict(list)
    for i, t in enumerate(track_ids):
        if t >= 0 and i in unit:
            by[t].append(i)
    pos = []
    for idx in by.values():
        idx.sort(key=lambda i: samples[i])
        pos += [sim(unit[a], unit[b]) for a, b in zip(idx, idx[1:]) if boxes is None or
                iou_matrix([boxes[a]], [boxes[b]])[0, 0] >= constants.LINK_POSITIVE_IOU]
    per = defaultdict(list)
    for i in unit:
        per[samples[i]].append(i)
    neg = [sim(unit[a], unit[b]) for ii in per.values() for k, a in enumerate(ii) for b in ii[k + 1:]]
    return pos, neg


def youden_threshold(pos: Sequence[float], neg: Sequence[float]) -> tuple[float, dict]:
    """The similarity that maximises Youden's J (TPR - FPR) between positive and negative pairs, half-way to the next
    lower observed value (a clean separation is not decided at its very edge). Returns (threshold, its rates)."""
    p, n = np.sort(np.asarray(pos, float)), np.sort(np.asarray(neg, float))
    cands = np.unique(np.r_[p, n])
    tpr = 1 - np.searchsorted(p, cands, side="left") / len(p)
    fpr = 1 - np.searchsorted(n, cands, side="left") / len(n)
    k = int(np.argmax(tpr - fpr))
    thr = float(cands[k] + cands[k - 1]) / 2 if k > 0 else float(cands[k])
    return thr, {"positives": len(p), "negatives": len(n), "tpr": round(float(tpr[k]), 3),
                 "fpr": round(float(fpr[k]), 3)}


def link_threshold(track_ids: Sequence[int], samples: Sequence[int], emb: Sequence,
                   fallback: float, sim=None, boxes: Optional[Sequence] = None) -> tuple[float, dict]:
    """Youden's J on one video's own unlabelled pairs (``link_pairs``); ``fallback`` where either side has fewer
    than ``constants.LINK_MIN_PAIRS``. Issue 23: the pipeline no longer decides with this (a threshold learned from
    the file made identities depend on whatever else the file holds); it fixes its link thresholds from these pairs
    pooled over the calibration videos (``scripts/calibrate_links.py``) and keeps this for the diagnostics."""
    pos, neg = link_pairs(track_ids, samples, emb, sim, boxes)
    info = {"positives": len(pos), "negatives": len(neg)}
    if len(pos) < constants.LINK_MIN_PAIRS or len(neg) < constants.LINK_MIN_PAIRS:
        return fallback, {**info, "source": "fallback (too few positive or negative pairs)"}
    thr, rates = youden_threshold(pos, neg)
    return thr, {**rates, "source": "Youden J on the video's own pairs"}


def cosine(a, b) -> float:
    return float(l2_normalise(a) @ l2_normalise(b))


def bhattacharyya(a, b) -> float:
    """Similarity of two normalised histograms (1: identical, 0: disjoint)."""
    return float(np.sqrt(np.asarray(a, float)) @ np.sqrt(np.asarray(b, float)))


def torso_colour(crop_rgb: np.ndarray) -> Optional[list[float]]:
    """An HSV histogram (12 hues x 4 saturations x 4 values) of the torso: rows 15-55 % of the person box, central
    60 %. Clothes colour tells apart two walkers whose whole-box embeddings are dominated by the same lawn (the
    legs are left out: most walkers wear dark trousers or jeans, which made two walkers side by side look alike)."""
    h, w = crop_rgb.shape[:2]
    y0, y1 = int(0.15 * h), max(int(0.55 * h), int(0.15 * h) + 1)
    c = crop_rgb[y0:y1, int(0.2 * w):max(w - int(0.2 * w), int(0.2 * w) + 1)]
    if c.size == 0:
        return None
    hsv = cv2.cvtColor(np.ascontiguousarray(c), cv2.COLOR_RGB2HSV)
    hist = cv2.calcHist([hsv], [0, 1, 2], None, [12, 4, 4], [0, 180, 0, 256, 0, 256]).ravel()
    return (hist / max(float(hist.sum()), 1.0)).round(5).tolist()


def split_on(track_ids: Sequence[int], samples: Sequence[int], desc: Sequence, threshold: float, sim) -> list[int]:
    """A track cut where consecutive boxes disagree: similarity ``sim`` of their descriptors below ``threshold``
    (a missing descriptor never cuts)."""
    order = defaultdict(list)
    for i, t in enumerate(track_ids):
        if t >= 0:
            order[t].append(i)
    out = list(track_ids)
    nxt = max([t for t in track_ids if t >= 0], default=-1) + 1
    for t, idx in order.items():
        idx.sort(key=lambda i: samples[i])
        cur = t
        for a, b in zip(idx, idx[1:]):
            if desc[a] is not None and desc[b] is not None and sim(desc[a], desc[b]) < threshold:
                cur, nxt = nxt, nxt + 1
            out[b] = cur
    return out


def stitch_tracklets(track_ids: Sequence[int], samples: Sequence[int], boxes: Sequence[Sequence[float]],
                     shots: Sequence[int], emb: Sequence, threshold: float, max_gap: int, sample_s: float = 1.0,
                     speed: float = constants.LINK_SPEED, colour: Optional[Sequence] = None,
                     colour_threshold: float = 0.0) -> tuple[list[int], list[dict]]:
    """IoU tracking at 1 fps cannot follow a walking person (they move about a box width between samples), so their
    track breaks into one-box tracklets. Tracklet B continues tracklet A when B starts at most ``max_gap`` samples
    after A ends, in the same shot, its first box lies within ``speed`` box heights per second of A's last box (and
    has a similar height), the two boxes' ReID cosine is >= ``threshold`` and their torso colours agree
    (Bhattacharyya >= ``colour_threshold``); the most similar pairs are linked first, each end once. Returns (track
    id per box, log of links)."""
    ends: dict[int, tuple[int, int]] = {}
    for i, t in enumerate(track_ids):
        if t < 0 or emb[i] is None:
            continue
        a, b = ends.get(t, (i, i))
        ends[t] = (i if samples[i] < samples[a] else a, i if samples[i] > samples[b] else b)
    cands = []
    for ta, (_, last) in ends.items():
        for tb, (first, _) in ends.items():
            gap = samples[first] - samples[last]
            if ta == tb or not 0 < gap <= max_gap or shots[first] != shots[last]:
                continue
            ba, bb = np.asarray(boxes[last], float), np.asarray(boxes[first], float)
            ha, hb = ba[3] - ba[1], bb[3] - bb[1]
            if min(ha, hb) <= 0 or max(ha, hb) / min(ha, hb) > constants.LINK_HEIGHT_RATIO:
                continue
            dist = float(np.hypot(*((ba[:2] + ba[2:]) / 2 - (bb[:2] + bb[2:]) / 2)))
            if dist > speed * gap * sample_s * (ha + hb) / 2:
                continue
            cos = float(l2_normalise(emb[last]) @ l2_normalise(emb[first]))
            col = (bhattacharyya(colour[last], colour[first]) if colour is not None and colour[last] is not None
                   and colour[first] is not None else None)
            if cos >= threshold and (col is None or col >= colour_threshold):
                # the margin of the link: how far above its threshold the weaker of the two tests passed
                margin = cos - threshold if col is None else min(cos - threshold, col - colour_threshold)
                cands.append((cos if col is None else col, ta, tb, cos, margin))
    nxt, prv = {}, {}
    for key, ta, tb, cos, margin in sorted(cands, reverse=True):
        if ta not in nxt and tb not in prv:
            nxt[ta], prv[tb] = (tb, cos, margin), ta
    root = {}
    for t in ends:
        r = t
        while r in prv:
            r = prv[r]
        root[t] = r
    log = [{"from": ta, "to": tb, "reid_cosine": round(c, 3), "margin": round(m, 4)}
           for ta, (tb, c, m) in sorted(nxt.items())]
    return [root.get(t, t) if t >= 0 else t for t in track_ids], log


# ----------------------------------------------------------------------------------------------- detection merge

def merge_detections(b1: np.ndarray, s1: np.ndarray, b2: np.ndarray, s2: np.ndarray,
                     iou: float = constants.MERGE_IOU) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """Two detectors' boxes: pairs with IoU >= ``iou`` are one entity and keep the higher-confidence box (the spec's
    decision; the paper's formula would always keep detector 1's). Returns (boxes, scores, source 1|2)."""
    b1, b2 = np.asarray(b1, float).reshape(-1, 4), np.asarray(b2, float).reshape(-1, 4)
    s1, s2 = np.asarray(s1, float).reshape(-1), np.asarray(s2, float).reshape(-1)
    m = iou_matrix(b1, b2)
    keep1, keep2 = set(range(len(b1))), set(range(len(b2)))
    if m.size:
        r, c = linear_sum_assignment(-m)
        for i, j in zip(r, c):
            if m[i, j] >= iou:
                (keep2.discard(j) if s1[i] >= s2[j] else keep1.discard(i))
    boxes = [b1[i] for i in sorted(keep1)] + [b2[j] for j in sorted(keep2)]
    scores = [s1[i] for i in sorted(keep1)] + [s2[j] for j in sorted(keep2)]
    src = [1] * len(keep1) + [2] * len(keep2)
    return (np.asarray(boxes, float).reshape(-1, 4), np.asarray(scores, float), src)


def suppress_duplicates(boxes: np.ndarray, scores: np.ndarray, iou: float = constants.MERGE_IOU,
                        containment: float = constants.DUPLICATE_CONTAINMENT) -> tuple[list[int], np.ndarray]:
    """One detector's several boxes for one person (a full-body box and a head-and-torso box inside it): in score
    order, a box overlapping a kept box at IoU >= ``iou`` is dropped, and of two boxes one of which lies inside the
    other (intersection / its area >= ``containment``) the larger, more complete box is kept with the higher score.
    Returns (kept indices, their scores)."""
    boxes = np.asarray(boxes, float).reshape(-1, 4)
    scores = np.asarray(scores, float).reshape(-1)
    area = lambda b: max((b[2] - b[0]) * (b[3] - b[1]), 1e-9)  # noqa: E731
    keep: list[list] = []  # [index, score]
    for i in np.argsort(-scores, kind="stable"):
        b = boxes[i]
        for kept in keep:
            k = boxes[kept[0]]
            inter = max(0.0, min(b[2], k[2]) - max(b[0], k[0])) * max(0.0, min(b[3], k[3]) - max(b[1], k[1]))
            if iou_matrix(b[None], k[None])[0, 0] >= iou or inter / area(b) >= containment:
                break  # b is a duplicate of (or inside) a kept box
            if inter / area(k) >= containment:
                kept[0] = int(i)  # the kept box lies inside b: keep the larger box, with the higher score
                break
        else:
            keep.append([int(i), float(scores[i])])
    keep.sort()
    return [k for k, _ in keep], np.array([s for _, s in keep], float)


# ----------------------------------------------------------------------------------------------- ByteTrack

class _Kalman:
    """Constant-velocity Kalman filter on (cx, cy, aspect, h), as in SORT / ByteTrack."""

    def __init__(self) -> None:
        self.F = np.eye(8)
        self.F[:4, 4:] = np.eye(4)
        self.Hm = np.eye(4, 8)
        self.wp, self.wv = 1.0 / 20, 1.0 / 160

    def initiate(self, z):
        mean = np.r_[z, np.zeros(4)]
        h = z[3]
        std = [2 * self.wp * h, 2 * self.wp * h, 1e-2, 2 * self.wp * h,
               10 * self.wv * h, 10 * self.wv * h, 1e-5, 10 * self.wv * h]
        return mean, np.diag(np.square(std))

    def predict(self, mean, cov):
        h = mean[3]
        q = np.diag(np.square([self.wp * h, self.wp * h, 1e-2, self.wp * h,
                               self.wv * h, self.wv * h, 1e-5, self.wv * h]))
        return self.F @ mean, self.F @ cov @ self.F.T + q

    def update(self, mean, cov, z):
        h = mean[3]
        r = np.diag(np.square([self.wp * h, self.wp * h, 1e-1, self.wp * h]))
        s = self.Hm @ cov @ self.Hm.T + r
        k = cov @ self.Hm.T @ np.linalg.inv(s)
        return mean + k @ (z - self.Hm @ mean), (np.eye(8) - k @ self.Hm) @ cov


def _xyah(b):
    w, h = b[2] - b[0], b[3] - b[1]
    return np.array([b[0] + w / 2, b[1] + h / 2, w / max(h, 1e-6), h], float)


def _xyxy(m):
    w = m[2] * m[3]
    return np.array([m[0] - w / 2, m[1] - m[3] / 2, m[0] + w / 2, m[1] + m[3] / 2])


@dataclass
class _Track:
    tid: int
    mean: np.ndarray
    cov: np.ndarray
    lost_for: int = 0


class ByteTracker:
    """ByteTrack (Zhang et al. 2022): high-score boxes matched first to every live track (IoU x score), low-score boxes
    second to the still-tracked ones, new tracks from unmatched high-score boxes, tracks dropped after
    ``lost_track_buffer`` frames unseen. ``reset()`` at a shot cut (a box never continues across a cut by IoU).

    supervision 0.31 no longer ships ``sv.ByteTrack`` (it moved to the ``trackers`` package), so the algorithm is here.
    """

    def __init__(self, track_activation_threshold: float = 0.5, lost_track_buffer: int = 4,
                 minimum_matching_threshold: float = 0.8, low_score: float = 0.1) -> None:
        self.high, self.buffer, self.match, self.low = (track_activation_threshold, lost_track_buffer,
                                                        minimum_matching_threshold, low_score)
        self.kf = _Kalman()
        self.tracks: list[_Track] = []
        self.next_id = 0

    def reset(self) -> None:
        self.tracks = []

    def _associate(self, tracks, boxes, scores, thresh, fuse):
        if not tracks or len(boxes) == 0:
            return [], list(range(len(tracks))), list(range(len(boxes)))
        pred = np.stack([_xyxy(t.mean[:4]) for t in tracks])
        sim = iou_matrix(pred, boxes)
        if fuse:
            sim = sim * np.asarray(scores)[None, :]
        cost = 1 - sim
        r, c = linear_sum_assignment(cost)
        pairs = [(i, j) for i, j in zip(r, c) if cost[i, j] <= thresh]
        mt, md = {i for i, _ in pairs}, {j for _, j in pairs}
        return pairs, [i for i in range(len(tracks)) if i not in mt], [j for j in range(len(boxes)) if j not in md]

    def update(self, boxes: np.ndarray, scores: np.ndarray) -> list[int]:
        """Track id per box (-1: not tracked, a low-score box no track wanted)."""
        boxes, scores = np.asarray(boxes, float).reshape(-1, 4), np.asarray(scores, float).reshape(-1)
        ids = [-1] * len(boxes)
        for t in self.tracks:
            t.mean, t.cov = self.kf.predict(t.mean, t.cov)
        hi = [j for j in range(len(boxes)) if scores[j] >= self.high]
        lo = [j for j in range(len(boxes)) if self.low <= scores[j] < self.high]
        pairs, t_left, d_left = self._associate(self.tracks, boxes[hi], scores[hi], self.match, True)
        for i, j in pairs:
            self._hit(self.tracks[i], boxes[hi[j]])
            ids[hi[j]] = self.tracks[i].tid
        tracked = [self.tracks[i] for i in t_left if self.tracks[i].lost_for == 0]
        pairs2, t2_left, _ = self._associate(tracked, boxes[lo], scores[lo], 0.5, False)
        for i, j in pairs2:
            self._hit(tracked[i], boxes[lo[j]])
            ids[lo[j]] = tracked[i].tid
        matched = {self.tracks[i].tid for i, _ in pairs} | {tracked[i].tid for i, _ in pairs2}
        for t in self.tracks:
            if t.tid not in matched:
                t.lost_for += 1
        self.tracks = [t for t in self.tracks if t.lost_for <= self.buffer]
        for j in d_left:
            b = boxes[hi[j]]
            mean, cov = self.kf.initiate(_xyah(b))
            self.tracks.append(_Track(self.next_id, mean, cov))
            ids[hi[j]] = self.next_id
            self.next_id += 1
        return ids

    def _hit(self, t: _Track, box) -> None:
        t.mean, t.cov = self.kf.update(t.mean, t.cov, _xyah(box))
        t.lost_for = 0


def track_boxes(frame_boxes: Sequence[tuple[np.ndarray, np.ndarray]], shots: Sequence[int], sample_fps: float,
                params: Optional[dict] = None) -> list[list[int]]:
    """Track ids for every frame's boxes; the tracker is reset at each shot cut; the lost buffer is in seconds."""
    p = dict(params or constants.BYTETRACK)
    buffer_s = p.pop("lost_track_buffer_s")
    tracker = ByteTracker(lost_track_buffer=max(1, int(math.ceil(buffer_s * sample_fps))), **p)
    out, prev = [], None
    for (boxes, scores), shot in zip(frame_boxes, shots):
        if prev is not None and shot != prev:
            tracker.reset()
        out.append(tracker.update(boxes, scores))
        prev = shot
    return out


# ----------------------------------------------------------------------------------------------- clustering

def cluster_tracklets(embeddings: dict[int, np.ndarray], frames: dict[int, set], threshold: float,
                      colours: Optional[dict[int, np.ndarray]] = None, colour_threshold: float = 0.0,
                      log: Optional[list] = None) -> dict[int, int]:
    """Average-linkage agglomerative clustering of tracklets by cosine of their mean ReID embeddings; two clusters
    merge only when their average similarity >= threshold, no two of their tracklets share a frame (a person is
    not twice in one frame), and, with ``colours`` (mean clothes-colour histograms), their average colour similarity
    is >= ``colour_threshold``. Returns tracklet -> cluster id (0..n-1, ordered by first tracklet). With ``log``, every
    merge is appended with its margin (similarity minus the threshold), and for every final cluster its nearest
    other cluster it could have joined (no shared frame), with the margin by which it stayed apart (issue 23)."""
    tids = sorted(embeddings)
    if not tids:
        return {}
    E = np.stack([l2_normalise(embeddings[t]) for t in tids])
    S = E @ E.T
    C = None
    if colours is not None and all(t in colours for t in tids):
        H = np.sqrt(np.clip(np.stack([np.asarray(colours[t], float) for t in tids]), 0, None))
        C = H @ H.T
    clusters = {i: [i] for i in range(len(tids))}
    fr = {i: set(frames[tids[i]]) for i in range(len(tids))}
    while True:
        best, pair = -np.inf, None
        keys = sorted(clusters)
        for a_i, a in enumerate(keys):
            for b in keys[a_i + 1:]:
                if fr[a] & fr[b]:
                    continue
                s = float(S[np.ix_(clusters[a], clusters[b])].mean())
                if C is not None and float(C[np.ix_(clusters[a], clusters[b])].mean()) < colour_threshold:
                    continue
                if s > best:
                    best, pair = s, (a, b)
        if pair is None or best < threshold:
            break
        a, b = pair
        if log is not None:
            log.append({"op": "reid_merge", "a": [tids[i] for i in clusters[a]], "b": [tids[i] for i in clusters[b]],
                        "reid_cosine": round(best, 4), "margin": round(best - threshold, 4)})
        clusters[a] += clusters.pop(b)
        fr[a] |= fr.pop(b)
    if log is not None:
        keys = sorted(clusters)
        for a in keys:
            near = None
            for b in keys:
                if a == b or fr[a] & fr[b]:
                    continue
                s = float(S[np.ix_(clusters[a], clusters[b])].mean())
                m = s - threshold
                if C is not None:
                    m = min(m, float(C[np.ix_(clusters[a], clusters[b])].mean()) - colour_threshold)
                if near is None or m > near[0]:
                    near = (m, b, s)
            if near is not None:
                log.append({"op": "reid_kept_apart", "a": [tids[i] for i in clusters[a]],
                            "b": [tids[i] for i in clusters[near[1]]], "reid_cosine": round(near[2], 4),
                            "margin": round(near[0], 4)})
    order = sorted(clusters.values(), key=min)
    return {tids[i]: k for k, members in enumerate(order) for i in members}


def face_refine(labels: dict[int, int], face_emb: dict[int, np.ndarray], frames: dict[int, set],
                merge: float = constants.FACE_MERGE_COSINE,
                split: float = constants.FACE_SPLIT_COSINE) -> tuple[dict[int, int], list]:
    """Face recognition refines the ReID clusters: (1) a tracklet whose face disagrees with the rest of its cluster's
    faces (cosine < ``split``) is split off; (2) clusters whose mean faces agree (cosine >= ``merge``) and that never
    share a frame are merged (an outfit change splits ReID clusters; the face joins them). Tracklets without a face
    keep their ReID cluster. Returns (tracklet -> cluster, log of decisions). Every decision carries its margin
    (cosine minus the threshold it was taken against), and the closest pair left apart is logged as ``kept_apart``,
    so a reader sees how near a merge or a refusal was (issue 23)."""
    labels = dict(labels)
    log = []
    nxt = max(labels.values(), default=-1) + 1
    by = defaultdict(list)
    for t, c in labels.items():
        by[c].append(t)
    for c, members in list(by.items()):
        with_face = [t for t in members if t in face_emb]
        if len(with_face) < 3:
            continue
        for t in with_face:
            rest = l2_normalise(np.mean([face_emb[u] for u in with_face if u != t], axis=0))
            cos = float(l2_normalise(face_emb[t]) @ rest)
            if cos < split:
                labels[t] = nxt
                log.append({"op": "split", "tracklet": t, "from": c, "to": nxt, "face_cosine": round(cos, 3),
                            "margin": round(cos - split, 3), "tracklets": [t]})
                nxt += 1
    while True:
        by = defaultdict(list)
        for t, c in labels.items():
            by[c].append(t)
        faces = {c: l2_normalise(np.mean([face_emb[t] for t in ts if t in face_emb], axis=0))
                 for c, ts in by.items() if any(t in face_emb for t in ts)}
        span = {c: set().union(*(frames[t] for t in ts)) for c, ts in by.items()}
        best, pair = -np.inf, None
        cs = sorted(faces)
        for i, a in enumerate(cs):
            for b in cs[i + 1:]:
                if span[a] & span[b]:
                    continue
                s = float(faces[a] @ faces[b])
                if s > best:
                    best, pair = s, (a, b)
        if pair is None or best < merge:
            if pair is not None:
                log.append({"op": "kept_apart", "a": pair[0], "b": pair[1], "face_cosine": round(best, 3),
                            "margin": round(best - merge, 3), "tracklets": sorted(by[pair[0]] + by[pair[1]])})
            break
        a, b = pair
        log.append({"op": "merge", "into": a, "from": b, "face_cosine": round(best, 3),
                    "margin": round(best - merge, 3), "tracklets": sorted(by[a] + by[b])})
        for t in by[b]:
            labels[t] = a
    order = {c: k for k, c in enumerate(sorted(set(labels.values()), key=lambda c: min(t for t in labels
                                                                                     if labels[t] == c)))}
    return {t: order[c] for t, c in labels.items()}, log


def main_characters(box_counts: dict[int, int], n: int = constants.MAIN_CHARACTERS) -> list[int]:
    """The n largest clusters (by number of boxes; ties by id)."""
    return [c for c, _ in sorted(box_counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def tracklet_verdicts(crop_votes: dict, crop_tracklet: dict, n_models: int) -> dict:
    """Majority vote over the judges: a face crop is a false member when more than half of the ``n_models`` judges
    said ``same_identity: false`` ("unsure" and missing answers are not false); a tracklet is voted out (False) when
    more than half of its judged crops are false members, else kept (True)."""
    per = defaultdict(list)
    for crop, votes in crop_votes.items():
        per[crop_tracklet[crop]].append(sum(v is False for v in votes) > n_models / 2)
    return {t: not (sum(v) > len(v) / 2) for t, v in per.items() if v}


# ----------------------------------------------------------------------------------------------- segments

def presence_runs(times: Iterable[float], gap: float = constants.GAP_TOLERANCE_S,
                  step: float = 0.0) -> list[tuple[float, float]]:
    """Maximal runs of presence: consecutive timestamps closer than ``gap`` are one run. ``step`` (one sampling
    period) is added to a run's end: a person seen at t is present until the next sample."""
    ts = sorted(set(float(t) for t in times))
    runs: list[list[float]] = []
    for t in ts:
        if runs and t - runs[-1][1] <= gap:
            runs[-1][1] = t
        else:
            runs.append([t, t])
    return [(a, b + step) for a, b in runs]


def track_type(runs: Sequence[tuple[float, float]], duration: float, edge: float = constants.EDGE_TOLERANCE_S) -> str:
    """appear (one run, reaching the end but not the start), disappear (one run from the start, ending early),
    reappear (several disjoint runs); continuous / middle otherwise (no existence question)."""
    if not runs:
        return "absent"
    if len(runs) >= 2:
        return "reappear"
    s, e = runs[0]
    starts, ends = s <= edge, e >= duration - edge
    if starts and ends:
        return "continuous"
    if starts:
        return "disappear"
    if ends:
        return "appear"
    return "middle"


def context_segments(times: Sequence[float], shots: Sequence[int], gap: float, step: float) -> list[dict]:
    """Presence runs split at shot cuts: the unit of contextual recognition. [{start, end, shot, times}]"""
    by_t = sorted(zip(times, shots))
    segs: list[dict] = []
    for t, s in by_t:
        if segs and s == segs[-1]["shot"] and t - segs[-1]["times"][-1] <= gap:
            segs[-1]["times"].append(t)
        else:
            segs.append({"shot": int(s), "times": [t]})
    for g in segs:
        g["start"], g["end"] = g["times"][0], g["times"][-1] + step
    return segs


# ----------------------------------------------------------------------------------------------- offline context

_COLOURS = ("black", "white", "grey", "red", "orange", "brown", "yellow", "green", "cyan", "blue", "purple", "pink")


def _colour_codes(pixels_rgb: np.ndarray) -> np.ndarray:
    """A colour per pixel (HSV rules) as its index in ``_COLOURS``: small integers, so a long segment's pixels cost
    a byte each, not a string each."""
    c = {name: np.uint8(i) for i, name in enumerate(_COLOURS)}
    px = np.asarray(pixels_rgb, np.uint8).reshape(-1, 1, 3)
    hsv = cv2.cvtColor(px, cv2.COLOR_RGB2HSV).reshape(-1, 3)
    h, s, v = hsv[:, 0], hsv[:, 1], hsv[:, 2]
    hue = np.select([(h < 8) | (h >= 170), h < 20, h < 33, h < 85, h < 100, h < 130, h < 150, h < 170],
                    [c["red"], c["orange"], c["yellow"], c["green"], c["cyan"], c["blue"], c["purple"], c["pink"]],
                    c["red"]).astype(np.uint8)
    hue[(hue == c["orange"]) & (v < 150)] = c["brown"]
    out = np.where(s >= 60, hue, c["grey"]).astype(np.uint8)
    out[(s < 60) & (v > 200)] = c["white"]
    out[v < 50] = c["black"]
    return out


def colour_names(pixels_rgb: np.ndarray) -> np.ndarray:
    """A colour word per pixel (HSV rules)."""
    return np.array(_COLOURS, dtype=object)[_colour_codes(pixels_rgb)]


def colour_shares(pixels_rgb: np.ndarray, digits: Optional[int] = 4) -> list[float]:
    """The share of each colour name (``_COLOURS`` order): the measured quantity behind an offline colour word."""
    codes = _colour_codes(pixels_rgb)
    if len(codes) == 0:
        return [0.0] * len(_COLOURS)
    counts = np.bincount(codes, minlength=len(_COLOURS))
    shares = [int(counts[i]) / len(codes) for i in range(len(_COLOURS))]
    return [round(x, digits) for x in shares] if digits is not None else shares


def dominant_colours(pixels_rgb: np.ndarray, k: int = 2, min_share: float = 0.2) -> list[str]:
    shares = colour_shares(pixels_rgb, None)
    if not any(shares):
        return []
    order = sorted(range(len(_COLOURS)), key=lambda i: (-shares[i], i))
    top = [_COLOURS[i] for i in order if shares[i] >= min_share]
    return top[:k] or [_COLOURS[order[0]]]


def _and(words: list[str]) -> str:
    return " and ".join(words)


def _outfit_pixels(crops: Sequence[np.ndarray]) -> np.ndarray:
    """The body below the head (rows 48-100 % of the box, central 70 %), 16x16 per crop."""
    px = []
    for c in crops:
        h, w = c.shape[:2]
        region = c[int(h * 0.48):, int(w * 0.15):max(int(w * 0.85), int(w * 0.15) + 1)]
        if region.size:
            px.append(cv2.resize(region, (16, 16), interpolation=cv2.INTER_AREA).reshape(-1, 3))
    return np.concatenate(px) if px else np.zeros((0, 3), np.uint8)


def _scene_pixels(frames: Sequence[np.ndarray], person_boxes: Sequence[Sequence]) -> np.ndarray:
    """The frame outside every person box (48x27 thumbnails)."""
    px = []
    for f, boxes in zip(frames, person_boxes):
        small = cv2.resize(f, (48, 27), interpolation=cv2.INTER_AREA)
        mask = np.ones(small.shape[:2], bool)
        sx, sy = 48 / f.shape[1], 27 / f.shape[0]
        for b in boxes:
            mask[int(b[1] * sy):int(math.ceil(b[3] * sy)), int(b[0] * sx):int(math.ceil(b[2] * sx))] = False
        px.append(small[mask])
    return np.concatenate(px) if px else np.zeros((0, 3), np.uint8)


def outfit_from_pixels(px: np.ndarray) -> tuple[str, Optional[list[float]]]:
    """Offline outfit words and measure from the body pixels (``_outfit_pixels``)."""
    return (f"{_and(dominant_colours(px))} clothes", colour_shares(px)) if len(px) else ("unknown clothes", None)


def scene_from_pixels(px: np.ndarray) -> tuple[str, Optional[list[float]]]:
    """Offline scene words and measure from the background pixels (``_scene_pixels``)."""
    return ((f"a place with a {_and(dominant_colours(px))} background", colour_shares(px)) if len(px)
            else ("an unknown place", None))


def describe_outfit(crops: Sequence[np.ndarray]) -> str:
    """Offline outfit: the dominant colours of the body below the head."""
    return outfit_from_pixels(_outfit_pixels(crops))[0]


def outfit_measure(crops: Sequence[np.ndarray]) -> Optional[list[float]]:
    return outfit_from_pixels(_outfit_pixels(crops))[1]


def describe_scene(frames: Sequence[np.ndarray], person_boxes: Sequence[Sequence]) -> str:
    """Offline scene: the dominant colours of the frame outside every person box."""
    return scene_from_pixels(_scene_pixels(frames, person_boxes))[0]


def scene_measure(frames: Sequence[np.ndarray], person_boxes: Sequence[Sequence]) -> Optional[list[float]]:
    return scene_from_pixels(_scene_pixels(frames, person_boxes))[1]


def motion_measure(times: Sequence[float], boxes: Sequence[Sequence[float]]) -> list[float]:
    """(sideways speed, depth speed) in box heights per second: slopes of the box centre and height over time."""
    if len(times) < 2 or times[-1] - times[0] <= 0:
        return [0.0, 0.0]
    b = np.asarray(boxes, float)
    h = float(np.median(b[:, 3] - b[:, 1]))
    vx = float(np.polyfit(times, (b[:, 0] + b[:, 2]) / 2, 1)[0]) / max(h, 1e-6)
    vh = float(np.polyfit(times, b[:, 3] - b[:, 1], 1)[0]) / max(h, 1e-6)
    return [round(vx, 4), round(vh, 4)]


def describe_action(times: Sequence[float], boxes: Sequence[Sequence[float]]) -> str:
    """Offline action from the box's motion over the segment: walking left/right, moving towards/away from the
    camera, or staying in place (a box that does not move says nothing about sitting or standing)."""
    return states.action_label(*motion_measure(times, boxes))


# ----------------------------------------------------------------------------------------------- changes and flags

def norm_text(s: str) -> str:
    return " ".join(str(s).lower().replace(",", " ").split())


def change_list(values: Sequence[str]) -> list[str]:
    """Consecutive duplicates collapsed: the attribute's states in time order."""
    out: list[str] = []
    for v in values:
        if not out or norm_text(out[-1]) != norm_text(v):
            out.append(v)
    return out


def distinct_in_order(values: Sequence[str]) -> list[str]:
    seen, out = set(), []
    for v in values:
        if norm_text(v) not in seen:
            seen.add(norm_text(v))
            out.append(v)
    return out


def flags(segments: Sequence[dict], others: Sequence[dict], similar: bool, style: str = "heuristic") -> dict:
    """The second-step metadata computed from the attribute states of the usable segments (states.py; the judge's
    version, when available, can only veto a change on top of this)."""
    out = states.state_flags([s for s in segments if states.usable(s, style)], style)
    out["similar_looking_existence"] = bool(similar)
    out["other_entities"] = [{"actions": o["action"], "outfits": o["outfit"]} for o in others]
    return out


def sharpness(crop: np.ndarray) -> float:
    g = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY)
    return float(cv2.Laplacian(g, cv2.CV_64F).var())


def canonical_score(c: np.ndarray) -> float:
    return c.shape[0] * c.shape[1] * sharpness(c)


def canonical_index(crops: Sequence[np.ndarray]) -> int:
    """The sharpest, largest box: the maximum of area x Laplacian variance."""
    scores = [canonical_score(c) for c in crops]
    return int(np.argmax(scores))


def canonical_best(items: Iterable[tuple]) -> Optional[tuple]:
    """``canonical_index`` over a stream of (key, crop or None) without holding the crops: the (key, crop) of the
    first maximum (argmax's tie rule), or None when no crop came."""
    best, best_score = None, None
    for key, c in items:
        if c is None:
            continue
        sc = canonical_score(c)
        if best is None or (not np.isnan(best_score) and (np.isnan(sc) or sc > best_score)):  # as np.argmax
            best, best_score = (key, c), sc
    return best


def crop(frame: np.ndarray, box: Sequence[float]) -> Optional[np.ndarray]:
    h, w = frame.shape[:2]
    x0, y0 = max(0, int(math.floor(box[0]))), max(0, int(math.floor(box[1])))
    x1, y1 = min(w, int(math.ceil(box[2]))), min(h, int(math.ceil(box[3])))
    if x1 - x0 < 4 or y1 - y0 < 4:
        return None
    return np.array(frame[y0:y1, x0:x1])  # a copy always: a crop must not keep its whole frame alive


def green_box(frame: np.ndarray, box: Sequence[float]) -> np.ndarray:
    out = frame.copy()
    t = max(1, round(min(frame.shape[:2]) / 100))
    cv2.rectangle(out, (int(box[0]), int(box[1])), (int(box[2]) - 1, int(box[3]) - 1), (0, 255, 0), t)
    return out


# ----------------------------------------------------------------------------------------------- validity

def identity_quality(pred: Sequence[tuple[int, tuple, Optional[str]]], truth: dict[int, list[tuple[str, tuple]]],
                     iou: float = 0.5) -> dict:
    """Clustering against a sidecar. ``pred``: (frame, box, entity or None); ``truth``: frame -> [(person, box)].
    Boxes are matched per frame (Hungarian, IoU >= ``iou``). purity = sum over predicted entities of their majority
    person's boxes / matched boxes; recall (inverse purity) = sum over persons of the boxes in their dominant entity /
    matched boxes; box_recall = ground-truth boxes with a predicted entity box / ground-truth boxes."""
    pairs = []  # (entity, person)
    gt_total = sum(len(v) for v in truth.values())
    by_frame = defaultdict(list)
    for f, b, e in pred:
        if e is not None:
            by_frame[f].append((b, e))
    for f, gts in truth.items():
        ps = by_frame.get(f, [])
        if not ps or not gts:
            continue
        m = iou_matrix(np.array([b for b, _ in ps]), np.array([b for _, b in gts]))
        r, c = linear_sum_assignment(-m)
        pairs += [(ps[i][1], gts[j][0]) for i, j in zip(r, c) if m[i, j] >= iou]
    if not pairs:
        return {"purity": None, "recall": None, "box_recall": 0.0 if gt_total else None, "matched": 0,
                "gt_boxes": gt_total, "mapping": {}}
    ent = defaultdict(Counter)
    per = defaultdict(Counter)
    for e, p in pairs:
        ent[e][p] += 1
        per[p][e] += 1
    purity = sum(c.most_common(1)[0][1] for c in ent.values()) / len(pairs)
    recall = sum(c.most_common(1)[0][1] for c in per.values()) / len(pairs)
    mapping = {p: c.most_common(1)[0][0] for p, c in per.items()}
    return {"purity": purity, "recall": recall, "box_recall": len(pairs) / gt_total, "matched": len(pairs),
            "gt_boxes": gt_total, "mapping": mapping}
