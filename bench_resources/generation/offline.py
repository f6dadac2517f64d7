"""The offline stand-in's tools: a deterministic renderer that draws what a prompt describes (shapes and colours
read from its words) and a keyframe animator (camera pan / zoom over keyframes, a crossfade from a first frame).

Nothing here is a generative model and nothing here pretends to be one: it lets the EntityMem pipeline run end to
end without a network or GPU, so its plumbing (bank, verification retries, layouts, compositing, continuation
frames, the generator folder) can be exercised and scored. What a real image or video model would add (likeness,
motion, lighting) is absent by construction.

The renderer reads three kinds of prompt (the Portrait Agent's, see bench_assets/entitymem/agents.py):
- ``portrait`` / ``character``: a standing figure (hair, skin, clothes, trousers) on the named chroma background;
- ``object``: a rounded body with a second-colour detail (legs and ears for a creature, wheels for a vehicle);
- ``panorama`` / ``location`` / ``scene``: a sky, a ground and a few structures in the described colours.
Colours are the colour words in the order they appear; a word the table lacks leaves a colour hashed from the
text, so two different descriptions rarely draw alike. ``seed`` jitters pose and size a little (candidates).
"""
from __future__ import annotations

import hashlib
import re
from typing import Optional, Sequence

import cv2
import numpy as np

COLOURS: dict[str, tuple[int, int, int]] = {
    "red": (200, 40, 40), "crimson": (160, 20, 40), "orange": (235, 130, 30), "tabby": (215, 140, 60),
    "yellow": (240, 210, 50), "gold": (212, 175, 55), "golden": (212, 175, 55), "green": (50, 150, 60),
    "teal": (30, 130, 130), "blue": (40, 80, 200), "navy": (25, 35, 90), "denim": (70, 100, 150),
    "purple": (120, 60, 160), "violet": (140, 90, 200), "pink": (235, 130, 170), "brown": (120, 75, 40),
    "tan": (200, 170, 120), "beige": (220, 205, 170), "black": (25, 25, 25), "dark": (45, 45, 50),
    "white": (240, 240, 240), "grey": (140, 140, 140), "gray": (140, 140, 140), "silver": (190, 190, 200),
    "blonde": (230, 200, 120), "ginger": (200, 100, 40), "latte": (190, 150, 110), "coffee": (100, 60, 30),
    "stone": (150, 145, 135), "wooden": (140, 95, 55), "wood": (140, 95, 55), "sand": (220, 200, 150),
    "sky": (135, 190, 235), "snow": (245, 245, 250), "grass": (80, 160, 70), "brick": (170, 70, 50),
}
# The chroma keys a portrait is generated on, in the Verification Agent's retry order (paper Fig. 21)
CHROMA: dict[str, tuple[int, int, int]] = {"green": (0, 177, 64), "magenta": (255, 0, 255), "blue": (0, 71, 187),
                                           "orange": (255, 140, 0)}
SKIN = (224, 180, 150)
_CHROMA_RE = re.compile(r"\b(green|magenta|blue|orange)\s+(?:chroma[- ]key|screen|background)", re.I)
_KIND = (("panorama", "location"), ("location", "location"), ("scene", "location"), ("object", "object"),
         ("portrait", "character"), ("character", "character"))
CREATURES = ("cat", "dog", "creature", "bird", "horse", "pokemon", "dragon", "fox", "rabbit", "animal")
VEHICLES = ("car", "bus", "bike", "bicycle", "truck", "vehicle", "train", "boat")


def _hash_colour(text: str, salt: str = "") -> tuple[int, int, int]:
    h = hashlib.sha256((salt + text).encode()).digest()
    return tuple(int(40 + b * 0.7) for b in h[:3])  # type: ignore[return-value]


def colours_of(text: str, k: int = 4) -> list[tuple[int, int, int]]:
    """The colours a text names, in order (each once), padded with colours hashed from the text."""
    seen, out = set(), []
    for w in re.findall(r"[a-z]+", text.lower()):
        if w in COLOURS and w not in seen:
            seen.add(w)
            out.append(COLOURS[w])
    i = 0
    while len(out) < k:
        out.append(_hash_colour(text, str(i)))
        i += 1
    return out


def first_keyword(text: str, table: Sequence[tuple[str, str]], default: str) -> str:
    """The value of the first (word, value) pair whose word occurs in the text (case-insensitive), else default.
    One lookup for the keyword tables of the offline stand-ins and EntityMem's agents (the order is the priority)."""
    low = text.lower()
    return next((value for word, value in table if word in low), default)


def kind_of(prompt: str) -> str:
    return first_keyword(prompt, _KIND, "character")


def chroma_of(prompt: str) -> Optional[str]:
    m = _CHROMA_RE.search(prompt)
    return m.group(1).lower() if m else None


