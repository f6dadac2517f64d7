"""Write the embedded ViStoryBench set in the official release format, and its built-in generators.

Stories ``01``, ``02``, ``08`` (``01`` and ``08`` are in the official Lite split), English and Chinese text,
three characters each, one per tag (realistic_human, unrealistic_human, non_human) with 1-3 reference images.
Characters are cut from photos that ship inside installed packages (skimage, matplotlib, ultralytics).

Generators (outputs in the official naming, known behaviour):
- vistory_faithful     (en, ``shot_NN.png``): each character re-drawn with scale, crop and light jitter, on the
                       shot's location photo.
- vistory_drift        (en, ``NN.jpg``): like faithful, but each character blends toward another identity and
                       shifts colour more with every shot: CIDS self must fall.
- vistory_copy_paste   (en, ``x_N.jpg``): the on-stage characters' first reference images pasted onto a grey
                       canvas, the paper's copy-paste baseline (``rank: false``).
- vistory_faithful_ch  (ch, ``shot_NN.mp4``): faithful, as a 2-frame video per shot, generated from the
                       Chinese text: exercises video first-frame reading and the second language.

``human_ratings.csv`` holds illustrative ratings written by hand to match the generators' designed behaviour: they
exercise the human-alignment module and are not collected from people.

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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_embedded_data import _fit, drift_transform, sources  # noqa: E402  (same package photos)

SEED = 20261122
W, H = 256, 160
STORY_IDS = ("01", "02", "08")

# key -> (source photo, tag, English name, Chinese name, English prompt, Chinese prompt, number of references)
CHARACTERS = {
    "Ellen": ("astronaut", "realistic_human", "Commander Ellen", "艾伦指挥官",
              "a smiling woman astronaut with short brown hair in an orange spacesuit", "一位穿橙色宇航服、短棕发、微笑的女宇航员", 2),
    "Grace": ("hopper", "realistic_human", "Admiral Grace", "格蕾丝上将",
              "an older woman with grey hair and glasses in a navy uniform", "一位戴眼镜、灰发、穿海军制服的年长女性", 1),
    "Zed": ("zidane", "realistic_human", "Coach Zed", "泽德教练",
            "a grey-haired man in a dark suit and tie", "一位穿深色西装、打领带的灰发男子", 3),
    "Inky": ("cameraman", "unrealistic_human", "Inky the Photographer", "墨墨摄影师",
             "a cartoon ink-drawn man in a coat behind a camera", "一个穿外套、站在相机后面的卡通水墨男子", 2),
    "Toon Grace": ("hopper", "unrealistic_human", "Toon Grace", "卡通格蕾丝",
                   "a flat cartoon woman in a navy uniform", "一个穿海军制服的扁平卡通女子", 1),
    "Whiskers": ("cat", "non_human", "Whiskers the Cat", "胡须猫",
                 "a small orange tabby cat with green eyes", "一只绿眼睛的橘色虎斑小猫", 2),
}
STORIES = {
    "01": {"type": ("Adventure", "冒险"), "cast": ["Ellen", "Inky", "Whiskers"], "n_shots": 6},
    "02": {"type": ("Comedy", "喜剧"), "cast": ["Zed", "Toon Grace", "Whiskers"], "n_shots": 5},
    "08": {"type": ("Drama", "剧情"), "cast": ["Grace", "Inky", "Whiskers"], "n_shots": 6},
}
LOCATIONS = [("temple", "an old temple among green trees", "绿树间的一座古庙"),
             ("garden", "a garden with a large pink flower", "一座有大朵粉色花的花园"),
             ("launchpad", "a rocket launch site", "一个火箭发射场")]
PERSPECTIVES = [("Medium shot, eye level shot", "中景，平视"), ("Wide shot, high angle", "远景，俯视"),
                ("Close-up, low angle", "特写，仰视")]
GENERATORS = {
    "vistory_faithful": {"language": "en", "pattern": "shot_{:02d}.png",
                         "description": "Each character re-drawn with scale, crop and light jitter on the shot's "
                                        "location. Upper reference for identity and alignment."},
    "vistory_drift": {"language": "en", "pattern": "{:02d}.jpg",
                      "description": "Faithful layout, but identities blend toward another person and shift colour "
                                     "more with every shot (self-consistency falls)."},
    "vistory_copy_paste": {"language": "en", "pattern": "x_{}.jpg", "rank": False,
                           "description": "Copy-paste baseline: the on-stage characters' first reference images "
                                          "pasted onto a grey canvas (shown, not ranked, as in the paper)."},
    "vistory_faithful_ch": {"language": "ch", "pattern": "shot_{:02d}.mp4",
                            "description": "Faithful, from the Chinese text, as 2-frame videos (first frame scored)."},
}


def cartoon(img: np.ndarray) -> np.ndarray:
    """Flat colours plus dark edges: an 'unrealistic human' drawn from a photo."""
    smooth = cv2.bilateralFilter(img, 9, 60, 60)
    flat = (smooth // 48) * 48 + 24
    edges = cv2.adaptiveThreshold(cv2.cvtColor(smooth, cv2.COLOR_RGB2GRAY), 255, cv2.ADAPTIVE_THRESH_MEAN_C,
                                  cv2.THRESH_BINARY, 9, 5)
    return np.where(edges[..., None] > 0, flat, 20).astype(np.uint8)


def character_image(key: str, src: dict[str, np.ndarray]) -> np.ndarray:
    photo, tag = CHARACTERS[key][0], CHARACTERS[key][1]
    img = src[photo]
    return cartoon(img) if tag == "unrealistic_human" else img


def reference_images(key: str, src) -> list[np.ndarray]:
    """1-3 references: the character itself, then tighter crops and a lighting change (never a mirror)."""
    base = character_image(key, src)
    h, w = base.shape[:2]
    refs = [base, base[int(0.05 * h):, int(0.08 * w):int(0.95 * w)],
            np.clip(base[: int(0.92 * h)].astype(np.float32) * 0.85 + 12, 0, 255).astype(np.uint8)]
    return refs[:CHARACTERS[key][6]]


def build_story(sid: str) -> dict:
    spec = STORIES[sid]
    rng = np.random.default_rng([SEED, int(sid)])
    chars = {}
    for k in spec["cast"]:
        _, tag, name_en, name_ch, p_en, p_ch, _ = CHARACTERS[k]
        chars[k] = {"tag": tag, "name_en": name_en, "name_ch": name_ch, "prompt_en": p_en, "prompt_ch": p_ch,
                    "num_of_appearances": 0}
    shots = []
    for i in range(1, spec["n_shots"] + 1):
        n_on = int(rng.integers(1, 4))
        on = sorted(rng.choice(len(spec["cast"]), size=n_on, replace=False).tolist())
        cast = [spec["cast"][j] for j in on]
        loc = LOCATIONS[int(rng.integers(0, len(LOCATIONS)))]
        persp = PERSPECTIVES[int(rng.integers(0, len(PERSPECTIVES)))]
        for k in cast:
            chars[k]["num_of_appearances"] += 1
        names_en = [chars[k]["name_en"] for k in cast]
        names_ch = [chars[k]["name_ch"] for k in cast]
        shots.append({
            "index": i,
            "Plot Correspondence": {"en": f"Part {i} of the story: {' and '.join(names_en)} meet at {loc[1]}.",
                                    "ch": f"故事第{i}部分：{'和'.join(names_ch)}在{loc[2]}相遇。"},
            "Setting Description": {"en": f"{loc[1].capitalize()}, daylight.", "ch": f"{loc[2]}，白天。"},
            "Shot Perspective Design": {"en": persp[0], "ch": persp[1]},
            "Characters Appearing": {"en": names_en, "ch": names_ch},
            "Static Shot Description": {"en": f"{', '.join(names_en)} stand side by side at {loc[1]}.",
                                        "ch": f"{'、'.join(names_ch)}并排站在{loc[2]}。"},
            "_location": loc[0], "_cast": cast,
        })
    return {"Story_type": {"en": spec["type"][0], "ch": spec["type"][1]}, "Characters": chars, "Shots": shots}


def public_story(story: dict) -> dict:
    return {**story, "Shots": [{k: v for k, v in s.items() if not k.startswith("_")} for s in story["Shots"]]}


def _jitter(sprite: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    h, w = sprite.shape[:2]
    y0, x0 = int(rng.integers(0, max(1, h // 12))), int(rng.integers(0, max(1, w // 12)))
    out = sprite[y0:h - int(rng.integers(0, max(1, h // 14))), x0:w - int(rng.integers(0, max(1, w // 12)))]
    gain = float(rng.uniform(0.9, 1.1))
    return np.clip(out.astype(np.float32) * gain, 0, 255).astype(np.uint8)


def render_shot(generator: str, story: dict, shot: dict, src) -> np.ndarray:
    rng = np.random.default_rng([SEED, int(shot["index"]), sum(map(ord, generator))])
    cast = shot["_cast"]
    if generator == "vistory_copy_paste":
        canvas = np.full((H, W, 3), 128, np.uint8)
        n = max(1, len(cast))
        for j, k in enumerate(cast):
            ref = _fit(reference_images(k, src)[0], H - 8)
            tw = W // n - 4
            if ref.shape[1] > tw:
                ref = cv2.resize(ref, (tw, int(ref.shape[0] * tw / ref.shape[1])), interpolation=cv2.INTER_AREA)
            y0, x0 = (H - ref.shape[0]) // 2, j * (W // n) + (W // n - ref.shape[1]) // 2
            canvas[y0:y0 + ref.shape[0], x0:x0 + ref.shape[1]] = ref
        return canvas
    bg = _fit(src[shot["_location"]], H)
    if bg.shape[1] < W:
        bg = cv2.resize(bg, (W, H))
    frame = bg[:, (bg.shape[1] - W) // 2:(bg.shape[1] - W) // 2 + W].copy()
    slots = {1: [0.5], 2: [0.28, 0.72], 3: [0.18, 0.5, 0.82]}[len(cast)]
    keys = list(CHARACTERS)
    for j, k in enumerate(cast):
        sprite = _jitter(character_image(k, src), rng)
        if generator == "vistory_drift":
            level = shot["index"] / len(story["Shots"])
            other = keys[(keys.index(k) + 2) % len(keys)]
            target = cv2.resize(character_image(other, src), (sprite.shape[1], sprite.shape[0]))
            sprite = drift_transform(cv2.addWeighted(sprite, 1 - 0.55 * level, target, 0.55 * level, 0), level)
        height = int(H * float(rng.uniform(0.62, 0.8)))
        sprite = _fit(sprite, height)
        max_w = int(W / len(cast)) - 4
        if sprite.shape[1] > max_w:  # keep the aspect ratio: a squeezed cat stops looking like a cat
            sprite = cv2.resize(sprite, (max_w, max(1, round(sprite.shape[0] * max_w / sprite.shape[1]))),
                                interpolation=cv2.INTER_AREA)
        sh, sw = sprite.shape[:2]
        x0 = int(np.clip(round(slots[j] * W - sw / 2), 0, W - sw))
        frame[H - sh:H, x0:x0 + sw] = sprite
    return frame


def _save_image(path: Path, img: np.ndarray) -> None:
    if path.suffix == ".png":
        Image.fromarray(img).save(path, optimize=False)
    else:
        Image.fromarray(img).save(path, quality=90)


def _save_video(path: Path, frames: list[np.ndarray]) -> None:
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 8, (W, H))
    for f in frames:
        vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    vw.release()


def write_all(out: Path) -> None:
    src = sources()
    ds = out / "vistorybench"
    for sid in STORY_IDS:
        story = build_story(sid)
        d = ds / sid
        d.mkdir(parents=True, exist_ok=True)
        # The release is read as utf-8-sig: write the BOM so the reader's handling is exercised.
        (d / "story.json").write_text(json.dumps(public_story(story), ensure_ascii=False, indent=2) + "\n",
                                      encoding="utf-8-sig")
        for k in story["Characters"]:
            cdir = d / "image" / k
            cdir.mkdir(parents=True, exist_ok=True)
            for i, ref in enumerate(reference_images(k, src)):
                _save_image(cdir / f"{i:02d}.jpg", _fit(ref, 224))
        for g, card in GENERATORS.items():
            gdir = out / "generators" / g / sid
            gdir.mkdir(parents=True, exist_ok=True)
            for shot in story["Shots"]:
                img = render_shot(g, story, shot, src)
                name = card["pattern"].format(shot["index"])
                if name.endswith(".mp4"):
                    _save_video(gdir / name, [img, img])
                else:
                    _save_image(gdir / name, img)
    for g, card in GENERATORS.items():
        meta = {"name": g, "benchmark": "vistorybench", "language": card["language"],
                "description": card["description"]}
        if "rank" in card:
            meta["rank"] = card["rank"]
        (out / "generators" / g / "generator.yaml").write_text(yaml.safe_dump(meta, sort_keys=False, allow_unicode=True))
    ratings = ["method,dimension,rating",
               "vistory_faithful,character_consistency,4.4", "vistory_faithful_ch,character_consistency,4.2",
               "vistory_drift,character_consistency,1.9", "vistory_copy_paste,character_consistency,3.1"]
    (ds / "human_ratings.csv").write_text("\n".join(ratings) + "\n")


def main() -> int:
    from datagen import main as datagen_main
    return datagen_main(__doc__, "vistorybench", GENERATORS, write_all)


if __name__ == "__main__":
    sys.exit(main())
