"""The memory bank's pure pieces (paper C.1): which entity needs which reference, the textual memory, the chroma
retry order, the selection grid on a checkered background, the name label, the panorama's three crops, and the
prompt of a shot with stored descriptions injected. No Dagster, no backends."""
from __future__ import annotations

import re
from typing import Optional

import cv2
import numpy as np

from bench_assets.entitybench.dataset import Episode

CHROMA_ORDER = ("green", "magenta", "blue", "orange")  # first key, then the Verification Agent's retries (Fig. 21)
PORTRAIT_SIZE = {"character": (512, 768), "object": (512, 512)}  # width x height: objects square (paper E.2)
PANORAMA_SIZE = (1536, 512)                                      # 3:1 (paper E.2)
ANGLE_CROPS = ("left", "center", "right")


def first_context(ep: Episode, entity_id: str) -> str:
    """The action of the shot that introduces the entity (its first-appearance context)."""
    for s in ep.shots:
        if entity_id in s.entities:
            return f"shot {s.index}: {s.action}"
    return "not scheduled in any shot"


def textual_memory(ep: Episode) -> dict[str, dict]:
    """Per entity: the description at its first appearance and the shot it was stored at."""
    out = {}
    for s in ep.shots:
        for e in s.entities:
            if e not in out:
                ent = ep.registry[e]
                out[e] = {"name": ent.name, "description": ent.description, "first_shot": s.index}
    return out


def owners(ep: Episode, entity_id: str, kind: str) -> Optional[str]:
    """The character (or location) an attached object is drawn with: the one scheduled with it most often."""
    counts: dict[str, int] = {}
    for s in ep.shots:
        if entity_id in s.entities:
            for e in s.entities:
                if ep.registry[e].type == kind:
                    counts[e] = counts.get(e, 0) + 1
    return max(sorted(counts), key=lambda e: counts[e]) if counts else None


# A background clause of a portrait prompt, however the agent worded it: an optional preposition and article,
# adjectives, a colour (word, hex or RGB triple) and a key noun ("green screen", "solid lime backdrop", "chroma-key
# green background", "bluescreen", "chroma key background"), or the noun first ("background: solid green"). The
# colours are those an agent may ask a backdrop in.
_PREP = r"(?:\b(?:on|against|over|before|in\s+front\s+of|with|in)\s+)?(?:\b(?:an?|the)\s+)?"
_ADJ = (r"(?:(?:plain|solid|pure|flat|bright|uniform|vivid|saturated|even|clean|seamless|studio|neon|evenly|lit|"
        r"single[- ]colou?r(?:ed)?|monochrome|simple)[\s,-]+)*")
_COL = (r"(?:green|magenta|blue|orange|lime|fuchsia|pink|purple|cyan|teal|yellow|red|white|grey|gray|black|"
        r"#[0-9a-f]{6}\b|\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\)|rgb\s*\(\s*\d{1,3}\s*,\s*\d{1,3}\s*,\s*\d{1,3}\s*\))")
_BG = r"(?:background|backdrop|screen|backcloth)(?:[\s-]+(?:background|backdrop))?"
_KEY = r"chroma[\s-]?key(?:ed|ing)?"
KEY_CLAUSE = re.compile(
    _PREP + r"(?:" + _ADJ + r"(?:" + _COL + r"[\s-]+)+(?:" + _KEY + r"(?:[\s-]+" + _BG + r")?|" + _BG + r")"  # colour first
    + r"|(?:" + _KEY + r"[\s-]+)?(?:background|backdrop)(?:\s+colou?r)?(?:\s*:\s*|\s+(?:in|of|is)\s+)"  # noun first
    + _ADJ + _COL
    + r"|" + _ADJ + _KEY + r"(?:[\s-]+(?:" + _COL + r"[\s-]+)*" + _BG + r"|[\s-]+" + _COL + r"\b)?"          # key first
    + r"|" + _ADJ + r"(?:green|blue)screen"                                                            # one word
    + r")\b", re.I)


def key_clauses(prompt: str) -> list[str]:
    """The background clauses of a prompt (see KEY_CLAUSE), in order."""
    return [m.group(0) for m in KEY_CLAUSE.finditer(prompt)]


