"""Transformers checkpoints -> the files the production slots import (`bench weights import`).

The golden EntityBench run (scripts/parity_golden_entitybench.py) gives the authors' code seeded transformers
``Dinov2Model`` (facebook/dinov2-base's architecture) and ``CLIPModel`` (openai/clip-vit-base-patch32's). To run the
SAME weights through the project's production slots, they are written in the formats those slots load:
- ``image_embedder`` (``dinov2_vitb14.pth``): Meta's DINOv2 release format (``dinov2_vitb14_pretrain.pth``: the
  timm key names plus ``mask_token``; the 518 px 37 x 37 position grid as stored, ``dinov2_module`` resamples it);
- ``clip_b32`` (``ViT-B-32.pt``): OpenAI's CLIP state dict (the key names open_clip's ``CLIP`` uses; OpenAI's own
  file is a TorchScript archive of the same tensors, which open_clip's loader reads into this dict).
Every source tensor is used exactly once (asserted), so nothing is silently dropped or left at random.
"""
from __future__ import annotations

import re
from pathlib import Path

# transformers 5 names (q_proj / o_proj) and transformers 4 names (attention.attention.query / output.dense)
_DINO_LAYER = {
    "norm1": "norm1", "norm2": "norm2", "mlp.fc1": "mlp.fc1", "mlp.fc2": "mlp.fc2",
    "layer_scale1.lambda1": "ls1.gamma", "layer_scale2.lambda1": "ls2.gamma",
    "attention.o_proj": "attn.proj", "attention.output.dense": "attn.proj",
}
_QKV_DINO = {"q": ("attention.q_proj", "attention.attention.query"),
             "k": ("attention.k_proj", "attention.attention.key"),
             "v": ("attention.v_proj", "attention.attention.value")}


def _take(sd: dict, used: set, key: str):
    used.add(key)
    return sd[key]


def _first(sd: dict, names) -> str:
    for n in names:
        if f"{n}.weight" in sd:
            return n
    raise KeyError(f"none of {names} in the checkpoint")


def dinov2_state_dict(hf_sd: dict) -> dict:
    """transformers Dinov2Model state dict -> Meta's DINOv2 release format (what timm's vit_base_patch14_dinov2
    takes after dropping ``mask_token``)."""
    import torch
    used: set = set()
    out = {"cls_token": _take(hf_sd, used, "embeddings.cls_token"),
           "mask_token": _take(hf_sd, used, "embeddings.mask_token"),
           "pos_embed": _take(hf_sd, used, "embeddings.position_embeddings"),
           "patch_embed.proj.weight": _take(hf_sd, used, "embeddings.patch_embeddings.projection.weight"),
           "patch_embed.proj.bias": _take(hf_sd, used, "embeddings.patch_embeddings.projection.bias"),
           "norm.weight": _take(hf_sd, used, "layernorm.weight"),
           "norm.bias": _take(hf_sd, used, "layernorm.bias")}
    layers = sorted({int(m.group(1)) for k in hf_sd if (m := re.match(r"encoder\.layer\.(\d+)\.", k))})
    for i in layers:
        src, dst = f"encoder.layer.{i}.", f"blocks.{i}."
        for a, b in _DINO_LAYER.items():
            for suffix in ("weight", "bias") if not a.endswith("lambda1") else ("",):
                k = src + a + (f".{suffix}" if suffix else "")
                if k in hf_sd:
                    out[dst + b + (f".{suffix}" if suffix else "")] = _take(hf_sd, used, k)
        qkv = [src + _first({k[len(src):]: v for k, v in hf_sd.items() if k.startswith(src)}, _QKV_DINO[c])
               for c in "qkv"]
        for suffix in ("weight", "bias"):
            out[f"{dst}attn.qkv.{suffix}"] = torch.cat([_take(hf_sd, used, f"{n}.{suffix}") for n in qkv])
    left = set(hf_sd) - used
    assert not left, f"transformers DINOv2 tensors not converted: {sorted(left)[:5]}"
    return {k: v.detach().clone().contiguous() for k, v in out.items()}


