"""EntityBench identity math for the face-identity additions (issue 23): faces assigned to characters by matching,
and within-shot drift. Arrays in, values out; no Dagster, no file access."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np


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


def drift(cosines: Sequence[float]) -> Optional[float]:
    """Within-shot identity drift: 1 - the lowest cosine between the shot's canonical face and the same
    character's faces in the shot's other sampled frames; None without another frame's face."""
    return float(1.0 - min(cosines)) if len(cosines) else None
