#!/usr/bin/env python3
"""Fit NarrativeTrack's cut thresholds (constants.CUT_*) on calibration material only (issue 23: held out means
held out). Reads only stills registered as calibration, inside ``footage.use_split(CALIBRATION)`` (a validation
source raises SplitViolation).

Material, built here from the 11 calibration stills (obama x3, biden, Tom Hanks, t1, zidane, bus, astronaut, camera,
grace_hopper):
- camera moves (must NOT read as cuts): a window of 60 % of the still sliding by 5-40 % of its width (left / right /
  up / diagonal), zooming in or out by 10-30 % and rotating by 2-4 degrees between two "samples";
- cuts (must read as cuts): a window of one still followed by a window of another (every ordered pair of stills, the
  same person's other photographs included);
every frame re-encoded as JPEG (quality 35-90), with sensor noise and an exposure change, so that neither side is
pixel-clean. Prints the readings (cuts.readings) of both sides, the fitted thresholds and the rates on this
material; it changes nothing (the constants are edited by hand, in their own commit, citing this output).
The raw threshold stays where it was (.4: sensitive on purpose); the compensated one is fitted by Youden's J between
camera moves and cuts among the pairs the raw rule flags, half-way to the next lower reading.

    .venv/bin/python scripts/calibrate_cuts.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

SEED = 20261126
OUT = (256, 144)          # the synthetic video's frame size (16:9)
WINDOW = 0.6              # the window's share of the still (each axis)


def window(img, cx: float, cy: float, scale: float = 1.0, angle: float = 0.0):
    """Pure: the OUT-sized view of ``img`` centred at (cx, cy) (fractions of the still), WINDOW x scale of its
    height, rotated by ``angle`` degrees (a camera's view of the scene)."""
    import cv2
    h, w = img.shape[:2]
    wh = WINDOW * h * scale
    ww = wh * OUT[0] / OUT[1]
    if ww > w * 0.95:           # a portrait still: the window is limited by its width
        ww = WINDOW * w * scale
        wh = ww * OUT[1] / OUT[0]
    k = OUT[0] / ww
    M = cv2.getRotationMatrix2D((cx * w, cy * h), angle, k)
    M[0, 2] += OUT[0] / 2 - cx * w
    M[1, 2] += OUT[1] / 2 - cy * h
    return cv2.warpAffine(img, M, OUT, flags=cv2.INTER_AREA if k < 1 else cv2.INTER_LINEAR,
                          borderMode=cv2.BORDER_REFLECT)


def degrade(frame, rng):
    """Exposure change, sensor noise and a JPEG round trip (quality 35-90)."""
    import cv2
    import numpy as np
    g = frame.astype(np.float32) * rng.uniform(0.88, 1.12) + rng.normal(0, 2.5, frame.shape)
    g = np.clip(g, 0, 255).astype(np.uint8)
    ok, buf = cv2.imencode(".jpg", g[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(35, 91))])
    return cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1].copy()


def moves(img, rng) -> list[tuple[str, object, object]]:
    """Camera moves over one still: (kind, frame, next frame)."""
    out = []
    for frac in (0.05, 0.1, 0.2, 0.3, 0.4):
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0.7, 0.7)):
            # a shift of ``frac`` window widths, from a start that keeps both views inside the still
            span = frac * WINDOW * 0.5
            cx, cy = 0.5 - dx * span, 0.5 - dy * span * 0.6
            out.append((f"pan {frac:.2f}", window(img, cx, cy),
                        window(img, cx + 2 * dx * span, cy + 2 * dy * span * 0.6)))
    for z in (1.1, 1.2, 1.3):
        out.append((f"zoom {z}", window(img, 0.5, 0.5), window(img, 0.5, 0.5, 1 / z)))
        out.append((f"zoom out {z}", window(img, 0.5, 0.5, 1 / z), window(img, 0.5, 0.5)))
    for a in (2.0, -4.0):
        out.append((f"rotate {a}", window(img, 0.5, 0.5), window(img, 0.52, 0.5, 1.0, a)))
    return [(k, degrade(a, rng), degrade(b, rng)) for k, a, b in out]


