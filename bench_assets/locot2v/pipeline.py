"""Per-video LoCoT2V work between the decoded frames and the sub-dimension values (models and judge passed in, no
Dagster). One decode serves every metric: the frames of a ``Clip`` are sampled here, flows are computed once per
analysis pair and shared by dynamic degree, flickering, warping error and motion smoothness."""
from __future__ import annotations

import json
import re
from typing import Any, Optional, Sequence

import numpy as np

from bench_assets.core import grounding
from bench_assets.core.kernels import iou
from bench_assets.locot2v import constants
from bench_assets.locot2v import judging
from bench_assets.locot2v import metrics
# the value records (core's MetricRecord) and the embedding helper come from values.py (stream.py reads it too)
from bench_assets.core.records import MetricRecord
from bench_assets.locot2v.values import embed_unique, none, value  # noqa: F401


# ------------------------------------------------------------------------------------------ static quality

def static_quality(frames: np.ndarray, fps: float, aesthetic, aesthetic_why: Optional[str], dover,
                   dover_why: Optional[str], rrub_value: float) -> list[MetricRecord]:
    """AQ and TQ of frames in memory (the asset streams the same: ``aq_value`` on the 1 fps frames it gathered,
    ``tq_value`` on the scores of its ``stream.DoverClips``)."""
    idx = metrics.analysis_indices(len(frames), fps, constants.AQ_FPS)
    bounds = metrics.clip_bounds(len(frames), fps)
    return [aq_value(idx, [frames[i] for i in idx], aesthetic, aesthetic_why, rrub_value),
            tq_value(bounds, [float(dover.score(frames[a:b])) for a, b in bounds] if dover is not None else None,
                     dover_why)]


def aq_value(idx: Sequence[int], frames: Sequence[np.ndarray], aesthetic, aesthetic_why: Optional[str],
             rrub_value: float) -> MetricRecord:
    if aesthetic is None:
        return none("aesthetic_quality", aesthetic_why or "aesthetic slot unavailable")
    scores = [float(s) for s in aesthetic.score(list(frames))]
    return value("aesthetic_quality", metrics.aesthetic_quality(scores, rrub_value), len(scores),
                 detail={"frames": list(idx), "scores": [round(s, 4) for s in scores], "rrub": rrub_value})


def tq_value(bounds, scores: Optional[Sequence[float]], dover_why: Optional[str]) -> MetricRecord:
    if scores is None:
        return none("technical_quality", dover_why or "dover slot unavailable")
    return value("technical_quality", 100.0 * float(np.mean(scores)), len(scores),
                 detail={"clips": list(bounds), "scores": [round(s, 5) for s in scores]})


# ------------------------------------------------------------------------------------------ temporal quality

def frame_level_temporal(frames: np.ndarray, fps: float, flow, flow_why: Optional[str], embedder,
                         embedder_why: Optional[str], **interp) -> list[MetricRecord]:
    """Dynamic degree, motion smoothness, warping error, semantic consistency, temporal flickering and transition
    smoothness of frames already in memory, through the same streamed reducer the asset feeds from its one decode
    pass (stream.TemporalStream); returns the Values (its cuts are on ``frame_level_temporal_stream``)."""
    return frame_level_temporal_stream(frames, fps, flow, flow_why, embedder, embedder_why, **interp).finish()


def frame_level_temporal_stream(frames: np.ndarray, fps: float, flow, flow_why, embedder, embedder_why, **interp):
    """``interp``: ``interp=`` / ``interp_why=`` of the interpolator slot (default: midpoints along ``flow``)."""
    from bench_assets.locot2v.stream import TemporalStream
    ts = TemporalStream(len(frames), fps, frames.shape[1:3], flow, flow_why, embedder, embedder_why, **interp)
    for a in range(0, len(frames), 32):
        ts.push(list(range(a, min(a + 32, len(frames)))), frames[a:a + 32])
    return ts


