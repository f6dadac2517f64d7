"""Write the embedded MBench cases (canonical format) and built-in generators of known behaviour.

A synthetic room of textured planes (package photos: a temple wall, a garden wall, a launch-pad wall, a cup on a
card, a person) rendered from known camera poses (bench_assets/mbench/geometry.render). The camera turns away from
the target, waits, and turns back.

Generators (``<name>/<case_id>.mp4``, 256x160, 8 fps):
- mbench_consistent  the world as it is, from the scripted camera.
- mbench_changing    the same camera, but while the target is out of view the world changes: the cup becomes
                     another object, the person another person, the back wall another place.
- mbench_lighting    consistent geometry, but the returning half is darker with a warm cast.
- mbench_ignoring    a camera that ignores the action sequence: it turns the other way (and never returns to
                     the target).

``--check`` regenerates into a temporary directory and compares every file byte for byte.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import cv2
import numpy as np
import yaml
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))
from make_embedded_data import sources  # noqa: E402
from bench_assets.mbench import geometry as G  # noqa: E402

W, H, FPS = 256, 160, 8
GENERATORS = {
    "mbench_consistent": "The world stays as it was while the camera looks away; the camera follows the actions.",
    "mbench_changing": "The camera follows the actions, but the target, the person and the back wall change while "
                       "out of view.",
    "mbench_lighting": "Consistent world; the returning half of the video is darker with a warm colour cast.",
    "mbench_ignoring": "The camera ignores the action sequence: it turns the other way and never returns.",
}
A_ACTIONS = [{"phase": "exit", "action": "yaw_right", "frames": 12}, {"phase": "wait", "action": "wait", "frames": 4},
             {"phase": "reenter", "action": "yaw_left", "frames": 12}]
STEP_DEG = 6.0
T_SEGMENTS = [("hold the view", 0.0), ("pan right", STEP_DEG), ("hold", 0.0), ("pan left", -STEP_DEG), ("hold", 0.0)]
T_FRAMES_PER_SEGMENT = 6


def _tex(img, w, h):
    return cv2.resize(img, (w, h), interpolation=cv2.INTER_AREA)


def scene(src, variant: str = "base") -> list[G.Plane]:
    back = src["temple"] if variant == "base" else src["launchpad"]
    cup = src["cup"] if variant == "base" else cv2.rotate(src["cat"], cv2.ROTATE_180)
    person = src["astronaut"] if variant == "base" else src["hopper"]
    return [
        G.Plane(_tex(back, 640, 320), (-3, -1.5, 4), (6, 0, 0), (0, 3, 0)),
        G.Plane(_tex(src["garden"], 640, 320), (3, -1.5, 4), (0, 0, -6), (0, 3, 0)),
        G.Plane(_tex(src["launchpad"], 640, 320), (-3, -1.5, -2), (0, 0, 6), (0, 3, 0)),
        G.Plane(_tex(cup, 160, 160), (0.2, -0.1, 2.2), (0.9, 0, 0), (0, 0.9, 0)),
        G.Plane(_tex(person, 150, 210), (-1.05, -0.75, 3.0), (0.75, 0, 0), (0, 1.05, 0)),
    ]


def yaw_path(case: dict) -> list[float]:
    """Camera yaw per frame (degrees, right positive) from the case's actions or segments."""
    if case["mode"] == "A":
        deg, out = 0.0, [0.0]
        for a in case["actions"]:
            d = {"yaw_right": STEP_DEG, "yaw_left": -STEP_DEG}.get(a["action"], 0.0)
            for _ in range(a["frames"]):
                deg += d
                out.append(deg)
        return out
    deg, out = 0.0, [0.0]
    for _, d in T_SEGMENTS:
        for _ in range(T_FRAMES_PER_SEGMENT):
            deg += d
            out.append(deg)
    return out


