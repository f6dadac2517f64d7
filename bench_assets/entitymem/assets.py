"""EntityMem as assets, partitioned by (configuration x episode): the bank, the layouts, the keyframes, the
EntityMem shots and the control's shots (each arm's shots written as a generator folder the EntityBench sensor
evaluates), and the comparison of the two arms on EntityBench's scores (paper Table 5 and Table 19).

The stages are pipeline.py; rows and the comparison's maths rows.py; this module only wires them. Every output
carries a data version (a digest of its rows, which name content-addressed artifacts), so a stage whose result did
not change leaves what reads it up to date.
"""

import json
import warnings

import pandas as pd
from dagster import (AssetExecutionContext, AutomationCondition, DynamicPartitionsDefinition, MetadataValue,
                     MultiPartitionsDefinition, Output, asset, define_asset_job)

from bench_assets.core.automation import INPUT_SHA_KEY, content_data_version, files_digest, input_version
from bench_assets.entitybench.dataset import load_episode
from bench_assets.entitybench.wiring import P as ENTITYBENCH
from bench_assets.entitymem import audit, configs, pipeline, rows
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

GROUP = "entitymem"
CONFIGS = DynamicPartitionsDefinition(name="entitymem_configs")
# dimension names sort as (config, episode): keys read "<config>|<episode>"
PARTITIONS = MultiPartitionsDefinition({"config": CONFIGS, "episode": ENTITYBENCH.items})


def split(key: str) -> tuple[str, str]:
    dims = PARTITIONS.get_partition_key_from_str(key).keys_by_dimension
    return dims["config"], dims["episode"]


def _inputs(paths: BenchPaths, config: str, episode_id: str) -> list[tuple[str, object]]:
    files = [("episode", configs.episode_file(paths.data_dir, episode_id))]
    if config not in configs.BUILTIN:
        files.append(("config", paths.data_dir / "entitymem" / "configs" / f"{config}.yaml"))
    return files


@input_version("entitymem_bank", also_read_by=("entitymem_control_shots",))
def input_digest(paths: BenchPaths, partition_key: str) -> str:
    """The episode's and the configuration file's content: a changed description re-runs the partition (the memo
    inside then regenerates only what that description reaches)."""
    return files_digest(_inputs(paths, *split(partition_key)))


def make_run(context: AssetExecutionContext, paths: BenchPaths, store: Store, judge: Judge) -> pipeline.Run:
    name, episode_id = split(context.partition_key)
    cfg = configs.load_config(name, paths.data_dir)
    ep = load_episode(configs.episode_file(paths.data_dir, episode_id))
    run = pipeline.Run(ep, cfg, pipeline.Backends.from_config(cfg, judge), store)
    run.input_sha = input_digest(paths, context.partition_key)
    return run


def _out(df: pd.DataFrame, run: pipeline.Run, meta: dict) -> Output[pd.DataFrame]:
    meta = {**meta, INPUT_SHA_KEY: run.input_sha, "recomputed": MetadataValue.json(run.memo.misses), "reused": MetadataValue.json(run.memo.hits),
            "agent_calls": len(run.backends.agents.calls),
            "backends": MetadataValue.json(json.loads(pipeline.canonical(run.backends.fingerprint())))}
    with warnings.catch_warnings():  # DataVersion is marked beta in dagster 1.13
        warnings.simplefilter("ignore")
        version = content_data_version(pipeline.canonical(df.astype(str).to_dict("records")))
        return Output(df, data_version=version, metadata=meta)


