"""Judge-based EntityBench metrics: fidelity (15), action (6), LLM consistency (12 + 6), and the gap-decay
pairs they produce. Pure row builders: models, judge and store are passed in; Dagster stays in assets.py.

Counts (see ``counts.py``): the generator's skips and failures (gated-out or absent appearance, missing
shot) are kept apart from the evaluator's (judge off or failed, replay miss, missing model, grounding that
cannot run), which go to ``n_failed_evaluator`` and never lower a generator's coverage.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Callable, Optional

import numpy as np
import pandas as pd

from bench_assets.core.records import MetricRecord
from bench_assets.core.tables import instance_row, record_row
from bench_assets.entitybench import counts, dataset, judging
from bench_assets.entitybench.constants import GROUNDING_FRAMES
from bench_resources.judge import JUDGE_OFF, JudgeResult

FIDELITY_GATE_TAU = 0.5
# The fidelity gate's three states for a crop (issue 25). A crop the judge scored is admitted iff fidelity >= tau.
# With the judge off nothing is gated (the value in the fidelity map is None): the row is ``ungated``, a different
# construct from the paper's gated value, marked on the board and never comparable with gated rows. With the judge
# on, a crop whose fidelity question failed is GATE_UNKNOWN: not admitted, not gated out (counted apart), and the
# rows that would have read it are evaluator failures, re-run once the judge answers: an outage can never move a
# judge-independent number by admitting crops the healthy judge would gate out.
GATE_UNKNOWN = "gate unknown"
UNGATED = "ungated: judge off, fidelity gate not applied"
SHOT_ERROR = "shot_error"      # grounding status of a missing or undecodable shot (the generator's failure)
UNAVAILABLE = "unavailable"    # grounding status when the evaluator cannot ground (no class, no detector)


def fidelity_metric_ids(entity_type: str) -> list[str]:
    p = judging.TYPE_PREFIX[entity_type]
    return [f"intra_{p}_fidelity", *[f"intra_{p}_{c}" for c in judging.CRITERIA[entity_type]]]


def llm_metric_ids(entity_type: str) -> list[str]:
    p = judging.LLM_PREFIX[entity_type]
    return [f"llm_{p}_accuracy", f"llm_{p}_mean_score", *[f"llm_{p}_{c}" for c in judging.CRITERIA[entity_type]]]


ACTION_IDS = [f"intra_action_{f}" for f in judging.ACTION_FIELDS]
ALL_JUDGED_IDS = ([m for t in dataset.ENTITY_TYPES for m in fidelity_metric_ids(t)] + ACTION_IDS
                  + [m for t in dataset.ENTITY_TYPES for m in llm_metric_ids(t)])


def _answer_detail(res: JudgeResult, **extra) -> dict:
    return {"judge_status": res.status, "cache_key": res.cache_key, "answer": res.answer, "judge_model": res.model,
            "prompt": f"{res.prompt_id}/{res.prompt_version}", **extra}


def _why(reasons) -> Optional[str]:
    return "; ".join(sorted({x for x in reasons if x}))[:500] or None


# ---------------------------------------------------------------------------------------------- fidelity

def fidelity_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, load_crop: Callable,
                  ask_many) -> list[dict]:
    """Per (shot, entity) with status present/weak: the judge scores the canonical crop against its description.
    Episode value: mean over the type's entities in a shot, then over shots. A judge that fails or is off is the
    evaluator's failure (``n_failed_evaluator``), never the generator's."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    reg = ep.registry
    todo = grounding[grounding["status"].isin(["present", "weak"]) & grounding["crop_id"].notna()]
    reqs = [judging.fidelity_request(r.entity_type, reg[r.entity_id].name, reg[r.entity_id].description,
                                     load_crop(r.crop_id)) for r in todo.itertuples()]
    results = ask_many(reqs)
    rows = []
    for etype in dataset.ENTITY_TYPES:
        ids = fidelity_metric_ids(etype)
        per_shot: dict[str, dict[int, list]] = {m: defaultdict(list) for m in ids}
        evaluator: dict[str, int] = defaultdict(int)
        reasons: set[str] = set()
        for r, res in zip(todo.itertuples(), results):
            if r.entity_type != etype:
                continue
            detail = _answer_detail(res, weak=r.status == "weak")
            if res.status != "ok":
                reasons.add(res.reason or res.status)
                for m in ids:
                    evaluator[m] += 1
                    rows.append(counts.evaluator_instance(m, "appearance", res.reason, shot=int(r.shot),
                                                          entity_id=r.entity_id, crop_id=r.crop_id, detail=detail,
                                                          **keys))
                continue
            vals = judging.fidelity_values(res.answer, etype)
            for m, v in zip(ids, vals.values()):
                per_shot[m][int(r.shot)].append(v)
                rows.append(instance_row(m, v, "appearance", shot=int(r.shot), entity_id=r.entity_id,
                                         crop_id=r.crop_id, frame_index=int(r.frame_index),
                                         source_sha256=r.source_sha256, detail=detail, **keys))
        if not (grounding["entity_type"] == etype).any():
            continue
        # a (shot, entity) of an undelivered shot is an instance the generator failed (paper Eq. 23: a zero)
        lost = grounding[(grounding["entity_type"] == etype) & (grounding["status"] == SHOT_ERROR)]
        for r in lost.itertuples():
            for m in ids:
                rows.append(counts.failed_instance(m, "appearance", r.reason if isinstance(r.reason, str) else
                                                   "shot missing", shot=int(r.shot), entity_id=r.entity_id, **keys))
        if len(lost):
            reasons.add(f"{len(lost)} appearances in undelivered shots")
        no_crop = "; ".join(sorted(set(grounding.loc[grounding["entity_type"] == etype, "reason"].dropna())))[:300]
        for m in ids:
            shot_means = [float(np.mean(v)) for v in per_shot[m].values()]
            n_eval = sum(len(v) for v in per_shot[m].values())
            why = _why(reasons) or (None if n_eval else f"no present or weak crop ({no_crop or 'absent'})")
            rec = MetricRecord(m, float(np.mean(shot_means)) if n_eval else None, n_eval, len(lost), 0, why)
            rows.append(record_row(rec, **keys) | {counts.EVAL: evaluator[m]})
    return rows


