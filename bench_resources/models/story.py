"""Models ViStoryBench needs beyond the shared slots: a 'character' detector, image features for
non-realistic characters, CSD style features, an ImageNet classifier for the Inception Score, and the
SigLIP aesthetic predictor v2.5. Each takes RGB uint8 images and runs batched without gradients."""
from __future__ import annotations

import argparse
from typing import Sequence

import cv2
import numpy as np
import supervision as sv

from bench_resources.models.base import batches, counted
from bench_resources.models.detection import ANIMATE, SsdCocoDetector, _empty
from bench_resources.models.vision import IMAGENET_MEAN, IMAGENET_STD, LITE_MEAN, LITE_STD, ClipModel, to_tensor

CLIP_MEAN, CLIP_STD = (0.48145466, 0.4578275, 0.40821073), (0.26862954, 0.26130258, 0.27577711)


class SsdCharacterDetector:
    """Offline stand-in for GroundingDINO prompted with "character": SSD-MobileNetV2 COCO boxes of the animate
    classes (person and ten animals) plus teddy bears, score >= 0.25 (the protocol's box threshold)."""

    CLASSES = frozenset(ANIMATE | {"teddy bear"})

    def __init__(self, ssd: SsdCocoDetector):
        self.ssd = ssd
        self.last_reason = None

    def detect(self, images: Sequence[np.ndarray], query: str = "character", kind=None) -> list[sv.Detections]:
        out = []
        for d in self.ssd.detect_all(images):
            out.append(d[np.isin(d.data["label"], list(self.CLASSES))] if len(d) else _empty())
        return out


class ClipImageFeatures:
    """CLIP image features, L2-normalised (ViStoryBench's non-realistic character encoder)."""

    def __init__(self, clip: ClipModel):
        self.clip = clip

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        return self.clip.embed_images(images)


def _center_crop_resize(im: np.ndarray, size: int) -> np.ndarray:
    """Resize the short side to ``size`` (bicubic), then centre-crop ``size`` x ``size``."""
    h, w = im.shape[:2]
    s = size / min(h, w)
    im = cv2.resize(im, (max(size, round(w * s)), max(size, round(h * s))), interpolation=cv2.INTER_CUBIC)
    h, w = im.shape[:2]
    y, x = (h - size) // 2, (w - size) // 2
    return im[y:y + size, x:x + size]


def csd_pixels(images: Sequence[np.ndarray], size: int, mean, std, device, dtype):
    """ViStoryBench's CSD preprocessing (``CSDEvaluator._preprocess`` / ``_encode``, the paper silent): the RGB
    image as float in [0, 1], the WHOLE image resized to ``size`` x ``size`` (torchvision v2 bicubic, antialiased
    as v2 does by default; no short-side resize, no crop, no rounding back to uint8), CLIP-normalised."""
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms.v2 import functional as F2
    out = [F2.resize(torch.from_numpy(np.ascontiguousarray(im)).permute(2, 0, 1)[None].float().div(255.0),
                     [size, size], interpolation=InterpolationMode.BICUBIC, antialias=True) for im in images]
    return F2.normalize(torch.cat(out), list(mean), list(std)).to(device=device, dtype=dtype)


