"""EntityBench grounding: the canonical crop per (shot, entity) from detections on the sampled frames, and the
per-frame entity boxes the action judge draws. Pure (no Dagster): models and the crop store come in as
arguments."""

from collections import defaultdict
from typing import Optional

import numpy as np

from bench_assets.core import grounding as core_grounding
from bench_assets.entitybench import dataset, judged
from bench_assets.entitybench.constants import GROUNDING_FRAMES, OFFLINE_WEAK_CONF


def detect(detector, frames: list[np.ndarray], query: str, kind: str) -> tuple[list, Optional[str]]:
    dets = detector.detect(frames, query, kind=kind)
    reason = getattr(detector, "last_reason", None)
    if reason and all(len(d) == 0 for d in dets):
        return dets, reason
    return dets, None


def pixel_box(box, frame_shape) -> tuple[int, int, int, int]:
    """The authors' box: pixel coordinates truncated to int and clipped to the frame (their GroundingDINO box
    conversion, ``int((cx - w/2) * W)``)."""
    h, w = frame_shape[:2]
    x1, y1, x2, y2 = (float(v) for v in box)
    return max(0, int(x1)), max(0, int(y1)), min(w, int(x2)), min(h, int(y2))


def authors_crop(frame: np.ndarray, box: tuple[int, int, int, int], pad: float = core_grounding.CROP_PAD):
    """The authors' ``crop_entity``: padding int(10 % of the box side) on each side, clipped, native size (their
    DINOv2 / CLIP processors resize it; the judge sees it as cropped)."""
    h, w = frame.shape[:2]
    x1, y1, x2, y2 = box
    bw, bh = x2 - x1, y2 - y1
    x1, y1 = max(0, x1 - int(bw * pad)), max(0, y1 - int(bh * pad))
    x2, y2 = min(w, x2 + int(bw * pad)), min(h, y2 + int(bh * pad))
    return frame[y1:y2, x1:x2].copy()


def authors_sharpness(crop: np.ndarray) -> float:
    """The authors' ``_crop_sharpness``: var of horizontal plus var of vertical second differences of the
    channel mean (their "Laplacian-variance-style" score; not OpenCV's Laplacian of luminance)."""
    if crop is None or crop.size == 0:
        return 0.0
    gray = np.mean(crop, axis=2).astype(np.float64) if crop.ndim == 3 else crop.astype(np.float64)
    if gray.shape[0] < 3 or gray.shape[1] < 3:
        return 0.0
    return float(np.diff(gray, n=2, axis=1).var() + np.diff(gray, n=2, axis=0).var())


def authors_components(crop: np.ndarray, frame_shape) -> tuple[float, float]:
    """(a_sharp, a_area) as the authors' ``compute_selection_score``: area is the PADDED crop's share of the
    frame, sharpness ``authors_sharpness``; both through the same sigmoids as the paper's text."""
    h, w = frame_shape[:2]
    area_pct = 100.0 * crop.shape[0] * crop.shape[1] / float(h * w) if h and w else 0.0
    return (core_grounding.sigmoid((authors_sharpness(crop) - core_grounding.SHARP_CENTER)
                                   / core_grounding.SHARP_SCALE),
            core_grounding.sigmoid((area_pct - core_grounding.AREA_CENTER_PCT) / core_grounding.AREA_SCALE_PCT))


CLIP_CONTEXT = 77


def over_clip_context(clip_model, description: str) -> bool:
    """True when the description has more BPE tokens (+ start and end) than CLIP's 77-token context. The authors'
    transformers CLIP is called without truncation, so such a description raises and their grounding scores every
    crop 0.0 (status weak: 2 of the release's 3,729 descriptions); open_clip would truncate it silently."""
    tok = getattr(clip_model, "tokenizer", None)
    encode = getattr(tok, "encode", None)
    return encode is not None and len(encode(description)) + 2 > CLIP_CONTEXT


def authors_clip(clip_model):
    """The grounding CLIP tokenizing descriptions as the authors' transformers CLIPProcessor does: without open_clip's
    ftfy / html.unescape (curly quotes and HTML entities gave other tokens: text embeddings 5.2e-2 apart on a seeded
    ViT-B/32). A model without a tokenizer to clean (transformers' own, a fake) is returned as it is."""
    if not hasattr(clip_model, "with_text_clean"):
        return clip_model
    from bench_resources.models.vision import clean_as_transformers_clip
    return clip_model.with_text_clean(clean_as_transformers_clip)


