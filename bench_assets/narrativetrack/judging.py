"""Judge requests of NarrativeTrack (prompts ours, written from the paper's appendix 7.2, 7.3, 8.2), and the
answerer request: a video MLLM behind the same judge interface, with its own model id."""
from __future__ import annotations

from typing import Optional, Sequence

import cv2
import numpy as np

from bench_resources.judge import Judge, JudgeRequest, png_bytes

VERSION = "1"
SYSTEM = "You are a careful video annotation assistant. Answer only from visual evidence."

VERIFY_SCHEMA = {"type": "object", "required": ["verdicts"], "properties": {"verdicts": {
    "type": "array", "items": {"type": "object", "required": ["same_identity", "justification"], "properties": {
        "same_identity": {"type": ["boolean", "string"], "enum": [True, False, "unsure"]},
        "justification": {"type": "string"}}}}}}
CONTEXT_SCHEMA = {"type": "object", "required": ["action", "outfit", "scene"],
                  "properties": {k: {"type": "string"} for k in ("action", "outfit", "scene")}}
FLAG_KEYS = ("significant_action_transition", "significant_scene_transition", "significant_outfit_transition",
             "similar_looking_existence", "over_three_action_changes", "over_three_outfit_changes",
             "over_three_scene_changes")
FLAGS_SCHEMA = {"type": "object", "required": list(FLAG_KEYS) + ["other_entities"], "properties": {
    **{k: {"type": "boolean"} for k in FLAG_KEYS},
    "justification": {"type": "object"},
    "other_entities": {"type": "array", "items": {"type": "object", "properties": {
        "actions": {"type": "string"}, "outfits": {"type": "string"}}}}}}
GRAMMAR_SCHEMA = {"type": "object", "required": ["grammar", "understandable"], "properties": {
    "justification": {"type": "string"}, "grammar": {"type": "string"}, "understandable": {"type": "string"}}}
SIMILAR_SCHEMA = {"type": "object", "required": ["answer"], "properties": {
    "justification": {"type": "string"}, "answer": {"type": "string", "enum": ["yes", "no"]}}}
ANSWER_SCHEMA = {"type": "object", "required": ["answer"], "properties": {
    "answer": {"type": "string"}, "justification": {"type": "string"}}}


def verify_request(reference: np.ndarray, faces: Sequence[np.ndarray], entity: str) -> JudgeRequest:
    n = len(faces)
    text = (f"You are given a reference image of a person, followed by a set of {n} face crop images. For each face "
            "crop, determine whether it depicts the same person as the reference image. Do not evaluate the reference "
            "image itself. Analyse all face crops together and use patterns across them (shared features, "
            "accessories) to make consistent decisions. Criteria: facial features (eyes, nose, mouth, face shape), "
            "hair style and colour, accessories such as glasses or earrings when consistent, and contextual clues "
            "such as clothing or background only if the face is partially visible. Be conservative in high-"
            "confidence matches and explain uncertainty (blur, occlusion). Images: the first is the reference (do not "
            f"evaluate it); the following {n} are face_crop1 to face_crop{n}. Return 'verdicts': one object per face "
            "crop in the exact order given, each with 'same_identity' (true, false or \"unsure\") and a brief "
            "'justification'.")
    return JudgeRequest("narrativetrack.verify_identity", VERSION, SYSTEM, text, VERIFY_SCHEMA,
                        [png_bytes(reference)] + [png_bytes(f) for f in faces], {"entity": entity, "n": n})


def context_request(frames: Sequence[np.ndarray], entity: str, segment: int) -> JudgeRequest:
    text = ("You will be shown frames of a short video clip in which a single person is highlighted with a green "
            "bounding box: the subject of interest. From visual evidence inside the green box and the visible "
            "background, extract: 1. action: one fine-grained action the person performs (an -ing phrase; if the "
            "person interacts with an item or a person, name it, e.g. 'raising a suitcase', never 'an object'); "
            "2. outfit: what the person wears (clothing type, colour, accessories); 3. scene: a brief description of "
            "the setting (e.g. 'kitchen', 'forest trail', 'office room'). Describe observable behaviour, not "
            "intentions or emotions; if the person switches actions, give the most dominant one. If no bounding box "
            "is visible in any frame, return \"INVALID\" for all three fields.")
    return JudgeRequest("narrativetrack.context", VERSION, SYSTEM, text, CONTEXT_SCHEMA,
                        [png_bytes(f) for f in frames], {"entity": entity, "segment": segment})


