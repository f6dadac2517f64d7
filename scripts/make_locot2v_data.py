"""Write the embedded LoCoT2V samples (canonical format) and built-in long-video generators of known behaviour.

Two samples of 20 s at 4 fps, 160x96: several events on different location photos with a recurring subject (the
cat, the astronaut), a static stretch (the first quarter of every event), and transitions between events. 4 fps
keeps the offline test run short (the temporal metrics analyse min(native, 8) fps). nature_1 supplies its derived
artefacts (events, human actions, HERD questions with polarity); life_1 leaves them to the judge.

Generators (``<name>/<sample_id>.mp4``):
- locot2v_smooth    gradual transitions (10-frame cross-fades), smooth motion.
- locot2v_jerky     hard cuts and a subject that jumps a few pixels every frame.
- locot2v_frozen    the first frame for the whole video.
- locot2v_drift     smooth, but the subject's colours drift further with every event (same subject).

``--check`` regenerates into a temporary directory and compares every file byte for byte.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_embedded_data import _fit, drift_transform, sources  # noqa: E402

W, H, FPS, SECONDS = 160, 96, 4, 20
FADE = 10
DRIFT_MAX = 0.5
GENERATORS = {
    "locot2v_smooth": "Gradual cross-fades between events and smooth subject motion.",
    "locot2v_jerky": "Hard cuts between events and a subject that jumps a few pixels every frame.",
    "locot2v_frozen": "The first frame held for the whole video.",
    "locot2v_drift": "Smooth, but the recurring subject's appearance drifts further with every event.",
}
SAMPLES = {
    "nature_1": {"theme": "animals", "category": "Nature Exploration", "subject": "cat",
                 "events": [("temple", "an old temple among trees"), ("garden", "a garden with a pink flower"),
                            ("temple", "the old temple again")],
                 "supply": True},
    "life_1": {"theme": "space", "category": "Human Real Life", "subject": "astronaut",
               "events": [("launchpad", "a rocket launch pad"), ("garden", "a flower garden")], "supply": False},
}
SUBJECT_TEXT = {"cat": "a small orange tabby cat", "astronaut": "a smiling woman astronaut in an orange spacesuit"}


def sample_json(sid: str) -> dict:
    spec = SAMPLES[sid]
    subj = SUBJECT_TEXT[spec["subject"]]
    events = [{"event": f"{subj} walks through {place}", "subject": subj, "setting": place,
               "action": "walks from left to right" if i % 2 == 0 else "stands still, then walks",
               "camera motion": "static"} for i, (_, place) in enumerate(spec["events"])]
    prompt_base = " Then ".join(f"{e['subject'].capitalize()} {e['action']} in {e['setting']}." for e in events)
    raw = {"sample_id": sid, "theme": spec["theme"], "category": spec["category"],
           "prompt": f"A continuous long take. {prompt_base} The camera is static throughout.",
           "prompt_base": prompt_base,
           "herd_info": {"Emotional Response": "calm and curious", "Narrative Flow": "a simple walk through places",
                         "Character Development": "none", "Visual Style": "natural daylight photography",
                         "Themes": "exploration", "Interpretive Depth": "literal",
                         "Overall Impression": "a pleasant short journey"},
           "events": None, "human_actions": None, "herd_questions": None}
    if spec["supply"]:  # one sample supplies its derived artefacts (they win); the other derives them by the judge
        raw["events"] = events
        raw["human_actions"] = []
        raw["herd_questions"] = [
            {"dimension": d, "question": f"Does the video convey {v}?", "polarity": "positive"}
            for d, v in raw["herd_info"].items()] + [
            {"dimension": "Visual Style", "question": "Is the video in black and white?", "polarity": "negative"}]
    return raw


def _background(src, name: str) -> np.ndarray:
    bg = _fit(src[name], H)
    if bg.shape[1] < W:
        bg = cv2.resize(bg, (W, H))
    return bg[:, (bg.shape[1] - W) // 2:(bg.shape[1] - W) // 2 + W].copy()


def _sprite(src, spec, generator: str, event: int) -> np.ndarray:
    s = _fit(src[spec["subject"]], int(H * 0.6))
    if generator == "locot2v_drift" and event > 0:
        # hue rotation and a colour cast growing to DRIFT_MAX by the last event: the subject stays recognisable (the
        # offline detector still finds it) while its appearance drifts from event to event
        s = drift_transform(s, DRIFT_MAX * event / (len(spec["events"]) - 1))
    return s


def render(generator: str, sid: str, src) -> list[np.ndarray]:
    spec = SAMPLES[sid]
    n = FPS * SECONDS
    n_ev = len(spec["events"])
    bounds = [round(i * n / n_ev) for i in range(n_ev + 1)]
    rng = np.random.default_rng(sum(map(ord, sid + generator)))
    scenes = []
    for k in range(n):
        e = max(i for i in range(n_ev) if bounds[i] <= k)
        local = (k - bounds[e]) / max(1, bounds[e + 1] - bounds[e] - 1)
        frame = _background(src, spec["events"][e][0])
        sprite = _sprite(src, spec, generator, e)
        # the first quarter of every event is a static stretch; then the subject walks across and back
        t = 0.0 if local < 0.25 else (local - 0.25) / 0.75
        t = 1.0 - abs(1.0 - (2.0 * t) % 2.0) if t < 1.0 else 0.0
        x = int(round(4 + t * (W - sprite.shape[1] - 8)))
        if generator == "locot2v_jerky":
            x = int(np.clip(x + rng.integers(-6, 7), 0, W - sprite.shape[1]))
        frame[H - sprite.shape[0]:, x:x + sprite.shape[1]] = sprite
        scenes.append((e, frame))
    frames = [f for _, f in scenes]
    if generator == "locot2v_frozen":
        return [frames[0]] * n
    if generator in ("locot2v_smooth", "locot2v_drift"):
        out = list(frames)
        for b in bounds[1:-1]:  # cross-fade over FADE frames centred on each event boundary
            for j in range(FADE):
                k = b - FADE // 2 + j
                a = (j + 1) / (FADE + 1)
                prev, nxt = frames[max(0, b - FADE // 2 - 1)], frames[min(n - 1, b + FADE // 2)]
                out[k] = cv2.addWeighted(prev, 1 - a, nxt, a, 0)
        return out
    return frames


def write_all(out: Path) -> None:
    src = sources()
    (out / "locot2v" / "samples").mkdir(parents=True, exist_ok=True)
    for sid in SAMPLES:
        (out / "locot2v" / "samples" / f"{sid}.json").write_text(json.dumps(sample_json(sid), indent=2) + "\n")
        for g in GENERATORS:
            d = out / "generators" / g
            d.mkdir(parents=True, exist_ok=True)
            vw = cv2.VideoWriter(str(d / f"{sid}.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
            for f in render(g, sid, src):
                vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
            vw.release()
    for g, desc in GENERATORS.items():
        (out / "generators" / g / "generator.yaml").write_text(
            yaml.safe_dump({"name": g, "benchmark": "locot2v", "description": desc}, sort_keys=False))


def main() -> int:
    from datagen import main as datagen_main
    return datagen_main(__doc__, "locot2v", GENERATORS, write_all)


if __name__ == "__main__":
    sys.exit(main())
