"""Preprocessing of the ViStoryBench / LoCoT2V slots whose reference runs a Hugging Face image processor, against
transformers' own processor classes (the PIL backend: what transformers 4, which the reference code ran, does),
with the checkpoint's config values, on real frames (package footage) and odd-sized images. No model: the pixels
the model would see are compared at the parity bar, and the preprocessing the slot ran before is shown to differ.

- ``character_embedder`` (CIDS, copy-paste): openai/clip-vit-large-patch14's ``CLIPImageProcessor`` (shortest edge
  224, resample 3 = bicubic, centre crop 224, CLIP mean / std), as ViStoryBench's CIDSEvaluator calls it.
- ``aesthetic_v25`` (ViStoryBench aesthetics, LoCoT2V AQ): google/siglip-so400m-patch14-384's
  ``SiglipImageProcessor`` (384 x 384, resample 3, mean / std 0.5), as the aesthetic-predictor-v2-5 package loads it.
"""
from __future__ import annotations

import numpy as np
import pytest
import torch

BAR = 1e-4
CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)


@pytest.fixture(scope="module")
def images():
    """Frame 0 of a 2.35:1, an 11:9 and a 4:3 clip (real footage), and two small odd-sized noise images (upscaled,
    odd crop offsets)."""
    from bench_assets.core.footage import require_footage
    from bench_assets.core.media import VideoSource
    out = []
    for name in ("bikes.mp4", "carphone_pristine.mp4", "vtest.avi"):
        src = VideoSource(require_footage(name)[name])
        req = src.take([0])
        src.run()
        out.append(req.frames[0])
    rng = np.random.default_rng(24)
    return out + [rng.integers(0, 256, (97, 61, 3), dtype=np.uint8), rng.integers(0, 256, (61, 225, 3), dtype=np.uint8)]


def test_character_embedder_pixels_are_the_clip_processors(images):
    from transformers.models.clip.image_processing_pil_clip import CLIPImageProcessorPil
    from bench_resources.models.vision import ClipModel, shortest_crop_tensor
    proc = CLIPImageProcessorPil(size={"shortest_edge": 224}, crop_size={"height": 224, "width": 224}, resample=3,
                                 image_mean=list(CLIP_MEAN), image_std=list(CLIP_STD))
    model = ClipModel(torch.nn.Identity(), None, size=224, mean=CLIP_MEAN, std=CLIP_STD, device="cpu",
                      dtype=torch.float32, batch_size=2, resize="processor")
    for im in images:
        ref = proc(images=[im], return_tensors="pt")["pixel_values"].float()
        diff = float((model.pixels([im]) - ref).abs().max())
        old = float((shortest_crop_tensor([im], 224, CLIP_MEAN, CLIP_STD, "cpu", torch.float32, True) - ref)
                    .abs().max())
        print(f"\nparity character_embedder pixels {im.shape}: max diff {diff:.3g} (torchvision path before: "
              f"{old:.3g})")
        assert diff <= BAR, im.shape
        assert old > 100 * BAR, im.shape     # the torchvision path is not the processor's


def test_aesthetic_v25_pixels_are_the_siglip_processors(images):
    import cv2
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil
    from bench_resources.models.story import resize_pil
    from bench_resources.models.vision import to_tensor
    proc = SiglipImageProcessorPil(size={"height": 384, "width": 384}, resample=3, image_mean=[0.5] * 3,
                                   image_std=[0.5] * 3)
    for im in images:
        ref = proc(images=[im], return_tensors="pt")["pixel_values"].float()
        got = to_tensor([resize_pil(im, 384)], 384, (0.5,) * 3, (0.5,) * 3, "cpu", torch.float32)
        old = to_tensor([cv2.resize(im, (384, 384), interpolation=cv2.INTER_CUBIC)], 384, (0.5,) * 3, (0.5,) * 3,
                        "cpu", torch.float32)
        diff, before = float((got - ref).abs().max()), float((old - ref).abs().max())
        print(f"\nparity aesthetic_v25 pixels {im.shape}: max diff {diff:.3g} (OpenCV bicubic before: {before:.3g})")
        assert diff <= BAR, im.shape
        if max(im.shape[:2]) > 384:              # shrinking: OpenCV's bicubic does not antialias
            assert before > 100 * BAR, im.shape


