"""ViStoryBench score rows of one story: CIDS cross/self (and the additions over good-quality faces only) and
copy-paste per character, OCCM, CSD cross/self, aesthetics, and the evaluator's share of the failures. Pure (no
Dagster): the scores and alignment assets call these; the maths is in metrics.py."""

import json
from collections import defaultdict
from typing import Any, Optional

import numpy as np
import pandas as pd

from bench_assets.core.records import MetricRecord, record_from_values
from bench_assets.core.tables import instance_row, record_row
from bench_assets.vistorybench import characters, dataset, metrics
from bench_assets.vistorybench.constants import BENCH, STARRED_SCALE
from bench_assets.vistorybench.shots import shot_image
from bench_resources.judge import Judge, summarize_reasons
from bench_resources.models import face as face_mod

SCORE_METRICS = ("cids_cross", "cids_self", "cids_cross_good_faces_only", "cids_self_good_faces_only", "occm",
                 "copy_paste", "copy_paste_paper", "csd_cross", "csd_self", "aesthetics")
# additions beside the paper's CIDS (issue 23): the same value with faces below the quality floors set aside
GOOD_FACES = {"cids_cross": "cids_cross_good_faces_only", "cids_self": "cids_self_good_faces_only"}
CIDS = ("cids_cross", "cids_self", *GOOD_FACES.values())


def _quality(records: Any, n: int) -> list[Optional[list[str]]]:
    """Per row: the floors its face quality record is below ([] for a good face), None where no record was kept
    (a table written before records were kept, or a face model that does not measure quality)."""
    if records is None:
        return [None] * n
    return [None if q is None or (isinstance(q, float) and np.isnan(q)) else characters.low_quality(q)
            for q in records]


def good_faces_values(space: str, G: np.ndarray, R: np.ndarray, crop_low: list[Optional[list[str]]],
                      ref_low: list[Optional[list[str]]]) -> dict[str, tuple[Optional[float], Optional[str]]]:
    """Pure: the additions ``cids_cross_good_faces_only`` / ``cids_self_good_faces_only`` of one character (cosine,
    not yet x100), each (value, reason). Faces below the quality floors (crops in ``G`` and references in ``R``,
    their floors missed in ``crop_low`` / ``ref_low``) are set aside: a low-quality face says nothing about
    identity, so it neither lowers the value as another person would nor stands in for a good one. A character
    never matched counts 0 as in the paper (absence is not a quality question); one whose matched faces are all
    below the floors, or (cross) whose references all are, has no value, with the reason. Outside the face space
    the floors do not apply: the values are the paper's. Quality not recorded for a face: no value (unknown)."""
    out: dict[str, tuple[Optional[float], Optional[str]]] = {}
    if space != "face":
        return {GOOD_FACES["cids_cross"]: (metrics.cids_cross(G, R), None),
                GOOD_FACES["cids_self"]: (metrics.cids_self(G), None)}
    if len(G) == 0:
        return {GOOD_FACES["cids_cross"]: (0.0, None), GOOD_FACES["cids_self"]: (0.0, None)}
    unknown_crops = sum(1 for w in crop_low if w is None)
    unknown_refs = sum(1 for w in ref_low if w is None)
    good = np.array([w == [] for w in crop_low], dtype=bool)
    good_ref = np.array([w == [] for w in ref_low], dtype=bool)

    def floors(lows) -> str:   # the floors missed, each named once (size, blur, confidence), in order seen
        return ", ".join(dict.fromkeys(face_mod.floor_kind(x) for w in lows for x in w or []))

    no_good = (f"all {len(G)} matched faces are below the quality floors ({floors(crop_low)}): "
               f"nothing to say about identity") if not good.any() else None
    if unknown_crops:
        why = f"face quality not recorded for {unknown_crops} of {len(G)} matched faces"
        return {m: (None, why) for m in GOOD_FACES.values()}
    out[GOOD_FACES["cids_self"]] = (None, no_good) if no_good else (metrics.cids_self(G[good]), None)
    if no_good:
        out[GOOD_FACES["cids_cross"]] = (None, no_good)
    elif unknown_refs:
        out[GOOD_FACES["cids_cross"]] = (None, f"face quality not recorded for {unknown_refs} of {len(R)} "
                                               f"reference faces")
    elif not good_ref.any():
        out[GOOD_FACES["cids_cross"]] = (None, f"all {len(R)} reference faces are below the quality floors "
                                               f"({floors(ref_low)}): nothing to compare identity with")
    else:
        out[GOOD_FACES["cids_cross"]] = (metrics.cids_cross(G[good], R[good_ref]), None)
    return out


