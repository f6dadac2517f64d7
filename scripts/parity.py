"""Full form of the parity suite (tests/parity is the bounded CI form): VBench's own functions against the
project's paper-profile path on the package clips, with ONE seeded random checkpoint of each architecture given to
both, plus the offline substitute's value and time beside them.

Prints one row per (metric, clip): reference value, project value, |diff|, seconds per clip for each, and the
offline substitute's value and seconds ('-' where the slot has no offline substitute). Random weights make the
values meaningless as quality numbers: what the table shows is whether the two codes compute the same thing, and
how far the substitute's computation lands from it on the same frames. Every project value is EntityBench's
paper-profile Pillar 1 path (its per-shot accumulator fed through the paper registry's slots); the offline column
is the same accumulator through the offline registry's slots.

Documented differences (the paper's definitions, so the diff column is not zero there): dynamic_degree is the
fraction of moving pairs x 100 in EntityBench (VBench: its verdict, 0 or 100); subject_consistency is Eq. 2 (the
mean consecutive cosine; VBench averages it with the first-frame cosine, clipped at 0), and the model is the
paper's DINOv2-base (VBench: DINO ViT-B/16): both sides run the slot's random DINOv2 here, so the row shows the
formula's difference; the line above it prints the frame embeddings' difference (VBench's dino_transform against
the slot's ``embed_frames``), which must be within the bar.

    .venv/bin/python scripts/parity.py                       # every clip, first 9 frames (CPU-friendly)
    .venv/bin/python scripts/parity.py --frames 0            # whole clips (GPU advised)
    .venv/bin/python scripts/parity.py --metrics dynamic_degree --clips bikes.mp4 --markdown

Needs the footage cache (scripts/fetch_footage.py) and the parity packages (`make install`).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CLIPS = ["bikes.mp4", "carphone_pristine.mp4", "bigbuckbunny.mp4"]
METRICS = ["temporal_flickering", "dynamic_degree", "motion_smoothness", "aesthetic_quality", "imaging_quality",
           "subject_consistency"]


def frames_of(path, n):
    from bench_assets.core.media import VideoSource
    src = VideoSource(path)
    req = src.take(list(range(min(n, src.n_frames) if n else src.n_frames)))
    src.run()
    return req.frames, float(src.fps)


def shot_metric(metric_id, model, frames, fps):
    from bench_assets.entitybench.metrics import PILLAR1
    acc = {m.metric_id: m for m in PILLAR1}[metric_id].start(model, fps, len(frames))
    for a in range(0, len(frames), 32):
        acc.update(frames[a:a + 32])
    return acc.result()


def timed(fn):
    t = time.perf_counter()
    v = fn()
    return v, time.perf_counter() - t


def decord_first(path, n):
    import decord
    import torch
    vr = decord.VideoReader(str(path))
    k = min(n, len(vr)) if n else len(vr)
    return torch.from_numpy(vr.get_batch(list(range(k))).asnumpy()).permute(0, 3, 1, 2)


class Models:
    """The seeded random checkpoints, each saved once and loaded by both sides (the project through its slots)."""

    def __init__(self, work: Path):
        import torch
        from bench_resources.device import Device
        from bench_resources.models import ModelRegistry
        self.work, self.torch = work, torch
        self.dev = Device(device="cuda" if torch.cuda.is_available() else "cpu", batch_size=8)
        self.paper = ModelRegistry(profile="paper", weights_dir=str(work / "w"))
        self.offline = ModelRegistry(profile="offline")
        self.cache = {}

    def raft(self):
        if "raft" not in self.cache:
            from easydict import EasyDict
            from vbench.third_party.RAFT.core.raft import RAFT
            self.torch.manual_seed(0)
            ref = RAFT(EasyDict(small=False, mixed_precision=False, alternate_corr=False)).eval()
            self.torch.save({"module." + k: v for k, v in ref.state_dict().items()}, self.work / "raft_large.pth")
            self.paper.import_weights("flow", self.work / "raft_large.pth")
            self.cache["raft"] = (ref.to(self.dev.torch_device()), self.paper.slot("flow", self.dev))
        return self.cache["raft"]

    def clip(self):
        if "clip" not in self.cache:
            import clip.model
            import open_clip
            self.torch.manual_seed(0)
            sd = {k: v.half() for k, v in open_clip.create_model("ViT-L-14-quickgelu").state_dict().items()}
            head = self.torch.nn.Linear(768, 1)
            self.torch.save(sd, self.work / "ViT-L-14.pt")
            self.torch.save(head.state_dict(), self.work / "sa_0_4_vit_l_14_linear.pth")
            ref = clip.model.build_model(dict(sd)).float().eval().to(self.dev.torch_device())
            self.paper.import_weights("clip_l14", self.work / "ViT-L-14.pt")
            self.paper.import_weights("aesthetic", self.work / "sa_0_4_vit_l_14_linear.pth")
            self.cache["clip"] = (ref, head.eval().to(self.dev.torch_device()), self.paper.slot("aesthetic", self.dev))
        return self.cache["clip"]

    def amt(self):
        if "amt" not in self.cache:
            from bench_resources.models.amt import amt_s_module
            self.torch.manual_seed(0)
            ref = amt_s_module().eval()
            self.torch.save({"state_dict": ref.state_dict()}, self.work / "amt-s.pth")
            self.paper.import_weights("interpolator", self.work / "amt-s.pth")
            self.cache["amt"] = (ref.to(self.dev.torch_device()), self.paper.slot("interpolator", self.dev))
        return self.cache["amt"]

    def dinov2(self):
        """The image_embedder slot's architecture (DINOv2 ViT-B/14), LayerScale set to 1 (timm's 1e-5 init gives
        a random DINOv2 almost the same CLS token for every image)."""
        if "dinov2" not in self.cache:
            from bench_resources.models.vision import dinov2_module
            self.torch.manual_seed(0)
            module = dinov2_module()
            with self.torch.no_grad():
                for name, p in module.named_parameters():
                    if name.endswith(".gamma"):
                        p.fill_(1.0)
            self.torch.save(module.state_dict(), self.work / "dinov2_vitb14.pth")
            self.paper.import_weights("image_embedder", self.work / "dinov2_vitb14.pth")
            self.cache["dinov2"] = (module.eval().to(self.dev.torch_device()),
                                    self.paper.slot("image_embedder", self.dev))
        return self.cache["dinov2"]

    def musiq(self):
        if "musiq" not in self.cache:
            from pyiqa.archs.musiq_arch import MUSIQ
            self.torch.manual_seed(0)
            ref = MUSIQ(num_class=1, pretrained=False).eval()
            self.torch.save({"params": ref.state_dict()}, self.work / "musiq_spaq_ckpt-358bb6af.pth")
            self.paper.import_weights("musiq", self.work / "musiq_spaq_ckpt-358bb6af.pth")
            self.cache["musiq"] = (ref.to(self.dev.torch_device()), self.paper.slot("musiq", self.dev))
        return self.cache["musiq"]


def row_flickering(m, path, n):
    import vbench.temporal_flickering as vtf
    orig = vtf.get_frames
    vtf.get_frames = lambda p: orig(p)[:n] if n else orig(p)
    try:
        ref, t_ref = timed(lambda: vtf.cal_score(str(path)))
    finally:
        vtf.get_frames = orig
    (frames, fps), t_dec = timed(lambda: frames_of(path, n))   # both sides' times include decoding
    got, t_got = timed(lambda: shot_metric("temporal_flickering", None, frames, fps))
    return ref, got, t_ref, t_dec + t_got, got, t_dec + t_got   # no model: the offline profile is the same


def row_dynamic(m, path, n):
    from vbench.dynamic_degree import DynamicDegree
    from bench_assets.entitybench.metrics import dynamic_indices
    from bench_assets.locot2v import metrics as lm
    ref_model, flow = m.raft()
    (frames, fps), t_dec = timed(lambda: frames_of(path, n))   # both sides' times include decoding
    idx = dynamic_indices(len(frames), fps)
    dd = DynamicDegree.__new__(DynamicDegree)
    dd.device, dd.model = m.dev.torch_device(), ref_model
    scores, orig_frames, orig_score = [], dd.get_frames, dd.get_score
    dd.get_frames = lambda p: orig_frames(p)[:len(idx)]
    dd.get_score = lambda img, flo: scores.append(orig_score(img, flo)) or scores[-1]
    verdict, t_ref = timed(lambda: dd.infer(str(path)))

    def ours(model):
        fl = model.flow([(frames[a], frames[b]) for a, b in zip(idx, idx[1:])])
        return lm.dynamic_verdict(sum(lm.is_moving(f, frames.shape[1:3]) for f in fl), len(fl))[0], \
            [lm.top_mean(f, 0.05) for f in fl]
    (got, pair), t_got = timed(lambda: ours(flow))
    (off, _), t_off = timed(lambda: ours(m.offline.slot("flow", m.dev)))
    pair_diff = float(np.max(np.abs(np.asarray(scores) - np.asarray(pair)))) if pair else 0.0
    print(f"  dynamic_degree {Path(path).name}: {len(pair)} pairs, max pair-score diff {pair_diff:.3g} px")
    return 100.0 if verdict else 0.0, got, t_ref, t_dec + t_got, off, t_dec + t_off


def row_aesthetic(m, path, n):
    import vbench.aesthetic_quality as vaq
    ref_clip, head, aesthetic = m.clip()
    orig = vaq.load_video
    vaq.load_video = lambda p, *a, **k: decord_first(p, n)
    try:
        (ref, _), t_ref = timed(lambda: vaq.laion_aesthetic(head, ref_clip, [str(path)], m.dev.torch_device()))
    finally:
        vaq.load_video = orig
    (frames, fps), t_dec = timed(lambda: frames_of(path, n))   # both sides' times include decoding
    got, t_got = timed(lambda: shot_metric("aesthetic_quality", aesthetic, frames, fps))
    return ref, got, t_ref, t_dec + t_got, None, None


def row_imaging(m, path, n):
    import vbench.imaging_quality as viq
    ref_model, musiq = m.musiq()
    orig = viq.load_video
    viq.load_video = lambda p, *a, **k: decord_first(p, n)
    try:
        (_, per), t_ref = timed(lambda: viq.technical_quality(ref_model, [str(path)], m.dev.torch_device()))
    finally:
        viq.load_video = orig
    (frames, fps), t_dec = timed(lambda: frames_of(path, n))   # both sides' times include decoding
    got, t_got = timed(lambda: shot_metric("imaging_quality", musiq, frames, fps))
    return per[0]["video_results"], got, t_ref, t_dec + t_got, None, None


def row_smoothness(m, path, n):
    """Reference: VBench's MotionSmoothness.motion_score (AMT-S); project: EntityBench's Pillar 1 through the paper
    profile's ``interpolator`` slot (AMT-S, wired in EntityBench and LoCoT2V); offline: the same accumulator
    through the offline ``interpolator`` slot (flow midpoints along DIS, a substitute)."""
    from vbench.motion_smoothness import MotionSmoothness
    ref_model, interp = m.amt()
    ms = MotionSmoothness.__new__(MotionSmoothness)
    ms.device, ms.niters, ms.model = str(m.dev.torch_device()), 1, ref_model
    ms.initialization()
    orig = ms.fp.get_frames
    ms.fp.get_frames = lambda p: orig(p)[:n] if n else orig(p)
    ref, t_ref = timed(lambda: ms.motion_score(str(path)))
    (frames, fps), t_dec = timed(lambda: frames_of(path, n))   # both sides' times include decoding
    got, t_got = timed(lambda: shot_metric("motion_smoothness", interp, frames, fps))
    off, t_off = timed(lambda: shot_metric("motion_smoothness", m.offline.slot("interpolator", m.dev), frames, fps))
    return ref, got, t_ref, t_dec + t_got, off, t_dec + t_off


def row_subject(m, path, n):
    """Reference: VBench's subject_consistency (decord frames, dino_transform(224)) run with the slot's random
    DINOv2; project: EntityBench's Eq. 2 through the image_embedder slot's ``embed_frames``; offline: the same
    through EfficientNet-Lite0 (a substitute)."""
    import torch
    import vbench.subject_consistency as vsc
    from bench_resources.models.vision import _whole_patches
    module, embedder = m.dinov2()
    seen = []

    class Recorder(torch.nn.Module):
        def forward(self, x):
            f = _whole_patches(module, x)
            seen.append(torch.nn.functional.normalize(f.float(), dim=-1)[0].cpu().numpy())
            return f

    orig = vsc.load_video
    vsc.load_video = lambda p, *a, **k: decord_first(p, n)
    try:
        (_, per), t_ref = timed(lambda: vsc.subject_consistency(Recorder(), [str(path)], m.dev.torch_device(),
                                                                read_frame=False))
    finally:
        vsc.load_video = orig
    (frames, fps), t_dec = timed(lambda: frames_of(path, n))   # both sides' times include decoding
    got, t_got = timed(lambda: shot_metric("subject_consistency", embedder, frames, fps))
    emb = embedder.embed_frames(list(frames))
    print(f"  subject_consistency {Path(path).name}: frame embeddings max diff "
          f"{float(np.max(np.abs(np.stack(seen) - emb))):.3g} (VBench's dino_transform vs embed_frames)")
    off, t_off = timed(lambda: shot_metric("subject_consistency", m.offline.slot("image_embedder", m.dev), frames,
                                           fps))
    return per[0]["video_results"], got, t_ref, t_dec + t_got, off, t_dec + t_off


ROWS = {"temporal_flickering": row_flickering, "dynamic_degree": row_dynamic, "motion_smoothness": row_smoothness,
        "aesthetic_quality": row_aesthetic, "imaging_quality": row_imaging, "subject_consistency": row_subject}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--clips", nargs="*", default=CLIPS)
    ap.add_argument("--metrics", nargs="*", default=METRICS, choices=METRICS)
    ap.add_argument("--frames", type=int, default=9, help="first N native frames of each clip (0: whole clip)")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args(argv)
    from bench_assets.core.footage import footage_path
    fmt = lambda v: "-" if v is None else f"{v:.6g}"  # noqa: E731
    head = ["metric", "clip", "reference", "project", "diff", "ref s/clip", "project s/clip", "offline value",
            "offline s/clip"]
    print(("| " + " | ".join(head) + " |\n|" + "---|" * len(head)) if a.markdown else "\t".join(head))
    with tempfile.TemporaryDirectory() as tmp:
        m = Models(Path(tmp))
        for metric in a.metrics:
            for name in a.clips:
                ref, got, t_ref, t_got, off, t_off = ROWS[metric](m, footage_path(name), a.frames)
                diff = None if ref is None or got is None else abs(ref - got)
                cells = [metric, name, fmt(ref), fmt(got), fmt(diff), fmt(t_ref), fmt(t_got), fmt(off), fmt(t_off)]
                print(("| " + " | ".join(cells) + " |") if a.markdown else "\t".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
