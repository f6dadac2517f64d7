"""Write the embedded MBench cases (canonical format) and built-in generators of known behaviour.

A synthetic room of textured planes (package photos: a temple wall, a garden wall, a launch-pad wall, a cup on a
card, a person) rendered from known camera poses (bench_assets/mbench/geometry.render, which clips planes at the
near plane). The camera turns (or strafes, or moves forward) away from the target, waits, and comes back; one T case
trucks sideways, so translation, triangulation and T-mode pairing run end to end.

Generators (``<name>/<case_id>.mp4``, 256x160, 8 fps):
- mbench_consistent  the world as it is, from the scripted camera.
- mbench_changing    the same camera, but while the target is out of view the world changes: the cup becomes
                     another object, the person another person, the back wall another place.
- mbench_lighting    consistent geometry, but the returning half is darker with a warm cast.
- mbench_ignoring    a camera that ignores the action sequence: it turns left at half speed the whole time
                     (through the wait and the re-entry), so it never returns to the first view.

``--check`` regenerates into a temporary directory and compares every file byte for byte.
"""
from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Optional

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
    "mbench_ignoring": "The camera ignores the action sequence: it keeps turning left and never returns.",
}
A_ACTIONS = [{"phase": "exit", "action": "yaw_right", "frames": 12}, {"phase": "wait", "action": "wait", "frames": 4},
             {"phase": "reenter", "action": "yaw_left", "frames": 12}]
A_STRAFE = [{"phase": "exit", "action": "right", "frames": 12}, {"phase": "wait", "action": "wait", "frames": 4},
            {"phase": "reenter", "action": "left", "frames": 12}]
A_DOLLY = [{"phase": "exit", "action": "forward", "frames": 10}, {"phase": "wait", "action": "wait", "frames": 3},
           {"phase": "reenter", "action": "backward", "frames": 10}]
STEP_DEG = 6.0
STEP_M = 0.05
T_SEGMENTS = [("hold the view", None), ("pan right", "yaw_right"), ("hold", None), ("pan left", "yaw_left"),
              ("hold", None)]
T_TRUCK = [("hold the view", None), ("truck right", "right"), ("hold", None), ("truck left", "left"), ("hold", None)]
T_FRAMES_PER_SEGMENT = 6


def move(R: np.ndarray, C: np.ndarray, action: Optional[str], scale: float = 1.0):
    """One frame of an action from pose (R, C): turns of STEP_DEG, moves of STEP_M along the camera's own axes."""
    if action in ("yaw_right", "yaw_left"):
        return G.yaw(scale * (STEP_DEG if action == "yaw_right" else -STEP_DEG)) @ R, C
    v = {"right": (1, 0, 0), "left": (-1, 0, 0), "forward": (0, 0, 1), "backward": (0, 0, -1)}.get(action)
    if v is None:
        return R, C
    return R, C + scale * STEP_M * (R.T @ np.asarray(v, float))


def schedule(case: dict) -> list[Optional[str]]:
    """The action of every frame transition (None: hold)."""
    if case["mode"] == "A":
        return [None if a["phase"] == "wait" else a["action"] for a in case["actions"] for _ in range(a["frames"])]
    table = dict(T_TRUCK if any(s["camera"].startswith("truck") for s in case["segments"]) else T_SEGMENTS)
    return [table[s["camera"]] for s in case["segments"] for _ in range(T_FRAMES_PER_SEGMENT)]


def poses(case: dict, generator: str = "mbench_consistent") -> list[tuple[np.ndarray, np.ndarray]]:
    """Camera pose (R, C) per frame. The ignoring camera turns left at half speed on every transition, whatever
    the actions say: it never comes back to the first view."""
    R, C = np.eye(3), np.zeros(3)
    out = [(R, C)]
    for a in schedule(case):
        R, C = move(R, C, "yaw_left", 0.5) if generator == "mbench_ignoring" else move(R, C, a)
        out.append((R, C))
    return out


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


def render_case(generator: str, case: dict, src) -> list[np.ndarray]:
    path = poses(case, generator)
    dist = [np.linalg.norm(C) + G.rotation_angle_deg(R, np.eye(3)) / 180 for R, C in path]
    turn = int(np.argmax(dist))
    base, changed = scene(src), scene(src, "changed")
    K = G.intrinsics(W, H)
    frames = []
    for k, (R, C) in enumerate(path):
        planes = changed if generator == "mbench_changing" and k > turn else base
        f = G.render(planes, R, C, K, (W, H))
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
    truck = [{"camera": cam, "text": f"{cam.capitalize()}: an old temple courtyard, its wall, a cup of coffee and an "
                                     f"astronaut."} for cam, _ in T_TRUCK]
    cases = [
        {"case_id": "a_obj01", "subset": "object", "mode": "A", "target": cup, "actions": A_ACTIONS,
         "caption": "A cup of coffee in a temple courtyard; the camera turns right to the garden and back."},
        {"case_id": "a_env01", "subset": "environment", "mode": "A", "target": {"name": "temple wall"},
         "actions": A_ACTIONS, "caption": "A temple courtyard; the camera turns right to the garden and back."},
        {"case_id": "a_hum01", "subset": "human", "mode": "A", "target": person, "actions": A_ACTIONS,
         "caption": "An astronaut in a temple courtyard; the camera turns right to the garden and back."},
        {"case_id": "a_env02", "subset": "environment", "mode": "A", "target": {"name": "temple wall"},
         "actions": A_STRAFE, "caption": "A temple courtyard; the camera steps right along the wall and back."},
        {"case_id": "a_obj02", "subset": "object", "mode": "A", "target": cup, "actions": A_DOLLY,
         "caption": "A cup of coffee in a temple courtyard; the camera moves towards it and back."},
        {"case_id": "t_env01", "subset": "environment", "mode": "T", "target": {"name": "temple wall"},
         "segments": truck, "caption": "A temple courtyard seen while the camera trucks right and back."},
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