@asset(partitions_def=PARTITIONS, group_name=GROUP, code_version=pipeline.CODE_VERSION, kinds={"python"})
def entitymem_bank(context: AssetExecutionContext, paths: BenchPaths, store: Store,
                   judge: Judge) -> Output[pd.DataFrame]:
    """Stage 1: per entity, the Classification Agent's decision, the textual memory, and the reference: portrait
    candidates per chroma key, their cut-outs, the selection grid and the Verification Agent's verdicts (every
    attempt kept), or a location's panorama and its left / centre / right crops."""
    run = make_run(context, paths, store, judge)
    cls_rows, refs = pipeline.build_bank(run)
    df = rows.bank_rows(cls_rows, refs)
    return _out(df, run, {"entities": len(df), "retries": int((df["attempts"] > 1).sum()),
                          "unverified": int((df["verified"] == False).sum()),  # noqa: E712 (None: no portrait)
                          "audit": MetadataValue.md(rows.bank_markdown(df, store))})


@asset(partitions_def=PARTITIONS, group_name=GROUP, code_version=pipeline.CODE_VERSION, deps=[entitymem_bank])
def entitymem_layouts(context: AssetExecutionContext, paths: BenchPaths, store: Store,
                      judge: Judge) -> Output[pd.DataFrame]:
    """Stage 2a: per shot, the Layout Agent's plan: keyframes with cells on the 7-cell grid, camera angle, pan,
    and for continuations the previous shot's state (retained / entering / leaving)."""
    run = make_run(context, paths, store, judge)
    df = rows.layout_rows(pipeline.plan_layouts(run))
    return _out(df, run, {"shots": len(df), "keyframes": int(df["n_keyframes"].sum()),
                          "repairs": int(df["repairs"].map(lambda r: len(json.loads(r))).sum())})


@asset(partitions_def=PARTITIONS, group_name=GROUP, code_version=pipeline.CODE_VERSION)
def entitymem_keyframes(context: AssetExecutionContext, paths: BenchPaths, store: Store, judge: Judge,
                        entitymem_bank: pd.DataFrame, entitymem_layouts: pd.DataFrame) -> Output[pd.DataFrame]:
    """Stage 2b: the compositor's keyframe images (camera angle's crop + height-normalised cut-outs)."""
    run = make_run(context, paths, store, judge)
    cls_rows, refs = rows.bank_from_rows(entitymem_bank)
    df = pd.DataFrame(pipeline.compose_keyframes(run, cls_rows, refs, rows.layouts_from_rows(entitymem_layouts)))
    df["entities"] = df["entities"].map(json.dumps)
    df["drawn"] = df["drawn"].map(json.dumps)
    marked = int(df["unverified"].map(bool).sum())
    df["unverified"] = df["unverified"].map(json.dumps)
    return _out(df, run, {"keyframes": len(df), "keyframes_with_unverified_references": marked,
                          "audit": MetadataValue.md(rows.images_markdown(df, store, "image"))})


@asset(partitions_def=PARTITIONS, group_name=GROUP, code_version=pipeline.CODE_VERSION)
def entitymem_shots(context: AssetExecutionContext, paths: BenchPaths, store: Store, judge: Judge,
                    entitymem_bank: pd.DataFrame, entitymem_keyframes: pd.DataFrame) -> Output[pd.DataFrame]:
    """Stage 3: the EntityMem arm's shots (labelled portraits then keyframes as references, injected prompt, the
    previous last frame as first frame for continuations), written to ``<generators>/entitymem_<config>/``."""
    run = make_run(context, paths, store, judge)
    cls_rows, refs = rows.bank_from_rows(entitymem_bank)
    kf = entitymem_keyframes.assign(entities=entitymem_keyframes["entities"].map(json.loads),
                                    unverified=entitymem_keyframes["unverified"].map(json.loads)).to_dict("records")
    shots = pipeline.generate_entitymem(run, cls_rows, refs, kf)
    written = pipeline.write_outputs(store, paths.generators_dir, run.cfg, "entitymem", run.ep.episode_id, shots,
                                     run.backends)
    df = rows.shot_rows(shots, run.cfg.generator_names()["entitymem"])
    return _out(df, run, {"shots": len(df), "files_written": len(written),
                          "shots_with_unverified_references": len(pipeline.unverified_summary(shots).get("shots", [])),
                          "folder": MetadataValue.path(str(paths.generators_dir / run.cfg.generator_names()[
                              "entitymem"])),
                          "audit": MetadataValue.md(rows.images_markdown(df, store, "first_frame"))})


