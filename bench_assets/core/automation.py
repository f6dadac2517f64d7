"""Sensors and schedules: new generators become partitions and runs; stale partitions re-run nightly."""
from __future__ import annotations

import hashlib
import json
from typing import Callable, Sequence

from dagster import (
    AssetKey,
    AssetRecordsFilter,
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


def _latest_storage_id(instance, key: AssetKey, partition: str | None = None) -> int | None:
    recs = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None),
        limit=1).records
    return recs[0].storage_id if recs else None


def stale_or_missing(instance, assets: Sequence, keys: Sequence[AssetKey],
                     partition_keys: Callable[[AssetKey], Sequence[str | None]]) -> list[tuple[AssetKey, str | None, str]]:
    """(asset, partition, status) for every partition whose data is missing or stale.

    Dagster's own resolver decides for partitions (code versions, upstream data versions). It does not look
    through a partitioned -> unpartitioned edge, so an aggregate (a leaderboard over every generator x item)
    is also stale when any upstream partition was materialised after it: a new generator's or answerer's
    partitions then refresh the leaderboard.
    """
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
            elif pk is None and not graph.get(key).is_partitioned:
                mine = _latest_storage_id(instance, key)
                newer = [p for p in graph.get(key).parent_keys
                         if graph.has(p) and (_latest_storage_id(instance, p) or 0) > (mine or 0)]
                if newer:
                    out.append((key, pk, StaleStatus.STALE.value))
    return out


def evaluator_state(resources: dict) -> str:
    """A digest of what decides whether an evaluator-side failure would now pass: the judge's state (mode,
    backend, model, endpoint, key set; never the key) and which model slots have weights."""
    state: dict = {}
    judge = resources.get("judge")
    if judge is not None:
        state["judge"] = judge.state() if hasattr(judge, "state") else {"mode": getattr(judge, "mode", None)}
    models = resources.get("models")
    if models is not None:
        try:
            state["slots"] = {s.slot: [bool(s.available), s.fingerprint] for s in models.statuses()}
        except Exception as e:  # a registry that cannot list its slots: the state says so
            state["slots"] = f"unavailable: {type(e).__name__}"
    return hashlib.sha256(json.dumps(state, sort_keys=True, default=str).encode()).hexdigest()[:16]


EVALUATOR_STATE_TAG = "bench/evaluator_state"


def evaluator_failures(materialization) -> int:
    """``evaluator_failures`` from a materialization's metadata (0 when absent)."""
    mv = (materialization.metadata or {}).get("evaluator_failures") if materialization is not None else None
    value = getattr(mv, "value", mv)
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def needs_rerun_for_evaluator(instance, key: AssetKey, partition: str | None, state: str) -> bool:
    """True when the last materialization counted evaluator failures (judge outage, replay miss, missing
    weights) and was made under a different evaluator state than ``state``: a better state may now pass."""
    recs = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[partition] if partition is not None else None),
        limit=1).records
    if not recs or evaluator_failures(recs[0].asset_materialization) <= 0:
        return False
    run = instance.get_run_by_id(recs[0].run_id)
    return run is None or run.tags.get(EVALUATOR_STATE_TAG) != state


def generator_sensor_factory(*, benchmark: str, partitions: BenchmarkPartitions, item_ids: Callable[[], list[str]],
                             generators_root: Callable[[], str], item_assets: Sequence[str],
                             generator_assets: Sequence[str], minimum_interval_seconds: int = 30,
                             assets_fn: Callable[[], Sequence] | None = None):
    """A sensor that adds items and generators as dynamic partitions and requests their runs.

    Items first (their assets feed every generator); a generator's runs are requested once its items are
    materialised, and again whenever its folder changes (run keys carry the folder fingerprint). Only
    partitions with an asset missing or stale are requested, with only those assets: what `bench demo` or
    `bench evaluate` materialised already counts, so opening the UI after the CLI recomputes nothing.
    """

    def _assets() -> Sequence:
        if assets_fn is not None:
            return assets_fn()
        from bench_assets.benchmarks import BENCHMARKS  # lazy: benchmarks.py imports this module
        return BENCHMARKS[benchmark].assets

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
        assets = _assets()

        def todo(keys: Sequence[str], pk: str) -> list[AssetKey]:
            return sorted({k for k, _, _ in stale_or_missing(instance, assets, [AssetKey(a) for a in keys],
                                                             lambda _k: [pk])}, key=str)

        requests = []
        for i in items:
            selection = todo(item_assets, i)
            if selection:
                requests.append(RunRequest(run_key=f"item/{i}", partition_key=i, asset_selection=selection))
        ready = instance.get_materialized_partitions(AssetKey(item_assets[0]))
        cursor = json.loads(context.cursor) if context.cursor else {}
        for g in gens:
            fp = folder_fingerprint(g.path)
            for i in items:
                if i not in ready:
                    continue
                pk = partitions.key(g.name, i)
                selection = todo(generator_assets, str(pk))
                if not selection:
                    continue
                requests.append(RunRequest(
                    run_key=f"{g.name}/{i}/{fp}", partition_key=pk, asset_selection=selection,
                    tags={"bench/generator": g.name, "bench/benchmark": benchmark}))
            cursor[g.name] = fp
        if not requests:
            return SensorResult(skip_reason=SkipReason("every item and generator partition is up to date"
                                                       if items else "no item or generator found"),
                                cursor=json.dumps(cursor, sort_keys=True))
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
