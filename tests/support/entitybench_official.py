"""EntityBench's official release schema, written by hand (the release has no licence: never copy its files): an
episode that meets every quirk the importer must face, a release folder (scripts + split) and a generator folder in
the official ``<SSS>_<KKK>.mp4`` layout."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from tests.support.video import write_video

EPISODE_ID = "0000aaaa-test-story__run1__i0_j5__T120"

# Every quirk of the release, each once:
#  - "the wooden crate" is scheduled (1:2, 2:1) but has no description             -> undescribed_name (2 mentions)
#  - "Object 1" and "Object 2" are both "the brass key"                             -> duplicate_name
#  - "Gen_The Stranger" has no type prefix (scheduled as a character)               -> unprefixed_label
#  - "Object 3" (the red lantern) is described but never scheduled                  -> never_scheduled
#  - "_name_map" names "Object 4" (the old map), described nowhere, scheduled never -> name_map_only
#  - shot 1:2's prompt does not describe The Stranger, its first appearance         -> prompt_differs_...
_REGISTRY = {
    "Character 1": {"name": "Mira", "label": "Character 1", "description": "A woman with short red hair."},
    "Character 2": {"name": "Tomas", "label": "Character 2", "description": "A bald man in a grey coat."},
    "Gen_The Stranger": {"name": "The Stranger", "label": "Gen_The Stranger",
                         "description": "A tall figure in a dusty trench coat."},
    "Location 1": {"name": "The Harbour", "label": "Location 1", "description": "A foggy harbour with wooden piers."},
    "Object 1": {"name": "the brass key", "label": "Object 1", "description": "A small brass key."},
    "Object 2": {"name": "the brass key", "label": "Object 2", "description": "A small brass key on a ring."},
    "Object 3": {"name": "the red lantern", "label": "Object 3", "description": "A red paper lantern."},
}
_SCHEDULE = {
    "1:1": {"characters": ["Mira"], "places": ["The Harbour"], "objects": ["the brass key"]},
    "1:2": {"characters": ["Mira", "The Stranger"], "places": ["The Harbour"], "objects": ["the wooden crate"]},
    "2:1": {"characters": ["Tomas"], "places": [], "objects": ["the wooden crate"]},
    "3:1": {"characters": ["Mira", "Tomas"], "places": ["The Harbour"], "objects": ["the brass key"]},
    "3:2": {"characters": ["The Stranger"], "places": ["The Harbour"], "objects": []},
}
_SCENES = [
    {"scene_num": 1,
     "video_prompts": [("Mira: A woman with short red hair.\nThe Harbour: A foggy harbour with wooden piers.\n"
                        "the brass key: A small brass key on a ring.\n\nMira picks up the brass key on the pier."),
                       "Mira turns as The Stranger steps off a wooden crate."],
     "cut": [True, False],
     "action_descriptions": ["Mira picks up the brass key on the pier.",
                             "Mira turns as The Stranger steps off a wooden crate."]},
    {"scene_num": 2,
     "video_prompts": ["Tomas: A bald man in a grey coat.\n\nTomas pries open the wooden crate."],
     "cut": [True], "action_descriptions": ["Tomas pries open the wooden crate."]},
    {"scene_num": 3,
     "video_prompts": ["Mira hands Tomas the brass key at The Harbour.", "The Stranger watches from the fog."],
     "cut": [True, False],
     "action_descriptions": ["Mira hands Tomas the brass key at The Harbour.", "The Stranger watches from the fog."]},
]


def official_episode(episode_id: str = EPISODE_ID) -> dict:
    """One episode in the release's schema (data/scripts/<episode_id>.json) with every quirk listed above."""
    return {"story_name": episode_id, "story_overview": "A key changes hands at a foggy harbour.",
            "scenes": copy.deepcopy(_SCENES), "entity_schedule": copy.deepcopy(_SCHEDULE),
            "entity_descriptions": copy.deepcopy(_REGISTRY),
            "_window_shot_ids": [f"{episode_id}__shot{k:04d}" for k in range(1, 6)],
            "_num_scenes": 3, "_num_shots": 5,
            "_name_map": {**{k: v["name"] for k, v in _REGISTRY.items()}, "Object 4": "the old map"}}


def plain_episode(episode_id: str, n_scenes: int, shots_per_scene: int = 1, name: str = "Ann") -> dict:
    """A quirk-free episode of ``n_scenes`` x ``shots_per_scene`` shots, one character in every shot."""
    scenes, schedule = [], {}
    for sn in range(1, n_scenes + 1):
        prompts = [f"{name} walks, shot {sn}.{k}." for k in range(1, shots_per_scene + 1)]
        scenes.append({"scene_num": sn, "video_prompts": prompts,
                       "cut": [True] + [False] * (shots_per_scene - 1), "action_descriptions": list(prompts)})
        for k in range(1, shots_per_scene + 1):
            schedule[f"{sn}:{k}"] = {"characters": [name], "places": [], "objects": []}
    return {"story_name": episode_id, "story_overview": "", "scenes": scenes, "entity_schedule": schedule,
            "entity_descriptions": {"Character 1": {"name": name, "label": "Character 1",
                                                    "description": f"{name}, a person in a blue coat."}},
            "_name_map": {"Character 1": name}}


def write_release(root: Path, episodes: dict[str, dict], split: dict[str, list[str]] | None) -> Path:
    """``root/data/scripts/<id>.json`` per episode and ``root/data/splits/final_split_validated_ids.json``."""
    scripts = root / "data" / "scripts"
    scripts.mkdir(parents=True)
    for eid, raw in episodes.items():
        (scripts / f"{eid}.json").write_text(json.dumps(raw, indent=2), encoding="utf-8")
    if split is not None:
        (root / "data" / "splits").mkdir(parents=True)
        all_ids = [e for t in ("easy", "medium", "hard") for e in split.get(t, [])]
        (root / "data" / "splits" / "final_split_validated_ids.json").write_text(
            json.dumps({**split, "all": all_ids}), encoding="utf-8")
    return root


def official_generator(root: Path, name: str, episode_id: str, keys: list[tuple[int, int]], seed: int = 0) -> Path:
    """``root/<name>/generator.yaml`` and ``<episode_id>/<SSS>_<KKK>.mp4`` for each (scene, shot) key, each video
    different (its seed follows the key), as the authors' evaluator expects them."""
    folder = root / name / episode_id
    folder.mkdir(parents=True)
    (root / name / "generator.yaml").write_text(f"name: {name}\nbenchmark: entitybench\ndescription: official "
                                                f"layout\n", encoding="utf-8")
    for sn, k in keys:
        write_video(folder / f"{sn:03d}_{k:03d}.mp4", n=12, w=64, h=48, seed=seed + 10 * sn + k)
    return root / name
