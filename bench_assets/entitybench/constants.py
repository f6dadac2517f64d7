"""EntityBench protocol id and every constant a number depends on (recorded in the manifest and digests)."""
from __future__ import annotations

from typing import Optional

from bench_assets.core import grounding as G
from bench_assets.entitybench import metrics as M

BENCH = "entitybench"
PROTOCOL = "entitybench-1.1"   # 1.1: Pillar 1 on every consecutive native frame; gated locations
GROUNDING_FRAMES = 5
ACTION_FRAMES = 6          # even frames of a shot in the action grid
LOCATION_FRAMES = 8        # even frames of a shot the location judge picks its 2 sharpest from
PILLAR1_CHUNK = 32        # frames per streamed chunk (memory bound only; values do not depend on it)
OFFLINE_WEAK_CONF = 0.5   # offline status rule: detector confidence stands in for a_clip
CONSTANTS = {
    "grounding_frames": GROUNDING_FRAMES, "crop_pad": G.CROP_PAD, "crop_size": G.CROP_SIZE,
    "sharp_center": G.SHARP_CENTER, "sharp_scale": G.SHARP_SCALE, "area_center_pct": G.AREA_CENTER_PCT,
    "area_scale_pct": G.AREA_SCALE_PCT, "weak_clip_threshold": G.WEAK_CLIP_THRESHOLD,
    "offline_weak_conf_threshold": OFFLINE_WEAK_CONF, "pillar1_frames": "all consecutive native frames",
    "dynamic_fps": M.DYNAMIC_FPS, "dynamic_top_fraction": M.DYNAMIC_TOP_FRACTION,
    "dynamic_threshold_per_256": M.DYNAMIC_THRESHOLD_PER_256, "fidelity_gate_tau": 0.5,
}

# Which model slots produce each metric family's numbers (grounding crops come from the detector + CLIP).
_GROUNDING = ("open_vocab_detector", "clip_b32")
_PILLAR1_SLOTS = {m.metric_id: (m.slot,) if m.slot else () for m in M.PILLAR1}
_PILLAR1_SLOTS["aesthetic_quality"] = ("aesthetic", "clip_l14")


def metric_slots(metric_id: str) -> tuple[str, ...]:
    if metric_id in _PILLAR1_SLOTS:
        return _PILLAR1_SLOTS[metric_id]
    if metric_id.startswith("intra_action_"):
        return ("open_vocab_detector",)
    if metric_id.endswith("_presence") or metric_id.startswith("intra_"):
        return _GROUNDING
    if metric_id == "cs_face_identity":
        return ("face", *_GROUNDING)
    if metric_id.startswith(("cs_", "llm_", "gap_decay")):
        return ("image_embedder", *_GROUNDING)
    return ()


# Short names for the offline substitutes, as they are printed beside a paper metric id.
_SHORT = (("efficientnet-lite0", "efficientnet-lite0"), ("ssd_mobilenet", "ssd-mobilenetv2-coco+minilm"),
          ("opencv dis", "opencv-dis-flow"), ("yunet", "yunet+sface"), ("yolo-world", "yolo-world"))


def _short(checkpoint: str) -> str:
    low = checkpoint.lower()
    return next((v for k, v in _SHORT if k in low), checkpoint.split(" (")[0].lower())


def substitute_map(models) -> dict[str, Optional[str]]:
    """slot -> short name of the substitute in use, or None where the paper's model (or nothing) runs.

    CLIP ViT-B/32 missing is named too: grounding then ranks boxes by detector confidence instead of a_clip."""
    from bench_resources.models.specs import SLOTS
    out: dict[str, Optional[str]] = {}
    for slot in {s for m in (*_PILLAR1_SLOTS.values(), _GROUNDING, ("image_embedder", "face")) for s in m}:
        if slot not in SLOTS:
            continue
        st = models.status(slot)
        if slot == "clip_b32":
            out[slot] = None if st.available else "no-clip (detector confidence for a_clip)"
        elif st.available and st.checkpoint != SLOTS[slot].paper.name:
            out[slot] = _short(st.checkpoint)
        else:
            out[slot] = None
    return out


def substitutes(smap: dict[str, Optional[str]], metric_id: str) -> Optional[str]:
    """'slot: name; ...' for the substitutes behind one metric id, None when the paper's models produced it."""
    parts = [f"{s}: {smap[s]}" for s in metric_slots(metric_id) if smap.get(s)]
    return "; ".join(parts) or None
