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


def rekey(prompt: str, chroma: str) -> str:
    """The agent's prompt with its chroma-key colour rewritten (the retry keeps everything else)."""
    return re.sub(r"\b(green|magenta|blue|orange)(\s+chroma[- ]key)", rf"{chroma}\2", prompt, flags=re.I)


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


def injected_prompt(ep: Episode, shot_index: int) -> str:
    """The EntityMem prompt of a shot: the action, then every scheduled entity's stored description (the textual
    memory injects descriptions of recurring entities that the shot's script does not describe)."""
    mem = textual_memory(ep)
    shot = ep.shots[shot_index - 1]
    lines = [f"[{mem[e]['name']}] {mem[e]['description']}" for e in shot.entities]
    return "\n".join(lines + [shot.action]).strip()