@asset(partitions_def=PARTITIONS, group_name=GROUP, code_version=pipeline.CODE_VERSION)
def entitymem_control_shots(context: AssetExecutionContext, paths: BenchPaths, store: Store,
                            judge: Judge) -> Output[pd.DataFrame]:
    """The storymem-style control from the same configuration: the same backbone with the benchmark's shot
    prompt and whole middle frames of earlier generated shots as memory, written to
    ``<generators>/storymem-control_<config>/``."""
    run = make_run(context, paths, store, judge)
    shots = pipeline.generate_control(run)
    written = pipeline.write_outputs(store, paths.generators_dir, run.cfg, "control", run.ep.episode_id, shots,
                                     run.backends)
    df = rows.shot_rows(shots, run.cfg.generator_names()["control"])
    return _out(df, run, {"shots": len(df), "files_written": len(written)})


@asset(partitions_def=PARTITIONS, group_name=GROUP, code_version="1")
def entitymem_audit(context: AssetExecutionContext, store: Store, entitymem_bank: pd.DataFrame,
                    entitymem_layouts: pd.DataFrame, entitymem_keyframes: pd.DataFrame,
                    entitymem_shots: pd.DataFrame, entitymem_control_shots: pd.DataFrame) -> Output[pd.DataFrame]:
    """The (configuration, episode)'s audit page (audit.py): every candidate, grid, verdict, layout, keyframe,
    reference, first frame and shot, written to ``<store>/reports/entitymem/<config>/<episode>.html``."""
    import os
    config, episode = split(context.partition_key)
    path = store._join("reports", "entitymem", config, f"{episode}.html")
    here = os.path.dirname(path)

    def href(sha: str, ext: str) -> str:
        target = store.artifact_path(sha, ext)
        return os.path.relpath(target, here) if store.is_local else target

    text = audit.page(config, episode, entitymem_bank, entitymem_layouts, entitymem_keyframes, entitymem_shots,
                      entitymem_control_shots, href)
    store._atomic_write(path, lambda f: f.write(text.encode()))
    n_img = text.count("<img")
    df = pd.DataFrame([{"config": config, "episode": episode, "page": path, "images": n_img,
                        "videos": text.count("<video")}])
    return Output(df, metadata={"page": MetadataValue.path(path), "images": n_img})


@asset(group_name=GROUP, code_version="1",
       deps=["entitybench_leaderboard", "entitybench_gap_decay"],
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def entitymem_comparison(context: AssetExecutionContext, store: Store) -> Output[pd.DataFrame]:
    """EntityMem against its control on EntityBench's scores, per configuration: the paired Cohen's d per metric
    category (paper Table 5) and the LLM face identity by recurrence gap (Table 19; DINOv2 beside it)."""
    records, gap = rows.read_scores(store)
    t5 = rows.table5(records)
    t19 = rows.table19(gap, records)
    return Output(t5, metadata={"pairs": int(t5["configuration"].nunique()) if len(t5) else 0,
                                "table5": MetadataValue.md(rows.table5_markdown(t5)),
                                "table19": MetadataValue.md(rows.table19_markdown(t19))})


PARTITIONED = [entitymem_bank, entitymem_layouts, entitymem_keyframes, entitymem_shots, entitymem_control_shots,
               entitymem_audit]
ASSETS = [*PARTITIONED, entitymem_comparison]
PARTITIONED_KEYS = [a.key.to_user_string() for a in PARTITIONED]
# the UI's job: one (configuration, episode) partition per run
JOB = define_asset_job("entitymem_generate", selection=PARTITIONED_KEYS)