def _clip_tower(hf_sd: dict, used: set, src: str, dst: str) -> dict:
    import torch
    out = {}
    layers = sorted({int(m.group(1)) for k in hf_sd if (m := re.match(re.escape(src) + r"(\d+)\.", k))})
    for i in layers:
        s, d = f"{src}{i}.", f"{dst}{i}."
        for suffix in ("weight", "bias"):
            out[f"{d}attn.in_proj_{suffix}"] = torch.cat([_take(hf_sd, used, f"{s}self_attn.{c}_proj.{suffix}")
                                                         for c in "qkv"])
            for a, b in (("self_attn.out_proj", "attn.out_proj"), ("layer_norm1", "ln_1"), ("layer_norm2", "ln_2"),
                         ("mlp.fc1", "mlp.c_fc"), ("mlp.fc2", "mlp.c_proj")):
                out[f"{d}{b}.{suffix}"] = _take(hf_sd, used, f"{s}{a}.{suffix}")
    return out


def clip_state_dict(hf_sd: dict) -> dict:
    """transformers CLIPModel state dict -> OpenAI's CLIP state dict (open_clip's ``CLIP`` key names; the two
    projections are stored as ``x @ P``, transformers' Linear weights transposed)."""
    used: set = set()

    def t(k):
        return _take(hf_sd, used, k)
    out = {"logit_scale": t("logit_scale"),
           "token_embedding.weight": t("text_model.embeddings.token_embedding.weight"),
           "positional_embedding": t("text_model.embeddings.position_embedding.weight"),
           "ln_final.weight": t("text_model.final_layer_norm.weight"),
           "ln_final.bias": t("text_model.final_layer_norm.bias"),
           "text_projection": t("text_projection.weight").T,
           "visual.class_embedding": t("vision_model.embeddings.class_embedding"),
           "visual.conv1.weight": t("vision_model.embeddings.patch_embedding.weight"),
           "visual.positional_embedding": t("vision_model.embeddings.position_embedding.weight"),
           "visual.ln_pre.weight": t("vision_model.pre_layrnorm.weight"),
           "visual.ln_pre.bias": t("vision_model.pre_layrnorm.bias"),
           "visual.ln_post.weight": t("vision_model.post_layernorm.weight"),
           "visual.ln_post.bias": t("vision_model.post_layernorm.bias"),
           "visual.proj": t("visual_projection.weight").T}
    out.update(_clip_tower(hf_sd, used, "text_model.encoder.layers.", "transformer.resblocks."))
    out.update(_clip_tower(hf_sd, used, "vision_model.encoder.layers.", "visual.transformer.resblocks."))
    left = {k for k in set(hf_sd) - used if not k.endswith("position_ids")}   # buffers, not weights
    assert not left, f"transformers CLIP tensors not converted: {sorted(left)[:5]}"
    return {k: v.detach().clone().contiguous() for k, v in out.items()}


def write_production_weights(checkpoints: dict, out_dir) -> dict[str, Path]:
    """{"dino": transformers dir, "clip": transformers dir} (tests.support.entitybench_golden.checkpoints) -> the
    files to import: {"image_embedder": .../dinov2_vitb14.pth, "clip_b32": .../ViT-B-32.pt}."""
    import torch
    from transformers import CLIPModel, Dinov2Model
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {"image_embedder": out_dir / "dinov2_vitb14.pth", "clip_b32": out_dir / "ViT-B-32.pt"}
    torch.save(dinov2_state_dict(Dinov2Model.from_pretrained(checkpoints["dino"]).state_dict()),
               files["image_embedder"])
    torch.save(clip_state_dict(CLIPModel.from_pretrained(checkpoints["clip"]).state_dict()), files["clip_b32"])
    return files
