"""EntityBench Pillar 2 presence and Pillar 3 embedding consistency rows: presence shares, cs_face / cs_object
centroid scores with their gap-decay pairs, cs_transition_boundary, and the face-identity addition. Pure (no
Dagster): embedders, the face model and the crop store come in as arguments."""

from typing import TYPE_CHECKING, Optional

import cv2
import numpy as np
import pandas as pd

from bench_assets.core import grounding as core_grounding
from bench_assets.core.tables import instance_row
from bench_assets.entitybench import counts, dataset, judged, judging, metrics
from bench_assets.entitybench.constants import BENCH

if TYPE_CHECKING:  # the annotation only: bench_resources.store is Dagster resource wiring
    from bench_resources.store import Store

TYPE_METRIC = {"character": "cs_face", "object": "cs_object"}


def presence_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame) -> list[dict]:
    """Per shot with >= 1 scheduled entity of the type: share with status present. A missing shot is the
    generator's failure; a shot whose entities the evaluator could not ground is the evaluator's."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    rows = []
    for etype in dataset.ENTITY_TYPES:
        mid = f"intra_{etype}_presence"
        vals, failed, evaluator, reasons = [], 0, 0, set()
        for shot in ep.shots:
            g = grounding[(grounding["shot"] == shot.index) & (grounding["entity_type"] == etype)]
            if g.empty:
                continue  # shot schedules none of this type: not an instance
            why = "; ".join(sorted(set(g["reason"].dropna())))[:500] or None
            statuses = list(g["status"])
            if judged.SHOT_ERROR in statuses:
                failed += 1
                reasons.add(why)
                rows.append(counts.failed_instance(mid, "shot", why, shot=shot.index, **keys))
                continue
            v = metrics.presence_share(statuses)
            if v is None:  # every scheduled entity of the type was 'unavailable' (the evaluator cannot ground it)
                evaluator += 1
                reasons.add(why)
                rows.append(counts.evaluator_instance(mid, "shot", why, shot=shot.index,
                                                      detail={"statuses": dict(zip(g["entity_id"], statuses))}, **keys))
                continue
            vals.append(v)
            rows.append(instance_row(mid, v, "shot", shot=shot.index,
                                     detail={"statuses": dict(zip(g["entity_id"], statuses))}, **keys))
        rows.append(counts.record(mid, vals, n_failed=failed, n_failed_evaluator=evaluator,
                                  reason="; ".join(sorted(x for x in reasons if x))[:500] or None, **keys))
    return rows


FACE_CANVAS = 320


def _face_in_box(face_model, frame: np.ndarray, box) -> Optional[tuple[np.ndarray, float]]:
    """(SFace identity vector, YuNet confidence) of the most confident face inside the padded box, at native
    resolution (the 224x224 canonical crop squeezes the aspect ratio, which alignment does not survive)."""
    x1, y1, x2, y2 = core_grounding.padded_box(np.asarray(box, float), frame.shape)
    region = frame[y1:y2, x1:x2]
    if region.shape[0] < 16 or region.shape[1] < 16:
        return None
    # letterboxed onto one canvas size: the detector is built per input size, and box sizes vary per shot
    scale = FACE_CANVAS / max(region.shape[:2])
    resized = cv2.resize(region, (max(1, round(region.shape[1] * scale)), max(1, round(region.shape[0] * scale))),
                         interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    region = np.zeros((FACE_CANVAS, FACE_CANVAS, 3), np.uint8)
    region[:resized.shape[0], :resized.shape[1]] = resized
    dets = face_model.detect([region])[0]
    if len(dets) == 0:
        return None
    best = int(np.argmax(dets.confidence))
    emb = face_model.embed_faces(region, dets[best:best + 1])
    return (emb[0], float(dets.confidence[best])) if len(emb) else None


def face_identity_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, fidelity: dict, clips: dict,
                       face_model, face_reason: Optional[str], face_name: str) -> list[dict]:
    """``cs_face_identity``: an addition beside the paper's ``cs_face``, not a replacement. Same instances
    (admitted appearances of characters with >= 2 admitted), but each appearance is a face-identity vector
    (YuNet + SFace offline, ArcFace in the paper profile) scored against the centroid of the character's *other*
    face appearances (leave-one-out: with few appearances a centroid that includes the appearance itself hides
    an identity swap - on real footage a swapped shot moved the self-inclusive mean .066, the leave-one-out
    mean .113). An appearance with no detectable face is skipped with that reason; the embedder is written
    on every row."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    mid = "cs_face_identity"
    rows, pooled, skipped, failed, evaluator, reasons = [], [], 0, 0, 0, set()
    lost = judged.undelivered(grounding)
    for ent in (e for e in ep.entities if e.type == "character"):
        adm, _ = judged.admitted(grounding, fidelity, ent.id)
        missing = judged.touched(ep, ent.id, lost)
        if missing:  # each score reads the other appearances' faces, the undelivered ones too
            failed += _touched_rows(rows, mid, ent.id, adm, missing, keys)
            reasons.add("appearances of a character with undelivered shots")
            continue
        if len(adm) < 2:
            continue
        if face_model is None:
            evaluator += len(adm)
            reasons.add(face_reason)
            continue
        faces = []
        for r in adm.itertuples():
            clip = clips.get(int(r.shot))
            got = (_face_in_box(face_model, clip.frames[int(r.frame_index)], (r.x1, r.y1, r.x2, r.y2))
                   if clip is not None else None)
            faces.append((r, got))
        found = [(r, g) for r, g in faces if g is not None]
        for r, g in faces:
            if g is None or len(found) < 2:
                why = "no face detected in the box" if g is None else "fewer than 2 appearances show a face"
                skipped += 1
                reasons.add(why)
                rows.append(instance_row(mid, None, "appearance", reason=why, shot=int(r.shot), entity_id=ent.id,
                                         crop_id=r.crop_id, detail={"embedder": face_name}, **keys))
        if len(found) < 2:
            continue
        scores = metrics.leave_one_out_scores(np.stack([g[0] for _, g in found]))
        for (r, g), sc in zip(found, scores):
            pooled.append(float(sc))
            rows.append(instance_row(mid, float(sc), "appearance", shot=int(r.shot), entity_id=ent.id,
                                     crop_id=r.crop_id, frame_index=int(r.frame_index), source_sha256=r.source_sha256,
                                     detail={"embedder": face_name, "face_confidence": round(g[1], 4)}, **keys))
    rows.append(counts.record(mid, pooled, n_skipped=skipped, n_failed=failed, n_failed_evaluator=evaluator,
                              reason="; ".join(sorted(x for x in reasons if x))[:500] or
                              (None if pooled or skipped or evaluator
                               else "no character with >= 2 admitted appearances"),
                              **keys))
    return rows


