#!/usr/bin/env python
"""ViStoryBench character similarity on this machine: seconds per (crop, reference) image pair when the crops of a
story are embedded in batches, beside a per-crop unbatched run of the same models.

Usage: python scripts/benchmark_vistorybench.py [--generators vistory_faithful,vistory_drift] [--repeat 3]
Uses the configured profile (BENCH_PROFILE; offline: EfficientNet-Lite0 features + YuNet/SFace faces).
Prints a table; asserts nothing (speed targets live here, not in tests).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--generators", default="vistory_faithful,vistory_drift,vistory_copy_paste")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from bench_assets.vistorybench import characters as C
    from bench_assets.vistorybench import dataset as D
    from bench_assets.vistorybench import metrics as M
    from bench_resources.config import build_resources

    res = build_resources()
    models, device = res["models"], res["device"]
    detector = models.slot("character_detector", device)
    enc = C.Encoders(models.slot("face", device), None, models.slot("character_embedder", device), None)
    root = ROOT / "data" / "vistorybench"
    work = []  # (story, crops, refs per space)
    for sid in D.discover_stories(root):
        story = D.load_story(root / sid)
        refs = {sp: [] for sp in C.SPACES}
        for ch in story.characters.values():
            for ref in ch.references:
                refs[C.space_of(ch.tag)].append(D.read_image(ref))
        for g in args.generators.split(","):
            idx = D.index_outputs(story, ROOT / "data" / "generators" / g / sid, g)
            crops = []
            for path in idx.files.values():
                image = D.read_shot_image(path)
                d = detector.detect([image], "character")[0]
                crops += [c for c in (C.crop_box(image, b) for b in d.xyxy) if c is not None]
            work.append((sid, g, crops, refs))

    def run(batched: bool, spaces=C.SPACES) -> tuple[float, int]:
        pairs = 0
        t0 = time.perf_counter()
        for _, _, crops, refs in work:
            for sp in spaces:
                if not refs[sp] or not crops:
                    continue
                r = [v for v in C.embed(enc, sp, refs[sp], batched) if v is not None]
                g = [v for v in C.embed(enc, sp, crops, batched) if v is not None]
                if r and g:
                    M.best_reference_scores(np.stack(g), np.stack(r))
                    pairs += len(r) * len(g)
        return time.perf_counter() - t0, pairs

    run(True)  # warm-up: model load, first-call allocations
    rows = []
    for spaces, label in ((C.SPACES, "both"), (("features",), "features"), (("face",), "face")):
        for mode in ("batched", "per-crop"):
            times = [run(mode == "batched", spaces) for _ in range(args.repeat)]
            best = min(t for t, _ in times)
            pairs = times[0][1]
            rows.append((f"{label}/{mode}", best, pairs, best / max(pairs, 1) * 1e3))
    n_crops = sum(len(c) for _, _, c, _ in work)
    print(f"profile {models.profile}; {len(work)} (story, generator) sets, {n_crops} crops; "
          f"features: {models.status('character_embedder').checkpoint}; faces: {models.status('face').checkpoint}")
    print(f"{'space/mode':<18} {'seconds':>8} {'pairs':>7} {'ms/pair':>8}")
    for mode, best, pairs, ms in rows:
        print(f"{mode:<18} {best:8.3f} {pairs:7d} {ms:8.3f}")
    for i, label in ((0, "both"), (2, "features"), (4, "face")):
        print(f"{label}: per-crop / batched time {rows[i + 1][1] / rows[i][1]:.2f}x (best of {args.repeat}); "
              f"the face path is one detector + one identity forward per crop either way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
