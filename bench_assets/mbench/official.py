"""MBench results in: ``leaderboard_submission.json`` read back onto the board (issue 35 item 3).

What of the official MBench release could be read here: the leaderboard Space's column names
(``study-overflow/MBench_Leaderboard`` constants.py: MODEL_INFO_COLUMNS "Model Name", ..., METRIC_COLUMNS "Object
Geometry" ... "Action Interaction", model types text-conditioned / action-conditioned). The GitHub code
(``study-overflow/MBench``), the submission JSON's required fields and the dataset's ``mapping.jsonl`` /
``dataset.yaml`` (Hugging Face ``studyOverflow/MBench-Data``) could not be fetched. So a submission is read in
either spelling: the rows our ``official_export`` writes (model_name, mode T|A, one key per sub-dimension id) or
rows keyed by the leaderboard's display columns ("Model Name", "Model Type", "Human Identity", ...). Values are
taken on [0, 100] as published; the sub-dimension columns map to our ``m_score.<sub-dimension>`` board ids.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench_assets.mbench.official_export import MODES, PREFIX, SUB_DIMENSIONS

RESULTS_CODE = "study-overflow/MBench leaderboard_submission.json"
# the leaderboard's display column -> our sub-dimension id (spec/mbench.md: evolution_correctness is the
# physical plausibility of the self-evolution; text/action instruction the interaction columns)
DISPLAY = {"Human Identity": "identity", "Human Appearance": "appearance", "Object Geometry": "geometry",
           "Object Texture": "texture", "Epipolar Geometry": "epipolar", "Reprojection Consistency": "reprojection",
           "Lighting Consistency": "lighting", "Style Consistency": "style", "State Progress": "state_evolution",
           "Physical Plausibility": "evolution_correctness", "Text Interaction": "text_instruction",
           "Action Interaction": "action_instruction"}
MODEL_TYPES = {"text-conditioned": "T", "action-conditioned": "A"}
AGGREGATE_DISPLAY = ("Total M-Score", "Entity Score", "Environment Score", "Causal Score")


def _mode(r: dict) -> Any:
    m = r.get("mode", r.get("Mode"))
    if m is None:
        m = MODEL_TYPES.get(str(r.get("Model Type", "")).strip().lower())
    return m


def read_results(path: str | Path, known: set[str]) -> tuple[str, list[dict], list[str], dict]:
    """``leaderboard_submission.json`` (a list of rows, or one row) -> (first model name, imported overall rows,
    problems, info). A row without a model name or a mode T/A is a problem naming it; the other rows are read."""
    from bench_assets.core.imported_results import row
    p = Path(path)
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"{p}: not a readable JSON file ({type(e).__name__})") from None
    recs = data if isinstance(data, list) else [data]
    rows, problems, models = [], [], []
    for i, r in enumerate(recs):
        if not isinstance(r, dict):
            problems.append(f"{p.name}: row {i}: not an object")
            continue
        name = r.get("model_name", r.get("Model Name"))
        mode = _mode(r)
        if not name or mode not in MODES:
            problems.append(f"{p.name}: row {i}: needs a model name and a mode T or A (or Model Type "
                            f"text-/action-conditioned), got {name!r}, {mode!r}")
            continue
        models.append(str(name))
        for key, v in r.items():
            sub = key if key in SUB_DIMENSIONS else DISPLAY.get(key)
            if sub is None and key not in AGGREGATE_DISPLAY:
                continue
            mid = f"{PREFIX}{sub}" if sub else None
            rows.append((str(name), row("overall", key, v, slice=mode, metric_id=mid if mid in known else None,
                                        note=None if isinstance(v, (int, float)) else "null in the submission")))
    if not rows:
        raise ValueError(f"{p}: no MBench submission row read" + (f" ({'; '.join(problems[:3])})" if problems else ""))
    others = sorted(set(models) - {models[0]})
    if others:   # one source is one method: the others are named, not merged under the first one's name
        problems.append(f"{p.name}: rows of other models not imported ({', '.join(others)}); only {models[0]!r} "
                        f"(one file per model)")
    return models[0], [r for m, r in rows if m == models[0]], problems, {}
