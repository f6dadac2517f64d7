"""LoCoT2V judge prompts: ours, following the structure of the paper's appendix C (C.1 complexity, C.2 description,
C.3 event extraction, C.4 human action extraction / detection / smoothness, C.5 content clarity, C.6 HERD question
generation and polarity), versioned, with structured JSON answers through the judge's record_answer tool."""
from __future__ import annotations

import json
from typing import Sequence

import numpy as np

from bench_assets.locot2v.constants import (ACTION_SMOOTHNESS_QUESTIONS, CLARITY_IDS, EVENT_FIELDS, HERD_DIMENSIONS,
                                            HERD_QUESTIONS_PER_DIMENSION)
from bench_resources.judge import JudgeRequest, png_bytes

VERSION = "v1"
SYSTEM_TEXT = "You are an assistant that analyses text for a long text-to-video benchmark. Answer with the tool."
SYSTEM_VIDEO = ("You are a highly capable visual understanding assistant. You see frames sampled uniformly from one "
                "video, in temporal order. Judge only what is visible. Answer with the tool.")

_EVENT = {"type": "object", "properties": {f: {"type": "string"} for f in ("event", *EVENT_FIELDS)},
          "required": ["event", *EVENT_FIELDS]}
EVENTS_SCHEMA = {"type": "object", "properties": {"events": {"type": "array", "items": _EVENT}},
                 "required": ["events"]}
ACTIONS_SCHEMA = {"type": "object", "properties": {"human_actions": {"type": "array", "items": {
    "type": "object", "properties": {"subject": {"type": "string"}, "action": {"type": "string"}},
    "required": ["subject", "action"]}}}, "required": ["human_actions"]}
QUESTIONS_SCHEMA = {"type": "object", "properties": {d: {
    "type": "array", "items": {"type": "string"}, "minItems": 1} for d in HERD_DIMENSIONS},
    "required": list(HERD_DIMENSIONS)}
POLARITY_SCHEMA = {"type": "object", "properties": {"polarities": {
    "type": "array", "items": {"type": "string", "enum": ["positive", "negative"]}}}, "required": ["polarities"]}
_SCORE = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10},
                                           "explanation": {"type": "string"}}, "required": ["score"]}
COMPLEXITY_KEYS = ("semantic_complexity", "structural_complexity", "control_complexity")
COMPLEXITY_SCHEMA = {"type": "object", "properties": {k: _SCORE for k in COMPLEXITY_KEYS},
                     "required": list(COMPLEXITY_KEYS)}
DESCRIPTION_SCHEMA = {"type": "object", "properties": {"description": {"type": "string"}},
                      "required": ["description"]}
_CC = {"type": "object", "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 4},
                                        "reason": {"type": "string"}}, "required": ["score"]}
CLARITY_SCHEMA = {"type": "object", "properties": {k: _CC for k in CLARITY_IDS}, "required": list(CLARITY_IDS)}
YES_NO_SCHEMA = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["Yes", "No"]}},
                 "required": ["answer"]}
HERD_SCHEMA = {"type": "object", "properties": {"answers": {
    "type": "array", "items": {"type": "string", "enum": ["yes", "no", "unclear"]}}}, "required": ["answers"]}


def _frames(frames: Sequence[np.ndarray]) -> tuple[bytes, ...]:
    return tuple(png_bytes(np.ascontiguousarray(f)) for f in frames)


# ------------------------------------------------------------------------------------------ derived artefacts

def _event_text(kind: str, text: str) -> str:
    return (f"You are an event extraction assistant. You will be given a textual {kind}. Your task is to extract "
            "all the key events from it in the order they occur.\n\nEach event has five fields:\n"
            '- "event": a natural-language description of the event as a whole, coherent with the other events.\n'
            '- "subject": who or what is involved. If there is no clear visual subject, use "".\n'
            '- "setting": where the event takes place.\n- "action": what happens during the event.\n'
            '- "camera motion": how the camera moves or is positioned (static, panning, zoom-in, tracking); if not '
            'stated, infer it or use "static".\n\nMake sure the events form one continuous, coherent sequence; refer '
            "back to earlier subjects or settings when the story keeps them. Return the events in order in the "
            f"'events' array.\n\nHere is the {kind}:\n{text}")


def events_request(prompt_base: str) -> JudgeRequest:
    """C.3 on the prompt base: the ground-truth events."""
    return JudgeRequest("locot2v.derive.events", VERSION, SYSTEM_TEXT,
                        _event_text("description of a video", prompt_base), EVENTS_SCHEMA)


