"""ViStoryBench input assets: each story (validated), its reference crops and vectors, each generator's shot
index, and the character matches (detections, crop vectors, Hungarian assignment) every score reads. The helpers
are in shots.py / characters.py, the wiring in wiring.py."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import INPUT_SHA_KEY, content_data_version
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.slots import load_slot
from bench_assets.vistorybench import characters, dataset
from bench_assets.vistorybench.constants import BENCH
from bench_assets.vistorybench.manifest import slot_manifest
from bench_assets.vistorybench.shots import ok_shots, reference_vectors, shot_image, story_of
from bench_assets.vistorybench import wiring as W
from bench_assets.vistorybench.wiring import GROUP, P, encoders, generator_language
from bench_resources.device import Device
from bench_resources.judge import summarize_reasons
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


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
    sha = W.story_version(paths, context.partition_key)
    # the story folder's content is the data version: an edited story marks its partitions stale
    code = context.assets_def.code_versions_by_key[context.asset_key]
    return Output(df, data_version=content_data_version(sha, code),
                  metadata={"shots": len(story.shots), "characters": len(story.characters), "lite": story.lite,
                            "tags": MetadataValue.json(tags), INPUT_SHA_KEY: sha})


# code version 2: the character_embedder preprocesses as the Hugging Face CLIP processor (issue 24)
# code version 3: a face reference keeps its face-quality record (``face_quality``, issue 23), as the crops do
@asset(partitions_def=P.items, group_name=GROUP, code_version="3", pool="gpu", op_tags=GPU_OP_TAGS)
def vistorybench_references(context: AssetExecutionContext, vistorybench_story: pd.DataFrame, models: ModelRegistry,
                            device: Device, store: Store) -> Output[pd.DataFrame]:
    """Per reference image: the top-1 'character' box (whole image if none), its crop, the identity vector in the
    character's space (face for realistic humans), the mirrored crop's vector, the face's quality record (size,
    blur, detector confidence, the floors it is below: ``characters.largest_face``; None outside the face space or
    where the face model does not measure it), and the CSD style vector."""
    story = story_of(vistorybench_story)
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
            pair = [crop, np.ascontiguousarray(crop[:, ::-1])]
            quality = None
            if space == "face":   # one detection per image gives the vector and its quality (issue 23)
                (vec, mirror), (quality, _) = characters.embed_faces(enc, pair)
            else:
                vec, mirror = characters.embed(enc, space, pair)
            reason = enc.reason(space) if not enc.available(space) else (
                "no face found on the reference" if vec is None else None)
            rows.append({"story_id": story.story_id, "character": key, "tag": ch.tag, "space": space, "ref_index": i,
                         "ref_path": ref, "ref_sha256": store.put_bytes(Path(ref).read_bytes(), Path(ref).suffix[1:].lower()),
                         "box": json.dumps(box), "box_confidence": conf,
                         "detector_reason": det_reason if detector is None else None,
                         "crop_id": store.put_png(crop),
                         "embedding": vec.tolist() if vec is not None else None,
                         "mirror_embedding": mirror.tolist() if mirror is not None else None,
                         "face_quality": json.dumps(quality, sort_keys=True) if quality is not None else None,
                         "style": (style.embed([image])[0].tolist() if style is not None and i == 0 else None),
                         "reason": reason})
    df = pd.DataFrame(rows)
    low = [characters.low_quality(q) for q in df["face_quality"]] if len(df) else []
    return Output(df, metadata={"references": len(df), "embedded": int(df["embedding"].notna().sum()),
                                "low_quality_faces": sum(1 for w in low if w),
                                "style": style_reason or "CSD", "models": MetadataValue.json(slot_manifest(models))})


# ----------------------------------------------------------------------------------------- outputs

# code version 3: the official output tree and shots/ folders are read (layout.py); a 0-based set is read as
# 1-based with a warning; a refused set (misaligned, beyond the story, duplicates) fails the partition (issue 35)
@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="3")
def vistorybench_outputs(context: AssetExecutionContext, paths: BenchPaths,
                         vistorybench_story: pd.DataFrame) -> Output[pd.DataFrame]:
    """Index of one generator's shot images for one story (its own ``<NN>/`` folder or the official
    ``<method>/<mode>/<language>/<timestamp>/<NN>/[shots/]`` tree), validated against the story's 1-based indices.
    A 0-based set is read as 1-based, as the official normalizer renames it, with a warning in the metadata; a set
    that cannot be aligned (0-based with shot_00 missing, indices beyond the story, two files for one shot) fails
    this partition with one error naming the story and the shots, never scored as zero; missing shots are listed."""
    generator, sid = P.split(context.partition_key)
    story = story_of(vistorybench_story)
    found = W.generator_layout(paths, generator)
    language = generator_language(paths, generator)
    sha = W.shots_version(paths, context.partition_key)
    # content, not code alone: the shot images, the story they were indexed against and this asset's code version
    version = content_data_version(sha, vistorybench_story["story_json"].iloc[0], language,
                                   context.assets_def.code_versions_by_key[context.asset_key])
    base = {"generator": generator, "story_id": sid, "language": language}
    rows = []
    try:
        index = dataset.index_outputs(story, found.story_dir(sid), generator)
    except dataset.OutputError as e:
        raise Failure(description=str(e)) from None
    if index.warning:
        context.log.warning(index.warning)
    if index.renumbered:
        context.log.warning(index.renumbered)
    for note in found.notes:
        context.log.info(f"generator {generator!r}: {note}")
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
    return Output(df, data_version=version, metadata={"shots": len(df), "ok": int((df.status == "ok").sum()),
                                                      INPUT_SHA_KEY: sha,
                                "missing": MetadataValue.json([int(x) for x in bad["shot"]]),
                                "warning": MetadataValue.text(index.warning or "none"),
                                "renumbered": MetadataValue.text(index.renumbered or "no"),
                                "layout": MetadataValue.text(found.describe()),
                                "language": language})


# ----------------------------------------------------------------------------------------- characters

@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="2", pool="gpu", op_tags=GPU_OP_TAGS)
def vistorybench_matches(context: AssetExecutionContext, vistorybench_outputs: pd.DataFrame,
                         vistorybench_story: pd.DataFrame, vistorybench_references: pd.DataFrame,
                         models: ModelRegistry, device: Device, store: Store) -> Output[pd.DataFrame]:
    """Per shot: every 'character' box (OCCM's D), each crop's vectors in both spaces, and the Hungarian assignment
    of the on-stage characters to crops."""
    generator, sid = P.split(context.partition_key)
    story = story_of(vistorybench_story)
    detector, det_reason = load_slot(models, device, "character_detector")
    enc = encoders(models, device)
    refs = reference_vectors(vistorybench_references)
    tags = {k: c.tag for k, c in story.characters.items()}
    rows = []
    for r in ok_shots(vistorybench_outputs).itertuples():
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
        vecs = {sp: characters.embed(enc, sp, crops) if sp in needed and sp != "face" else [None] * len(crops)
                for sp in characters.SPACES}
        quality = [None] * len(crops)
        if "face" in needed:   # one detection per crop gives the vector and its quality (issue 23)
            vecs["face"], quality = characters.embed_faces(enc, crops)
        assignment = {j: (c, s) for c, j, s in characters.match_shot(on_stage, tags, refs, vecs)}
        for j, (crop, (box, conf)) in enumerate(zip(crops, boxes)):
            who, score = assignment.get(j, (None, None))
            rows.append({**base, "kind": "crop", "crop_index": j, "box": json.dumps([float(v) for v in box]),
                         "confidence": conf, "crop_id": store.put_png(crop),
                         "face": vecs["face"][j].tolist() if vecs["face"][j] is not None else None,
                         "face_quality": json.dumps(quality[j], sort_keys=True) if quality[j] is not None else None,
                         "features": vecs["features"][j].tolist() if vecs["features"][j] is not None else None,
                         "matched": who, "match_score": score})
    df = pd.DataFrame(rows)
    for col in ("kind", "crop_index", "box", "confidence", "crop_id", "face", "face_quality", "features", "matched",
                "match_score", "n_detections", "on_stage", "reason"):
        if col not in df.columns:
            df[col] = None
    crops_df = df[df["kind"] == "crop"]
    unsearched = df[(df["kind"] == "shot") & df["n_detections"].isna()] if len(df) else df
    return Output(df, metadata={"shots": int((df["kind"] == "shot").sum()) if len(df) else 0,
                                "crops": len(crops_df), "matched": int(crops_df["matched"].notna().sum()),
                                "evaluator_failures": len(unsearched),
                                "evaluator_failure_reasons": summarize_reasons(unsearched["reason"]
                                                                               if len(unsearched) else [])})
