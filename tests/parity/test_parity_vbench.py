"""VBench's own functions against the project's paper-profile path, same clips, same random checkpoint.

Each test names the VBench function it runs. Values are compared at the parity bar (1e-4 on the metric's
scale) and verdicts exactly. EntityBench's authors run VBench itself for Pillar 1 (eval/evaluate_benchmark.py
3776439, ``dimension_list=[dim]``), so its six ids equal VBench's per-video values; the paper text's own
definitions (Eq. 2, dynamic degree as the FRACTION of moving pairs) are additions with their own ids, asserted
here from VBench's own features and pair scores.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

from bench_resources.device import Device
from bench_resources.models import ModelRegistry
BAR = 1e-4   # the parity bar (conftest.BAR), for arrays compared without printing them whole

CPU = Device(device="cpu", batch_size=4)


def run_shot_metric(metric_id: str, model, frames: np.ndarray, fps: float):
    """The EntityBench per-shot accumulator, fed in 32-frame chunks as the asset streams a shot."""
    from bench_assets.entitybench.metrics import PILLAR1
    metric = {m.metric_id: m for m in PILLAR1}[metric_id]
    acc = metric.start(model, fps, len(frames))
    for a in range(0, len(frames), 32):
        acc.update(frames[a:a + 32])
    return metric.read(acc)


# ------------------------------------------------------------------------------------------- no weights

@pytest.mark.parametrize("name", ["bikes.mp4", "carphone_pristine.mp4", "vtest.avi"])
def test_temporal_flickering(name, clip_frames, close, monkeypatch):
    """vbench.temporal_flickering.cal_score (cv2 decoding, its own MAE) = EntityBench's flickering; LoCoT2V's
    formula over the same pairs = VBench x 100 (LoCoT2V then keeps static pairs only: its spec's reading)."""
    import vbench.temporal_flickering as vtf
    from bench_assets.locot2v import metrics as lm
    n = 24
    frames, fps, path = clip_frames(name, n)
    orig = vtf.get_frames
    monkeypatch.setattr(vtf, "get_frames", lambda p: orig(p)[:n])
    ref = vtf.cal_score(str(path))
    close(ref, run_shot_metric("temporal_flickering", None, frames, fps), f"{name} flickering")
    close(ref * 100.0, lm.temporal_flickering(list(frames), list(range(n - 1))), f"{name} LoCoT2V formula",
          bar=1e-2)


# ------------------------------------------------------------------------------------------- RAFT

@pytest.fixture(scope="module")
def raft_pair(tmp_path_factory):
    """VBench's RAFT (princeton-vl code in vbench.third_party) with seeded random weights, saved as VBench's
    raft-things.pth is ('module.' keys) and imported into the project's flow slot through `bench weights import`'s
    code: one checkpoint, both sides."""
    from easydict import EasyDict
    from vbench.third_party.RAFT.core.raft import RAFT
    torch.manual_seed(0)
    ref = RAFT(EasyDict(small=False, mixed_precision=False, alternate_corr=False)).eval()
    d = tmp_path_factory.mktemp("raft")
    # the file is VBench's raft-things.pth in content; the slot reads it under its own file name
    torch.save({"module." + k: v for k, v in ref.state_dict().items()}, d / "raft_large.pth")
    reg = ModelRegistry(profile="paper", weights_dir=str(d / "w"))
    reg.import_weights("flow", d / "raft_large.pth")
    return ref, reg.slot("flow", CPU)


def test_dynamic_degree(raft_pair, clip_frames, close, monkeypatch):
    """vbench.dynamic_degree.DynamicDegree.infer (cv2 decoding, every round(fps/8)-th frame, iters=20, its
    padding, top-5 % score, check_move) against the project: per-pair scores within the bar, LoCoT2V's verdict
    equal, EntityBench's dynamic_degree = VBench's per-video verdict (what the authors' evaluator keeps per shot),
    and the addition dynamic_degree_pair_fraction = the fraction of VBench's moving pairs (the paper text's)."""
    from vbench.dynamic_degree import DynamicDegree
    from bench_assets.entitybench.metrics import dynamic_indices
    from bench_assets.locot2v import metrics as lm
    ref_model, flow = raft_pair
    name, k = "carphone_pristine.mp4", 3                 # 29.97 fps: frames 0, 4, 8 (2 pairs)
    frames, fps, path = clip_frames(name, 9)
    dd = DynamicDegree.__new__(DynamicDegree)
    dd.device, dd.model = "cpu", ref_model
    scores = []
    orig_get_frames, orig_score = dd.get_frames, dd.get_score
    dd.get_frames = lambda p: orig_get_frames(p)[:k]
    dd.get_score = lambda img, flo: scores.append(orig_score(img, flo)) or scores[-1]
    verdict = dd.infer(str(path))
    idx = dynamic_indices(len(frames), fps)
    assert idx == [0, 4, 8]
    flows = flow.flow([(frames[a], frames[b]) for a, b in zip(idx, idx[1:])])
    ours = [lm.top_mean(f, lm.constants.DYNAMIC_TOP_FRACTION) for f in flows]
    close(scores, ours, "dynamic degree pair scores (px)")
    thres = dd.params["thres"]
    moving = [s > thres for s in scores]
    assert lm.dynamic_verdict(sum(lm.is_moving(f, frames.shape[1:3]) for f in flows), len(flows))[0] == \
        (100.0 if verdict else 0.0)
    assert run_shot_metric("dynamic_degree", flow, frames, fps) == (1.0 if verdict else 0.0)
    fraction = run_shot_metric("dynamic_degree_pair_fraction", flow, frames, fps)
    assert fraction == pytest.approx(float(np.mean(moving)))   # the paper text's, kept as an addition
    print(f"\nparity {name} dynamic degree: VBench verdict {bool(verdict)} (moving {moving}, needs "
          f"{dd.params['count_num']}); pair fraction {fraction:.3f}")


@pytest.mark.parametrize("pairs", [0, 1, 2, 3, 4, 7, 8, 15, 23])
def test_dynamic_verdict_is_vbench_check_move(pairs):
    """vbench.dynamic_degree.DynamicDegree.check_move (count over the sampled FRAMES, Python's round, the early
    return) against EntityBench's per-shot verdict for every number of moving pairs: the verdict, not the pair
    fraction, is what the authors' evaluator averages over shots (a random RAFT moves every pair, so the clip test
    above cannot show the difference)."""
    from vbench.dynamic_degree import DynamicDegree
    from bench_assets.entitybench.metrics import dynamic_verdict
    dd = DynamicDegree.__new__(DynamicDegree)
    dd.set_params(frame=torch.zeros(1, 3, 144, 176), count=pairs + 1)
    thres = dd.params["thres"]
    differs = 0
    for moving in range(pairs + 1):
        scores = [thres + 1.0] * moving + [thres - 1.0] * (pairs - moving)
        ref = 1.0 if dd.check_move(scores) else 0.0
        assert dynamic_verdict([s > thres for s in scores]) == ref, (pairs, moving)
        differs += pairs > 0 and ref != moving / pairs
    assert pairs < 2 or differs, "no case where the verdict and the pair fraction differ"


# ------------------------------------------------------------------------------------------- CLIP + LAION head

@pytest.fixture(scope="module")
def clip_l14_pair(tmp_path_factory):
    """OpenAI's CLIP ViT-L/14 (the ``clip`` package VBench loads) and the project's aesthetic slot, both built from
    one seeded random open_clip ViT-L-14-quickgelu state dict (OpenAI's key names) and one random LAION head."""
    import clip.model
    import open_clip
    torch.manual_seed(0)
    sd = {k: v.half() for k, v in open_clip.create_model("ViT-L-14-quickgelu").state_dict().items()}
    head = torch.nn.Linear(768, 1)
    d = tmp_path_factory.mktemp("clip")
    torch.save(sd, d / "ViT-L-14.pt")
    torch.save(head.state_dict(), d / "sa_0_4_vit_l_14_linear.pth")
    ref = clip.model.build_model(dict(sd)).float().eval()
    reg = ModelRegistry(profile="paper", weights_dir=str(d / "w"))
    reg.import_weights("clip_l14", d / "ViT-L-14.pt")
    reg.import_weights("aesthetic", d / "sa_0_4_vit_l_14_linear.pth")
    return ref, head.eval(), reg.slot("aesthetic", CPU)


@pytest.mark.parametrize("name", ["bikes.mp4", "bigbuckbunny.mp4"])   # 2.35:1 and 16:9
def test_aesthetic_quality(name, clip_l14_pair, clip_frames, close, cut_loader):
    """vbench.aesthetic_quality.laion_aesthetic (decord frames, clip_transform(224), OpenAI CLIP, LAION head, /10)
    = EntityBench's aesthetic_quality (the clip_l14 slot: QuickGELU, short side 224 bicubic + centre crop)."""
    import vbench.aesthetic_quality as vaq
    ref_clip, head, aesthetic = clip_l14_pair
    n = 2
    cut_loader(vaq, n)
    frames, fps, path = clip_frames(name, n)
    ref, _ = vaq.laion_aesthetic(head, ref_clip, [str(path)], "cpu")
    close(ref, run_shot_metric("aesthetic_quality", aesthetic, frames, fps), f"{name} aesthetic")


# ------------------------------------------------------------------------------------------- MUSIQ

@pytest.fixture(scope="module")
def musiq_pair(tmp_path_factory):
    from pyiqa.archs.musiq_arch import MUSIQ
    torch.manual_seed(0)
    ref = MUSIQ(num_class=1, pretrained=False).eval()
    d = tmp_path_factory.mktemp("musiq")
    torch.save({"params": ref.state_dict()}, d / "musiq_spaq_ckpt-358bb6af.pth")
    reg = ModelRegistry(profile="paper", weights_dir=str(d / "w"))
    reg.import_weights("musiq", d / "musiq_spaq_ckpt-358bb6af.pth")
    return ref, reg.slot("musiq", CPU)


@pytest.mark.parametrize("name", ["bikes.mp4", "carphone_pristine.mp4"])   # 640 px (cut to 512) and 176 px
def test_imaging_quality(name, musiq_pair, clip_frames, close, cut_loader):
    """vbench.imaging_quality.technical_quality ('longer' mode: longer side cut to 512, pyiqa MUSIQ) = EntityBench's
    imaging_quality on MUSIQ's 0-100 scale (VBench's aggregate divides by 100; its per-video value does not)."""
    import vbench.imaging_quality as viq
    ref_model, musiq = musiq_pair
    n = 1
    cut_loader(viq, n)
    frames, fps, path = clip_frames(name, n)
    _, per_video = viq.technical_quality(ref_model, [str(path)], "cpu")
    close(per_video[0]["video_results"], run_shot_metric("imaging_quality", musiq, frames, fps),
          f"{name} imaging quality")


# ------------------------------------------------------------------------------------------- subject consistency

@pytest.mark.parametrize("name", ["bikes.mp4", "carphone_pristine.mp4"])
def test_subject_consistency_formulas(name, clip_frames, cut_loader):
    """vbench.subject_consistency.subject_consistency averages, per frame, the clipped cosine to the previous and to
    the first frame: EntityBench's subject_consistency (the authors run VBench) is that formula; the paper text's
    Eq. 2, the mean consecutive cosine, is the addition subject_consistency_eq2. Same per-frame features on both
    sides (a fixed pooling 'model' fed VBench's dino_transform). The model itself: test_subject_consistency_dino."""
    import torch.nn.functional as F
    import vbench.subject_consistency as vsc
    from vbench.utils import dino_transform
    from bench_assets.entitybench.metrics import subject_consistency, subject_consistency_eq2
    n = 6
    cut_loader(vsc, n)
    _, _, path = clip_frames(name, n)

    class Pool(torch.nn.Module):          # a fixed 'embedder': 4 x 4 average-pooled normalised pixels (48-d)
        def forward(self, x):
            return F.adaptive_avg_pool2d(x, 4).flatten(1)

    model = Pool()
    _, per_video = vsc.subject_consistency(model, [str(path)], "cpu", read_frame=False)
    with torch.no_grad():
        feats = model(dino_transform(224)(vsc.load_video(str(path)))).numpy()
    ref = per_video[0]["video_results"]
    assert subject_consistency(feats) == pytest.approx(ref, abs=1e-6)              # VBench's, the authors' code
    e = feats / np.linalg.norm(feats, axis=1, keepdims=True)
    eq2 = subject_consistency_eq2(feats)
    assert eq2 == pytest.approx(float(np.mean(np.sum(e[1:] * e[:-1], axis=1))), abs=1e-6)   # the paper text's
    print(f"\nparity {name} subject consistency formula: VBench {ref:.6f}, paper text's Eq. 2 {eq2:.6f} "
          f"(difference {eq2 - ref:+.2e})")
    assert abs(eq2 - ref) > 1e-4, "the clip cannot tell the two formulas apart"


@pytest.fixture(scope="module")
def dino_pair(tmp_path_factory):
    """facebookresearch/dino's dino_vitb16 (its forward as published, tests/support/dino_reference.py) with seeded
    random weights, saved as VBench's dino_vitbase16_pretrain.pth and imported into the project's vbench_dino slot
    through `bench weights import`'s code: one checkpoint, both sides. The position embedding is drawn at 0.5 (not
    DINO's zero init) so its bicubic resampling for non-square frames decides the features."""
    from tests.support.dino_reference import VisionTransformer
    torch.manual_seed(0)
    ref = VisionTransformer().eval()
    with torch.no_grad():
        ref.pos_embed.normal_(0.0, 0.5)
        ref.cls_token.normal_(0.0, 0.5)
    d = tmp_path_factory.mktemp("dino")
    torch.save(ref.state_dict(), d / "dino_vitbase16_pretrain.pth")
    reg = ModelRegistry(profile="paper", weights_dir=str(d / "w"))
    reg.import_weights("vbench_dino", d / "dino_vitbase16_pretrain.pth")
    return ref, reg.slot("vbench_dino", CPU)


@pytest.mark.parametrize("name,n", [("bikes.mp4", 3), ("carphone_pristine.mp4", 3)])   # 2.35:1 and 11:9
def test_subject_consistency_dino(name, n, dino_pair, clip_frames, close, cut_loader):
    """vbench.subject_consistency.subject_consistency (decord frames, dino_transform(224), DINO ViT-B/16 as torch.hub
    builds it) = EntityBench's subject_consistency through the vbench_dino slot (project decoding, timm blocks,
    DINO's position-embedding interpolation): the value the authors' evaluator reads per shot."""
    import vbench.subject_consistency as vsc
    ref_model, dino = dino_pair
    cut_loader(vsc, n)
    frames, fps, path = clip_frames(name, n)
    _, per_video = vsc.subject_consistency(ref_model, [str(path)], "cpu", read_frame=False)
    close(per_video[0]["video_results"], run_shot_metric("subject_consistency", dino, frames, fps),
          f"{name} subject consistency (VBench's DINO and formula)")
    # the frame features themselves, which the formula's clipping could hide
    with torch.no_grad():
        from vbench.utils import dino_transform
        ref_feats = torch.nn.functional.normalize(ref_model(dino_transform(224)(vsc.load_video(str(path)))), dim=-1)
    diff = float(np.max(np.abs(ref_feats.numpy() - dino.embed_frames(list(frames)))))
    print(f"parity {name} DINO frame features: max diff {diff:.3g}")
    assert diff <= BAR


@pytest.fixture(scope="module")
def dinov2_pair(tmp_path_factory):
    """One seeded random DINOv2 ViT-B/14 (the image_embedder slot's architecture; the paper's phi_DINO is
    DINOv2-base, VBench's is DINO ViT-B/16: the model is the paper's definition), saved as the slot's file and
    imported through `bench weights import`'s code. LayerScale is set to 1: timm's 1e-5 init makes a random
    DINOv2 return nearly the same CLS token for every image, and the test could not tell preprocessing apart."""
    from bench_resources.models.vision import dinov2_module
    torch.manual_seed(0)
    module = dinov2_module()
    with torch.no_grad():
        for name, p in module.named_parameters():
            if name.endswith(".gamma"):
                p.fill_(1.0)
    d = tmp_path_factory.mktemp("dinov2")
    torch.save(module.state_dict(), d / "dinov2_vitb14.pth")
    reg = ModelRegistry(profile="paper", weights_dir=str(d / "w"))
    reg.import_weights("image_embedder", d / "dinov2_vitb14.pth")
    return module.eval(), reg.slot("image_embedder", CPU)


@pytest.mark.parametrize("name,n", [("bikes.mp4", 2), ("carphone_pristine.mp4", 2)])   # 2.35:1 and 11:9
def test_subject_consistency_embeddings(name, n, dinov2_pair, clip_frames, close, cut_loader):
    """vbench.subject_consistency.subject_consistency (decord frames, dino_transform(224): short side 224 bilinear
    without antialias, no crop) run with the slot's module: the frame features it computes equal the paper
    profile's (image_embedder ``embed_frames``, project decoding) within the bar, and the addition
    subject_consistency_eq2 is Eq. 2 over VBench's features. The crop path (``embed``, frames squashed to
    224 x 224, the paper's crop rule) is asserted to differ: the comparison can tell the preprocessing apart."""
    import torch.nn.functional as F
    import vbench.subject_consistency as vsc
    from bench_resources.models.vision import _whole_patches
    module, embedder = dinov2_pair
    cut_loader(vsc, n)
    frames, fps, path = clip_frames(name, n)
    seen = []

    class Recorder(torch.nn.Module):    # VBench's loop calls model(image) per frame; the slot's module answers
        def forward(self, x):
            seen.append(F.normalize(_whole_patches(module, x), dim=-1)[0].numpy())
            return _whole_patches(module, x)

    vsc.subject_consistency(Recorder(), [str(path)], "cpu", read_frame=False)
    ref = np.stack(seen)
    ours = embedder.embed_frames(list(frames))
    assert ref.shape == ours.shape == (n, 768)
    diff = float(np.max(np.abs(ref - ours)))
    squash = float(np.max(np.abs(embedder.embed(list(frames[:1])) - ref[:1])))
    print(f"\nparity {name} DINOv2 frame embeddings (VBench's dino_transform): max diff {diff:.3g} over {n} x 768; "
          f"first frame squashed to 224 x 224: {squash:.3g}")
    assert diff <= BAR, f"{name}: frame embeddings differ from VBench's transform by {diff:.3g}"
    assert squash > 1e-3, "squashed frames should embed differently: the test could not tell them apart"
    pre = np.sum(ref[1:] * ref[:-1], axis=1)
    close(float(np.mean(pre)), run_shot_metric("subject_consistency_eq2", embedder, frames, fps),
          f"{name} subject consistency Eq. 2 (the paper text's addition) over VBench's features")
