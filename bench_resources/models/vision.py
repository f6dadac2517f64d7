"""Image embedders (DINOv2, EfficientNet-Lite0), CLIP, and the heads on CLIP (LAION aesthetic), MUSIQ.

Every class can be built from an already-constructed torch module (``from_module``), so tests run the real
pre/post-processing on randomly initialised models of the paper architectures without downloads.
Images are RGB uint8 numpy arrays HxWx3.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional, Sequence

import cv2
import numpy as np

from bench_resources.models.base import batches, counted, runtime

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
LITE_MEAN, LITE_STD = (127.0 / 255, 127.0 / 255, 127.0 / 255), (128.0 / 255, 128.0 / 255, 128.0 / 255)


def resize_square(im: np.ndarray, size: int) -> np.ndarray:
    """Squash to size x size (the protocol resizes padded crops to 224x224); area filter when shrinking."""
    h, w = im.shape[:2]
    interp = cv2.INTER_AREA if min(h, w) > size else cv2.INTER_CUBIC
    return cv2.resize(np.ascontiguousarray(im), (size, size), interpolation=interp)


def to_tensor(images: Sequence[np.ndarray], size: int, mean, std, device, dtype):
    import torch
    arr = np.stack([resize_square(im, size) for im in images]).astype(np.float32) / 255.0
    arr = (arr - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return torch.from_numpy(arr.transpose(0, 3, 1, 2)).to(device=device, dtype=dtype)


def load_state_dict_file(path) -> dict:
    """A state dict from .safetensors or a torch file (weights_only); unwraps {'state_dict'|'model': ...}."""
    import torch
    path = Path(path)
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file
        return load_file(str(path))
    sd = torch.load(str(path), map_location="cpu", weights_only=True)
    for key in ("state_dict", "model"):
        if isinstance(sd, dict) and isinstance(sd.get(key), dict):
            sd = sd[key]
    if not isinstance(sd, dict):
        raise ValueError(f"{path} holds a {type(sd).__name__}, not a state dict")
    return {k[7:] if k.startswith("module.") else k: v for k, v in sd.items()}


class TorchImageEmbedder:
    """RGB uint8 images -> L2-normalised features; batched by batch_size, eval mode, under inference_mode."""

    size, mean, std, dim = 224, IMAGENET_MEAN, IMAGENET_STD, 0

    def __init__(self, module, device=None, *, features: Optional[Callable] = None):
        self.device, self.dtype, self.batch_size = runtime(device)
        self.module = module.eval().to(device=self.device, dtype=self.dtype)
        if features is not None:
            self.features = features

    @classmethod
    def from_module(cls, module, device=None):
        """Wrap an already-built module (tests: random init of the same architecture)."""
        return cls(module, device)

    def features(self, module, x):
        return module(x)

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(images), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                x = to_tensor(chunk, self.size, self.mean, self.std, self.device, self.dtype)
                f = self.features(self.module, x).float()
                out.append(torch.nn.functional.normalize(f, dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, self.dim), np.float32)


class DinoV2Embedder(TorchImageEmbedder):
    """DINOv2 ViT-B/14 (timm ``vit_base_patch14_dinov2``) at 224 px: CLS token after the final norm, 768-d."""

    ARCH = "vit_base_patch14_dinov2"
    HUB = "vit_base_patch14_dinov2.lvd142m"
    dim = 768

    def features(self, module, x):
        return module.forward_head(module.forward_features(x), pre_logits=True)

    @classmethod
    def build(cls, pretrained_hub: bool = False):
        import timm
        return timm.create_model(cls.HUB if pretrained_hub else cls.ARCH, pretrained=pretrained_hub,
                                 img_size=224, num_classes=0)

    @classmethod
    def load(cls, path: Optional[Path], device=None, hub: bool = False):
        """From a local file (timm or original facebookresearch key names, .pth or .safetensors; position
        embeddings resampled to the 16x16 grid of 224 px) or, with hub=True, timm's hub weights."""
        if path is None:
            return cls(cls.build(pretrained_hub=hub), device)
        from timm.models.vision_transformer import checkpoint_filter_fn
        model = cls.build()
        sd = checkpoint_filter_fn(load_state_dict_file(path), model)
        sd = {k: v for k, v in sd.items() if not k.startswith("head.")}
        missing, unexpected = model.load_state_dict(sd, strict=False)
        if missing or unexpected:
            raise ValueError(f"{path} is not a DINOv2 ViT-B/14 checkpoint: missing {missing[:5]}, "
                             f"unexpected {unexpected[:5]}")
        return cls(model, device)


class EfficientNetLite0Embedder(TorchImageEmbedder):
    """EfficientNet-Lite0 (ImageNet): global average pooled 1280-d features; Lite normalisation (x-127)/128."""

    mean, std = LITE_MEAN, LITE_STD
    dim = 1280

    def features(self, module, x):
        import torch
        return torch.flatten(module._avg_pooling(module.extract_features(x)), 1)

    @classmethod
    def load(cls, weights_path, device=None):
        from efficientnet_lite_pytorch import EfficientNet
        model = EfficientNet.from_name("efficientnet-lite0")
        model.load_state_dict(load_state_dict_file(weights_path))
        return cls(model, device)


