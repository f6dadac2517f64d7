"""EntityBench metric assets, one per metric family and (generator x episode) partition: Pillar 1, presence and
embedding consistency, fidelity, action and LLM consistency. Rows are built in pillar1.py / consistency.py /
judged.py, the maths in metrics.py."""

import json

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.records import MetricRecord
from bench_assets.core.slots import load_slot
from bench_assets.core.tables import record_row
from bench_assets.entitybench import consistency, counts, dataset, grounding, judged, outputs, pillar1
from bench_assets.entitybench import metric_specs as MS
from bench_assets.entitybench import wiring as W
from bench_assets.core.metric_spec import mark_judged
from bench_assets.entitybench.wiring import P
from bench_assets.entitybench.constants import BENCH
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.store import Store

def _explain(df: pd.DataFrame, generator: str, store: Store | None = None) -> dict:
    """The UI's answer to "why this number": rounded values with coverage and audit links, the per-unit rows
    (shots, appearances, pairs) worst first, crop previews of the worst (core/explain.py)."""
    from bench_assets.core.explain import artifact_url_fn, explain_metadata
    from bench_assets.core.site import audit_link, report_base_url
    from bench_assets.entitybench.metric_specs import METRICS
    dirs = {s.id: s.direction for s in METRICS.specs}
    return explain_metadata(df, benchmark=BENCH, generator=generator, directions=dirs,
                            audit_url=audit_link(BENCH, generator, METRICS.specs),  # board metrics only: no 404
                            artifact_url=artifact_url_fn(store, report_base_url()) if store is not None else None)


# Pillar 1 runs first among a run's steps: its pass fills frames.SHOTS, so the sampling assets decode nothing more.
PILLAR1_OP_TAGS = {**GPU_OP_TAGS, "dagster/priority": "1"}


# ----------------------------------------------------------------------------- Pillar 1

@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="10", pool="gpu",
       op_tags=PILLAR1_OP_TAGS)
def entitybench_pillar1(context: AssetExecutionContext, entitybench_outputs: pd.DataFrame,
                        entitybench_episode: pd.DataFrame, models: ModelRegistry,
                        device: Device) -> Output[pd.DataFrame]:
    """Pillar 1 (intra-shot quality: the 6 VBench metrics as the authors run them, and the paper text's Eq. 2 and
    pair-fraction variants) on every consecutive native frame, streamed; never gated."""
    generator, _ = W.split(context)
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    paths, errors = outputs.shot_paths(entitybench_outputs)
    slots = {name: load_slot(models, device, name) for name in pillar1.PILLAR1_SLOTS}
    opened: dict[int, pillar1.ShotStream] = {}

    def open_shot(k: int) -> pillar1.ShotStream:
        opened[k] = pillar1.ShotStream(paths[k])
        return opened[k]

    df = counts.frame(pillar1.pillar1_rows(generator, ep, open_shot, errors, slots))
    # each shot's decode health from this pass (concealed / lost frames): the board's n_decode_warnings reads it
    df = pillar1.with_decode_health(df, {k: s.src.decode_record() for k, s in opened.items() if s.src.done})
    df["protocol"] = W.protocol(models, pillar1.PILLAR1_SLOTS)
    W.label_substitutes(df, models)
    return Output(df, metadata={**_explain(df, generator),
                                **W.evaluator_metadata(df),
                                "models": MetadataValue.json(W.slot_manifest(models, pillar1.PILLAR1_SLOTS))})


# ----------------------------------------------------------------------------- Pillar 2 presence, Pillar 3 DINOv2

@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="10", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_presence_consistency(context: AssetExecutionContext, entitybench_grounding: pd.DataFrame,
                                     entitybench_outputs: pd.DataFrame, entitybench_episode: pd.DataFrame,
                                     entitybench_fidelity: pd.DataFrame, models: ModelRegistry, device: Device,
                                     store: Store) -> Output[pd.DataFrame]:
    """Pillar 2 presence (3), Pillar 3 embedding consistency (cs_face, cs_object, cs_transition_boundary) and,
    beside cs_face, the face-identity consistency cs_face_identity (an addition, labelled as such)."""
    generator, _ = W.split(context)
    ep, clips, _ = outputs.episode_and_clips(entitybench_outputs, entitybench_episode)
    embedder, why = load_slot(models, device, "image_embedder")
    face, face_why = load_slot(models, device, "face")
    fid = judged.fidelity_overall(entitybench_fidelity)
    rows = consistency.presence_rows(generator, ep, entitybench_grounding)
    cs_rows, gated_out = consistency.cross_shot_rows(generator, ep, entitybench_grounding,
                                                     embedder.embed if embedder is not None else None, why, store,
                                                     clips, fid, models.status("image_embedder").checkpoint)
    rows += cs_rows
    rows += consistency.face_identity_rows(generator, ep, entitybench_grounding, fid, clips, face, face_why,
                                           models.status("face").checkpoint)
    n_present = int((entitybench_grounding["status"] == "present").sum())
    was_judged = entitybench_fidelity["value"].notna().any() if len(entitybench_fidelity) else False
    # a diagnostic beside the metrics (kept off the leaderboard): gated-out appearances of every entity type
    rows.append(record_row(MetricRecord("_meta_cross_shot_gate", float(gated_out) if n_present else None,
                                        n_present, 0, 0,
                                        None if was_judged or not n_present else
                                        "fidelity not judged: every present crop passed the gate (logged)"
                                        if n_present else "no present crop"),
                           benchmark=BENCH, generator=generator, item=ep.episode_id))
    df = counts.frame(rows)
    gate = judged.gate_state(entitybench_fidelity)
    df["protocol"] = W.protocol(models, ["image_embedder", "face", *W.GROUNDING_SLOTS], gate=gate)
    W.label_substitutes(df, models)
    # issue 25: a failed fidelity question leaves the gate unknown (the evaluator's failure, retried); judge off: ungated
    judged.withhold_unknown_gate(df, judged.gate_unknown_count(entitybench_grounding, fid), gate)
    mark_judged(df, MS.gate_judge_label(gate), judged.GATED_INSTANCE_IDS)
    return Output(df, metadata={**_explain(df, generator, store),
                                "gated_out": gated_out, **W.evaluator_metadata(df),
                                "models": MetadataValue.json(W.slot_manifest(models, ["image_embedder", "face"]))})


