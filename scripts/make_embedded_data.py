#!/usr/bin/env python
"""Regenerate the embedded EntityBench world byte-for-byte.

Real photographic pixels that installed packages ship (scikit-image, matplotlib, scikit-learn,
ultralytics sample images) are cut into character and object sprites and pasted over location
photographs, so the offline detectors and face models see real people, cups and cats.

Generators with known behaviour:
  faithful  every entity rendered the same every time (sprites move smoothly)
  drift     an entity's look drifts with the gap since its previous appearance, and keeps drifting
            during the shot: it blends toward another entity of its type and its colours shift
  swap      every third re-appearance of a character or object shows another entity's identity
  static    faithful's first frame held for the whole shot (no motion)

Usage: python scripts/make_embedded_data.py [--out data] [--check]
"""
from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

W, H, FRAMES, FPS = 256, 144, 12, 8
SEED = 20261122
GENERATORS = {
    "faithful": "Every entity rendered identically every time; smooth motion. Upper reference.",
    "drift": "Each entity's appearance drifts with the number of shots since its previous appearance and keeps "
             "drifting within the shot: it blends toward another entity of its type (up to 60 %) and its hue, "
             "saturation and colour cast shift. Consistency falls with the gap.",
    "swap": "Every third re-appearance of a character or object shows another entity's identity.",
    "static": "Same composition as faithful but no motion: every frame of a shot is identical.",
}


def _pkg_file(pkg: str, *rel: str) -> Path:
    spec = importlib.util.find_spec(pkg)
    if spec is None:
        raise SystemExit(f"package {pkg!r} is needed for its sample images")
    p = Path(list(spec.submodule_search_locations)[0]).joinpath(*rel)
    if not p.exists():
        raise SystemExit(f"{p} missing")
    return p