# ------------------------------------------------------------------------------------------ event consistency

_WS = re.compile(r"\s+")
EVENT_IDS = ("intra_event_subject_consistency", "intra_event_background_consistency",
             "inter_event_subject_consistency", "inter_event_background_consistency")


def subject_key(text: str) -> str:
    """A subject's text, lower-case, whitespace collapsed (identical texts ground identically)."""
    return _WS.sub(" ", str(text).strip().lower())


_PERSON = re.compile(r"\b(man|men|woman|women|person|people|boy|boys|girl|girls|child|children|kid|kids|baby|"
                     r"cyclist|rider|player|pedestrian|walker|runner|dancer|driver|chef|worker|lady|gentleman|guy|"
                     r"crowd|couple|family|he|she|diner|actor|actress|astronaut|soldier|student|teacher)\b")


def subject_kind(text: str) -> Optional[str]:
    """'character' when the subject names a person (so a closed-vocabulary detector maps it to people rather than
    to an object word in the description, e.g. 'tie'); otherwise the detector's own text matching decides."""
    return "character" if _PERSON.search(str(text).lower()) else None


def ground_subject(detector, clip_model, frames: Sequence[tuple[int, np.ndarray]], query: str
                   ) -> tuple[dict[int, Optional[grounding.Candidate]], Optional[str]]:
    """The described subject in each frame, by the grounding pass EntityBench uses (core/grounding.py): every
    detection for the description is a candidate scored a = a_clip x a_sharp x a_area (detector confidence in
    place of a_clip without CLIP); the best candidate of a frame is the subject when its status is 'present'.
    A large, sharp, well-matching box wins over the most confident one (a diner behind the described woman is
    smaller and out of focus). Returns ({frame index: candidate or None}, why nothing could be grounded)."""
    if not frames:
        return {}, None
    dets = detector.detect([f for _, f in frames], query, kind=subject_kind(query))
    reason = getattr(detector, "last_reason", None)
    if reason and all(len(d) == 0 for d in dets):
        return {i: None for i, _ in frames}, reason
    per: dict[int, list[grounding.Candidate]] = {}
    crops, owners = [], []
    for (i, f), d in zip(frames, dets):
        per[i] = []
        labels = d.data.get("label") if hasattr(d, "data") else None
        for j in range(len(d)):
            box = d.xyxy[j]
            try:
                crop = grounding.crop_box(f, box)
            except ValueError:
                continue
            per[i].append(grounding.Candidate(int(i), tuple(float(v) for v in box), float(d.confidence[j]),
                                              str(labels[j]) if labels is not None else None, None,
                                              grounding.a_sharp(crop), grounding.a_area(box, f.shape)))
            crops.append(crop)
            owners.append((i, len(per[i]) - 1))
    if crops and clip_model is not None:
        sims = np.asarray(clip_model.similarity(crops, [query])).reshape(-1)
        for (i, k), sim in zip(owners, sims):
            c = per[i][k]
            per[i][k] = grounding.Candidate(c.frame_index, c.box, c.confidence, c.label, float(sim), c.a_sharp,
                                            c.a_area)
    out: dict[int, Optional[grounding.Candidate]] = {}
    for i, cands in per.items():
        k = grounding.best_index(cands)
        best = cands[k] if k is not None else None
        ok = best is not None and grounding.decide_status(best, clip_model is not None,
                                                          constants.GROUND_WEAK_CONF) == "present"
        out[i] = best if ok else None
    return out, None


def same_subject_by_grounding(own: dict[int, Optional[grounding.Candidate]],
                              other: dict[int, Optional[grounding.Candidate]]
                              ) -> bool:
    """Two descriptions name the same subject in an event when grounding either one on the event's frames lands
    on the same box (IoU >= 0.5) in at least half of the frames where both found something."""
    both = [(own[i], other[i]) for i in own if own.get(i) is not None and other.get(i) is not None]
    if not both:
        return False
    agree = sum(iou(a.box, b.box) >= constants.SAME_SUBJECT_IOU for a, b in both)
    return agree * 2 >= len(both)


