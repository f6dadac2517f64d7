"""ViStoryBench validity cases on real footage (``bench validate --benchmark vistorybench``).

Stories in the release format whose characters are real people and an animated character from package-shipped
footage: references are frames of the clip, the reference generator's shots are other frames of the same clip
(the same person, another moment), and each perturbed generator changes every story the same way.
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd

from bench_assets.core import footage
from bench_assets.core import validity

BENCH = "vistorybench"
REFERENCE = "reference"

# story id -> (character key, tag, English name, prompt, clip, reference frames, shot frames, size, donor)
STORIES = {
    "91": ("CarMan", "realistic_human", "the Man in the Car", "a young man with short brown hair in a dark suit and "
           "red bow tie", "carphone_pristine.mp4", [0, 60], [15, 45, 75, 105], (352, 288), ("bikes.mp4", [34, 40])),
    "92": ("SuitMan", "realistic_human", "the Cyclist in a Suit", "a man in a dark suit and tie riding a bicycle",
           "bikes.mp4", [30, 44], [32, 36, 40, 42], (640, 272), ("carphone_pristine.mp4", [20, 100])),
    "93": ("Rabbit", "non_human", "the Rabbit", "a large grey cartoon rabbit with long ears",
           "bigbuckbunny.mp4", [40, 100], [10, 60, 80, 125], (640, 360), ("carphone_pristine.mp4", [30, 90])),
}
HUMAN_UNITS = "/(CarMan|SuitMan)$"
CASES = [
    validity.Case("identity_swap", "shots 2 and 4 show another person", "p_identity_swap",
                  [validity.Expect("cids_cross", -1, 5.0), validity.Expect("cids_self", -1, 5.0)]),
    validity.Case("copy_paste", "every shot is the first reference image", "p_copy_paste",
                  [validity.Expect("copy_paste", +1, 5.0)]),
    validity.Case("blur", "Gaussian blur sigma 4", "p_blur", [validity.Expect("aesthetics", -1, 0.3)]),
    validity.Case("colour_shift", "hue +90 degrees, saturation x1.4", "p_colour_shift",
                  # identity from a face should not care about the palette; the appearance embedder used for
                  # non-human characters sees colour by design, so the invariance concerns the realistic humans only
                  [validity.Expect("csd_cross", -1, 5.0),
                   validity.Expect("cids_cross", 0, 10.0, units=HUMAN_UNITS)]),
]
# the footage every case reads (each case runs on every story; swaps take donors from other clips): all of it is
# registered as validation (core/footage.py), which evaluate_suite checks before a case runs
FOOTAGE = tuple(sorted({v[4] for v in STORIES.values()} | {v[8][0] for v in STORIES.values()}))
for _case in CASES:
    _case.sources = FOOTAGE


def _frames(clip: str, idx: list[int], size) -> list[np.ndarray]:
    path = footage.footage_path(clip)
    return [validity.read_segment(path, i, i + 1, size)[0] for i in idx]


def story_json(key: str, tag: str, name: str, prompt: str, n_shots: int) -> dict:
    shot = lambda i: {  # noqa: E731
        "index": i,
        "Plot Correspondence": {"en": f"Part {i}: {name} on screen.", "ch": f"第{i}部分"},
        "Setting Description": {"en": "Real footage.", "ch": "真实画面。"},
        "Shot Perspective Design": {"en": "Medium shot, eye level shot", "ch": "中景，平视"},
        "Characters Appearing": {"en": [name], "ch": [name]},
        "Static Shot Description": {"en": f"{name} is in the frame.", "ch": f"{name}在画面中。"},
    }
    return {"Story_type": {"en": "Validity", "ch": "效度"},
            "Characters": {key: {"tag": tag, "name_en": name, "name_ch": name, "prompt_en": prompt, "prompt_ch": prompt,
                                 "num_of_appearances": n_shots}},
            "Shots": [shot(i) for i in range(1, n_shots + 1)]}


def variants(shots: list[np.ndarray], refs: list[np.ndarray], donor: list[np.ndarray]) -> dict[str, list]:
    """Pure: every generator's shot images for one story."""
    h, w = shots[0].shape[:2]
    fit = lambda im: cv2.resize(im, (w, h), interpolation=cv2.INTER_AREA)  # noqa: E731
    swapped = list(shots)
    swapped[1], swapped[3] = fit(donor[0]), fit(donor[1 % len(donor)])
    stack = np.stack(shots)
    return {REFERENCE: shots, "p_identity_swap": swapped, "p_copy_paste": [fit(refs[0])] * len(shots),
            "p_blur": list(validity.blur(stack)), "p_colour_shift": list(validity.colour_shift(stack))}


def _png(path: Path, rgb: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))


def build_suite(work_dir: Path) -> validity.Suite:
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    for n in [REFERENCE] + [c.generator for c in CASES]:
        validity.write_generator_yaml(gens / n, n, BENCH, f"validity generator {n}")
        (gens / n / "generator.yaml").write_text((gens / n / "generator.yaml").read_text() + "language: en\n")
    for sid, (key, tag, name, prompt, clip, ref_idx, shot_idx, size, (dclip, didx)) in STORIES.items():
        root = data / BENCH / sid
        root.mkdir(parents=True, exist_ok=True)
        (root / "story.json").write_text(json.dumps(story_json(key, tag, name, prompt, len(shot_idx)),
                                                    ensure_ascii=False, indent=1), encoding="utf-8")
        refs = _frames(clip, ref_idx, size)
        for i, im in enumerate(refs):
            _png(root / "image" / key / f"{i:02d}.png", im)
        shots = _frames(clip, shot_idx, size)
        donor = _frames(dclip, didx, None)
        for gname, images in variants(shots, refs, donor).items():
            for i, im in enumerate(images, 1):
                _png(gens / gname / sid / f"shot_{i:02d}.png", im)
    return validity.Suite(BENCH, data, gens, REFERENCE, CASES, unit_values=unit_values)


def unit_values(store) -> pd.DataFrame:
    return validity.table_unit_values(store, ("vistorybench_scores", "vistorybench_alignment"))
