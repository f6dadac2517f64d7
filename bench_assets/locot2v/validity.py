"""LoCoT2V-Bench validity cases on real footage (``bench validate --benchmark locot2v``).

Samples are real clips with hand-checked ground truth (``data/footage/*.yaml``); their events are written from
what the frames show, one event per real shot (bikes) or per third of a continuous take (carphone, rabbit), so the
event metrics run without a judge. Each perturbation is applied to every sample.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from bench_assets.core import footage
from bench_assets.core import validity

BENCH = "locot2v"
REFERENCE = "reference"


def _event(i, subject, setting, action, camera="static"):
    return {"event": i, "subject": subject, "setting": setting, "action": action, "camera motion": camera}


SUIT = "a man in a dark suit and tie riding a bicycle"
CYCLIST = "a cyclist in a black helmet and dark jersey"
CAR_MAN = "a young man with short brown hair in a dark suit and red bow tie"
RABBIT = "a large grey cartoon rabbit with long ears"
# (sample id, clip, native [start, end), output size, events, where shot boundaries are (native frames))
SAMPLES = [
    ("vbikes", "bikes.mp4", (30, 242), (640, 272), [
        _event(1, SUIT, "a street with parked cars", "rides a bicycle from left to right", "pan right"),
        _event(2, CYCLIST, "beside a grey van on a street", "rides a bicycle slowly"),
        _event(3, "cars", "a street seen through a green railing", "drive past"),
        _event(4, "a pedestrian's legs", "a pavement beside a parked bicycle", "walk from left to right"),
    ]),
    ("vcarphone", "carphone_pristine.mp4", (0, 120), (352, 288), [
        _event(1, CAR_MAN, "the back seat of a moving car", "talks to the camera"),
        _event(2, CAR_MAN, "the back seat of a moving car", "opens his mouth wide in surprise"),
        _event(3, CAR_MAN, "the back seat of a moving car", "tilts his head and pulls a face"),
    ]),
    ("vrabbit", "bigbuckbunny.mp4", (0, 132), (640, 360), [
        _event(1, RABBIT, "a grassy hill beside a burrow", "climbs out of the burrow"),
        _event(2, RABBIT, "a grassy hill beside a burrow", "stretches his arms and yawns"),
    ]),
]
# the identity swap: which native frames of which clip replace which native frames of the sample
SWAP = {"vbikes": (("carphone_pristine.mp4", 0, 61), (76, 137)),
        "vcarphone": (("bikes.mp4", 30, 46), (40, 80)),
        "vrabbit": (("carphone_pristine.mp4", 0, 66), (66, 132))}

CASES = [
    validity.Case("identity_swap", "one event's subject replaced by another person", "p_identity_swap",
                  [validity.Expect("inter_event_subject_consistency", -1, 5.0)]),
    validity.Case("frozen", "every frame is the first", "p_frozen",
                  [validity.Expect("dynamic_degree", -1, 20.0), validity.Expect("motion_smoothness", +1, 0.5)]),
    # not temporal_flickering: under the spec's static-pair rule shuffling leaves (almost) no static pair, so the
    # metric is undefined there rather than lower; the flicker case is the one that concerns it
    validity.Case("shuffle", "frames shuffled within the video", "p_shuffle",
                  [validity.Expect("motion_smoothness", -1, 2.0), validity.Expect("warping_error", -1, 2.0)]),
    validity.Case("flicker", "alternate frames +-35 % brightness", "p_flicker",
                  [validity.Expect("temporal_flickering", -1, 2.0)]),
    validity.Case("blur", "Gaussian blur sigma 4", "p_blur",
                  [validity.Expect("technical_quality", -1, 5.0), validity.Expect("aesthetic_quality", -1, 5.0)]),
]
# the footage every case reads (each case runs on every sample; swaps take donors from other clips): all of it is
# registered as validation (core/footage.py), which evaluate_suite checks before a case runs
FOOTAGE = tuple(sorted({s[1] for s in SAMPLES} | {d[0][0] for d in SWAP.values()}))
for _case in CASES:
    _case.sources = FOOTAGE


def sample_json(sid: str, events: list[dict]) -> dict:
    prompt = " Then ".join(f"{e['subject'].capitalize()} {e['action']} in {e['setting']}." for e in events)
    return {"sample_id": sid, "theme": "real footage", "category": "validity", "prompt": prompt,
            "prompt_base": prompt, "herd_info": None, "events": events, "human_actions": None,
            "herd_questions": None}


def variants(sid: str, frames: np.ndarray, start: int, size) -> dict[str, np.ndarray]:
    """Pure given the footage: the reference video and every perturbed generator's video for one sample."""
    (clip, a, b), (s0, s1) = SWAP[sid]
    donor = validity.read_segment(footage.footage_path(clip), a, b)
    swapped = frames.copy()
    i0, i1 = s0 - start, s1 - start
    swapped[i0:i1] = validity.fit_to(donor, size, i1 - i0)
    out = {REFERENCE: frames, "p_identity_swap": swapped}
    for name in ("frozen", "shuffle", "flicker", "blur"):
        out[f"p_{name}"] = validity.PERTURBATIONS[name](frames)
    return out


def build_suite(work_dir: Path) -> validity.Suite:
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    (data / BENCH / "samples").mkdir(parents=True, exist_ok=True)
    for n in [REFERENCE] + [c.generator for c in CASES]:
        validity.write_generator_yaml(gens / n, n, BENCH, f"validity generator {n}")
    for sid, clip, (a, b), size, events in SAMPLES:
        fps = float(footage.ground_truth(clip)["fps"])
        (data / BENCH / "samples" / f"{sid}.json").write_text(json.dumps(sample_json(sid, events), indent=2))
        frames = validity.read_segment(footage.footage_path(clip), a, b, size)
        for gname, video in variants(sid, frames, a, size).items():
            validity.write_video(video, gens / gname / f"{sid}.mp4", fps)
    return validity.Suite(BENCH, data, gens, REFERENCE, CASES, unit_values=unit_values)


def unit_values(store) -> pd.DataFrame:
    return validity.table_unit_values(store, ("locot2v_visual", "locot2v_judged"))
