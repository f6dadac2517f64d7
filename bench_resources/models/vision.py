"""Image embedders (DINOv2, EfficientNet-Lite0), CLIP, and the heads on top of CLIP."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Sequence

import cv2
import numpy as np

from bench_resources.models.base import batches, counted, require_finite

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
LITE_MEAN, LITE_STD = (0.498, 0.498, 0.498), (0.502, 0.502, 0.502)  # EfficientNet-Lite: (x - 127) / 128


def shortest_crop_tensor(images: Sequence[np.ndarray], size: int, mean, std, device, dtype,
                         antialias: bool = False):
    """The CLIP checkpoints' own preprocessing as VBench writes it (``vbench.utils.clip_transform``): uint8 frames,
    short side resized to ``size`` (bicubic, torchvision on the uint8 tensor, so rounded back to uint8), centre
    crop, / 255, normalised. Squashing a 2.35:1 frame to a square instead moved the aesthetic score by 5.1e-3,
    the whole spread between clips. ``antialias``: the PIL pipeline OpenAI's own ``preprocess`` runs (crops much
    larger than ``size``); VBench's frames run without it."""
    import torch
    from torchvision.transforms import InterpolationMode
    from torchvision.transforms import functional as TF
    out = []
    for im in images:  # frames of different sizes (crops) resize one by one
        x = torch.from_numpy(np.ascontiguousarray(im)).permute(2, 0, 1)[None]
        x = TF.resize(x, size, interpolation=InterpolationMode.BICUBIC, antialias=antialias)
        out.append(TF.center_crop(x, size))
    x = torch.cat(out).float().div(255.0)
    x = TF.normalize(x, mean, std)
    return x.to(device=device, dtype=dtype)


def clip_processor_tensor(images: Sequence[np.ndarray], size: int, mean, std, device, dtype, crop: int = 0):
    """The CLIP checkpoint's Hugging Face processor (``CLIPImageProcessor``: shortest_edge ``size``, resample 3,
    crop ``size``) as ViStoryBench's CIDS runs it (transformers 4, PIL): the short side to ``size`` and the long side
    to int(size * long / short), PIL bicubic (antialiased), back to uint8; centre crop with the top-left corner at
    ((h - size) // 2, (w - size) // 2); / 255; normalised. torchvision's antialiased bicubic and its rounded crop
    corner differ from it by about one grey level (1e-2 to 3e-1 after normalisation). ``crop`` (default ``size``):
    a centre crop other than the resize, as DINOv2-base's processor (BitImageProcessor: short side 256, crop 224)."""
    import torch
    from PIL import Image
    out = []
    crop = crop or size
    for im in images:
        h, w = im.shape[:2]
        short, long = min(h, w), max(h, w)
        nh, nw = (size, int(size * long / short)) if h <= w else (int(size * long / short), size)
        x = np.asarray(Image.fromarray(np.ascontiguousarray(im)).resize((nw, nh), Image.BICUBIC, reducing_gap=None))
        top, left = (nh - crop) // 2, (nw - crop) // 2
        out.append(x[top:top + crop, left:left + crop])
    arr = (np.stack(out).astype(np.float32) * np.float32(1 / 255) - np.asarray(mean, np.float32)) \
        / np.asarray(std, np.float32)
    return torch.from_numpy(arr.transpose(0, 3, 1, 2).copy()).to(device=device, dtype=dtype)


def short_side_tensor(images: Sequence[np.ndarray], size: int, mean, std, device, dtype):
    """VBench's ``dino_transform(size)`` (``vbench.utils``, what its subject_consistency feeds DINO): uint8 frames,
    short side resized to ``size`` (torchvision bilinear on the uint8 tensor without antialias, so rounded back to
    uint8), NO crop (a 16:9 frame stays 224 x 398), / 255, ImageNet-normalised. All ``images`` must share one size
    (one shot's frames). Squashing to 224 x 224 instead moved a frame's embedding by 1 - cos = 3.7e-3 to 7.5e-3,
    more than consecutive frames differ."""
    import torch
    from torchvision.transforms import functional as TF
    x = torch.from_numpy(np.ascontiguousarray(np.stack(images))).permute(0, 3, 1, 2)
    x = TF.resize(x, size, antialias=False)       # torchvision's default interpolation: bilinear
    x = TF.normalize(x.float().div(255.0), mean, std)
    return x.to(device=device, dtype=dtype)


