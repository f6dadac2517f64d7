"""A stand-in for the authors' ``eval/evaluate_benchmark.py`` in its code shape (module-level criteria dicts, the
judge prompts as f-string assignments to ``prompt`` inside the functions that send them), with wording of our own:
the EntityBench release has no licence, so none of its text is stored here. ``write_clone(dir)`` lays it out as a
clone (``<dir>/eval/evaluate_benchmark.py``); ``drop`` removes one function, ``inject`` one expression."""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

SOURCE = '''
import numpy as np

_CROSS_SHOT_CRITERIA = {
    "character": {"face": "F-c", "hair": "H-c", "clothing": "C-c", "build": "B-c"},
    "location": {"layout": "L-c", "color_mood": "M-c", "landmarks": "K-c", "perspective": "P-c"},
    "object": {"shape": "S-c", "color_texture": "T-c", "proportions": "R-c", "details": "D-c"},
}
_INTRA_FIDELITY_CRITERIA = {
    "character": {"face": "F-f", "hair": "H-f", "clothing": "C-f", "build": "B-f"},
    "object": {"shape": "S-f", "color_texture": "T-f", "proportions": "R-f", "details": "D-f"},
    "location": {"layout": "L-f", "color_mood": "M-f", "landmarks": "K-f", "perspective": "P-f"},
}
_INTRA_ACTION_CRITERIA = {
    "subject_identity": "who", "subject_action": "does", "object_interaction": "uses", "motion_quality": "moves",
}


def vlm_judge_entity(crop_first, crop_later, description, entity_name, entity_type, model="m"):
    criteria = _CROSS_SHOT_CRITERIA.get(entity_type)
    criteria_list = "\\n".join(f"- {k}: {v}" for k, v in criteria.items())
    criteria_json = ", ".join(f'"{k}": N' for k in criteria.keys())
    prompt = f"""PAIR {entity_type} / {entity_name} / {description}
{criteria_list}
{{{criteria_json}, "similarity": N, "is_same": true/false}}"""
    return prompt


def vlm_judge_scene_set(shot_frames, shot_keys, description, location_name, model="m", max_shots=8):
    n_shots = len(shot_frames)
    prompt = (
        f"SET {location_name} in {n_shots} shots"
        + (f" ({n_sent} frames over {len(sampled_shot_keys)})" if n_shots > max_shots else "")
        + f"; {description}\\n{image_listing}"
    )
    return prompt


def evaluate_intra_shot_alignment(per_entity, action_description):
    for ent_name, info in per_entity.items():
        etype = info["etype"]
        prompt = (
            f"FIDELITY {etype} {ent_name}: {info['description']}\\n{criteria_list}\\n"
            f'{{{criteria_json}, "fidelity": N}}'
        )
    prompt = (
        f"ACTION over {len(annotated_frames)} frames: {action_description} [{labels_used}]\\n"
        + "\\n".join(criteria_lines) + "\\n"
        f'{{{criteria_json}, "overall": N, "action_depicted": true/false}}'
    )
    return prompt
'''


def write_clone(root: Path, drop: str | None = None, inject: str | None = None) -> Path:
    """The stand-in file under ``root/eval/``; ``drop``: a function name to leave out; ``inject``: an expression
    appended to the scene-set prompt (to test what the parser refuses)."""
    src = SOURCE
    if drop:
        start = src.index(f"def {drop}(")
        end = src.find("\ndef ", start + 1)
        src = src[:start] + (src[end + 1:] if end != -1 else "")
    if inject:
        src = src.replace('+ f"; {description}', f'+ {inject} + f"; {{description}}')
    path = root / "eval" / "evaluate_benchmark.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(src, encoding="utf-8")
    return path


def authors_module():
    """The authors' own evaluate_benchmark.py imported from the clone at BENCH_ENTITYBENCH_AUTHORS_CODE (it needs no
    GPU to import); the calling test is skipped without one."""
    import pytest
    root = os.environ.get("BENCH_ENTITYBENCH_AUTHORS_CODE", "").strip()
    path = Path(root) / "eval" / "evaluate_benchmark.py" if root else None
    if path is None or not path.is_file():
        pytest.skip("set BENCH_ENTITYBENCH_AUTHORS_CODE to a clone of Catherine-R-He/EntityBench (3776439)")
    spec = importlib.util.spec_from_file_location("authors_evaluate_benchmark", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
