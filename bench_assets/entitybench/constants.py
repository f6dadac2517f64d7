"""EntityBench protocol id and every constant a number depends on (recorded in the manifest and digests)."""
from __future__ import annotations

import pandas as pd

from bench_assets.core import grounding
from bench_assets.core.metric_spec import join_substitutes, label_substitutes as label_from_specs
from bench_assets.entitybench import metrics
from bench_assets.entitybench.metric_specs import METRICS

BENCH = "entitybench"
PROTOCOL = "entitybench-1.1"   # 1.1: Pillar 1 on every consecutive native frame; gated locations
GROUNDING_FRAMES = 5
ACTION_FRAMES = 6          # even frames of a shot in the action grid
LOCATION_FRAMES = 8        # even frames of a shot the location judge picks its 2 sharpest from
PILLAR1_CHUNK = 32        # frames per streamed chunk (memory bound only; values do not depend on it)
OFFLINE_WEAK_CONF = 0.5   # offline status rule: detector confidence stands in for a_clip
CONSTANTS = {
    "grounding_frames": GROUNDING_FRAMES, "crop_pad": grounding.CROP_PAD, "crop_size": grounding.CROP_SIZE,
    "sharp_center": grounding.SHARP_CENTER, "sharp_scale": grounding.SHARP_SCALE,
    "area_center_pct": grounding.AREA_CENTER_PCT, "area_scale_pct": grounding.AREA_SCALE_PCT,
    "weak_clip_threshold": grounding.WEAK_CLIP_THRESHOLD,
    "offline_weak_conf_threshold": OFFLINE_WEAK_CONF, "pillar1_frames": "all consecutive native frames",
    "dynamic_fps": metrics.DYNAMIC_FPS, "dynamic_top_fraction": metrics.DYNAMIC_TOP_FRACTION,
    "dynamic_threshold_per_256": metrics.DYNAMIC_THRESHOLD_PER_256, "fidelity_gate_tau": 0.5,
}
NO_CLIP = "clip_b32: no-clip (detector confidence for a_clip)"


def label_substitutes(df, models):
    """The ``substitute`` column of a metric table (core ``label_substitutes`` over the specs' slots), plus the one
    EntityBench case the checkpoint comparison cannot see: CLIP ViT-B/32 missing, where grounding ranks boxes by
    detector confidence instead of a_clip (every metric fed by grounding crops carries that mark)."""
    label_from_specs(df, METRICS, models)
    if len(df) and not models.status("clip_b32").available:
        grounded = {m for m in df["metric_id"].dropna().unique()
                    if (s := METRICS.get(m)) is not None and "clip_b32" in s.slots}
        df["substitute"] = pd.array([join_substitutes([v, NO_CLIP]) if m in grounded else v
                                     for m, v in zip(df["metric_id"], df["substitute"])], dtype="string")
    return df
