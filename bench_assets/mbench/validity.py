"""MBench validity cases on real photographs (``bench validate --benchmark mbench``).

A virtual camera trucks and pans over a real photograph with known poses and returns (``photo_revisit``): the
reference generator returns to the same view, ``p_changed`` returns to a changed world (the photograph mirrored
while the camera was away), ``p_ignoring`` ignores the actions and never returns. Each photograph is one object
case (geometry and texture on the target box) and one environment case (epipolar, reprojection, lighting).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
from PIL import Image

from bench_assets.core import footage as F
from bench_assets.core import validity as V
from bench_assets.mbench import photo_revisit as PR

BENCH = "mbench"
REFERENCE = "reference"
GENERATORS = {REFERENCE: "same", "p_changed": "changed", "p_ignoring": "ignoring"}
MEMORY = ("geometry", "epipolar", "reprojection")
CASES = [
    V.Case("changed_world", "the photograph is mirrored while the camera is away", "p_changed",
           [V.Expect(m, -1, 0.10) for m in MEMORY]),
    V.Case("camera_ignores_actions", "the camera keeps moving away and never returns", "p_ignoring",
           [V.Expect(m, -1, 0.10) for m in MEMORY] + [V.Expect("action_instruction", -1, 0.2)]),
]


def photos() -> dict[str, np.ndarray]:
    """Real photographs: two from opencv-doc (footage cache), one shipped in scikit-learn's wheel."""
    import sklearn
    out = {n.split(".")[0]: np.asarray(Image.open(F.footage_path(n)).convert("RGB"))
           for n in ("messi5.jpg", "basketball1.png")}
    out["china"] = np.asarray(Image.open(Path(os.path.dirname(sklearn.__file__)) / "datasets" / "images"
                                         / "china.jpg").convert("RGB"))
    return out


def case_json(case_id: str, subset: str, box_xyxy) -> dict:
    x1, y1, x2, y2 = (float(v) for v in box_xyxy)
    target = {"name": "the middle of the photograph", "attributes": "a region of a real photograph"}
    if subset == "object":
        target["bbox"] = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]   # the canonical format: cx, cy, w, h
    return {"case_id": case_id, "mode": "A", "subset": subset, "init_frame": f"{case_id}.png",
            "caption": "A real photograph; the camera trucks and pans right, waits, and comes back.",
            "causal_event": "", "segments": [], "actions": PR.ACTIONS, "target": target}


def build_suite(work_dir: Path) -> V.Suite:
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    (data / BENCH / "cases").mkdir(parents=True, exist_ok=True)
    (data / BENCH / "frames").mkdir(parents=True, exist_ok=True)
    for g in GENERATORS:
        V.write_generator_yaml(gens / g, g, BENCH, f"validity generator {g}")
    for name, photo in photos().items():
        videos = {g: np.stack(PR.build(photo, variant)[0]) for g, variant in GENERATORS.items()}
        box = PR.target_box(photo)
        for subset in ("object", "environment"):
            cid = f"v_{name}_{subset[:3]}"
            (data / BENCH / "cases" / f"{cid}.json").write_text(json.dumps(case_json(cid, subset, box), indent=2))
            cv2.imwrite(str(data / BENCH / "frames" / f"{cid}.png"), cv2.cvtColor(videos[REFERENCE][0],
                                                                                  cv2.COLOR_RGB2BGR))
            for g, frames in videos.items():
                V.write_video(frames, gens / g / f"{cid}.mp4", 10.0)
    return V.Suite(BENCH, data, gens, REFERENCE, CASES, unit_values=unit_values)


def unit_values(store) -> pd.DataFrame:
    return V.table_unit_values(store, ("mbench_scores",), ("case_id",))