class CsdStyleEncoder:
    """CSD (Somepalli et al. 2024): a CLIP ViT-L/14 vision tower whose final projection is replaced by a learned
    style projection; output L2-normalised. Loads the released ``checkpoint.pth`` (``model_state_dict`` with
    ``backbone.*``, ``last_layer_style``, ``last_layer_content``, keys optionally prefixed ``module.``).
    Images are preprocessed as ViStoryBench's evaluator does (``csd_pixels``)."""

    def __init__(self, visual, style_proj, device, dtype, batch_size: int, size: int = 224):
        import torch
        self.visual = visual.eval().to(device=device, dtype=dtype)
        self.style_proj = style_proj.to(device=device, dtype=dtype)
        self.device, self.dtype, self.batch_size, self.size = device, dtype, batch_size, size
        self._torch = torch

    @classmethod
    def from_checkpoint(cls, path, device, dtype, batch_size: int, arch: str = "ViT-L-14"):
        import open_clip
        import torch
        torch.serialization.add_safe_globals([argparse.Namespace])  # the release pickles its argparse args
        ckpt = torch.load(str(path), map_location="cpu", weights_only=True)
        sd = ckpt.get("model_state_dict", ckpt) if isinstance(ckpt, dict) else ckpt
        sd = {k.removeprefix("module."): v for k, v in sd.items()}
        if "last_layer_style" not in sd:
            raise ValueError(f"{path}: not a CSD checkpoint (no 'last_layer_style'; keys start {sorted(sd)[:3]})")
        visual = open_clip.create_model(arch, pretrained=None, force_quick_gelu=True).visual
        visual.proj = None  # CSD drops CLIP's projection: the style head reads the 1024-d pooled token
        backbone = {k[len("backbone."):]: v for k, v in sd.items() if k.startswith("backbone.") and k != "backbone.proj"}
        visual.load_state_dict(backbone, strict=True)
        return cls(visual, sd["last_layer_style"], device, dtype, batch_size, size=visual.image_size[0])

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        torch = self._torch
        out = []
        for chunk in batches(list(images), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                x = csd_pixels(chunk, self.size, CLIP_MEAN, CLIP_STD, self.device, self.dtype)
                f = self.visual(x) @ self.style_proj
                out.append(torch.nn.functional.normalize(f.float(), dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


class ImageNetClassifier:
    """Softmax over the 1000 ImageNet classes (the Inception Score's p(y|x))."""

    def __init__(self, module, *, size: int, mean, std, device, dtype, batch_size: int, center_crop: bool):
        self.module = module.eval().to(device=device, dtype=dtype)
        self.size, self.mean, self.std, self.center_crop = size, mean, std, center_crop
        self.device, self.dtype, self.batch_size = device, dtype, batch_size

    def probs(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(images), self.batch_size):
            if self.center_crop:
                chunk = [_center_crop_resize(im, self.size) for im in chunk]
            with torch.inference_mode(), counted(len(chunk)):
                logits = self.module(to_tensor(chunk, self.size, self.mean, self.std, self.device, self.dtype))
                logits = logits.logits if hasattr(logits, "logits") else logits
                out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 1000), np.float32)

    @classmethod
    def inception_v3(cls, path, device, dtype, batch_size: int):
        """torchvision Inception-v3 (IMAGENET1K_V1, ``inception_v3_google-0cc3c7bd.pth``), resize 299 + centre crop."""
        import torch
        from torchvision.models import inception_v3
        model = inception_v3(weights=None, aux_logits=True, init_weights=False)
        if path is not None:
            model.load_state_dict(torch.load(str(path), map_location="cpu", weights_only=True))
        return cls(model, size=299, mean=IMAGENET_MEAN, std=IMAGENET_STD, device=device, dtype=dtype,
                   batch_size=batch_size, center_crop=True)

    @classmethod
    def efficientnet_lite0(cls, path, device, dtype, batch_size: int):
        import torch
        from efficientnet_lite_pytorch import EfficientNet
        model = EfficientNet.from_name("efficientnet-lite0")
        model.load_state_dict(torch.load(str(path), map_location="cpu", weights_only=True))
        return cls(model, size=224, mean=LITE_MEAN, std=LITE_STD, device=device, dtype=dtype,
                   batch_size=batch_size, center_crop=True)


def resize_pil(image: np.ndarray, size: int) -> np.ndarray:
    """RGB uint8 -> size x size uint8 through PIL's bicubic (antialiased when shrinking), as SigLIP's image
    processor resizes (``resample`` 3 in its config); ``to_tensor`` then leaves the size as it is."""
    from PIL import Image
    return np.asarray(Image.fromarray(np.ascontiguousarray(image)).resize((size, size), Image.BICUBIC,
                                                                           reducing_gap=None))


class AestheticV25:
    """Aesthetic predictor v2.5: SigLIP so400m-patch14-384 pooled features, L2-normalised, then an MLP head
    (1152-1024-128-64-16-1); scores about 1-10. Preprocessing is the checkpoint's own SigLIP image processor
    (its preprocessor config: PIL bicubic resize to 384 x 384, rescale 1/255, normalise mean 0.5 std 0.5), as the
    aesthetic-predictor-v2-5 package runs it under transformers 4 (PIL; ``resize_pil``). OpenCV's bicubic, used
    before, does not antialias: a 1280 px frame cut to 384 px read other pixels."""

    def __init__(self, vision_model, head, device, dtype, batch_size: int, size: int):
        self.vision = vision_model.eval().to(device=device, dtype=dtype)
        self.head = head.eval().to(device=device, dtype=dtype)
        self.device, self.dtype, self.batch_size, self.size = device, dtype, batch_size, size

    @staticmethod
    def head_module(dim: int):
        import torch.nn as nn
        return nn.Sequential(nn.Linear(dim, 1024), nn.Dropout(0.5), nn.Linear(1024, 128), nn.Dropout(0.5),
                             nn.Linear(128, 64), nn.Dropout(0.5), nn.Linear(64, 16), nn.Dropout(0.2), nn.Linear(16, 1))

    @classmethod
    def load(cls, siglip_dir, head_path, device, dtype, batch_size: int):
        import torch
        from transformers import SiglipVisionModel
        vision = SiglipVisionModel.from_pretrained(str(siglip_dir))
        head = cls.head_module(vision.config.hidden_size)
        sd = torch.load(str(head_path), map_location="cpu", weights_only=True)
        head.load_state_dict({k.removeprefix("layers."): v for k, v in sd.items() if k.startswith("layers.")} or sd)
        return cls(vision, head, device, dtype, batch_size, vision.config.image_size)

    def score(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(images), self.batch_size):
            resized = [resize_pil(im, self.size) for im in chunk]
            with torch.inference_mode(), counted(len(chunk)):
                x = to_tensor(resized, self.size, (0.5, 0.5, 0.5), (0.5, 0.5, 0.5), self.device, self.dtype)
                pooled = self.vision(pixel_values=x).pooler_output
                pooled = pooled / pooled.norm(dim=-1, keepdim=True)
                out.append(self.head(pooled).squeeze(-1).float().cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0, np.float32)