def _touched_rows(rows: list, mid: str, entity_id: str, adm: pd.DataFrame, missing: list[int], keys: dict) -> int:
    """Failed instances of an entity with undelivered shots: its delivered admitted appearances and its
    undelivered scheduled ones (each of which might have been admitted). Returns their count, which is never
    below the admitted appearances the complete delivery could have had."""
    why = f"{entity_id}: shots {missing} not delivered (its centroid reads every appearance)"
    for k in [*(int(x) for x in adm["shot"]), *missing]:
        rows.append(counts.failed_instance(mid, "appearance", why, shot=k, entity_id=entity_id, **keys))
    return len(adm) + len(missing)


def cross_shot_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, embed, embed_reason: Optional[str],
                    store: "Store", clips: dict, fidelity: dict, embedder_name: str = "") -> tuple[list[dict], int]:
    """cs_face / cs_object (centroid cosine over the admitted crops C(e)), the gap-decay pairs of the image
    embedder (adjacent admitted appearances, and all pairs), and cs_transition_boundary.

    C(e) = present, attributable crops with fidelity overall >= tau or fidelity None (judge off or failed).
    Returns the rows and the gated-out appearance count over characters, objects and locations.
    """
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    rows: list[dict] = []
    gated_out = 0
    lost = judged.undelivered(grounding)
    for etype, mid in TYPE_METRIC.items():
        pooled, evaluator, failed, n_ambiguous = [], 0, 0, 0
        for ent in (e for e in ep.entities if e.type == etype):
            adm, gated = judged.admitted(grounding, fidelity, ent.id)
            gated_out += gated
            present = grounding[(grounding["entity_id"] == ent.id) & (grounding["status"] == "present")]
            n_ambiguous += int(present.get("ambiguous", pd.Series(dtype=bool)).fillna(False).astype(bool).sum())
            missing = judged.touched(ep, ent.id, lost)
            if missing:  # every score reads the centroid, which would have read the undelivered appearances
                failed += _touched_rows(rows, mid, ent.id, adm, missing, keys)
            if len(adm) < 2:
                continue
            if embed is None:
                evaluator += 0 if missing else len(adm)
                continue
            emb = embed([store.get_png(c) for c in adm["crop_id"]])
            _, scores = metrics.centroid_scores(emb)
            for (r, s) in zip(adm.itertuples(), scores if not missing else []):
                pooled.append(float(s))
                rows.append(instance_row(mid, float(s), "appearance", shot=int(r.shot), entity_id=ent.id,
                                         crop_id=r.crop_id, frame_index=int(r.frame_index),
                                         source_sha256=r.source_sha256, detail={"embedder": embedder_name}, **keys))
            e = metrics._l2n(emb)
            shots = [int(x) for x in adm["shot"]]
            for i in range(len(shots)):
                for j in range(i + 1, len(shots)):
                    d = shots[j] - shots[i]
                    adjacent = j == i + 1
                    # named for what produced it: the image embedder's cosine (DINOv2 in the paper profile)
                    rows.append(instance_row("gap_decay_embedding" if adjacent else "gap_decay_embedding_allpairs",
                                             float(e[i] @ e[j]), "pair", shot=shots[j], entity_id=ent.id,
                                             crop_id=adm["crop_id"].iloc[j],
                                             detail={"from_shot": shots[i], "shot_distance": d,
                                                     "gap_bin": judging.gap_bin(d), "entity_type": etype,
                                                     "embedder": embedder_name}, **keys))
        # Unattributable boxes are not instances (like gated-out appearances: coverage stays 1); the
        # count is kept in the reason and every such row is flagged in entitybench_grounding.
        why = "; ".join(x for x in (embed_reason if evaluator else None,
                                    f"{n_ambiguous} appearances not attributable (shared class)" if n_ambiguous
                                    else None,
                                    f"{failed} appearances of entities with undelivered shots" if failed
                                    else None) if x) or None
        rows.append(counts.record(mid, pooled, n_failed=failed, n_failed_evaluator=evaluator,
                                  reason=why or (None if pooled else "no entity with >= 2 admitted appearances"),
                                  **keys))
    for loc in (e for e in ep.entities if e.type == "location"):
        gated_out += judged.location_admitted(ep, grounding, fidelity, clips, loc.id)[1]
    # transition boundary over continuation pairs
    mid = "cs_transition_boundary"
    vals, skipped, failed, evaluator, reasons = [], 0, 0, 0, set()
    present_shots = set(grounding.loc[grounding["status"] == "present", "shot"].astype(int))
    for shot in ep.shots[1:]:
        if shot.cut:
            continue
        k, k1 = shot.index - 1, shot.index
        a, b = clips.get(k), clips.get(k1)
        if a is None or b is None:
            failed += 1
            reasons.add("a side's shot is missing or undecodable")
            rows.append(counts.failed_instance(mid, "pair", "a side's shot is missing or undecodable", shot=k1, **keys))
            continue
        if k not in present_shots or k1 not in present_shots:
            skipped += 1
            reasons.add("a side has no present entity")
            rows.append(instance_row(mid, None, "pair", shot=k1, reason="a side has no present entity", **keys))
            continue
        if embed is None:
            evaluator += 1
            reasons.add(embed_reason)
            rows.append(counts.evaluator_instance(mid, "pair", embed_reason, shot=k1, **keys))
            continue
        e = embed([a.frames[-1], b.frames[0]])
        v = float(metrics._l2n(e[0]) @ metrics._l2n(e[1]))
        vals.append(v)
        rows.append(instance_row(mid, v, "pair", shot=k1, detail={"from_shot": k, "to_shot": k1,
                                                                  "embedder": embedder_name},
                                 source_sha256=b.sha256, **keys))
    rows.append(counts.record(mid, vals, n_skipped=skipped, n_failed=failed, n_failed_evaluator=evaluator,
                              reason="; ".join(sorted(x for x in reasons if x))[:500] or
                              (None if vals else "no continuation pair"), **keys))
    return rows, gated_out
