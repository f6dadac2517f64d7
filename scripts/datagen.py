"""The command line every embedded-data script shares: write the data, or ``--check`` that it regenerates byte for
byte. A script owns one benchmark folder under ``data/`` and a set of generator folders."""
from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable

DATA = Path(__file__).resolve().parents[1] / "data"


def digest(root: Path, benchmark: str, generators: Iterable[str]) -> dict[str, str]:
    """sha256 of every file the script owns under ``root``."""
    gens = set(generators)
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if p.is_file() and (rel[0] == benchmark or (len(rel) > 1 and rel[0] == "generators" and rel[1] in gens)):
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


# Media written from float pixel maths (OpenCV's colour conversions and resizes dispatch to different SIMD code on
# different CPUs) may differ in a few low bits between machines, and an encoder turns that into other bytes. Such a
# file still counts as regenerated when its decoded pixels agree within these bounds; text files must be identical.
MEDIA_SUFFIXES = {".mp4", ".avi", ".png", ".jpg", ".jpeg"}
PIXEL_MEAN_TOLERANCE = 1.0     # mean absolute difference per channel value (0-255)
PIXEL_P99_TOLERANCE = 12.0     # 99th percentile of the absolute difference


def _pixels(path: Path):
    import cv2
    import numpy as np

    if path.suffix.lower() in {".png", ".jpg", ".jpeg"}:
        im = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        return None if im is None else im[None].astype(np.int16)
    cap = cv2.VideoCapture(str(path))
    frames = []
    while True:
        ok, f = cap.read()
        if not ok:
            break
        frames.append(f.astype(np.int16))
    cap.release()
    return np.stack(frames) if frames else None


def same_media(a: Path, b: Path) -> bool:
    """Two media files whose decoded pixels agree within the tolerances above (same shape and frame count)."""
    import numpy as np

    if a.suffix.lower() not in MEDIA_SUFFIXES or not a.is_file() or not b.is_file():
        return False
    pa, pb = _pixels(a), _pixels(b)
    if pa is None or pb is None or pa.shape != pb.shape:
        return False
    d = np.abs(pa - pb)
    return float(d.mean()) <= PIXEL_MEAN_TOLERANCE and float(np.percentile(d, 99)) <= PIXEL_P99_TOLERANCE


def main(doc: str, benchmark: str, generators: Iterable[str], write_all: Callable[[Path], None]) -> int:
    generators = list(generators)
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(DATA))
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare every file")
    args = ap.parse_args()
    out = Path(args.out)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write_all(Path(tmp))
            new, old = digest(Path(tmp), benchmark, generators), digest(out, benchmark, generators)
            diff = sorted(k for k in set(new) | set(old) if new.get(k) != old.get(k))
            near = [k for k in diff if k in new and k in old and same_media(Path(tmp) / k, out / k)]
            if near:
                print(f"{len(near)} media files differ in bytes but decode to the same pixels within tolerance "
                      f"(mean <= {PIXEL_MEAN_TOLERANCE}, p99 <= {PIXEL_P99_TOLERANCE})")
            diff = [k for k in diff if k not in near]
            for k in diff[:20]:
                print(f"differs: {k}")
            print(f"{len(new)} files regenerated, {len(diff)} differ")
            return 1 if diff else 0
    for g in generators:
        shutil.rmtree(out / "generators" / g, ignore_errors=True)
    shutil.rmtree(out / benchmark, ignore_errors=True)
    write_all(out)
    print(f"wrote the embedded {benchmark} data under {out}")
    return 0