def render_case(generator: str, case: dict, src) -> list[np.ndarray]:
    path = yaw_path(case)
    if generator == "mbench_ignoring":
        path = [-0.5 * d for d in path]  # turns left, half as far, while the actions say right
    turn = int(np.argmax(np.abs(path)))
    base, changed = scene(src), scene(src, "changed")
    K = G.intrinsics(W, H)
    frames = []
    for k, deg in enumerate(path):
        planes = changed if generator == "mbench_changing" and k > turn else base
        f = G.render(planes, G.yaw(deg), np.zeros(3), K, (W, H))
        if generator == "mbench_lighting" and k > turn:
            f = np.clip(f.astype(np.float32) * 0.7 + np.array([25, 5, -15]), 0, 255).astype(np.uint8)
        frames.append(f)
    return frames


def build_cases(src) -> list[dict]:
    K = G.intrinsics(W, H)
    init = G.render(scene(src), G.yaw(0), np.zeros(3), K, (W, H))
    # the cup's and the person's boxes in the first frame, from the known geometry: [cx, cy, w, h]
    def box(plane: G.Plane):
        corners = [np.asarray(plane.origin) + a * np.asarray(plane.u) + b * np.asarray(plane.v)
                   for a in (0, 1) for b in (0, 1)]
        px = np.array([(K @ c)[:2] / (K @ c)[2] for c in corners])
        (x1, y1), (x2, y2) = px.min(0), px.max(0)
        return [round((x1 + x2) / 2, 1), round((y1 + y2) / 2, 1), round(x2 - x1, 1), round(y2 - y1, 1)]
    planes = scene(src)
    cup = {"name": "cup", "attributes": "a cup of coffee with latte art on a saucer", "bbox": box(planes[3])}
    person = {"name": "astronaut", "attributes": "a smiling woman in an orange spacesuit", "bbox": box(planes[4])}
    segs = [{"camera": cam, "text": f"{cam.capitalize()}: an old temple courtyard with a cup of coffee on a card "
                                    f"and an astronaut standing by the wall."} for cam, _ in T_SEGMENTS]
    cases = [
        {"case_id": "a_obj01", "subset": "object", "mode": "A", "target": cup, "actions": A_ACTIONS,
         "caption": "A cup of coffee in a temple courtyard; the camera turns right to the garden and back."},
        {"case_id": "a_env01", "subset": "environment", "mode": "A", "target": {"name": "temple wall"},
         "actions": A_ACTIONS, "caption": "A temple courtyard; the camera turns right to the garden and back."},
        {"case_id": "a_hum01", "subset": "human", "mode": "A", "target": person, "actions": A_ACTIONS,
         "caption": "An astronaut in a temple courtyard; the camera turns right to the garden and back."},
        {"case_id": "t_obj01", "subset": "object", "mode": "T", "target": cup, "segments": segs,
         "caption": "A cup of coffee in a temple courtyard."},
        {"case_id": "t_cau01", "subset": "causal", "mode": "T", "target": cup, "segments": segs,
         "causal_event": "the coffee cools and its latte art dissolves while the camera looks at the garden",
         "caption": "A cup of hot coffee in a temple courtyard."},
    ]
    for c in cases:
        c["init_frame"] = f"{c['case_id']}.png"
        c.setdefault("segments", [])
        c.setdefault("actions", [])
        c.setdefault("causal_event", "")
    return cases, init


def write_all(out: Path) -> None:
    src = sources()
    cases, init = build_cases(src)
    (out / "mbench" / "cases").mkdir(parents=True, exist_ok=True)
    (out / "mbench" / "frames").mkdir(parents=True, exist_ok=True)
    for c in cases:
        (out / "mbench" / "cases" / f"{c['case_id']}.json").write_text(json.dumps(c, indent=2, sort_keys=True) + "\n")
        Image.fromarray(init).save(out / "mbench" / "frames" / c["init_frame"], optimize=False)
        for g in GENERATORS:
            d = out / "generators" / g
            d.mkdir(parents=True, exist_ok=True)
            vw = cv2.VideoWriter(str(d / f"{c['case_id']}.mp4"), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
            for f in render_case(g, c, src):
                vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
            vw.release()
    for g, desc in GENERATORS.items():
        (out / "generators" / g / "generator.yaml").write_text(
            yaml.safe_dump({"name": g, "benchmark": "mbench", "description": desc}, sort_keys=False))


def main() -> int:
    from datagen import main as datagen_main
    return datagen_main(__doc__, "mbench", GENERATORS, write_all)


if __name__ == "__main__":
    sys.exit(main())
