"""Keyframe layouts on the paper's 7-cell horizontal grid (Appendix E.4) and the rule-based Layout Agent.

A layout is ``{"camera_angle": "left" | "center" | "right", "pan": "none" | "left" | "right", "keyframes":
[{"description": str, "entities": [{"name": str, "position": cell}]}]}``. The camera angle picks the location
panorama's crop (left / centre / right third). Pure functions.

Continuation rules (paper C.2, "Layout Agent"): retained characters keep their cells; entering characters take
free cells on the side the camera pans to; when too few cells are free there, the camera pans one third that way
and retained characters shift two cells the other way (a character on the right moves left as the camera pans
right); leaving characters are dropped. When the action says someone enters or leaves, the shot gets two
keyframes (before and after), otherwise one.
"""
from __future__ import annotations

import re
from typing import Optional

GRID = ("far-left", "left", "center-left", "center", "center-right", "right", "far-right")
ANGLES = ("left", "center", "right")
SPREAD = {0: [], 1: [3], 2: [2, 4], 3: [1, 3, 5], 4: [0, 2, 4, 6], 5: [0, 1, 3, 5, 6], 6: [0, 1, 2, 4, 5, 6],
          7: list(range(7))}
_MOVE = re.compile(r"\b(enters?|arrives?|joins?|walks in|comes in|leaves?|exits?|walks away|departs?)\b", re.I)


def cell_x(position: str, width: int) -> int:
    """Pixel centre of a grid cell in a frame of ``width``."""
    return int((GRID.index(position) + 0.5) * width / len(GRID))


def spread(names: list[str]) -> dict[str, str]:
    cells = SPREAD.get(len(names)) or [round(i * 6 / max(len(names) - 1, 1)) for i in range(len(names))]
    return {n: GRID[c] for n, c in zip(names, cells)}


def prev_state(layout: dict) -> dict:
    """The state a continuation reads: the last keyframe's characters and cells, and the camera angle."""
    last = layout["keyframes"][-1]
    return {"camera_angle": layout["camera_angle"],
            "positions": {e["name"]: e["position"] for e in last["entities"] if e.get("kind", "character")
                          == "character"},
            "description": last.get("description", "")}


def transitions(characters: list[str], prev: Optional[dict]) -> dict:
    """retained / entering / leaving characters against the previous shot's state."""
    before = list(prev["positions"]) if prev else []
    return {"retained": [c for c in characters if c in before], "entering": [c for c in characters if c not in before],
            "leaving": [c for c in before if c not in characters]}


def rule_layout(characters: list[str], objects: list[str], action: str, prev: Optional[dict]) -> dict:
    """The rule-based Layout Agent's plan (module docstring). ``prev`` is None for a hard cut."""
    tr = transitions(characters, prev)
    angle, pan = "center", "none"
    if prev is None or not tr["retained"]:
        final = spread(characters)
        if prev is not None:
            angle = prev["camera_angle"]
    else:
        angle = prev["camera_angle"]
        cells = {c: GRID.index(prev["positions"][c]) for c in tr["retained"]}
        right = list(range(max(cells.values()) + 1, 7))
        left = list(range(min(cells.values()) - 1, -1, -1))
        side = "right" if len(right) >= len(left) else "left"
        if len(right if side == "right" else left) < len(tr["entering"]):
            pan = side  # the camera turns toward the newcomers; what it kept slides the other way
            shift = -2 if side == "right" else 2
            cells = {c: min(6, max(0, v + shift)) for c, v in cells.items()}
            angle = ANGLES[min(2, max(0, ANGLES.index(angle) + (1 if side == "right" else -1)))]
        taken = set(cells.values())
        edge = max(taken) if side == "right" else min(taken)
        outward = range(edge + 1, 7) if side == "right" else range(edge - 1, -1, -1)
        pool = [i for i in outward if i not in taken] + [i for i in (3, 2, 4, 1, 5, 0, 6) if i not in taken]
        pool = list(dict.fromkeys(pool))
        final = {c: GRID[v] for c, v in cells.items()}
        for c, i in zip(tr["entering"], pool):
            final[c] = GRID[i]
    obj = _objects(objects, final)
    kf_final = {"description": action, "entities": _entities(final, obj)}
    moves = bool(_MOVE.search(action)) and prev is not None and (tr["entering"] or tr["leaving"])
    if moves:
        before = {c: p for c, p in final.items() if c in tr["retained"]}
        before.update({c: prev["positions"][c] for c in tr["leaving"]})
        first = {"description": f"before: {action}", "entities": _entities(before, _objects(objects, before))}
        keyframes = [first, kf_final]
    else:
        keyframes = [kf_final]
    return {"camera_angle": angle, "pan": pan, "keyframes": keyframes, **tr}


def _objects(objects: list[str], chars: dict[str, str]) -> dict[str, str]:
    """Objects beside the first character (the next free cell), or in the centre when nobody is there."""
    taken = {GRID.index(p) for p in chars.values()}
    out = {}
    anchor = GRID.index(next(iter(chars.values()))) if chars else 3
    for o in objects:
        for d in (1, -1, 2, -2, 3, -3, 0):
            i = anchor + d
            if 0 <= i < 7 and i not in taken:
                out[o] = GRID[i]
                taken.add(i)
                break
        else:
            out[o] = GRID[anchor]
    return out


def _entities(chars: dict[str, str], objs: dict[str, str]) -> list[dict]:
    return ([{"name": n, "position": p, "kind": "character"} for n, p in chars.items()]
            + [{"name": n, "position": p, "kind": "object"} for n, p in objs.items()])


def repair(plan: dict, characters: list[str], objects: list[str], prev: Optional[dict]) -> tuple[dict, list[str]]:
    """A model's layout made usable, with a note per change: unknown names dropped, unknown cells or angles
    replaced, scheduled characters missing from the last keyframe placed on a free cell."""
    notes = []
    angle = plan.get("camera_angle")
    if angle not in ANGLES:
        notes.append(f"camera_angle {angle!r} unknown: center")
        angle = "center"
    kinds = {**{c: "character" for c in characters}, **{o: "object" for o in objects}}
    kfs = []
    for k in plan.get("keyframes") or []:
        ents = []
        for e in k.get("entities") or []:
            if e.get("name") not in kinds:
                notes.append(f"unscheduled {e.get('name')!r} dropped")
                continue
            pos = e.get("position") if e.get("position") in GRID else "center"
            if pos != e.get("position"):
                notes.append(f"{e.get('name')!r}: cell {e.get('position')!r} unknown, center")
            ents.append({"name": e["name"], "position": pos, "kind": kinds[e["name"]]})
        kfs.append({"description": str(k.get("description", "")), "entities": ents})
    if not kfs:
        notes.append("no keyframe: the rule layout")
        return rule_layout(characters, objects, "", prev), notes
    placed = {e["name"] for e in kfs[-1]["entities"]}
    taken = {GRID.index(e["position"]) for e in kfs[-1]["entities"]}
    for c in characters:
        if c not in placed:
            i = next((i for i in (3, 2, 4, 1, 5, 0, 6) if i not in taken), 3)
            taken.add(i)
            kfs[-1]["entities"].append({"name": c, "position": GRID[i], "kind": "character"})
            notes.append(f"scheduled {c!r} missing: placed {GRID[i]}")
    tr = transitions(characters, prev)
    pan = plan.get("pan") if plan.get("pan") in ("none", "left", "right") else "none"
    return {"camera_angle": angle, "pan": pan, "keyframes": kfs, **tr}, notes