def subject_masks(segmenter, detector, frame: np.ndarray, query: str) -> tuple[list[np.ndarray], list[tuple], str]:
    """(masks, boxes, how) of every detection of a subject in one frame: segmentation masks when the segmentation
    slot is loaded, else detector boxes as rectangular masks (the spec's fallback), most confident first."""
    h, w = frame.shape[:2]
    if segmenter is not None:
        masks, boxes = [], []
        for m in segmenter.segment(frame, query):
            ys, xs = np.nonzero(m)
            if len(xs):
                masks.append(m)
                boxes.append((int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1))
        return masks, boxes, "mask"
    det = detector.detect([frame], query, kind=subject_kind(query))[0]
    order = np.argsort(-np.asarray(det.confidence)) if len(det) else []
    masks, boxes = [], []
    for j in order:
        x1, y1, x2, y2 = (int(round(v)) for v in det.xyxy[j])
        x1, y1, x2, y2 = max(0, x1), max(0, y1), min(w, x2), min(h, y2)
        if x2 - x1 < 4 or y2 - y1 < 4:
            continue
        m = np.zeros((h, w), bool)
        m[y1:y2, x1:x2] = True
        masks.append(m)
        boxes.append((x1, y1, x2, y2))
    return masks, boxes, "box"


def _subject_mask(segmenter, frame: np.ndarray, query: str, box) -> tuple[np.ndarray, tuple[int, int, int, int]]:
    """The grounded subject's mask: the segmentation mask that best overlaps its box (segmentation slot), else the
    box itself."""
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = (int(round(v)) for v in box)
    x1, y1, x2, y2 = max(0, x1), max(0, y1), min(w, x2), min(h, y2)
    rect = np.zeros((h, w), bool)
    rect[y1:y2, x1:x2] = True
    if segmenter is not None:
        masks, boxes, _ = subject_masks(segmenter, None, frame, query)
        if masks:
            k = int(np.argmax([iou(b, (x1, y1, x2, y2)) for b in boxes]))
            if iou(boxes[k], (x1, y1, x2, y2)) > 0:
                return masks[k], boxes[k]
    return rect, (x1, y1, x2, y2)


class _Groups:
    """Union-find over events: which events' subjects are one subject."""

    def __init__(self, n: int):
        self.parent = list(range(n))

    def find(self, i: int) -> int:
        while self.parent[i] != i:
            self.parent[i] = self.parent[self.parent[i]]
            i = self.parent[i]
        return i

    def union(self, a: int, b: int) -> None:
        self.parent[self.find(b)] = self.find(a)


def event_frame_indices(n_frames: int, n_events: int) -> list[int]:
    """Frames decoded for event-level consistency, stated before the decode pass (the event boundaries are only
    known after it, from the detected cuts): EVENT_OVERSAMPLE x EVENT_FRAMES per event, evenly over the video, so
    every event, wherever its boundaries land, has frames to choose from. Bounded by the event count, not length."""
    k = min(n_frames, max(1, n_events) * constants.EVENT_FRAMES * constants.EVENT_OVERSAMPLE)
    return sorted({int(round(x)) for x in np.linspace(0, n_frames - 1, k)}) if n_frames > 0 else []


FACE_IDENTITY_ID = "inter_event_subject_face_identity"


def subject_faces(face_model, frame: np.ndarray, box) -> list:
    """Every face inside a grounded subject's box (``models.face.Face``: vector, box in frame pixels, quality)."""
    x1, y1, x2, y2 = (int(v) for v in box)
    region = frame[max(0, y1):y2, max(0, x1):x2]
    if region.shape[0] < 16 or region.shape[1] < 16:
        return []
    return face_model.faces(np.ascontiguousarray(region), offset=(float(max(0, x1)), float(max(0, y1))))


