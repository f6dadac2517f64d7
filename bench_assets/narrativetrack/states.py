"""When are two segments in the same state? The ground truth of every change, ordering and ambiguity question rests
on this, so it is conservative: two segments are ``same``, ``change`` or ``unsure``, and an attribute with an unsure
step is not used for change questions of that entity.

* Measured attributes (the offline heuristic): outfit and scene are colour-share histograms (12 colour names) and
  compare by total-variation distance, the same within ``STATE_TOLERANCE``, a change only beyond ``CHANGE_MARGIN``
  (and only when the words differ too); the action is a motion vector (box heights per second, sideways and in
  depth): two labels are a change only when each holds with the speed thresholds ``ACTION_MARGIN`` times lower and
  higher (both far from a class boundary). Word order never matters.
* Text without measurements (the judge's free text, script facts, synthetic distractors): the same when their word
  sets agree; colour-word descriptions (heuristic style) change only when they share no colour word.
* Segments whose attributes come from another source than the video's main one (a judge failure filled by the
  heuristic) are left out of every change list: two vocabularies never make a change.
"""
from __future__ import annotations

import re
from typing import Optional, Sequence

import numpy as np

from bench_assets.narrativetrack import constants

ATTRS = ("action", "outfit", "scene")
_STOP = {"a", "an", "the", "and", "with", "of", "in", "wearing", ","}
COLOURS = ("black", "white", "grey", "red", "orange", "brown", "yellow", "green", "cyan", "blue", "purple", "pink")
HEURISTIC = "offline heuristic"


def words(text: str) -> frozenset:
    return frozenset(w for w in re.findall(r"[a-z0-9']+", str(text).lower()) if w not in _STOP)


def colour_words(text: str) -> frozenset:
    return frozenset(w for w in words(text) if w in COLOURS)


def usable(seg: dict, style: str) -> bool:
    """A segment's attributes count for change questions when they come from the video's main source."""
    if any(not seg.get(a) for a in ATTRS):
        return False
    src = seg.get("source")
    if src is None or style == "script":
        return True
    return src.startswith("judge:") if style == "free_text" else src == HEURISTIC


def action_label(vx: float, vh: float, scale: float = 1.0) -> str:
    """The offline action word of a motion vector (box heights per second); ``scale`` multiplies the speed
    thresholds. A box that does not move says nothing about sitting or standing: "staying in place"."""
    if abs(vx) >= constants.WALK_SPEED * scale and abs(vx) >= abs(vh):
        return "walking to the right" if vx > 0 else "walking to the left"
    if abs(vh) >= constants.DEPTH_SPEED * scale:
        return "moving towards the camera" if vh > 0 else "moving away from the camera"
    return "staying in place"


def _confident(v, label: str) -> bool:
    """The label holds with the speed thresholds ``ACTION_MARGIN`` times lower and higher: far from a boundary."""
    return all(words(action_label(v[0], v[1], f)) == words(label)
               for f in (1.0 / constants.ACTION_MARGIN, constants.ACTION_MARGIN))


def relation(a: dict, b: dict, attr: str, style: str = "heuristic") -> str:
    """'same' | 'change' | 'unsure' for one attribute of two segment-like dicts ({attr: text, "measures": {...}})."""
    ta, tb = a[attr], b[attr]
    same_words = words(ta) == words(tb)
    ma, mb = (a.get("measures") or {}).get(attr), (b.get("measures") or {}).get(attr)
    if ma is not None and mb is not None:
        x, y = np.asarray(ma, float), np.asarray(mb, float)
        if attr == "action":
            if same_words:
                return "same"
            return "change" if _confident(x, ta) and _confident(y, tb) else "unsure"
        tv = 0.5 * float(np.abs(x - y).sum())
        if tv <= constants.STATE_TOLERANCE:
            return "same"
        return "change" if tv >= constants.CHANGE_MARGIN and not same_words else "unsure"
    if same_words:
        return "same"
    if attr == "action" and (ma is not None or mb is not None):
        # a word from elsewhere (a synthetic distractor) against a measured action: a change only where the
        # measurement is far from every class boundary
        m, t = (ma, ta) if ma is not None else (mb, tb)
        return "change" if _confident(np.asarray(m, float), t) else "unsure"
    if style == "heuristic" and attr in ("outfit", "scene"):
        return "change" if not (colour_words(ta) & colour_words(tb)) else "unsure"
    return "change"


def attribute_states(segs: Sequence[dict], attr: str, style: str = "heuristic") -> Optional[dict]:
    """Blocks of consecutive segments in one state and the state of each block, or None when some step is unsure
    (then no change question uses the attribute). {"blocks": [[seg idx]], "state": [state id per block],
    "text": [text per state], "single_block": [state ids occurring in exactly one block, in time order]}."""
    blocks: list[list[int]] = []
    for i, s in enumerate(segs):
        if blocks:
            r = relation(segs[blocks[-1][-1]], s, attr, style)
            if r == "unsure":
                return None
            if r == "same":
                blocks[-1].append(i)
                continue
        blocks.append([i])
    members: list[list[int]] = []  # segments of each state
    state: list[int] = []
    for b in blocks:
        hit = None
        for k, m in enumerate(members):
            rels = {relation(segs[i], segs[j], attr, style) for i in m for j in b}
            if rels == {"same"}:
                hit = k
                break
            if rels != {"change"}:
                return None  # partly the same as an earlier state: not a clean state
        if hit is None:
            members.append(list(b))
            state.append(len(members) - 1)
        else:
            members[hit] += b
            state.append(hit)
    counts = np.bincount(state, minlength=len(members))
    single = [s for s in dict.fromkeys(state) if counts[s] == 1]
    return {"blocks": blocks, "state": state, "text": [segs[m[0]][attr] for m in members], "single_block": single}


def change_texts(segs: Sequence[dict], attr: str, style: str) -> Optional[list[str]]:
    """The change list: one text per block in time order (None when the attribute is unsure)."""
    st = attribute_states(segs, attr, style)
    return None if st is None else [st["text"][k] for k in st["state"]]


def distinct_from(value: dict, own: Sequence[dict], attr: str, style: str) -> bool:
    """A distractor value is wrong for the entity only when it is a clear change from every one of its states."""
    return all(relation(value, s, attr, style) == "change" for s in own)


def identifies(seg: dict, others: Sequence[dict], style: str) -> bool:
    """The description (action, outfit, scene) singles the entity out: every other person's segment differs from it
    clearly in at least one attribute."""
    return all(any(relation(seg, o, a, style) == "change" for a in ATTRS) for o in others)


def state_flags(segs: Sequence[dict], style: str) -> dict:
    """The flags the QA templates need, from the states (not from raw text): a significant transition needs two
    clean blocks, 'over three' three distinct states."""
    out = {}
    for attr in ATTRS:
        st = attribute_states(segs, attr, style)
        out[f"significant_{attr}_transition"] = bool(st and len(st["blocks"]) >= 2)
        out[f"over_three_{attr}_changes"] = bool(st and len(st["text"]) >= 3)
    return out