def to_tensor(images: Sequence[np.ndarray], size: int, mean, std, device, dtype):
    import torch
    arr = np.stack([cv2.resize(im, (size, size), interpolation=cv2.INTER_AREA if im.shape[0] > size else
                               cv2.INTER_LINEAR) for im in images]).astype(np.float32) / 255.0
    arr = (arr - np.asarray(mean, np.float32)) / np.asarray(std, np.float32)
    return torch.from_numpy(arr.transpose(0, 3, 1, 2)).to(device=device, dtype=dtype)


@contextmanager
def cpu_threads(device, n: int):
    """torch's intra-op thread count set to ``n`` for the block when ``device`` is a CPU (restored after); a no-op
    for n = 0 or another device. The count can move a value by ~1e-7 (oneDNN splits some sums by thread), so a
    pinned count also makes values independent of the machine's cores (tests/test_offline_lean_embedder.py)."""
    import torch
    if not n or str(device).split(":")[0] != "cpu" or torch.get_num_threads() == n:
        yield
        return
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class TorchImageEmbedder:
    """RGB uint8 images -> L2-normalised features, batched, without gradients.

    ``embed`` (crops): ``crops='squash'``, the whole image squashed to ``size`` x ``size`` (EntityBench's paper
    text: crops "resized to 224 x 224 for embedding"; the offline substitute); ``crops='processor'``, the
    checkpoint's Hugging Face processor steps (short side ``crop_resize``, PIL bicubic, centre crop ``size``), as
    the EntityBench authors' code embeds crops and boundary frames (AutoImageProcessor of facebook/dinov2-base).
    ``embed_frames`` (whole video frames, subject consistency): ``frames='short_side'``
    is VBench's ``dino_transform`` (``short_side_tensor``; the paper is silent on frame preprocessing, so the
    reference's); ``frames='squash'`` treats frames as crops (the offline substitute, whose values stay as they
    were)."""

    def __init__(self, module, *, size: int, mean, std, features: Callable, device, dtype, batch_size: int,
                 frames: str = "squash", crops: str = "squash", crop_resize: int = 0, cpu_threads: int = 0,
                 slot: str = "image_embedder"):
        if frames not in ("squash", "short_side"):
            raise ValueError(f"frames must be 'squash' or 'short_side', not {frames!r}")
        if crops not in ("squash", "processor"):
            raise ValueError(f"crops must be 'squash' or 'processor', not {crops!r}")
        self.crops, self.crop_resize = crops, crop_resize or size
        self.module = module.eval().to(device=device, dtype=dtype)
        self.size, self.mean, self.std, self.features = size, mean, std, features
        self.device, self.dtype, self.batch_size, self.frames = device, dtype, batch_size, frames
        # ``cpu_threads``: torch's intra-op threads for this module's forwards on a CPU device (0: torch's own)
        self.cpu_threads = cpu_threads
        self.slot = slot   # named in a non-finite output's reason

    def _run(self, images: Sequence[np.ndarray], pixels: Callable) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(images), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)), cpu_threads(self.device, self.cpu_threads):
                f = require_finite(self.features(self.module, pixels(chunk)).float(), self.slot, "features")
                out.append(torch.nn.functional.normalize(f, dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        if self.crops == "processor":
            return self._run(images, lambda c: clip_processor_tensor(c, self.crop_resize, self.mean, self.std,
                                                                     self.device, self.dtype, crop=self.size))
        return self._run(images, lambda c: to_tensor(c, self.size, self.mean, self.std, self.device, self.dtype))

    def embed_frames(self, frames: Sequence[np.ndarray]) -> np.ndarray:
        if self.frames == "squash":
            return self.embed(frames)
        frames = list(frames)
        out, a = [], 0
        while a < len(frames):              # runs of one frame size (a shot's frames all share one)
            b = a + 1
            while b < len(frames) and frames[b].shape == frames[a].shape:
                b += 1
            out.append(self._run(frames[a:b], lambda c: short_side_tensor(c, self.size, self.mean, self.std,
                                                                          self.device, self.dtype)))
            a = b
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


class CheckpointMismatch(ValueError):
    """A checkpoint whose tensors do not fit the architecture (it would load as random weights)."""


def load_strict(model, state_dict: dict, slot: str, path) -> None:
    """load_state_dict(strict=True), failing with the slot, the file and the first mismatched keys."""
    missing, unexpected = [], []
    own = model.state_dict()
    missing = [k for k in own if k not in state_dict]
    unexpected = [k for k in state_dict if k not in own]
    shape = [k for k in own if k in state_dict and tuple(own[k].shape) != tuple(state_dict[k].shape)]
    if missing or unexpected or shape:
        raise CheckpointMismatch(
            f"model slot '{slot}': {path} does not match the architecture ({len(missing)} missing keys, e.g. "
            f"{missing[:3]}; {len(unexpected)} unexpected, e.g. {unexpected[:3]}; {len(shape)} of another shape, "
            f"e.g. {shape[:3]}); refusing to run with random weights")
    model.load_state_dict(state_dict, strict=True)


def _pos_embed_as_transformers(self, x):
    """timm ViT ``_pos_embed`` (CLS token, no registers) with the stored grid interpolated to the input's patch grid
    as transformers' Dinov2Embeddings.interpolate_pos_encoding does at run time (what the EntityBench authors'
    facebook/dinov2-base computes): bicubic straight from the checkpoint's grid (37 x 37 for Meta's 518 px
    release) to the target size, float32, align_corners False, no antialias; the stored grid as is when the input
    has it and is square. timm would antialias, and a grid resampled once at load (37 -> 16) and again per input
    (16 -> 16 x 28 for a 16:9 frame) moved a whole-frame embedding by up to 2.3e-3 (1 - cos 1.8e-4; seeded
    DINOv2-base, random input; tests/parity/test_entitybench_golden_production.py)."""
    import torch
    import torch.nn.functional as F
    b, h, w, c = x.shape
    pos = self.pos_embed
    side = int(round((pos.shape[1] - 1) ** 0.5))
    if not (h == w == side):
        grid = pos[:, 1:].reshape(1, side, side, c).permute(0, 3, 1, 2)
        grid = F.interpolate(grid.float(), size=(h, w), mode="bicubic", align_corners=False).to(pos.dtype)
        pos = torch.cat((pos[:, :1], grid.permute(0, 2, 3, 1).reshape(1, h * w, c)), 1)
    x = torch.cat((self.cls_token.expand(b, -1, -1), x.reshape(b, h * w, c)), 1)
    return self.pos_drop(x + pos)


def dinov2_module(state_dict_path=None, hub: bool = False, slot: str = "image_embedder"):
    import types

    import timm
    import torch
    name = "vit_base_patch14_dinov2.lvd142m"
    sd = None
    if hub:   # the hub's weights at their native 518 px
        sd = timm.create_model(name, pretrained=True, num_classes=0).state_dict()
    elif state_dict_path is not None:
        sd = torch.load(state_dict_path, map_location="cpu", weights_only=True)
        sd = sd.get("state_dict", sd) if isinstance(sd, dict) else sd
    if sd is not None:
        # Meta's release file (dinov2_vitb14_pretrain.pth) carries the masked-training token, which inference
        # never reads; timm's own DINOv2 converter drops it too. Every other key stays strict.
        sd = {k: v for k, v in sd.items() if k != "mask_token"}
    # the model keeps the checkpoint's own position grid (518 px: 37 x 37), interpolated per input at run time as
    # transformers does (_pos_embed_as_transformers): crops arrive at 224 x 224, whole frames at VBench's short side
    # 224 without a crop (224 x 398 for 16:9; dynamic_img_size lets the patch embedding take them)
    pos = sd.get("pos_embed") if sd is not None else None
    side = int(round((pos.shape[1] - 1) ** 0.5)) if pos is not None and pos.ndim == 3 else 37
    model = timm.create_model(name, pretrained=False, img_size=side * 14, num_classes=0, dynamic_img_size=True)
    model._pos_embed = types.MethodType(_pos_embed_as_transformers, model)
    if sd is not None:
        load_strict(model, sd, slot, state_dict_path or f"hub:{name}")
    return model


def _whole_patches(m, x):
    """The CLS token (timm's ViT, num_classes=0, global_pool='token'; 768-d) of ``x`` cut to whole patches: the
    trailing rows / columns a stride-14 patch convolution never reads (what DINO's and transformers' DINOv2 patch
    embeddings do with 398 px; timm would refuse it)."""
    ph, pw = m.patch_embed.patch_size
    return m(x[..., : x.shape[-2] // ph * ph, : x.shape[-1] // pw * pw])


def dinov2_embedder(module, device, dtype, batch_size) -> TorchImageEmbedder:
    # crops (and EntityBench's boundary frames) as the authors' code feeds facebook/dinov2-base: its processor's
    # short side 256 + centre crop 224; whole frames of subject consistency as VBench's dino_transform
    return TorchImageEmbedder(module, size=224, mean=IMAGENET_MEAN, std=IMAGENET_STD, features=_whole_patches,
                              device=device, dtype=dtype, batch_size=batch_size, frames="short_side",
                              crops="processor", crop_resize=256)


# The offline embedder runs on every native frame of every EntityBench shot (and on LoCoT2V / ViStoryBench /
# NarrativeTrack crops): its CPU cost was ~65 % of an offline shot. ``LITE0_LEAN`` False keeps the unchanged
# module and torch's default threads: only scripts/benchmark_scale.py (--only offline-shot) and the tests that pin
# the lean path's values to it set it.
LITE0_LEAN = True
# Intra-op threads of the lean path on a CPU: a network of small ops (depthwise convs on 7 x 7 to 112 x 112 maps)
# spends more in OpenMP barrier waits than two threads save. Measured on the 2-core project machine (81 frames of
# 832 x 480, batch 16): 1 thread 1.6-1.8 CPU-s against 5.5-6.9 at torch's default 2 under load (wall 4 s against
# 15-20 s); the features move by <= 1.2e-7 against 2 threads (tests/test_offline_lean_embedder.py).
LITE0_CPU_THREADS = 1


def lean_same_padding(model) -> int:
    """Fold each symmetric static 'same' padding of an efficientnet_lite_pytorch model into its convolution's own
    zero padding (one op and one padded copy of the activations less per conv; the 4 stride-2 convs with
    asymmetric padding keep theirs) and make its ReLU6 in place. The same sums over the same zeros: the features
    are bitwise unchanged (tests/test_offline_lean_embedder.py). Returns the number of convs folded."""
    import torch.nn as nn
    from efficientnet_lite_pytorch.utils import Conv2dStaticSamePadding
    n = 0
    for mod in model.modules():
        if isinstance(mod, Conv2dStaticSamePadding) and isinstance(mod.static_padding, nn.ZeroPad2d):
            left, right, top, bottom = mod.static_padding.padding
            if left == right and top == bottom:
                mod.static_padding, mod.padding = nn.Identity(), (top, left)
                n += 1
        elif isinstance(mod, nn.ReLU6):
            mod.inplace = True   # inference only: nothing reads the pre-activation again
    return n


def efficientnet_lite0_embedder(weights_path, device, dtype, batch_size, lean=None) -> TorchImageEmbedder:
    import torch
    from efficientnet_lite_pytorch import EfficientNet
    model = EfficientNet.from_name("efficientnet-lite0")
    sd = torch.load(weights_path, map_location="cpu", weights_only=True)
    load_strict(model, sd, "image_embedder", weights_path)
    return lite0_embedder(model, device, dtype, batch_size, lean)


def lite0_embedder(model, device, dtype, batch_size, lean=None) -> TorchImageEmbedder:
    """The embedder around a loaded EfficientNet-Lite0 module (``lean``: default ``LITE0_LEAN``)."""
    import torch
    lean = LITE0_LEAN if lean is None else lean
    if lean:
        lean_same_padding(model)

    def features(m, x):
        return torch.flatten(m._avg_pooling(m.extract_features(x)), 1)  # 1280-d pooled features

    return TorchImageEmbedder(model, size=224, mean=LITE_MEAN, std=LITE_STD, features=features,
                              device=device, dtype=dtype, batch_size=batch_size,
                              cpu_threads=LITE0_CPU_THREADS if lean else 0)


def clean_as_transformers_clip(text: str) -> str:
    """transformers' CLIPTokenizer normaliser (its tokenizer.json: NFC, each run of whitespace to one space, lower
    case), what a CLIPProcessor runs before BPE. open_clip's cleaning (OpenAI's own tokenizer's) also runs
    ftfy.fix_text and html.unescape: curly quotes and HTML entities give other tokens."""
    import re
    import unicodedata
    return re.sub(r"\s+", " ", unicodedata.normalize("NFC", text)).strip().lower()


class ClipModel:
    """open_clip model: image and text embeddings and their cosine similarity. ``resize``: 'shortest' (the
    checkpoint's own short-side resize and centre crop as VBench's torchvision transform, ``shortest_crop_tensor``),
    'processor' (the same through the Hugging Face CLIP processor's PIL steps, ``clip_processor_tensor``, as
    ViStoryBench runs it) or 'squash' (whole frame to a square; kept for models built without a checkpoint
    config)."""

    def __init__(self, model, tokenizer, *, size: int, mean, std, device, dtype, batch_size: int,
                 resize: str = "squash", antialias: bool = False):
        if resize not in ("squash", "shortest", "processor"):
            raise ValueError(f"resize must be 'squash', 'shortest' or 'processor', not {resize!r}")
        self.model = model.eval().to(device=device, dtype=dtype)
        self.tokenizer, self.size, self.mean, self.std = tokenizer, size, mean, std
        self.device, self.dtype, self.batch_size = device, dtype, batch_size
        self.resize, self.antialias = resize, antialias

    @classmethod
    def from_open_clip(cls, arch: str, pretrained, device, dtype, batch_size, *, openai: bool = False,
                       resize: str = "squash", antialias: bool = False):
        """``openai``: the weights are OpenAI's, trained with QuickGELU: open_clip's ``ViT-L-14`` / ``ViT-B-32``
        configs use GELU, so OpenAI's checkpoint in them runs another network (open_clip only warns)."""
        import open_clip
        model, _, preprocess = open_clip.create_model_and_transforms(arch, pretrained=pretrained,
                                                                     force_quick_gelu=openai)
        norm = [t for t in preprocess.transforms if type(t).__name__ == "Normalize"][0]
        size = model.visual.image_size[0] if isinstance(model.visual.image_size, tuple) else model.visual.image_size
        return cls(model, open_clip.get_tokenizer(arch), size=size, mean=tuple(norm.mean), std=tuple(norm.std),
                   device=device, dtype=dtype, batch_size=batch_size, resize=resize, antialias=antialias)

    def with_text_clean(self, clean: Callable[[str], str]) -> "ClipModel":
        """The same model and image side, its tokenizer cleaning text with ``clean`` (a copy: the loaded slot is
        shared by every benchmark in the process; the BPE cache is keyed after cleaning, so it is shared too). A
        tokenizer without open_clip's ``clean_fn`` (none given) leaves the model as it is."""
        import copy
        if not hasattr(self.tokenizer, "clean_fn"):
            return self
        out = copy.copy(self)
        out.tokenizer = copy.copy(self.tokenizer)
        out.tokenizer.clean_fn = clean
        return out

    def pixels(self, images: Sequence[np.ndarray]):
        if self.resize == "processor":
            return clip_processor_tensor(images, self.size, self.mean, self.std, self.device, self.dtype)
        if self.resize == "shortest":
            return shortest_crop_tensor(images, self.size, self.mean, self.std, self.device, self.dtype,
                                        self.antialias)
        return to_tensor(images, self.size, self.mean, self.std, self.device, self.dtype)

    def embed_images(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(images), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                x = self.pixels(chunk)
                f = require_finite(self.model.encode_image(x).float(), "clip", "image embeddings")
                out.append(torch.nn.functional.normalize(f, dim=-1).cpu().numpy())
        return np.concatenate(out)

    def embed_texts(self, texts: Sequence[str]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(texts), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                tok = self.tokenizer(list(chunk)).to(self.device)
                f = require_finite(self.model.encode_text(tok).float(), "clip", "text embeddings")
                out.append(torch.nn.functional.normalize(f, dim=-1).cpu().numpy())
        return np.concatenate(out)

    def similarity(self, images: Sequence[np.ndarray], texts: Sequence[str]) -> np.ndarray:
        """[n_images, n_texts] cosine."""
        return self.embed_images(images) @ self.embed_texts(texts).T


class AestheticPredictor:
    """LAION aesthetic head (linear, 768 -> 1) on CLIP ViT-L/14 image embeddings; raw 0-10 scale."""

    def __init__(self, clip: ClipModel, head_path):
        import torch
        sd = torch.load(head_path, map_location="cpu", weights_only=True)
        dim = next(v for k, v in sd.items() if k.endswith("weight")).shape[-1]
        self.head = torch.nn.Linear(dim, 1)
        self.head.load_state_dict({k.split(".")[-1]: v for k, v in sd.items()})
        self.head.eval().to(clip.device)
        self.clip = clip

    def score(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        emb = torch.from_numpy(self.clip.embed_images(images)).to(self.clip.device)
        with torch.inference_mode(), counted(len(images)):
            return require_finite(self.head(emb).squeeze(-1).float(), "aesthetic", "scores").cpu().numpy()
