"""EntityBench aggregate assets over every materialised partition: the leaderboard, the gap-decay diagnostic,
the effect sizes and the protocol manifest. The maths in board.py / audit.py."""

import json

import pandas as pd
from dagster import AssetExecutionContext, AutomationCondition, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.manifest import protocol_digest
from bench_assets.core.metric_spec import board_frame, decode_warning_counts
from bench_assets.entitybench import audit, board, counts
from bench_assets.entitybench import wiring as W
from bench_assets.entitybench.constants import BENCH
from bench_assets.entitybench.manifest import entitybench_manifest
from bench_assets.entitybench.metric_specs import METRICS
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.store import Store


METRIC_TABLES = ("entitybench_pillar1", "entitybench_presence_consistency", "entitybench_fidelity",
                 "entitybench_action", "entitybench_llm_consistency")


def _columns(con, table: str) -> set:
    return {r[0] for r in con.execute("SELECT column_name FROM information_schema.columns "
                                      f"WHERE table_name = '{table}'").fetchall()}


def shot_decode_warnings(con, tables: set) -> dict:
    """generator -> shots read with decode warnings: the probe's (``entitybench_outputs``' ``decode_warnings``) and
    the decode pass's (Pillar 1's frames FFmpeg concealed or lost, ``corrupt_frames`` / ``lost_frames`` on its shot
    rows); a shot counts once. None for a generator indexed before the probe's were recorded."""
    if "entitybench_outputs" not in tables:
        return {}
    dw = "o.decode_warnings" if "decode_warnings" in _columns(con, "entitybench_outputs") else "NULL"
    passed = "NULL AS corrupt_frames, NULL AS lost_frames"
    join = ""
    if "entitybench_pillar1" in tables and {"corrupt_frames", "lost_frames"} <= _columns(con, "entitybench_pillar1"):
        # partitions written before the pass was recorded read NULL here: the probe's record still decides
        passed = "p.corrupt_frames, p.lost_frames"
        join = ("LEFT JOIN (SELECT generator, item, shot, max(corrupt_frames) AS corrupt_frames, "
                "max(lost_frames) AS lost_frames FROM entitybench_pillar1 WHERE level = 'shot' "
                "GROUP BY generator, item, shot) p ON p.generator = o.generator AND p.item = o.episode_id "
                "AND p.shot = o.shot")
    return decode_warning_counts(con.execute(
        f"SELECT o.generator, {dw} AS decode_warnings, {passed} FROM entitybench_outputs o {join}").df())


# code_version 8: the value is the authors' episode mean, Eq. 23-25 in the detail (issue 36)
@asset(group_name=W.METRIC_GROUP, code_version="8",
       deps=[*METRIC_TABLES, "entitybench_episode"],
       automation_condition=board_condition(*METRIC_TABLES))
