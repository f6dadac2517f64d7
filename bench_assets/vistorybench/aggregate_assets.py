"""ViStoryBench aggregates: the leaderboard (every metric per generator, full set and Lite; board.py) and its
alignment with the human ratings (human_alignment.py)."""

import json

import pandas as pd
from dagster import AssetExecutionContext, AutomationCondition, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.generators import GeneratorError, read_generator
from bench_assets.core.manifest import protocol_digest
from bench_assets.vistorybench import board, dataset, human_alignment
from bench_assets.vistorybench.constants import BENCH
from bench_assets.vistorybench.manifest import vistorybench_manifest
from bench_assets.vistorybench.metric_assets import (vistorybench_alignment, vistorybench_inception_score,
                                                     vistorybench_scores)
from bench_assets.vistorybench.input_assets import vistorybench_story
from bench_assets.vistorybench.wiring import GROUP
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store


# code version 6: the good-faces-only additions are cells, and the CIDS cells carry the slice's low-quality face
# counts (detail; issue 23)
@asset(group_name=GROUP, code_version="6",
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