def character_rows(generator: str, story: dataset.Story, language: str, refs: pd.DataFrame, matches: pd.DataFrame,
                   scored_shots: list[int], single_reference: bool) -> list[dict]:
    """cids_cross, cids_self (and their good-faces-only additions), copy_paste, copy_paste_paper per character and
    per story (x100)."""
    keys = {"benchmark": BENCH, "generator": generator, "item": story.story_id}
    crops = matches[matches["kind"] == "crop"]
    scheduled = sorted({c for s in story.shots if s.index in scored_shots
                        for c in s.appearing.get(language, ())})
    detected, no_detection = detection_status(matches)
    vals: dict[str, list] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    skipped: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    n_low = 0       # matched face crops below the quality floors: reported as such, not scored as another person
    n_low_ref = 0   # reference faces below the floors (issue 23): counted and named, set aside by the additions
    rows = []
    for key in scheduled:
        # "never matched -> 0" holds only where detection ran: a character whose shots were never searched
        # (detector unavailable) is skipped with the detector's reason, not scored 0.
        its_shots = [s.index for s in story.shots if s.index in scored_shots and key in s.appearing.get(language, ())]
        if not any(i in detected for i in its_shots):
            why = "; ".join(sorted({no_detection.get(i) or "shot not searched for characters" for i in its_shots}))
            why = f"no character detection on its shots {its_shots}: {why}"
            for mid in ("copy_paste", "copy_paste_paper", *CIDS):
                skipped[mid] += 1
                reasons[mid].add(why if len(why) < 200 else why[:200])
            for mid in CIDS:
                rows.append(instance_row(mid, None, "character", reason=why, entity_id=key, **keys)
                            | {"n_skipped": 1, "n_failed": 0})
            continue
        tag = story.characters[key].tag
        space = characters.space_of(tag)
        r = refs[refs["character"] == key].sort_values("ref_index")
        ref_vecs = [np.asarray(v, np.float32) if v is not None else None for v in r["embedding"]]
        good_refs = [v for v in ref_vecs if v is not None]
        mine = crops[crops["matched"] == key]
        if not good_refs:
            why = str(r["reason"].dropna().iloc[0]) if r["reason"].notna().any() else "no reference vector"
            for mid in CIDS:
                failed[mid] += 1
                reasons[mid].add(f"{key}: {why}")
                rows.append(instance_row(mid, None, "character", reason=why, entity_id=key, **keys)
                            | {"n_skipped": 0, "n_failed": 1})
            continue
        # face quality per crop and per reference (size, blur, detector confidence; issue 23): the paper's CIDS
        # reads every matched crop and every reference and stays as defined; a face below the floors is counted
        # apart (n_low_quality, n_low_quality_references) with its reason, and the additions beside the paper's
        # values set those faces aside, so a reader can tell "low quality" from "another person" (on the embedded
        # 256x160 shots every realistic face is below the floors: excluding them would change the paper's
        # numbers everywhere)
        face = space == "face"
        low = (_quality(mine["face_quality"] if "face_quality" in mine.columns else None, len(mine))
               if face else [[] for _ in range(len(mine))])
        with_vec = [i for i, v in enumerate(ref_vecs) if v is not None]
        ref_quality = r["face_quality"].tolist() if "face_quality" in r.columns else None
        ref_low_all = _quality(ref_quality, len(r)) if face else [[] for _ in range(len(r))]
        ref_low = [ref_low_all[i] for i in with_vec]
        R = np.stack(good_refs)
        G = np.stack([np.asarray(v, np.float32) for v in mine[space]]) if len(mine) else np.zeros((0, R.shape[1]))
        detail = {"matched_crops": len(mine), "references": len(good_refs), "space": space,
                  "crop_ids": list(mine["crop_id"]), "shots": [int(s) for s in mine["shot"]]}
        good = np.array([not w for w in low], dtype=bool)
        n_low += int((~good).sum()) if face else 0
        added = good_faces_values(space, G, R, low, ref_low)
        if face:
            detail["n_low_quality"] = int(sum(1 for w in low if w))
            detail["low_quality_crops"] = {c: "; ".join(w) for c, w in zip(mine["crop_id"], low) if w}
            ref_index = [int(x) for x in r["ref_index"]]
            detail["n_low_quality_references"] = int(sum(1 for w in ref_low_all if w))
            detail["low_quality_references"] = {str(ref_index[i]): "; ".join(w) for i, w in enumerate(ref_low_all)
                                                if w}
            n_low_ref += detail["n_low_quality_references"]
            if any(w is None for w in low) or any(w is None for w in ref_low):
                detail["face_quality_not_recorded"] = {"crops": sum(1 for w in low if w is None),
                                                       "references": sum(1 for w in ref_low if w is None)}
            for mid, add in GOOD_FACES.items():   # kept in the detail beside the paper's value (x100)
                v = added[add][0]
                detail[add] = None if v is None or not np.isfinite(v) else v * STARRED_SCALE
        for mid, v in (("cids_cross", metrics.cids_cross(G, R)), ("cids_self", metrics.cids_self(G))):
            vals[mid].append(v * STARRED_SCALE)
            rows.append(instance_row(mid, v * STARRED_SCALE, "character", entity_id=key, detail=detail, **keys))
        for add, (v, why) in added.items():
            if v is None or not np.isfinite(v):
                skipped[add] += 1
                reasons[add].add(f"{key}: {why or 'no value'}")
                rows.append(instance_row(add, None, "character", reason=why or "no value", entity_id=key,
                                         detail=detail, **keys))
            else:
                vals[add].append(v * STARRED_SCALE)
                rows.append(instance_row(add, v * STARRED_SCALE, "character", entity_id=key, detail=detail, **keys))
        # per matched crop: its share of each character value, keyed to the crop and the shot image it came from
        sims = G @ G.T
        for j, c in enumerate(mine.itertuples()):
            crop_keys = dict(shot=int(c.shot), entity_id=key, crop_id=c.crop_id, source_sha256=c.source_sha256, **keys)
            rows.append(instance_row("cids_cross", float((R @ G[j]).mean()) * STARRED_SCALE, "crop",
                                     reason=("low-quality face: " + "; ".join(low[j])) if low[j] else None,
                                     detail={"match_score": c.match_score, "box": json.loads(c.box),
                                             **({"face_quality": json.loads(c.face_quality)}
                                                if isinstance(getattr(c, "face_quality", None), str) else {})},
                                     **crop_keys))
            if len(G) > 1:
                rows.append(instance_row("cids_self", float(np.delete(sims[j], j).mean()) * STARRED_SCALE, "crop",
                                         **crop_keys))
        if not len(mine):
            continue
        # copy-paste against the first reference ("the reference used") and its mirror image
        if ref_vecs[0] is not None and single_reference:
            mirror = r["mirror_embedding"].iloc[0]
            if mirror is not None:
                p = [metrics.copy_paste_probability(g, ref_vecs[0], np.asarray(mirror, np.float32)) for g in G]
                v = float(np.mean(p)) * STARRED_SCALE
                vals["copy_paste"].append(v)
                rows.append(instance_row("copy_paste", v, "character", entity_id=key,
                                         detail={"per_crop": [round(x, 4) for x in p]}, **keys))
            others = [x for x in ref_vecs[1:] if x is not None]
            if others:
                d = [metrics.copy_paste_paper(g, ref_vecs[0], np.stack(others)) for g in G]
                v = float(np.mean(d)) * STARRED_SCALE
                vals["copy_paste_paper"].append(v)
                rows.append(instance_row("copy_paste_paper", v, "character", entity_id=key,
                                         detail={"per_crop": [round(x, 4) for x in d]}, **keys))
    for mid in ("cids_cross", "cids_self", "copy_paste", "copy_paste_paper", *GOOD_FACES.values()):
        why = "; ".join(sorted(reasons[mid])) or None
        if mid.startswith("copy_paste") and not vals[mid]:
            why = ("generator declares multiple references (copy_paste applies to single-reference methods)"
                   if not single_reference else why if skipped[mid] else
                   "no matched character with a usable first reference" if mid == "copy_paste" else
                   "no matched character with >= 2 references")
        n_skipped = skipped[mid] if not mid.startswith("copy_paste") or single_reference else 0
        if why is not None and len(why) > 800:
            why = why[:797] + "..."
        row = record_row(record_from_values(mid, vals[mid], n_failed=failed[mid], n_skipped=n_skipped, reason=why),
                         **keys)
        if mid in CIDS:
            row["detail"] = json.dumps({"n_low_quality": n_low, "n_low_quality_references": n_low_ref,
                                        "low_quality_floors": face_floors()}, sort_keys=True)
        rows.append(row)
    return rows