def face_identity_value(per_event: Sequence[dict[str, list]], face_name: str) -> MetricRecord:
    """``inter_event_subject_face_identity``, an addition beside the paper's crop-embedding
    ``inter_event_subject_consistency`` (issue 23): the same B.7 inter-event formula (eqs. 13-15) over the
    face-identity vectors of each subject's grounded appearances, where a face is visible. A face below the
    quality floors (``models.face``) is left out and counted (``n_low_quality``), not read as another person;
    a subject whose face shows in fewer than 2 events is skipped."""
    good = [{n: [f for f in fs if f.quality.ok] for n, fs in e.items()} for e in per_event]
    n_low = sum(not f.quality.ok for e in per_event for fs in e.values() for f in fs)
    n_faces = sum(len(fs) for e in per_event for fs in e.values())
    vecs = [{n: np.stack([f.vector for f in fs]) for n, fs in e.items() if fs} for e in good]
    v, d = metrics.inter_event_consistency(vecs)
    detail = {**d, "embedder": face_name, "n_faces": n_faces, "n_low_quality": n_low,
              "addition": "face identity beside the paper's crop embedding"}
    if v is None:
        why = ("no subject shows a good-quality face in >= 2 events"
               + (f" ({n_low} of {n_faces} faces below the quality floors)" if n_low else
                  "" if n_faces else " (no face detected in the grounded subjects)"))
        return none(FACE_IDENTITY_ID, why, **detail)
    return value(FACE_IDENTITY_ID, v, len(d["elements"]), detail=detail)