def candidates(fidx, frames, dets, description: str, clip_model) -> tuple[list, list]:
    """Every detection on the sampled frames as a scored candidate, with its crop as the authors' code makes it
    (``authors_crop``: int box, int padding, native size)."""
    cands, crops = [], []
    for fi, frame, d in zip(fidx, frames, dets):
        labels = d.data.get("label") if hasattr(d, "data") else None
        for j in range(len(d)):
            box = pixel_box(d.xyxy[j], frame.shape)
            crop = authors_crop(frame, box)
            if crop.size == 0:
                continue
            sharp, area = authors_components(crop, frame.shape)
            crops.append(crop)
            cands.append(core_grounding.Candidate(int(fi), tuple(float(v) for v in box), float(d.confidence[j]),
                                                  str(labels[j]) if labels is not None else None, None,
                                                  sharp, area))
    if cands and clip_model is not None:
        if over_clip_context(clip_model, description):
            sims = np.zeros(len(cands))   # the authors' CLIP raises on it and their except-branch scores 0.0
        else:
            sims = np.asarray(clip_model.similarity(crops, [description])).reshape(-1)
        cands = [core_grounding.Candidate(c.frame_index, c.box, c.confidence, c.label, float(s), c.a_sharp, c.a_area)
                 for c, s in zip(cands, sims)]
    return cands, crops


def grounding_rows(generator: str, episode_id: str, ep: dataset.Episode, clips: dict, errors: dict, detector,
                   det_reason: Optional[str], clip_model, put_png) -> list[dict]:
    """One row per (shot, scheduled entity): the best candidate over GROUNDING_FRAMES frames, its status, and its
    crop stored by ``put_png``; a missing shot is the generator's failure, a missing detector the evaluator's."""
    reg = ep.registry
    closed = bool(getattr(detector, "closed_vocabulary", False))
    clip_model = authors_clip(clip_model)
    rows = []
    for shot in ep.shots:
        base = {"generator": generator, "episode_id": episode_id, "shot": shot.index}
        clip = clips.get(shot.index)
        if clip is not None:
            fidx, frames = clip.grounding(GROUNDING_FRAMES)
        found: dict[str, tuple[list, list]] = {}
        for eid in shot.entities:
            ent = reg[eid]
            row = {**base, "entity_id": eid, "entity_type": ent.type, "frame_index": None,
                   "x1": None, "y1": None, "x2": None, "y2": None, "confidence": None, "label": None,
                   "a_clip": None, "a_sharp": None, "a_area": None, "a": None, "status": "unavailable",
                   "ambiguous": False, "crop_id": None, "source_sha256": clip.sha256 if clip is not None else None,
                   "reason": None}
            rows.append(row)
            if clip is None:  # the generator's failure, not the evaluator's 'unavailable'
                row["status"] = judged.SHOT_ERROR
                row["reason"] = errors.get(shot.index, "shot missing")
                continue
            if detector is None:
                row["reason"] = det_reason
                continue
            dets, why = detect(detector, list(frames), ent.description, ent.type)
            if why:
                row["reason"] = why
                continue
            found[eid] = candidates(fidx, frames, dets, ent.description, clip_model)
        shot_rows = {r["entity_id"]: r for r in rows if r["shot"] == shot.index}
        groups: dict[str, list[str]] = defaultdict(list)
        for eid, (cands, _) in found.items():
            groups[(cands[0].label if closed and cands else eid) or eid].append(eid)
        for members in groups.values():
            if len(members) == 1:
                cands, crops = found[members[0]]
                picks, ambiguous = {members[0]: core_grounding.best_index(cands)}, False
            else:  # closed vocabulary: k same-class entities, distinct boxes, arbitrary mapping
                cands, crops = found[members[0]]
                picks = dict(zip(members, core_grounding.assign_shared_class(cands, len(members))))
                ambiguous = True
            for eid in members:
                row, i = shot_rows[eid], picks[eid]
                best = cands[i] if i is not None else None
                row["status"] = core_grounding.decide_status(best, clip_model is not None, OFFLINE_WEAK_CONF)
                row["ambiguous"] = ambiguous
                if ambiguous:
                    row["reason"] = (f"closed-vocabulary detector: {len(members)} scheduled entities share class "
                                     f"{cands[0].label!r}; boxes assigned by score, identity unknown")
                if best is not None:
                    row.update(frame_index=best.frame_index, x1=best.box[0], y1=best.box[1], x2=best.box[2],
                               y2=best.box[3], confidence=best.confidence, label=best.label, a_clip=best.a_clip,
                               a_sharp=best.a_sharp, a_area=best.a_area, a=best.score,
                               crop_id=put_png(crops[i]))
    return rows


def action_detector(detector, reg):
    """frames, entity ids -> per frame [(entity id, box), ...]: EVERY detection of each entity (the authors'
    action grid draws all boxes their grounding pass returned, ``return_all=True``), in entity order, then the
    detector's order (highest confidence first), boxes as the authors' int pixel boxes."""
    def boxes(frames, entity_ids):
        out = [[] for _ in frames]
        for e in entity_ids:
            dets, _ = detect(detector, frames, reg[e].description, reg[e].type)
            for t, d in enumerate(dets):
                order = sorted(range(len(d)), key=lambda j: -float(d.confidence[j])) if len(d) else []
                out[t].extend((e, pixel_box(d.xyxy[j], frames[t].shape)) for j in order)
        return out
    return boxes
