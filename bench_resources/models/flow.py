"""Optical flow: OpenCV DIS (weightless, offline) and RAFT (torchvision, paper).

``flow(pairs)`` takes (a, b) RGB uint8 frames and returns the forward flow a -> b as HxWx2 float32
(dx, dy) in pixels: a(x) ~ b(x + flow(x)).
"""
from __future__ import annotations

from typing import Optional, Sequence

import cv2
import numpy as np

from bench_resources.models.base import batches, counted, runtime

DIS_PRESETS = {"ultrafast": cv2.DISOPTICAL_FLOW_PRESET_ULTRAFAST, "fast": cv2.DISOPTICAL_FLOW_PRESET_FAST,
               "medium": cv2.DISOPTICAL_FLOW_PRESET_MEDIUM}


def dis_version(preset: str = "medium") -> str:
    """The fingerprint of a weightless algorithm: library version + preset."""
    return f"opencv-{cv2.__version__}-dis-{preset}"


class DisFlow:
    """Dense Inverse Search (Kroeger et al. 2016) as shipped in OpenCV; grey frames, one pair per call."""

    def __init__(self, preset: str = "medium"):
        self.preset = preset
        self.dis = cv2.DISOpticalFlow_create(DIS_PRESETS[preset])

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        out = []
        for a, b in pairs:
            with counted(1):
                out.append(self.dis.calc(cv2.cvtColor(np.ascontiguousarray(a), cv2.COLOR_RGB2GRAY),
                                         cv2.cvtColor(np.ascontiguousarray(b), cv2.COLOR_RGB2GRAY), None))
        return out


class RaftFlow:
    """torchvision RAFT; frames scaled to [-1, 1], padded (replicate) to multiples of 8 and >= 128 px,
    the last refinement's flow cropped back to the input size. Pairs of one size share a batch."""

    def __init__(self, module, device=None):
        self.device, _, self.batch_size = runtime(device)
        self.module = module.eval().to(self.device)  # RAFT stays float32: its correlation lookup is precision-sensitive

    @classmethod
    def from_module(cls, module, device=None):
        return cls(module, device)

    @classmethod
    def load(cls, weights_path: Optional[str], device=None, small: bool = False, hub: bool = False):
        """From a torchvision state dict file (raft_large_C_T_SKHT_V2-ff5fadd5.pth), or torchvision's
        download of C_T_SKHT_V2 when hub=True and no file is given."""
        import torch
        from torchvision.models.optical_flow import Raft_Large_Weights, raft_large, raft_small
        if weights_path is None:
            if not hub:
                raise ValueError("RAFT needs a weights file or hub=True")
            return cls(raft_large(weights=Raft_Large_Weights.C_T_SKHT_V2), device)
        m = (raft_small if small else raft_large)(weights=None)
        m.load_state_dict(torch.load(str(weights_path), map_location="cpu", weights_only=True))
        return cls(m, device)

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        import torch
        import torch.nn.functional as F
        pairs = list(pairs)
        out: list[Optional[np.ndarray]] = [None] * len(pairs)
        by_size: dict[tuple, list[int]] = {}
        for i, (a, b) in enumerate(pairs):
            if a.shape != b.shape:
                raise ValueError(f"pair {i}: frames differ in size {a.shape} vs {b.shape}")
            by_size.setdefault(a.shape[:2], []).append(i)
        for (h, w), idx in by_size.items():
            ph, pw = max(128, -(-h // 8) * 8) - h, max(128, -(-w // 8) * 8) - w

            def prep(frames):
                x = torch.from_numpy(np.stack(frames).astype(np.float32).transpose(0, 3, 1, 2) / 127.5 - 1.0)
                return F.pad(x, (0, pw, 0, ph), mode="replicate").to(self.device)

            for chunk in batches(idx, self.batch_size):
                with torch.inference_mode(), counted(len(chunk)):
                    flows = self.module(prep([pairs[i][0] for i in chunk]), prep([pairs[i][1] for i in chunk]))[-1]
                for i, f in zip(chunk, flows):
                    out[i] = f[:, :h, :w].permute(1, 2, 0).float().cpu().numpy()
        return out  # type: ignore[return-value]