def undelivered(grounding: pd.DataFrame) -> set[tuple[int, str]]:
    """(shot, entity) scheduled in a shot the generator did not deliver (missing or undecodable)."""
    g = grounding[grounding["status"] == SHOT_ERROR]
    return {(int(r.shot), r.entity_id) for r in g.itertuples()}


def touched(ep: dataset.Episode, entity_id: str, lost: set[tuple[int, str]]) -> list[int]:
    """The undelivered shots of a cross-shot entity (scheduled in >= 2 shots); [] when none or not cross-shot.
    Every cross-shot instance of such an entity reads them (its centroid or anchor is built over all its
    appearances), so each counts as the generator's failure: delivering fewer shots can never raise the value."""
    shots = ep.appearances(entity_id)
    return [k for k in shots if (k, entity_id) in lost] if len(shots) >= 2 else []


def fidelity_overall(fidelity: Optional[pd.DataFrame]) -> dict[tuple[int, str], object]:
    """(shot, entity) -> overall fidelity in [0, 1]; None where the judge was off (ungated); GATE_UNKNOWN where the
    judge was on and the question failed (replay miss, outage, bad answer, no key)."""
    if fidelity is None or fidelity.empty:
        return {}
    f = fidelity[(fidelity["level"] == "appearance") & fidelity["metric_id"].str.endswith("_fidelity")]
    out: dict[tuple[int, str], object] = {}
    for r in f.itertuples():
        if pd.notna(r.value):
            out[(int(r.shot), r.entity_id)] = float(r.value)
            continue
        reason = r.reason if isinstance(r.reason, str) else ""
        evaluator = getattr(r, counts.EVAL, 0)
        failed = bool(evaluator) and not pd.isna(evaluator) and reason != JUDGE_OFF
        out[(int(r.shot), r.entity_id)] = GATE_UNKNOWN if failed else None
    return out


