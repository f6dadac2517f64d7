"""MBench's score rows, no Dagster: every sub-dimension that applies to a case (case_scores, planned by
score_plan) with its counts, and the substitutes that decided each row. The maths in metrics.py / geometry.py."""

import json
from typing import Optional

import numpy as np
import pandas as pd

from bench_assets.core.metric_spec import substitute_label
from bench_assets.core.slots import load_slot
from bench_assets.mbench import dataset
from bench_assets.mbench import frames as FR
from bench_assets.mbench import geometry
from bench_assets.mbench import judging
from bench_assets.mbench import metrics
from bench_assets.mbench import pipeline as PL
from bench_assets.mbench.constants import TRACK_COLUMNS
from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE, judge_substitute, label_text, slots_used
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry


def _value_row(generator, case, metric, value, reason=None, detail=None, n_eval=None, n_failed=0, n_skipped=None,
               evaluator=False):
    """One per-case sub-dimension row with its counts: n_eval instances scored, n_failed instances the evaluator
    could not compute (a model, slot or judge missing: ``n_failed_evaluator`` too), n_skipped instances that were
    not applicable (no texture, target out of view, no face)."""
    if n_eval is None:
        n_eval = 0 if value is None else 1
    if n_skipped is None:
        n_skipped = 0 if value is not None or evaluator else 1
    if value is None and evaluator and not n_failed:
        n_failed = 1
    return {"generator": generator, "case_id": case.case_id, "subset": case.subset, "mode": case.mode,
            "metric_id": metric, "value": None if value is None else float(value), "reason": reason,
            "detail": json.dumps(detail, sort_keys=True, default=float) if detail else None,
            "n_eval": int(n_eval), "n_failed": int(n_failed), "n_skipped": int(n_skipped),
            "n_failed_evaluator": int(n_failed if evaluator else 0)}


POSE_METRICS = ("geometry", "texture", "epipolar", "reprojection", "lighting", "action_instruction")


def case_metrics(case: dataset.Case) -> set:
    """The sub-dimensions that apply to a case."""
    return set(metrics.SUBSET_METRICS[case.subset]) | ({"text_instruction"} if case.mode == "T"
                                                       else {"action_instruction"})


def score_plan(case: dataset.Case, n_frames: int, Rs, C, pairs, models: ModelRegistry, device: Device,
               judge: Optional[Judge], tracks: pd.DataFrame):
    """(frames to gather, reductions) that ``case_scores`` reads: the frames every applicable sub-dimension needs,
    stated before the decode pass (frames.py says which frames each one needs)."""
    applies = case_metrics(case) - (set(POSE_METRICS) if Rs is None else set())
    wanted = {"image_embedder": {"texture", "appearance"}, "style_vgg": {"style"}, "clip_b32": {"text_instruction"}}
    slots = {name: load_slot(models, device, name)[0] for name, ms in wanted.items() if ms & applies}
    judge_ok = bool({"state_evolution", "evolution_correctness"} & applies) and judge is not None \
        and judge.available()[0]
    tracks = tracks if len(tracks) else pd.DataFrame(columns=TRACK_COLUMNS)
    return FR.score_plan(case, n_frames, C, pairs, tracks, applies, slots, judge_ok)


def face_domain(tracks: pd.DataFrame) -> Optional[dict]:
    """The face domain the tracks table recorded (tracking.py); None for a table written before it."""
    if "domain" not in tracks:
        return None
    rec = tracks.loc[tracks["kind"] == "face_domain", "domain"].dropna()
    return json.loads(rec.iloc[0]) if len(rec) else None


