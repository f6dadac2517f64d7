"""EntityBench protocol id and every constant a number depends on (recorded in the manifest)."""
from bench_assets.core import grounding as G
from bench_assets.entitybench import metrics as M

BENCH = "entitybench"
PROTOCOL = "entitybench-1.0"
GROUNDING_FRAMES = 5
PILLAR1_MAX_FRAMES = 16
OFFLINE_WEAK_CONF = 0.5   # offline status rule: detector confidence stands in for a_clip
CONSTANTS = {
    "grounding_frames": GROUNDING_FRAMES, "crop_pad": G.CROP_PAD, "crop_size": G.CROP_SIZE,
    "sharp_center": G.SHARP_CENTER, "sharp_scale": G.SHARP_SCALE, "area_center_pct": G.AREA_CENTER_PCT,
    "area_scale_pct": G.AREA_SCALE_PCT, "weak_clip_threshold": G.WEAK_CLIP_THRESHOLD,
    "offline_weak_conf_threshold": OFFLINE_WEAK_CONF, "pillar1_max_frames": PILLAR1_MAX_FRAMES,
    "dynamic_fps": M.DYNAMIC_FPS, "dynamic_top_fraction": M.DYNAMIC_TOP_FRACTION,
    "dynamic_threshold_per_256": M.DYNAMIC_THRESHOLD_PER_256, "fidelity_gate_tau": 0.5,
}