def _img(path: Path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"))


def sources() -> dict[str, np.ndarray]:
    sk = lambda n: _img(_pkg_file("skimage", "data", n))  # noqa: E731
    return {
        "astronaut": sk("astronaut.png")[10:510, 11:370],
        "cameraman": sk("camera.png")[61:508, 0:302],
        "hopper": _img(_pkg_file("matplotlib", "mpl-data", "sample_data", "grace_hopper.jpg"))[22:592, 1:511],
        "zidane": _img(_pkg_file("ultralytics", "assets", "zidane.jpg"))[47:698, 740:1149],
        "cup": sk("coffee.png")[10:250, 170:420],
        "cat": sk("chelsea.png")[0:300, 10:410],
        "temple": _img(_pkg_file("sklearn", "datasets", "images", "china.jpg")),
        "garden": _img(_pkg_file("sklearn", "datasets", "images", "flower.jpg")),
        "launchpad": sk("rocket.jpg"),
    }


CHARACTERS = [
    ("astronaut", "Commander Ellen", "a smiling woman astronaut with short brown hair in an orange NASA "
                                     "spacesuit, an American flag behind her"),
    ("cameraman", "the Photographer", "a man in a dark coat and hat standing behind a camera on a tripod, "
                                      "black-and-white photograph"),
    ("hopper", "Admiral Grace", "an older woman with grey hair and glasses in a dark navy uniform with "
                                "rank stripes and a white cap"),
    ("zidane", "Coach Zed", "a grey-haired man in a dark suit, white shirt and tie, pointing"),
]
OBJECTS = [
    ("cup", "the Red Cup", "a cup of coffee with latte art on a saucer"),
    ("cat", "the Tabby Cat", "a small orange tabby cat with green eyes"),
]
LOCATIONS = [
    ("temple", "the Old Temple", "an old Chinese temple with curved roofs among green trees"),
    ("garden", "the Flower Garden", "a close view of a garden with a large pink flower"),
    ("launchpad", "the Launch Pad", "a rocket launch site with a tall white rocket on the pad"),
]

EPISODES = [("e0001", 6), ("e0002", 10), ("e0003", 16), ("e0004", 20), ("e0005", 31), ("e0006", 34)]


# ------------------------------------------------------------------------------------- episodes

def build_episode(eid: str, n_shots: int, rng: np.random.Generator) -> dict:
    n_chars = 3 if n_shots < 20 else 4
    chars = [(f"c{i+1}", *CHARACTERS[i]) for i in range(n_chars)]
    objs = [(f"o{i+1}", *OBJECTS[i]) for i in range(len(OBJECTS))]
    locs = [(f"l{i+1}", *LOCATIONS[i]) for i in range(3 if n_shots >= 10 else 2)]
    # the last character is the long-gap one: it appears early and returns near the end
    long_gap = chars[-1][0]
    shots, loc = [], locs[0][0]
    for k in range(1, n_shots + 1):
        cut = k == 1 or rng.random() < 0.45
        if cut and k > 1:
            loc = locs[int(rng.integers(len(locs)))][0]
        regular = [c[0] for c in chars[:-1]]
        cast = [regular[int(rng.integers(len(regular)))]]
        if rng.random() < 0.3:
            other = [c for c in regular if c not in cast]
            cast.append(other[int(rng.integers(len(other)))])
        if k in (2, n_shots - 1) or (n_shots < 12 and k == n_shots):
            cast = [cast[0], long_gap]
        ents = sorted(cast)
        if rng.random() < 0.55:  # the first prop is the episode's signature prop: it recurs most
            ents.append(objs[0 if rng.random() < 0.7 else 1][0])
        ents.append(loc)
        names = {e[0]: e[2] for e in chars + objs + locs}
        action = f"{names[cast[0]]} " + ("talks with " + names[cast[1]] if len(cast) > 1 else "looks around")
        if any(e.startswith("o") for e in ents):
            action += f", next to {names[[e for e in ents if e.startswith('o')][0]]}"
        shots.append({"index": k, "cut": bool(cut), "entities": ents, "action": action + f" at {names[loc]}."})
    used = {e for s in shots for e in s["entities"]}
    entities = [{"id": i, "type": t, "name": n, "description": d, "source": src}
                for t, group in (("character", chars), ("object", objs), ("location", locs))
                for i, src, n, d in group if i in used]
    tier = "easy" if n_shots <= 14 else ("medium" if n_shots <= 30 else "hard")
    return {"episode_id": eid, "tier": tier, "title": f"Synthetic episode {eid}",
            "summary": "A deterministic synthetic story: recurring people, props and places from package photos.",
            "entities": [{k: v for k, v in e.items() if k != "source"} for e in entities],
            "shots": shots, "_sources": {e["id"]: e["source"] for e in entities}}


def build_episodes() -> list[dict]:
    rng = np.random.default_rng(SEED)
    return [build_episode(eid, n, rng) for eid, n in EPISODES]


# ------------------------------------------------------------------------------------- rendering

def _fit(img: np.ndarray, height: int) -> np.ndarray:
    h, w = img.shape[:2]
    return cv2.resize(img, (max(1, round(w * height / h)), height), interpolation=cv2.INTER_AREA)


def drift_transform(sprite: np.ndarray, level: float) -> np.ndarray:
    """Hue rotation, saturation and a warm colour cast that grow with ``level``."""
    if level <= 0:
        return sprite
    hsv = cv2.cvtColor(sprite, cv2.COLOR_RGB2HSV).astype(np.int32)
    hsv[..., 0] = (hsv[..., 0] + int(round(40 * level))) % 180
    hsv[..., 1] = np.clip(hsv[..., 1] + int(round(60 * level)), 0, 255)
    out = cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB).astype(np.float32)
    out = np.clip(out * (1 - 0.25 * min(level, 1.5)) + np.array([60, 20, -20]) * min(level, 1.5), 0, 255)
    return out.astype(np.uint8)


def plan_appearances(ep: dict) -> dict[tuple[int, str], dict]:
    """Per (shot, entity): drift level at the shot's start and, for swap, which identity is rendered."""
    types = {e["id"]: e["type"] for e in ep["entities"]}
    last: dict[str, int] = {}
    seen_count: dict[str, int] = {}
    plan = {}
    for s in ep["shots"]:
        for e in s["entities"]:
            k = s["index"]
            gap = k - last[e] if e in last else 0
            seen_count[e] = seen_count.get(e, 0) + 1
            swap_to = None
            if types[e] != "location" and seen_count[e] > 1 and (seen_count[e] - 1) % 3 == 0:
                pool = [x for x in ep["_sources"] if types[x] == types[e] and x != e and x not in s["entities"]]
                swap_to = pool[0] if pool else None
            plan[(k, e)] = {"drift_base": 0.0 if gap == 0 else min(2.0, 0.3 * gap), "swap_to": swap_to, "gap": gap}
            last[e] = k
    return plan


