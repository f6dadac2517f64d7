"""ViStoryBench wiring: partitions (generator x story), resources, metadata. Math lives in metrics.py,
per-story model work in characters.py."""

import hashlib
import json
from collections import defaultdict
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, AutomationCondition, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.generators import GeneratorError, read_generator
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.metric_spec import label_substitutes
from bench_assets.core.records import MetricRecord, record_from_values
from bench_assets.core.tables import instance_row, metric_frame, record_row
from bench_assets.core.slots import load_slot
from bench_assets.vistorybench import board
from bench_assets.vistorybench import characters
from bench_assets.vistorybench import dataset
from bench_assets.vistorybench import human_alignment
from bench_assets.vistorybench import judging
from bench_assets.vistorybench import metrics
from bench_assets.vistorybench.constants import BENCH, CONSTANTS, PROTOCOL, SLOTS, STARRED_SCALE
from bench_assets.vistorybench.metric_specs import METRICS, label_rows
from bench_resources.device import Device
from bench_resources.judge import Judge, summarize_reasons
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

P = BenchmarkPartitions(BENCH)
GROUP = "vistorybench"
SCORE_METRICS = ("cids_cross", "cids_self", "occm", "copy_paste", "copy_paste_paper", "csd_cross", "csd_self",
                 "aesthetics")
ALIGNMENT_SUBSCORES = tuple(f"alignment.{a}" for a in metrics.ALIGNMENT_ASPECTS)  # 0-4, the paper's Table 7 scale


def slot_manifest(models: ModelRegistry, names=SLOTS) -> dict[str, Any]:
    return models.manifest(names)


def vistorybench_manifest(models: ModelRegistry, judge: Judge) -> dict[str, Any]:
    m = build_manifest(benchmark=BENCH, protocol=PROTOCOL, models=slot_manifest(models), judge=judge.fingerprint(),
                       constants=CONSTANTS)
    m["profile"] = models.profile
    m["judge_mode"] = judge.mode
    return m


def _protocol(models: ModelRegistry, judge: Optional[Judge] = None) -> str:
    return protocol_digest({"protocol": PROTOCOL, "models": slot_manifest(models), "constants": CONSTANTS,
                            "judge": judge.fingerprint() if judge is not None else None})


def _language(paths: BenchPaths, generator: str) -> str:
    try:
        card = read_generator(paths.generator_dir(generator)).card
    except (GeneratorError, FileNotFoundError) as e:
        raise Failure(f"generator {generator!r}: {e}") from None
    lang = card.get("language", "en")
    if lang not in dataset.LANGUAGES:
        raise Failure(f"generator {generator!r}: language {lang!r} is not one of {list(dataset.LANGUAGES)}")
    return lang


@lru_cache(maxsize=512)
def _image(path: str, mtime_ns: int) -> np.ndarray:
    return dataset.read_shot_image(path)


def shot_image(path: str) -> np.ndarray:
    """Each shot image is decoded once per process, whichever asset asks first."""
    return _image(path, Path(path).stat().st_mtime_ns)


def _story(df: pd.DataFrame) -> dataset.Story:
    return dataset.story_from_json(json.loads(df["story_json"].iloc[0]))


def spaces(story: dataset.Story) -> dict[str, str]:
    """character -> its identity space ('face' | 'features'): which encoder, hence which substitute, scored it."""
    return {k: characters.space_of(c.tag) for k, c in story.characters.items()}


# ----------------------------------------------------------------------------------------- dataset