def event_consistency(n_frames: int, cuts: Sequence[int], frames: dict[int, np.ndarray],
                      events: Optional[Sequence[dict]], events_why: Optional[str], segmenter, detector,
                      locate_why: Optional[str], embedder, embedder_why: Optional[str], clip_model=None,
                      face_model=None, face_why: Optional[str] = None, face_name: str = "face"
                      ) -> list[MetricRecord]:
    """Intra- and inter-event subject / background consistency (B.7). Events are split at the detected shot
    boundaries where they exist (``metrics.event_ranges_at_cuts``), else uniformly; each event's subject is grounded by
    its description (``ground_subject``); subjects of different events are one subject when grounding says so
    (``same_subject_by_grounding``), not when their texts happen to be equal. Subject crops are masked (segmentation
    slot) or boxes; the background is the frame with the grounded subject removed. ``frames``: decoded frames by
    native index (``event_frame_indices``)."""
    # the face-identity addition shares the event split and grounding: without them it is None for the same reason
    ids = EVENT_IDS + ((FACE_IDENTITY_ID,) if face_model is not None or face_why else ())
    if not events:
        why = events_why or "the sample has no events"
        return [none(m, f"needs the prompt's events: {why}") for m in ids]
    if embedder is None:
        return [none(m, embedder_why or "image_embedder unavailable") for m in ids]
    if detector is None:
        return [none(m, f"no subject detection to ground the subjects: {locate_why}") for m in ids]
    ranges, split = metrics.event_ranges_at_cuts(n_frames, len(events), cuts)
    have = sorted(frames)
    picks = []
    for a, b in ranges:
        inside = [i for i in have if a <= i < b]
        sel = sorted({inside[int(round(x))] for x in np.linspace(0, len(inside) - 1, constants.EVENT_FRAMES)}) \
            if len(inside) > constants.EVENT_FRAMES else inside
        picks.append([(i, frames[i]) for i in sel])
    texts = [str(e.get("subject") or "").strip() for e in events]
    grounded, reasons = [], []
    for e, text in enumerate(texts):
        g, why = ground_subject(detector, clip_model, picks[e], text) if text else ({}, "event has no subject")
        grounded.append(g)
        reasons.append(why)
    groups = _Groups(len(events))
    closed = bool(getattr(detector, "closed_vocabulary", False))
    for e1 in range(len(events)):
        for e2 in range(e1 + 1, len(events)):
            if not texts[e1] or not texts[e2] or groups.find(e1) == groups.find(e2):
                continue
            if subject_key(texts[e1]) == subject_key(texts[e2]):
                same = True   # one description grounds identically wherever it is asked
            elif closed:
                same = False  # a closed-vocabulary detector grounds every person description to the same box
            else:
                same = any(same_subject_by_grounding(grounded[y], ground_subject(detector, clip_model, picks[y],
                                                                                 texts[x])[0])
                           for x, y in ((e1, e2), (e2, e1)) if picks[y])
            if same:
                groups.union(e1, e2)
    subj_crops: list[dict[str, list]] = []
    subj_faces: list[dict[str, list]] = []   # the face-identity addition: faces inside the grounded boxes
    backgrounds: list[list[np.ndarray]] = []
    found = []
    how = "mask" if segmenter is not None else "box"
    for e, ((a, b), sel) in enumerate(zip(ranges, picks)):
        name = f"subject{groups.find(e)}" if texts[e] else None
        crops, bgs, faces = [], [], []
        for i, f in sel:
            bg = f.copy()
            cand = grounded[e].get(i)
            if cand is not None:
                mask, (x1, y1, x2, y2) = _subject_mask(segmenter, f, texts[e], cand.box)
                if x2 - x1 >= 4 and y2 - y1 >= 4:
                    if face_model is not None:
                        faces += subject_faces(face_model, f, (x1, y1, x2, y2))
                    crop = f[y1:y2, x1:x2].copy()
                    crop[~mask[y1:y2, x1:x2]] = 0
                    crops.append(crop)
                    bg[mask] = 0
                    found.append({"event": e, "frame": int(i), "subject": name, "text": texts[e],
                                  "box": [int(x1), int(y1), int(x2), int(y2)], "a": round(cand.score, 4)})
            bgs.append(bg)
        subj_crops.append({name: crops} if name and crops else {})
        subj_faces.append({name: faces} if name and faces else {})
        backgrounds.append(bgs)
    weights = [b - a for a, b in ranges]
    flat = [c for d in subj_crops for cs in d.values() for c in cs]
    emb = embed_unique(embedder, flat + [g for bgs in backgrounds for g in bgs])
    k = 0
    per_subject = []
    for d in subj_crops:
        per_subject.append({})
        for name, cs in d.items():
            per_subject[-1][name] = emb[k:k + len(cs)]
            k += len(cs)
    per_bg = []
    for bgs in backgrounds:
        per_bg.append({"background": emb[k:k + len(bgs)]})
        k += len(bgs)
    subjects = {f"subject{groups.find(e)}": sorted({texts[x] for x in range(len(events))
                                                   if texts[x] and groups.find(x) == groups.find(e)})
                for e in range(len(events)) if texts[e]}
    common = {"events": len(events), "ranges": ranges, "boundaries": split, "cuts": sorted(int(c) for c in cuts),
              "crops": how, "subjects": subjects,
              "closed_vocabulary": closed,
              "subject_matching": ("identical text only: the closed-vocabulary detector cannot tell descriptions "
                                   "of one class apart" if closed else
                                   f"grounding: same box (IoU >= {constants.SAME_SUBJECT_IOU}) in each other's events"),
              "grounding": "a = a_clip x a_sharp x a_area" if clip_model is not None else
              f"a = confidence x a_sharp x a_area (no CLIP); present iff confidence >= {constants.GROUND_WEAK_CONF}"}
    why_none = "; ".join(sorted({r for r in reasons if r}))
    out = []
    v, d = metrics.intra_event_consistency(per_subject, weights)
    out.append(value("intra_event_subject_consistency", v, len(flat), detail={**common, **d, "found": found})
               if v is not None else none("intra_event_subject_consistency",
                                          f"no event with >= 2 grounded appearances of its subject (grounding "
                                          f"found {len(found)} crops" + (f"; {why_none}" if why_none else "") + ")",
                                          **common))
    v, d = metrics.intra_event_consistency(per_bg, weights)
    out.append(value("intra_event_background_consistency", v, len(backgrounds), detail={**common, **d})
               if v is not None else none("intra_event_background_consistency", "no event with >= 2 frames"))
    v, d = metrics.inter_event_consistency(per_subject)
    out.append(value("inter_event_subject_consistency", v, len(d["elements"]), detail={**common, **d})
               if v is not None else none("inter_event_subject_consistency",
                                          "no subject grounded in >= 2 events", **common))
    v, d = metrics.inter_event_consistency(per_bg)
    out.append(value("inter_event_background_consistency", v, 1, detail={**common, **d})
               if v is not None else none("inter_event_background_consistency", "fewer than 2 events"))
    if face_model is not None:
        out.append(face_identity_value(subj_faces, face_name))
    elif face_why:
        out.append(none(FACE_IDENTITY_ID, face_why))
    return out


