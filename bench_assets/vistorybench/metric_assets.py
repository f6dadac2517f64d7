"""ViStoryBench metric assets: the scores (CIDS, OCCM, copy-paste, CSD, aesthetics) and the judge's prompt
alignment per (generator x story) partition, and the Inception Score per generator. Rows are built in
scores.py / alignment.py, the maths in metrics.py."""

import json

import pandas as pd
from dagster import AssetExecutionContext, AutomationCondition, MetadataValue, Output, asset

from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.generators import read_generator
from bench_assets.core.metric_spec import label_substitutes, mark_judged
from bench_assets.core.records import MetricRecord
from bench_assets.core.slots import load_slot
from bench_assets.core.tables import metric_frame, record_row
from bench_assets.vistorybench import dataset, metrics
from bench_assets.vistorybench.alignment import (ALIGNMENT_SUBSCORES, alignment_requests, alignment_rows,
                                                 alignment_unavailable_rows)
from bench_assets.vistorybench.constants import BENCH
from bench_assets.vistorybench.input_assets import vistorybench_outputs
from bench_assets.vistorybench.manifest import protocol
from bench_assets.vistorybench.metric_specs import METRICS, judge_label, label_rows
from bench_assets.vistorybench.scores import (SCORE_METRICS, aesthetic_rows, character_rows, evaluator_metadata,
                                              occm_rows, story_failed_rows, style_rows, with_evaluator_counts)
from bench_assets.vistorybench.shots import ok_shots, shot_image, spaces, story_error, story_of
from bench_assets.vistorybench.wiring import GROUP, P, encoders
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


# ----------------------------------------------------------------------------------------- scores

def _explain(df: pd.DataFrame, generator: str) -> dict:
    """The UI's answer to "why this number": rounded values with coverage and audit links, the per-character /
    per-shot rows worst first (core/explain.py)."""
    from bench_assets.core.explain import explain_metadata
    from bench_assets.core.site import audit_link
    dirs = {s.id: s.direction for s in METRICS.specs}
    return explain_metadata(df, benchmark=BENCH, generator=generator, directions=dirs,
                            audit_url=audit_link(BENCH, generator, METRICS.specs))  # board metrics only: no 404


# code version 5: the aesthetic slot resizes as SigLIP's processor does (PIL bicubic, antialiased); CSD squashes
# the whole image to 224 x 224 as the official evaluator (it cropped the short side's centre)
# code version 6: the good-faces-only additions beside CIDS as their own rows (character and story), reference
# faces below the quality floors counted and named (issue 23)
@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="6", pool="gpu", op_tags=GPU_OP_TAGS)
def vistorybench_scores(context: AssetExecutionContext, paths: BenchPaths, vistorybench_outputs: pd.DataFrame,
                        vistorybench_story: pd.DataFrame, vistorybench_references: pd.DataFrame,
                        vistorybench_matches: pd.DataFrame, models: ModelRegistry,
                        device: Device) -> Output[pd.DataFrame]:
    """Per story: CIDS cross/self (and the additions over good-quality faces only), OCCM, copy-paste (1.3 and
    paper), CSD cross/self, aesthetics, with per-character and per-shot provenance rows (crop ids, source hashes)."""
    generator, sid = P.split(context.partition_key)
    story = story_of(vistorybench_story)
    err = story_error(vistorybench_outputs)
    if err:
        df = metric_frame(story_failed_rows(generator, sid, SCORE_METRICS, err))
    else:
        card = read_generator(paths.generator_dir(generator)).card
        single = card.get("reference_mode", "single") == "single"
        shots = ok_shots(vistorybench_outputs)
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
    df["protocol"] = protocol(models)
    df = label_rows(df, models, spaces(story))
    return Output(df, metadata={**_explain(df, generator), **evaluator_metadata(df)})


# ----------------------------------------------------------------------------------------- alignment (judge)

@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="5")
def vistorybench_alignment(context: AssetExecutionContext, vistorybench_outputs: pd.DataFrame,
                           vistorybench_story: pd.DataFrame, vistorybench_matches: pd.DataFrame, judge: Judge,
                           models: ModelRegistry, store: Store) -> Output[pd.DataFrame]:
    """Prompt alignment through the judge: scene, camera, character action (whole shot) and single-character
    action (each matched crop with its name), 0-4 each; alignment = mean of aspect means x 25."""
    generator, sid = P.split(context.partition_key)
    story = story_of(vistorybench_story)
    err = story_error(vistorybench_outputs)
    if err:
        df = metric_frame(story_failed_rows(generator, sid, ["alignment", *ALIGNMENT_SUBSCORES], err))
    else:
        shots = ok_shots(vistorybench_outputs)
        language = str(shots["language"].iloc[0]) if len(shots) else "en"
        asked = alignment_requests(story, language, shots, vistorybench_matches, store)
        ok, why = judge.available()
        if not ok:
            df = metric_frame(alignment_unavailable_rows(generator, sid, asked, why))
        else:
            results = judge.ask_many([a[3] for a in asked])
            df = metric_frame(alignment_rows(generator, sid, asked, results))
    df = with_evaluator_counts(df, [], everything=not err)
    df["protocol"] = protocol(models, judge)
    df = label_rows(df, models, spaces(story))
    df = mark_judged(df, judge_label(judge.model))   # every value here is the judge's answer
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
    df["protocol"] = protocol(models)
    df = label_substitutes(df, METRICS, models)
    return Output(df, metadata={"generators": int(outputs["generator"].nunique()) if len(outputs) else 0})