@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def vistorybench_story(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One story of the release (both languages), validated: characters, reference folders, shots."""
    try:
        story = dataset.load_story(paths.benchmark_dir(BENCH) / context.partition_key)
    except dataset.StoryError as e:
        raise Failure(description=str(e)) from None
    tags = {k: c.tag for k, c in story.characters.items()}
    df = pd.DataFrame([{"story_id": story.story_id, "lite": story.lite, "n_shots": len(story.shots),
                        "n_characters": len(story.characters), "tags": json.dumps(tags, sort_keys=True),
                        "n_references": sum(len(c.references) for c in story.characters.values()),
                        "story_json": json.dumps(story.to_json(), ensure_ascii=False, sort_keys=True),
                        "warnings": "; ".join(story.warnings)}])
    return Output(df, metadata={"shots": len(story.shots), "characters": len(story.characters), "lite": story.lite,
                                "tags": MetadataValue.json(tags)})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", pool="gpu", op_tags=GPU_OP_TAGS)
def vistorybench_references(context: AssetExecutionContext, vistorybench_story: pd.DataFrame, models: ModelRegistry,
                            device: Device, store: Store) -> Output[pd.DataFrame]:
    """Per reference image: the top-1 'character' box (whole image if none), its crop, the identity vector in the
    character's space (face for realistic humans), the mirrored crop's vector, and the CSD style vector."""
    story = _story(vistorybench_story)
    detector, det_reason = load_slot(models, device, "character_detector")
    enc = encoders(models, device)
    style, style_reason = load_slot(models, device, "style_csd")
    rows = []
    for key, ch in story.characters.items():
        space = characters.space_of(ch.tag)
        for i, ref in enumerate(ch.references):
            image = dataset.read_image(ref)
            box, conf = characters.top_box(detector, image) if detector is not None else (None, None)
            crop = characters.crop_box(image, box) if box is not None else None
            crop = image if crop is None else crop
            vec, mirror = characters.embed(enc, space, [crop, np.ascontiguousarray(crop[:, ::-1])])
            reason = enc.reason(space) if not enc.available(space) else (
                "no face found on the reference" if vec is None else None)
            rows.append({"story_id": story.story_id, "character": key, "tag": ch.tag, "space": space, "ref_index": i,
                         "ref_path": ref, "ref_sha256": store.put_bytes(Path(ref).read_bytes(), Path(ref).suffix[1:].lower()),
                         "box": json.dumps(box), "box_confidence": conf,
                         "detector_reason": det_reason if detector is None else None,
                         "crop_id": store.put_png(crop),
                         "embedding": vec.tolist() if vec is not None else None,
                         "mirror_embedding": mirror.tolist() if mirror is not None else None,
                         "style": (style.embed([image])[0].tolist() if style is not None and i == 0 else None),
                         "reason": reason})
    df = pd.DataFrame(rows)
    return Output(df, metadata={"references": len(df), "embedded": int(df["embedding"].notna().sum()),
                                "style": style_reason or "CSD", "models": MetadataValue.json(slot_manifest(models))})


def encoders(models: ModelRegistry, device: Device) -> characters.Encoders:
    face, face_reason = load_slot(models, device, "face")
    feats, feats_reason = load_slot(models, device, "character_embedder")
    return characters.Encoders(face, face_reason, feats, feats_reason)


# ----------------------------------------------------------------------------------------- outputs

@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="2")
def vistorybench_outputs(context: AssetExecutionContext, paths: BenchPaths,
                         vistorybench_story: pd.DataFrame) -> Output[pd.DataFrame]:
    """Index of one generator's shot images for one story, validated against the story's 1-based indices.
    A misaligned set (0-based, beyond the story, duplicates) is one error row for the story; missing shots are
    listed; nothing is shifted."""
    generator, sid = P.split(context.partition_key)
    story = _story(vistorybench_story)
    language = _language(paths, generator)
    base = {"generator": generator, "story_id": sid, "language": language}
    rows = []
    try:
        index = dataset.index_outputs(story, paths.generator_dir(generator) / sid, generator)
    except dataset.OutputError as e:
        context.log.error(str(e))
        df = pd.DataFrame([{**base, "shot": None, "path": None, "sha256": None, "status": "story_error",
                            "error": str(e)}])
        return Output(df, metadata={"error": MetadataValue.text(str(e))})
    if index.warning:
        context.log.warning(index.warning)
    for s in story.shots:
        path = index.files.get(s.index)
        row = {**base, "shot": s.index, "path": path, "sha256": None, "status": "ok", "error": None}
        if path is None:
            row.update(status="missing", error=index.warning or
                       f"generator {generator!r}, story {sid}: shot {s.index} has no output")
        else:
            try:
                shot_image(path)
                row["sha256"] = hashlib.sha256(Path(path).read_bytes()).hexdigest()
            except dataset.ShotReadError as e:
                row.update(status="unreadable", error=f"generator {generator!r}, story {sid}: {e}")
        rows.append(row)
    df = pd.DataFrame(rows)
    bad = df[df.status != "ok"]
    for e in bad["error"]:
        context.log.warning(e)
    return Output(df, metadata={"shots": len(df), "ok": int((df.status == "ok").sum()),
                                "missing": MetadataValue.json([int(x) for x in bad["shot"]]),
                                "warning": MetadataValue.text(index.warning or "none"),
                                "language": language})


def _ok_shots(outputs: pd.DataFrame) -> pd.DataFrame:
    return outputs[outputs["status"] == "ok"]


def _story_error(outputs: pd.DataFrame) -> Optional[str]:
    err = outputs[outputs["status"] == "story_error"]
    return str(err["error"].iloc[0]) if len(err) else None


# ----------------------------------------------------------------------------------------- characters

@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="1", pool="gpu", op_tags=GPU_OP_TAGS)
def vistorybench_matches(context: AssetExecutionContext, vistorybench_outputs: pd.DataFrame,
                         vistorybench_story: pd.DataFrame, vistorybench_references: pd.DataFrame,
                         models: ModelRegistry, device: Device, store: Store) -> Output[pd.DataFrame]:
    """Per shot: every 'character' box (OCCM's D), each crop's vectors in both spaces, and the Hungarian assignment
    of the on-stage characters to crops."""
    generator, sid = P.split(context.partition_key)
    story = _story(vistorybench_story)
    detector, det_reason = load_slot(models, device, "character_detector")
    enc = encoders(models, device)
    refs = reference_vectors(vistorybench_references)
    tags = {k: c.tag for k, c in story.characters.items()}
    rows = []
    for r in _ok_shots(vistorybench_outputs).itertuples():
        shot = int(r.shot)
        language = r.language
        on_stage = list(story.on_stage(shot, language)) if language in story.shot(shot).appearing else []
        base = {"generator": generator, "story_id": sid, "shot": shot, "source_sha256": r.sha256}
        if detector is None:
            rows.append({**base, "kind": "shot", "n_detections": None, "on_stage": json.dumps(on_stage),
                         "reason": det_reason})
            continue
        image = shot_image(r.path)
        dets = detector.detect([image], "character")[0]
        rows.append({**base, "kind": "shot", "n_detections": len(dets), "on_stage": json.dumps(on_stage),
                     "reason": None})
        crops, boxes = [], []
        for j in range(len(dets)):
            crop = characters.crop_box(image, dets.xyxy[j])
            if crop is not None:
                crops.append(crop)
                boxes.append((dets.xyxy[j], float(dets.confidence[j])))
        needed = {characters.space_of(tags[c]) for c in on_stage}
        vecs = {sp: characters.embed(enc, sp, crops) if sp in needed else [None] * len(crops)
                for sp in characters.SPACES}
        assignment = {j: (c, s) for c, j, s in characters.match_shot(on_stage, tags, refs, vecs)}
        for j, (crop, (box, conf)) in enumerate(zip(crops, boxes)):
            who, score = assignment.get(j, (None, None))
            rows.append({**base, "kind": "crop", "crop_index": j, "box": json.dumps([float(v) for v in box]),
                         "confidence": conf, "crop_id": store.put_png(crop),
                         "face": vecs["face"][j].tolist() if vecs["face"][j] is not None else None,
                         "features": vecs["features"][j].tolist() if vecs["features"][j] is not None else None,
                         "matched": who, "match_score": score})
    df = pd.DataFrame(rows)
    for col in ("kind", "crop_index", "box", "confidence", "crop_id", "face", "features", "matched", "match_score",
                "n_detections", "on_stage", "reason"):
        if col not in df.columns:
            df[col] = None
    crops_df = df[df["kind"] == "crop"]
    unsearched = df[(df["kind"] == "shot") & df["n_detections"].isna()] if len(df) else df
    return Output(df, metadata={"shots": int((df["kind"] == "shot").sum()) if len(df) else 0,
                                "crops": len(crops_df), "matched": int(crops_df["matched"].notna().sum()),
                                "evaluator_failures": len(unsearched),
                                "evaluator_failure_reasons": summarize_reasons(unsearched["reason"]
                                                                               if len(unsearched) else [])})


def reference_vectors(refs: pd.DataFrame) -> dict[str, np.ndarray]:
    """character -> [k, d] vectors of the references that could be embedded (in the character's space)."""
    out = {}
    for key, g in refs.groupby("character"):
        vecs = [np.asarray(v, np.float32) for v in g.sort_values("ref_index")["embedding"] if v is not None]
        out[str(key)] = np.stack(vecs) if vecs else np.zeros((0, 0), np.float32)
    return out


# ----------------------------------------------------------------------------------------- scores

def character_rows(generator: str, story: dataset.Story, language: str, refs: pd.DataFrame, matches: pd.DataFrame,
                   scored_shots: list[int], single_reference: bool) -> list[dict]:
    """cids_cross, cids_self, copy_paste, copy_paste_paper per character and per story (x100)."""
    keys = {"benchmark": BENCH, "generator": generator, "item": story.story_id}
    crops = matches[matches["kind"] == "crop"]
    scheduled = sorted({c for s in story.shots if s.index in scored_shots
                        for c in s.appearing.get(language, ())})
    detected, no_detection = detection_status(matches)
    vals: dict[str, list] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    skipped: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    rows = []
    for key in scheduled:
        # "never matched -> 0" holds only where detection ran: a character whose shots were never searched
        # (detector unavailable) is skipped with the detector's reason, not scored 0.
        its_shots = [s.index for s in story.shots if s.index in scored_shots and key in s.appearing.get(language, ())]
        if not any(i in detected for i in its_shots):
            why = "; ".join(sorted({no_detection.get(i) or "shot not searched for characters" for i in its_shots}))
            why = f"no character detection on its shots {its_shots}: {why}"
            for mid in ("cids_cross", "cids_self", "copy_paste", "copy_paste_paper"):
                skipped[mid] += 1
                reasons[mid].add(why if len(why) < 200 else why[:200])
            for mid in ("cids_cross", "cids_self"):
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
            for mid in ("cids_cross", "cids_self"):
                failed[mid] += 1
                reasons[mid].add(f"{key}: {why}")
                rows.append(instance_row(mid, None, "character", reason=why, entity_id=key, **keys)
                            | {"n_skipped": 0, "n_failed": 1})
            continue
        R = np.stack(good_refs)
        G = np.stack([np.asarray(v, np.float32) for v in mine[space]]) if len(mine) else np.zeros((0, R.shape[1]))
        detail = {"matched_crops": len(mine), "references": len(good_refs), "space": space,
                  "crop_ids": list(mine["crop_id"]), "shots": [int(s) for s in mine["shot"]]}
        for mid, v in (("cids_cross", metrics.cids_cross(G, R)), ("cids_self", metrics.cids_self(G))):
            vals[mid].append(v * STARRED_SCALE)
            rows.append(instance_row(mid, v * STARRED_SCALE, "character", entity_id=key, detail=detail, **keys))
        # per matched crop: its share of each character value, keyed to the crop and the shot image it came from
        sims = G @ G.T
        for j, c in enumerate(mine.itertuples()):
            crop_keys = dict(shot=int(c.shot), entity_id=key, crop_id=c.crop_id, source_sha256=c.source_sha256, **keys)
            rows.append(instance_row("cids_cross", float((R @ G[j]).mean()) * STARRED_SCALE, "crop",
                                     detail={"match_score": c.match_score, "box": json.loads(c.box)}, **crop_keys))
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
    for mid in ("cids_cross", "cids_self", "copy_paste", "copy_paste_paper"):
        why = "; ".join(sorted(reasons[mid])) or None
        if mid.startswith("copy_paste") and not vals[mid]:
            why = ("generator declares multiple references (copy_paste applies to single-reference methods)"
                   if not single_reference else why if skipped[mid] else
                   "no matched character with a usable first reference" if mid == "copy_paste" else
                   "no matched character with >= 2 references")
        n_skipped = skipped[mid] if not mid.startswith("copy_paste") or single_reference else 0
        rows.append(record_row(record_from_values(mid, vals[mid], n_failed=failed[mid], n_skipped=n_skipped,
                                                  reason=why), **keys))
    return rows


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


def _story_failed_rows(generator: str, sid: str, metric_ids, error: str) -> list[dict]:
    keys = {"benchmark": BENCH, "generator": generator, "item": sid}
    return [record_row(MetricRecord(m, None, 0, 1, 0, error), **keys) for m in metric_ids]


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="4", pool="gpu", op_tags=GPU_OP_TAGS)
def vistorybench_scores(context: AssetExecutionContext, paths: BenchPaths, vistorybench_outputs: pd.DataFrame,
                        vistorybench_story: pd.DataFrame, vistorybench_references: pd.DataFrame,
                        vistorybench_matches: pd.DataFrame, models: ModelRegistry,
                        device: Device) -> Output[pd.DataFrame]:
    """Per story: CIDS cross/self, OCCM, copy-paste (1.3 and paper), CSD cross/self, aesthetics, with per-character
    and per-shot provenance rows (crop ids, source hashes)."""
    generator, sid = P.split(context.partition_key)
    story = _story(vistorybench_story)
    err = _story_error(vistorybench_outputs)
    if err:
        df = metric_frame(_story_failed_rows(generator, sid, SCORE_METRICS, err))
    else:
        card = read_generator(paths.generator_dir(generator)).card
        single = card.get("reference_mode", "single") == "single"
        shots = _ok_shots(vistorybench_outputs)
        language = str(shots["language"].iloc[0]) if len(shots) else "en"
        scored = [int(s) for s in shots["shot"]]
        style, style_reason = load_slot(models, device, "style_csd")
        aesthetic, aesthetic_reason = load_slot(models, device, "aesthetic_v25")
        enc = encoders(models, device)
        slot_reasons = [style_reason, aesthetic_reason, enc.face_reason, enc.features_reason,
                        load_slot(models, device, "character_detector")[1], "no character detection on its shots"]
        rows = (character_rows(generator, story, language, vistorybench_references, vistorybench_matches, scored,
                               single)
                + occm_rows(generator, story, vistorybench_matches)
                + style_rows(generator, story, language, vistorybench_references, shots, style, style_reason)
                + aesthetic_rows(generator, story, shots, aesthetic, aesthetic_reason))
        df = with_evaluator_counts(metric_frame(rows), [r for r in slot_reasons if r])
    if err:
        df = with_evaluator_counts(df, [])  # misaligned outputs: the generator's failure, not the evaluator's
    df["protocol"] = _protocol(models)
    df = label_rows(df, models, spaces(story))
    items = df[df.level == "item"]
    return Output(df, metadata={**{r.metric_id: (round(float(r.value), 3) if pd.notna(r.value) else "None")
                                   for r in items.itertuples()}, **evaluator_metadata(df)})


# ----------------------------------------------------------------------------------------- alignment (judge)

def alignment_requests(story: dataset.Story, language: str, shots: pd.DataFrame, matches: pd.DataFrame, store: Store):
    """(aspect, shot, character, request) for every judge question of one story."""
    out = []
    crops = matches[matches["kind"] == "crop"] if len(matches) else matches
    for r in shots.itertuples():
        shot = story.shot(int(r.shot))
        image = shot_image(r.path)
        for aspect, field in (("scene", "Setting Description"), ("camera", "Shot Perspective Design"),
                              ("character_action", "Static Shot Description")):
            text = shot.text[field].get(language)
            if text:
                out.append((aspect, shot.index, None, judging.shot_request(aspect, text, language, image)))
        action = shot.text["Static Shot Description"].get(language, "")
        for c in crops[(crops["shot"] == shot.index) & crops["matched"].notna()].itertuples():
            name = story.characters[c.matched].names.get(language, c.matched)
            out.append(("single_character_action", shot.index, c.matched,
                        judging.single_character_request(name, action, language, store.get_png(c.crop_id))))
    return out


def alignment_rows(generator: str, sid: str, asked: list[tuple], results) -> list[dict]:
    """Per question (0-4), per aspect (mean 0-4, the paper's Table 7 scale) and the story's alignment (mean of the
    aspect means x 25). A question the judge did not answer is n_failed / n_skipped with its reason, never 0."""
    keys = {"benchmark": BENCH, "generator": generator, "item": sid}
    rows, by_aspect = [], defaultdict(list)
    counts = {a: {"failed": 0, "skipped": 0, "reasons": set()} for a in metrics.ALIGNMENT_ASPECTS}
    for (aspect, shot, character, _), res in zip(asked, results):
        detail = {"aspect": aspect, "cache_key": res.cache_key, "answer": res.answer, "model": res.model}
        if res.status == "ok":
            by_aspect[aspect].append(float(res.answer["score"]))
            rows.append(instance_row(f"alignment.{aspect}", float(res.answer["score"]), "question", shot=shot,
                                     entity_id=character, detail=detail, **keys))
        else:
            c = counts[aspect]
            c["failed"] += res.status == "failed"
            c["skipped"] += res.status == "skipped"
            c["reasons"].add(f"judge {res.status}: {res.reason}")
            rows.append(instance_row(f"alignment.{aspect}", None, "question", shot=shot, entity_id=character,
                                     reason=f"judge {res.status}: {res.reason}", detail=detail, **keys)
                        | {"n_failed": int(res.status == "failed"), "n_skipped": int(res.status == "skipped")})
    value, missing = metrics.alignment_score(by_aspect)
    n = sum(len(v) for v in by_aspect.values())
    failed = sum(c["failed"] for c in counts.values())
    skipped = sum(c["skipped"] for c in counts.values())
    why = "; ".join(sorted(set().union(*(c["reasons"] for c in counts.values()))))[:500] or None
    if missing and value is not None:
        why = "; ".join(x for x in (why, f"aspects without an answer: {missing}") if x)
    rows.append(record_row(MetricRecord("alignment", value, n if value is not None else 0, failed, skipped,
                                        why if (why or value is None) else None), **keys))
    for aspect in metrics.ALIGNMENT_ASPECTS:
        v, c = by_aspect.get(aspect), counts[aspect]
        reason = "; ".join(sorted(c["reasons"]))[:500] or (None if v else "no question of this aspect was asked")
        rows.append(record_row(MetricRecord(f"alignment.{aspect}", float(np.mean(v)) if v else None,
                                            len(v) if v else 0, c["failed"], c["skipped"], reason), **keys))
    return rows


def alignment_unavailable_rows(generator: str, sid: str, asked: list[tuple], why: str) -> list[dict]:
    """The judge cannot be asked (off, no key): every question skipped with the reason, per aspect and overall."""
    keys = {"benchmark": BENCH, "generator": generator, "item": sid}
    per = {a: sum(1 for q in asked if q[0] == a) for a in metrics.ALIGNMENT_ASPECTS}
    return ([record_row(MetricRecord("alignment", None, 0, 0, len(asked), why), **keys)]
            + [record_row(MetricRecord(f"alignment.{a}", None, 0, 0, per[a], why), **keys)
               for a in metrics.ALIGNMENT_ASPECTS])


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


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="3")
def vistorybench_alignment(context: AssetExecutionContext, vistorybench_outputs: pd.DataFrame,
                           vistorybench_story: pd.DataFrame, vistorybench_matches: pd.DataFrame, judge: Judge,
                           models: ModelRegistry, store: Store) -> Output[pd.DataFrame]:
    """Prompt alignment through the judge: scene, camera, character action (whole shot) and single-character
    action (each matched crop with its name), 0-4 each; alignment = mean of aspect means x 25."""
    generator, sid = P.split(context.partition_key)
    story = _story(vistorybench_story)
    err = _story_error(vistorybench_outputs)
    if err:
        df = metric_frame(_story_failed_rows(generator, sid, ["alignment", *ALIGNMENT_SUBSCORES], err))
    else:
        shots = _ok_shots(vistorybench_outputs)
        language = str(shots["language"].iloc[0]) if len(shots) else "en"
        asked = alignment_requests(story, language, shots, vistorybench_matches, store)
        ok, why = judge.available()
        if not ok:
            df = metric_frame(alignment_unavailable_rows(generator, sid, asked, why))
        else:
            results = judge.ask_many([a[3] for a in asked])
            df = metric_frame(alignment_rows(generator, sid, asked, results))
    df = with_evaluator_counts(df, [], everything=not err)
    df["protocol"] = _protocol(models, judge)
    df = label_rows(df, models, spaces(story))
    rec = df[(df.level == "item") & (df.metric_id == "alignment")].iloc[0]
    subs = df[(df.level == "item") & df.metric_id.isin(ALIGNMENT_SUBSCORES)]
    return Output(df, metadata={"alignment": float(rec.value) if pd.notna(rec.value) else "None",
                                **{m: (round(float(v), 3) if pd.notna(v) else "None")
                                   for m, v in zip(subs.metric_id, subs.value)},
                                "reason": MetadataValue.text(str(rec.reason) if pd.notna(rec.reason) else "none"),
                                **evaluator_metadata(df, judge)})


# ----------------------------------------------------------------------------------------- generator level

@asset(group_name=GROUP, code_version="2", deps=[vistorybench_outputs], pool="gpu", op_tags=GPU_OP_TAGS,
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def vistorybench_inception_score(context: AssetExecutionContext, store: Store, models: ModelRegistry,
                                 device: Device) -> Output[pd.DataFrame]:
    """Inception Score over all shot images of each generator (one split), and over the Lite stories."""
    outputs = store.query("SELECT generator, story_id, shot, path, sha256 FROM vistorybench_outputs "
                          "WHERE status = 'ok'")
    model, reason = load_slot(models, device, "inception")
    rows = []
    for generator, g in outputs.groupby("generator"):
        for split, part in (("full", g), ("lite", g[g["story_id"].isin(dataset.LITE)])):
            keys = {"benchmark": BENCH, "generator": generator, "item": f"split:{split}"}
            if model is None or part.empty:
                rec = MetricRecord("inception_score", None, 0, 0, len(part), reason or "no shot image in this split")
            else:
                probs = model.probs([shot_image(p) for p in part["path"]])
                rec = MetricRecord("inception_score", metrics.inception_score(probs), len(part))
            rows.append(record_row(rec, **keys) | {"detail": json.dumps({"split": split, "images": len(part)})})
    df = metric_frame(rows)
    # images not scored because the model is unavailable are the evaluator's, not the generator's
    df["n_failed_evaluator"] = pd.array(df["n_skipped"] if model is None else [0] * len(df), dtype="Int64")
    df["protocol"] = _protocol(models)
    df = label_substitutes(df, METRICS, models)
    return Output(df, metadata={"generators": int(outputs["generator"].nunique()) if len(outputs) else 0})


@asset(group_name=GROUP, code_version="5",
       deps=[vistorybench_scores, vistorybench_alignment, vistorybench_inception_score, vistorybench_story],
       automation_condition=board_condition("vistorybench_scores", "vistorybench_alignment"))
def vistorybench_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths, models: ModelRegistry,
                             judge: Judge) -> Output[pd.DataFrame]:
    """Every metric for every generator, full set and Lite (slice): mean over stories (value or None with reason;
    shots not delivered count as failures and zeros in value, raw_mean is the paper's mean over delivered shots:
    board.py), coverage = instances evaluated / instances, the substitute models behind each cell, and the rank
    (detail.mean_rank:
    mean rank over the eight quality columns; the copy-paste baseline is shown as a baseline, not ranked)."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    cols = ", ".join(board.RECORD_COLUMNS)
    parts = [f"SELECT {cols} FROM {t} WHERE level = 'item'" for t in ("vistorybench_scores", "vistorybench_alignment")
             if t in tables]
    if not parts or "vistorybench_story" not in tables:
        raise ValueError("no ViStoryBench score partition has been materialised yet")
    records = store.query(" UNION ALL ".join(parts))
    # every story of the release counts, including one whose story.json failed validation (it shows as missing)
    loaded = store.query("SELECT story_id, n_shots FROM vistorybench_story")
    shots = dict(zip(loaded["story_id"], loaded["n_shots"]))
    ids = sorted(set(dataset.discover_stories(paths.benchmark_dir(BENCH))) | set(shots))
    stories = pd.DataFrame({"story_id": ids, "lite": [i in dataset.LITE for i in ids],
                            "loaded": [i in shots for i in ids], "n_shots": [shots.get(i) for i in ids]})
    inception = store.query(f"SELECT {cols} FROM vistorybench_inception_score") \
        if "vistorybench_inception_score" in tables else pd.DataFrame(columns=list(board.RECORD_COLUMNS))
    # the outputs index says which shots each generator delivered; the stories say what each shot would have fed
    outputs = store.query("SELECT generator, story_id, shot, status, language, error FROM vistorybench_outputs") \
        if "vistorybench_outputs" in tables else pd.DataFrame(columns=["generator", "story_id", "shot", "status",
                                                                       "language", "error"])
    delivered = {g: set(part["story_id"]) for g, part in outputs.groupby("generator")}
    story_defs = {r.story_id: dataset.story_from_json(json.loads(r.story_json)) for r in
                  store.query("SELECT story_id, story_json FROM vistorybench_story").itertuples()}
    characters = store.query(f"SELECT {cols}, entity_id FROM vistorybench_scores WHERE level = 'character'") \
        if "vistorybench_scores" in tables else None
    cards = {}
    for g in set(records["generator"]) | set(inception["generator"]):
        try:
            cards[g] = read_generator(paths.generator_dir(g)).card
        except (GeneratorError, FileNotFoundError):
            cards[g] = {}
    table = board.leaderboard(records, stories, inception, cards, delivered, outputs, story_defs, characters)
    manifest = vistorybench_manifest(models, judge)
    return Output(table, metadata={"generators": MetadataValue.json(sorted(table["generator"].unique().tolist())),
                                   "table": MetadataValue.md(board_markdown(table, {"slice": "full"})),
                                   "manifest": MetadataValue.json(manifest),
                                   "protocol_digest": protocol_digest(manifest)} | report_metadata(store, BENCH))


@asset(group_name=GROUP, code_version="3", deps=[vistorybench_leaderboard],
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def vistorybench_human_alignment(context: AssetExecutionContext, store: Store,
                                 paths: BenchPaths) -> Output[pd.DataFrame]:
    """Kendall tau, Spearman rho and Pearson r between the human ratings table (``human_ratings.csv``, wide or
    long: see human_alignment.py) and every leaderboard metric, over the methods both have; Lite split (the
    paper's Table 2) and full set (column ``slice``)."""
    ratings_path = paths.benchmark_dir(BENCH) / "human_ratings.csv"
    if not ratings_path.is_file():
        raise Failure(f"no human ratings table at {ratings_path} (columns: method, dimension, rating)")
    try:
        ratings = human_alignment.read_ratings(ratings_path)
    except human_alignment.TableError as e:
        raise Failure(str(e)) from None
    values = store.query('SELECT generator, "slice", metric_id, value FROM vistorybench_leaderboard')
    df = pd.concat([human_alignment.human_alignment_table(ratings, values, s) for s in human_alignment.SLICES],
                   ignore_index=True)
    lite = df[df["slice"] == "lite"]
    return Output(df, metadata={"pairs": len(df), "table_lite": MetadataValue.md(
        lite[["dimension", "metric_id", "kendall_tau", "spearman_rho", "pearson_r", "n_methods"]].round(3)
        .to_markdown(index=False) if len(lite) else "empty")})


# The CLI imports these two from here (bench human-alignment); the logic lives in human_alignment.py.
read_ratings = human_alignment.read_ratings
human_alignment_table = human_alignment.human_alignment_table


ASSETS = [vistorybench_story, vistorybench_references, vistorybench_outputs, vistorybench_matches,
          vistorybench_scores, vistorybench_alignment, vistorybench_inception_score, vistorybench_leaderboard,
          vistorybench_human_alignment]
ITEM_ASSETS = ["vistorybench_story", "vistorybench_references"]
GENERATOR_ASSETS = ["vistorybench_outputs", "vistorybench_matches", "vistorybench_scores", "vistorybench_alignment"]