def fit(neg, pos) -> tuple[float, float]:
    """The reading (a cut at or above it) maximising Youden's J (share of cuts at or above minus share of camera
    moves at or above), half-way to the next lower reading: the same rule as the link thresholds
    (pipeline.youden_threshold). Returns (threshold, J)."""
    from bench_assets.narrativetrack.pipeline import youden_threshold
    thr, rates = youden_threshold(pos, neg)
    return thr, round(rates["tpr"] - rates["fpr"], 3)


def main() -> int:
    import cv2
    import numpy as np

    from bench_assets.core import footage
    from bench_assets.narrativetrack import constants, cuts

    rng = np.random.default_rng(SEED)
    names = [n for n, s in footage.SOURCES.items() if s.split == footage.CALIBRATION and s.kind == "image"]
    stills = {}
    with footage.use_split(footage.CALIBRATION):
        for name in names:
            img = cv2.imread(str(footage.footage_path(name)), cv2.IMREAD_COLOR)
            stills[name] = img[..., ::-1].copy()
    move_r, cut_r = [], []
    for name, img in stills.items():
        for kind, a, b in moves(img, rng):
            move_r.append((name, kind, *cuts.pair_readings([a, b])[0]))
    for a_name, a_img in stills.items():
        for b_name, b_img in stills.items():
            if a_name == b_name:
                continue
            a = degrade(window(a_img, rng.uniform(0.4, 0.6), rng.uniform(0.4, 0.6), rng.uniform(0.8, 1.1)), rng)
            b = degrade(window(b_img, rng.uniform(0.4, 0.6), rng.uniform(0.4, 0.6), rng.uniform(0.8, 1.1)), rng)
            cut_r.append((f"{a_name}->{b_name}", "cut", *cuts.pair_readings([a, b])[0]))
    raw_min = constants.CUT_CHANGED_FRACTION
    print(f"calibration stills: {len(stills)} ({', '.join(stills)}); camera moves: {len(move_r)}; cuts: {len(cut_r)}")
    print(f"{'kind':12s} {'n':>4s} {'raw>=' + str(raw_min):>9s} {'motion fit':>10s} {'comp median':>11s} "
          f"{'comp max':>8s}")
    kinds = {}
    for r in move_r + cut_r:
        kinds.setdefault(r[1].split()[0] + ("" if r[1] == "cut" else " " + r[1].split()[1]), []).append(r)
    for k, rs in kinds.items():
        comp = [r[3] for r in rs]
        print(f"{k:12s} {len(rs):4d} {sum(r[2] >= raw_min for r in rs):9d} {sum(r[4] for r in rs):10d} "
              f"{np.median(comp):11.3f} {max(comp):8.3f}")
    flagged_moves = [r[3] for r in move_r if r[2] >= raw_min]
    flagged_cuts = [r[3] for r in cut_r if r[2] >= raw_min]
    print(f"raw rule alone (>= {raw_min}): cuts found {len(flagged_cuts)}/{len(cut_r)}, camera moves read as cuts "
          f"{len(flagged_moves)}/{len(move_r)}")
    if flagged_moves and flagged_cuts:
        thr, j = fit(flagged_moves, flagged_cuts)
        print(f"fitted CUT_COMPENSATED_FRACTION (Youden J {j:.3f} among raw-flagged pairs, half-way to the next "
              f"lower reading): {thr:.3f}")
        fm = sum(cuts.is_cut(r[2], r[3], raw_min, thr) for r in move_r)
        fc = sum(cuts.is_cut(r[2], r[3], raw_min, thr) for r in cut_r)
        print(f"with it: cuts found {fc}/{len(cut_r)}, camera moves read as cuts {fm}/{len(move_r)}")
        worst = sorted(move_r, key=lambda r: -r[3])[:5]
        print("highest compensated readings of camera moves:",
              "; ".join(f"{r[0]} {r[1]} {r[3]:.3f}" for r in worst))
        low = sorted(cut_r, key=lambda r: r[3])[:5]
        print("lowest compensated readings of cuts:", "; ".join(f"{r[0]} {r[3]:.3f} (raw {r[2]:.3f})" for r in low))
    print(f"shipped: CUT_CHANGED_FRACTION {constants.CUT_CHANGED_FRACTION}, CUT_COMPENSATED_FRACTION "
          f"{getattr(constants, 'CUT_COMPENSATED_FRACTION', None)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
