"""In-process evaluation: what `bench demo` / `bench evaluate` run (models load once per process)."""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

from dagster import AssetKey, DagsterInstance, materialize

from bench_assets.core import media
from bench_assets.core.automation import stale_or_missing
from bench_assets.core.generators import GeneratorInfo, discover_generators
from bench_assets.core.partitions import BenchmarkPartitions
from bench_resources.paths import PROJECT_ROOT


def dagster_home() -> Path:
    home = Path(os.environ.get("DAGSTER_HOME", str(PROJECT_ROOT / "dagster_home")))
    home.mkdir(parents=True, exist_ok=True)
    cfg = home / "dagster.yaml"
    if not cfg.exists():
        shutil.copyfile(PROJECT_ROOT / "dagster.yaml", cfg)
    os.environ["DAGSTER_HOME"] = str(home)
    return home


@dataclass
class RunStats:
    materialized: list[tuple[str, Optional[str]]] = field(default_factory=list)
    failed: list[tuple[str, Optional[str], str]] = field(default_factory=list)
    wall_s: float = 0.0
    forwards: int = 0
    forward_s: float = 0.0
    judge_calls: int = 0
    decodes: int = 0


def _model_counters() -> tuple[int, float]:
    from bench_resources import models
    return models.forward_count(), models.forward_seconds()


def evaluate(instance: DagsterInstance, *, assets: Sequence, resources: dict, partitions: BenchmarkPartitions,
             items: list[str], generators: list[GeneratorInfo], item_assets: Sequence[str],
             generator_assets: Sequence[str], aggregate_assets: Sequence[str],
             progress: Callable[[str], None] = print, only_stale: bool = True,
             log_level: str = "WARNING") -> RunStats:
    """Materialise every missing or stale partition of the benchmark, item assets first, then aggregates."""
    stats = RunStats()
    t0 = time.perf_counter()
    f0, s0 = _model_counters()
    d0 = media.decode_count()
    judge = resources.get("judge")
    j0 = judge.stats()["network_calls"] if judge is not None else 0
    known_items = set(instance.get_dynamic_partitions(partitions.items.name))
    instance.add_dynamic_partitions(partitions.items.name, [i for i in items if i not in known_items])
    known_gens = set(instance.get_dynamic_partitions(partitions.generators.name))
    instance.add_dynamic_partitions(partitions.generators.name, [g.name for g in generators if g.name not in known_gens])

    def run(selection: Sequence[str], partition_key: Optional[str], label: str) -> bool:
        todo = [AssetKey(a) for a in selection]
        if only_stale:
            stale = stale_or_missing(instance, assets, todo, lambda _k: [partition_key])
            todo = sorted({k for k, _, _ in stale}, key=str)
        if not todo:
            return True
        progress(f"  materialising {label}: {', '.join(k.to_user_string() for k in todo)}")
        result = materialize(assets, selection=todo, partition_key=partition_key, instance=instance,
                             resources=resources, raise_on_error=False,
                             run_config={"loggers": {"console": {"config": {"log_level": log_level}}}})
        if result.success:
            stats.materialized += [(k.to_user_string(), partition_key) for k in todo]
            return True
        for ev in result.all_events:
            if ev.is_step_failure:
                err = ev.step_failure_data.error
                while err is not None and err.cause is not None:  # the user's error, not Dagster's wrapper
                    err = err.cause
                msg = err.message.strip().splitlines()[-1] if err is not None else "failed"
                stats.failed.append((ev.step_key or "?", partition_key, msg))
                progress(f"  FAILED {label} {ev.step_key}: {msg}")
        return False

    ok_items = []
    for i, item in enumerate(items, 1):
        progress(f"[{i}/{len(items)}] {partitions.item_dim} {item}")
        if run(item_assets, item, f"{partitions.item_dim} {item}"):
            ok_items.append(item)
    n = len(generators) * len(ok_items)
    k = 0
    for g in generators:
        for item in ok_items:
            k += 1
            progress(f"[{k}/{n}] {g.name} x {item}")
            run(generator_assets, str(partitions.key(g.name, item)), f"{g.name} x {item}")
    for a in aggregate_assets:
        run([a], None, a)
    f1, s1 = _model_counters()
    stats.forwards, stats.forward_s = f1 - f0, s1 - s0
    stats.decodes = media.decode_count() - d0
    stats.judge_calls = (judge.stats()["network_calls"] - j0) if judge is not None else 0
    stats.wall_s = time.perf_counter() - t0
    return stats