def face_floors() -> dict:
    """The face-quality floors a low-quality face is below (models.face), written beside ``n_low_quality``."""
    return {"confidence": face_mod.QUALITY_MIN_CONFIDENCE, "size_px": face_mod.QUALITY_MIN_SIZE_PX,
            "blur": face_mod.QUALITY_MIN_BLUR}


def detection_status(matches: pd.DataFrame) -> tuple[set[int], dict[int, str]]:
    """(shots where character detection ran, shot -> reason for the shots where it did not)."""
    if not len(matches) or "kind" not in matches.columns:
        return set(), {}
    shots = matches[matches["kind"] == "shot"]
    ran = shots["n_detections"].notna()
    return ({int(x) for x in shots.loc[ran, "shot"]},
            {int(r.shot): (str(r.reason) if isinstance(r.reason, str) else "detector did not run")
             for r in shots[~ran].itertuples()})


def occm_rows(generator: str, story: dataset.Story, matches: pd.DataFrame) -> list[dict]:
    keys = {"benchmark": BENCH, "generator": generator, "item": story.story_id}
    rows, vals, skipped, reasons = [], [], 0, set()
    for s in matches[matches["kind"] == "shot"].itertuples():
        expected = len(json.loads(s.on_stage))
        if s.n_detections is None or pd.isna(s.n_detections):
            skipped += 1
            reasons.add(str(s.reason))
            continue
        v = metrics.occm(int(s.n_detections), expected)
        if v is None:
            continue  # no scheduled character: not an instance
        vals.append(v)
        rows.append(instance_row("occm", v, "shot", shot=int(s.shot), source_sha256=s.source_sha256,
                                 detail={"detected": int(s.n_detections), "expected": expected}, **keys))
    rows.append(record_row(record_from_values("occm", vals, n_skipped=skipped,
                                              reason="; ".join(sorted(reasons)) or None), **keys))
    return rows


