"""A model slot that returns NaN or inf fails as the evaluator, with the reason, instead of becoming a number
(issue 38: BENCH_DTYPE's lower precisions can overflow on a GPU). Before, AMT-S's NaN midpoints were cast to uint8
and scored as a frame, RAFT's NaN flows read as 'static', and NaN features as a similarity. Real architectures with
random weights; the NaN comes from the network's own arithmetic (AMT-S under 128 px) or from a poisoned weight."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from bench_assets.entitybench import metrics as M  # noqa: E402
from bench_resources.models.base import NonFiniteOutput, require_finite

CPU = torch.device("cpu")


def shot(n: int, w: int, h: int, seed: int) -> np.ndarray:
    """A smooth texture panning 2 px per frame (real-looking flow, different per seed)."""
    import cv2
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 256, (h // 8 + 2, w // 8 + 2 + n, 3), dtype=np.uint8)
    tex = cv2.resize(base, (base.shape[1] * 8, base.shape[0] * 8), interpolation=cv2.INTER_CUBIC)
    return np.stack([tex[:h, 2 * t:2 * t + w] for t in range(n)])


def test_require_finite_counts_and_names():
    x = torch.tensor([1.0, float("nan"), float("inf"), 2.0])
    with pytest.raises(NonFiniteOutput, match=r"slot 'flow' returned 2 non-finite value\(s\) of 4 in its flows "
                                              r"\(float32\): a hint; the evaluator's failure"):
        require_finite(x, "flow", "flows", "a hint")
    with pytest.raises(NonFiniteOutput, match="returned 1 non-finite value.* of 3 in its scores \\(float64\\)"):
        require_finite(np.array([0.5, -np.inf, 1.0]), "musiq", "scores")
    ok = torch.tensor([1.0, -3.0])
    assert require_finite(ok, "x", "y") is ok


def amt():
    from bench_resources.models.amt import AmtInterpolator, amt_s_module
    torch.manual_seed(0)
    return AmtInterpolator(amt_s_module(), CPU, 4)


def test_amt_under_128_px_is_refused_with_its_cause_and_scores_at_128():
    m = amt()
    small = shot(3, 128, 96, seed=1)
    with pytest.raises(NonFiniteOutput, match="interpolator.*midpoint frames.*needs at least 128 px per side"):
        m.midpoints([(small[0], small[2])])
    big = shot(3, 128, 128, seed=2)
    mids = m.midpoints([(big[0], big[2])])
    assert len(mids) == 1 and mids[0].shape == (128, 128, 3) and mids[0].dtype == np.uint8
    # through Pillar 1: motion smoothness is None with the reason, the shot's other metrics go on
    specs = {s.metric_id: s for s in M.PILLAR1}
    frames = shot(5, 128, 96, seed=3)
    out = M.stream_pillar1([frames], 16.0, 5, {specs["motion_smoothness"]: m, specs["temporal_flickering"]: None})
    value, err = out["motion_smoothness"]
    assert value is None and "NonFiniteOutput" in err and "128 px" in err
    assert out["temporal_flickering"][0] is not None and out["temporal_flickering"][1] is None


def test_raft_nan_flows_fail_instead_of_reading_static():
    from torchvision.models.optical_flow import raft_small

    from bench_resources.models.flow import RaftFlow
    torch.manual_seed(0)
    module = raft_small(weights=None)
    frames = shot(3, 128, 128, seed=4)
    good = RaftFlow(module, CPU, 2, iters=2).flow([(frames[0], frames[2])])
    assert good[0].shape == (128, 128, 2) and np.isfinite(good[0]).all()
    with torch.no_grad():
        module.feature_encoder.convnormrelu[0].bias.fill_(float("nan"))
    bad = RaftFlow(module, CPU, 2, iters=2)
    with pytest.raises(NonFiniteOutput, match="slot 'flow'.*in its flows"):
        bad.flow([(frames[0], frames[2])])
    spec = next(s for s in M.PILLAR1 if s.metric_id == "dynamic_degree")
    value, err = M.stream_pillar1([shot(5, 128, 128, seed=5)], 16.0, 5, {spec: bad})["dynamic_degree"]
    assert value is None and "NonFiniteOutput" in err


def test_embedder_nan_features_fail_with_the_slot_named():
    pytest.importorskip("efficientnet_lite_pytorch")
    from efficientnet_lite_pytorch import EfficientNet

    from bench_resources.models import vision
    torch.manual_seed(0)
    m = EfficientNet.from_name("efficientnet-lite0").eval()
    frames = list(shot(4, 96, 64, seed=6))
    emb = vision.lite0_embedder(m, CPU, torch.float32, 2, lean=True)
    assert np.isfinite(emb.embed_frames(frames)).all()
    m._bn1.running_var[3] = -1.0   # sqrt of a negative variance: NaN in one feature of every frame (the first batch of 2 fails)
    with pytest.raises(NonFiniteOutput, match=r"slot .image_embedder. returned 2 non-finite value\(s\) of 2560 in its features"):
        emb.embed_frames(frames)
    spec = next(s for s in M.PILLAR1 if s.metric_id == "subject_consistency")
    value, err = M.stream_pillar1([np.stack(frames)], 16.0, 4, {spec: emb})["subject_consistency"]
    assert value is None and "image_embedder" in err


def test_musiq_and_clip_heads_fail_on_nan():
    from bench_resources.models.musiq import MusiqIQA, musiq_module
    torch.manual_seed(0)
    module = musiq_module()
    img = shot(1, 96, 64, seed=7)[0]
    assert np.isfinite(MusiqIQA(module, CPU, batch_size=2).score([img])).all()
    with torch.no_grad():
        next(p for p in module.parameters() if p.dim() == 1).fill_(float("inf"))
    with pytest.raises(NonFiniteOutput, match="slot 'imaging_quality'"):
        MusiqIQA(module, CPU, batch_size=2).score([img])

    import open_clip

    from bench_resources.models import vision
    clip_model = open_clip.create_model("ViT-B-32", pretrained=None)
    clip = vision.ClipModel(clip_model, open_clip.get_tokenizer("ViT-B-32"), size=224,
                            mean=(0.48145466, 0.4578275, 0.40821073), std=(0.26862954, 0.26130258, 0.27577711),
                            device=CPU, dtype=torch.float32, batch_size=2, resize="shortest")
    assert np.isfinite(clip.embed_texts(["a red car"])).all()
    with torch.no_grad():
        clip_model.visual.ln_post.bias.fill_(float("nan"))
        clip_model.ln_final.bias.fill_(float("nan"))
    with pytest.raises(NonFiniteOutput, match="slot 'clip' .* image embeddings"):
        clip.embed_images([img])
    with pytest.raises(NonFiniteOutput, match="slot 'clip' .* text embeddings"):
        clip.embed_texts(["a red car"])
