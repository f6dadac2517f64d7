#!/usr/bin/env python3
"""Fit the face-identity thresholds on calibration sources only; measure them on validation sources only.

    python scripts/calibrate_faces.py            # writes both files below
    python scripts/calibrate_faces.py --dry-run  # prints, writes nothing
    python scripts/calibrate_faces.py --drawn-only  # adds / renews only the drawn report in both files
    python scripts/calibrate_faces.py --out-dir D   # writes both files into D (tests/test_calibration_repro.py
                                                    # diffs them against the shipped ones)

Writes bench_assets/narrativetrack/face_calibration.json (FACE_MERGE_COSINE between tracklet mean faces, groups of
4 faces) and bench_assets/mbench/identity_calibration.json (MBench's SFace threshold between single faces). Both use
the midpoint rule (core/face_calibration.py ``choose_threshold``) on pairs of labelled faces from the calibration
sources (core/footage.py: the package photographs of real people and the embedded drawn videos built from them),
collected with the calibration split in force; the validation sources (carphone, bikes, Big Buck Bunny, the
opencv-doc stills, the Megamind dialogue with its hand-checked labels) are collected afterwards, with the validation
split in force, and only measured: their false-merge and false-split rates are stored under ``held_out``.

Drawn faces (issue 23 item 2): the drawn calibration stills (Ren'Py's sprites, core/footage.py faces="animated") are
collected with the calibration split in force but never fitted on (the thresholds are SFace's on real faces:
core/face_calibration.py); ``drawn_calibration`` in each file holds their groups, the fitted threshold's in-sample
false-merge / false-split rates on them and the best Youden J any threshold reaches. ``--drawn-only`` loads each
stored file and renews only that entry, leaving every fitted value and every other field as it is. The committed
files are a full rerun on the committed code (session 5, after the cut detector of session 4 changed the embedded
videos' shot numbers: same thresholds and held-out rates, 1073 / 4387 NarrativeTrack pairs instead of 1090 / 4475).

Issue 37: each file also states the distinct people and pictures behind its pairs (``distinct``: 16 people in 11
pictures; 16,092 of MBench's 16,095 same-person pairs compare one photograph with its copies pasted into the embedded
videos, 3 are different pictures of one person; the rule on the package pictures alone gives .5402) and per content
domain the threshold or why there is none (``domains``); and ``bench_assets/core/face_domain.json`` holds the
real-vs-drawn classifier fitted on MBench's single calibration faces (core/face_calibration.py).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assets.core import face_calibration as FC  # noqa: E402
from bench_assets.core import footage as F  # noqa: E402

DOMAIN_REL = "bench_assets/core/face_domain.json"
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
    ap.add_argument("--drawn-only", action="store_true", help="renew only drawn_calibration in the stored files")
    ap.add_argument("--step", type=float, default=0.2, help="seconds between sampled video frames")
    ap.add_argument("--out-dir", type=Path, default=None,
                    help="write the files into this folder (named as shipped) instead of beside their modules")
    a = ap.parse_args(argv)
    from bench_assets.narrativetrack.pipeline import shot_ids
    from bench_resources.models import ModelRegistry
    from bench_resources.paths import PROJECT_ROOT
    reg = ModelRegistry(profile="offline")
    face = reg.slot("face")
    root = Path(__file__).resolve().parents[1]

    def target(rel: str) -> Path:
        return root / rel if a.out_dir is None else Path(a.out_dir) / Path(rel).name
    with F.use_split(F.CALIBRATION):
        drawn_srcs, drawn_same = FC.drawn_sources()
        drawn_faces = FC.collect_faces(face, drawn_srcs, step_s=a.step)
    drawn = (drawn_faces, drawn_srcs, drawn_same)
    if a.drawn_only:
        for bench, (size, rel, digits, what) in TARGETS.items():
            doc = json.loads((root / rel).read_text())
            doc["drawn_calibration"] = FC.drawn_report(doc, *drawn, digits=digits)
            _print_drawn(bench, doc)
            if not a.dry_run:
                target(rel).write_text(json.dumps(doc, sort_keys=True) + "\n")
        return 0
    with F.use_split(F.CALIBRATION):
        cal_srcs, cal_same = FC.calibration_sources(PROJECT_ROOT / "data" / "narrativetrack")
        cal_faces = FC.collect_faces(face, cal_srcs, shot_ids=shot_ids, step_s=a.step)
    with F.use_split(F.VALIDATION):
        val_srcs, val_same = FC.validation_sources()
        val_faces = FC.collect_faces(face, val_srcs, shot_ids=shot_ids, step_s=a.step)
    docs = {}
    for bench, (size, rel, digits, what) in TARGETS.items():
        doc = FC.heldout_doc(cal_faces, cal_srcs, cal_same, val_faces, val_srcs, val_same, size, what,
                             reg.status("face").checkpoint, digits, drawn=drawn)
        # per content domain: a threshold where that domain's calibration pairs allow one, else None + reason
        doc["domains"] = FC.domain_thresholds(doc)
        # the distinct people and pictures the pairs rest on, and the rule without a picture's pasted copies
        doc["distinct"] = FC.distinct_summary(doc)
        docs[bench] = doc
        summary = {k: doc[k] for k in ("threshold", "max_different", "min_same_above", "n_same", "n_different",
                                       "same_recall", "false_merges", "fitted_on")}
        print(bench, json.dumps(summary), "\n  held out:", json.dumps(doc["held_out"]["rates"]))
        _print_drawn(bench, doc)
        if not a.dry_run:
            target(rel).write_text(json.dumps(doc, sort_keys=True) + "\n")
    # the real-vs-drawn classifier on the single faces (MBench's file), which decides a video's domain
    clf = FC.fit_domain_classifier(docs["mbench"])
    print("face domain classifier:", json.dumps({k: v for k, v in clf.items() if k != "coef"}))
    if not a.dry_run:
        target(DOMAIN_REL).write_text(json.dumps(clf, sort_keys=True, indent=1) + "\n")
    return 0


def _print_drawn(bench: str, doc: dict) -> None:
    d = doc["drawn_calibration"]
    print(f"{bench} drawn calibration (in sample, not fitted): faces per source "
          f"{json.dumps({k: v['faces'] for k, v in d['sources'].items()})}\n  at {doc['threshold']}: "
          f"{json.dumps(d.get('at_threshold'))}\n  best Youden J: {json.dumps(d.get('best_youden'))}")


if __name__ == "__main__":
    sys.exit(main())