# ------------------------------------------------------------------------------------------ judged

def judge_indices(n_frames: int) -> list[int]:
    if not n_frames:
        return []
    return [int(round(x)) for x in np.linspace(0, n_frames - 1, min(constants.JUDGE_FRAMES, n_frames))]


def judge_frames(frames: np.ndarray) -> list[np.ndarray]:
    return [frames[i] for i in judge_indices(len(frames))]


def _failed(res) -> str:
    return f"judge {res.status}: {res.reason}"


def alignment(judge, frames: Sequence[np.ndarray], prompt_base: str, prompt_events: Optional[Sequence[dict]],
              events_why: Optional[str], text_embedder, text_why: Optional[str]) -> tuple[list[MetricRecord], dict]:
    """OA (description vs prompt base) and EA (events of the description vs the prompt's events)."""
    ok, why = judge.available()
    if not ok:
        return [none("overall_alignment", f"needs the video description: {why}"),
                none("event_alignment", f"needs the video description: {why}")], {}
    res = judge.ask(judging.description_request(frames))
    if res.status != "ok":
        return [none("overall_alignment", _failed(res), res.status == "failed"),
                none("event_alignment", _failed(res), res.status == "failed")], {"description_key": res.cache_key}
    desc = str(res.answer["description"])
    extra = {"description": desc, "description_key": res.cache_key}
    out = []
    if text_embedder is None:
        return [none("overall_alignment", text_why), none("event_alignment", text_why)], extra
    e = text_embedder.embed([desc, prompt_base])
    out.append(value("overall_alignment", 100.0 * metrics.text_similarity(e[0], e[1]), 1,
                     detail={"description_key": res.cache_key}))
    if not prompt_events:
        out.append(none("event_alignment", f"needs the prompt's events: {events_why or 'none'}"))
        return out, extra
    ve = judge.ask(judging.video_events_request(desc))
    if ve.status != "ok":
        out.append(none("event_alignment", _failed(ve), ve.status == "failed"))
        return out, extra
    video_events = list(ve.answer["events"])
    extra["video_events"] = video_events
    sem, fields = metrics.event_matrices(video_events, list(prompt_events), text_embedder.embed)
    v, d = metrics.event_alignment(sem, fields)
    d.update(total_prompt_events=len(prompt_events), video_events_key=ve.cache_key)
    out.append(value("event_alignment", v, d["matched"], detail=d) if v is not None else
               none("event_alignment", f"no matched event ({len(video_events)} video, {len(prompt_events)} prompt "
                                       "events)", **d))
    return out, extra


