"""EntityBench input assets: the episodes, their entity registry and dataset statistics, each generator's
shot index, and the grounding crops every later metric reads. Rows are built in outputs.py / grounding.py /
dataset_stats.py."""

import json

import pandas as pd
from dagster import AssetExecutionContext, AutomationCondition, MetadataValue, Output, asset

from bench_assets.core.automation import INPUT_SHA_KEY, content_data_version
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.slots import load_slot
from bench_assets.entitybench import dataset, dataset_stats, grounding, outputs
from bench_assets.entitybench import wiring as W
from bench_assets.entitybench.wiring import P
from bench_assets.entitybench.constants import OFFLINE_WEAK_CONF
from bench_resources.device import Device
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


# ----------------------------------------------------------------------------- dataset

@asset(partitions_def=P.items, group_name=W.METRIC_GROUP, code_version="3", kinds={"json"})
def entitybench_episode(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated episode (canonical JSON), with the paper's Table 3 / Table 10 statistics."""
    ep = W.load_episode(paths, context.partition_key)
    stats = dataset.episode_statistics(ep)
    df = pd.DataFrame([{"episode_id": ep.episode_id, "tier": ep.tier, "n_shots": len(ep.shots),
                        "episode_json": json.dumps(ep.to_json(), sort_keys=True),
                        "statistics_json": json.dumps(stats, sort_keys=True),
                        "warnings": "; ".join(ep.warnings)}])
    meta = {k: v for k, v in stats.items() if isinstance(v, (int, float, str)) and v is not None}
    sha = W.episode_version(paths, context.partition_key)
    # the file's content is the data version: an edited schedule marks this episode's partitions stale
    code = context.assets_def.code_versions_by_key[context.asset_key]
    return Output(df, data_version=content_data_version(sha, code),
                  metadata={**meta, "warnings": MetadataValue.text("; ".join(ep.warnings) or "none"),
                            INPUT_SHA_KEY: sha})


@asset(partitions_def=P.items, group_name=W.METRIC_GROUP, code_version="1")
def entitybench_entity_registry(context: AssetExecutionContext,
                                entitybench_episode: pd.DataFrame) -> Output[pd.DataFrame]:
    """One row per registry entity: type, description, appearances, recurrence gaps."""
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    rows = []
    for e in ep.entities:
        app = ep.appearances(e.id)
        gaps = dataset.recurrence_gaps(app)
        rows.append({"episode_id": ep.episode_id, "entity_id": e.id, "type": e.type, "name": e.name,
                     "description": e.description, "appearances": json.dumps(app), "n_appearances": len(app),
                     "cross_shot": len(app) >= 2, "max_recurrence_gap": max(gaps) if gaps else None,
                     "first_shot": app[0] if app else None})
    df = pd.DataFrame(rows)
    return Output(df, metadata={"entities": len(df), "cross_shot": int(df["cross_shot"].sum()),
                                "by_type": MetadataValue.json(df.groupby("type").size().to_dict())})


@asset(group_name=W.METRIC_GROUP, code_version="3", deps=[entitybench_episode],
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def entitybench_dataset_statistics(context: AssetExecutionContext, store: Store) -> pd.DataFrame:
    """Table 3 / Table 10 per tier and overall, over every materialised episode."""
    eps = store.query("SELECT statistics_json FROM entitybench_episode")
    stats = pd.DataFrame([json.loads(s) for s in eps["statistics_json"]])
    return dataset_stats.dataset_table(stats)


# ----------------------------------------------------------------------------- generator outputs

@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="2")
def entitybench_outputs(context: AssetExecutionContext, paths: BenchPaths,
                        entitybench_episode: pd.DataFrame) -> Output[pd.DataFrame]:
    """Index of one generator's shot videos for one episode; every shot validated, each problem recorded."""
    generator, episode_id = W.split(context)
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    rows = outputs.output_rows(ep, paths.generator_dir(generator) / episode_id, generator)
    for row in rows:
        if row["error"]:
            context.log.error(row["error"])
    df = pd.DataFrame(rows)
    n_err = int(df["error"].notna().sum())
    sha = W.shots_version(paths, context.partition_key)
    # content, not code: the shot files and the episode they were indexed against (and this asset's code version,
    # which Dagster's logical version would otherwise have carried downstream)
    version = content_data_version(sha, entitybench_episode["episode_json"].iloc[0],
                                   context.assets_def.code_versions_by_key[context.asset_key])
    return Output(df, data_version=version,
                  metadata={"shots": len(df), "errors": n_err, INPUT_SHA_KEY: sha,
                            "first_error": MetadataValue.text(str(df["error"].dropna().iloc[0]) if n_err else "none")})


# ----------------------------------------------------------------------------- grounding

@asset(partitions_def=P.generator_x_item, group_name=W.METRIC_GROUP, code_version="4", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_grounding(context: AssetExecutionContext, entitybench_outputs: pd.DataFrame,
                          entitybench_episode: pd.DataFrame, models: ModelRegistry, device: Device,
                          store: Store) -> Output[pd.DataFrame]:
    """Canonical crop per (shot, entity): 5 frames, detector queried with the description, a = a_clip*a_sharp*a_area."""
    generator, episode_id = W.split(context)
    ep, clips, errors = outputs.episode_and_clips(entitybench_outputs, entitybench_episode)
    detector, det_reason = load_slot(models, device, "open_vocab_detector")
    clip_model, clip_reason = load_slot(models, device, "clip_b32")
    rows = grounding.grounding_rows(generator, episode_id, ep, clips, errors, detector, det_reason,
                                    clip_model, store.put_png)
    df = pd.DataFrame(rows)
    status_rule = ("a_clip(c*) >= 0.20 (CLIP ViT-B/32)" if clip_model is not None else
                   f"CLIP unavailable ({clip_reason}); a_clip recorded as None, a = confidence*a_sharp*a_area, "
                   f"weak iff detector confidence < {OFFLINE_WEAK_CONF}")
    status_counts = df["status"].value_counts().to_dict() if len(df) else {}
    return Output(df, metadata={"rows": len(df), "status_counts": MetadataValue.json(status_counts),
                                "status_rule": MetadataValue.text(status_rule),
                                "models": MetadataValue.json(W.slot_manifest(models,
                                                                             ["open_vocab_detector", "clip_b32"]))})