def case_scores(generator: str, case: dataset.Case, frames, Rs, C, pairs, models: ModelRegistry,
                device: Device, judge: Judge, tracks: pd.DataFrame, pose_reason: Optional[str] = None,
                reduced: Optional[FR.ScoreInputs] = None) -> list[dict]:
    """Every sub-dimension that applies to this case, on [0,1] (None with a reason when it cannot be computed).
    ``frames``: a list of frames, or the step's ``FR.VideoFrames`` with ``reduced`` from the same pass (the
    per-frame features, CIELAB means, Gram distances and texture embeddings planned by ``score_plan``)."""
    h, w = FR.frame_hw(frames)
    K = geometry.intrinsics(w, h)
    rows = []
    if reduced is None:   # frames in memory: the same reductions, run over them
        _, reduced = score_plan(case, len(frames), Rs, C, pairs, models, device, judge, tracks)
        FR.reduce_list(frames, reduced)
    applies = case_metrics(case)
    if Rs is None:
        rows += [_value_row(generator, case, m, None, pose_reason, evaluator=True)
                 for m in POSE_METRICS if m in applies]
        applies -= set(POSE_METRICS)
    tracks = tracks if len(tracks) else pd.DataFrame(columns=TRACK_COLUMNS)
    if {"geometry", "texture"} & applies:
        objects = tracks[tracks["kind"] == "object"].sort_values("frame")
        if objects.empty:
            why = "; ".join(tracks.loc[tracks["kind"] == "object_unavailable", "reason"].astype(str)) or "no object track"
            rows += [_value_row(generator, case, m, None, why, evaluator="unavailable" in why or "slot" in why)
                     for m in ("geometry", "texture")]
        else:
            boxes, mask_text = FR.object_rows(tracks)
            masks = {i: PL.decode_mask(mask_text[i]) for i, _ in pairs
                     if boxes[i] is not None and mask_text[i] is not None}   # the pair references' only
            src = objects["mask_source"].dropna() if "mask_source" in objects else pd.Series([], dtype=object)
            mask_source = str(src.iloc[0]) if len(src) else "pose_box"
            vals, details = [], []
            for i, j in pairs:
                if boxes[i] is None:
                    continue
                R_rel, _ = geometry.relative(Rs[i], C[i], Rs[j], C[j])
                v, how = PL.geometry_pair(frames[i], frames[j], boxes[i], R_rel, K, mask=masks.get(i))
                if v is not None:
                    vals.append(v)
                    details.append({"pair": [i, j], "ssim": round(v, 4), "warp": how})
            rows.append(_value_row(generator, case, "geometry", np.mean(vals) if vals else None,
                                   None if vals else "no revisit pair with the target in view",
                                   {"pairs": details, "mask_source": mask_source},
                                   n_eval=len(vals), n_skipped=len(pairs) - len(vals)))
            embedder, why = load_slot(models, device, "image_embedder")
            if embedder is None:
                rows.append(_value_row(generator, case, "texture", None, why, evaluator=True))
            else:   # every masked crop, embedded chunk by chunk during the pass (frames.TextureEmbeddings)
                emb = reduced.texture.embeddings()
                v = metrics.centroid_consistency(emb) if emb is not None else None
                rows.append(_value_row(generator, case, "texture", v, None if v is not None else "fewer than 2 crops",
                                       {"crops": reduced.texture.crops, "mask_source": mask_source}))
    if {"identity", "appearance"} & applies:
        faces = tracks[tracks["kind"] == "face"]
        gone = tracks[tracks["kind"] == "face_unavailable"]
        dom = face_domain(tracks)
        if len(gone):
            rows += [_value_row(generator, case, m, None, str(gone["reason"].iloc[0]), evaluator=True)
                     for m in ("identity", IDENTITY_FIRST_APPEARANCE, "appearance")]
        elif dom is not None and dom["unknown_reason"]:
            # no identity model for these faces (issue 37): None with the reason and the counts, never a merge; the
            # appearance rows follow the face tracks, which were not formed
            why = (f"identity unknown: {dom['unknown_reason']} ({dom['n_drawn']} of {dom['n_faces']} faces read as "
                   f"drawn, core/face_domain.json)")
            quality = [json.loads(q) for q in faces["quality"] if isinstance(q, str)] if "quality" in faces else []
            low = metrics.low_quality_faces([quality]) if quality else None
            d = {"faces": len(faces), "face_frames": int(faces["frame"].nunique()) if len(faces) else 0,
                 "face_domain": dom, "low_quality": None if low is None else
                 {"faces": low["faces"], "reasons": low["reasons"]}}
            rows += [_value_row(generator, case, m, None, why if m != "appearance" else
                                f"needs the face tracks, not formed: {why}", d, evaluator=True)
                     for m in ("identity", IDENTITY_FIRST_APPEARANCE, "appearance")]
        else:
            by_track = [[np.asarray(e, np.float32) for e in g["embedding"]] for _, g in faces.groupby("track")]
            tv, n = metrics.tracks_consistency(by_track)
            thr = float(faces["threshold"].iloc[0]) if len(faces) else None
            per_frame = [[np.asarray(e, np.float32) for e in g["embedding"]] for _, g in faces.sort_values("frame")
                         .groupby("frame", sort=True)]
            drift = metrics.first_appearance_drift(per_frame, thr) if thr is not None else {"kept_fraction": None}
            why = None if tv is not None else "no face track with >= 2 detections"
            # faces below the face model's quality floors, counted apart (the paper's value still tracks them all)
            quality = [[json.loads(q) if isinstance(q, str) else None for q in g["quality"]]
                       for _, g in faces.groupby("track")] if "quality" in faces else []
            d = {"tracks": len(by_track), "scored": n, "faces": len(faces), "track_consistency": tv,
                 "first_appearance": drift, "max_cosine_distance": thr,
                 "low_quality": metrics.low_quality_faces(quality), "face_domain": dom}
            skipped = len(by_track) - n if len(by_track) else 1
            # the paper's identity is the tracks' centroid consistency; the drift-scaled variant is our addition
            rows.append(_value_row(generator, case, "identity", tv, why, d, n_eval=n, n_skipped=skipped))
            rows.append(_value_row(generator, case, IDENTITY_FIRST_APPEARANCE, metrics.identity_score(tv, drift),
                                   why, d, n_eval=n, n_skipped=skipped))
            embedder, ewhy = load_slot(models, device, "image_embedder")
            no_person = tracks[tracks["kind"] == "person_unavailable"]
            if len(no_person) or embedder is None:
                rows.append(_value_row(generator, case, "appearance", None,
                                       str(no_person["reason"].iloc[0]) if len(no_person) else ewhy, evaluator=True))
            else:
                body = []
                for _, g in faces.groupby("track"):
                    crops = [c for c in (PL.crop(frames[int(r.frame)], json.loads(r.person_box))
                                         for r in g.itertuples() if isinstance(r.person_box, str)) if c is not None]
                    if len(crops) >= 2:
                        body.append(list(embedder.embed(crops)))
                v, n = metrics.tracks_consistency(body)
                rows.append(_value_row(generator, case, "appearance", v, None if v is not None else
                                       "no track with >= 2 full-body crops", {"scored": n}, n_eval=n))
    if {"epipolar", "reprojection", "lighting"} & applies:
        feats = reduced.features    # ORB features of the pair and helper frames, computed during the pass
        errs = [geometry.revisit_pair(feats, i, j, Rs, C, K) for i, j in pairs]
        for m, key in (("epipolar", "epipolar_px"), ("reprojection", "reprojection_px")):
            agg = metrics.spatial_score(errs, key)
            why = None if agg["value"] is not None else ("; ".join(agg["reasons"]) or "no revisit pair")
            rows.append(_value_row(generator, case, m, agg["value"], why,
                                   {"pairs": errs, "forgotten": agg["forgotten"]},
                                   n_eval=agg["n_eval"], n_skipped=agg["n_skipped"] + (0 if pairs else 1)))
        rows.append(_value_row(generator, case, "lighting",
                               metrics.lighting_from_stats([(reduced.lab[i], reduced.lab[j]) for i, j in pairs]),
                               None if pairs else "no revisit pair", n_eval=len(pairs)))
    if "style" in applies:
        vgg, why = load_slot(models, device, "style_vgg")
        rows.append(_value_row(generator, case, "style", reduced.style.score() if vgg else None,
                               why if vgg is None else None, evaluator=vgg is None))
    if {"state_evolution", "evolution_correctness"} & applies:
        ok, why = judge.available()
        if not ok:
            rows += [_value_row(generator, case, m, None, f"needs the judge: {why}", evaluator=True)
                     for m in ("state_evolution", "evolution_correctness")]
        else:
            sel = PL.even(len(frames), PL.TRIGGER_FRAMES)   # gathered by the plan
            res = judge.ask_many([judging.evolution_request(case.causal_event, [frames[k] for k in sel])])[0]
            if res.status != "ok":
                rows += [_value_row(generator, case, m, None, f"judge {res.status}: {res.reason}", evaluator=True)
                         for m in ("state_evolution", "evolution_correctness")]
            else:
                g = metrics.judge_unit(res.answer["state_evolution"])
                s = metrics.judge_unit(res.answer["evolution_correctness"])
                d = {"answer": res.answer, "cache_key": res.cache_key}
                rows += [_value_row(generator, case, "state_evolution", g, detail=d),
                         _value_row(generator, case, "evolution_correctness", g * s, detail=d)]
    if "text_instruction" in applies:
        clip_model, why = load_slot(models, device, "clip_b32")
        if clip_model is None:
            rows.append(_value_row(generator, case, "text_instruction", None, why, evaluator=True))
        else:
            per = []
            for s, pick in zip(case.segments, FR.text_frames_per_segment(len(frames), len(case.segments))):
                if pick:
                    per.append(float(clip_model.similarity([frames[i] for i in pick], [s.get("text", "")]).mean()))
            rows.append(_value_row(generator, case, "text_instruction",
                                   float(np.clip(np.mean(per), 0, 1)) if per else None,
                                   None if per else "no frame per segment", {"per_segment": per}, n_eval=len(per),
                                   n_skipped=len(case.segments) - len(per)))
    if "action_instruction" in applies:
        acts = case.frame_actions()
        tw = [geometry.twist(Rs[k], C[k], Rs[k + 1], C[k + 1]) for k in range(len(Rs) - 1)]
        if len(acts) > len(tw):
            # the generator's video is shorter than the schedule: an error of this output, not a truncation
            rows.append(_value_row(generator, case, "action_instruction", None,
                                   f"generator {generator!r}, case {case.case_id}: the action schedule has "
                                   f"{len(acts)} frame transitions but the video has {len(tw)}",
                                   {"schedule": len(acts), "transitions": len(tw)}, n_failed=1, n_skipped=0))
        else:
            v = metrics.action_alignment(tw[:len(acts)], acts)
            rows.append(_value_row(generator, case, "action_instruction", v,
                                   None if v is not None else "no moving phase",
                                   {"transitions": len(acts), "extra_video_transitions": len(tw) - len(acts)},
                                   n_eval=sum(a != "wait" for a in acts)))
    return rows


