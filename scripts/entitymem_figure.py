#!/usr/bin/env python
"""The README's picture of one episode's EntityMem bank with the offline stand-in: the characters' labelled
portraits, the standalone objects' cut-outs, a location panorama, one keyframe and the first frame of the shot it
conditions: its first frame (for a continuation, the previous shot's last frame) and its last frame, beside the
storymem-style control's last frame of the same shot.

Usage: python scripts/entitymem_figure.py [--episode e0003] [--shot 2] [--out docs/entitymem_bank.png]
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import cv2
import numpy as np
from PIL import Image

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_assets.entitybench.dataset import load_episode  # noqa: E402
from bench_assets.entitymem import configs, pipeline  # noqa: E402
from bench_assets.entitymem.bank import on_checker  # noqa: E402
from bench_resources.generation.video import read_frames  # noqa: E402
from bench_resources.store import Store  # noqa: E402


def _h(img: np.ndarray, h: int) -> np.ndarray:
    return cv2.resize(img, (max(1, int(img.shape[1] * h / img.shape[0])), h), interpolation=cv2.INTER_AREA)


def _caption(img: np.ndarray, text: str) -> np.ndarray:
    band = np.full((22, img.shape[1], 3), 255, np.uint8)
    cv2.putText(band, text, (4, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1, cv2.LINE_AA)
    return np.concatenate([img, band], 0)


def _row(tiles: list[np.ndarray], width: int) -> np.ndarray:
    h = max(t.shape[0] for t in tiles)
    tiles = [np.pad(t, ((0, h - t.shape[0]), (0, 6), (0, 0)), constant_values=255) for t in tiles]
    row = np.concatenate(tiles, 1)
    return np.pad(row, ((0, 6), (0, max(0, width - row.shape[1])), (0, 0)), constant_values=255)[:, :width]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episode", default="e0003")
    ap.add_argument("--shot", type=int, default=2)
    ap.add_argument("--out", default=str(ROOT / "docs" / "entitymem_bank.png"))
    a = ap.parse_args()
    ep = load_episode(ROOT / "data" / "entitybench" / "episodes" / f"{a.episode}.json")
    cfg = configs.BUILTIN[configs.OFFLINE]
    with tempfile.TemporaryDirectory() as tmp:
        run = pipeline.Run(ep, cfg, pipeline.Backends.from_config(cfg), Store(root=tmp))
        rows, refs = pipeline.build_bank(run)
        kfs = pipeline.compose_keyframes(run, rows, refs, pipeline.plan_layouts(run))
        shots = pipeline.generate_entitymem(run, rows, refs, kfs)
        control = pipeline.generate_control(run)
        portraits, objects = [], []
        for r in rows:
            ref = refs.get(r["entity_id"])
            if ref is None or "cutout" not in ref:
                continue
            if r["type"] == "character":
                portraits.append(_caption(_h(run.get(ref["labelled"]), 180), "portrait"))
            else:
                objects.append(_caption(_h(on_checker(run.get(ref["cutout"])), 120), r["name"]))
        loc = next(r for r in rows if r["type"] == "location" and r["entity_id"] in refs)
        pano = _caption(_h(run.get(refs[loc["entity_id"]]["panorama"]), 120), f"{loc['name']} (3:1 panorama)")
        kf = next(k for k in kfs if k["shot"] == a.shot)
        em = read_frames(run.store.get_bytes(shots[a.shot - 1]["video"], "mp4"))
        ct = read_frames(run.store.get_bytes(control[a.shot - 1]["video"], "mp4"))
        cont = " (shot %d's last)" % (a.shot - 1) if not ep.shots[a.shot - 1].cut else ""
        shot_row = [_caption(_h(run.get(kf["image"]), 144), f"shot {a.shot} keyframe ({kf['camera_angle']} crop)"),
                    _caption(_h(em[0], 144), f"shot {a.shot} first frame{cont}"),
                    _caption(_h(em[-1], 144), f"EntityMem shot {a.shot}, last frame"),
                    _caption(_h(ct[-1], 144), f"control shot {a.shot}, last frame")]
    width = max(sum(t.shape[1] + 6 for t in r) for r in (portraits + objects, [pano], shot_row))
    fig = np.concatenate([_row(portraits + objects, width), _row([pano], width), _row(shot_row, width)], 0)
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(fig).save(a.out, optimize=True)
    print(a.out, fig.shape)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