def human_action(judge, frames, actions: Optional[Sequence[dict]], actions_why: Optional[str]) -> MetricRecord:
    if actions is None:
        return none("human_action", f"needs the prompt's human actions: {actions_why}")
    if not actions:
        return none("human_action", "no human action in the prompt")
    ok, why = judge.available()
    if not ok:
        return none("human_action", why)
    occ_res = judge.ask_many([judging.occurrence_request(a["subject"], a["action"], frames) for a in actions])
    bad = [r for r in occ_res if r.status != "ok"]
    if bad:
        return none("human_action", _failed(bad[0]), bad[0].status == "failed")
    occurs = [r.answer["answer"] == "Yes" for r in occ_res]
    reqs = [judging.smoothness_request(a["subject"], a["action"], q, frames)
            for a, o in zip(actions, occurs) if o for q in judging.SMOOTHNESS_QUESTIONS]
    sm_res = judge.ask_many(reqs)
    bad = [r for r in sm_res if r.status != "ok"]
    if bad:
        return none("human_action", _failed(bad[0]), bad[0].status == "failed")
    it = iter(r.answer["answer"] == "Yes" for r in sm_res)
    smooth = [[next(it) for _ in judging.SMOOTHNESS_QUESTIONS] if o else [] for o in occurs]
    return value("human_action", metrics.human_action_score(occurs, smooth), len(actions),
                 detail={"occurs": occurs, "smooth": smooth})


# backends that take sampling parameters per request; Anthropic's current API version answers 400 to any of them
SAMPLING_BACKENDS = ("openai",)


def clarity_sampling(judge) -> tuple[Any, dict]:
    """(the judge to ask the CC rounds with, what is sent). The protocol samples R rounds at temperature 0.7: sent
    where the backend accepts sampling (a copy of the judge with that temperature, so the cache key carries it);
    elsewhere the judge's own setting is what goes out (None: nothing sent, the backend's default sampling), and
    that is recorded instead of the protocol's value."""
    backend = getattr(judge, "backend", "anthropic")
    if backend in SAMPLING_BACKENDS and hasattr(judge, "for_endpoint"):
        return (judge.for_endpoint(model=judge.model, temperature=constants.CC_TEMPERATURE),
                {"backend": backend, "temperature_protocol": constants.CC_TEMPERATURE,
                 "temperature_sent": constants.CC_TEMPERATURE})
    sent = getattr(judge, "temperature", None)
    return judge, {"backend": backend, "temperature_protocol": constants.CC_TEMPERATURE, "temperature_sent": sent,
                   "note": ("the backend takes no sampling parameters: none sent, its default sampling used"
                            if sent is None else "the judge's configured temperature was sent, not the protocol's")}


def content_clarity(judge, frames) -> list[MetricRecord]:
    ok, why = judge.available()
    if not ok:
        return [none(m, why) for m in constants.CLARITY_IDS]
    cc_judge, sampling = clarity_sampling(judge)
    res = cc_judge.ask_many([judging.clarity_request(frames, r) for r in range(constants.CC_ROUNDS)])
    good = [r for r in res if r.status == "ok"]
    failed = len(res) - len(good)
    out = []
    for m in constants.CLARITY_IDS:
        rounds = [int(r.answer[m]["score"]) for r in good]
        v = metrics.clarity_score(rounds)
        out.append(value(m, v, len(rounds), n_failed=failed,
                         reason=_failed(next(r for r in res if r.status != "ok")) if failed else None,
                         detail={"rounds": rounds, "sampling": sampling}) if v is not None else
                   value(m, None, 0, failed, 0, "; ".join(sorted({_failed(r) for r in res})),
                         detail={"sampling": sampling}))
    return out