def test_dinov2_crop_pixels_are_the_authors_processors(images):
    """EntityBench's authors embed crops and boundary frames through facebook/dinov2-base's AutoImageProcessor
    (BitImageProcessor: shortest_edge 256, resample 3, centre crop 224, ImageNet); the paper image_embedder's
    ``embed`` feeds those pixels (the paper text's squash to 224 x 224 is asserted to differ)."""
    from transformers.models.bit.image_processing_pil_bit import BitImageProcessorPil
    from bench_resources.models.vision import IMAGENET_MEAN, IMAGENET_STD, clip_processor_tensor, to_tensor
    proc = BitImageProcessorPil(size={"shortest_edge": 256}, crop_size={"height": 224, "width": 224}, resample=3,
                                image_mean=list(IMAGENET_MEAN), image_std=list(IMAGENET_STD))
    for im in images:
        ref = proc(images=[im], return_tensors="pt")["pixel_values"].float()
        got = clip_processor_tensor([im], 256, IMAGENET_MEAN, IMAGENET_STD, "cpu", torch.float32, crop=224)
        diff = float((got - ref).abs().max())
        squash = float((to_tensor([im], 224, IMAGENET_MEAN, IMAGENET_STD, "cpu", torch.float32) - ref).abs().max())
        print(f"\nparity image_embedder crop pixels {im.shape}: max diff {diff:.3g} (squash: {squash:.3g})")
        assert diff <= BAR, im.shape
        assert squash > 100 * BAR, im.shape


def test_the_paper_image_embedder_feeds_processor_crops():
    import numpy as np
    from bench_resources.models.vision import dinov2_embedder

    class Flat(torch.nn.Module):       # records what the embedder feeds the network
        seen = []

        def forward(self, x):
            self.seen.append(x)
            return x.flatten(1)[:, :8]

    emb = dinov2_embedder(Flat(), "cpu", torch.float32, 2)
    emb.features = lambda m, x: m(x)
    emb.embed([np.zeros((90, 300, 3), np.uint8)])
    assert tuple(Flat.seen[-1].shape) == (1, 3, 224, 224) and emb.crops == "processor" and emb.crop_resize == 256


@pytest.mark.parametrize("hw", [(224, 224), (224, 392)])
def test_dinov2_position_grid_is_resampled_as_transformers_does(tmp_path, hw):
    """A hub DINOv2 checkpoint (518 px: a 37 x 37 position grid) in the image_embedder: the position embedding it
    adds to a 224 x 224 crop (16 x 16 patches) and to a 16:9 whole frame at VBench's short side 224 (16 x 28) equals
    transformers' Dinov2Embeddings.interpolate_pos_encoding for that input (what the authors' facebook/dinov2-base
    computes at run time); timm's antialiased resampling is asserted to differ. Old (36e): the grid was resampled
    37 -> 16 at load and again 16 -> 16 x 28 per frame by timm (the 16:9 case failed)."""
    from timm.layers import resample_abs_pos_embed
    from transformers import Dinov2Config
    from transformers.models.dinov2.modeling_dinov2 import Dinov2Embeddings
    from bench_resources.models.vision import dinov2_module
    gh, gw = hw[0] // 14, hw[1] // 14
    torch.manual_seed(0)
    sd = {k: v.clone() for k, v in dinov2_module().state_dict().items()}
    sd["pos_embed"] = torch.randn(1, 37 * 37 + 1, 768)
    torch.save(sd, tmp_path / "dinov2_vitb14.pth")
    m = dinov2_module(tmp_path / "dinov2_vitb14.pth")
    with torch.no_grad():   # what the module adds to zero patch tokens, its CLS token taken off
        ours = m._pos_embed(torch.zeros(1, gh, gw, 768))
        ours[:, :1] -= m.cls_token
    emb = Dinov2Embeddings(Dinov2Config(hidden_size=768, patch_size=14, image_size=518))
    with torch.no_grad():
        emb.position_embeddings.copy_(sd["pos_embed"])
        ref = emb.interpolate_pos_encoding(torch.zeros(1, gh * gw + 1, 768), *hw)
    diff = float((ours - ref).abs().max())
    timm_way = float((resample_abs_pos_embed(sd["pos_embed"], (gh, gw), num_prefix_tokens=1) - ref).abs().max())
    print(f"\nparity DINOv2 position grid 37 -> {gh} x {gw}: max diff {diff:.3g} (timm's antialiased resampling "
          f"{timm_way:.3g})")
    assert diff <= 1e-5 and timm_way > 100 * BAR
