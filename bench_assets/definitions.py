"""The one Definitions object of the code location: it only assembles."""
from __future__ import annotations

from dagster import AutomationConditionSensorDefinition, DefaultSensorStatus, Definitions, AssetSelection

from bench_assets.core.automation import generator_sensor_factory, nightly_stale_schedule
from bench_assets.core.partitions import ENTITYBENCH
from bench_assets.entitybench import assets as entitybench
from bench_assets.entitybench.dataset import discover_episodes
from bench_resources.config import build_resources
from bench_resources.paths import BenchPaths

ALL_ASSETS = [*entitybench.ASSETS]

ENTITYBENCH_ITEM_ASSETS = ["entitybench_episode", "entitybench_entity_registry"]
ENTITYBENCH_GENERATOR_ASSETS = ["entitybench_outputs", "entitybench_grounding", "entitybench_pillar1",
                                "entitybench_fidelity", "entitybench_action", "entitybench_presence_consistency",
                                "entitybench_llm_consistency"]


def _paths() -> BenchPaths:
    return BenchPaths()


entitybench_sensor = generator_sensor_factory(
    benchmark="entitybench", partitions=ENTITYBENCH,
    item_ids=lambda: discover_episodes(_paths().benchmark_dir("entitybench") / "episodes"),
    generators_root=lambda: str(_paths().generators_dir),
    item_assets=ENTITYBENCH_ITEM_ASSETS, generator_assets=ENTITYBENCH_GENERATOR_ASSETS)

entitybench_nightly = nightly_stale_schedule(
    name="entitybench_nightly_stale", assets_fn=lambda: ALL_ASSETS,
    asset_keys=ENTITYBENCH_GENERATOR_ASSETS, partitions=ENTITYBENCH)

# Dagster's default automation sensor starts stopped; ours runs, so aggregates follow their inputs.
automation_sensor = AutomationConditionSensorDefinition(
    name="bench_automation_sensor", target=AssetSelection.all(), default_status=DefaultSensorStatus.RUNNING,
    minimum_interval_seconds=30)

defs = Definitions(
    assets=ALL_ASSETS,
    sensors=[entitybench_sensor, automation_sensor],
    schedules=[entitybench_nightly],
    resources=build_resources(),
)
