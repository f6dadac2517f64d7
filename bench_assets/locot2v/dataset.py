"""LoCoT2V's canonical sample format (one JSON per sample) -> typed samples.

Generator outputs: ``<generator>/<sample_id>.mp4``. ``events``, ``human_actions`` and ``herd_questions`` may be absent
(None): they are then derived through the judge (``pipeline.derive``); supplied values win.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bench_assets.core.names import BadName, validate_key
from bench_assets.locot2v.constants import EVENT_FIELDS, HERD_DIMENSIONS


class SampleError(ValueError):
    """One sample cannot be read; the message names the sample and what is wrong."""


@dataclass(frozen=True)
class Sample:
    sample_id: str
    theme: str
    category: str
    prompt: str
    prompt_base: str
    herd_info: dict
    events: Optional[tuple[dict, ...]]          # None: derive through the judge
    human_actions: Optional[tuple[dict, ...]]
    herd_questions: Optional[tuple[dict, ...]]

    def to_json(self) -> dict[str, Any]:
        return {"sample_id": self.sample_id, "theme": self.theme, "category": self.category, "prompt": self.prompt,
                "prompt_base": self.prompt_base, "herd_info": self.herd_info,
                "events": list(self.events) if self.events is not None else None,
                "human_actions": list(self.human_actions) if self.human_actions is not None else None,
                "herd_questions": list(self.herd_questions) if self.herd_questions is not None else None}


def discover_samples(root: str | Path) -> list[str]:
    root = Path(root)
    return sorted(p.stem for p in root.glob("*.json")) if root.is_dir() else []


def parse_sample(raw: Any, where: str) -> Sample:
    if not isinstance(raw, dict):
        raise SampleError(f"sample {where}: must be a JSON object")
    sid = raw.get("sample_id")
    if not isinstance(sid, str) or not sid:
        raise SampleError(f"sample {where}: 'sample_id' is missing")
    try:
        validate_key(sid, "sample_id")
    except BadName as e:
        raise SampleError(f"sample {where}: {e}") from None
    if not str(raw.get("prompt", "")).strip():
        raise SampleError(f"sample {sid}: 'prompt' is empty")
    events = raw.get("events")
    if events is not None:
        if not isinstance(events, list):
            raise SampleError(f"sample {sid}: 'events' must be a list")
        for i, e in enumerate(events):
            missing = [f for f in ("event", *EVENT_FIELDS) if f not in e]
            if missing:
                raise SampleError(f"sample {sid}: event {i + 1} lacks {missing}")
    actions = raw.get("human_actions")
    if actions is not None:
        if not isinstance(actions, list) or any(not isinstance(a, dict) or "subject" not in a or "action" not in a
                                                for a in actions):
            raise SampleError(f"sample {sid}: 'human_actions' must be a list of {{subject, action}} objects")
    info = raw.get("herd_info")
    if info is not None and not isinstance(info, dict):
        raise SampleError(f"sample {sid}: 'herd_info' must be an object")
    questions = raw.get("herd_questions")
    if questions is None:
        # HERD's questions are derived from herd_info: without either the dimension would be unscored for every
        # generator with nothing said at input time (a misspelt or dropped key). An explicit null opts out.
        if "herd_info" not in raw:
            raise SampleError(f"sample {sid}: 'herd_info' is missing (HERD's questions are derived from it): give "
                              f"an object of HERD dimension texts, or 'herd_questions', or \"herd_info\": null to "
                              f"leave HERD unscored")
        if isinstance(info, dict) and not info:
            raise SampleError(f"sample {sid}: 'herd_info' is empty (no HERD dimension to derive questions from); "
                              f"use null to leave HERD unscored")
    if isinstance(info, dict):
        unknown = sorted(str(k) for k in info if k not in HERD_DIMENSIONS)
        if unknown:
            raise SampleError(f"sample {sid}: 'herd_info' has unknown dimension(s) {unknown} (known: "
                              f"{list(HERD_DIMENSIONS)})")
        texts = sorted(str(k) for k, v in info.items() if not isinstance(v, str) or not v.strip())
        if texts:
            raise SampleError(f"sample {sid}: 'herd_info' dimension(s) {texts} must be non-empty text")
    if questions is not None:
        if not isinstance(questions, list):
            raise SampleError(f"sample {sid}: 'herd_questions' must be a list")
        for q in questions:
            if not isinstance(q, dict) or q.get("dimension") not in HERD_DIMENSIONS or q.get("polarity") not in ("positive", "negative"):
                raise SampleError(f"sample {sid}: bad HERD question {q!r} (dimension in {list(HERD_DIMENSIONS)}, "
                                  f"polarity positive|negative)")
    return Sample(sid, str(raw.get("theme", "")), str(raw.get("category", "")), str(raw["prompt"]),
                  str(raw.get("prompt_base") or raw["prompt"]), dict(raw.get("herd_info") or {}),
                  tuple(events) if events is not None else None,
                  tuple(raw["human_actions"]) if raw.get("human_actions") is not None else None,
                  tuple(questions) if questions is not None else None)


def load_sample(path: str | Path) -> Sample:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise SampleError(f"sample {path.stem}: {path.name} is not valid JSON ({e})") from None
    s = parse_sample(raw, path.stem)
    if s.sample_id != path.stem:
        raise SampleError(f"sample {path.stem}: sample_id {s.sample_id!r} differs from the file name")
    return s