def flags_request(frames: Sequence[np.ndarray], entity: str, actions: list, outfits: list, scenes: list
                  ) -> JudgeRequest:
    text = ("The frames show a video in which the target person is highlighted by green bounding boxes. Summary of "
            f"the target's changes: action changes {actions}; outfit changes {outfits}; scene changes {scenes}. "
            "Decide, each as true or false with a justification: significant_action_transition, "
            "significant_outfit_transition and significant_scene_transition (only from the change descriptions); "
            "similar_looking_existence (does another person with a similar look or outfit appear in the video); "
            "over_three_action_changes, over_three_outfit_changes, over_three_scene_changes (three or more distinct "
            "states in the change description). A single element in a change list means false. Also describe, in "
            "'other_entities', the single action and the outfit of each other person not highlighted.")
    return JudgeRequest("narrativetrack.flags", VERSION, SYSTEM, text, FLAGS_SCHEMA, [png_bytes(f) for f in frames],
                        {"entity": entity})


def grammar_request(template: str, question: str) -> JudgeRequest:
    text = ("You will be given a template and a question. Determine whether the question is grammatically correct "
            "and easy to understand, keeping its intent consistent with the template. If it is grammatical, set "
            "'grammar' to \"yes\", else to a corrected version that preserves its meaning. If it is easy to "
            "understand, set 'understandable' to \"yes\", else to a clearer version with the same meaning. Give a "
            f"brief 'justification'.\n### Template: {template}\n### Question: {question}")
    return JudgeRequest("narrativetrack.grammar", VERSION, SYSTEM, text, GRAMMAR_SCHEMA, (), {})


def similar_request(option1: str, option2: str) -> JudgeRequest:
    text = ("You will be given two options. Determine whether they are semantically similar or whether one is a "
            "higher-level (more general) version of the other. Similar (e.g. 'office' vs 'office with a picture'): "
            "\"yes\". One more general than the other (e.g. 'indoor room' vs 'office'): \"yes\". One a subset of the "
            "other: \"yes\". Some overlapping elements but not similar: \"no\". Otherwise \"no\". Give a brief "
            f"'justification'.\n### Option1: {option1}\n### Option2: {option2}")
    return JudgeRequest("narrativetrack.option_similarity", VERSION, SYSTEM, text, SIMILAR_SCHEMA, (), {})


def answer_request(frames: Sequence, question_text: str, qa_id: str) -> JudgeRequest:
    """``frames``: RGB arrays or their PNG bytes (encode once, ask many)."""
    text = (f"The {len(frames)} images are frames sampled uniformly, in order, from one video. Answer the question "
            "about the video. Return JSON with 'answer' (only the answer: yes/no, one option letter, or the option "
            f"letters in chronological order) and a brief 'justification'.\nQuestion: {question_text}")
    return JudgeRequest("narrativetrack.answer", VERSION, "You are a video question answering model.", text,
                        ANSWER_SCHEMA, [f if isinstance(f, bytes) else png_bytes(f) for f in frames], {"qa_id": qa_id})


def answerer_judge(judge: Judge, model: str, endpoint: Optional[dict] = None) -> Judge:
    """The answerer: the configured judge (mode, cache, retries, concurrency bound) pointed at the answerer's model
    and endpoint (an answerer card's backend / base_url / api_key_env). Raises ValueError when the card names a
    backend this judge cannot speak."""
    ep = dict(endpoint or {})
    ep["model"] = model
    if hasattr(judge, "for_endpoint"):
        return judge.for_endpoint(**ep)
    if ep.get("backend", "anthropic") != "anthropic":  # an older judge without backends
        raise ValueError(f"the judge has no {ep['backend']!r} backend")
    update = {"model": model}
    if ep.get("base_url"):
        update["base_url"] = ep["base_url"]
    if ep.get("api_key_env") is not None:
        update["api_key_env"] = ep["api_key_env"]
    return judge.model_copy(update=update)


def fit(frame: np.ndarray, longer_side: Optional[int]) -> np.ndarray:
    """A frame scaled so its longer side is ``longer_side`` (never enlarged); unchanged for None."""
    if not longer_side or max(frame.shape[:2]) <= longer_side:
        return frame
    s = longer_side / max(frame.shape[:2])
    w, h = max(1, round(frame.shape[1] * s)), max(1, round(frame.shape[0] * s))
    return cv2.resize(frame, (w, h), interpolation=cv2.INTER_AREA)