def gate_state(fidelity: Optional[pd.DataFrame]) -> str:
    """'gated by <judge model>' when any crop was judged, else 'ungated' (judge off or nothing to judge): part of
    the protocol of every gated family, so rows under different judges or gate states are never comparable."""
    if fidelity is None or fidelity.empty or "detail" not in fidelity:
        return "ungated"
    f = fidelity[(fidelity["level"] == "appearance") & fidelity["metric_id"].str.endswith("_fidelity")]
    models = set()
    for d in f["detail"].dropna():
        try:
            doc = json.loads(d) if isinstance(d, str) else d
        except ValueError:
            continue
        if isinstance(doc, dict) and doc.get("judge_status") == "ok" and doc.get("judge_model"):
            models.add(str(doc["judge_model"]))
    return f"gated by {'+'.join(sorted(models))}" if models else "ungated"


GATED_IDS = ("cs_face", "cs_object", "cs_transition_boundary", "cs_face_identity")  # read C(e): the gate
# per-instance rows computed over the admitted crops C(e) besides GATED_IDS' own (the gap-decay pairs)
GATED_INSTANCE_IDS = GATED_IDS + ("gap_decay_embedding", "gap_decay_embedding_allpairs")


def withhold_unknown_gate(df: pd.DataFrame, n_unknown: int, gate: str) -> pd.DataFrame:
    """The gated families' rows under an unknown gate (``n_unknown`` crops whose fidelity question failed): no
    value, the evaluator's failure with its reason, so an outage never moves them (the next run re-runs them once
    the judge answers). Item rows count the ``n_unknown`` crops; every per-instance row (appearance, pair) that
    had a value is withheld too, one evaluator failure each: it was computed over an admitted set that a healthy
    judge may change (a centroid, an anchor, an adjacent pair), so no instance under an unknown gate reaches the
    audit pages or the gap-decay diagnostic. Instances already without a value keep their own reason (an
    undelivered shot stays the generator's). With the judge off (``gate`` 'ungated') the rows keep their values
    and are marked UNGATED (a construct apart from the paper's gated one, shown on the board). Returns ``df``
    changed in place."""
    if not len(df):
        return df
    item = (df["level"] == "item") & df["metric_id"].isin(GATED_IDS)
    if n_unknown:
        inst = (df["level"] != "item") & df["metric_id"].isin(GATED_INSTANCE_IDS) & df["value"].notna()
        if inst.any():
            df.loc[inst, "value"] = None
            for col in ("n_eval", "n_failed", "n_skipped"):
                if col in df:
                    df.loc[inst, col] = 0
            if counts.EVAL in df:
                df.loc[inst, counts.EVAL] = 1
            df.loc[inst, "reason"] = (f"{GATE_UNKNOWN}: withheld with its item ({n_unknown} present crops' "
                                      "fidelity question failed)")
        df.loc[item, "value"] = None
        for col in ("raw_mean", "coverage"):
            if col in df:
                df.loc[item, col] = None
        df.loc[item, counts.EVAL] = df.loc[item, counts.EVAL].fillna(0) + n_unknown if counts.EVAL in df else n_unknown
        df.loc[item, "reason"] = (f"{GATE_UNKNOWN} for {n_unknown} present crops (fidelity question failed): "
                                  "not scored until the judge answers")
    elif gate == "ungated" and "substitute" in df:
        from bench_assets.core.metric_spec import join_substitutes
        df["substitute"] = pd.array([join_substitutes([v, UNGATED]) if g else v
                                     for g, v in zip(item, df["substitute"])], dtype="string")
    return df


def gate_unknown(fidelity: dict, shot: int, entity_id: str) -> bool:
    return fidelity.get((shot, entity_id)) is GATE_UNKNOWN


def _passes_gate(fidelity: dict, shot: int, entity_id: str) -> bool:
    v = fidelity.get((shot, entity_id))
    if v is GATE_UNKNOWN:  # never admitted on a failed question (the old ``v is None or ...`` admitted it)
        return False
    return v is None or v >= FIDELITY_GATE_TAU


