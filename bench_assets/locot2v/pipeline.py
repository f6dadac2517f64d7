"""Per-video LoCoT2V work between the decoded frames and the sub-dimension values (models and judge passed in, no
Dagster). One decode serves every metric: the frames of a ``Clip`` are sampled here, flows are computed once per
analysis pair and shared by dynamic degree, flickering, warping error and motion smoothness."""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np

from bench_assets.locot2v import constants as K
from bench_assets.locot2v import judging as J
from bench_assets.locot2v import metrics as M


@dataclass
class Value:
    """One sub-dimension of one video: a value in % or None with the reason, plus counts and provenance."""
    metric_id: str
    value: Optional[float]
    n_eval: int = 0
    n_failed: int = 0
    n_skipped: int = 0
    reason: Optional[str] = None
    detail: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.value is None:
            self.n_eval = 0
            if not self.n_failed and not self.n_skipped:
                self.n_skipped = 1
            if not self.reason:
                raise ValueError(f"{self.metric_id}: None needs a reason")
        else:
            self.value = float(self.value)
            self.n_eval = max(1, self.n_eval)


def none(metric_id: str, reason: str, failed: bool = False, **detail: Any) -> Value:
    return Value(metric_id, None, 0, int(failed), int(not failed), reason, detail)


# ------------------------------------------------------------------------------------------ static quality

def static_quality(frames: np.ndarray, fps: float, aesthetic, aesthetic_why: Optional[str], dover,
                   dover_why: Optional[str], rrub_value: float) -> list[Value]:
    out = []
    if aesthetic is None:
        out.append(none("aesthetic_quality", aesthetic_why or "aesthetic slot unavailable"))
    else:
        idx = M.analysis_indices(len(frames), fps, K.AQ_FPS)
        scores = [float(s) for s in aesthetic.score([frames[i] for i in idx])]
        out.append(Value("aesthetic_quality", M.aesthetic_quality(scores, rrub_value), len(scores),
                         detail={"frames": idx, "scores": [round(s, 4) for s in scores], "rrub": rrub_value}))
    if dover is None:
        out.append(none("technical_quality", dover_why or "dover slot unavailable"))
    else:
        bounds = M.clip_bounds(len(frames), fps)
        scores = [float(dover.score(frames[a:b])) for a, b in bounds]
        out.append(Value("technical_quality", 100.0 * float(np.mean(scores)), len(scores),
                         detail={"clips": bounds, "scores": [round(s, 5) for s in scores]}))
    return out


# ------------------------------------------------------------------------------------------ temporal quality

def _pairs_flow(flow, frames: Sequence[np.ndarray], pairs: Sequence[tuple[int, int]]) -> list[np.ndarray]:
    return flow.flow([(frames[a], frames[b]) for a, b in pairs]) if pairs else []


class FrameEmbeddings:
    """Image features per frame index, computed once and shared (semantic consistency, transition windows); frames
    with identical pixels (a held frame, a static stretch the codec repeats exactly) are embedded once."""

    def __init__(self, frames: np.ndarray, embedder):
        self.frames, self.embedder, self.by_hash, self.hash_of = frames, embedder, {}, {}

    def _hash(self, i: int) -> str:
        if i not in self.hash_of:
            self.hash_of[i] = hashlib.sha1(np.ascontiguousarray(self.frames[i]).tobytes()).hexdigest()
        return self.hash_of[i]

    def get(self, indices: Sequence[int]) -> np.ndarray:
        indices = [int(i) for i in indices]
        todo: dict[str, int] = {}
        for i in indices:
            h = self._hash(i)
            if h not in self.by_hash:
                todo.setdefault(h, i)
        if todo:
            for h, e in zip(todo, self.embedder.embed([self.frames[i] for i in todo.values()])):
                self.by_hash[h] = e
        return np.stack([self.by_hash[self._hash(i)] for i in indices])