def style_rows(generator: str, story: dataset.Story, language: str, refs: pd.DataFrame, shots: pd.DataFrame,
               style, style_reason: Optional[str]) -> list[dict]:
    keys = {"benchmark": BENCH, "generator": generator, "item": story.story_id}
    if style is None:
        return [record_row(MetricRecord(m, None, 0, 0, len(shots), style_reason), **keys)
                for m in ("csd_cross", "csd_self")]
    first_ref = {r.character: np.asarray(r.style, np.float32) for r in refs.itertuples()
                 if r.ref_index == 0 and r.style is not None}
    shot_styles = style.embed([shot_image(p) for p in shots["path"]])
    rows, cross = [], []
    for (r, s) in zip(shots.itertuples(), shot_styles):
        on = [c for c in story.on_stage(int(r.shot), language) if c in first_ref] \
            if language in story.shot(int(r.shot)).appearing else []
        if not on:  # nobody on stage: the official code (CSDEvaluator) compares with the story's first character
            on = [c for c in story.characters if c in first_ref][:1]   # that has a reference image (paper silent)
        v = metrics.style_cross(s, np.stack([first_ref[c] for c in on])) if on else None
        if v is None:
            continue  # nobody on stage: not an instance of csd_cross
        cross.append(v * STARRED_SCALE)
        rows.append(instance_row("csd_cross", v * STARRED_SCALE, "shot", shot=int(r.shot),
                                 source_sha256=r.sha256, **keys))
    rows.append(record_row(record_from_values("csd_cross", cross), **keys))
    v = metrics.style_self(np.asarray(shot_styles))
    rows.append(record_row(MetricRecord("csd_self", v * STARRED_SCALE if v is not None else None,
                                        len(shot_styles) if v is not None else 0, 0,
                                        0 if v is not None else len(shot_styles),
                                        None if v is not None else "fewer than 2 shots"), **keys))
    return rows


