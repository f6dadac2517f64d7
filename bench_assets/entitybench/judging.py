"""EntityBench judge prompts (ours, written from the paper's appendix B), their JSON schemas, and the
pure functions that turn crops / frames into requests and answers into values.

Versioned: changing a prompt's wording bumps its version, which changes every cache key that used it.
Criteria are scored 1-10 and divided by 10 (spec: "criteria 1-10 -> /10").
"""
from __future__ import annotations

from typing import Optional, Sequence

import cv2
import numpy as np

from bench_resources.judge import JudgeRequest, png_bytes

CRITERIA = {
    "character": ("face", "hair", "clothing", "build"),
    "object": ("shape", "color_texture", "proportions", "details"),
    "location": ("layout", "color_mood", "landmarks", "perspective"),
}
TYPE_PREFIX = {"character": "face", "object": "object", "location": "location"}   # intra_<prefix>_fidelity
LLM_PREFIX = {"character": "face", "object": "object", "location": "scene"}       # llm_<prefix>_*
ACTION_FIELDS = ("overall", "depicted", "subject_identity", "subject_action", "object_interaction", "motion_quality")

SYSTEM = ("You are a meticulous visual evaluator for a video-generation benchmark. Judge only what is visible. "
          "Answer by calling the record_answer tool with every required field.")
_SCORE = {"type": "integer", "minimum": 1, "maximum": 10}


def _schema(props: dict, required: Sequence[str]) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


def fidelity_request(entity_type: str, name: str, description: str, crop: np.ndarray) -> JudgeRequest:
    crit = CRITERIA[entity_type]
    what = {"character": "character", "object": "object", "location": "place"}[entity_type]
    text = (f"The image is a crop from a generated video that should show the {what} \"{name}\", described as:\n"
            f"\"{description}\"\n\nScore from 1 (contradicts the description) to 10 (matches it exactly) how well "
            f"the crop matches the description on each criterion: {', '.join(crit)}; then an overall score. "
            f"Do not reward image quality, only agreement with the description.")
    props = {"overall": _SCORE, **{c: _SCORE for c in crit}, "rationale": {"type": "string"}}
    return JudgeRequest(f"entitybench.fidelity.{entity_type}", "v1", SYSTEM, text,
                        _schema(props, ["overall", *crit]), (png_bytes(crop),))


def fidelity_values(answer: dict, entity_type: str) -> dict[str, float]:
    """{'overall': x, '<criterion>': y, ...} in [0.1, 1]."""
    return {k: answer[k] / 10.0 for k in ("overall", *CRITERIA[entity_type])}


def action_grid(frames: Sequence[np.ndarray], boxes: Sequence[dict[str, tuple]], names: dict[str, str],
                rows: int = 2, cols: int = 3) -> np.ndarray:
    """Tile 6 frames 2x3 with each scheduled entity's box drawn in its own colour and labelled by name."""
    import supervision as sv  # here, not at module level: it costs ~1.8 s of every definitions import
    ids = sorted(names)
    palette = sv.ColorPalette.DEFAULT
    box_ann = sv.BoxAnnotator(color=palette, thickness=2, color_lookup=sv.ColorLookup.CLASS)
    label_ann = sv.LabelAnnotator(color=palette, text_scale=0.4, text_padding=2, color_lookup=sv.ColorLookup.CLASS)
    tiles = []
    for frame, fb in zip(frames, boxes):
        img = np.ascontiguousarray(frame[..., ::-1])  # supervision draws on BGR
        present = [e for e in ids if e in fb]
        if present:
            det = sv.Detections(xyxy=np.array([fb[e] for e in present], np.float32),
                                class_id=np.array([ids.index(e) for e in present]))
            img = box_ann.annotate(img, det)
            img = label_ann.annotate(img, det, labels=[names[e] for e in present])
        tiles.append(img[..., ::-1])
    while len(tiles) < rows * cols:
        tiles.append(np.zeros_like(tiles[0]))
    grid = np.concatenate([np.concatenate(tiles[r * cols:(r + 1) * cols], 1) for r in range(rows)], 0)
    return np.ascontiguousarray(grid)


