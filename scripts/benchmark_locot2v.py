#!/usr/bin/env python
"""LoCoT2V on this machine: decodes per video and seconds per video-minute.

Usage: python scripts/benchmark_locot2v.py [--generators locot2v_smooth,...] [--repeat 1] [--no-graph]
                                         [--long 60,24,640x384]

1. Per stage, calling the per-video pipeline directly on one shared decode per video: decode, static quality, the
   frame-pair temporal metrics (shared flows + frame features + PySceneDetect), event-level consistency.
2. The whole asset graph (judge off) through Dagster in a temporary store and instance: wall seconds per video-minute
   and decodes per video (the runner counts decodes).
3. With --long: one synthetic long video (the smooth video resized and looped) through the same stages.
Uses the configured profile (BENCH_PROFILE; offline: OpenCV DIS flow, EfficientNet-Lite0 features, SSD boxes).
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
GENERATORS = "locot2v_smooth,locot2v_jerky,locot2v_frozen,locot2v_drift"


def _events(clip, events, slot):
    """Event consistency on an in-memory clip the way the asset does it: cuts, then the event frames."""
    from bench_assets.locot2v import metrics as M
    from bench_assets.locot2v import pipeline as PL
    idx = PL.event_frame_indices(clip.n_frames, len(events or []))
    cuts = M.detect_transitions(clip.frames, clip.fps)
    det, det_why = slot["open_vocab_detector"]
    return PL.event_consistency(clip.n_frames, cuts, {i: clip.frames[i] for i in idx}, events, "judge off",
                                slot["subject_segmenter"][0], det, det_why, *slot["image_embedder"])


def stages(generators: list[str], repeat: int) -> None:
    from bench_assets.core import media
    from bench_assets.locot2v import dataset as D
    from bench_assets.locot2v import pipeline as PL
    from bench_resources.config import build_resources

    res = build_resources(store_root=tempfile.mkdtemp(prefix="locot2v-bench-"))
    models, device = res["models"], res["device"]
    slot = {n: models.slot_or_reason(n, device) for n in ("flow", "siglip2", "image_embedder", "open_vocab_detector",
                                                          "subject_segmenter", "aesthetic_v25", "dover")}
    root = ROOT / "data" / "locot2v" / "samples"
    samples = {sid: D.load_sample(root / f"{sid}.json") for sid in D.discover_samples(root)}
    for name in ("flow", "siglip2", "image_embedder", "open_vocab_detector"):  # warm-up: model load
        if slot[name][0] is None:
            print(f"{name}: {slot[name][1]}")
    totals = {"decode": 0.0, "static": 0.0, "temporal": 0.0, "events": 0.0}
    minutes, videos = 0.0, 0
    d0 = media.decode_count()
    warm = False
    for _ in range(repeat):
        cache = media.ClipCache()
        for g in generators:
            for sid, s in samples.items():
                path = ROOT / "data" / "generators" / g / f"{sid}.mp4"
                t = time.perf_counter()
                clip = cache.get(path)
                t_dec = time.perf_counter() - t
                if not warm:  # first call loads the models: not counted
                    PL.frame_level_temporal(clip.frames[:12], clip.fps, *slot["flow"], *slot["siglip2"])
                    warm = True
                t = time.perf_counter()
                PL.static_quality(clip.frames, clip.fps, *slot["aesthetic_v25"], *slot["dover"], 10.0)
                t_static = time.perf_counter() - t
                t = time.perf_counter()
                PL.frame_level_temporal(clip.frames, clip.fps, *slot["flow"], *slot["siglip2"])
                t_temp = time.perf_counter() - t
                t = time.perf_counter()
                _events(clip, s.events, slot)
                t_ev = time.perf_counter() - t
                # a second metric family asking for the same video is served by the cache: no new decode
                assert cache.get(path) is clip
                for k, v in (("decode", t_dec), ("static", t_static), ("temporal", t_temp), ("events", t_ev)):
                    totals[k] += v
                minutes += clip.n_frames / (clip.fps or 1.0) / 60.0
                videos += 1
    decodes = media.decode_count() - d0
    print(f"profile {models.profile}; {videos} video runs, {minutes * 60 / max(videos, 1):.1f} s per video; "
          f"flow: {models.status('flow').checkpoint}; features: {models.status('siglip2').checkpoint}")
    print(f"{'stage':<10} {'seconds':>8} {'s / video-minute':>17}")
    for k, v in totals.items():
        print(f"{k:<10} {v:8.2f} {v / minutes:17.2f}")
    total = sum(totals.values())
    print(f"{'all':<10} {total:8.2f} {total / minutes:17.2f}")
    print(f"decodes: {decodes} for {videos} video runs ({decodes / max(videos, 1):.2f} per video)")


def long_video(seconds: float, fps: float, width: int, height: int) -> None:
    """One synthetic long video (the embedded smooth video resized and looped to ``seconds`` at ``fps``), written
    with the mp4v writer and run through the same stages: decode once, static, temporal, events."""
    import cv2

    from bench_assets.core import media
    from bench_assets.locot2v import dataset as D
    from bench_assets.locot2v import pipeline as PL
    from bench_resources.config import build_resources

    src = media.decode_video(ROOT / "data" / "generators" / "locot2v_smooth" / "nature_1.mp4")
    sample = D.load_sample(ROOT / "data" / "locot2v" / "samples" / "nature_1.json")
    n = int(round(seconds * fps))
    with tempfile.TemporaryDirectory(prefix="locot2v-long-") as tmp:
        path = Path(tmp) / "long.mp4"
        vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), fps, (width, height))
        for k in range(n):  # source frame by time, so motion per second matches the source
            f = src.frames[int(k * src.fps / fps) % src.n_frames]
            vw.write(cv2.cvtColor(cv2.resize(f, (width, height), interpolation=cv2.INTER_LINEAR), cv2.COLOR_RGB2BGR))
        vw.release()
        res = build_resources(store_root=tmp)
        models, device = res["models"], res["device"]
        slot = {k: models.slot_or_reason(k, device) for k in ("flow", "siglip2", "image_embedder",
                                                              "open_vocab_detector", "subject_segmenter",
                                                              "aesthetic_v25", "dover")}
        PL.frame_level_temporal(src.frames[:12], src.fps, *slot["flow"], *slot["siglip2"])  # warm-up
        # the asset's path first (one streamed pass, flows reduced per chunk), so its peak RSS is its own
        import resource

        from bench_assets.locot2v.assets import SLOTS, visual_values
        full = {k: models.slot_or_reason(k, device) for k in SLOTS if k != "long_text_embedder"}
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        t = time.perf_counter()
        vsrc = media.VideoSource(path)
        visual_values(vsrc, full, sample.events, None, 10.0)
        print(f"streamed visual asset: {time.perf_counter() - t:.2f} s, peak RSS {rss0:.0f} -> "
              f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, passes 1, "
              f"frames converted {vsrc.stats.frames_converted} of {vsrc.n_frames}, "
              f"peak chunk frames {vsrc.stats.peak_chunk_frames}, gathered {vsrc.stats.gathered_frames}")
        d0 = media.decode_count()
        times = {}
        t = time.perf_counter()
        clip = media.ClipCache().get(path)   # the legacy whole-clip path, for comparison
        times["decode"] = time.perf_counter() - t
        t = time.perf_counter()
        PL.static_quality(clip.frames, clip.fps, *slot["aesthetic_v25"], *slot["dover"], 10.0)
        times["static"] = time.perf_counter() - t
        t = time.perf_counter()
        PL.frame_level_temporal(clip.frames, clip.fps, *slot["flow"], *slot["siglip2"])
        times["temporal"] = time.perf_counter() - t
        t = time.perf_counter()
        _events(clip, sample.events, slot)
        times["events"] = time.perf_counter() - t
        minutes = clip.n_frames / clip.fps / 60.0
        print(f"long video: {clip.n_frames} frames, {width}x{height} at {fps:g} fps ({seconds:g} s), "
              f"decodes {media.decode_count() - d0}")
        for k, v in times.items():
            print(f"{k:<10} {v:8.2f} {v / minutes:17.2f}")
        total = sum(times.values())
        print(f"{'all':<10} {total:8.2f} {total / minutes:17.2f}   (seconds, seconds per video-minute)")


def graph(generators: list[str]) -> None:
    from dagster import instance_for_test

    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_assets.locot2v import assets as A
    from bench_assets.locot2v.dataset import discover_samples
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths

    with tempfile.TemporaryDirectory(prefix="locot2v-graph-") as tmp:
        data = Path(tmp) / "data"
        shutil.copytree(ROOT / "data" / "locot2v", data / "locot2v")
        for g in generators:
            shutil.copytree(ROOT / "data" / "generators" / g, data / "generators" / g)
        paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
        res = build_resources(paths=paths, store_root=str(Path(tmp) / "store"), judge=Judge(mode="off"))
        gens, _ = discover_generators(paths.generators_dir, "locot2v")
        items = discover_samples(data / "locot2v" / "samples")
        with instance_for_test() as instance:
            stats = evaluate(instance, assets=A.ASSETS, resources=res, partitions=A.P, items=items, generators=gens,
                             item_assets=A.ITEM_ASSETS, generator_assets=A.GENERATOR_ASSETS,
                             aggregate_assets=A.AGGREGATE_ASSETS, progress=lambda s: None)
        import cv2
        minutes = 0.0
        for g in gens:
            for i in items:
                cap = cv2.VideoCapture(str(data / "generators" / g.name / f"{i}.mp4"))
                minutes += cap.get(cv2.CAP_PROP_FRAME_COUNT) / (cap.get(cv2.CAP_PROP_FPS) or 1.0) / 60.0
                cap.release()
        n = len(gens) * len(items)
        print(f"graph (judge off, Dagster in-process, model loads and run overhead included): {n} videos, "
              f"{minutes * 60:.0f} s of video, {stats.wall_s:.1f} s wall -> {stats.wall_s / minutes:.1f} s per "
              f"video-minute; decodes {stats.decodes} ({stats.decodes / n:.2f} per video); model forwards "
              f"{stats.forwards}; failed {len(stats.failed)}")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--generators", default=GENERATORS)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-graph", action="store_true")
    ap.add_argument("--long", default=None, metavar="SECONDS,FPS,WxH",
                    help="also time one synthetic long video, e.g. 60,24,640x384 (analysis at <= 8 fps)")
    args = ap.parse_args()
    gens = args.generators.split(",")
    stages(gens, args.repeat)
    if not args.no_graph:
        graph(gens)
    if args.long:
        sec, fps, size = args.long.split(",")
        w, h = (int(x) for x in size.lower().split("x"))
        long_video(float(sec), float(fps), w, h)
    return 0


if __name__ == "__main__":
    sys.exit(main())
