"""MBench's identity threshold for the offline face model (SFace), calibrated on our labelled footage, per face.

Why per face: MBench's identity compares single faces over time (a face with the first appearance, a face with a
track's latest embedding), not tracklet means, and single faces spread more than means of four. SFace's published
0.363 (cosine similarity) was measured on LFW's real photographs; animated faces of two different people (the
Megamind dialogue's woman and man) sit well above it, so it would keep a swapped cartoon character as "the same".

Method (shared with NarrativeTrack: ``bench_assets.core.face_calibration``): faces detected and embedded on the
pinned real and animated footage (data/footage/*.yaml sidecars, the Megamind hand labels and hand-checked cuts), one
face per group (``GROUP = 1``), every pair same / different by the hand labels, the midpoint rule (no false merge on
the calibration pairs), leave-one-source-out, and two held-out checks: calibrate on the real footage and test on the
animated, and the reverse. The drawn NarrativeTrack videos are not used: their people are the photographs (astronaut,
Grace Hopper) that MBench's identity tests use as an independent check.

``python -m bench_assets.mbench.identity_calibration`` recomputes ``identity_calibration.json`` beside this file; the
assets read the threshold from there (as max cosine distance = 1 - cosine) and the manifest records it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from bench_assets.core import face_calibration as FC

GROUP = 1
FILE = Path(__file__).with_name("identity_calibration.json")
MODEL_KEY = "sface"   # the face checkpoint this file calibrates (matched in the slot's checkpoint name, lower case)


def load(path: Path = FILE) -> Optional[dict]:
    return FC.load(path)


def held_out(doc: dict) -> dict:
    """Calibrate without a kind of footage, test on it (animated <-> real)."""
    kinds = {k: v["kind"] for k, v in doc["sources"].items()}
    out = {}
    for kind in sorted(set(kinds.values())):
        names = sorted(k for k, v in kinds.items() if v == kind)
        try:
            out[kind] = FC.held_out_check(doc, names)
        except ValueError as e:
            out[kind] = {"held_out": names, "reason": str(e)}
    return out


def threshold(path: Path = FILE) -> tuple[Optional[float], dict]:
    """(max cosine distance, what the manifest records) for SFace; None with the reason when the file is missing."""
    doc = load(path)
    if doc is None:
        return None, {"calibrated": False, "reason": f"no {Path(path).name}: run python -m "
                                                     f"bench_assets.mbench.identity_calibration"}
    keep = ("threshold", "max_different", "min_same_above", "n_same", "n_different", "same_recall", "false_merges",
            "model", "group_size", "leave_one_source_out", "held_out")
    rec = {"calibrated": True, "file": Path(path).name, **{k: doc.get(k) for k in keep},
           "sources": {k: {"kind": v["kind"], "sha256": v["sha256"], "faces": v["faces"]}
                       for k, v in doc["sources"].items()}}
    return round(1.0 - float(doc["threshold"]), 4), rec


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--step", type=float, default=0.2, help="seconds between sampled frames")
    a = ap.parse_args(argv)
    from bench_assets.core import footage
    from bench_resources.models import ModelRegistry
    reg = ModelRegistry(profile="offline")
    mega = footage.footage_path("Megamind.avi") if footage.available("Megamind.avi") else None
    srcs, same_as = FC.footage_sources(str(mega) if mega else None, sidecar=True)
    faces = FC.collect_faces(reg.slot("face"), srcs, step_s=a.step)
    doc = FC.calibration_doc(faces, srcs, same_as, GROUP, "MBench identity: SFace cosine threshold between single "
                             "faces, calibrated on labelled real and animated footage "
                             "(bench_assets/mbench/identity_calibration.py)", reg.status("face").checkpoint, digits=4)
    doc["held_out"] = held_out(doc)
    out = Path(a.out) if a.out else FILE
    FC.save(doc, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
