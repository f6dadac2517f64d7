"""Judge-based EntityBench metrics: fidelity (15), action (6), LLM consistency (12 + 6), and the gap-decay
pairs they produce. Pure row builders: models, judge and store are passed in; Dagster stays in assets.py."""
from __future__ import annotations

import json
from collections import defaultdict
from typing import Callable, Optional

import numpy as np
import pandas as pd

from bench_assets.core.records import MetricRecord, record_from_values
from bench_assets.core.tables import instance_row, record_row
from bench_assets.entitybench import dataset as D
from bench_assets.entitybench import judging as J
from bench_assets.entitybench.metrics import centroid_scores
from bench_resources.judge import JudgeResult

FIDELITY_GATE_TAU = 0.5
ACTION_FRAMES = 6


def fidelity_metric_ids(entity_type: str) -> list[str]:
    p = J.TYPE_PREFIX[entity_type]
    return [f"intra_{p}_fidelity", *[f"intra_{p}_{c}" for c in J.CRITERIA[entity_type]]]


def llm_metric_ids(entity_type: str) -> list[str]:
    p = J.LLM_PREFIX[entity_type]
    return [f"llm_{p}_accuracy", f"llm_{p}_mean_score", *[f"llm_{p}_{c}" for c in J.CRITERIA[entity_type]]]


ACTION_IDS = [f"intra_action_{f}" for f in J.ACTION_FIELDS]
ALL_JUDGED_IDS = ([m for t in D.ENTITY_TYPES for m in fidelity_metric_ids(t)] + ACTION_IDS
                  + [m for t in D.ENTITY_TYPES for m in llm_metric_ids(t)])


def _answer_detail(res: JudgeResult, **extra) -> dict:
    return {"judge_status": res.status, "cache_key": res.cache_key, "answer": res.answer, "judge_model": res.model,
            "prompt": f"{res.prompt_id}/{res.prompt_version}", **extra}


# ---------------------------------------------------------------------------------------------- fidelity

