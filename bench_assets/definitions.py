"""The one Definitions object of the code location: it only assembles (the table is benchmarks.py)."""
from __future__ import annotations

import importlib
import importlib.util

from dagster import (AssetSelection, AutomationConditionSensorDefinition, DefaultSensorStatus, Definitions,
                     define_asset_job)

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.card_keys import CARD_KEYS
from bench_assets.core.automation import generator_sensor_factory, nightly_stale_schedule
from bench_assets.core.deploy import executor_from_env, executor_kind
from bench_assets.core.evaluate_job import evaluate_job_factory
from bench_assets.core.validity import validity_asset
from bench_assets.entitymem import assets as entitymem  # the paper's baseline: generation, not a benchmark
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths

ALL_ASSETS = [a for b in BENCHMARKS.values() for a in b.assets]
ENTITYBENCH = BENCHMARKS["entitybench"].partitions  # for scripts and tests (generator x episode)


def validity_suites() -> dict:
    """Each benchmark's validity cases: ``build_suite(work_dir)`` of ``bench_assets/<benchmark>/validity.py`` where
    the folder has one (imported when a suite is built). Here, above core: core/validity.py receives them."""
    out = {}
    for name in BENCHMARKS:
        module = f"bench_assets.{name}.validity"
        if importlib.util.find_spec(module) is not None:
            out[name] = lambda work_dir, module=module: importlib.import_module(module).build_suite(work_dir)
    return out


validity_table = validity_asset(BENCHMARKS, validity_suites)

ENTITYBENCH_ITEM_ASSETS = list(BENCHMARKS["entitybench"].item_assets)
ENTITYBENCH_GENERATOR_ASSETS = list(BENCHMARKS["entitybench"].generator_assets)


def _evaluate_job(b):
    return evaluate_job_factory(
        benchmark=b.name, assets_fn=lambda: b.assets, partitions=b.partitions,
        item_ids=lambda: b.item_ids(BenchPaths()), generators_root=lambda: str(BenchPaths().generators_dir),
        item_assets=b.item_assets, generator_assets=b.generator_assets, aggregate_assets=b.aggregate_assets,
        resources_fn=build_resources, card_keys=CARD_KEYS)


# One launched run evaluates everything a tick found (models load once, as in `bench evaluate`); engines that
# spread steps over workers (multiprocess, Celery, k8s) keep one run per partition instead.
EVALUATE_JOBS = {name: _evaluate_job(b) for name, b in BENCHMARKS.items()}
FOLD_RUNS = executor_kind() in ("default", "in_process")


def _sensor(b):
    return generator_sensor_factory(
        benchmark=b.name, partitions=b.partitions, item_ids=lambda: b.item_ids(BenchPaths()),
        generators_root=lambda: str(BenchPaths().generators_dir),
        item_assets=b.item_assets, generator_assets=b.generator_assets, assets_fn=lambda: b.assets,
        evaluate_job=EVALUATE_JOBS[b.name] if FOLD_RUNS else None, card_keys=CARD_KEYS)


def _nightly(b):
    return nightly_stale_schedule(name=f"{b.name}_nightly_stale", assets_fn=lambda: ALL_ASSETS,
                                  asset_keys=b.generator_assets, partitions=b.partitions)


SENSORS = {name: _sensor(b) for name, b in BENCHMARKS.items()}
entitybench_sensor = SENSORS["entitybench"]

# Dagster's default automation sensor starts stopped; ours runs, so aggregates follow their inputs.
automation_sensor = AutomationConditionSensorDefinition(
    name="bench_automation_sensor", target=AssetSelection.all(), default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30)

# Launchable per benchmark from the UI, `dagster job launch`, or a cluster's queue: one partition per run.
JOBS = {f"{name}_{kind}": define_asset_job(f"{name}_{kind}", selection=AssetSelection.assets(*assets),
                                          partitions_def=pdef)
        for name, b in BENCHMARKS.items()
        for kind, assets, pdef in (("items", b.item_assets, b.partitions.items),
                                   ("generators", b.generator_assets, b.partitions.generator_x_item))}

SCHEDULES = {name: _nightly(b) for name, b in BENCHMARKS.items()}
entitybench_nightly = SCHEDULES["entitybench"]

defs = Definitions(
    # the validity table evaluates every registered suite from scratch: materialised on demand, never automated
    assets=[*ALL_ASSETS, validity_table, *entitymem.ASSETS],
    sensors=[*SENSORS.values(), automation_sensor],
    schedules=list(SCHEDULES.values()),
    jobs=[*JOBS.values(), *EVALUATE_JOBS.values(), entitymem.JOB],
    resources=build_resources(),
    # Launched runs execute in one process by default, so models load once per run as in `bench evaluate`;
    # BENCH_EXECUTOR=multiprocess|celery|k8s picks Dagster's other engines (core/deploy.py, docs/deployment.md)
    executor=executor_from_env(),
)
