"""Shared builders for EntityBench's golden parity (scripts/parity_golden_entitybench.py writes the golden files with
the authors' evaluator; tests/parity/test_entitybench_golden.py compares the project with them).

Everything both sides are given is built here, deterministically:
- three episodes in the authors' script schema (``scenes[{scene_num, video_prompts, cut, action_descriptions}]``,
  ``entity_schedule``, ``entity_descriptions``), written for this test (no release file is copied);
- the generator's shots: lossless RGB H.264 (``libx264rgb``, qp 0), so imageio (the authors' reader) and PyAV (the
  project's) decode the same pixels; characters and objects are rectangles of one exact key colour no background
  pixel takes, locations a 2-pixel frame border of their key colour;
- a detector that finds those key colours (the "fixed detections" both sides get, GroundingDINO cannot be installed
  here): the key colour's bounding box, plus for characters a second, lower-confidence box (the upper half) so
  that the selection score has to choose;
- a judge (a real HTTP server on 127.0.0.1 speaking chat completions on any path, so the authors' AzureOpenAI
  client and an OpenAI-compatible client both reach it) whose answer is a function of what it is asked about:
  the entity names the prompt mentions and, per image, its size and mean grey level (coarsely binned so that a JPEG
  re-encoding does not move it); every criterion a value from a hash of that key;
- seeded random checkpoints of the architectures the authors load (transformers DINOv2-base, CLIP ViT-B/32 with a
  tokenizer built from open_clip's bundled BPE file).
"""
from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import re
import threading
from functools import lru_cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

W, H, N_FRAMES, FPS = 160, 96, 14, 8
CLIP_SHIFT = 0.56
EPISODE_IDS = ("gold-ep1", "gold-ep2", "gold-ep3")
TIERS = {"easy": ["gold-ep1", "gold-ep2"], "medium": ["gold-ep3"], "hard": []}

# exact key colours: every channel 0 or 255 (background noise stays in 40..200, so it never takes one)
CHAR_COLORS = {"Mara": (255, 0, 0), "Tobin": (0, 0, 255), "Ilse": (255, 0, 255)}
OBJ_COLORS = {"Lantern": (255, 255, 0), "Satchel": (0, 255, 255), "Compass": (0, 255, 0)}
LOC_COLORS = {"Harbor": (0, 128, 255), "Forge": (255, 128, 0), "Archive": (128, 0, 255)}
LOC_BASE = {"Harbor": (70, 110, 150), "Forge": (150, 90, 60), "Archive": (100, 100, 100)}

DESCRIPTIONS = {
    "Mara": "a tall woman with short black hair wearing a long red wool coat and leather boots",
    "Tobin": "a stocky old fisherman with a grey beard in a blue knitted sweater",
    "Ilse": "a young girl with two braids in a purple dress carrying a small notebook",
    "Lantern": "a brass storm lantern with a yellow glass chimney",
    "Satchel": "a worn teal leather satchel with a buckled flap",
    "Compass": "a green enamel pocket compass on a chain",
    "Harbor": "a foggy stone harbor at dawn with moored wooden boats and a lighthouse",
    "Forge": "a dim blacksmith forge with a glowing hearth, anvils and hanging tools",
    "Archive": "a tall library archive with wooden shelves, ladders and dusty scrolls",
}


def _ent(label, name):
    return {"name": name, "label": label, "description": DESCRIPTIONS[name]}


def _sched(chars=(), places=(), objects=()):
    return {"characters": list(chars), "places": list(places), "objects": list(objects)}


