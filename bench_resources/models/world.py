"""World-model evaluation models (MBench): camera trajectories and VGG Gram features."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from bench_resources.models.base import batches, counted
from bench_resources.models.geometry_vo import DEFAULT as DEFAULT_VO, VOConfig, trajectory
from bench_resources.models.vision import IMAGENET_MEAN, IMAGENET_STD, to_tensor


class ClassicalPose:
    """Offline pose slot: keyframe visual odometry (homography / essential model selection, PnP against
    triangulated points, loop closure) in one trajectory; see geometry_vo."""

    def __init__(self, config: VOConfig = DEFAULT_VO):
        self.config = config

    def estimate(self, frames: Sequence[np.ndarray], K: np.ndarray):
        with counted(max(0, len(frames) - 1)):
            return trajectory(frames, K, self.config)


class VggtPose:
    """VGGT (Wang et al. 2025) extrinsics for all frames in one forward; camera centres normalised to path length 1."""

    def __init__(self, model, device):
        self.model, self.device = model.eval().to(device), device

    @classmethod
    def load(cls, path, device):
        from vggt.models.vggt import VGGT  # the vggt package (facebookresearch/vggt)
        import torch
        if path is None:
            return cls(VGGT.from_pretrained("facebook/VGGT-1B"), device)
        model = VGGT()
        model.load_state_dict(torch.load(str(path), map_location="cpu", weights_only=True))
        return cls(model, device)

    def estimate(self, frames: Sequence[np.ndarray], K: np.ndarray):
        import torch
        from vggt.utils.pose_enc import pose_encoding_to_extri_intri
        x = torch.from_numpy(np.stack([f.astype(np.float32) / 255.0 for f in frames]).transpose(0, 3, 1, 2))
        x = torch.nn.functional.interpolate(x, size=(518, 518), mode="bilinear")[None].to(self.device)
        with torch.inference_mode(), counted(len(frames)):
            enc = self.model(x)["pose_enc"]
            extri, _ = pose_encoding_to_extri_intri(enc, x.shape[-2:])
        E = extri[0].float().cpu().numpy()  # [n, 3, 4] world-to-camera
        Rs = [e[:, :3] for e in E]
        C = np.stack([-e[:, :3].T @ e[:, 3] for e in E])
        length = float(np.linalg.norm(np.diff(C, axis=0), axis=1).sum())
        return Rs, (C / length if length > 0 else C), [False] * (len(frames) - 1)


class VggGram:
    """VGG-16 features at relu1_2, relu2_2, relu3_3, relu4_3; per frame the concatenated Gram matrices divided by
    C*H*W (so the Frobenius norm of a difference sums the layers)."""

    LAYERS = (3, 8, 15, 22)  # indices of relu1_2, relu2_2, relu3_3, relu4_3 in torchvision's vgg16().features

    def __init__(self, features, device, dtype, batch_size: int, size: int = 224):
        self.features = features.eval().to(device=device, dtype=dtype)
        self.device, self.dtype, self.batch_size, self.size = device, dtype, batch_size, size

    @classmethod
    def load(cls, path, device, dtype, batch_size: int):
        import torch
        from torchvision.models import vgg16
        model = vgg16(weights=None)
        if path is not None:
            model.load_state_dict(torch.load(str(path), map_location="cpu", weights_only=True))
        return cls(model.features[:23], device, dtype, batch_size)

    def grams(self, frames: Sequence[np.ndarray]) -> list[np.ndarray]:
        import torch
        out = []
        for chunk in batches(list(frames), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                x = to_tensor(chunk, self.size, IMAGENET_MEAN, IMAGENET_STD, self.device, self.dtype)
                per_layer = []
                for i, layer in enumerate(self.features):
                    x = layer(x)
                    if i in self.LAYERS:
                        b, c, h, w = x.shape
                        f = x.float().reshape(b, c, h * w)
                        per_layer.append((f @ f.transpose(1, 2) / (c * h * w)).reshape(b, -1))
                out += list(torch.cat(per_layer, dim=1).cpu().numpy())
        return out