def entitybench_leaderboard(context: AssetExecutionContext, store: Store, models: ModelRegistry,
                            judge: Judge) -> Output[pd.DataFrame]:
    """The common board (core/metric_spec.BOARD_COLUMNS): every metric for every generator (value or None with
    reason), slice "all" and one per tier; the value is the authors' mean over episodes, the paper text's Eq. 23-25
    in each row's detail (aggregation_eq23); the maths in board.py."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    con = store.duckdb()
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    parts = []
    for t in METRIC_TABLES:
        if t not in present:
            continue
        cols = {r[0] for r in con.execute(f"SELECT column_name FROM information_schema.columns "
                                          f"WHERE table_name = '{t}'").fetchall()}
        extra = ", ".join(f"{c}" if c in cols else f"NULL AS {c}" for c in (counts.EVAL, "substitute"))
        parts.append(f"SELECT generator, item, metric_id, value, n_eval, n_failed, n_skipped, reason, protocol, "
                     f"{extra} FROM {t} WHERE level = 'item'")
    if not parts:
        raise ValueError("no EntityBench metric partition has been materialised yet")
    records = con.execute(" UNION ALL ".join(parts)).df()
    tiers = con.execute("SELECT episode_id AS item, tier FROM entitybench_episode").df()
    from bench_assets.entitybench.judging import prompt_set_id   # which judge prompts answered (board detail)
    rows = board.leaderboard_rows(records, tiers, METRICS, judge_prompts=prompt_set_id())
    table = board_frame(BENCH, rows, METRICS,
                        decode_warnings=shot_decode_warnings(con, present))
    gate = board.gate_diagnostics(records)
    manifest = entitybench_manifest(models, judge)
    main = table[table["slice"] == board.MAIN_SLICE]
    return Output(table, metadata={
        "generators": MetadataValue.json(sorted(table["generator"].unique().tolist())),
        "table": MetadataValue.md(board_markdown(table, {"slice": board.MAIN_SLICE})),
        "gate_diagnostics": MetadataValue.md(gate.to_markdown(index=False) if len(gate) else "none"),
        "evaluator_failures": int(main["n_failed_evaluator"].sum()),
        "not_evaluated": int(main["n_not_evaluated"].sum()),  # by choice: judge off, a slot the profile lacks
        "generator_failures": int(main["n_failed"].sum()),
        # shots read with decode warnings, per generator (the board's WARNING lines say the same)
        "decode_warnings": MetadataValue.json({g: (None if pd.isna(n) else int(n)) for g, n in
                                               main.groupby("generator")["n_decode_warnings"].max().items()}),
        "protocol_digest": protocol_digest(manifest), "profile": manifest["profile"],
        "judge_mode": manifest["judge_mode"],
        "grounding_status_rule": MetadataValue.text(manifest["grounding_status_rule"]),
        "manifest": MetadataValue.json(json.loads(json.dumps(manifest, default=str)))}
        | report_metadata(store, BENCH))



@asset(group_name=W.METRIC_GROUP, code_version="3",
       deps=["entitybench_presence_consistency", "entitybench_llm_consistency"],
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def entitybench_gap_decay(context: AssetExecutionContext, store: Store) -> Output[pd.DataFrame]:
    """Gap-decay diagnostic: DINOv2 cosine of adjacent admitted appearances and LLM sim of the anchor
    comparisons, binned by shot distance (1-2, 3-5, 6-10, 11-20, 21-50: the project's addition), with pair
    counts, plotted; beside them the authors' curves (every pair, one point per integer gap, mean / std as their
    report writes them: binning "authors' code: integer gaps")."""
    tables = set(store.asset_tables())
    cols = "generator, item, metric_id, shot, entity_id, value, detail"
    emb = store.query(f"SELECT {cols} FROM entitybench_presence_consistency WHERE metric_id IN "
                      f"('gap_decay_embedding', 'gap_decay_embedding_allpairs')") \
        if "entitybench_presence_consistency" in tables else None
    llm = store.query(f"SELECT {cols} FROM entitybench_llm_consistency WHERE level = 'pair' AND metric_id IN "
                      f"('llm_face_mean_score', 'llm_object_mean_score', 'llm_scene_pair')") \
        if "entitybench_llm_consistency" in tables else None
    tiers = store.query("SELECT episode_id AS item, tier FROM entitybench_episode") \
        if "entitybench_episode" in tables else None
    table = audit.gap_decay_table(emb, llm, tiers)
    png = audit.gap_decay_plot(table)
    plot_id = store.put_bytes(png, "png") if png else None
    table["plot_id"] = plot_id
    meta = {"pairs": int(table["pairs"].sum()) if len(table) else 0}
    if plot_id:
        meta["plot"] = MetadataValue.path(store.artifact_path(plot_id))
    return Output(table, metadata=meta)


@asset(group_name=W.METRIC_GROUP, code_version="1", deps=[entitybench_leaderboard],
       automation_condition=AutomationCondition.eager())
def entitybench_effect_sizes(context: AssetExecutionContext, store: Store) -> Output[pd.DataFrame]:
    """Cohen's d (pooled) and d_z (paired over shared episodes) between every two generators, per metric."""
    tables = set(store.asset_tables())
    parts = [f"SELECT generator, item, metric_id, value, protocol FROM {t} WHERE level = 'item'"
             for t in METRIC_TABLES if t in tables]
    table = board.effect_size_table(store.query(" UNION ALL ".join(parts)))
    return Output(table, metadata={"pairs": len(table)})


@asset(name="entitybench_manifest", group_name=W.METRIC_GROUP, code_version="1", deps=[entitybench_leaderboard],
       automation_condition=AutomationCondition.eager())
def entitybench_manifest_table(context: AssetExecutionContext, models: ModelRegistry,
                               judge: Judge) -> Output[pd.DataFrame]:
    """The run's protocol manifest (checkpoints, judge, constants, grounding status rule) as one row: the report
    site's EntityBench page shows its models and profile from ``manifest_json``."""
    manifest = entitybench_manifest(models, judge)
    df = pd.DataFrame([{"protocol_digest": protocol_digest(manifest), "profile": manifest["profile"],
                        "judge_mode": manifest["judge_mode"],
                        "manifest_json": json.dumps(manifest, sort_keys=True, default=str)}])
    return Output(df, metadata={"protocol_digest": protocol_digest(manifest), "profile": manifest["profile"],
                                "judge_mode": manifest["judge_mode"]})

