"""MBench's leaderboard (unpartitioned, over every scored case): the board's maths in board.py, the case table and
the missing outputs in cases.py; the protocol manifest is built here."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.core.metric_spec import decode_warning_counts
from bench_assets.mbench import board
from bench_assets.mbench import dataset
from bench_assets.mbench import wiring as W
from bench_assets.mbench.cases import missing_outputs, read_cases
from bench_assets.mbench.constants import BENCH, CONSTANTS, PROTOCOL
from bench_assets.mbench.input_assets import mbench_case
from bench_assets.mbench.metric_assets import mbench_scores
from bench_assets.mbench.wiring import GROUP
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


@asset(group_name=GROUP, code_version="5", deps=[mbench_scores, mbench_case],
       automation_condition=board_condition("mbench_scores"))
def mbench_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths, models: ModelRegistry,
                       judge: Judge) -> Output[pd.DataFrame]:
    """The common board (core/metric_spec.py): per generator and mode (slice A / T) the trigger-conditioned M-Score
    of the 12 sub-dimensions, our identity_first_appearance addition and the three dimension M-Scores (board.py).
    ``coverage`` = cases scored / cases the sub-dimension applies to; the paper's trigger coverage C_k, the
    reliability S_k and the case counts are in ``detail``."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    if "mbench_scores" not in tables:
        raise ValueError("no MBench score partition has been materialised yet")
    scores = store.query("SELECT * FROM mbench_scores")
    root = paths.benchmark_dir(BENCH) / "cases"
    cases, case_errors = read_cases(dataset.discover_cases(root), lambda i: dataset.load_case(root / f"{i}.json"))
    scores = scores[scores["case_id"].isin(cases["case_id"])]
    generators = sorted(scores["generator"].unique())
    missing = {g: missing_outputs(paths, g, cases["case_id"]) for g in generators}
    # videos read with decode warnings (mbench_scores' decode-pass columns, one record per video); None (unknown)
    # for a generator with a video scored before they were recorded
    files = scores.reindex(columns=["generator", "case_id", "corrupt_frames", "lost_frames", "decode_warnings"]
                           ).drop_duplicates(["generator", "case_id"])
    dw = {g: None for g in generators} | decode_warning_counts(files)
    table = board.leaderboard(scores, cases, generators, missing, decode_warnings=dw)
    manifest = build_manifest(benchmark=BENCH, protocol=PROTOCOL, models=W.slot_manifest(models),
                              judge=judge.fingerprint(), constants=CONSTANTS)
    return Output(table, metadata={"table": MetadataValue.md(board_markdown(table, {"slice": "A"}, digits=2)),
                                   "table_T": MetadataValue.md(board_markdown(table, {"slice": "T"}, digits=2)),
                                   "manifest": MetadataValue.json(manifest),
                                   "protocol_digest": protocol_digest(manifest),
                                   "invalid_cases": len(case_errors),
                                   "invalid_case_errors": MetadataValue.text("\n".join(case_errors)[:2000] or "none")}
                                  | report_metadata(store, BENCH))