def render_shot(generator: str, ep: dict, shot_index: int, src: dict[str, np.ndarray] | None = None,
                plan: dict | None = None) -> tuple[list[np.ndarray], dict]:
    """RGB frames of one shot and its ground truth (boxes, scheduled vs rendered identity, drift)."""
    src = src or sources()
    plan = plan or plan_appearances(ep)
    shot = ep["shots"][shot_index - 1]
    types = {e["id"]: e["type"] for e in ep["entities"]}
    loc = next(e for e in shot["entities"] if types[e] == "location")
    bg_full = _fit(src[ep["_sources"][loc]], H + 24)
    if bg_full.shape[1] < W + 24:
        bg_full = cv2.resize(bg_full, (W + 24, H + 24))
    chars = [e for e in shot["entities"] if types[e] == "character"]
    objs = [e for e in shot["entities"] if types[e] == "object"]
    rng = np.random.default_rng([SEED, int(ep["episode_id"][1:]), shot_index])
    direction = 1 if rng.random() < 0.5 else -1
    slots = {1: [0.4], 2: [0.22, 0.6], 3: [0.17, 0.45, 0.73]}  # props stand at the right edge
    frames, truth = [], []
    n = 1 if generator == "static" else FRAMES
    for t in range(n):
        progress = t / (FRAMES - 1)
        ox = int(round(12 + direction * 20 * (progress - 0.5)))
        frame = bg_full[12:12 + H, ox:ox + W].copy()
        boxes = []
        placed = [(e, "character") for e in chars] + [(e, "object") for e in objs]
        for j, (e, kind) in enumerate(placed):
            p = plan[(shot_index, e)]
            rendered = p["swap_to"] if generator == "swap" and p["swap_to"] else e
            level = 0.0
            if generator == "drift" and p["gap"] > 0:
                level = p["drift_base"] + 0.4 * progress
            elif generator == "drift":
                level = 0.4 * progress
            height = int(H * (0.9 if kind == "character" else 0.42))
            sprite = _fit(src[ep["_sources"][rendered]], height)
            if generator == "drift" and level > 0:
                # identity drift: blend toward another entity of the same type, then shift the colours
                pool = [n for n, _, _ in (CHARACTERS if kind == "character" else OBJECTS) if n != ep["_sources"][e]]
                alpha = min(0.6, 0.3 * level)
                target = cv2.resize(src[pool[0]], (sprite.shape[1], sprite.shape[0]))
                sprite = drift_transform(cv2.addWeighted(sprite, 1 - alpha, target, alpha, 0), level)
            sh, sw = sprite.shape[:2]
            if kind == "character":
                cx = slots[len(chars)][j] * W + direction * 40 * (progress - 0.5) * (1 if j % 2 == 0 else -1)
                y0 = H - sh
            else:
                cx = 0.88 * W + direction * 8 * (progress - 0.5)
                y0 = H - sh - 2
            x0 = int(round(cx - sw / 2))
            xa, xb = max(0, x0), min(W, x0 + sw)
            frame[y0:y0 + sh, xa:xb] = sprite[:, xa - x0:xb - x0]
            boxes.append({"entity_id": e, "rendered_as": rendered, "box": [xa, y0, xb, y0 + sh],
                          "drift_level": round(level, 4)})
        frames.append(frame)
        truth.append({"frame": t, "entities": boxes})
    if generator == "static":
        frames = frames * FRAMES
        truth = [{"frame": t, "entities": truth[0]["entities"]} for t in range(FRAMES)]
    return frames, {"shot": shot_index, "frames": truth}


def write_video(path: Path, frames: list[np.ndarray]) -> None:
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), FPS, (W, H))
    if not vw.isOpened():
        raise SystemExit(f"cannot write {path}")
    for f in frames:
        vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    vw.release()


def _dump(obj) -> str:
    return json.dumps(obj, indent=2, sort_keys=True) + "\n"


def write_episode(out: Path, ep: dict, generators=tuple(GENERATORS), src=None) -> None:
    src = src or sources()
    plan = plan_appearances(ep)
    eid = ep["episode_id"]
    (out / "entitybench" / "episodes").mkdir(parents=True, exist_ok=True)
    (out / "entitybench" / "episodes" / f"{eid}.json").write_text(
        _dump({k: v for k, v in ep.items() if not k.startswith("_")}))
    for g in generators:
        gdir = out / "generators" / g
        gdir.mkdir(parents=True, exist_ok=True)
        (gdir / "generator.yaml").write_text(f"name: {g}\nbenchmark: entitybench\ndescription: >-\n  {GENERATORS[g]}\n")
        (gdir / eid).mkdir(exist_ok=True)
        truth = []
        for s in ep["shots"]:
            frames, t = render_shot(g, ep, s["index"], src, plan)
            write_video(gdir / eid / f"shot_{s['index']:02d}.mp4", frames)
            truth.append(t)
        gt = out / "entitybench" / "groundtruth" / g
        gt.mkdir(parents=True, exist_ok=True)
        (gt / f"{eid}.json").write_text(_dump({"episode_id": eid, "generator": g, "note":
                                               "validity tests only; never read by metrics", "shots": truth}))


def write_all(out: Path) -> None:
    src = sources()
    for ep in build_episodes():
        write_episode(out, ep, src=src)


def main() -> int:
    from datagen import main as datagen_main
    return datagen_main(__doc__, "entitybench", GENERATORS, write_all)


if __name__ == "__main__":
    sys.exit(main())
