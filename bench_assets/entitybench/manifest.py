"""EntityBench's protocol manifest: checkpoints, judge, every constant, the grounding status rule in force."""
from __future__ import annotations

from typing import Any

from bench_assets.core.manifest import build_manifest
from bench_assets.entitybench.constants import CONSTANTS, PROTOCOL


def entitybench_manifest(models, judge) -> dict[str, Any]:
    slots = {s.slot: {"checkpoint": s.checkpoint, "source": s.source, "fingerprint": s.fingerprint,
                      "available": s.available, "reason": s.reason} for s in models.statuses()}
    m = build_manifest(benchmark="entitybench", protocol=PROTOCOL, models=slots, judge=judge.fingerprint(),
                       constants=CONSTANTS)
    m["profile"] = models.profile
    m["judge_mode"] = judge.mode
    clip = slots.get("clip_b32", {})
    m["grounding_status_rule"] = (
        "weak iff a_clip(c*) < 0.20 (CLIP ViT-B/32)" if clip.get("available") else
        f"CLIP unavailable: a_clip recorded as None, a = detector confidence x a_sharp x a_area, weak iff detector "
        f"confidence < {CONSTANTS['offline_weak_conf_threshold']}; entities sharing a class in a shot are flagged "
        f"ambiguous and kept out of identity metrics")
    return m
