"""EntityBench's protocol manifest: checkpoints, judge, every constant, the grounding status rule in force, the judge
prompt set, and every knob of the authors' ``BENCHMARK_CONFIG`` under the authors' names.

The authors' evaluator (Catherine-R-He/EntityBench 3776439, ``eval/evaluate_benchmark.py``) locks its configuration
in ``BENCHMARK_CONFIG`` and writes a ``run_manifest.json`` (``build_run_manifest``); two runs are comparable iff
``manifest_comparable`` finds no difference. ``authors_config`` gives the value this project runs each knob at (a
knob the project runs differently carries the project's value, so the authors' rule reports the difference), and
``run_manifest`` writes their manifest schema for ``bench export --format official``.
"""
from __future__ import annotations

import hashlib
import os
import platform
import sys
from pathlib import Path
from typing import Any, Optional

from bench_assets.core import grounding as core_grounding
from bench_assets.core.manifest import build_manifest
from bench_assets.entitybench import judging
from bench_assets.entitybench.constants import CONSTANTS, GROUNDING_FRAMES, PROTOCOL

# BENCHMARK_CONFIG's keys and values at 3776439 (the values the published tables used)
AUTHORS_CONFIG = {
    "gdino_box_threshold": 0.25, "gdino_text_threshold": 0.20, "gdino_query_max_words": 12,
    "clip_match_threshold": 0.20, "n_frames_per_shot": 5, "n_boundary_frames": 3, "n_scene_frames_per_shot": 2,
    "n_style_pairs_per_episode": 5, "crop_pad_ratio": 0.10,
    "vlm_model_entity": "gemini-2.5-pro", "vlm_model_scene": "gemini-2.5-pro", "vlm_model_style": "gemini-2.5-pro",
    "vlm_model_action": "gemini-2.5-pro", "vlm_model_intra_fidelity": "gemini-2.5-pro",
    "vlm_n_max_images_per_call": 16, "vlm_max_tokens": 50000, "cross_shot_fidelity_gate_threshold": 0.5,
    "dino_model": "facebook/dinov2-base", "clip_model": "openai/clip-vit-base-patch32",
}
# build_run_manifest's library list and checkpoint variables, in its order
AUTHORS_LIBRARIES = ("torch", "transformers", "numpy", "PIL", "vbench", "groundingdino", "openai", "imageio")
AUTHORS_CHECKPOINT_ENV = ("GDINO_CONFIG", "GDINO_WEIGHTS", "DINO_MODEL_PATH", "CLIP_MODEL_PATH", "VBENCH_CACHE_DIR")
# the slot (and its file) that plays each of them here; VBENCH_CACHE_DIR is the weights folder (a directory there)
CHECKPOINT_SLOTS = {"GDINO_CONFIG": ("open_vocab_detector", 0), "GDINO_WEIGHTS": ("open_vocab_detector", 1),
                    "DINO_MODEL_PATH": ("image_embedder", 0), "CLIP_MODEL_PATH": ("clip_b32", 0)}
# manifest_comparable ignores these (runtime metadata)
AUTHORS_IGNORED = ("method_name", "timestamp_utc", "platform", "n_vlm_keys", "n_llm_keys", "vlm_call_stats",
                   "llm_call_stats")


def _slot_state(models, name: str) -> dict:
    try:
        st = models.status(name)
    except KeyError:
        return {"available": False, "checkpoint": None, "profile": None}
    return {"available": st.available, "checkpoint": st.checkpoint, "source": st.source,
            "paper": getattr(models, "profile", None) == "paper"}


def _judge_model(judge) -> Optional[str]:
    return None if judge is None or getattr(judge, "mode", None) == "off" else getattr(judge, "model", None)