def fidelity_rows(generator: str, ep: D.Episode, grounding: pd.DataFrame, load_crop: Callable, ask_many) -> list[dict]:
    """Per (shot, entity) with status present/weak: the judge scores the canonical crop against its description.
    Episode value: mean over the type's entities in a shot, then over shots."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    reg = ep.registry
    todo = grounding[grounding["status"].isin(["present", "weak"]) & grounding["crop_id"].notna()]
    reqs = [J.fidelity_request(r.entity_type, reg[r.entity_id].name, reg[r.entity_id].description,
                               load_crop(r.crop_id)) for r in todo.itertuples()]
    results = ask_many(reqs)
    rows = []
    for etype in D.ENTITY_TYPES:
        ids = fidelity_metric_ids(etype)
        per_shot: dict[str, dict[int, list]] = {m: defaultdict(list) for m in ids}
        failed: dict[str, int] = defaultdict(int)
        skipped: dict[str, int] = defaultdict(int)
        reasons: set[str] = set()
        for r, res in zip(todo.itertuples(), results):
            if r.entity_type != etype:
                continue
            detail = _answer_detail(res, weak=r.status == "weak")
            if res.status != "ok":
                reasons.add(res.reason or res.status)
                for m in ids:
                    (failed if res.status == "failed" else skipped)[m] += 1
                    rows.append(instance_row(m, None, "appearance", reason=res.reason, shot=int(r.shot),
                                             entity_id=r.entity_id, crop_id=r.crop_id, detail=detail, **keys)
                                | ({"n_failed": 1, "n_skipped": 0} if res.status == "failed" else {}))
                continue
            vals = J.fidelity_values(res.answer, etype)
            for m, v in zip(ids, vals.values()):
                per_shot[m][int(r.shot)].append(v)
                rows.append(instance_row(m, v, "appearance", shot=int(r.shot), entity_id=r.entity_id,
                                         crop_id=r.crop_id, frame_index=int(r.frame_index),
                                         source_sha256=r.source_sha256, detail=detail, **keys))
        if not (grounding["entity_type"] == etype).any():
            continue
        no_crop = "; ".join(sorted(set(grounding.loc[grounding["entity_type"] == etype, "reason"].dropna())))[:300]
        for m in ids:
            shot_means = [float(np.mean(v)) for v in per_shot[m].values()]
            n_eval = sum(len(v) for v in per_shot[m].values())
            why = "; ".join(sorted(reasons)) or (None if n_eval else f"no present or weak crop ({no_crop or 'absent'})")
            if not n_eval:
                rows.append(record_row(MetricRecord(m, None, 0, failed[m], skipped[m], why), **keys))
            else:
                rows.append(record_row(MetricRecord(m, float(np.mean(shot_means)), n_eval, failed[m], skipped[m],
                                                    why), **keys))
    return rows


def fidelity_overall(fidelity: Optional[pd.DataFrame]) -> dict[tuple[int, str], Optional[float]]:
    """(shot, entity) -> overall fidelity in [0, 1] (None where the judge gave none)."""
    if fidelity is None or fidelity.empty:
        return {}
    f = fidelity[(fidelity["level"] == "appearance") & fidelity["metric_id"].str.endswith("_fidelity")]
    return {(int(r.shot), r.entity_id): (None if pd.isna(r.value) else float(r.value)) for r in f.itertuples()}


def admitted(grounding: pd.DataFrame, fidelity: dict, entity_id: str) -> tuple[pd.DataFrame, int]:
    """C(e): present, attributable crops with fidelity >= tau or fidelity None; and how many were gated out."""
    g = grounding[(grounding["entity_id"] == entity_id) & (grounding["status"] == "present")
                  & grounding["crop_id"].notna()]
    if "ambiguous" in g:
        g = g[~g["ambiguous"].fillna(False).astype(bool)]
    keep = [fidelity.get((int(r.shot), entity_id)) is None or fidelity[(int(r.shot), entity_id)] >= FIDELITY_GATE_TAU
            for r in g.itertuples()]
    mask = pd.Series(keep, index=g.index, dtype=bool)
    return g[mask].sort_values("shot"), int(len(keep) - sum(keep))


# ---------------------------------------------------------------------------------------------- action

def action_rows(generator: str, ep: D.Episode, clips: dict, errors: dict, detect: Optional[Callable],
                detect_reason: Optional[str], ask_many, judge_reason: Optional[str] = None) -> list[dict]:
    """``judge_reason`` set (judge off, no key): every shot is skipped with it, no detection or grid is built."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    reg = ep.registry
    jobs, rows = [], []
    skipped: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    reasons: set[str] = set()
    for shot in ep.shots:
        chars = [e for e in shot.entities if reg[e].type == "character"]
        subjects = [e for e in shot.entities if reg[e].type in ("character", "object")]
        clip = clips.get(shot.index)
        why = (errors.get(shot.index, "shot missing") if clip is None else
               "no scheduled character" if not chars else
               judge_reason or (detect_reason if detect is None else None))
        if why:
            for f in J.ACTION_FIELDS:
                skipped[f] += 1
            reasons.add(why)
            rows += [instance_row(f"intra_action_{f}", None, "shot", reason=why, shot=shot.index, **keys)
                     for f in J.ACTION_FIELDS]
            continue
        idx, frames = clip.even(ACTION_FRAMES)
        boxes = detect(list(frames), subjects)
        names = {e: reg[e].name for e in subjects}
        grid = J.action_grid(list(frames), boxes, names)
        objects = [e for e in subjects if reg[e].type == "object"]
        names_object = any(reg[o].name.lower().replace("the ", "") in shot.action.lower() for o in objects)
        legend = {reg[e].name: reg[e].description for e in subjects}
        jobs.append((shot, clip, names_object, J.action_request(grid, shot.action, legend, names_object), grid))
    results = ask_many([j[3] for j in jobs])
    values: dict[str, list] = defaultdict(list)
    for (shot, clip, names_object, req, grid), res in zip(jobs, results):
        detail = _answer_detail(res, names_object=names_object)
        if res.status != "ok":
            reasons.add(res.reason or res.status)
            for f in J.ACTION_FIELDS:
                (failed if res.status == "failed" else skipped)[f] += 1
                rows.append(instance_row(f"intra_action_{f}", None, "shot", reason=res.reason, shot=shot.index,
                                         detail=detail, source_sha256=clip.sha256, **keys)
                            | ({"n_failed": 1, "n_skipped": 0} if res.status == "failed" else {}))
            continue
        vals = J.action_values(res.answer)
        for f in J.ACTION_FIELDS:
            v = vals.get(f)
            if v is not None:
                values[f].append(v)
            rows.append(instance_row(f"intra_action_{f}", v, "shot", shot=shot.index, detail=detail,
                                     source_sha256=clip.sha256,
                                     reason=None if v is not None else "action names no object", **keys)
                        | ({"n_skipped": 0} if v is None else {}))
    for f in J.ACTION_FIELDS:
        why = "; ".join(sorted(reasons))[:500] or None
        rows.append(record_row(record_from_values(f"intra_action_{f}", values[f], n_failed=failed[f],
                                                  n_skipped=skipped[f], reason=why), **keys))
    return rows


