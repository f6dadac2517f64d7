#!/usr/bin/env python
"""Measure the EntityBench slice on this machine: decodes per shot, model time vs wall time, and what
decoding once per step saves over decoding per metric (the VBench pattern).

Usage: python scripts/benchmark_slice.py [--episodes e0003|all] [--generators faithful,drift|all]
Prints a table; asserts nothing (speed targets live here, not in tests).
"""
from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--episodes", default="e0003")
    ap.add_argument("--generators", default="faithful,drift")
    args = ap.parse_args()
    from dagster import instance_for_test

    from bench_assets import definitions as d
    from bench_assets.core import media
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_assets.entitybench.metrics import PILLAR1
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    episodes = (sorted(p.stem for p in (ROOT / "data/entitybench/episodes").glob("*.json"))
                if args.episodes == "all" else args.episodes.split(","))
    gens = (sorted(p.name for p in (ROOT / "data/generators").iterdir() if (p / "generator.yaml").exists())
            if args.generators == "all" else args.generators.split(","))
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        (data / "entitybench" / "episodes").mkdir(parents=True)
        for e in episodes:
            shutil.copy(ROOT / "data/entitybench/episodes" / f"{e}.json", data / "entitybench/episodes")
        for g in gens:
            shutil.copytree(ROOT / "data/generators" / g, data / "generators" / g,
                            ignore=lambda d, names: [n for n in names if n.startswith("e") and n not in episodes])
        paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
        resources = build_resources(paths=paths, store_root=str(Path(tmp) / "store"))
        found, _ = discover_generators(paths.generators_dir, "entitybench")
        shots = list((data / "generators").rglob("shot_*.mp4"))
        with instance_for_test() as instance:
            stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH,
                             items=episodes, generators=found, item_assets=d.ENTITYBENCH_ITEM_ASSETS,
                             generator_assets=d.ENTITYBENCH_GENERATOR_ASSETS,
                             aggregate_assets=["entitybench_leaderboard"], progress=lambda s: None)
        # decode once vs once per frame-reading metric (grounding + the Pillar 1 metrics + cross-shot)
        per_metric = 1 + len(PILLAR1) + 1
        t0 = time.perf_counter()
        for p in shots:
            media.decode_video(p)
        once = time.perf_counter() - t0
    print(f"shots: {len(shots)} ({len(gens)} generators x {episodes})")
    print(f"decodes: {stats.decodes} -> {stats.decodes / len(shots):.2f} per shot")
    print(f"wall: {stats.wall_s:.1f} s, model forwards: {stats.forwards} taking {stats.forward_s:.1f} s "
          f"({100 * stats.forward_s / stats.wall_s:.0f} % of wall)")
    print(f"decode all shots once: {once:.2f} s; decoding per metric ({per_metric} readers) would cost "
          f"~{once * per_metric:.2f} s, {per_metric:.0f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