def episodes() -> dict[str, dict]:
    """episode id -> the authors' script schema. What varies: continuation vs cut, an entity scheduled but not drawn
    (absent), drawn with another look in one shot (drift), one shot of a location, an object named in an action."""
    ep1 = {
        "story_name": "gold-ep1", "story_overview": "Mara and Tobin carry a lantern along the harbor.",
        "entity_descriptions": {"Character 1": _ent("Character 1", "Mara"), "Character 2": _ent("Character 2", "Tobin"),
                                "Location 1": _ent("Location 1", "Harbor"), "Object 1": _ent("Object 1", "Lantern")},
        "scenes": [
            {"scene_num": 1, "cut": [True, False, False],
             "video_prompts": ["Mara walks along the harbor holding the Lantern.", "Tobin greets Mara.",
                               "Mara raises the Lantern."],
             "action_descriptions": ["Mara walks along the quay holding the Lantern", "Tobin waves at Mara",
                                     "Mara lifts the Lantern above her head"]},
            {"scene_num": 2, "cut": [True, False],
             "video_prompts": ["Tobin sits alone on the harbor wall.", "Mara returns with the Lantern."],
             "action_descriptions": ["Tobin sits down on the wall", ""]},
        ],
        "entity_schedule": {
            "1:1": _sched(["Mara"], ["Harbor"], ["Lantern"]),
            "1:2": _sched(["Mara", "Tobin"], ["Harbor"], []),
            "1:3": _sched(["Mara"], ["Harbor"], ["Lantern"]),
            "2:1": _sched(["Tobin"], ["Harbor"], []),
            "2:2": _sched(["Mara", "Tobin"], ["Harbor"], ["Lantern"]),
        },
    }
    ep2 = {
        "story_name": "gold-ep2", "story_overview": "Ilse visits the forge and the archive with her satchel.",
        "entity_descriptions": {"Character 1": _ent("Character 1", "Ilse"), "Character 2": _ent("Character 2", "Tobin"),
                                "Location 1": _ent("Location 1", "Forge"), "Location 2": _ent("Location 2", "Archive"),
                                "Object 1": _ent("Object 1", "Satchel"), "Object 2": _ent("Object 2", "Compass")},
        "scenes": [
            {"scene_num": 1, "cut": [True, False],
             "video_prompts": ["Ilse enters the forge with her Satchel.", "Tobin hands Ilse a Compass."],
             "action_descriptions": ["Ilse walks in carrying the Satchel", "Tobin gives the Compass to Ilse"]},
            {"scene_num": 2, "cut": [True, False, True],
             "video_prompts": ["Ilse reads in the archive.", "Ilse checks the Compass.", "Ilse leaves the forge."],
             "action_descriptions": ["Ilse opens a scroll", "Ilse looks at the Compass", "Ilse runs out of the forge"]},
        ],
        "entity_schedule": {
            "1:1": _sched(["Ilse"], ["Forge"], ["Satchel"]),
            "1:2": _sched(["Ilse", "Tobin"], ["Forge"], ["Compass"]),
            "2:1": _sched(["Ilse"], ["Archive"], ["Satchel"]),
            "2:2": _sched(["Ilse"], ["Archive"], ["Compass", "Satchel"]),
            "2:3": _sched(["Ilse"], ["Forge"], []),
        },
    }
    ep3 = {
        "story_name": "gold-ep3", "story_overview": "Tobin and Mara search the archive for a compass.",
        "entity_descriptions": {"Character 1": _ent("Character 1", "Tobin"), "Character 2": _ent("Character 2", "Mara"),
                                "Location 1": _ent("Location 1", "Archive"),
                                "Object 1": _ent("Object 1", "Compass")},
        "scenes": [
            {"scene_num": 1, "cut": [True, False, False, False],
             "video_prompts": ["Tobin climbs a ladder in the archive.", "Mara searches the shelves.",
                               "Tobin finds the Compass.", "Mara and Tobin study the Compass."],
             "action_descriptions": ["Tobin climbs up the ladder", "Mara pulls books from a shelf",
                                     "Tobin picks up the Compass", "Mara points at the Compass"]},
        ],
        "entity_schedule": {
            "1:1": _sched(["Tobin"], ["Archive"], []),
            "1:2": _sched(["Mara"], ["Archive"], []),
            "1:3": _sched(["Tobin"], ["Archive"], ["Compass"]),
            "1:4": _sched(["Mara", "Tobin"], ["Archive"], ["Compass"]),
        },
    }
    return {"gold-ep1": ep1, "gold-ep2": ep2, "gold-ep3": ep3}