def video_events_request(description: str) -> JudgeRequest:
    """C.3 on the video's generated description: the events the video shows."""
    return JudgeRequest("locot2v.video_events", VERSION, SYSTEM_TEXT,
                        _event_text("description of a video", description), EVENTS_SCHEMA, (), {"source": "video"})


def actions_request(prompt: str) -> JudgeRequest:
    """C.4 human action extraction."""
    text = ("You are an assistant that analyzes video generation prompts. Your task is to detect whether the prompt "
            "contains any human action (a human subject performing a specific action).\n\nOutput a list in "
            "'human_actions'; each element has 'subject' (the human subject) and 'action' (the action performed). "
            "Animals and objects are not human subjects. If no human action is detected, return an empty list.\n\n"
            f"Now, analyze the following prompt:\n{prompt}")
    return JudgeRequest("locot2v.derive.human_actions", VERSION, SYSTEM_TEXT, text, ACTIONS_SCHEMA)


_HERD_EXPLAINED = (
    "1. Emotional Response: how the video made the viewer feel curious, tense, inspired, confused, etc.\n"
    "2. Narrative Flow: how the story unfolds and whether the pacing feels smooth or rushed.\n"
    "3. Character Development: how well the characters are developed and how their relationships evolve.\n"
    "4. Visual Style: the use of visuals, color and cinematography to create atmosphere.\n"
    "5. Themes: the core ideas or social commentary presented in the video.\n"
    "6. Interpretive Depth: whether the video leaves room for multiple interpretations or unanswered questions.\n"
    "7. Overall Impression: the overall impression, whether it is worth watching, and for whom.")


def herd_questions_request(herd_info: dict) -> JudgeRequest:
    """C.6 question generation, six closed questions per dimension (the paper's count)."""
    text = (f"Given a multi-dimensional evaluation of a video, generate {HERD_QUESTIONS_PER_DIMENSION} closed-ended "
            "questions (answerable with only \"yes\" or \"no\") for each dimension.\n\nEach question should:\n"
            "* accurately reflect the key message or implication of the original description;\n"
            "* use clear and natural phrasing;\n* remain faithful to the tone and nuance of the source content;\n"
            "* be specific enough to elicit a meaningful yes or no answer.\n\n"
            "Output: for each dimension key, the list of its questions.\n\nExplanation of each dimension:\n"
            f"{_HERD_EXPLAINED}\n\nInput:\n{json.dumps(herd_info, ensure_ascii=False, indent=1)}")
    return JudgeRequest("locot2v.derive.herd_questions", VERSION, SYSTEM_TEXT, text, QUESTIONS_SCHEMA)


def polarity_request(questions: Sequence[str]) -> JudgeRequest:
    """C.6 polarity judgment, for a list of questions (one label per question, in order)."""
    qs = "\n".join(f"{i + 1}. {q}" for i, q in enumerate(questions))
    text = ("You are given a list of evaluative questions about a video. Each question checks whether the video "
            "meets or fails human expectations in some aspect. Classify each question as positive or negative:\n"
            "- If the question asks whether the video achieved or matched an intended/expected effect, it is "
            "positive (a \"Yes\" means the video met expectations).\n"
            "- If the question asks whether the video failed to achieve or lacked something that is expected, it is "
            "negative (a \"Yes\" means the video did not meet expectations).\n\n"
            f"Output one label per question, in order, in 'polarities'.\n\nQuestions:\n{qs}")
    return JudgeRequest("locot2v.derive.herd_polarity", VERSION, SYSTEM_TEXT, text, POLARITY_SCHEMA, (),
                        {"n": len(questions)})


def complexity_request(prompt: str) -> JudgeRequest:
    """C.1 prompt complexity (semantic, structural, control; 1-10 each)."""
    text = ("You are an expert evaluator of prompts used for image or video generation. Analyse the complexity of the "
            "given prompt and score each dimension 1-10 with a short explanation.\n\n"
            "1. Semantic complexity: number of entities, attributes or modifiers, abstract or metaphorical concepts, "
            "relationships or interactions between entities.\n"
            "2. Structural complexity: prompt length and density, nested or hierarchical descriptions, logical "
            "relations (conditions, causality, comparisons), scene richness.\n"
            "3. Control complexity: artistic or stylistic constraints, technical constraints (camera angle, lens, "
            "lighting), temporal dynamics (actions, transitions), consistency requirements, explicit numeric or "
            f"technical parameters.\n\nNow evaluate the following prompt:\n{prompt}")
    return JudgeRequest("locot2v.derive.complexity", VERSION, SYSTEM_TEXT, text, COMPLEXITY_SCHEMA)


