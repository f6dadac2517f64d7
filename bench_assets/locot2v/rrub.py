"""RR-UB (appendix B.5): the relative reference upper bound of the aesthetic score, computed from an image folder.

    bench locot2v-rrub IMAGE_DIR [--out data/locot2v/rrub.json] [--top 0.1] [--source "text"]

scores every image of the folder with the ``aesthetic_v25`` slot (the paper profile: aesthetic predictor v2.5),
takes the mean of the top 10 % and writes ``{"rrub": value, "source": ..., "images": n, "top": 0.1}``. The
``locot2v_visual`` asset reads that file (default ``<data_root>/locot2v/rrub.json``) and records value and source in
the manifest; without it, AQ divides by the uncalibrated default 10.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional, Sequence

from bench_assets.locot2v.constants import RRUB_DEFAULT, RRUB_SOURCE_DEFAULT, RRUB_TOP

if TYPE_CHECKING:  # numpy and the metrics (scipy, cv2) load when images are scored: `--help` answers at once
    import numpy as np

IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")
RRUB_FILE = "rrub.json"


def image_paths(folder: str | Path) -> list[Path]:
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"{folder}: not a folder of images")
    return sorted(p for p in folder.rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES and p.is_file())


def read_rgb(path: Path) -> np.ndarray:
    import cv2
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    if bgr is None:
        raise ValueError(f"{path}: cannot be read as an image")
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def compute_rrub(paths: Sequence[Path], score: Callable[[list[np.ndarray]], Sequence[float]], top: float = RRUB_TOP,
                 batch: int = 16) -> dict:
    """Score every image (in batches, unreadable images counted and skipped) and return the RR-UB record."""
    import numpy as np

    from bench_assets.locot2v.metrics import rrub
    scores, bad = [], []
    for i in range(0, len(paths), batch):
        chunk, ok = [], []
        for p in paths[i:i + batch]:
            try:
                chunk.append(read_rgb(p))
                ok.append(p)
            except ValueError:
                bad.append(str(p))
        if chunk:
            scores += [float(s) for s in score(chunk)]
    if not scores:
        raise ValueError("no readable image to compute RR-UB from")
    return {"rrub": rrub(scores, top), "images": len(scores), "unreadable": len(bad), "top": top,
            "score_mean": float(np.mean(scores)), "score_max": float(np.max(scores))}


def load_rrub(path: str | Path) -> tuple[float, str]:
    """(value, source) from an RR-UB file, or the uncalibrated default when there is none."""
    p = Path(path)
    if not p.is_file():
        return RRUB_DEFAULT, RRUB_SOURCE_DEFAULT
    import numpy as np
    raw = json.loads(p.read_text(encoding="utf-8"))
    value = float(raw["rrub"])
    if not np.isfinite(value) or value <= 0:
        raise ValueError(f"{p}: rrub must be a positive number, got {raw['rrub']!r}")
    return value, f"{p.name}: {raw.get('source', 'unknown')} ({raw.get('images', '?')} images, top {raw.get('top')})"


def write_json(path: Path, record: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1, sort_keys=True)
    os.replace(tmp, path)


def main(argv: Optional[Sequence[str]] = None, score: Optional[Callable] = None) -> int:
    ap = argparse.ArgumentParser(prog="bench locot2v-rrub", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("images", help="folder of reference images (searched recursively)")
    ap.add_argument("--out", default=None, help="output JSON (default <data_root>/locot2v/rrub.json)")
    ap.add_argument("--top", type=float, default=RRUB_TOP, help="fraction of top scores averaged (default 0.1)")
    ap.add_argument("--source", default=None, help="what the folder is, recorded in the manifest")
    args = ap.parse_args(argv)
    if score is None:
        from bench_resources.config import build_resources
        res = build_resources()
        model, why = res["models"].slot_or_reason("aesthetic_v25", res["device"])
        if model is None:
            print(f"error: cannot score images: {why}", file=sys.stderr)
            return 2
        score = model.score
    if args.out is None:
        from bench_resources.paths import BenchPaths
        out = BenchPaths().benchmark_dir("locot2v") / RRUB_FILE
    else:
        out = Path(args.out)
    try:
        record = compute_rrub(image_paths(args.images), score, args.top)
    except (FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)  # one `error:` line, as every user error of `bench`
        return 2
    record["source"] = args.source or str(Path(args.images).resolve())
    write_json(out, record)
    print(f"RR-UB {record['rrub']:.4f} from {record['images']} images (top {args.top:.0%}) -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