def admitted(grounding: pd.DataFrame, fidelity: dict, entity_id: str) -> tuple[pd.DataFrame, int]:
    """C(e): present, attributable crops with fidelity >= tau or fidelity None (judge off: ungated); and how many
    were gated out. A GATE_UNKNOWN crop is neither (``gate_unknown_count``)."""
    g = grounding[(grounding["entity_id"] == entity_id) & (grounding["status"] == "present")
                  & grounding["crop_id"].notna()]
    if "ambiguous" in g:
        g = g[~g["ambiguous"].fillna(False).astype(bool)]
    keep = [_passes_gate(fidelity, int(r.shot), entity_id) for r in g.itertuples()]
    unknown = sum(gate_unknown(fidelity, int(r.shot), entity_id) for r in g.itertuples())
    mask = pd.Series(keep, index=g.index, dtype=bool)
    return g[mask].sort_values("shot"), int(len(keep) - sum(keep) - unknown)


def gate_unknown_count(grounding: pd.DataFrame, fidelity: dict, entity_ids=None) -> int:
    """Present crops whose gate is unknown (fidelity question failed): the evaluator's, counted apart."""
    g = grounding[grounding["status"] == "present"]
    if entity_ids is not None:
        g = g[g["entity_id"].isin(list(entity_ids))]
    return int(sum(gate_unknown(fidelity, int(r.shot), r.entity_id) for r in g.itertuples()))


def appearance_states(grounding: pd.DataFrame, fidelity: dict) -> dict[tuple[int, str], tuple[str, str]]:
    """(shot, entity) -> (side, why): side 'admitted', 'generator' (gated out, absent, weak, shot missing) or
    'evaluator' (grounding could not run, or a closed-vocabulary detector cannot attribute the box)."""
    out = {}
    for r in grounding.itertuples():
        key = (int(r.shot), r.entity_id)
        reason = r.reason if isinstance(r.reason, str) else None
        if r.status == "present":
            amb = getattr(r, "ambiguous", False)
            if isinstance(amb, (bool, np.bool_)) and bool(amb):
                out[key] = ("evaluator", reason or "not attributable (shared class)")
            elif not isinstance(r.crop_id, str):
                out[key] = ("evaluator", "no crop stored")
            elif gate_unknown(fidelity, *key):
                out[key] = ("evaluator", f"{GATE_UNKNOWN}: the fidelity question failed")
            elif _passes_gate(fidelity, *key):
                out[key] = ("admitted", "")
            else:
                out[key] = ("generator", "gated out (fidelity < 0.5)")
        elif r.status == UNAVAILABLE:
            out[key] = ("evaluator", f"grounding unavailable: {reason or 'no detector'}")
        elif r.status == SHOT_ERROR:
            out[key] = ("generator", reason or "shot missing")
        else:
            out[key] = ("generator", f"{r.status} appearance")
    return out


# ---------------------------------------------------------------------------------------------- action

def resolve_action(action: str, registry: dict, entity_ids) -> tuple[str, list[str]]:
    """The action with entity ids written as names ('c1 walks' -> 'Ellen (c1) walks'), and the scheduled
    objects it names, by id or by name (spec: `object_interaction` is None only when no object is named)."""
    text = action
    for eid in sorted(registry, key=len, reverse=True):
        text = re.sub(rf"(?<![\w(]){re.escape(eid)}(?![\w)])", f"{registry[eid].name} ({eid})", text)
    low = text.lower()
    named = []
    for e in entity_ids:
        if registry[e].type != "object":
            continue
        name = re.sub(r"^(the|a|an)\s+", "", registry[e].name.lower()).strip()
        if re.search(rf"\b{re.escape(e.lower())}\b", action.lower()) or (name and name in low):
            named.append(e)
    return text, named


def authors_names_object(action: str, object_names) -> bool:
    """The authors' rule for ``object_interaction``: a scheduled object's name occurs in the action text as a
    whole word (case-insensitive)."""
    return any(n and re.search(rf"\b{re.escape(n)}\b", action or "", re.IGNORECASE) for n in object_names)