def frame_level_temporal(frames: np.ndarray, fps: float, flow, flow_why: Optional[str], embedder,
                         embedder_why: Optional[str]) -> list[Value]:
    """Dynamic degree, motion smoothness, warping error, semantic consistency, temporal flickering and transition
    smoothness from one set of flows over the analysis frames (<= 8 fps) and the native frames around transitions."""
    idx = M.analysis_indices(len(frames), fps)
    A = [frames[i] for i in idx]
    shape = frames.shape[1:3]
    out: list[Value] = []
    if flow is None:
        why = flow_why or "flow slot unavailable"
        out += [none(m, why) for m in ("dynamic_degree", "motion_smoothness", "warping_error", "temporal_flickering")]
    elif len(A) < 2:
        out += [none(m, "fewer than 2 analysis frames") for m in
                ("dynamic_degree", "motion_smoothness", "warping_error", "temporal_flickering")]
    else:
        consecutive = list(zip(range(len(A) - 1), range(1, len(A))))
        fwd = _pairs_flow(flow, A, consecutive)
        bwd = _pairs_flow(flow, A, [(b, a) for a, b in consecutive])
        dd, d = M.dynamic_degree(fwd, shape)
        out.append(Value("dynamic_degree", dd, 1, detail=d))
        skips = [(2 * j, 2 * j + 2) for j in range((len(A) - 1) // 2)]
        sf = _pairs_flow(flow, A, [p for a, b in skips for p in ((a, b), (b, a))])
        ms = M.motion_smoothness(A, list(zip(sf[0::2], sf[1::2])))
        out.append(Value("motion_smoothness", ms, len(skips)) if ms is not None else
                   none("motion_smoothness", "fewer than 3 analysis frames"))
        we, neglog, d = M.warping_error(A, fwd, bwd)
        out.append(Value("warping_error", we, d["pairs"], detail={**d, "neg_log_we": neglog}) if we is not None else
                   none("warping_error", "no pair with non-occluded pixels"))
        static = M.static_pairs(fwd, shape)
        tf = M.temporal_flickering(A, static)
        out.append(Value("temporal_flickering", tf, len(static), detail={"static_pairs": len(static),
                                                                        "pairs": len(fwd)}) if tf is not None else
                   none("temporal_flickering", "no static frame pair (VBench static rule)"))
    feats = FrameEmbeddings(frames, embedder) if embedder is not None else None
    if embedder is None:
        out.append(none("semantic_consistency", embedder_why or "siglip2 slot unavailable"))
    elif len(A) < 2:
        out.append(none("semantic_consistency", "fewer than 2 analysis frames"))
    else:
        out.append(Value("semantic_consistency", M.semantic_consistency(feats.get(idx)), len(A) - 1))
    out.append(transition_smoothness(frames, fps, flow, flow_why, feats, embedder_why))
    return out


def transition_smoothness(frames: np.ndarray, fps: float, flow, flow_why, feats: Optional[FrameEmbeddings],
                          embedder_why) -> Value:
    embedder = feats
    if flow is None or embedder is None:
        return none("transition_smoothness", flow_why if flow is None else embedder_why)
    if len(frames) < 2 * K.TRANSITION_K + 1:
        return none("transition_smoothness", f"fewer than {2 * K.TRANSITION_K + 1} frames")
    cuts = M.detect_transitions(frames, fps)
    how = f"PySceneDetect {K.SCENE_DETECTOR}"
    if not cuts:
        cuts, how = [M.most_abrupt_pair(frames) + 1], "no transition detected: the most abrupt adjacent pair"
    scores, windows = [], []
    for t in cuts:
        a, b = M.window_bounds(t, len(frames))
        w = [frames[i] for i in range(a, b + 1)]
        s, d = M.transition_window_score(w, feats.get(range(a, b + 1)),
                                         _pairs_flow(flow, w, [(i, i + 1) for i in range(len(w) - 1)]))
        scores.append(s)
        windows.append({"t": t, "window": [a, b], "score": round(s, 5), **d})
    return Value("transition_smoothness", 100.0 * float(np.mean(scores)), len(scores),
                 detail={"transitions": cuts, "how": how, "windows": windows})


# ------------------------------------------------------------------------------------------ event consistency

_WS = re.compile(r"\s+")
EVENT_IDS = ("intra_event_subject_consistency", "intra_event_background_consistency",
             "inter_event_subject_consistency", "inter_event_background_consistency")


def subject_key(text: str) -> str:
    """A subject's identity across events: its text, lower-case, whitespace collapsed."""
    return _WS.sub(" ", str(text).strip().lower())


def embed_unique(embedder, images: Sequence[np.ndarray]) -> np.ndarray:
    """Embed images, each distinct pixel array once."""
    keys = [hashlib.sha1(np.ascontiguousarray(im).tobytes() + str(im.shape).encode()).hexdigest() for im in images]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    if not first:
        return np.zeros((0, 0), np.float32)
    emb = dict(zip(first, embedder.embed([images[i] for i in first.values()])))
    return np.stack([emb[k] for k in keys])


def subject_masks(segmenter, detector, frame: np.ndarray, query: str) -> tuple[list[np.ndarray], list[tuple], str]:
    """(masks, boxes, how) of one subject in one frame: segmentation masks when the segmentation slot is loaded,
    else detector boxes as rectangular masks (the spec's fallback), best first."""
    h, w = frame.shape[:2]
    if segmenter is not None:
        masks, boxes = [], []
        for m in segmenter.segment(frame, query):
            ys, xs = np.nonzero(m)
            if len(xs):
                masks.append(m)
                boxes.append((int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1))
        return masks, boxes, "mask"
    det = detector.detect([frame], query, kind="character")[0]
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


def event_consistency(frames: np.ndarray, events: Optional[Sequence[dict]], events_why: Optional[str], segmenter,
                      detector, locate_why: Optional[str], embedder, embedder_why: Optional[str]) -> list[Value]:
    """Intra- and inter-event subject / background consistency (B.7) over the prompt's events, the video split
    uniformly into them; subject crops from masks (or boxes), background = frame with the subject masks zeroed."""
    if not events:
        why = events_why or "the sample has no events"
        return [none(m, f"needs the prompt's events: {why}") for m in EVENT_IDS]
    if embedder is None:
        return [none(m, embedder_why or "image_embedder unavailable") for m in EVENT_IDS]
    if segmenter is None and detector is None:
        return [none(m, f"no subject segmentation or detection: {locate_why}") for m in EVENT_IDS]
    ranges = M.event_ranges(len(frames), len(events))
    subj_crops: list[dict[str, list]] = []
    backgrounds: list[list[np.ndarray]] = []
    found = []
    located: dict[tuple, tuple] = {}
    how = "mask" if segmenter is not None else "box"
    for e, (a, b) in zip(events, ranges):
        idx = sorted({int(round(x)) for x in np.linspace(a, b - 1, min(K.EVENT_FRAMES, b - a))}) if b > a else []
        key = subject_key(e.get("subject", ""))
        crops, bgs = [], []
        for i in idx:
            f = frames[i]
            if key:
                ck = (hashlib.sha1(np.ascontiguousarray(f).tobytes()).hexdigest(), key)
                if ck not in located:   # a held frame is segmented once
                    located[ck] = subject_masks(segmenter, detector, f, str(e.get("subject")))[:2]
                masks, boxes = located[ck]
            else:
                masks, boxes = [], []
            union = np.zeros(f.shape[:2], bool)
            for m in masks:
                union |= m
            if masks:
                x1, y1, x2, y2 = boxes[0]
                crop = f[y1:y2, x1:x2].copy()
                crop[~masks[0][y1:y2, x1:x2]] = 0
                crops.append(crop)
                found.append({"frame": int(i), "subject": key, "box": [int(v) for v in boxes[0]]})
            bg = f.copy()
            bg[union] = 0
            bgs.append(bg)
        subj_crops.append({key: crops} if key and crops else {})
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
    common = {"events": len(events), "ranges": ranges, "crops": how}
    out = []
    v, d = M.intra_event_consistency(per_subject, weights)
    out.append(Value("intra_event_subject_consistency", v, len(flat), detail={**common, **d, "found": found})
               if v is not None else none("intra_event_subject_consistency",
                                          "no event with >= 2 appearances of its subject "
                                          f"({'segmentation' if how == 'mask' else 'detector'} found "
                                          f"{len(found)} crops"
                                          + (f"; {detector.last_reason}" if how == "box"
                                             and getattr(detector, "last_reason", None) else "") + ")",
                                          **common))
    v, d = M.intra_event_consistency(per_bg, weights)
    out.append(Value("intra_event_background_consistency", v, len(backgrounds), detail={**common, **d})
               if v is not None else none("intra_event_background_consistency", "no event with >= 2 frames"))
    v, d = M.inter_event_consistency(per_subject)
    out.append(Value("inter_event_subject_consistency", v, len(d["elements"]), detail={**common, **d})
               if v is not None else none("inter_event_subject_consistency",
                                          "no subject seen in >= 2 events", **common))
    v, d = M.inter_event_consistency(per_bg)
    out.append(Value("inter_event_background_consistency", v, 1, detail={**common, **d})
               if v is not None else none("inter_event_background_consistency", "fewer than 2 events"))
    return out


# ------------------------------------------------------------------------------------------ judged

def judge_frames(frames: np.ndarray) -> list[np.ndarray]:
    idx = [int(round(x)) for x in np.linspace(0, len(frames) - 1, min(K.JUDGE_FRAMES, len(frames)))]
    return [frames[i] for i in idx]


def _failed(res) -> str:
    return f"judge {res.status}: {res.reason}"


def alignment(judge, frames: Sequence[np.ndarray], prompt_base: str, prompt_events: Optional[Sequence[dict]],
              events_why: Optional[str], text_embedder, text_why: Optional[str]) -> tuple[list[Value], dict]:
    """OA (description vs prompt base) and EA (events of the description vs the prompt's events)."""
    ok, why = judge.available()
    if not ok:
        return [none("overall_alignment", f"needs the video description: {why}"),
                none("event_alignment", f"needs the video description: {why}")], {}
    res = judge.ask(J.description_request(frames))
    if res.status != "ok":
        return [none("overall_alignment", _failed(res), res.status == "failed"),
                none("event_alignment", _failed(res), res.status == "failed")], {"description_key": res.cache_key}
    desc = str(res.answer["description"])
    extra = {"description": desc, "description_key": res.cache_key}
    out = []
    if text_embedder is None:
        return [none("overall_alignment", text_why), none("event_alignment", text_why)], extra
    e = text_embedder.embed([desc, prompt_base])
    out.append(Value("overall_alignment", 100.0 * M.text_similarity(e[0], e[1]), 1,
                     detail={"description_key": res.cache_key}))
    if not prompt_events:
        out.append(none("event_alignment", f"needs the prompt's events: {events_why or 'none'}"))
        return out, extra
    ve = judge.ask(J.video_events_request(desc))
    if ve.status != "ok":
        out.append(none("event_alignment", _failed(ve), ve.status == "failed"))
        return out, extra
    video_events = list(ve.answer["events"])
    extra["video_events"] = video_events
    sem, fields = M.event_matrices(video_events, list(prompt_events), text_embedder.embed)
    v, d = M.event_alignment(sem, fields)
    d.update(total_prompt_events=len(prompt_events), video_events_key=ve.cache_key)
    out.append(Value("event_alignment", v, d["matched"], detail=d) if v is not None else
               none("event_alignment", f"no matched event ({len(video_events)} video, {len(prompt_events)} prompt "
                                       "events)", **d))
    return out, extra


def human_action(judge, frames, actions: Optional[Sequence[dict]], actions_why: Optional[str]) -> Value:
    if actions is None:
        return none("human_action", f"needs the prompt's human actions: {actions_why}")
    if not actions:
        return none("human_action", "no human action in the prompt")
    ok, why = judge.available()
    if not ok:
        return none("human_action", why)
    occ_res = judge.ask_many([J.occurrence_request(a["subject"], a["action"], frames) for a in actions])
    bad = [r for r in occ_res if r.status != "ok"]
    if bad:
        return none("human_action", _failed(bad[0]), bad[0].status == "failed")
    occurs = [r.answer["answer"] == "Yes" for r in occ_res]
    reqs = [J.smoothness_request(a["subject"], a["action"], q, frames)
            for a, o in zip(actions, occurs) if o for q in J.SMOOTHNESS_QUESTIONS]
    sm_res = judge.ask_many(reqs)
    bad = [r for r in sm_res if r.status != "ok"]
    if bad:
        return none("human_action", _failed(bad[0]), bad[0].status == "failed")
    it = iter(r.answer["answer"] == "Yes" for r in sm_res)
    smooth = [[next(it) for _ in J.SMOOTHNESS_QUESTIONS] if o else [] for o in occurs]
    return Value("human_action", M.human_action_score(occurs, smooth), len(actions),
                 detail={"occurs": occurs, "smooth": smooth})


def content_clarity(judge, frames) -> list[Value]:
    ok, why = judge.available()
    if not ok:
        return [none(m, why) for m in K.CLARITY_IDS]
    res = judge.ask_many([J.clarity_request(frames, r) for r in range(K.CC_ROUNDS)])
    good = [r for r in res if r.status == "ok"]
    failed = len(res) - len(good)
    out = []
    for m in K.CLARITY_IDS:
        rounds = [int(r.answer[m]["score"]) for r in good]
        v = M.clarity_score(rounds)
        out.append(Value(m, v, len(rounds), n_failed=failed, reason=_failed(res[0]) if failed else None,
                         detail={"rounds": rounds}) if v is not None else
                   Value(m, None, 0, failed, 0, "; ".join(sorted({_failed(r) for r in res}))))
    return out


def herd(judge, frames, questions: Optional[Sequence[dict]], questions_why: Optional[str]) -> list[Value]:
    ids = [f"herd.{d}" for d in K.HERD_DIMENSIONS]
    if questions is None:
        return [none(m, f"needs the HERD questions: {questions_why}") for m in ids]
    ok, why = judge.available()
    if not ok:
        return [none(m, why) for m in ids]
    by_dim = {d: [q for q in questions if q["dimension"] == d] for d in K.HERD_DIMENSIONS}
    asked = [d for d in K.HERD_DIMENSIONS if by_dim[d]]
    res = dict(zip(asked, judge.ask_many([J.herd_request(d, [q["question"] for q in by_dim[d]], frames)
                                          for d in asked])))
    out = []
    for d, m in zip(K.HERD_DIMENSIONS, ids):
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
        v, n = M.herd_score(list(zip(answers, [q["polarity"] for q in by_dim[d]])))
        out.append(Value(m, v, n, n_skipped=len(answers) - n, detail={"answers": answers, "key": r.cache_key})
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
        r = judge.ask(J.events_request(sample.prompt_base))
        return (list(r.answer["events"]), None) if r.status == "ok" else (None, _failed(r))

    def ask_actions():
        r = judge.ask(J.actions_request(sample.prompt))
        return (list(r.answer["human_actions"]), None) if r.status == "ok" else (None, _failed(r))

    def ask_questions():
        if not sample.herd_info:
            return None, "the sample has no herd_info to derive questions from"
        r = judge.ask(J.herd_questions_request(sample.herd_info))
        if r.status != "ok":
            return None, _failed(r)
        qs = [(d, str(q)) for d in K.HERD_DIMENSIONS for q in r.answer[d]]
        p = judge.ask(J.polarity_request([q for _, q in qs]))
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
        r = judge.ask(J.complexity_request(sample.prompt))
        out["complexity"] = ({k: int(r.answer[k]["score"]) for k in J.COMPLEXITY_KEYS} if r.status == "ok" else None)
        out["complexity_reason"] = None if r.status == "ok" else _failed(r)
    else:
        out["complexity"], out["complexity_reason"] = None, why
    return out