def rekey(prompt: str, chroma: str) -> str:
    """The prompt drawn for one attempt: the platform writes the requested key itself. Every background clause the
    agent wrote (any phrasing, any colour) is removed; the first becomes "<chroma> chroma-key background" (keeping
    its preposition), or, when the agent wrote none, ", on a plain solid <chroma> chroma-key background" is
    appended. So a retry always draws on the key it will be segmented with."""
    ours = f"{chroma} chroma-key background"
    found = list(KEY_CLAUSE.finditer(prompt))
    if not found:
        return prompt.rstrip(" \t\n.,;") + f", on a plain solid {ours}"
    out, pos = [], 0
    for i, m in enumerate(found):
        out.append(prompt[pos:m.start()])
        if i == 0:
            prep = re.match(_PREP, m.group(0), re.I).group(0)
            out.append(f"{prep}{ours}")
        pos = m.end()
    out.append(prompt[pos:])
    text = "".join(out)
    # what removing a later clause leaves: doubled separators, a dangling "and" / comma before the end
    text = re.sub(r"\s*,\s*(?:,\s*)+", ", ", text)
    text = re.sub(r"\s+(?:and|,)\s*([.;]|$)", r"\1", text)
    text = re.sub(r"\(\s*\)", "", text)
    return re.sub(r"[ \t]{2,}", " ", text).strip()


def checkered(h: int, w: int, cell: int = 16) -> np.ndarray:
    yy, xx = np.mgrid[0:h, 0:w]
    c = (((yy // cell) + (xx // cell)) % 2).astype(np.uint8)
    return np.where(c[..., None] == 1, 200, 245).astype(np.uint8).repeat(3, axis=2)


def on_checker(rgba: np.ndarray) -> np.ndarray:
    a = rgba[..., 3:4].astype(np.float32) / 255
    bg = checkered(*rgba.shape[:2]).astype(np.float32)
    return (rgba[..., :3] * a + bg * (1 - a)).astype(np.uint8)


def candidate_grid(cutouts: list[np.ndarray], tile_h: int = 256) -> np.ndarray:
    """The segmented candidates side by side on a checkered background, numbered 1..N (paper Fig. 20)."""
    tiles = []
    for i, c in enumerate(cutouts, start=1):
        w = max(1, int(c.shape[1] * tile_h / c.shape[0]))
        t = on_checker(cv2.resize(c, (w, tile_h), interpolation=cv2.INTER_AREA))
        cv2.putText(t, str(i), (6, 24), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (20, 20, 20), 2, cv2.LINE_AA)
        tiles.append(np.pad(t, ((0, 0), (0, 4), (0, 0)), constant_values=255))
    return np.concatenate(tiles, axis=1)


def labelled(rgba: np.ndarray, name: str) -> np.ndarray:
    """A character's reference: the cut-out on white with its name written under it (paper C.1)."""
    h, w = rgba.shape[:2]
    a = rgba[..., 3:4].astype(np.float32) / 255
    img = (rgba[..., :3] * a + 255 * (1 - a)).astype(np.uint8)
    band = max(28, h // 10)
    out = np.full((h + band, w, 3), 255, np.uint8)
    out[:h] = img
    scale = band / 40
    (tw, th), _ = cv2.getTextSize(name, cv2.FONT_HERSHEY_SIMPLEX, scale, 2)
    if tw > w - 8:
        scale *= (w - 8) / tw
        (tw, th), _ = cv2.getTextSize(name, cv2.FONT_HERSHEY_SIMPLEX, scale, 2)
    cv2.putText(out, name, ((w - tw) // 2, h + (band + th) // 2), cv2.FONT_HERSHEY_SIMPLEX, scale, (0, 0, 0), 2,
                cv2.LINE_AA)
    return out


def crops(panorama: np.ndarray) -> dict[str, np.ndarray]:
    """Left, centre and right thirds of a location panorama (the camera angles' backgrounds)."""
    w = panorama.shape[1]
    return {a: panorama[:, i * w // 3:(i + 1) * w // 3] for i, a in enumerate(ANGLE_CROPS)}


def camera_direction(camera_angle: str, pan: str, continues: bool, n_keyframes: int = 1) -> str:
    """The shot's camera direction in words, from its layout (paper C.1: the backbone's text prompt "describes the
    shot's camera direction, entity description, and actions"): the angle of the location it frames, and for a
    continuation whether it holds or pans."""
    view = {"left": "the left part of the location", "center": "the centre of the location",
            "right": "the right part of the location"}.get(camera_angle, f"the {camera_angle} view")
    if not continues:
        move = "hard cut; static camera"
    elif pan in ("left", "right"):
        move = f"continues the previous shot; the camera pans {pan}"
    else:
        move = "continues the previous shot; the camera holds"
    steps = f", {n_keyframes} keyframes in order" if n_keyframes > 1 else ""
    return f"Camera: {move}, framing {view}{steps}."


def injected_prompt(ep: Episode, shot_index: int, camera: Optional[str] = None) -> str:
    """The EntityMem prompt of a shot: the camera direction (``camera_direction``), every scheduled entity's stored
    description (the textual memory injects descriptions of recurring entities that the shot's script does not
    describe), then the action."""
    mem = textual_memory(ep)
    shot = ep.shots[shot_index - 1]
    lines = [f"[{mem[e]['name']}] {mem[e]['description']}" for e in shot.entities]
    return "\n".join(([camera] if camera else []) + lines + [shot.action]).strip()