def substitutes(df: pd.DataFrame, models: ModelRegistry, judge: Optional[Judge]) -> list[Optional[str]]:
    """Per score row, the models that decided it and are not the paper's (None when all are): the slots it actually
    used (metric_specs.slots_used: mode, mask source), the pose-carried box standing in for SAM 2, and the judges
    (the T trigger: every T row's coverage; self-evolution: its score) when they are not the paper's."""
    segmenter = models.status("object_segmenter").available
    model = getattr(judge, "model", None) if judge is not None else None
    cache: dict = {}
    out = []
    for r in df.itertuples():
        detail = json.loads(r.detail) if isinstance(r.detail, str) and r.detail else {}
        slots, extra = slots_used(r.metric_id, r.mode, detail.get("mask_source"), segmenter)
        for slot in slots:   # one slot at a time: a checkpoint name may hold '; ' (the labels' separator)
            if slot not in cache:
                cache[slot] = label_text(substitute_label((slot,), models))
        parts = [*(cache[slot] for slot in slots), *extra]
        if r.metric_id in ("state_evolution", "evolution_correctness") and "answer" in detail:
            parts.append(judge_substitute("self_evolution", model))
        if r.mode == "T" and r.triggered is not None and not pd.isna(r.triggered):
            parts.append(judge_substitute("trigger", model))
        out.append("; ".join(p for p in parts if p) or None)
    return out