def action_request(grid: np.ndarray, action: str, legend: dict[str, str], names_object: bool) -> JudgeRequest:
    legend_text = "; ".join(f"{name} = {desc}" for name, desc in legend.items()) or "no labelled entity"
    fields = [f for f in ACTION_FIELDS if names_object or f != "object_interaction"]
    text = (f"The image tiles six frames of one generated video shot in time order (left to right, top to bottom). "
            f"Coloured boxes label the scheduled entities: {legend_text}.\n\nThe shot should show this action:\n"
            f"\"{action}\"\n\nScore 1-10: overall (does the shot depict the action correctly), subject_identity "
            f"(are the labelled boxes the right characters), subject_action (does the named subject perform the "
            f"verb), motion_quality (is the motion natural across frames)"
            + (", object_interaction (is the named object used as described)" if names_object else "")
            + "; and depicted: 1 if the action is depicted at all, else 0.")
    props = {f: _SCORE for f in fields if f != "depicted"}
    props["depicted"] = {"type": "integer", "enum": [0, 1]}
    props["rationale"] = {"type": "string"}
    return JudgeRequest("entitybench.action", "v1", SYSTEM, text, _schema(props, fields), (png_bytes(grid),))


def action_values(answer: dict) -> dict[str, Optional[float]]:
    out = {f: (answer[f] / 10.0 if f in answer else None) for f in ACTION_FIELDS if f != "depicted"}
    out["depicted"] = float(answer["depicted"])
    return out


def identity_request(entity_type: str, name: str, description: str, anchor: np.ndarray,
                     other: np.ndarray) -> JudgeRequest:
    crit = CRITERIA[entity_type]
    text = (f"Image 1 is the reference appearance of \"{name}\" ({description}) in a generated video; image 2 is "
            f"another shot's crop that should show the same {entity_type}. Ignore pose, lighting, background and "
            f"framing. Answer same = 1 if image 2 shows the same individual {entity_type} as image 1, else 0; sim = "
            f"how similar its identity is, from 0 to 1; and score 1-10 how consistent it is on {', '.join(crit)}.")
    props = {"same": {"type": "integer", "enum": [0, 1]}, "sim": {"type": "number", "minimum": 0, "maximum": 1},
             **{c: _SCORE for c in crit}, "rationale": {"type": "string"}}
    return JudgeRequest(f"entitybench.identity.{entity_type}", "v1", SYSTEM, text,
                        _schema(props, ["same", "sim", *crit]), (png_bytes(anchor), png_bytes(other)))


def location_request(name: str, description: str, anchor_frames: Sequence[np.ndarray],
                     other_frames: Sequence[np.ndarray]) -> JudgeRequest:
    crit = CRITERIA["location"]
    text = (f"The first {len(anchor_frames)} image(s) come from one shot, the last {len(other_frames)} from another "
            f"shot of a generated video; both should show the location \"{name}\" ({description}). Ignore foreground "
            f"people and objects, and tolerate changes of camera angle, distance and zoom. First describe the place in "
            f"each shot (description_a, description_b), then judge: same = 1 if both show the same physical place, "
            f"sim = similarity from 0 to 1, and score 1-10 the consistency of {', '.join(crit)}.")
    props = {"description_a": {"type": "string"}, "description_b": {"type": "string"},
             "same": {"type": "integer", "enum": [0, 1]}, "sim": {"type": "number", "minimum": 0, "maximum": 1},
             **{c: _SCORE for c in crit}}
    return JudgeRequest("entitybench.location", "v1", SYSTEM, text,
                        _schema(props, ["description_a", "description_b", "same", "sim", *crit]),
                        tuple(png_bytes(f) for f in [*anchor_frames, *other_frames]))


def pair_values(answer: dict, entity_type: str) -> dict[str, float]:
    return {"same": float(answer["same"]), "sim": float(answer["sim"]),
            **{c: answer[c] / 10.0 for c in CRITERIA[entity_type]}}


def sharpest(frames: Sequence[np.ndarray], k: int = 2) -> list[int]:
    """Indices of the k sharpest frames (variance of the Laplacian), sharpest first."""
    lv = [cv2.Laplacian(cv2.cvtColor(f, cv2.COLOR_RGB2GRAY), cv2.CV_64F).var() for f in frames]
    return [int(i) for i in np.argsort(lv)[::-1][:k]]


GAP_BINS = ((1, 2), (3, 5), (6, 10), (11, 20), (21, 50))


def gap_bin(distance: int) -> Optional[str]:
    for lo, hi in GAP_BINS:
        if lo <= distance <= hi:
            return f"{lo}-{hi}"
    return None