def action_rows(generator: str, ep: dataset.Episode, clips: dict, errors: dict, detect: Optional[Callable],
                detect_reason: Optional[str], ask_many, judge_reason: Optional[str] = None) -> list[dict]:
    """The authors' action judge: the shot's 5 grounding frames with every detection of each scheduled character
    and object drawn (judging.authors_action_grid), the action text and the labels. ``judge_reason`` set (judge off,
    no key): every shot is the evaluator's failure, no detection or grid is built. Missing shot -> the generator's
    n_failed; no action text -> n_skipped (the authors' only skip)."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    reg = ep.registry
    jobs, rows = [], []
    skipped: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    evaluator: dict[str, int] = defaultdict(int)
    reasons: set[str] = set()
    for shot in ep.shots:
        # the authors' annotation targets: scheduled characters, then objects, one colour each in that order
        chars = [e for e in shot.entities if reg[e].type == "character"]
        subjects = chars + [e for e in shot.entities if reg[e].type == "object"]
        # canonical episodes may name entities by id ('c1 picks up o1'): written as names first (official text has
        # names, so it reaches the judge unchanged, as in the authors' code)
        text = resolve_action(shot.action, reg, subjects)[0]
        names_object = authors_names_object(text, [reg[e].name for e in subjects if reg[e].type == "object"])
        clip = clips.get(shot.index)
        if clip is None:
            why = errors.get(shot.index, "shot missing")
            reasons.add(why)
            for f in judging.ACTION_FIELDS:
                if f == "object_interaction" and not names_object:
                    continue  # never an instance of this shot, delivered or not
                failed[f] += 1
                rows.append(counts.failed_instance(f"intra_action_{f}", "shot", why, shot=shot.index, **keys))
            continue
        if not (shot.action or "").strip():   # the authors skip a shot only when it has no action text
            reasons.add("no action description")
            for f in judging.ACTION_FIELDS:
                skipped[f] += 1
                rows.append(instance_row(f"intra_action_{f}", None, "shot", reason="no action description",
                                         shot=shot.index, **keys))
            continue
        why = judge_reason or (detect_reason if detect is None else None)
        if why:
            reasons.add(why)
            for f in judging.ACTION_FIELDS:
                evaluator[f] += 1
                rows.append(counts.evaluator_instance(f"intra_action_{f}", "shot", why, shot=shot.index, **keys))
            continue
        # the 5 grounding frames with every detection drawn, tiled as the authors' grid
        idx, frames = clip.grounding(GROUNDING_FRAMES)
        per_frame = detect(list(frames), subjects)
        colours = judging.schedule_colours([reg[e].name for e in chars],
                                           [reg[e].name for e in subjects if reg[e].type == "object"])
        grid = judging.authors_action_grid(list(frames), [[(reg[e].name, b) for e, b in dets] for dets in per_frame],
                                           colours)
        legend = {reg[e].name: reg[e].description for e in subjects}
        jobs.append((shot, clip, names_object,
                     judging.action_request(grid, text, legend, names_object, n_frames=len(frames)), grid))
    results = ask_many([j[3] for j in jobs])
    values: dict[str, list] = defaultdict(list)
    for (shot, clip, names_object, req, grid), res in zip(jobs, results):
        detail = _answer_detail(res, names_object=names_object)
        if res.status != "ok":
            reasons.add(res.reason or res.status)
            for f in judging.ACTION_FIELDS:
                evaluator[f] += 1
                rows.append(counts.evaluator_instance(f"intra_action_{f}", "shot", res.reason, shot=shot.index,
                                                      detail=detail, source_sha256=clip.sha256, **keys))
            continue
        vals = judging.action_values(res.answer)
        for f in judging.ACTION_FIELDS:
            v = vals.get(f)
            if v is not None:
                values[f].append(v)
            rows.append(instance_row(f"intra_action_{f}", v, "shot", shot=shot.index, detail=detail,
                                     source_sha256=clip.sha256,
                                     reason=None if v is not None else "action names no object", **keys)
                        | ({"n_skipped": 0} if v is None else {}))
    for f in judging.ACTION_FIELDS:
        rows.append(counts.record(f"intra_action_{f}", values[f], n_failed=failed[f], n_skipped=skipped[f],
                                  n_failed_evaluator=evaluator[f], reason=_why(reasons), **keys))
    return rows


# ---------------------------------------------------------------------------------------------- LLM consistency

def authors_anchor(embeddings: np.ndarray) -> int:
    """The appearance closest to the centroid, in the authors' arithmetic (compute_cs_centroid's representative:
    argmax of rows @ (mean / |mean|), the rows as the embedder gave them, L2-normalised, not normalised again; a
    mean of norm < 1e-9 gives their fallback, the first). With two appearances both are equally close in exact
    arithmetic and float rounding decides: choosing as they do needs their operations (the golden wire test caught
    the other anchor of a two-shot entity, and its images in the other order)."""
    embs = np.asarray(embeddings)
    centroid = embs.mean(axis=0)
    norm = np.linalg.norm(centroid)
    return int(np.argmax(embs @ (centroid / norm))) if norm >= 1e-9 else 0


def llm_entity_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, fidelity: dict,
                    embed: Optional[Callable], embed_reason: Optional[str], load_crop: Callable, ask_many,
                    judge_reason: Optional[str] = None) -> list[dict]:
    """Characters and objects: anchor = admitted crop closest to the centroid; every other scheduled appearance
    is one comparison against it.

    Instances (spec): every entity scheduled in >= 2 shots contributes (appearances - 1) comparisons, whatever
    was admitted, so a generator that loses an entity gets a lower coverage, never a smaller denominator.
    Gated-out, absent, weak or missing appearances are the generator's skips; grounding that cannot run, a
    closed-vocabulary box that cannot be attributed, a missing embedder or an absent judge are the evaluator's."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    states = appearance_states(grounding, fidelity)
    lost = undelivered(grounding)
    rows, jobs = [], []
    skipped: dict[str, int] = defaultdict(int)
    failed: dict[str, int] = defaultdict(int)
    evaluator: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    for etype in ("character", "object"):
        ids = llm_metric_ids(etype)
        for ent in (e for e in ep.entities if e.type == etype):
            scheduled = ep.appearances(ent.id)
            if len(scheduled) < 2:
                continue
            missing = touched(ep, ent.id, lost)
            if missing:  # the anchor would have been chosen over every appearance: each comparison failed
                why = f"{ent.id}: shots {missing} not delivered (the anchor reads every appearance)"
                reasons[etype].add("appearances in undelivered shots")
                for k in scheduled[1:]:
                    for m in ids:
                        rows.append(counts.failed_instance(m, "pair", why, shot=k, entity_id=ent.id, **keys))
                failed[etype] += len(scheduled) - 1
                continue
            unknown = [k for k in scheduled if gate_unknown(fidelity, k, ent.id)]
            if unknown:  # the anchor is chosen over the admitted crops, which are not known: the evaluator's
                why = f"{ent.id}: {GATE_UNKNOWN} for shots {unknown} (fidelity question failed)"
                reasons[etype].add(f"{GATE_UNKNOWN} (fidelity question failed)")
                for k in scheduled[1:]:
                    for m in ids:
                        rows.append(counts.evaluator_instance(m, "pair", why, shot=k, entity_id=ent.id, **keys))
                evaluator[etype] += len(scheduled) - 1
                continue
            adm, _ = admitted(grounding, fidelity, ent.id)
            by_shot = {int(s): i for i, s in enumerate(adm["shot"])}
            no_anchor = judge_reason or (embed_reason if embed is None and len(adm) >= 2 else None)
            crops, anchor_shot = [], None
            if len(adm) and not no_anchor:
                crops = [load_crop(c) for c in adm["crop_id"]]
                a = authors_anchor(embed(crops)) if len(adm) >= 2 else 0
                anchor_shot = int(adm["shot"].iloc[a])
            # the anchor takes one appearance; without one, an admitted (else the first) appearance stands in
            slot = anchor_shot if anchor_shot is not None else (int(adm["shot"].iloc[0]) if len(adm) else scheduled[0])
            for k in scheduled:
                if k == slot:
                    continue
                side, why = (("admitted", "") if k in by_shot else
                             states.get((k, ent.id), ("generator", "no grounding row")))
                if side == "admitted" and no_anchor:
                    side, why = "evaluator", no_anchor
                if side == "admitted":
                    r = adm.iloc[by_shot[k]]
                    jobs.append((etype, ent, k, anchor_shot, r,
                                 judging.identity_request(etype, ent.name, ent.description, crops[by_shot[anchor_shot]],
                                                          crops[by_shot[k]])))
                    continue
                reasons[etype].add(why if side == "evaluator" else "gated-out or absent appearance")
                for m in ids:
                    if side == "evaluator":
                        rows.append(counts.evaluator_instance(m, "pair", why, shot=k, entity_id=ent.id, **keys))
                    else:
                        rows.append(instance_row(m, None, "pair", shot=k, entity_id=ent.id, reason=why, **keys))
                (evaluator if side == "evaluator" else skipped)[etype] += 1
    results = ask_many([j[-1] for j in jobs])
    vals: dict[str, list] = defaultdict(list)
    for (etype, ent, k, anchor_shot, r, _), res in zip(jobs, results):
        ids = llm_metric_ids(etype)
        detail = _answer_detail(res, anchor_shot=anchor_shot, shot_distance=abs(k - anchor_shot),
                                gap_bin=judging.gap_bin(abs(k - anchor_shot)), entity_type=etype)
        if res.status != "ok":
            reasons[etype].add(res.reason or res.status)
            evaluator[etype] += 1
            for m in ids:
                rows.append(counts.evaluator_instance(m, "pair", res.reason, shot=k, entity_id=ent.id,
                                                      crop_id=r.crop_id, detail=detail, **keys))
            continue
        pv = judging.pair_values(res.answer, etype)
        for m, v in zip(ids, pv.values()):
            vals[m].append(v)
            rows.append(instance_row(m, v, "pair", shot=k, entity_id=ent.id, crop_id=r.crop_id,
                                     frame_index=int(r.frame_index), source_sha256=r.source_sha256, detail=detail,
                                     **keys))
    for etype in ("character", "object"):
        for m in llm_metric_ids(etype):
            why = _why(reasons[etype])
            n = skipped[etype] + failed[etype] + evaluator[etype] + len(vals[m])
            rows.append(counts.record(m, vals[m], n_skipped=skipped[etype], n_failed=failed[etype],
                                      n_failed_evaluator=evaluator[etype],
                                      reason=why or (None if n else f"no {etype} scheduled in >= 2 shots"), **keys))
    return rows