# ------------------------------------------------------------------------------------------ video questions

def description_request(frames: Sequence[np.ndarray]) -> JudgeRequest:
    """C.2 overall description."""
    text = ("Your goal is to produce a coherent and clear paragraph that accurately summarizes the content of the "
            "video. Follow these steps internally (do not output intermediate results):\n"
            "1. Event detection: identify all major events and arrange them in chronological order.\n"
            "2. Visual element analysis: for each event, the subjects (appearance), the environment (lighting, "
            "layout, textures, atmosphere, background), the actions (how they are performed, slow or rapid, smooth "
            "or abrupt) and the camera dynamics (type, speed and purpose of camera movements).\n"
            "3. Event description: describe each event with these visual elements.\n"
            "4. Summary composition: integrate all event descriptions into one well-structured paragraph that "
            "captures the full sequence. Put that paragraph in 'description'.")
    return JudgeRequest("locot2v.describe", VERSION, SYSTEM_VIDEO, text, DESCRIPTION_SCHEMA, _frames(frames))


def clarity_request(frames: Sequence[np.ndarray], round_index: int) -> JudgeRequest:
    """C.5 content clarity; one request per round (the round index is part of the cache key)."""
    text = ("You are a vision-language evaluator. Watch the input video and evaluate how well it communicates a "
            "coherent and meaningful narrative.\n\nEvaluate across four dimensions (score 0-4: 0 = Very Poor, "
            "1 = Poor, 2 = Acceptable, 3 = Good, 4 = Excellent). For each dimension give 'score' and 'reason' "
            "(1-2 sentences citing what is visible).\n"
            "1. theme_clarity - Is there a clear central theme or message?\n"
            "2. logical_structure - Do scenes flow coherently?\n"
            "3. information_completeness - Is enough visual context provided to understand the video?\n"
            "4. information_consistency - Are visual elements consistent across shots?")
    return JudgeRequest("locot2v.content_clarity", VERSION, SYSTEM_VIDEO, text, CLARITY_SCHEMA, _frames(frames),
                        {"round": int(round_index)})


def occurrence_request(subject: str, action: str, frames: Sequence[np.ndarray]) -> JudgeRequest:
    """C.4 human action detection: one Yes/No occurrence question."""
    question = f"Did {subject} {action} in the video?"
    text = ("You are an action verification assistant. Answer whether a specific action happens in the video, "
            "strictly Yes or No. If you are unsure, answer No.\n\n"
            "Examples:\nQuestion: Did the man run in the video?\nAnswer: Yes\n"
            "Question: Did the woman jump in the video?\nAnswer: No\n\n"
            f"Question: {question}")
    return JudgeRequest("locot2v.human_action.occurrence", VERSION, SYSTEM_VIDEO, text, YES_NO_SCHEMA,
                        _frames(frames), {"subject": subject, "action": action})


def smoothness_request(subject: str, action: str, question: str, frames: Sequence[np.ndarray]) -> JudgeRequest:
    """C.4 human action smoothness: one of the three preset Yes/No questions."""
    text = ("You are an action smoothness evaluation assistant. Answer a binary question about how smoothly an "
            "action is performed in the video, strictly Yes or No. If you are unsure, answer No.\n\n"
            f"Action: {subject} {action}\nQuestion: {question}")
    return JudgeRequest("locot2v.human_action.smoothness", VERSION, SYSTEM_VIDEO, text, YES_NO_SCHEMA,
                        _frames(frames), {"subject": subject, "action": action, "question": question})


SMOOTHNESS_QUESTIONS = ACTION_SMOOTHNESS_QUESTIONS


def herd_request(dimension: str, questions: Sequence[str], frames: Sequence[np.ndarray]) -> JudgeRequest:
    """HERD: the six questions of one dimension, each answered yes, no or unclear."""
    qs = "\n".join(f"{i + 1}. {q}" for i, q in enumerate(questions))
    text = (f"Answer each question about the video with yes, no or unclear ({dimension}). Answer unclear only when "
            "the video does not let you decide.\n\nExamples:\nQuestion: Did the video make you feel tense?\n"
            "Answer: yes\nQuestion: Did the characters lack depth?\nAnswer: no\n\n"
            f"Questions:\n{qs}\n\nPut one answer per question, in order, in 'answers'.")
    return JudgeRequest("locot2v.herd", VERSION, SYSTEM_VIDEO, text, HERD_SCHEMA, _frames(frames),
                        {"dimension": dimension, "n": len(questions)})
