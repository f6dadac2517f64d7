#!/usr/bin/env python
"""Write the embedded NarrativeTrack world: short multi-person videos with ground-truth tracks in a sidecar.

People are real photographic pixels cut from package images exactly as scripts/make_embedded_data.py cuts its
characters (astronaut, Grace Hopper, Zidane, the cameraman), so the SSD person detector and the face slot fire on
them. They walk, stand, leave and come back, change outfit (the body below the face is re-coloured) and change place
(the background photograph changes at a cut).

Layout (the benchmark's input format):
  data/narrativetrack/videos.json          index: video_id, file, sample_fps, note
  data/narrativetrack/videos/<id>.mp4      192x108, 4 fps, 14-18 s
  data/narrativetrack/groundtruth/<id>.json  per-frame boxes, presence intervals, track types, per-segment
                                           attributes (validity tests only; never read by the pipeline)
  data/narrativetrack/synthetic_pool.json  entity attributes of other clips (synthetic distractors)
  data/generators/narrativetrack_*/generator.yaml   answerers (a video MLLM model id behind the judge interface)

Usage: python scripts/make_narrativetrack_data.py [--out data] [--check]
(--check compares every file byte for byte: the mp4v encoder of OpenCV is deterministic here.)
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from make_embedded_data import _fit, sources  # noqa: E402

W, H, FPS = 192, 108, 4
SPRITE_H = int(H * 0.92)
SAMPLE_FPS = 1.0  # the spec default (1 fps)
TINTS = {"orig": None, "blue": (40, 70, 230), "red": (220, 40, 40), "green": (40, 190, 60)}
PEOPLE = {"A": "astronaut", "G": "hopper", "Z": "zidane", "C": "cameraman"}
SCENES = {"temple": "temple", "garden": "garden", "launchpad": "launchpad"}

GENERATORS = {
    "narrativetrack_claude_sonnet": ("claude-sonnet-4-6", "Claude Sonnet 4.6 as a video MLLM: 20 uniformly sampled "
                                                          "frames and the question; JSON answer."),
    "narrativetrack_claude_haiku": ("claude-haiku-4-5", "Claude Haiku 4.5 as a video MLLM: 20 uniformly sampled "
                                                        "frames and the question; JSON answer."),
}

# A video: duration, shots (start, end, background) and per person its presence segments
# (start s, end s, x0 fraction, x1 fraction, outfit tint). x moves linearly from x0 to x1 over the segment.
VIDEOS = {
    "nt001": {"duration": 16, "note": "A leaves and returns in a new outfit and place; G leaves; Z arrives",
              "shots": [(0, 8, "temple"), (8, 16, "garden")],
              "people": {"A": [(0, 5, 0.22, 0.42, "orig"), (10, 16, 0.30, 0.30, "blue")],
                         "G": [(0, 7, 0.76, 0.76, "orig")],
                         "Z": [(9, 16, 0.82, 0.62, "orig")]}},
    "nt002": {"duration": 18, "note": "C comes and goes three times: three places, three actions, three outfits",
              "shots": [(0, 6, "temple"), (6, 12, "launchpad"), (12, 18, "garden")],
              "people": {"C": [(0, 4, 0.18, 0.40, "orig"), (7, 11, 0.28, 0.28, "red"), (13, 18, 0.45, 0.22, "green")],
                         "A": [(0, 11, 0.76, 0.76, "orig")],
                         "Z": [(13, 18, 0.78, 0.78, "orig")]}},
    "nt003": {"duration": 14, "note": "G walks off and comes back standing elsewhere; Z stays; C passes through",
              "shots": [(0, 7, "launchpad"), (7, 14, "temple")],
              "people": {"G": [(0, 5, 0.45, 0.25, "orig"), (9, 14, 0.28, 0.28, "orig")],
                         "Z": [(0, 14, 0.80, 0.80, "orig")],
                         "C": [(5.5, 8.5, 0.15, 0.40, "orig")]}},
}

POOL = [  # attributes of entities in other clips (not embedded): the synthetic distractors
    {"clip": "pool_office", "entity": "p1", "action": "moving towards the camera", "outfit": "white and grey clothes",
     "scene": "a place with a white and grey background", "style": "heuristic"},
    {"clip": "pool_office", "entity": "p2", "action": "staying in place", "outfit": "yellow and black clothes",
     "scene": "a place with a white and grey background", "style": "heuristic"},
    {"clip": "pool_street", "entity": "p1", "action": "moving away from the camera", "outfit": "purple clothes",
     "scene": "a place with a brown and orange background", "style": "heuristic"},
    {"clip": "pool_street", "entity": "p2", "action": "walking to the left", "outfit": "pink and white clothes",
     "scene": "a place with a brown and orange background", "style": "heuristic"},
    {"clip": "pool_beach", "entity": "p1", "action": "walking to the right", "outfit": "cyan and yellow clothes",
     "scene": "a place with a yellow and cyan background", "style": "heuristic"},
    {"clip": "pool_beach", "entity": "p2", "action": "moving towards the camera", "outfit": "orange and brown clothes",
     "scene": "a place with a yellow and cyan background", "style": "heuristic"},
    {"clip": "pool_kitchen", "entity": "p1", "action": "cutting vegetables", "outfit": "a blue shirt and a white apron",
     "scene": "a modern kitchen", "style": "free_text"},
    {"clip": "pool_park", "entity": "p1", "action": "walking a dog", "outfit": "a red jacket and jeans",
     "scene": "a park with a bench", "style": "free_text"},
    {"clip": "pool_office", "entity": "p3", "action": "typing on a laptop", "outfit": "a grey suit and a white shirt",
     "scene": "an open-plan office", "style": "free_text"},
    {"clip": "pool_stage", "entity": "p1", "action": "singing into a microphone", "outfit": "a black dress",
     "scene": "a concert stage", "style": "free_text"},
]


def tint(sprite: np.ndarray, colour) -> np.ndarray:
    """Re-colour the body below the face (lower 52 % of the sprite): a new outfit, the same face."""
    if colour is None:
        return sprite
    out = sprite.astype(np.float32).copy()
    y = int(sprite.shape[0] * 0.48)
    grey = out[y:].mean(axis=2, keepdims=True) / 255.0
    out[y:] = 0.25 * out[y:] + 0.75 * (np.asarray(colour, np.float32) * (0.45 + 0.8 * grey))
    return np.clip(out, 0, 255).astype(np.uint8)


def render(video: dict, src: dict) -> tuple[list[np.ndarray], list[dict]]:
    n = int(video["duration"] * FPS)
    bgs = {name: cv2.resize(src[name], (W, H), interpolation=cv2.INTER_AREA) for name in SCENES}
    sprites = {p: _fit(src[s], SPRITE_H) for p, s in PEOPLE.items()}
    frames, truth = [], []
    for k in range(n):
        t = k / FPS
        bg = next(b for s, e, b in video["shots"] if s <= t < e)
        frame = bgs[bg].copy()
        boxes = []
        for pid in sorted(video["people"]):
            for j, (s, e, x0, x1, outfit) in enumerate(video["people"][pid]):
                if not (s <= t < e):
                    continue
                sp = tint(sprites[pid], TINTS[outfit])
                sh, sw = sp.shape[:2]
                cx = (x0 + (x1 - x0) * (t - s) / max(e - s, 1e-6)) * W
                xa = int(round(cx - sw / 2))
                a, b = max(0, xa), min(W, xa + sw)
                frame[H - sh:H, a:b] = sp[:, a - xa:b - xa]
                boxes.append({"person": pid, "box": [a, H - sh, b, H], "segment": j, "outfit": outfit, "scene": bg})
        frames.append(frame)
        truth.append({"frame": k, "t": round(t, 4), "persons": boxes})
    return frames, truth


def track_type(segments: list, duration: float, tol: float = 1.5) -> str:
    if len(segments) >= 2:
        return "reappear"
    s, e = segments[0][:2]
    if s <= tol and e >= duration - tol:
        return "continuous"
    if s <= tol:
        return "disappear"
    if e >= duration - tol:
        return "appear"
    return "middle"


def action_of(seg) -> str:
    s, e, x0, x1, _ = seg
    if abs(x1 - x0) * W / max(e - s, 1e-6) < 2.0:
        return "standing still"
    return "walking to the right" if x1 > x0 else "walking to the left"


def groundtruth(vid: str, video: dict, truth: list[dict]) -> dict:
    people = {}
    for pid, segs in sorted(video["people"].items()):
        shots = [(s, e, b) for s, e, b in video["shots"]]
        people[pid] = {"source": PEOPLE[pid], "track_type": track_type(segs, video["duration"]),
                       "presence": [[s, e] for s, e, *_ in segs],
                       "segments": [{"start": max(s, ss), "end": min(e, se), "scene": b, "outfit": o,
                                     "action": action_of((s, e, x0, x1, o))}
                                    for s, e, x0, x1, o in segs for ss, se, b in shots if max(s, ss) < min(e, se)]}
    return {"video_id": vid, "fps": FPS, "duration": video["duration"], "note": video["note"] +
            " (validity tests only; never read by the pipeline)", "people": people, "frames": truth}


def write_video(path: Path, frames: list[np.ndarray]) -> None:
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
    if not vw.isOpened():
        raise SystemExit(f"cannot write {path}")
    for f in frames:
        vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    vw.release()


def _dump(obj) -> str:
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def write_all(out: Path) -> None:
    src = sources()
    base = out / "narrativetrack"
    (base / "videos").mkdir(parents=True, exist_ok=True)
    (base / "groundtruth").mkdir(parents=True, exist_ok=True)
    index = []
    for vid, video in VIDEOS.items():
        frames, truth = render(video, src)
        write_video(base / "videos" / f"{vid}.mp4", frames)
        (base / "groundtruth" / f"{vid}.json").write_text(_dump(groundtruth(vid, video, truth)))
        index.append({"video_id": vid, "file": f"videos/{vid}.mp4", "sample_fps": SAMPLE_FPS, "note": video["note"]})
    (base / "videos.json").write_text(_dump({"benchmark": "narrativetrack", "videos": index}))
    (base / "synthetic_pool.json").write_text(_dump({"note": "entity attributes of other clips, the synthetic "
                                                             "(cross-clip) distractors", "entries": POOL}))
    for name, (model, desc) in GENERATORS.items():
        g = out / "generators" / name
        g.mkdir(parents=True, exist_ok=True)
        (g / "generator.yaml").write_text(f"name: {name}\nbenchmark: narrativetrack\nkind: answerer\n"
                                          f"model: {model}\nframes: 20\ndescription: >-\n  {desc}\n")


def main() -> int:
    from datagen import main as datagen_main
    return datagen_main(__doc__, "narrativetrack", GENERATORS, write_all)


if __name__ == "__main__":
    sys.exit(main())
