"""One launched run per piece of work: the `<benchmark>_evaluate` job runs the in-process evaluation (what
`bench evaluate` runs) inside a run the daemon launched, for the items and generators it is given.

Why a job around the runner and not one run per partition: a run launched by the UI, a sensor or a backfill
covers one partition key, so every (generator, item) partition paid a run launch (10-15 s here: a process,
Dagster's imports, the code location) and loaded every model again, and a generator's runs waited for its items'
run to end plus a sensor interval. Here one launched process loads each model once and materialises, in order,
the stale item partitions, the stale generator x item partitions and the stale aggregates, each as its own Dagster
run of the same instance (so lineage, staleness and the UI's partition views are exactly those of `bench
evaluate`). Every inner run is tagged with this run's id (``bench/parent_run``).

Launch it from the UI's Launchpad (empty config: every discovered item and generator, stale parts only), with
`dagster job launch -j <benchmark>_evaluate`, or let the generator sensor request it when a folder appears.
"""

import re
from typing import Callable, Iterable, Mapping, Sequence

from dagster import Config, Failure, JobDefinition, MetadataValue, in_process_executor, job, op
from pydantic import Field

# the op's name and the benchmark tag are shared with the sensor that requests this job's runs (automation.py)
from bench_assets.core.automation import BENCHMARK_TAG, evaluate_op_name, staleness_unknown_lines

PARENT_TAG = "bench/parent_run"
_CARD_FOLDER = re.compile(r"^generator(?: folder)? (['\"])(.*?)\1")


def card_folder(error: str) -> str | None:
    """The generator folder a ``discover_generators`` error names (``generator folder 'x': ...`` or ``generator
    'x' ...``), None for an error about no one folder (the root missing or unlistable)."""
    m = _CARD_FOLDER.match(error)
    return m.group(2) if m else None


class EvaluateConfig(Config):
    """What the Launchpad shows for `<benchmark>_evaluate`: every field may stay empty (its default)."""

    items: list[str] = Field(
        default=[], description="Item ids to evaluate (episodes, stories, cases, samples or videos). EMPTY = every "
                                "item found under BENCH_DATA_ROOT; only missing or stale partitions are computed.")
    generators: list[str] = Field(
        default=[], description="Generator folder names to evaluate. EMPTY = every generator folder of this "
                                "benchmark under BENCH_GENERATORS_ROOT; only missing or stale partitions are computed.")
    aggregates: bool = Field(
        default=True, description="Also refresh the aggregates (leaderboard, effect sizes, manifest) once the "
                                  "partitions are done. false = partitions only.")


def evaluate_job_factory(*, benchmark: str, assets_fn: Callable[[], Sequence], partitions,
                         item_ids: Callable[[], list[str]], generators_root: Callable[[], str],
                         item_assets: Sequence[str], generator_assets: Sequence[str],
                         aggregate_assets: Sequence[str], resources_fn: Callable[[], dict],
                         card_keys: Mapping[str, Iterable[str]] | None = None) -> JobDefinition:
    """The `<benchmark>_evaluate` job: one op that evaluates the configured (or every) item and generator."""

    @op(name=evaluate_op_name(benchmark), tags={"kind": "bench-evaluate"},
        description=f"Evaluate {benchmark}: empty config = every item and generator found, stale parts only.")
    def _evaluate(context, config: EvaluateConfig) -> None:
        from bench_assets.core.generators import discover_generators
        from bench_assets.core.runner import evaluate

        cfg = {"items": list(config.items), "generators": list(config.generators), "aggregates": config.aggregates}
        found = item_ids()
        items = [i for i in found if not cfg["items"] or i in set(cfg["items"])]
        unknown_items = sorted(set(cfg["items"]) - set(found))
        gens, found_errors = discover_generators(generators_root(), benchmark, card_keys)   # keys checked as in the CLI
        # a folder whose card cannot be read is its own error: it fails a run that names it, never the work of
        # the others (the sensor asks for the generators it could read; its tick logs the bad card)
        errors, others = [], []
        for e in found_errors:
            named = card_folder(e)
            (errors if named is None or named in cfg["generators"] else others).append(e)
        if cfg["generators"]:
            unknown = sorted(set(cfg["generators"]) - {g.name for g in gens}
                             - {card_folder(e) for e in errors})
            errors += [f"generator {g!r}: no folder with a generator.yaml for {benchmark} under {generators_root()}"
                       for g in unknown]
            gens = [g for g in gens if g.name in set(cfg["generators"])]
        errors += [f"{partitions.item_dim} {i!r}: not found" for i in unknown_items]
        for e in others:
            context.log.error(f"{e} (not evaluated; the other generators are)")
        for e in errors:
            context.log.error(e)
        for w in (w for g in gens for w in g.warnings):
            context.log.warning(w)
        resources = resources_fn()
        stats = evaluate(context.instance, assets=assets_fn(), resources=resources, partitions=partitions,
                         items=items, generators=gens, item_assets=item_assets, generator_assets=generator_assets,
                         aggregate_assets=list(aggregate_assets) if cfg["aggregates"] else [],
                         progress=context.log.info, show_progress=False, log_level="WARNING",
                         extra_tags={PARENT_TAG: context.run_id})
        for line in stats.warning_summary() + staleness_unknown_lines(stats):
            context.log.warning(line)
        context.log.info(f"{benchmark}: materialised {len(stats.materialized)} asset partitions, "
                         f"{len(stats.failed)} failed; {stats.forwards} model forwards ({stats.forward_s:.1f} s), "
                         f"{stats.judge_calls} judge calls, {stats.decodes} video decodes; wall {stats.wall_s:.1f} s")
        if stats.failed or errors:
            lines = [f"{step} [{pk}]: {msg}" for step, pk, msg in stats.failed] + errors
            raise Failure(description=f"{len(lines)} problem(s): " + "; ".join(lines[:5])
                          + (f" (+{len(lines) - 5} more)" if len(lines) > 5 else ""),
                          metadata={"problems": MetadataValue.md("\n".join(f"- {x}" for x in lines))})

    @job(name=f"{benchmark}_evaluate", executor_def=in_process_executor, tags={BENCHMARK_TAG: benchmark},
         description=f"Evaluate {benchmark}: stale item, generator x item and aggregate partitions, in one "
                     f"process (models load once). Empty config: everything found.")
    def _job():
        _evaluate()

    return _job