class ClipModel:
    """open_clip CLIP: L2-normalised image and text embeddings and their cosine similarity.

    Images get the model's own eval preprocessing (resize shortest side, centre crop, CLIP mean/std).
    OpenAI weights need QuickGELU, so the architectures are the ``-quickgelu`` variants.
    """

    def __init__(self, model, tokenizer, device=None, preprocess: Optional[Callable] = None):
        import open_clip
        self.device, self.dtype, self.batch_size = runtime(device)
        self.model = model.eval().to(device=self.device, dtype=self.dtype)
        self.tokenizer = tokenizer
        if preprocess is None:
            cfg = open_clip.get_model_preprocess_cfg(model)
            preprocess = open_clip.image_transform(cfg.get("size", model.visual.image_size), is_train=False,
                                                   mean=cfg.get("mean"), std=cfg.get("std"),
                                                   interpolation=cfg.get("interpolation"),
                                                   resize_mode=cfg.get("resize_mode"))
        self.preprocess = preprocess

    @classmethod
    def from_module(cls, model, tokenizer, device=None):
        return cls(model, tokenizer, device)

    @classmethod
    def load(cls, arch: str, path: Optional[Path], device=None, hub_tag: Optional[str] = None):
        """From a local OpenAI TorchScript file (ViT-B-32.pt), an open_clip state dict (.bin/.pt) or
        .safetensors; or from the hub (``hub_tag``, e.g. 'openai') when path is None."""
        import open_clip
        import torch
        if path is None:
            model = open_clip.create_model(arch, pretrained=hub_tag)
        else:
            model = open_clip.create_model(arch, pretrained=None)
            try:
                sd = load_state_dict_file(path)
            except RuntimeError as e:
                if "TorchScript" not in str(e):
                    raise
                sd = torch.jit.load(str(path), map_location="cpu").state_dict()  # the OpenAI release format
            for key in ("input_resolution", "context_length", "vocab_size"):
                sd.pop(key, None)
            model.load_state_dict(sd, strict=True)
        return cls(model, open_clip.get_tokenizer(arch), device)

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        from PIL import Image
        out = []
        for chunk in batches(list(images), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                x = torch.stack([self.preprocess(Image.fromarray(np.ascontiguousarray(im))) for im in chunk])
                f = self.model.encode_image(x.to(device=self.device, dtype=self.dtype)).float()
                out.append(torch.nn.functional.normalize(f, dim=-1).cpu().numpy())
        return np.concatenate(out)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(texts), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                tok = self.tokenizer(list(chunk)).to(self.device)
                out.append(torch.nn.functional.normalize(self.model.encode_text(tok).float(), dim=-1).cpu().numpy())
        return np.concatenate(out)

    def similarity(self, images: Sequence[np.ndarray], texts: Sequence[str]) -> np.ndarray:
        """[n_images, n_texts] cosine (CLIPsim)."""
        return self.embed_images(images) @ self.embed_texts(texts).T


def aesthetic_head(state_dict: dict):
    """The LAION aesthetic head from its state dict: the linear v1 head (weight, bias: 768 -> 1,
    ``sa_0_4_vit_l_14_linear.pth``, VBench's) or the improved MLP (``layers.{0,2,4,6,7}``,
    ``sac+logos+ava1-l14-linearMSE.pth``: 768-1024-128-64-16-1, dropouts between, no activations)."""
    import torch.nn as nn

    class LayersHead(nn.Module):  # key names of the improved predictor: layers.N.weight
        def __init__(self, layers):
            super().__init__()
            self.layers = layers

        def forward(self, x):
            return self.layers(x)

    if set(state_dict) == {"weight", "bias"}:
        head = nn.Linear(state_dict["weight"].shape[1], state_dict["weight"].shape[0])
    else:
        idx = sorted({int(k.split(".")[1]) for k in state_dict if k.startswith("layers.")})
        if not idx or any(not k.startswith("layers.") for k in state_dict):
            raise ValueError(f"not a LAION aesthetic head state dict: keys {sorted(state_dict)[:6]}")
        mods = [nn.Identity() for _ in range(max(idx) + 1)]  # dropouts are identities at eval
        for i in idx:
            w = state_dict[f"layers.{i}.weight"]
            mods[i] = nn.Linear(w.shape[1], w.shape[0])
        head = LayersHead(nn.Sequential(*mods))
    head.load_state_dict(state_dict, strict=True)
    return head.eval()


class AestheticPredictor:
    """LAION aesthetic head on L2-normalised CLIP ViT-L/14 image embeddings; raw 0-10 scale."""

    def __init__(self, clip: ClipModel, head):
        self.clip, self.head = clip, head.eval().to(clip.device)

    @classmethod
    def load(cls, clip: ClipModel, head_path):
        return cls(clip, aesthetic_head(load_state_dict_file(head_path)))

    def score(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        emb = self.clip.embed_images(images)  # counted there
        out = []
        for chunk in batches(emb, self.clip.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                out.append(self.head(torch.from_numpy(chunk).to(self.clip.device)).reshape(-1).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, np.float32)


class MusiqScorer:
    """MUSIQ (KonIQ) as a TorchScript module: [1,3,H,W] RGB in [0,1] at native resolution -> score 0-100.

    pyiqa (which defines the MUSIQ architecture for its .pth state dicts) is not installed, so the weights
    must come as TorchScript exported where pyiqa is available."""

    def __init__(self, module, device=None):
        self.device, _, self.batch_size = runtime(device)
        self.module = module.eval().to(self.device)

    @classmethod
    def load(cls, path, device=None):
        import torch
        dev, _, _ = runtime(device)
        return cls(torch.jit.load(str(path), map_location=dev), device)

    def score(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        out = []
        for im in images:  # native resolution (multi-scale patches): one image per forward
            with torch.inference_mode(), counted(1):
                x = torch.from_numpy(np.ascontiguousarray(im).astype(np.float32).transpose(2, 0, 1)[None] / 255.0)
                out.append(float(self.module(x.to(self.device)).reshape(-1)[0]))
        return np.asarray(out, np.float32)


TorchScriptIQA = MusiqScorer  # earlier name