# ---------------------------------------------------------------------------------------------- LLM consistency

def llm_entity_rows(generator: str, ep: D.Episode, grounding: pd.DataFrame, fidelity: dict, embed: Optional[Callable],
                    embed_reason: Optional[str], load_crop: Callable, ask_many,
                    judge_reason: Optional[str] = None) -> list[dict]:
    """Characters and objects: anchor = admitted crop closest to the centroid; every other scheduled appearance
    is judged against it (gated-out or absent -> skipped). With ``judge_reason`` no anchor is computed."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    rows, jobs = [], []
    skipped: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    for etype in ("character", "object"):
        for ent in (e for e in ep.entities if e.type == etype):
            adm, _ = admitted(grounding, fidelity, ent.id)
            scheduled = ep.appearances(ent.id)
            if len(adm) < 2:
                continue
            if embed is None or judge_reason:
                skipped[etype] += len(scheduled) - 1
                reasons[etype].add(judge_reason or embed_reason)
                continue
            crops = [load_crop(c) for c in adm["crop_id"]]
            _, scores = centroid_scores(embed(crops))
            a = int(np.argmax(scores))
            anchor_shot, anchor_crop = int(adm["shot"].iloc[a]), crops[a]
            by_shot = {int(s): i for i, s in enumerate(adm["shot"])}
            for k in scheduled:
                if k == anchor_shot:
                    continue
                if k not in by_shot:
                    skipped[etype] += 1
                    reasons[etype].add("gated-out or absent appearance")
                    for m in llm_metric_ids(etype):
                        rows.append(instance_row(m, None, "pair", shot=k, entity_id=ent.id,
                                                 reason="gated-out or absent appearance", **keys))
                    continue
                i = by_shot[k]
                jobs.append((etype, ent, k, anchor_shot, adm.iloc[i],
                             J.identity_request(etype, ent.name, ent.description, anchor_crop, crops[i])))
    results = ask_many([j[-1] for j in jobs])
    vals: dict[str, list] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    for (etype, ent, k, anchor_shot, r, _), res in zip(jobs, results):
        ids = llm_metric_ids(etype)
        detail = _answer_detail(res, anchor_shot=anchor_shot, shot_distance=abs(k - anchor_shot),
                                gap_bin=J.gap_bin(abs(k - anchor_shot)))
        if res.status != "ok":
            reasons[etype].add(res.reason or res.status)
            (failed if res.status == "failed" else skipped)[etype] += 1
            for m in ids:
                rows.append(instance_row(m, None, "pair", shot=k, entity_id=ent.id, crop_id=r.crop_id,
                                         reason=res.reason, detail=detail, **keys)
                            | ({"n_failed": 1, "n_skipped": 0} if res.status == "failed" else {}))
            continue
        pv = J.pair_values(res.answer, etype)
        for m, v in zip(ids, pv.values()):
            vals[m].append(v)
            rows.append(instance_row(m, v, "pair", shot=k, entity_id=ent.id, crop_id=r.crop_id,
                                     frame_index=int(r.frame_index), source_sha256=r.source_sha256, detail=detail,
                                     **keys))
    for etype in ("character", "object"):
        for m in llm_metric_ids(etype):
            why = "; ".join(sorted(x for x in reasons[etype] if x))[:500] or None
            rows.append(record_row(record_from_values(m, vals[m], n_failed=failed[etype], n_skipped=skipped[etype],
                                                      reason=why or (None if vals[m] else
                                                                     "no entity with >= 2 admitted appearances")),
                                   **keys))
    return rows


def llm_location_rows(generator: str, ep: D.Episode, grounding: pd.DataFrame, clips: dict, embed: Optional[Callable],
                      embed_reason: Optional[str], ask_many, judge_reason: Optional[str] = None) -> list[dict]:
    """Locations on full frames, pairwise against the anchor shot (closest to the location's centroid); each call
    gets <= 2 sharpness-ranked frames per shot. Per location: allcons = product of same, cons = mean sim."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    ids = llm_metric_ids("location")
    rows, jobs = [], []
    skipped = failed = 0
    reasons: set[str] = set()
    status = {(int(r.shot), r.entity_id): r.status for r in grounding.itertuples()}
    for loc in (e for e in ep.entities if e.type == "location"):
        shots = ep.appearances(loc.id)
        if len(shots) < 2:
            continue
        # absent / weak grounding excludes a shot; 'unavailable' (no location detector offline) does not
        ok = [k for k in shots if k in clips and status.get((k, loc.id)) not in ("absent", "weak")]
        if len(ok) < 2 or embed is None or judge_reason:
            skipped += 1
            why = (f"{loc.id}: fewer than 2 admitted shots" if len(ok) < 2 else judge_reason or embed_reason)
            reasons.add(why)
            rows.append(instance_row("llm_scene_accuracy", None, "entity", entity_id=loc.id, reason=why, **keys))
            continue
        mids = [clips[k].frames[clips[k].n_frames // 2] for k in ok]
        _, scores = centroid_scores(embed(mids))
        anchor = ok[int(np.argmax(scores))]

        def pick(k: int) -> list[np.ndarray]:
            _, frames = clips[k].even(8)
            return [frames[i] for i in J.sharpest(list(frames), 2)]

        for k in ok:
            if k != anchor:
                jobs.append((loc, k, anchor, J.location_request(loc.name, loc.description, pick(anchor), pick(k))))
    results = ask_many([j[-1] for j in jobs])
    per_loc: dict[str, list] = defaultdict(list)
    for (loc, k, anchor, _), res in zip(jobs, results):
        detail = _answer_detail(res, anchor_shot=anchor, shot_distance=abs(k - anchor))
        if res.status != "ok":
            reasons.add(res.reason or res.status)
            per_loc[loc.id].append(None if res.status == "skipped" else "failed")
            rows.append(instance_row("llm_scene_pair", None, "pair", shot=k, entity_id=loc.id, reason=res.reason,
                                     detail=detail, **keys))
            continue
        pv = J.pair_values(res.answer, "location")
        per_loc[loc.id].append(pv)
        rows.append(instance_row("llm_scene_pair", pv["sim"], "pair", shot=k, entity_id=loc.id, detail=detail,
                                 source_sha256=clips[k].sha256, **keys))
    vals: dict[str, list] = defaultdict(list)
    for lid, pairs in per_loc.items():
        if any(p == "failed" for p in pairs):
            failed += 1
            continue
        if any(p is None for p in pairs):
            skipped += 1
            continue
        loc_vals = {"llm_scene_accuracy": float(np.prod([p["same"] for p in pairs])),
                    "llm_scene_mean_score": float(np.mean([p["sim"] for p in pairs])),
                    **{f"llm_scene_{c}": float(np.mean([p[c] for p in pairs])) for c in J.CRITERIA["location"]}}
        for m, v in loc_vals.items():
            vals[m].append(v)
            rows.append(instance_row(m, v, "entity", entity_id=lid, detail={"pairs": len(pairs)}, **keys))
    why = "; ".join(sorted(x for x in reasons if x))[:500] or None
    for m in ids:
        rows.append(record_row(record_from_values(m, vals[m], n_failed=failed, n_skipped=skipped,
                                                  reason=why or (None if vals[m] else
                                                                 "no location scheduled in >= 2 shots")), **keys))
    return rows