def subject_of(prompt: str) -> str:
    """The part of a prompt that describes the subject: after 'of ' up to the background clause (the colour words
    of 'green chroma-key background' must not colour the subject)."""
    text = _CHROMA_RE.split(prompt)[0] if _CHROMA_RE.search(prompt) else prompt
    return text


def _rng(prompt: str, seed: int) -> np.random.Generator:
    return np.random.default_rng(int.from_bytes(hashlib.sha256(f"{seed}|{prompt}".encode()).digest()[:8], "little"))


def _figure(img: np.ndarray, cols: list, rng: np.random.Generator) -> None:
    h, w = img.shape[:2]
    cx = int(w / 2 + rng.uniform(-0.04, 0.04) * w)
    scale = rng.uniform(0.9, 1.0)
    top, bottom = int(h * (1 - 0.86 * scale) / 2), int(h - h * (1 - 0.86 * scale) / 2)
    fh = bottom - top
    head_r = int(fh * 0.085)
    hair, clothes, trousers = cols[0], cols[1], cols[2]
    head_c = (cx, top + head_r + int(fh * 0.02))
    cv2.circle(img, head_c, head_r + int(fh * 0.015), hair, -1, cv2.LINE_AA)
    cv2.circle(img, (head_c[0], head_c[1] + int(head_r * 0.25)), head_r, SKIN, -1, cv2.LINE_AA)
    body_top, body_bot = head_c[1] + head_r + int(fh * 0.02), top + int(fh * 0.62)
    bw = int(fh * 0.16)
    cv2.rectangle(img, (cx - bw, body_top), (cx + bw, body_bot), clothes, -1)
    cv2.rectangle(img, (cx - bw - int(fh * 0.05), body_top), (cx - bw, body_top + int(fh * 0.3)), clothes, -1)
    cv2.rectangle(img, (cx + bw, body_top), (cx + bw + int(fh * 0.05), body_top + int(fh * 0.3)), clothes, -1)
    leg = int(fh * 0.07)
    cv2.rectangle(img, (cx - bw + 2, body_bot), (cx - bw + 2 + leg, bottom), trousers, -1)
    cv2.rectangle(img, (cx + bw - 2 - leg, body_bot), (cx + bw - 2, bottom), trousers, -1)