# what the generator got wrong: (episode, shot key) -> names scheduled but not drawn / drawn with another look
NOT_DRAWN = {("gold-ep1", "2:2"): {"Tobin"}, ("gold-ep2", "2:2"): {"Satchel"}, ("gold-ep3", "1:2"): {"Archive"}}
DRIFTED = {("gold-ep1", "1:3"): {"Mara"}, ("gold-ep2", "2:1"): {"Ilse"}, ("gold-ep3", "1:4"): {"Tobin"}}


def shot_keys(script: dict) -> list[str]:
    return [f"{s['scene_num']}:{i + 1}" for s in script["scenes"] for i in range(len(s["video_prompts"]))]


def shot_frames(episode_id: str, script: dict, key: str) -> np.ndarray:
    """[N_FRAMES, H, W, 3] uint8 of one shot, a pure function of (episode, shot, schedule)."""
    seed = int(hashlib.sha256(f"{episode_id}/{key}".encode()).hexdigest()[:8], 16)
    rng = np.random.default_rng(seed)
    sched = script["entity_schedule"].get(key, {})
    hidden = NOT_DRAWN.get((episode_id, key), set())
    drift = DRIFTED.get((episode_id, key), set())
    places = [p for p in sched.get("places", []) if p not in hidden]
    base = np.array(LOC_BASE[places[0]] if places else (120, 120, 120), np.float64)
    tex = rng.integers(-30, 31, size=(H, W, 3))
    yy, xx = np.mgrid[0:H, 0:W]
    out = np.zeros((N_FRAMES, H, W, 3), np.uint8)
    entities = [(n, CHAR_COLORS[n], True) for n in sched.get("characters", []) if n not in hidden]
    entities += [(n, OBJ_COLORS[n], False) for n in sched.get("objects", []) if n not in hidden]
    slots = {n: i for i, (n, _, _) in enumerate(entities)}
    ent_tex = {n: rng.integers(-35, 36, size=(64, 64, 3)) for n, _, _ in entities}
    ent_phase = {n: int(rng.integers(0, 4)) for n, _, _ in entities}
    for t in range(N_FRAMES):
        f = base + tex + 25 * np.sin((xx + 3 * t) / 11.0)[..., None] * np.array([1, 0.6, 0.3])
        f = np.clip(f, 40, 200)
        if places:
            c = LOC_COLORS[places[0]]
            f[:2, :], f[-2:, :], f[:, :2], f[:, -2:] = c, c, c, c
        for name, color, is_char in entities:
            i = slots[name]
            bw, bh = (26, 44) if is_char else (12, 12)
            if name in drift:
                bw, bh = bw + 10, bh - 8
            x0 = 10 + 45 * i + (t * 2 if is_char else t)
            y0 = 30 + (6 * i) % 18 if is_char else 82
            f[y0:y0 + bh, x0:x0 + bw] = color   # the key colour shows on a 2-pixel outline (what the detector finds)
            inner = (np.array(color) * 0.5 + 60) if name not in drift else (np.array(color[::-1]) * 0.4 + 80)
            ih, iw = f[y0 + 2:y0 + bh - 2, x0 + 2:x0 + bw - 2].shape[:2]
            # the inside: the entity's colour with the shot's own noise and stripes, so that renderings differ
            f[y0 + 2:y0 + bh - 2, x0 + 2:x0 + bw - 2] = np.clip(inner + ent_tex[name][:ih, :iw], 40, 200)
            f[y0 + 3 + ent_phase[name]:y0 + bh - 3:4, x0 + 3:x0 + bw - 3] = np.clip(inner * 0.6, 40, 200)
        out[t] = np.clip(f, 0, 255).astype(np.uint8)
    return out


def write_video(path: Path, frames: np.ndarray) -> None:
    import av
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), "w") as c:
        s = c.add_stream("libx264rgb", rate=FPS)
        s.width, s.height, s.pix_fmt, s.options = W, H, "rgb24", {"qp": "0"}
        for fr in frames:
            for p in s.encode(av.VideoFrame.from_ndarray(fr, format="rgb24")):
                c.mux(p)
        for p in s.encode():
            c.mux(p)


