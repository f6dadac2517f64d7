"""Optical flow: OpenCV DIS (weightless, offline) and RAFT (torchvision, paper)."""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from bench_resources.models.base import batches, counted


class DisFlow:
    def __init__(self, preset: int = cv2.DISOPTICAL_FLOW_PRESET_MEDIUM):
        self.dis = cv2.DISOpticalFlow_create(preset)

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        out = []
        for a, b in pairs:
            with counted(1):
                out.append(self.dis.calc(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY), None))
        return out


class RaftFlow:
    """torchvision RAFT; frames padded to a multiple of 8, flow returned at the input size."""

    def __init__(self, module, device, batch_size: int):
        self.module, self.device, self.batch_size = module.eval().to(device), device, batch_size

    @classmethod
    def load(cls, weights_path, device, batch_size, small: bool = False):
        import torch
        from torchvision.models.optical_flow import raft_large, raft_small
        m = (raft_small if small else raft_large)(weights=None)
        m.load_state_dict(torch.load(weights_path, map_location="cpu", weights_only=True))
        return cls(m, device, batch_size)

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        import torch
        import torch.nn.functional as F
        out = []
        for chunk in batches(list(pairs), self.batch_size):
            h, w = chunk[0][0].shape[:2]
            # RAFT's correlation pyramid needs >= 128 px per side and multiples of 8
            ph, pw = max(128, -(-h // 8) * 8) - h, max(128, -(-w // 8) * 8) - w

            def prep(frames):
                x = torch.from_numpy(np.stack(frames).astype(np.float32).transpose(0, 3, 1, 2) / 127.5 - 1.0)
                return F.pad(x, (0, pw, 0, ph), mode="replicate").to(self.device)

            with torch.inference_mode(), counted(len(chunk)):
                flows = self.module(prep([a for a, _ in chunk]), prep([b for _, b in chunk]))[-1]
            out += [f[:, :h, :w].permute(1, 2, 0).cpu().numpy() for f in flows]
        return out