# ----------------------------------------------------------------------------- judged metrics

def _ask(judge: Judge):
    return judge.ask_many


@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="4")
def entitybench_fidelity(context: AssetExecutionContext, entitybench_grounding: pd.DataFrame,
                         entitybench_episode: pd.DataFrame, judge: Judge, store: Store,
                         models: ModelRegistry) -> Output[pd.DataFrame]:
    """Pillar 2 fidelity (15): the judge scores each present/weak canonical crop against its description."""
    generator, _ = W.split(context)
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    df = counts.frame(judged.fidelity_rows(generator, ep, entitybench_grounding, store.get_png, judge.ask_many))
    df["protocol"] = W.protocol(models, W.GROUNDING_SLOTS, judge)
    W.label_substitutes(df, models)
    mark_judged(df, MS.judge_label(judge.model))   # every value here is the judge's answer
    return Output(df, metadata=_explain(df, generator, store) | W.evaluator_metadata(df)
                  | {"judge": MetadataValue.json(judge.fingerprint())})


@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="5", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_action(context: AssetExecutionContext, entitybench_outputs: pd.DataFrame,
                       entitybench_episode: pd.DataFrame, models: ModelRegistry, device: Device,
                       judge: Judge) -> Output[pd.DataFrame]:
    """Pillar 2 action (6): a 2x3 grid of 6 frames with labelled boxes, judged against the action text."""
    generator, _ = W.split(context)
    ep, clips, errors = outputs.episode_and_clips(entitybench_outputs, entitybench_episode)
    detector, why = load_slot(models, device, "open_vocab_detector")
    detect = grounding.action_detector(detector, ep.registry) if detector is not None else None
    ok, judge_why = judge.available()
    df = counts.frame(judged.action_rows(generator, ep, clips, errors, detect, why, judge.ask_many,
                                         judge_reason=None if ok else judge_why))
    df["protocol"] = W.protocol(models, ["open_vocab_detector", "text_embedder"], judge)
    W.label_substitutes(df, models)
    mark_judged(df, MS.judge_label(judge.model))   # every value here is the judge's answer
    return Output(df, metadata=_explain(df, generator) | W.evaluator_metadata(df))


@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="6", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_llm_consistency(context: AssetExecutionContext, entitybench_grounding: pd.DataFrame,
                                entitybench_fidelity: pd.DataFrame, entitybench_outputs: pd.DataFrame,
                                entitybench_episode: pd.DataFrame, models: ModelRegistry, device: Device,
                                judge: Judge, store: Store) -> Output[pd.DataFrame]:
    """Pillar 3 LLM (12 + 6): pairwise identity against the centroid anchor; locations on full frames."""
    generator, _ = W.split(context)
    ep, clips, _ = outputs.episode_and_clips(entitybench_outputs, entitybench_episode)
    embedder, why = load_slot(models, device, "image_embedder")
    embed = embedder.embed if embedder is not None else None
    fid = judged.fidelity_overall(entitybench_fidelity)
    ok, judge_why = judge.available()
    jr = None if ok else judge_why   # nothing to ask: skip the anchors' embeddings too
    rows = judged.llm_entity_rows(generator, ep, entitybench_grounding, fid, embed, why, store.get_png, judge.ask_many,
                                  judge_reason=jr)
    rows += judged.llm_location_rows(generator, ep, entitybench_grounding, clips, embed, why, judge.ask_many,
                                     judge_reason=jr, fidelity=fid)
    df = counts.frame(rows)
    df["protocol"] = W.protocol(models, ["image_embedder", *W.GROUNDING_SLOTS], judge)
    W.label_substitutes(df, models)
    mark_judged(df, MS.judge_label(judge.model))   # every value here is the judge's answer
    return Output(df, metadata=_explain(df, generator) | W.evaluator_metadata(df))

