"""Optical flow: OpenCV DIS (weightless, offline) and RAFT (torchvision, paper)."""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from bench_resources.models.base import batches, counted


# pixels this close to black or white may be clipped by a gain change: they do not enter the gain fit
_CLIP_LO, _CLIP_HI, _MIN_FIT_PIXELS = 3, 252, 100


def gain_aligned(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two grey frames with ``a`` mapped onto ``b``'s global brightness (least-squares gain and offset over the
    pixels clipped in neither). Flow estimates geometry: DIS's brightness-constancy term reads a global
    brightness change (flicker, exposure) as motion, so a flickering static shot looked moving (measured on real
    footage: 14 static pairs of 41 became 1 under +-35 % alternate-frame gain, and flickering went unmeasured)."""
    fa, fb = a.astype(np.float32), b.astype(np.float32)
    ok = (a > _CLIP_LO) & (a < _CLIP_HI) & (b > _CLIP_LO) & (b < _CLIP_HI)
    n = int(ok.sum())
    if n < _MIN_FIT_PIXELS:
        return a, b
    # closed-form least squares from the moments (a generic lstsq on every pixel of a 720p pair cost more than
    # the flow itself)
    xa, xb = fa[ok].astype(np.float64), fb[ok].astype(np.float64)
    ma, mb = xa.mean(), xb.mean()
    var = float(((xa - ma) ** 2).mean())
    gain = float(((xa - ma) * (xb - mb)).mean()) / var if var > 1e-9 else 1.0
    offset = mb - gain * ma
    return np.clip(gain * fa + offset, 0, 255).astype(np.uint8), b


def flow_magnitude(flow: np.ndarray) -> np.ndarray:
    """Per-pixel |flow| in float64, flattened: the same bits as ``sqrt((flow.astype(float64) ** 2).sum(-1))``
    (a sum over a last axis of 2 is a0 + a1) without numpy's slow reduction over a length-2 axis (it cost 10x
    the arithmetic on 832x480 flows). What dynamic degree's and the static rule's thresholds read."""
    fx = flow[..., 0].astype(np.float64)
    fy = flow[..., 1].astype(np.float64)
    fx *= fx
    fy *= fy
    fx += fy
    return np.sqrt(fx, out=fx).ravel()


class DisFlow:
    """OpenCV DIS on grey frames, each pair aligned in global gain and offset first (``gain_aligned``)."""

    def __init__(self, preset: int = cv2.DISOPTICAL_FLOW_PRESET_MEDIUM):
        self.dis = cv2.DISOpticalFlow_create(preset)

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        out = []
        for a, b in pairs:
            with counted(1):
                ga, gb = gain_aligned(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY))
                out.append(self.dis.calc(ga, gb, None))
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
