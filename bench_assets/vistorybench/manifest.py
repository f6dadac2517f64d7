"""ViStoryBench's protocol manifest and digest: checkpoints, judge, every constant. Pure (no Dagster)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.vistorybench.constants import BENCH, CONSTANTS, PROTOCOL, SLOTS

if TYPE_CHECKING:  # annotations only: bench_resources' judge and models are Dagster resource wiring
    from bench_resources.judge import Judge
    from bench_resources.models import ModelRegistry


def slot_manifest(models: ModelRegistry, names=SLOTS) -> dict[str, Any]:
    return models.manifest(names)


def vistorybench_manifest(models: ModelRegistry, judge: Judge) -> dict[str, Any]:
    m = build_manifest(benchmark=BENCH, protocol=PROTOCOL, models=slot_manifest(models), judge=judge.fingerprint(),
                       constants=CONSTANTS)
    m["profile"] = models.profile
    m["judge_mode"] = judge.mode
    return m


def protocol(models: ModelRegistry, judge: Optional[Judge] = None) -> str:
    return protocol_digest({"protocol": PROTOCOL, "models": slot_manifest(models), "constants": CONSTANTS,
                            "judge": judge.fingerprint() if judge is not None else None})