def herd(judge, frames, questions: Optional[Sequence[dict]], questions_why: Optional[str]) -> list[MetricRecord]:
    ids = [f"herd.{d}" for d in constants.HERD_DIMENSIONS]
    if questions is None:
        return [none(m, f"needs the HERD questions: {questions_why}") for m in ids]
    ok, why = judge.available()
    if not ok:
        return [none(m, why) for m in ids]
    by_dim = {d: [q for q in questions if q["dimension"] == d] for d in constants.HERD_DIMENSIONS}
    asked = [d for d in constants.HERD_DIMENSIONS if by_dim[d]]
    res = dict(zip(asked, judge.ask_many([judging.herd_request(d, [q["question"] for q in by_dim[d]], frames)
                                          for d in asked])))
    out = []
    for d, m in zip(constants.HERD_DIMENSIONS, ids):
        if not by_dim[d]:
            out.append(none(m, f"no HERD question for {d}"))
            continue
        r = res[d]
        if r.status != "ok":
            out.append(none(m, _failed(r), r.status == "failed"))
            continue
        answers = list(r.answer["answers"])
        if len(answers) != len(by_dim[d]):
            out.append(none(m, f"judge answered {len(answers)} of {len(by_dim[d])} questions", True))
            continue
        v, n = metrics.herd_score(list(zip(answers, [q["polarity"] for q in by_dim[d]])))
        out.append(value(m, v, n, n_skipped=len(answers) - n, detail={"answers": answers, "key": r.cache_key})
                   if v is not None else none(m, "every answer was 'unclear'", answers=answers))
    return out


def as_json(x: Any) -> Optional[str]:
    return None if x is None else json.dumps(x, sort_keys=True, ensure_ascii=False, default=float)


# ------------------------------------------------------------------------------------------ derived artefacts

def derive(sample, judge) -> dict[str, Any]:
    """Events, human actions and HERD questions (with polarity) of a sample, and its prompt complexity: a value in
    the sample file wins; else derived through the judge (cached by it); else None with the reason."""
    ok, why = judge.available()
    out: dict[str, Any] = {}

    def supplied_or(name: str, value, ask):
        if value is not None:
            out[name], out[f"{name}_source"], out[f"{name}_reason"] = list(value), "supplied", None
            return
        if not ok:
            out[name], out[f"{name}_source"], out[f"{name}_reason"] = None, None, why
            return
        got, reason = ask()
        out[name], out[f"{name}_source"], out[f"{name}_reason"] = got, ("judge" if got is not None else None), reason

    def ask_events():
        r = judge.ask(judging.events_request(sample.prompt_base))
        return (list(r.answer["events"]), None) if r.status == "ok" else (None, _failed(r))

    def ask_actions():
        r = judge.ask(judging.actions_request(sample.prompt))
        return (list(r.answer["human_actions"]), None) if r.status == "ok" else (None, _failed(r))

    def ask_questions():
        if not sample.herd_info:
            return None, "the sample has no herd_info to derive questions from"
        r = judge.ask(judging.herd_questions_request(sample.herd_info))
        if r.status != "ok":
            return None, _failed(r)
        qs = [(d, str(q)) for d in constants.HERD_DIMENSIONS for q in r.answer[d]]
        p = judge.ask(judging.polarity_request([q for _, q in qs]))
        if p.status != "ok":
            return None, _failed(p)
        pol = list(p.answer["polarities"])
        if len(pol) != len(qs):
            return None, f"polarity judge labelled {len(pol)} of {len(qs)} questions"
        return [{"dimension": d, "question": q, "polarity": x} for (d, q), x in zip(qs, pol)], None

    supplied_or("events", sample.events, ask_events)
    supplied_or("human_actions", sample.human_actions, ask_actions)
    supplied_or("herd_questions", sample.herd_questions, ask_questions)
    if ok:
        r = judge.ask(judging.complexity_request(sample.prompt))
        out["complexity"] = ({k: int(r.answer[k]["score"]) for k in judging.COMPLEXITY_KEYS}
                             if r.status == "ok" else None)
        out["complexity_reason"] = None if r.status == "ok" else _failed(r)
    else:
        out["complexity"], out["complexity_reason"] = None, why
    return out