def location_admitted(ep: dataset.Episode, grounding: pd.DataFrame, fidelity: dict, clips: dict,
                      loc_id: str) -> tuple[list[int], int, list[int]]:
    """(admitted shots, gated-out count, shots admitted ungated) of one location: present and fidelity >= tau
    (or None), like characters and objects. A shot the evaluator could not ground (no location detector
    offline) passes the gate ungated and is listed, as a crop with no fidelity does."""
    status = {int(r.shot): r.status for r in grounding[grounding["entity_id"] == loc_id].itertuples()}
    ok, gated, ungated = [], 0, []
    for k in ep.appearances(loc_id):
        st = status.get(k)
        if k not in clips or st == SHOT_ERROR:
            continue
        if st == UNAVAILABLE:
            ok.append(k)
            ungated.append(k)
        elif st == "present":
            if _passes_gate(fidelity, k, loc_id):
                ok.append(k)
            elif not gate_unknown(fidelity, k, loc_id):
                gated += 1
    return ok, gated, ungated


def scene_frames(clip, k: int = 2) -> list[np.ndarray]:
    """The authors' scene frames of a shot: its grounding frames ranked by var of first differences of the channel
    mean (horizontal + vertical), sharpest first (ties in frame order), the first k."""
    _, frames = clip.grounding(GROUNDING_FRAMES)
    sharp = []
    for f in frames:
        gray = np.mean(f, axis=2).astype(np.float64)
        sharp.append(float(np.diff(gray, axis=1).var() + np.diff(gray, axis=0).var()))
    ranked = sorted(range(len(frames)), key=lambda i: sharp[i], reverse=True)
    return [frames[i] for i in ranked[:k]]