def authors_config(models, judge) -> dict[str, Any]:
    """Each BENCHMARK_CONFIG knob (the authors' name) at the value this project runs it. Where the project's run
    differs the value says what runs instead (a number, or the checkpoint / 'judge off'), never the authors' value:
    their ``manifest_comparable`` then lists the knob."""
    from bench_assets.entitybench import constants as C
    det, clip, dino = (_slot_state(models, s) for s in ("open_vocab_detector", "clip_b32", "image_embedder"))
    gdino = det["available"] and det["paper"] and str(det["checkpoint"]).startswith("GroundingDINO")
    model = _judge_model(judge) or "judge off"
    return {
        # the GroundingDINO detector's thresholds (bench_resources/models/detection.py); another detector has none
        "gdino_box_threshold": 0.25 if gdino else f"not GroundingDINO: {det['checkpoint']}",
        "gdino_text_threshold": 0.20 if gdino else f"not GroundingDINO: {det['checkpoint']}",
        # the grounding query: the description cut to this many words (None: the whole description)
        "gdino_query_max_words": getattr(C, "QUERY_MAX_WORDS", None),
        "clip_match_threshold": core_grounding.WEAK_CLIP_THRESHOLD if clip["available"] else "CLIP unavailable",
        "n_frames_per_shot": GROUNDING_FRAMES,
        # cs_transition_boundary's frames per side of a cut (the project read one until issue 36)
        "n_boundary_frames": getattr(C, "BOUNDARY_FRAMES", 1),
        "n_scene_frames_per_shot": judging.LOCATION_SET_FRAMES_PER_SHOT,
        # inert in the authors' code (vlm_judge_style is never called) and here (no style metric): the same protocol
        "n_style_pairs_per_episode": AUTHORS_CONFIG["n_style_pairs_per_episode"],
        "crop_pad_ratio": core_grounding.CROP_PAD,
        **{k: model for k in ("vlm_model_entity", "vlm_model_scene", "vlm_model_style", "vlm_model_action",
                              "vlm_model_intra_fidelity")},
        "vlm_n_max_images_per_call": judging.LOCATION_SET_MAX_SHOTS * judging.LOCATION_SET_FRAMES_PER_SHOT,
        # judge_prompts=authors sends their max_tokens on their wire (judging.AUTHORS_WIRE), else the judge's own
        "vlm_max_tokens": None if judge is None else judging.AUTHORS_WIRE.max_tokens
        if judging.authors_prompts() is not None else getattr(judge, "max_tokens", None),
        "cross_shot_fidelity_gate_threshold": CONSTANTS["fidelity_gate_tau"],
        "dino_model": AUTHORS_CONFIG["dino_model"] if dino["available"] and dino["paper"] else
        f"{dino['checkpoint']} (not DINOv2-base)" if dino["available"] else "unavailable",
        "clip_model": AUTHORS_CONFIG["clip_model"] if clip["available"] and clip["paper"] else
        f"{clip['checkpoint']}" if clip["available"] else "unavailable",
    }


def config_differences(config: dict[str, Any]) -> dict[str, tuple]:
    """knob -> (authors' value, ours) for every knob this run does not share with the authors' locked config."""
    return {k: (v, config.get(k)) for k, v in AUTHORS_CONFIG.items() if config.get(k) != v}


def entitybench_manifest(models, judge) -> dict[str, Any]:
    slots = {s.slot: {"checkpoint": s.checkpoint, "source": s.source, "fingerprint": s.fingerprint,
                      "available": s.available, "reason": s.reason} for s in models.statuses()}
    m = build_manifest(benchmark="entitybench", protocol=PROTOCOL, models=slots, judge=judge.fingerprint(),
                       constants=CONSTANTS)
    m["profile"] = models.profile
    m["judge_mode"] = judge.mode
    # which judge prompts answered: ours from the paper, or the authors' texts (path and digest of what was parsed)
    m["judge_prompts"] = judging.prompt_set_id()
    authors = judging.authors_prompts()
    if authors is not None:
        m["judge_prompts_source"] = authors.path
    m["authors_config"] = authors_config(models, judge)
    m["authors_config_differences"] = {k: list(v) for k, v in config_differences(m["authors_config"]).items()}
    clip = slots.get("clip_b32", {})
    m["grounding_status_rule"] = (
        "weak iff a_clip(c*) < 0.20 (CLIP ViT-B/32)" if clip.get("available") else
        f"CLIP unavailable: a_clip recorded as None, a = detector confidence x a_sharp x a_area, weak iff detector "
        f"confidence < {CONSTANTS['offline_weak_conf_threshold']}; entities sharing a class in a shot are flagged "
        f"ambiguous and kept out of identity metrics")
    return m


# ---------------------------------------------------------------------- the authors' run_manifest.json

def _library_versions() -> dict[str, str]:
    """build_run_manifest's loop: ``__import__(name).__version__``, 'unknown' without one, NOT_INSTALLED when the
    import fails."""
    out = {}
    for name in AUTHORS_LIBRARIES:
        try:
            mod = __import__(name)
            out[name] = getattr(mod, "__version__", "unknown")
        except Exception:  # noqa: BLE001 - the authors' rule: any import failure is NOT_INSTALLED
            out[name] = "NOT_INSTALLED"
    return out


