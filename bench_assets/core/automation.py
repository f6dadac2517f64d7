"""Sensors and schedules: new generators become partitions and runs; stale partitions re-run nightly."""
from __future__ import annotations

import json
from typing import Callable, Sequence

from dagster import (
    AssetKey,
    AssetSelection,
    DefaultSensorStatus,
    DefaultScheduleStatus,
    RunRequest,
    SensorEvaluationContext,
    SensorResult,
    SkipReason,
    ScheduleEvaluationContext,
    schedule,
    sensor,
)
from dagster._core.definitions.assets.graph.asset_graph import AssetGraph
from dagster._core.asset_graph_view.asset_graph_view import AssetGraphView, TemporalContext
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._time import get_current_datetime

from bench_assets.core.generators import discover_generators, folder_fingerprint
from bench_assets.core.names import BadName, validate_key
from bench_assets.core.partitions import BenchmarkPartitions


def stale_or_missing(instance, assets: Sequence, keys: Sequence[AssetKey],
                     partition_keys: Callable[[AssetKey], Sequence[str | None]]) -> list[tuple[AssetKey, str | None, str]]:
    """(asset, partition, status) for every partition whose data is missing or stale (Dagster's own resolver)."""
    graph = AssetGraph.from_assets(assets)
    view = AssetGraphView(temporal_context=TemporalContext(effective_dt=get_current_datetime(), last_event_id=None),
                          instance=instance, asset_graph=graph)
    resolver = CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=view)
    out = []
    for key in keys:
        for pk in partition_keys(key):
            status = resolver.get_status(key, pk)
            if status in (StaleStatus.MISSING, StaleStatus.STALE):
                out.append((key, pk, status.value))
    return out


def generator_sensor_factory(*, benchmark: str, partitions: BenchmarkPartitions, item_ids: Callable[[], list[str]],
                             generators_root: Callable[[], str], item_assets: Sequence[str],
                             generator_assets: Sequence[str], minimum_interval_seconds: int = 30):
    """A sensor that adds items and generators as dynamic partitions and requests their runs.

    Items first (their assets feed every generator); a generator's runs are requested once its items are
    materialised, and again whenever its folder changes (run keys carry the folder fingerprint).
    """

    @sensor(name=f"{benchmark}_generators_sensor", minimum_interval_seconds=minimum_interval_seconds,
            default_status=DefaultSensorStatus.RUNNING,
            asset_selection=AssetSelection.assets(*item_assets, *generator_assets))
    def _sensor(context: SensorEvaluationContext):
        instance = context.instance
        errors: list[str] = []
        items = []
        for item in item_ids():
            try:
                items.append(validate_key(item, f"{benchmark} item"))
            except BadName as e:
                errors.append(str(e))
        gens, gen_errors = discover_generators(generators_root(), benchmark)
        errors += gen_errors
        for e in errors:
            context.log.error(e)
        known_items = set(instance.get_dynamic_partitions(partitions.items.name))
        known_gens = set(instance.get_dynamic_partitions(partitions.generators.name))
        new_items = [i for i in items if i not in known_items]
        new_gens = [g.name for g in gens if g.name not in known_gens]
        if new_items:
            instance.add_dynamic_partitions(partitions.items.name, new_items)
        if new_gens:
            instance.add_dynamic_partitions(partitions.generators.name, new_gens)
        requests = [RunRequest(run_key=f"item/{i}", partition_key=i, asset_selection=[AssetKey(a) for a in item_assets])
                    for i in items]
        ready = instance.get_materialized_partitions(AssetKey(item_assets[0]))
        cursor = json.loads(context.cursor) if context.cursor else {}
        for g in gens:
            fp = folder_fingerprint(g.path)
            for i in items:
                if i not in ready:
                    continue
                requests.append(RunRequest(
                    run_key=f"{g.name}/{i}/{fp}", partition_key=partitions.key(g.name, i),
                    asset_selection=[AssetKey(a) for a in generator_assets],
                    tags={"bench/generator": g.name, "bench/benchmark": benchmark}))
            cursor[g.name] = fp
        if not requests:
            return SkipReason("no item or generator found")
        return SensorResult(run_requests=requests, cursor=json.dumps(cursor, sort_keys=True))

    return _sensor


def nightly_stale_schedule(*, name: str, assets_fn: Callable[[], Sequence], asset_keys: Sequence[str],
                           partitions: BenchmarkPartitions, cron: str = "0 3 * * *"):
    """Re-evaluate, every night, the generator x item partitions whose code or inputs changed."""

    @schedule(name=name, cron_schedule=cron, default_status=DefaultScheduleStatus.RUNNING,
              target=AssetSelection.assets(*asset_keys))
    def _schedule(context: ScheduleEvaluationContext):
        instance = context.instance

        def pks(_key: AssetKey) -> list[str]:
            return partitions.generator_x_item.get_partition_keys(dynamic_partitions_store=instance)

        stale = stale_or_missing(instance, assets_fn(), [AssetKey(k) for k in asset_keys], pks)
        by_partition: dict[str, set[AssetKey]] = {}
        for key, pk, _ in stale:
            by_partition.setdefault(pk, set()).add(key)
        tick = get_current_datetime().strftime("%Y-%m-%d")
        return [RunRequest(run_key=f"stale/{pk}/{tick}", partition_key=pk, asset_selection=sorted(keys, key=str),
                           tags={"bench/reason": "stale"}) for pk, keys in sorted(by_partition.items())] or \
            SkipReason("nothing stale")

    return _schedule
