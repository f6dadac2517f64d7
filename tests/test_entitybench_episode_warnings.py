"""An episode's loader notes (registry entities never scheduled, a tier its shot count does not suggest) are warned
once per process, not at every parse: every EntityBench asset re-parses the stored episode, so evaluating one
generator on the imported official release (90 of its 140 episodes have never-scheduled entities) printed 900
UserWarning pairs (3,068 stderr lines) around the progress lines. The notes stay on every parsed Episode (`warnings`)."""
from __future__ import annotations

import json
import uuid
import warnings

from bench_assets.entitybench import dataset as ED
from tests.support import DATA


def _episode_with_an_unscheduled_entity() -> dict:
    raw = json.loads((DATA / "entitybench" / "episodes" / "e0001.json").read_text(encoding="utf-8"))
    raw["episode_id"] = f"e_warn_{uuid.uuid4().hex[:8]}"   # a fresh id: the once-per-process memory is global
    raw["entities"].append({"id": "o_never", "type": "object", "name": "a kite",
                            "description": "a red kite no shot schedules"})
    return raw


def _parse_recording(raw: dict, sources: list[str]) -> tuple[list[str], list]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")        # what Dagster's steps amount to: no registry deduplicates them
        eps = [ED.parse_episode(raw, s) for s in sources]
    return [str(w.message) for w in caught], eps


def test_an_episode_note_is_warned_once_per_process():
    raw = _episode_with_an_unscheduled_entity()
    messages, eps = _parse_recording(raw, [f"{raw['episode_id']}.json", "<memory>", "<memory>", "<memory>"])
    assert len(messages) == 1 and "registry entities never scheduled: ['o_never']" in messages[0]
    assert all(ep.warnings == eps[0].warnings and any("o_never" in n for n in ep.warnings) for ep in eps)


def test_each_episode_and_each_note_still_warns():
    a, b = _episode_with_an_unscheduled_entity(), _episode_with_an_unscheduled_entity()
    assert len(_parse_recording(a, ["<memory>"])[0]) == 1
    assert len(_parse_recording(b, ["<memory>"])[0]) == 1        # another episode: its own warning
    a["entities"].append({"id": "o_other", "type": "object", "name": "a drum", "description": "a drum"})
    again = _parse_recording(a, ["<memory>"])[0]                 # an edited episode: the new note is shown
    assert len(again) == 1 and "o_other" in again[0]