def aesthetic_rows(generator: str, story: dataset.Story, shots: pd.DataFrame, model,
                   reason: Optional[str]) -> list[dict]:
    keys = {"benchmark": BENCH, "generator": generator, "item": story.story_id}
    if model is None:
        return [record_row(MetricRecord("aesthetics", None, 0, 0, len(shots), reason), **keys)]
    scores = model.score([shot_image(p) for p in shots["path"]])
    rows = [instance_row("aesthetics", float(v), "shot", shot=int(r.shot), source_sha256=r.sha256, **keys)
            for r, v in zip(shots.itertuples(), scores)]
    rows.append(record_row(record_from_values("aesthetics", [float(v) for v in scores]), **keys))
    return rows


def story_failed_rows(generator: str, sid: str, metric_ids, error: str) -> list[dict]:
    keys = {"benchmark": BENCH, "generator": generator, "item": sid}
    return [record_row(MetricRecord(m, None, 0, 1, 0, error), **keys) for m in metric_ids]


def with_evaluator_counts(df: pd.DataFrame, evaluator_reasons: list[str], everything: bool = False) -> pd.DataFrame:
    """Add ``n_failed_evaluator``: the part of a row's n_failed + n_skipped caused by the evaluator (a missing model
    slot, the judge), kept apart from the generator's (missing or misaligned outputs). ``everything``: every
    failure of the table is the evaluator's (judge rows), except story errors (the generator's outputs)."""
    lost = (df["n_failed"].fillna(0) + df["n_skipped"].fillna(0)).astype("Int64")
    reason = df["reason"].fillna("").astype(str)
    if everything:
        mine = pd.Series(True, index=df.index)
    else:
        mine = pd.Series(False, index=df.index)
        for r in (r for r in evaluator_reasons if r):
            mine |= reason.str.contains(r, regex=False)
    out = df.copy()
    out["n_failed_evaluator"] = lost.where(mine, 0).astype("Int64")
    return out


def evaluator_metadata(df: pd.DataFrame, judge: Optional[Judge] = None) -> dict[str, Any]:
    """``evaluator_failures`` (int) and ``evaluator_failure_reasons`` over the item-level rows (the runner
    re-evaluates partitions that had some when the evaluator's state changes), plus the judge's state digest."""
    items = df[(df["level"] == "item") & (df["n_failed_evaluator"] > 0)] if len(df) else df
    meta: dict[str, Any] = {
        "evaluator_failures": int(items["n_failed_evaluator"].sum()) if len(items) else 0,
        "evaluator_failure_reasons": summarize_reasons(
            r for r, n in zip(items["reason"].astype(str), items["n_failed_evaluator"]) for _ in range(int(n)))}
    if judge is not None:
        meta["judge_state"] = judge.state_digest()
    return meta
