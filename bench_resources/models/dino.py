"""DINO ViT-B/16 as VBench's subject_consistency runs it (``torch.hub.load('facebookresearch/dino:main',
'dino_vitb16')``, the checkpoint ``dino_vitbase16_pretrain.pth``): timm's ViT-B/16 blocks (the same parameter names
as DINO's ``VisionTransformer``, so the file loads strictly) with DINO's own forward: patch tokens of a frame of any
size, the position embedding resampled by DINO's ``interpolate_pos_encoding`` (bicubic with a scale factor of
(grid + 0.1) / 14, not to a target size as timm does), final norm, CLS token (768-d). The authors' EntityBench
evaluator (eval/evaluate_benchmark.py 3776439) scores Pillar 1's subject consistency with it, through VBench."""
from __future__ import annotations

import math

import torch  # this module loads only with the slot (specs.py imports it lazily)

from bench_resources.models.vision import IMAGENET_MEAN, IMAGENET_STD, TorchImageEmbedder, load_strict

PATCH = 16


def dino_pos_embed(pos_embed, n_patch: int, h: int, w: int):
    """DINO's ``interpolate_pos_encoding(x, w, h)`` (its ``w`` is the height): the grid unchanged when it fits and the
    frame is square, else bicubic with scale factors ((h // 16 + 0.1) / sqrt(N), (w // 16 + 0.1) / sqrt(N))."""
    import torch.nn.functional as F
    n = pos_embed.shape[1] - 1
    if n_patch == n and h == w:
        return pos_embed
    cls_pos, patch_pos = pos_embed[:, 0], pos_embed[:, 1:]
    dim, side = pos_embed.shape[-1], int(math.sqrt(n))
    h0, w0 = h // PATCH + 0.1, w // PATCH + 0.1   # DINO's + 0.1 against floating point error (its issue 8)
    patch_pos = F.interpolate(patch_pos.reshape(1, side, side, dim).permute(0, 3, 1, 2),
                              scale_factor=(h0 / math.sqrt(n), w0 / math.sqrt(n)), mode="bicubic")
    if (int(h0), int(w0)) != tuple(patch_pos.shape[-2:]):
        raise ValueError(f"DINO position grid {tuple(patch_pos.shape[-2:])} for a {h} x {w} frame")
    patch_pos = patch_pos.permute(0, 2, 3, 1).reshape(1, -1, dim)
    return torch.cat((cls_pos.unsqueeze(0), patch_pos), dim=1)


def dino_vitb16_module(state_dict_path=None, slot: str = "vbench_dino"):
    """timm's ``vit_base_patch16_224`` (qkv bias, LayerNorm eps 1e-6, no head) holding DINO's weights; ``forward``
    is DINO's (``DinoViT``)."""
    import timm
    vit = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=0)
    if state_dict_path is not None:
        sd = torch.load(state_dict_path, map_location="cpu", weights_only=True)
        sd = sd.get("state_dict", sd) if isinstance(sd, dict) else sd
        sd = {k.removeprefix("module.").removeprefix("backbone."): v for k, v in sd.items()
              if not k.startswith("head.")}   # a DINO training checkpoint's projection head is not the backbone
        load_strict(vit, sd, slot, state_dict_path)
    return DinoViT(vit)


class DinoViT(torch.nn.Module):
    """DINO's ``VisionTransformer.forward`` over timm's ViT-B/16 parts: CLS token after the final norm."""

    def __init__(self, vit):
        super().__init__()
        self.vit = vit

    def forward(self, x):
        v = self.vit
        b, _, h, w = x.shape
        t = v.patch_embed.proj(x).flatten(2).transpose(1, 2)   # DINO's PatchEmbed: conv stride 16, no size check
        t = torch.cat((v.cls_token.expand(b, -1, -1), t), dim=1)
        t = t + dino_pos_embed(v.pos_embed, t.shape[1] - 1, h, w)
        return v.norm(v.blocks(t))[:, 0]


def dino_embedder(module, device, dtype, batch_size) -> TorchImageEmbedder:
    """Whole frames as VBench feeds DINO (``dino_transform(224)``: short side 224 bilinear, no crop); crops (not
    used by the authors' Pillar 1) squashed as every embedder's ``embed``."""
    return TorchImageEmbedder(module, size=224, mean=IMAGENET_MEAN, std=IMAGENET_STD, features=lambda m, x: m(x),
                              device=device, dtype=dtype, batch_size=batch_size, frames="short_side",
                              slot="vbench_dino")