def llm_location_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, clips: dict,
                      embed: Optional[Callable],
                      embed_reason: Optional[str], ask_many, judge_reason: Optional[str] = None,
                      fidelity: Optional[dict] = None) -> list[dict]:
    """Locations on full frames as the authors' code judges them: ONE question per location over its admitted shots
    (present, through the fidelity gate), each shot's 2 sharpest grounding frames, <= 8 shots evenly sampled
    (judging.location_set_request). Per location: accuracy = all_consistent (0/1), mean_score = consistency / 10,
    the criteria / 10; episode value: mean over locations. (The paper text's pairwise-against-an-anchor variant is
    not run.) Instance: a location scheduled in >= 2 shots; fewer than 2 admitted shots is the generator's skip."""
    keys = {"benchmark": "entitybench", "generator": generator, "item": ep.episode_id}
    ids = llm_metric_ids("location")
    rows, jobs = [], []
    skipped = evaluator = failed = 0
    reasons: set[str] = set()
    ungated_by_loc: dict[str, list[int]] = {}
    lost = undelivered(grounding)
    for loc in (e for e in ep.entities if e.type == "location"):
        shots = ep.appearances(loc.id)
        if len(shots) < 2:
            continue
        missing = touched(ep, loc.id, lost)
        if missing:  # the location's instance reads all its shots (anchor, allcons over every pair)
            failed += 1
            why = f"{loc.id}: shots {missing} not delivered"
            reasons.add("a location's shot not delivered")
            rows.append(counts.failed_instance("llm_scene_accuracy", "entity", why, entity_id=loc.id, **keys))
            continue
        unknown = [k for k in shots if gate_unknown(fidelity or {}, k, loc.id)]
        if unknown:  # which shots are admitted is not known: the evaluator's failure, re-run once judged
            evaluator += 1
            reasons.add(f"{GATE_UNKNOWN} (fidelity question failed)")
            rows.append(counts.evaluator_instance("llm_scene_accuracy", "entity",
                                                  f"{loc.id}: {GATE_UNKNOWN} for shots {unknown}",
                                                  entity_id=loc.id, **keys))
            continue
        ok, gated, ungated = location_admitted(ep, grounding, fidelity or {}, clips, loc.id)
        ungated_by_loc[loc.id] = ungated
        if len(ok) < 2:
            skipped += 1
            why = f"{loc.id}: fewer than 2 admitted shots ({gated} gated out)"
            reasons.add(why)
            rows.append(instance_row("llm_scene_accuracy", None, "entity", entity_id=loc.id, reason=why, **keys))
            continue
        if judge_reason:
            evaluator += 1
            reasons.add(judge_reason)
            rows.append(counts.evaluator_instance("llm_scene_accuracy", "entity", judge_reason, entity_id=loc.id,
                                                  **keys))
            continue
        # the authors' vlm_judge_scene_set: one question over the admitted shots in shot order, each shot's 2
        # sharpest grounding frames (their scene-frame ranking), <= 8 shots evenly sampled by the request
        labels = [f"{ep.shots[k - 1].scene}:{ep.shots[k - 1].scene_shot}" if ep.shots[k - 1].scene is not None
                  else str(k) for k in ok]
        req, kept = judging.location_set_request(loc.name, loc.description, [scene_frames(clips[k]) for k in ok],
                                                 labels)
        jobs.append((loc, [ok[j] for j in kept], req))
    results = ask_many([j[-1] for j in jobs])
    vals: dict[str, list] = defaultdict(list)
    for (loc, sent, _), res in zip(jobs, results):
        if res.status != "ok":
            evaluator += 1
            reasons.add(res.reason or res.status)
            rows.append(counts.evaluator_instance("llm_scene_accuracy", "entity", res.reason, entity_id=loc.id,
                                                  **keys))
            continue
        sv = judging.location_set_values(res.answer)
        loc_vals = {"llm_scene_accuracy": sv["all_consistent"], "llm_scene_mean_score": sv["consistency"],
                    **{f"llm_scene_{c}": sv[c] for c in judging.CRITERIA["location"]}}
        detail = _answer_detail(res, shots=sent, ungated_shots=ungated_by_loc.get(loc.id, []))
        for m, v in loc_vals.items():
            vals[m].append(v)
            rows.append(instance_row(m, v, "entity", entity_id=loc.id, detail=detail, **keys))
    why = _why(reasons)
    for m in ids:
        n = skipped + failed + evaluator + len(vals[m])
        rows.append(counts.record(m, vals[m], n_skipped=skipped, n_failed=failed, n_failed_evaluator=evaluator,
                                  reason=why or (None if n else "no location scheduled in >= 2 shots"), **keys))
    return rows
