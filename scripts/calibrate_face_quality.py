#!/usr/bin/env python3
"""Where the face-quality blur floor (bench_resources/models/face.py QUALITY_MIN_BLUR) would fall if derived on
calibration faces only (issue 23: held out means held out). Reads only footage registered as calibration, inside
``footage.use_split(CALIBRATION)`` (a validation source raises SplitViolation).

For every face YuNet finds in the calibration stills, the face is blurred progressively (Gaussian sigma on the
source image); at each step the blur measure of the aligned crop (variance of the Laplacian, as face_quality reads
it) and the SFace cosine to the sharp face are recorded, split by whether the copy is still above SFace's published
same-person cosine (0.363, OpenCV's SFace model card): a floor belongs between the blur of copies no longer
recognisable as themselves and that of copies still recognised. Prints the table and the blur
distributions of copies lost and kept, and the floor that separates them best (``fit_floor``: Youden's J); it
changes nothing (the constant is edited by hand, in its own commit, citing this output).

    .venv/bin/python scripts/calibrate_face_quality.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SFACE_SAME_PERSON_COSINE = 0.363
SIGMAS = (0.0, 1.0, 2.0, 3.0, 4.0, 6.0, 8.0)


def fit(log=print) -> dict:
    """The readings and the fitted floor, printed through ``log``; returns {"QUALITY_MIN_BLUR": fitted floor rounded as
    shipped (one decimal), "j", "faces", "copies", "lost"} (tests/test_calibration_repro.py compares it with face.py)."""
    import cv2
    import numpy as np

    from bench_assets.core import footage
    from bench_resources.models import ModelRegistry
    from bench_resources.models import face as F

    face = ModelRegistry(profile="offline").slot("face")
    names = [n for n, s in footage.SOURCES.items() if s.split == footage.CALIBRATION and s.kind == "image"]
    rows = []
    with footage.use_split(footage.CALIBRATION):
        for name in names:
            try:
                img = cv2.imread(str(footage.footage_path(name)))[..., ::-1].copy()
            except footage.FootageMissing as e:
                log(f"skip {name}: {e}")
                continue
            sharp = [f for f in face.faces(img) if f.quality.size_px >= F.QUALITY_MIN_SIZE_PX]
            for k, ref in enumerate(sharp):
                for s in SIGMAS[1:]:
                    blurred = cv2.GaussianBlur(img, (0, 0), s)
                    got = face.faces(blurred)
                    # the same face: the detection overlapping the sharp one most
                    best = max(got, key=lambda f: _iou(f.box, ref.box), default=None)
                    if best is None or _iou(best.box, ref.box) < 0.5:
                        continue
                    rows.append((name, k, s, best.quality.blur, float(best.vector @ ref.vector)))
    log(f"{'source':22s} face sigma  blur   cos_to_sharp")
    for r in rows:
        log(f"{r[0]:22s} {r[1]:4d} {r[2]:5.1f} {r[3]:6.1f}  {r[4]:.3f}")
    lost = [b for _, _, _, b, c in rows if c < SFACE_SAME_PERSON_COSINE]
    kept = [b for _, _, _, b, c in rows if c >= SFACE_SAME_PERSON_COSINE]
    log(f"\nfaces: {len({(r[0], r[1]) for r in rows})}; blurred copies: {len(rows)}; "
          f"below SFace's same-person cosine: {len(lost)}")
    out = {"QUALITY_MIN_BLUR": None, "j": None, "faces": len({(r[0], r[1]) for r in rows}), "copies": len(rows),
           "lost": len(lost)}
    if lost and kept:
        # percentiles, not extremes: one face whose detection wanders between blur steps must not set the floor
        log(f"blur of copies no longer recognised as themselves: median {np.median(lost):.1f}, "
            f"90th percentile {np.percentile(lost, 90):.1f}, max {max(lost):.1f}")
        log(f"blur of copies still recognised: 10th percentile {np.percentile(kept, 10):.1f}, "
            f"min {min(kept):.1f}")
        floor, j = fit_floor(lost, kept)
        out.update(QUALITY_MIN_BLUR=round(floor, 1), j=round(j, 3))
        log(f"fitted floor (Youden J {j:.3f}: share of lost copies below it minus share of kept copies below "
            f"it, half-way to the next lower reading): {floor:.1f}")
    log(f"shipped floor: {F.QUALITY_MIN_BLUR}")
    return out


def main() -> int:
    fit()
    return 0


def fit_floor(lost, kept) -> tuple[float, float]:
    """Pure: the blur floor (a crop below it is low quality) that best separates copies no longer recognised (should
    fall below) from copies still recognised (should not): the observed reading maximising Youden's J, moved half-way
    to the next lower reading (a floor is not set at the very edge of its data). Returns (floor, J)."""
    import numpy as np
    lost, kept = np.sort(np.asarray(lost, float)), np.sort(np.asarray(kept, float))
    cands = np.unique(np.r_[lost, kept])
    j = np.searchsorted(lost, cands, side="left") / len(lost) - np.searchsorted(kept, cands, side="left") / len(kept)
    k = int(np.argmax(j))
    floor = float(cands[k] + cands[k - 1]) / 2 if k > 0 else float(cands[k])
    return floor, float(j[k])


def _iou(a, b) -> float:
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    u = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / u if u > 0 else 0.0


if __name__ == "__main__":
    sys.exit(main())