def write_results(results_dir: Path) -> dict[str, dict]:
    """The generator's shots in the authors' layout ``<results_dir>/<episode>/<scene:03d>_<shot:03d>.mp4``."""
    eps = episodes()
    for eid, script in eps.items():
        for key in shot_keys(script):
            sn, k = (int(v) for v in key.split(":"))
            write_video(results_dir / eid / f"{sn:03d}_{k:03d}.mp4", shot_frames(eid, script, key))
    return eps


# ---- the fixed detector ----

def entity_for_query(query: str) -> str:
    """The entity a detector query is about: its description, whole or cut to its first words."""
    q = " ".join(query.split())
    hits = [n for n, d in DESCRIPTIONS.items() if d == q or d.startswith(q) or q.startswith(d)]
    if len(hits) != 1:
        raise KeyError(f"detector query {query!r} matches {hits}")
    return hits[0]


def detect_boxes(frame: np.ndarray, name: str) -> list[tuple[tuple[int, int, int, int], float]]:
    """[(x1, y1, x2, y2) integer pixels, x2/y2 exclusive; confidence], highest confidence first."""
    h, w = frame.shape[:2]
    if name in LOC_COLORS:
        if np.all(frame[0, w // 2] == LOC_COLORS[name]):
            return [((2, 2, w - 2, h - 2), 0.61)]
        return []
    color = CHAR_COLORS.get(name) or OBJ_COLORS[name]
    ys, xs = np.nonzero(np.all(frame == np.array(color, np.uint8), axis=-1))
    if len(xs) == 0:
        return []
    x1, y1, x2, y2 = int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
    conf = round(0.3 + min(0.6, 4.0 * (x2 - x1) * (y2 - y1) / (w * h)), 4)
    out = [((x1, y1, x2, y2), conf)]
    if name in CHAR_COLORS:
        out.append(((x1, y1, x2, y1 + (y2 - y1) // 2), round(conf - 0.1, 4)))
    return out


# ---- the judge ----

def _image_key(b64: str) -> tuple:
    from PIL import Image
    img = Image.open(io.BytesIO(base64.b64decode(b64))).convert("L")
    return img.size + (int(np.asarray(img, np.float64).mean() // 16),)


def judge_key(text: str, images_b64: list[str]) -> str:
    names = sorted(n for n in DESCRIPTIONS if re.search(rf"\b{n}\b", text))
    return json.dumps([names, [_image_key(b) for b in images_b64]])


SCORE_KEYS = ("face", "hair", "clothing", "build", "shape", "color_texture", "proportions", "details", "layout",
              "color_mood", "landmarks", "perspective", "subject_identity", "subject_action", "object_interaction",
              "motion_quality")
OVERALL_KEYS = ("similarity", "consistency", "fidelity", "overall", "sim", "cons", "score")
VERDICT_KEYS = ("is_same", "all_consistent", "action_depicted", "same", "allcons", "depicted")


def _h(key: str, field: str) -> int:
    return int(hashlib.sha256(f"{key}|{field}".encode()).hexdigest()[:8], 16)


def judge_value(key: str, field: str):
    """The judge's answer for one field: criteria and overall 2..10 (so the .5 fidelity gate closes on some),
    verdicts true for about 60 % of keys."""
    if field in VERDICT_KEYS:
        return _h(key, "verdict") % 5 < 3
    if field in OVERALL_KEYS:
        return 2 + _h(key, "overall") % 9
    return 2 + _h(key, field) % 9


def judge_answer(key: str) -> dict:
    out = {k: judge_value(key, k) for k in SCORE_KEYS + OVERALL_KEYS + VERDICT_KEYS}
    out["outlier_indices"] = []
    out["reason"] = "fixture"
    return out


class JudgeServer:
    """Chat completions on any path (the authors' Azure client posts to /openai/deployments/<model>/...)."""

    def __init__(self):
        self.requests: list[dict] = []
        self.bodies: list[dict] = []   # every request as it came: path, headers (lower-case names), JSON body
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bodies.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                                     "body": body})
                texts, images = [], []
                for m in body["messages"]:
                    parts = m["content"] if isinstance(m["content"], list) else [{"type": "text",
                                                                                   "text": m["content"]}]
                    for p in parts:
                        if p.get("type") == "text":
                            texts.append(p["text"])
                        elif p.get("type") == "image_url":
                            images.append(p["image_url"]["url"].split(",", 1)[1])
                key = judge_key("\n".join(texts), images)
                outer.requests.append({"path": self.path, "key": key})
                reply = {"id": "x", "object": "chat.completion", "created": 0, "model": body.get("model", "m"),
                         "choices": [{"index": 0, "finish_reason": "stop",
                                      "message": {"role": "assistant", "content": json.dumps(judge_answer(key))}}],
                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
                data = json.dumps(reply).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *a):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *a):
        self.httpd.shutdown()
        self.httpd.server_close()


# ---- seeded checkpoints of the authors' architectures ----

def _bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def _clip_vocab(folder: Path) -> None:
    """vocab.json / merges.txt of OpenAI's CLIP BPE, built from open_clip's bundled copy (the same merges)."""
    import open_clip
    bpe = Path(open_clip.__file__).parent / "bpe_simple_vocab_16e6.txt.gz"
    merges = gzip.open(bpe).read().decode("utf-8").split("\n")[1:49152 - 256 - 2 + 1]
    merges = [tuple(m.split()) for m in merges]
    vocab = list(_bytes_to_unicode().values())
    vocab = vocab + [v + "</w>" for v in vocab] + ["".join(m) for m in merges] + ["<|startoftext|>", "<|endoftext|>"]
    (folder / "vocab.json").write_text(json.dumps({v: i for i, v in enumerate(vocab)}))
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(" ".join(m) for m in merges) + "\n")


@lru_cache(maxsize=None)
def checkpoints(root: str, seed: int = 36) -> dict[str, str]:
    """Seeded random transformers checkpoints in ``root``: {"dino": dir, "clip": dir} (built once per folder)."""
    import torch
    from transformers import (BitImageProcessor, CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor,
                              CLIPTokenizer, Dinov2Config, Dinov2Model)
    root = Path(root)
    dino, clip = root / "dinov2-base-seeded", root / "clip-vit-base-patch32-seeded"
    if not (dino / "config.json").is_file():
        torch.manual_seed(seed)
        cfg = Dinov2Config(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, mlp_ratio=4,
                           patch_size=14, image_size=518, layerscale_value=1.0, layer_norm_eps=1e-6)
        Dinov2Model(cfg).save_pretrained(dino)
        BitImageProcessor(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224}, resample=3,
                          do_center_crop=True, image_mean=[0.485, 0.456, 0.406],
                          image_std=[0.229, 0.224, 0.225]).save_pretrained(dino)
    if not (clip / "config.json").is_file():
        torch.manual_seed(seed + 1)
        model = CLIPModel(CLIPConfig())   # transformers' defaults are ViT-B/32 (768 vision, 512 text/projection)
        with torch.no_grad():
            model.logit_scale.fill_(float(np.log(100.0)))   # OpenAI's trained scale: logits / 100 = cosine
            # a random CLIP's text-image cosines sit near 0 (every crop 'weak'): a shared direction added through
            # the two final layer-norm biases lifts them around the .20 match threshold, so both statuses occur
            u = torch.randn(512)
            model.vision_model.post_layernorm.bias += CLIP_SHIFT * torch.linalg.pinv(model.visual_projection.weight) @ u
            model.text_model.final_layer_norm.bias += CLIP_SHIFT * torch.linalg.pinv(model.text_projection.weight) @ u
        model.save_pretrained(clip)
        clip.mkdir(parents=True, exist_ok=True)
        _clip_vocab(clip)
        tok = CLIPTokenizer(str(clip / "vocab.json"), str(clip / "merges.txt"))
        CLIPProcessor(image_processor=CLIPImageProcessor(), tokenizer=tok).save_pretrained(clip)
    return {"dino": str(dino), "clip": str(clip)}
