"""ViStoryBench's paper-profile models: the real loading code run on randomly initialised weights of the same
architecture (no CSD, Inception-v3 or SigLIP weights ship offline)."""
import argparse

import numpy as np
import pytest
import torch

from bench_assets.vistorybench import metrics as M
from bench_resources.models import ModelRegistry
from bench_resources.models.story import AestheticV25, CsdStyleEncoder, ImageNetClassifier

RNG = np.random.default_rng(0)
IMAGES = [RNG.integers(0, 255, (96 + 8 * i, 128, 3), dtype=np.uint8) for i in range(3)]


def test_csd_checkpoint_layout_loads_and_matches_a_manual_forward(tmp_path):
    import open_clip
    torch.manual_seed(0)
    visual = open_clip.create_model("ViT-B-32", pretrained=None, force_quick_gelu=True).visual
    style = torch.randn(visual.proj.shape)  # CSD: [width, embed] style head replacing CLIP's projection
    sd = {f"module.backbone.{k}": v for k, v in visual.state_dict().items()}
    sd["module.last_layer_style"] = style
    sd["module.last_layer_content"] = torch.randn(visual.proj.shape)
    path = tmp_path / "checkpoint.pth"
    torch.save({"model_state_dict": sd, "args": argparse.Namespace(arch="vit_large")}, path)
    enc = CsdStyleEncoder.from_checkpoint(path, torch.device("cpu"), torch.float32, batch_size=2, arch="ViT-B-32")
    got = enc.embed(IMAGES)
    assert got.shape == (3, visual.proj.shape[1])
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # manual: ViStoryBench's CSD preprocessing (torchvision v2: the whole float image resized to 224 x 224 bicubic,
    # CLIP-normalised; tests/parity checks it against the official evaluator), the tower without its projection,
    # then the style head
    import torchvision.transforms.v2 as T
    from bench_resources.models.story import CLIP_MEAN, CLIP_STD
    visual.proj = None
    visual.eval()
    tf = T.Compose([T.Resize((224, 224), interpolation=T.InterpolationMode.BICUBIC), T.Normalize(CLIP_MEAN, CLIP_STD)])
    with torch.no_grad():
        x = torch.cat([tf(torch.from_numpy(im).permute(2, 0, 1)[None].float() / 255.0) for im in IMAGES])
        ref = torch.nn.functional.normalize(visual(x) @ style, dim=-1).numpy()
    assert np.allclose(got, ref, atol=1e-4)
    assert M.style_self(got) == pytest.approx(float(np.mean([got[0] @ got[1], got[0] @ got[2], got[1] @ got[2]])))
    torch.save({"state_dict": {"x": torch.zeros(1)}}, tmp_path / "other.pth")
    with pytest.raises(ValueError, match="not a CSD checkpoint"):
        CsdStyleEncoder.from_checkpoint(tmp_path / "other.pth", "cpu", torch.float32, 2, arch="ViT-B-32")


def test_inception_v3_loads_torchvision_layout_and_gives_distributions(tmp_path):
    from torchvision.models import inception_v3
    torch.manual_seed(0)
    path = tmp_path / "inception_v3_google-0cc3c7bd.pth"
    torch.save(inception_v3(weights=None, aux_logits=True, init_weights=True).state_dict(), path)
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "w"))
    reg.import_weights("inception", path)
    model = reg.slot("inception")
    assert isinstance(model, ImageNetClassifier) and model.size == 299
    p = model.probs(IMAGES)
    assert p.shape == (3, 1000) and np.allclose(p.sum(axis=1), 1.0, atol=1e-5)
    assert M.inception_score(p) >= 1.0 - 1e-9


def test_aesthetic_v25_slot_with_a_tiny_siglip(tmp_path):
    from transformers import SiglipVisionConfig, SiglipVisionModel
    torch.manual_seed(0)
    cfg = SiglipVisionConfig(hidden_size=64, intermediate_size=128, num_hidden_layers=1, num_attention_heads=2,
                             image_size=28, patch_size=14)
    slot_dir = tmp_path / "w" / "aesthetic_v25"
    SiglipVisionModel(cfg).save_pretrained(slot_dir, safe_serialization=True)
    head = AestheticV25.head_module(64)
    torch.save({f"layers.{k}": v for k, v in head.state_dict().items()}, slot_dir / "aesthetic_predictor_v2_5.pth")
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path / "w"))
    assert reg.status("aesthetic_v25").available
    model = reg.slot("aesthetic_v25")
    got = model.score(IMAGES)
    assert got.shape == (3,) and np.isfinite(got).all()
    # the same numbers from the pieces: the SigLIP image processor (transformers' PIL backend, what the reference
    # package ran under transformers 4; bicubic as the checkpoint's config), pooled output, L2-normalised, head
    vision = SiglipVisionModel.from_pretrained(slot_dir).eval()
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil
    proc = SiglipImageProcessorPil(size={"height": 28, "width": 28}, resample=3, image_mean=[0.5] * 3,
                                   image_std=[0.5] * 3)
    x = proc(images=list(IMAGES), return_tensors="pt")["pixel_values"].float()
    with torch.no_grad():
        pooled = vision(pixel_values=x).pooler_output
        ref = head.eval()(pooled / pooled.norm(dim=-1, keepdim=True)).squeeze(-1).numpy()
    assert np.allclose(got, ref, atol=1e-5)


def test_offline_slots_name_their_substitutes():
    reg = ModelRegistry(profile="offline")
    assert "EfficientNet-Lite0" in reg.status("character_embedder").checkpoint
    assert "not comparable" in reg.status("inception").checkpoint
    for slot in ("style_csd", "aesthetic_v25"):
        st = reg.status(slot)
        assert not st.available and "no offline substitute" in st.reason
    det = reg.slot("character_detector")
    assert {"person", "cat", "dog", "teddy bear"} <= det.CLASSES
