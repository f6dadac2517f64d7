"""EntityBench identity math for the face-identity additions (issues 23, 37): faces assigned to characters by
matching, an appearance's identity from several of its faces, and within-shot drift between a shot's beginning and
end. Arrays in, values out; no Dagster, no file access."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

# Faces per identity set (an appearance's identity; a shot's beginning or end set). Not fitted on any footage: it is
# the number of frames the grounding reads per shot (constants.GROUNDING_FRAMES), so an appearance reads at most as
# many faces as its grounding looked at, and a shot's beginning and end sets stay apart (a shot samples ~18 frames).
TOP_K = 5
_WEISZFELD_STEPS = 50   # numerical: the geometric median converges in a few steps on unit vectors


def assign_faces(sim: np.ndarray) -> list[tuple[int, int, Optional[float]]]:
    """Faces to characters by matching (issue 23): ``sim[i, j]`` is character i's similarity to candidate face j;
    the assignment maximises the total similarity (scipy's Hungarian solver), each character at most one face,
    each face at most one character. Returns (character, face, margin) per assigned character: margin = the
    optimal total minus the best total with that pair forbidden (how much the decision wins by; None when no
    alternative assignment of that character exists, e.g. one character and one face). No threshold decides."""
    from scipy.optimize import linear_sum_assignment
    sim = np.asarray(sim, float)
    if sim.size == 0:
        return []
    rows, cols = linear_sum_assignment(sim, maximize=True)
    best = float(sim[rows, cols].sum())
    out = []
    for i, j in zip(rows, cols):
        forbidden = sim.copy()
        forbidden[i, j] = -1e6   # the pair is not allowed: the best assignment in which character i loses face j
        r2, c2 = linear_sum_assignment(forbidden, maximize=True)
        ok = not any(a == i and b == j for a, b in zip(r2, c2)) and (len(r2) == min(sim.shape) and
                                                                       (sim.shape[1] > 1 or sim.shape[0] > 1))
        out.append((int(i), int(j), round(best - float(forbidden[r2, c2].sum()), 6) if ok else None))
    return out


def _unit(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, float)
    n = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(n > 0, n, 1.0)


def robust_identity(vectors: Sequence[np.ndarray], weights: Sequence[float], k: int = TOP_K) -> Optional[np.ndarray]:
    """One identity vector from several faces of one person (issue 37 item 1): the ``k`` faces of highest quality
    weight (detector confidence), then their weighted geometric median (Weiszfeld) on the unit vectors, unit
    length. A median, not a mean: one odd frame (a turned head, a blink, a stranger's face in one frame) moves it
    far less than it moves a mean, and one frame no longer decides a shot's identity. None without a face."""
    if len(vectors) == 0:
        return None
    v, w = _unit(np.stack([np.asarray(x, float).reshape(-1) for x in vectors])), np.asarray(weights, float)
    if len(w) != len(v):
        raise ValueError(f"robust_identity: {len(v)} vectors but {len(w)} weights")
    top = np.argsort(-w, kind="stable")[:max(1, int(k))]
    v, w = v[top], np.clip(w[top], 1e-6, None)
    m = np.average(v, axis=0, weights=w)
    for _ in range(_WEISZFELD_STEPS):
        d = np.maximum(np.linalg.norm(v - m, axis=1), 1e-9)
        nxt = np.average(v, axis=0, weights=w / d)
        if np.linalg.norm(nxt - m) < 1e-9:
            break
        m = nxt
    return _unit(m)


def end_sets(frames: Sequence[int], k: int = TOP_K) -> tuple[list[int], list[int]]:
    """A shot's beginning and end sets: the first and last ``min(k, n // 2)`` of the frames (in time order) that
    show the character's face, so the two sets never share a frame. Empty sets with fewer than 2 frames."""
    fr = sorted(int(f) for f in frames)
    m = min(int(k), len(fr) // 2)
    return (fr[:m], fr[-m:]) if m else ([], [])


def set_degraded(n_good: int, n_low: int) -> bool:
    """A set shows faces, none of them above the quality floors (then it is read from them, flagged): one good
    face is evidence enough to read the set by (a real, unperturbed shot dips below a floor now and then)."""
    return n_good == 0 and n_low > 0


def within_shot(begin: Sequence[tuple[np.ndarray, float, bool]], end: Sequence[tuple[np.ndarray, float, bool]],
                k: int = TOP_K) -> tuple[Optional[float], Optional[str]]:
    """Within-shot identity (issue 37 item 1): the cosine between the identity of the shot's beginning set and of
    its end set (each ``robust_identity`` of its faces; a face is (vector, quality weight, passes the quality
    floors)). A set reads its good-quality faces; a set with none reads its low-quality ones and the finding says
    so, because a face that turns into another person while it degrades (a morph
    through blur or a small face) would otherwise leave only the unchanged frames and look steady. Returns
    (value or None, finding or None)."""
    if not begin or not end:
        return None, None
    vecs, notes = [], []
    for name, s in (("beginning", begin), ("end", end)):
        good = [(v, w) for v, w, ok in s if ok]
        if set_degraded(len(good), len(s) - len(good)):
            notes.append(f"the shot's {name} shows only low-quality faces ({len(s)}): read from them, not dropped")
            good = [(v, w) for v, w, _ in s]
        vecs.append(robust_identity([v for v, _ in good], [w for _, w in good], k))
    return float(vecs[0] @ vecs[1]), ("; ".join(notes) or None)