def _object(img: np.ndarray, cols: list, rng: np.random.Generator, subject: str) -> None:
    h, w = img.shape[:2]
    low = subject.lower()
    cx, cy = int(w / 2 + rng.uniform(-0.03, 0.03) * w), int(h * 0.55)
    rx, ry = int(w * rng.uniform(0.28, 0.33)), int(h * rng.uniform(0.2, 0.24))
    if any(c in low for c in CREATURES):
        for dx in (-0.6, -0.2, 0.2, 0.6):
            cv2.rectangle(img, (int(cx + dx * rx) - 4, cy), (int(cx + dx * rx) + 4, cy + int(ry * 1.6)), cols[1], -1)
        cv2.ellipse(img, (cx, cy), (rx, ry), 0, 0, 360, cols[0], -1, cv2.LINE_AA)
        hx = cx + int(rx * 0.9)
        cv2.circle(img, (hx, cy - ry), int(ry * 0.7), cols[0], -1, cv2.LINE_AA)
        cv2.fillConvexPoly(img, np.array([[hx - 10, cy - ry - 10], [hx - 2, cy - ry - int(ry * 1.4)],
                                          [hx + 4, cy - ry - 8]]), cols[1])
        cv2.circle(img, (hx + 6, cy - ry - 3), 3, cols[2], -1)
    elif any(v in low for v in VEHICLES):
        cv2.rectangle(img, (cx - rx, cy - ry), (cx + rx, cy + ry // 2), cols[0], -1)
        for dx in (-0.6, 0.6):
            cv2.circle(img, (int(cx + dx * rx), cy + ry // 2), int(ry * 0.55), cols[1], -1, cv2.LINE_AA)
    else:
        cv2.ellipse(img, (cx, cy), (rx, ry), 0, 0, 360, cols[0], -1, cv2.LINE_AA)
        cv2.ellipse(img, (cx, cy - ry // 3), (int(rx * 0.6), int(ry * 0.45)), 0, 0, 360, cols[1], -1, cv2.LINE_AA)


def _location(img: np.ndarray, cols: list, rng: np.random.Generator) -> None:
    h, w = img.shape[:2]
    sky = np.array(cols[2], float)
    ground = np.array(cols[1], float)
    horizon = int(h * rng.uniform(0.55, 0.65))
    for y in range(horizon):
        img[y] = (sky * (0.75 + 0.25 * y / max(horizon, 1))).clip(0, 255)
    img[horizon:] = ground
    n = 3 + int(rng.integers(0, 4))
    for i in range(n):
        x0 = int((i + rng.uniform(0.1, 0.5)) * w / n)
        bw, bh = int(w / n * rng.uniform(0.3, 0.6)), int(horizon * rng.uniform(0.3, 0.8))
        c = cols[0] if i % 2 == 0 else cols[3]
        cv2.rectangle(img, (x0, horizon - bh), (x0 + bw, horizon), c, -1)
        cv2.fillConvexPoly(img, np.array([[x0 - 6, horizon - bh], [x0 + bw // 2, horizon - bh - bh // 4],
                                          [x0 + bw + 6, horizon - bh]]), cols[3] if i % 2 == 0 else cols[0])


def render(prompt: str, width: int, height: int, seed: int = 0) -> np.ndarray:
    """RGB uint8 (height, width, 3): the prompt drawn as shapes and colours (module docstring)."""
    kind = kind_of(prompt)
    rng = _rng(prompt, seed)
    subject = subject_of(prompt)
    cols = colours_of(subject)
    img = np.empty((height, width, 3), np.uint8)
    chroma = chroma_of(prompt)
    img[:] = CHROMA[chroma] if chroma else (200, 200, 200)
    if kind == "location":
        _location(img, cols, rng)
    elif kind == "object":
        _object(img, cols, rng, subject)
    else:
        _figure(img, cols, rng)
    return img


def render_scene(entities: Sequence[tuple[str, str, str]], width: int, height: int, seed: int = 0) -> np.ndarray:
    """A whole frame from text alone (the stand-in's text-to-video when no keyframe is given): the location drawn
    from its text, characters and objects from theirs, spread left to right. ``entities``: (type, name, text)."""
    locs = [e for e in entities if e[0] == "location"]
    frame = render(f"panorama of {locs[0][2]}" if locs else "panorama of an empty place", width, height, seed)
    others = [e for e in entities if e[0] != "location"]
    for i, (etype, name, text) in enumerate(others):
        kind = "object" if etype == "object" else "portrait"
        sprite = render(f"{kind} of {text} on a green chroma-key background", 128, 128 if kind == "object" else 192,
                        seed)
        mask = np.any(sprite != np.array(CHROMA["green"], np.uint8), axis=2)
        th = int(height * (0.3 if kind == "object" else 0.7))
        tw = max(1, int(sprite.shape[1] * th / sprite.shape[0]))
        sp = cv2.resize(sprite, (tw, th), interpolation=cv2.INTER_AREA)
        mk = cv2.resize(mask.astype(np.uint8), (tw, th), interpolation=cv2.INTER_NEAREST).astype(bool)
        cx = int(width * (i + 1) / (len(others) + 1))
        x0, y0 = cx - tw // 2, int(height * 0.95) - th
        xs, ys = max(0, x0), max(0, y0)
        xe, ye = min(width, x0 + tw), min(height, y0 + th)
        if xe <= xs or ye <= ys:
            continue
        region = frame[ys:ye, xs:xe]
        m = mk[ys - y0:ye - y0, xs - x0:xe - x0]
        region[m] = sp[ys - y0:ye - y0, xs - x0:xe - x0][m]
    return frame


def _zoom_pan(img: np.ndarray, zoom: float, dx: float) -> np.ndarray:
    """The frame seen by a camera zoomed by ``zoom`` (>= 1) and panned by ``dx`` (share of the width)."""
    h, w = img.shape[:2]
    m = np.array([[zoom, 0, (1 - zoom) * w / 2 - dx * w], [0, zoom, (1 - zoom) * h / 2]], np.float32)
    return cv2.warpAffine(img, m, (w, h), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)


def animate(keyframes: Sequence[np.ndarray], n_frames: int, first_frame: Optional[np.ndarray] = None,
            zoom: float = 1.06, pan: float = 0.02) -> list[np.ndarray]:
    """Frames of a shot over its keyframes: crossfades from one keyframe to the next over the shot, a slow zoom
    and pan; with ``first_frame`` (a continuation), the shot opens on it and dissolves into the first keyframe
    over the first quarter. Keyframes are resized to the first keyframe's size."""
    if not keyframes:
        raise ValueError("animate needs at least one keyframe")
    h, w = keyframes[0].shape[:2]
    keys = [k if k.shape[:2] == (h, w) else cv2.resize(k, (w, h), interpolation=cv2.INTER_AREA) for k in keyframes]
    if first_frame is not None and first_frame.shape[:2] != (h, w):
        first_frame = cv2.resize(first_frame, (w, h), interpolation=cv2.INTER_AREA)
    out = []
    for i in range(n_frames):
        t = i / max(n_frames - 1, 1)
        pos = t * (len(keys) - 1)
        a = int(np.floor(pos))
        b = min(a + 1, len(keys) - 1)
        f = pos - a
        base = keys[a].astype(np.float32) * (1 - f) + keys[b].astype(np.float32) * f
        if first_frame is not None and t < 0.25:
            g = t / 0.25
            base = first_frame.astype(np.float32) * (1 - g) + base * g
        out.append(_zoom_pan(base.clip(0, 255).astype(np.uint8), 1 + (zoom - 1) * t, pan * t))
    return out
