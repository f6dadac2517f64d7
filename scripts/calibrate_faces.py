#!/usr/bin/env python3
"""Fit the face-identity thresholds on calibration sources only; measure them on validation sources only.

    python scripts/calibrate_faces.py            # writes both files below
    python scripts/calibrate_faces.py --dry-run  # prints, writes nothing

Writes bench_assets/narrativetrack/face_calibration.json (FACE_MERGE_COSINE between tracklet mean faces, groups of
4 faces) and bench_assets/mbench/identity_calibration.json (MBench's SFace threshold between single faces). Both use
the midpoint rule (core/face_calibration.py ``choose_threshold``) on pairs of labelled faces from the calibration
sources (core/footage.py: the package photographs of real people and the embedded drawn videos built from them),
collected with the calibration split in force; the validation sources (carphone, bikes, Big Buck Bunny, the
opencv-doc stills, the Megamind dialogue with its hand-checked labels) are collected afterwards, with the validation
split in force, and only measured: their false-merge and false-split rates are stored under ``held_out``.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assets.core import face_calibration as FC  # noqa: E402
from bench_assets.core import footage as F  # noqa: E402

TARGETS = {
    "narrativetrack": (4, "bench_assets/narrativetrack/face_calibration.json", 5,
                       "FACE_MERGE_COSINE: SFace cosine between tracklet mean faces (groups of 4), fitted on "
                       "calibration sources only (scripts/calibrate_faces.py)"),
    "mbench": (1, "bench_assets/mbench/identity_calibration.json", 4,
               "MBench identity: SFace cosine threshold between single faces, fitted on calibration sources only "
               "(scripts/calibrate_faces.py)"),
}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--step", type=float, default=0.2, help="seconds between sampled video frames")
    a = ap.parse_args(argv)
    from bench_assets.narrativetrack.pipeline import shot_ids
    from bench_resources.models import ModelRegistry
    from bench_resources.paths import PROJECT_ROOT
    reg = ModelRegistry(profile="offline")
    face = reg.slot("face")
    with F.use_split(F.CALIBRATION):
        cal_srcs, cal_same = FC.calibration_sources(PROJECT_ROOT / "data" / "narrativetrack")
        cal_faces = FC.collect_faces(face, cal_srcs, shot_ids=shot_ids, step_s=a.step)
    with F.use_split(F.VALIDATION):
        val_srcs, val_same = FC.validation_sources()
        val_faces = FC.collect_faces(face, val_srcs, shot_ids=shot_ids, step_s=a.step)
    root = Path(__file__).resolve().parents[1]
    for bench, (size, rel, digits, what) in TARGETS.items():
        doc = FC.heldout_doc(cal_faces, cal_srcs, cal_same, val_faces, val_srcs, val_same, size, what,
                             reg.status("face").checkpoint, digits)
        summary = {k: doc[k] for k in ("threshold", "max_different", "min_same_above", "n_same", "n_different",
                                       "same_recall", "false_merges", "fitted_on")}
        print(bench, json.dumps(summary), "\n  held out:", json.dumps(doc["held_out"]["rates"]))
        if not a.dry_run:
            (root / rel).write_text(json.dumps(doc, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
