"""ViStoryBench prompt-alignment judge prompts (ours, written from the paper's description), versioned.

Four aspects, each scored 0-4 after a short analysis, JSON through the judge's tool call:
``scene`` (Setting Description: background, objects, mood; characters excluded), ``camera`` (Shot Perspective
Design), ``character_action`` (Static Shot Description) on the whole shot, and ``single_character_action`` on
one matched character's crop with its name. The text is given in the evaluated language (the reference code
always uses English: we do not). A failed parse is ``n_failed``, never 0.
"""
from __future__ import annotations

import numpy as np

from bench_resources.judge import JudgeRequest, png_bytes

VERSION = "v1"
SYSTEM = ("You are a strict evaluator of story visualization: images generated for a storyboard shot. Judge only "
          "what is visible in the image. Answer by calling the record_answer tool.")
SCHEMA = {"type": "object",
          "properties": {"analysis": {"type": "string"}, "score": {"type": "integer", "minimum": 0, "maximum": 4}},
          "required": ["analysis", "score"]}
SCALE = ("0: not depicted at all or contradicted; 1: barely related; 2: partly depicted, with clear errors; "
         "3: depicted with minor deviations; 4: fully and exactly depicted.")
LANGUAGE_NOTE = {"en": "The description is in English.", "ch": "The description is in Chinese (中文)."}

ASPECT_QUESTIONS = {
    "scene": ("Setting Description", "How well does the image's environment (background, objects, time of day, mood) "
              "match this setting? Ignore the characters entirely."),
    "camera": ("Shot Perspective Design", "How well do the image's shot scale, shot type and camera angle match this "
               "camera design?"),
    "character_action": ("Static Shot Description", "How well do the characters' poses, actions, positions and "
                         "interactions in the image match this description?"),
}


def shot_request(aspect: str, text: str, language: str, shot_image: np.ndarray) -> JudgeRequest:
    field, question = ASPECT_QUESTIONS[aspect]
    prompt = (f"{LANGUAGE_NOTE[language]}\n{field}: \"{text}\"\n\n{question}\n"
              f"First write a short analysis, then give an integer score. {SCALE}")
    return JudgeRequest(f"vistorybench.alignment.{aspect}", VERSION, SYSTEM, prompt, SCHEMA, (png_bytes(shot_image),),
                        {"aspect": aspect, "language": language})


def single_character_request(name: str, action_text: str, language: str, crop: np.ndarray) -> JudgeRequest:
    prompt = (f"{LANGUAGE_NOTE[language]}\nThe image is a crop of the character \"{name}\" from a generated shot "
              f"whose description is: \"{action_text}\"\n\nHow well do this character's pose and action match what "
              f"the description says this character is doing? First write a short analysis, then give an integer "
              f"score. {SCALE}")
    return JudgeRequest("vistorybench.alignment.single_character_action", VERSION, SYSTEM, prompt, SCHEMA,
                        (png_bytes(crop),), {"aspect": "single_character_action", "language": language, "name": name})