def _fingerprint(path: Path) -> Any:
    """build_run_manifest's checkpoint record: path + size + sha256 of the first MiB (16 hex), or a directory."""
    if not path.exists():
        return f"MISSING ({path})"
    if path.is_dir():
        return {"path": str(path), "type": "directory"}
    with open(path, "rb") as f:
        head = hashlib.sha256(f.read(1024 * 1024)).hexdigest()[:16]
    return {"path": str(path), "size": path.stat().st_size, "head_sha256": head}


def _checkpoint_file(models, slot: str, index: int) -> Optional[Path]:
    st = models.status(slot)
    if not st.available or not str(st.source).startswith("local:"):
        return None
    from bench_resources.models.specs import SLOTS
    spec = SLOTS[slot]
    ck = spec.paper if models.profile == "paper" else spec.offline
    files = getattr(ck, "files", ()) or ()
    return Path(str(st.source)[len("local:"):]) / files[index] if index < len(files) else None


def run_manifest(method_name: str, models, judge, pillars=(1, 2, 3), timestamp_utc: Optional[str] = None) -> dict:
    """The authors' ``run_manifest.json`` (build_run_manifest plus what their main() adds: strict, allow_partial,
    allow_config_override, pillars, n_vlm_keys) for a run of this project: ``config`` = ``authors_config``,
    ``model_checkpoints`` = their variables played by our slots' files (UNSET where the slot has no local file:
    a package's or an unavailable one), ``libraries`` as their loop finds them in this environment. Compare two
    with ``manifest_comparable``."""
    import time
    ckpts: dict[str, Any] = {}
    for env in AUTHORS_CHECKPOINT_ENV:
        if env == "VBENCH_CACHE_DIR":
            wd = getattr(models, "weights_dir", None)
            ckpts[env] = _fingerprint(Path(wd)) if wd else "UNSET"
            continue
        slot, i = CHECKPOINT_SLOTS[env]
        path = _checkpoint_file(models, slot, i)
        ckpts[env] = _fingerprint(path) if path is not None else "UNSET"
    return {
        "method_name": method_name,
        "timestamp_utc": timestamp_utc or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "config": authors_config(models, judge),
        "python_version": sys.version.split()[0],
        "platform": platform.platform(),
        "libraries": _library_versions(),
        "model_checkpoints": ckpts,
        "strict": True,
        "allow_partial": False,
        "allow_config_override": False,
        "pillars": sorted(pillars),
        # their count of API keys (never a key); ours: one when the judge answers with a key set
        "n_vlm_keys": int(bool(_judge_model(judge)) and bool(os.environ.get(judge.key_variable() or ""))),
    }


def _major(v: Any) -> Optional[int]:
    if not v or v in ("unknown", "NOT_INSTALLED"):
        return None
    try:
        return int(str(v).split("+")[0].split("-")[0].split(".")[0])
    except ValueError:
        return None


def manifest_comparable(m1: dict, m2: dict) -> tuple[bool, list[str]]:
    """The authors' ``manifest_comparable`` rule, reproduced (their module is checked against it in
    tests/test_entitybench_authors_manifest.py when a clone is given): every top-level key but the runtime ones must
    be equal, libraries only up to the major version (unparseable or one-sided versions differ)."""
    diffs = []
    for k in sorted((set(m1) | set(m2)) - set(AUTHORS_IGNORED)):
        v1, v2 = m1.get(k), m2.get(k)
        if v1 == v2:
            continue
        if k == "libraries" and isinstance(v1, dict) and isinstance(v2, dict):
            for lib in sorted(set(v1) | set(v2)):
                a, b = v1.get(lib, "NOT_INSTALLED"), v2.get(lib, "NOT_INSTALLED")
                if a == b:
                    continue
                ma, mb = _major(a), _major(b)
                if ma is None or mb is None:
                    diffs.append(f"libraries.{lib}: {a!r} vs {b!r} (unparseable, treating as different)")
                elif ma != mb:
                    diffs.append(f"libraries.{lib}: {a!r} vs {b!r} (major version change)")
            continue
        diffs.append(f"{k}: {v1!r} vs {v2!r}")
    return not diffs, diffs
