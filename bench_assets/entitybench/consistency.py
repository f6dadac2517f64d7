"""EntityBench Pillar 2 presence and Pillar 3 embedding consistency rows: presence shares, cs_face / cs_object
centroid scores with their gap-decay pairs, cs_transition_boundary, and the face-identity addition. Pure (no
Dagster): embedders, the face model and the crop store come in as arguments."""

import json
from typing import TYPE_CHECKING, Optional

import cv2
import numpy as np
import pandas as pd

from bench_assets.core import grounding as core_grounding
from bench_assets.core.kernels import iou
from bench_assets.core.tables import instance_row
from bench_assets.entitybench import counts, dataset, identity, judged, judging, metrics
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
WITHIN_ID = "cs_face_within_shot"


def _faces_in_box(face_model, frame: np.ndarray, box) -> list:
    """Every face (``models.face.Face``: identity vector, box in frame pixels, quality) inside the padded box, at
    native resolution (the 224x224 canonical crop squeezes the aspect ratio, which alignment does not survive)."""
    x1, y1, x2, y2 = core_grounding.padded_box(np.asarray(box, float), frame.shape)
    region = frame[y1:y2, x1:x2]
    if region.shape[0] < 16 or region.shape[1] < 16:
        return []
    # letterboxed onto one canvas size: the detector is built per input size, and box sizes vary per shot
    scale = FACE_CANVAS / max(region.shape[:2])
    resized = cv2.resize(region, (max(1, round(region.shape[1] * scale)), max(1, round(region.shape[0] * scale))),
                         interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    canvas = np.zeros((FACE_CANVAS, FACE_CANVAS, 3), np.uint8)
    canvas[:resized.shape[0], :resized.shape[1]] = resized
    return face_model.faces(canvas, scale=scale, offset=(float(x1), float(y1)))


def _best(faces: list):
    """The box's own face before matching: the most confident good-quality one, else the most confident."""
    good = [f for f in faces if f.quality.ok]
    pool = good or faces
    return max(pool, key=lambda f: f.quality.confidence) if pool else None


def _match_shots(apps: dict) -> dict:
    """Faces to characters by matching, shot by shot (issue 23 item 3): every character the shot schedules and
    grounds is compared with every face found in the shot's boxes (one face seen through two boxes counts once),
    by cosine to the character's prototype = the mean of its *other* shots' box faces (good quality only); scipy's
    Hungarian solver decides, and each decision keeps its margin. A character without a prototype keeps its
    box's own face (margin None, ``how`` says so). ``apps``: entity -> [(row, faces)]. Returns
    (entity, shot) -> (face or None, margin, how)."""
    own = {(e, int(r.shot)): _best(fs) for e, lst in apps.items() for r, fs in lst}
    protos = {}
    for e, lst in apps.items():
        for r, _ in lst:
            others = [own[(e, int(q.shot))] for q, _ in lst if int(q.shot) != int(r.shot)]
            vecs = [f.vector for f in others if f is not None and f.quality.ok]
            if vecs:
                protos[(e, int(r.shot))] = metrics._l2n(np.mean(metrics._l2n(np.stack(vecs)), axis=0))
    out = {}
    shots = sorted({int(r.shot) for lst in apps.values() for r, _ in lst})
    for k in shots:
        chars = [(e, r, fs) for e, lst in apps.items() for r, fs in lst if int(r.shot) == k]
        pool: list = []
        for _, r, fs in chars:
            for f in fs:   # the same face seen through two overlapping boxes of the same frame is one candidate
                if not any(fr == int(r.frame_index) and iou(f.box, g.box) > 0.5 for fr, g in pool):
                    pool.append((int(r.frame_index), f))
        matched = [(e, r) for e, r, _ in chars if (e, k) in protos]
        for e, r, _ in chars:
            if (e, k) not in protos:
                out[(e, k)] = (own[(e, k)], None, "box (no prototype from other shots)")
        if not matched:
            continue
        if not pool:
            for e, _ in matched:
                out[(e, k)] = (None, None, "matching")
            continue
        sim = np.stack([protos[(e, k)] for e, _ in matched]) @ np.stack([f.vector for _, f in pool]).T
        got = {i: (j, m) for i, j, m in identity.assign_faces(sim)}
        for i, (e, _) in enumerate(matched):
            j, m = got.get(i, (None, None))
            out[(e, k)] = (pool[j][1] if j is not None else None, m, "matching")
    return out


UNGROUNDED = ("weak", "absent")   # grounding statuses under which a scheduled character is "not seen" in its shot


def _frame_faces(face_model, clip, i: int, cache: dict, key) -> Optional[list]:
    """Every face of sampled frame ``i`` of a shot (whole frame, native size), detected once per (shot, frame)."""
    if (key, i) not in cache:
        try:
            frame = clip.frames[i]
        except IndexError:
            cache[(key, i)] = None
        else:
            cache[(key, i)] = face_model.faces(frame)
    return cache[(key, i)]


def _track(members: list, clip, face_model, cache: dict, key) -> dict:
    """The faces of a shot's characters over its sampled frames (``drift_frames``): in each frame the good-quality
    faces are matched to the members by cosine to their prototypes (``identity.assign_faces``), then a member left
    without one is matched to a low-quality face (kept, flagged, so a face that degrades is not lost). ``members``:
    [(entity, prototype vector)]. Returns entity -> [(frame, face, margin, cosine to its prototype)]."""
    out: dict = {e: [] for e, _ in members}
    if not members or clip is None:
        return out
    protos = np.stack([p for _, p in members])
    for i in drift_frames(len(clip.frames)):
        faces = _frame_faces(face_model, clip, i, cache, key)
        if not faces:
            continue
        left = list(range(len(members)))
        for pool in ([f for f in faces if f.quality.ok], [f for f in faces if not f.quality.ok]):
            if not pool or not left:
                continue
            sim = protos[left] @ np.stack([f.vector for f in pool]).T
            got = identity.assign_faces(sim)
            for a, j, m in got:
                out[members[left[a]][0]].append((i, pool[j], m, float(sim[a, j])))
            taken = {a for a, _, _ in got}
            left = [x for a, x in enumerate(left) if a not in taken]
    return out


def _appearance_faces(face, frame: int, track: list) -> list:
    """An appearance's faces: its canonical face (from the grounding box) in its frame, the tracked faces elsewhere."""
    return [(frame, face, None, 1.0)] + [t for t in track if t[0] != frame]


def _identity_of(faces: list):
    """``identity.robust_identity`` of the good-quality faces among (frame, face, margin, cos); None without one."""
    good = [f for _, f, _, _ in faces if f.quality.ok]
    return identity.robust_identity([f.vector for f in good], [f.quality.confidence for f in good]), len(good)


def face_identity_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, fidelity: dict, clips: dict,
                       face_model, face_reason: Optional[str], face_name: str) -> list[dict]:
    """``cs_face_identity``: an addition beside the paper's ``cs_face``, not a replacement. Same instances
    (admitted appearances of characters with >= 2 admitted), but each appearance is a face identity (YuNet + SFace
    offline, ArcFace in the paper profile) scored against the centroid of the character's *other* appearances
    (leave-one-out: with few appearances a centroid that includes the appearance itself hides an identity swap -
    on real footage a swapped shot moved the self-inclusive mean .066, the leave-one-out mean .113).

    An appearance's identity is read from the person's good frames, not one frame (issue 37 item 1): its canonical
    face (the grounding box's, which face is which character decided by matching within each shot, ``_match_shots``,
    each row keeping its margin) and the same character's faces in the shot's other sampled frames (matched per
    frame, ``_track``), as ``identity.robust_identity`` of the good-quality ones (one man's single frames 4 s apart
    read .43 on real footage, below the model's same-person point). An appearance whose faces are all below the
    quality floors (``models.face``) is low quality (no value, ``n_low_quality``), not another person.

    "Someone else" is not "absent" (issue 37 item 3): where a scheduled character was not grounded in a shot
    (status weak or absent) but a face is there that no present character of the shot takes by matching, that face
    is scored as the character's appearance against the centroid of its admitted ones; the row says so
    (``detail.another_person``, the mismatch 1 - value), so a generator that puts another person in the lead's
    shot gets a low identity value, not a missing one. The paper's ``cs_face`` keeps its definition.

    Also returns ``cs_face_within_shot`` (``within_shot_rows``), the within-shot drift addition."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    mid = "cs_face_identity"
    rows, pooled, skipped, failed, evaluator, reasons, n_low = [], [], 0, 0, 0, set(), 0
    lost = judged.undelivered(grounding)
    apps: dict = {}
    ungrounded: dict = {}
    touched: dict = {}
    for ent in (e for e in ep.entities if e.type == "character"):
        adm, _ = judged.admitted(grounding, fidelity, ent.id)
        missing = judged.touched(ep, ent.id, lost)
        if missing:  # each score reads the other appearances' faces, the undelivered ones too
            failed += _touched_rows(rows, mid, ent.id, adm, missing, keys)
            reasons.add("appearances of a character with undelivered shots")
            touched[ent.id] = (adm, missing)
            continue
        g = grounding[(grounding["entity_id"] == ent.id) & grounding["status"].isin(UNGROUNDED)]
        if "ambiguous" in g:
            g = g[~g["ambiguous"].fillna(False).astype(bool)]
        seen = [int(k) for k in g["shot"] if clips.get(int(k)) is not None]
        if len(adm) < 2 and not (len(adm) == 1 and seen):
            continue
        if face_model is None:
            evaluator += len(adm)
            reasons.add(face_reason)
            continue
        ungrounded[ent.id] = seen
        apps[ent.id] = []
        for r in adm.itertuples():
            clip = clips.get(int(r.shot))
            fs = (_faces_in_box(face_model, clip.frames[int(r.frame_index)], (r.x1, r.y1, r.x2, r.y2))
                  if clip is not None else [])
            apps[ent.id].append((r, fs))
    chosen = _match_shots(apps) if apps else {}
    cache: dict = {}
    tracks = _shot_tracks(apps, chosen, clips, face_model, cache)
    own: dict = {}
    for eid, lst in apps.items():
        found = []
        for r, _ in lst:
            face, margin, how = chosen.get((eid, int(r.shot)), (None, None, "matching"))
            info = {"embedder": face_name, "assignment": how, "assignment_margin": margin}
            if face is not None:
                info["face_quality"] = face.quality.as_dict()
            faces = _appearance_faces(face, int(r.frame_index), tracks.get((eid, int(r.shot)), [])) \
                if face is not None else []
            vec, n_good = _identity_of(faces)
            if vec is not None:
                info.update(identity_faces=n_good, identity_frames=sorted({i for i, f, _, _ in faces
                                                                          if f.quality.ok}))
                found.append((r, vec, info))
                continue
            if face is None:
                why = "no face detected in the box" if how != "matching" else "no face left for it by the matching"
            else:
                why = "low-quality face: " + "; ".join(face.quality.low)
                n_low += 1
            skipped += 1
            reasons.add(why.split(":")[0] if face is not None else why)
            rows.append(instance_row(mid, None, "appearance", reason=why, shot=int(r.shot), entity_id=eid,
                                     crop_id=r.crop_id, frame_index=int(r.frame_index), detail=info, **keys))
        if len(found) >= 2:
            scores = metrics.leave_one_out_scores(np.stack([v for _, v, _ in found]))
            own[eid] = (found, float(min(scores)))
        else:
            scores = [None] * len(found)
            own[eid] = (found, None)
            for r, _, info in found:
                if not ungrounded.get(eid):
                    skipped += 1
                    reasons.add("fewer than 2 appearances show a good-quality face")
                    rows.append(instance_row(mid, None, "appearance", reason="fewer than 2 appearances show a "
                                             "good-quality face", shot=int(r.shot), entity_id=eid, crop_id=r.crop_id,
                                             detail=info, **keys))
            if not ungrounded.get(eid):
                continue
        for (r, _, info), sc in zip(found, scores):
            if sc is None:   # its only comparison is with the face in an ungrounded shot (that row carries it)
                skipped += 1
                rows.append(instance_row(mid, None, "appearance", reason="no other appearance of its own with a "
                                         "good-quality face", shot=int(r.shot), entity_id=eid, crop_id=r.crop_id,
                                         detail=info, **keys))
                continue
            pooled.append(float(sc))
            rows.append(instance_row(mid, float(sc), "appearance", shot=int(r.shot), entity_id=eid,
                                     crop_id=r.crop_id, frame_index=int(r.frame_index), source_sha256=r.source_sha256,
                                     detail=info, **keys))
    other_rows, other_vals, other_skipped, other_low = _another_person_rows(mid, ep, grounding, own, ungrounded,
                                                                            chosen, clips, face_model, cache,
                                                                            face_name, keys)
    rows += other_rows
    pooled += other_vals
    skipped += other_skipped
    n_low += other_low
    n_other = sum(json.loads(r["detail"]).get("another_person") is True for r in other_rows if r["value"] is not None)
    if other_vals:
        reasons.add(f"{len(other_vals)} faces in shots where the character was not grounded scored as its "
                    f"appearance ({n_other} another person)")
    rec = counts.record(mid, pooled, n_skipped=skipped, n_failed=failed, n_failed_evaluator=evaluator,
                        reason="; ".join(sorted(x for x in reasons if x))[:500] or
                        (None if pooled or skipped or evaluator
                         else "no character with >= 2 admitted appearances"),
                        **keys)
    rec["detail"] = json.dumps({"n_low_quality": n_low, "embedder": face_name, "identity_top_k": identity.TOP_K,
                                "n_ungrounded_faces": len(other_vals), "n_another_person": n_other,
                                "low_quality_floors": face_floors()},
                               sort_keys=True)
    rows.append(rec)
    rows += within_shot_rows(generator, ep, apps, chosen, clips, face_model, face_reason, face_name,
                             n_evaluator=evaluator, touched=touched, tracks=tracks)
    return rows


def _shot_tracks(apps: dict, chosen: dict, clips: dict, face_model, cache: dict) -> dict:
    """(entity, shot) -> the character's faces over the shot's sampled frames (``_track``), for every admitted
    appearance with a canonical face (its prototype in the matching)."""
    by_shot: dict = {}
    for eid, lst in apps.items():
        for r, _ in lst:
            face = chosen.get((eid, int(r.shot)), (None,))[0]
            if face is not None:
                by_shot.setdefault(int(r.shot), []).append((eid, face.vector))
    out = {}
    for k, members in by_shot.items():
        for e, t in _track(members, clips.get(k), face_model, cache, k).items():
            out[(e, k)] = t
    return out


def _another_person_rows(mid: str, ep: dataset.Episode, grounding: pd.DataFrame, own: dict, ungrounded: dict,
                         chosen: dict, clips: dict, face_model, cache: dict, face_name: str, keys: dict):
    """Rows for shots where a scheduled character was not grounded but a face is there (issue 37 item 3): the
    shot's faces are matched, frame by frame, to the character (prototype: the mean identity of its admitted
    appearances) and to the characters the shot does show (their canonical faces); the faces the character gets
    are its appearance there, scored against that prototype. ``detail.another_person``: True when the value is
    below the lowest leave-one-out score of the character's own appearances (less like it than it ever is to
    itself), False when not (the character, missed by grounding), None with one own appearance (nothing to
    compare with). No threshold decides. Returns (rows, values, skipped, low-quality count)."""
    rows, vals, skipped, n_low = [], [], 0, 0
    status = {(str(r.entity_id), int(r.shot)): str(r.status) for r in grounding.itertuples()}
    for eid, shots in ungrounded.items():
        found, own_min = own.get(eid, ([], None))
        vecs = [v for _, v, _ in found]
        if not vecs or not shots:
            continue
        proto = metrics._l2n(np.mean(np.stack(vecs), axis=0))
        for k in shots:
            present = [(e, chosen[(e, k)][0].vector) for e in ep.registry if (e, k) in chosen
                       and chosen[(e, k)][0] is not None and e != eid]
            faces = _track([(eid, proto)] + present, clips.get(k), face_model, cache, k)[eid]
            vec, n_good = _identity_of(faces)
            info = {"embedder": face_name, "assignment": "matching: character not grounded in the shot",
                    "grounding_status": status.get((eid, k)), "competitors": [e for e, _ in present],
                    "frames": [{"frame": i, "cos": round(c, 4), "margin": m, "ok": f.quality.ok}
                               for i, f, m, c in faces]}
            if vec is None:
                if faces:   # only low-quality faces where the character should be: not scored as another person
                    n_low += 1
                    skipped += 1
                    rows.append(instance_row(mid, None, "appearance", reason="character not grounded; only "
                                             "low-quality faces in the shot", shot=k, entity_id=eid, detail=info,
                                             **keys))
                continue   # no face at all: absence, which presence reports
            v = float(vec @ proto)
            vals.append(v)
            other = None if own_min is None else v < own_min
            info.update(another_person=other, mismatch=round(1.0 - v, 4), identity_faces=n_good,
                        own_lowest=None if own_min is None else round(own_min, 4))
            who = {True: "another person", False: "the character, not grounded",
                   None: "another person or the character"}[other]
            rows.append(instance_row(mid, v, "appearance", shot=k, entity_id=eid, detail=info,
                                     reason=f"{who}: the character was not grounded ({status.get((eid, k))}) but a "
                                            f"face is in the shot; its identity against the character's admitted "
                                            f"appearances is the value (mismatch {1.0 - v:.3f})",
                                     source_sha256=getattr(clips.get(k), "sha256", None), **keys))
    return rows, vals, skipped, n_low


def face_floors() -> dict:
    from bench_resources.models import face as face_mod
    return {"confidence": face_mod.QUALITY_MIN_CONFIDENCE, "size_px": face_mod.QUALITY_MIN_SIZE_PX,
            "blur": face_mod.QUALITY_MIN_BLUR}


def drift_frames(n_frames: int) -> list[int]:
    """The frames of a shot that the identity track reads: every frame the shot's sampling decodes once
    (``frames.sample_indices``: the grounding's, action's and location's even frames, first, middle and last)."""
    from bench_assets.entitybench.frames import sample_indices
    return sample_indices(n_frames)


def within_shot_rows(generator: str, ep: dataset.Episode, apps: dict, chosen: dict, clips: dict, face_model,
                     face_reason: Optional[str], face_name: str, n_evaluator: int = 0,
                     touched: Optional[dict] = None, tracks: Optional[dict] = None) -> list[dict]:
    """``cs_face_within_shot`` (an addition; the paper's metrics read one canonical crop per shot): per appearance
    with a good-quality canonical face, the cosine between the character's identity at the shot's beginning and at
    its end (``identity.end_sets``: the first and last faces of it in the shot's sampled frames, each set read by
    ``identity.robust_identity``; issue 37 item 1, a minimum over single frames read one real man as two people);
    its drift, 1 - value, is on the row. Higher is steadier (so an undelivered shot, a zero under the spec's
    coverage rule, never looks better); a person who turns into someone else inside the shot lowers it. In each
    frame faces are assigned to the shot's characters by matching (``_track``). A set whose faces are mostly below
    the quality floors is read from them with a finding on the row (``identity.within_shot``): a morph cannot hide
    behind the quality gate. ``touched``: characters with undelivered shots, entity -> (admitted, missing): each
    undelivered scheduled appearance is the generator's failure; their delivered ones are not matched (the
    matching reads every shot) and are skipped with that reason."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    rows, vals, skipped, failed, reasons, n_findings = [], [], 0, 0, set(), 0
    for eid, (adm, missing) in (touched or {}).items():
        why = f"{eid}: shots {missing} not delivered"
        for k in missing:
            failed += 1
            rows.append(counts.failed_instance(WITHIN_ID, "appearance", why, shot=int(k), entity_id=eid, **keys))
        for k in (int(x) for x in adm["shot"]):
            skipped += 1
            rows.append(instance_row(WITHIN_ID, None, "appearance", reason="not matched: the character has "
                                     "undelivered shots", shot=k, entity_id=eid, **keys))
        reasons.add("appearances of a character with undelivered shots")
    if tracks is None:
        tracks = _shot_tracks(apps, chosen, clips, face_model, {})
    for eid, lst in apps.items():
        for r, _ in lst:
            k = int(r.shot)
            face = chosen.get((eid, k), (None,))[0]
            if face is None:   # cs_face_identity's row for this appearance says why (no face in the box / matching)
                skipped += 1
                reasons.add("no canonical face")
                rows.append(instance_row(WITHIN_ID, None, "appearance", reason="no canonical face of the character "
                                         "in the shot", shot=k, entity_id=eid, crop_id=r.crop_id, **keys))
                continue
            faces = {i: (f, m, c) for i, f, m, c in _appearance_faces(face, int(r.frame_index), tracks.get((eid, k),
                                                                                                          []))}
            begin, end = identity.end_sets(list(faces))
            value, finding = identity.within_shot(*[[(faces[i][0].vector, faces[i][0].quality.confidence,
                                                       faces[i][0].quality.ok) for i in s] for s in (begin, end)])
            info = {"embedder": face_name, "canonical_frame": int(r.frame_index),
                    "frames": [{"frame": i, "cos": round(c, 4), "margin": m, "ok": f.quality.ok}
                               for i, (f, m, c) in sorted(faces.items())],
                    "begin_frames": begin, "end_frames": end,
                    "low_quality_faces": sum(not f.quality.ok for f, _, _ in faces.values())}
            if value is None:
                why = "no face of the character in the shot's other sampled frames"
                skipped += 1
                reasons.add(why)
                rows.append(instance_row(WITHIN_ID, None, "appearance", reason=why, shot=k, entity_id=eid,
                                         crop_id=r.crop_id, detail=info, **keys))
                continue
            if finding:
                n_findings += 1
                info["finding"] = finding
            vals.append(value)
            rows.append(instance_row(WITHIN_ID, value, "appearance", shot=k, entity_id=eid, reason=finding,
                                     crop_id=r.crop_id, frame_index=int(r.frame_index),
                                     source_sha256=r.source_sha256, detail={**info, "drift": round(1.0 - value, 4)},
                                     **keys))
    if n_findings:
        reasons.add(f"{n_findings} appearances read from only low-quality faces at a shot's beginning or end")
    rec = counts.record(WITHIN_ID, vals, n_skipped=skipped, n_failed=failed, n_failed_evaluator=n_evaluator,
                        reason="; ".join(sorted(x for x in reasons | ({face_reason} if n_evaluator else set())
                                                if x))[:500] or
                        (None if vals else "no appearance with a face in two sampled frames"), **keys)
    rec["detail"] = json.dumps({"embedder": face_name, "set_size": identity.TOP_K, "n_low_quality_sets": n_findings},
                               sort_keys=True)
    rows.append(rec)
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
    # every continuation pair whose two shots decode counts, as in the authors' code (the spec's earlier skip of
    # pairs with no present entity on a side is not theirs: a frozen continuation would have been left out)
    vals, skipped, failed, evaluator, reasons = [], 0, 0, 0, set()
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
