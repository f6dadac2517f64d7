"""Optical flow: OpenCV DIS (weightless, offline) and RAFT (torchvision, paper)."""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np

from bench_resources.models.base import batches, counted, require_finite


# pixels this close to black or white may be clipped by a gain change: they do not enter the gain fit
_CLIP_LO, _CLIP_HI, _MIN_FIT_PIXELS = 3, 252, 100


def _gain_fit(a: np.ndarray, b: np.ndarray, both: bool):
    """(mean a, mean b, var a, var b or None, cross moment) over the pixels clipped in neither frame; None when fewer
    than _MIN_FIT_PIXELS are. Closed-form least squares from the moments (a generic lstsq on every pixel of a 720p
    pair cost more than the flow itself); uint8 -> float64 is exact."""
    ok = (a > _CLIP_LO) & (a < _CLIP_HI) & (b > _CLIP_LO) & (b < _CLIP_HI)
    if int(ok.sum()) < _MIN_FIT_PIXELS:
        return None
    xa, xb = a[ok].astype(np.float64), b[ok].astype(np.float64)
    ma, mb = xa.mean(), xb.mean()
    da, db = xa - ma, xb - mb
    var_b = float((db ** 2).mean()) if both else None
    return ma, mb, float((da ** 2).mean()), var_b, float((da * db).mean())


def _onto(x: np.ndarray, var: float, cov: float, mx, my) -> np.ndarray:
    """``x`` mapped onto the other frame's brightness by the fitted gain and offset."""
    gain = cov / var if var > 1e-9 else 1.0
    return np.clip(gain * x.astype(np.float32) + (my - gain * mx), 0, 255).astype(np.uint8)


def gain_aligned(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Two grey frames with ``a`` mapped onto ``b``'s global brightness (least-squares gain and offset over the
    pixels clipped in neither). Flow estimates geometry: DIS's brightness-constancy term reads a global
    brightness change (flicker, exposure) as motion, so a flickering static shot looked moving (measured on real
    footage: 14 static pairs of 41 became 1 under +-35 % alternate-frame gain, and flickering went unmeasured)."""
    fit = _gain_fit(a, b, both=False)
    if fit is None:
        return a, b
    ma, mb, var_a, _, cov = fit
    return _onto(a, var_a, cov, ma, mb), b


def gain_aligned_both(a: np.ndarray, b: np.ndarray) -> tuple[tuple[np.ndarray, np.ndarray],
                                                               tuple[np.ndarray, np.ndarray]]:
    """(``gain_aligned(a, b)``, ``gain_aligned(b, a)``) from one pass over the pair's common pixels: the mask, the
    means and the cross moment are the same in both directions (products commute), so each result is bitwise what
    ``gain_aligned`` gives alone. Motion smoothness asks every pair both ways."""
    fit = _gain_fit(a, b, both=True)
    if fit is None:
        return (a, b), (b, a)
    ma, mb, var_a, var_b, cov = fit
    return (_onto(a, var_a, cov, ma, mb), b), (_onto(b, var_b, cov, mb, ma), a)


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


# False: every pair fitted and converted alone, as before (scripts/benchmark_scale.py's unoptimised path only)
BOTH_WAYS_ONCE = True


class DisFlow:
    """OpenCV DIS on grey frames, each pair aligned in global gain and offset first (``gain_aligned``)."""

    def __init__(self, preset: int = cv2.DISOPTICAL_FLOW_PRESET_MEDIUM):
        self.dis = cv2.DISOpticalFlow_create(preset)

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        out, j = [], 0
        while j < len(pairs):
            a, b = pairs[j]
            if BOTH_WAYS_ONCE and j + 1 < len(pairs) and pairs[j + 1][0] is b and pairs[j + 1][1] is a:
                # the same pair both ways (motion smoothness): grey frames and gain moments once
                with counted(1):
                    (ga, gb), (hb, ha) = gain_aligned_both(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY),
                                                           cv2.cvtColor(b, cv2.COLOR_RGB2GRAY))
                    out.append(self.dis.calc(ga, gb, None))
                with counted(1):
                    out.append(self.dis.calc(hb, ha, None))
                j += 2
                continue
            with counted(1):
                ga, gb = gain_aligned(cv2.cvtColor(a, cv2.COLOR_RGB2GRAY), cv2.cvtColor(b, cv2.COLOR_RGB2GRAY))
                out.append(self.dis.calc(ga, gb, None))
            j += 1
        return out


# torchvision's RAFT module names for the original (princeton-vl) RAFT's, in the order they are tried: VBench ships
# the original's raft-things.pth, so the paper slot must load that file as it is
_RAFT_RENAMES = [
    (r"^module\.", ""),
    (r"^fnet\.", "feature_encoder."), (r"^cnet\.", "context_encoder."),
    (r"^(feature_encoder|context_encoder)\.conv1\.", r"\1.convnormrelu.0."),
    (r"^(feature_encoder|context_encoder)\.norm1\.", r"\1.convnormrelu.1."),
    (r"^(feature_encoder|context_encoder)\.conv2\.", r"\1.conv."),
    (r"\.(layer\d\.\d)\.conv([12])\.", r".\1.convnormrelu\2.0."),
    (r"\.(layer\d\.\d)\.norm([12])\.", r".\1.convnormrelu\2.1."),
    (r"^update_block\.encoder\.convc([12])\.", r"update_block.motion_encoder.convcorr\1.0."),
    (r"^update_block\.encoder\.convf([12])\.", r"update_block.motion_encoder.convflow\1.0."),
    (r"^update_block\.encoder\.conv\.", "update_block.motion_encoder.conv.0."),
    (r"^update_block\.gru\.conv([zrq])([12])\.", r"update_block.recurrent_block.convgru\2.conv\1."),
    (r"^update_block\.mask\.0\.", "mask_predictor.convrelu.0."),
    (r"^update_block\.mask\.2\.", "mask_predictor.conv."),
]


def raft_state_dict(sd: dict) -> dict:
    """A RAFT-large state dict in torchvision's names, from either torchvision's or the original RAFT's
    (``raft-things.pth``, as VBench loads it, ``module.`` prefix from DataParallel included). The original registers
    a strided block's downsample norm twice (``norm3`` and ``downsample.1``): the alias is dropped."""
    import re
    if any(k.startswith(("feature_encoder.", "context_encoder.")) for k in sd):
        return dict(sd)
    out = {}
    for k, v in sd.items():
        if re.search(r"\.layer\d\.\d\.norm3\.", k):
            continue
        for pat, rep in _RAFT_RENAMES:
            k = re.sub(pat, rep, k)
        out[k] = v
    return out


def sintel_pad(h: int, w: int) -> tuple[int, int, int, int]:
    """(left, right, top, bottom) replicate padding to multiples of 8, split as VBench's RAFT ``InputPadder``
    (mode 'sintel': half each side, the odd pixel after); frames under 128 px per side are padded up to 128 the same
    way (RAFT's correlation pyramid needs it; VBench would fail there)."""
    th, tw = max(128, -(-h // 8) * 8), max(128, -(-w // 8) * 8)
    ph, pw = th - h, tw - w
    return pw // 2, pw - pw // 2, ph // 2, ph - ph // 2


class RaftFlow:
    """torchvision RAFT; frames padded to a multiple of 8 as VBench pads them, flow returned at the input size.
    ``iters`` refinement steps: 20 as VBench runs RAFT (torchvision's default 12 changed a pair's score 17.1 -> 10.2
    with the same weights)."""

    VBENCH_ITERS = 20
    autocast_dtype = None   # set by the registry from BENCH_DTYPE where parity allows

    def __init__(self, module, device, batch_size: int, iters: int = VBENCH_ITERS):
        self.module, self.device, self.batch_size = module.eval().to(device), device, batch_size
        self.iters = int(iters)

    @classmethod
    def load(cls, weights_path, device, batch_size, small: bool = False, iters: int = VBENCH_ITERS):
        import torch
        from torchvision.models.optical_flow import raft_large, raft_small
        from bench_resources.models.vision import load_strict
        m = (raft_small if small else raft_large)(weights=None)
        sd = torch.load(weights_path, map_location="cpu", weights_only=True)
        load_strict(m, raft_state_dict(sd.get("state_dict", sd)), "flow", weights_path)
        return cls(m, device, batch_size, iters)

    def flow(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        import torch
        import torch.nn.functional as F
        out = []
        for chunk in batches(list(pairs), self.batch_size):
            h, w = chunk[0][0].shape[:2]
            left, right, top, bottom = sintel_pad(h, w)

            def prep(frames):
                # VBench: 2 * (x / 255) - 1 inside RAFT's forward
                x = torch.from_numpy(np.stack(frames).astype(np.float32).transpose(0, 3, 1, 2))
                x = 2.0 * (x / 255.0) - 1.0
                return F.pad(x, (left, right, top, bottom), mode="replicate").to(self.device)

            from bench_resources.models.precision import autocast
            with torch.inference_mode(), counted(len(chunk)), autocast(self.device, self.autocast_dtype):
                flows = require_finite(self.module(prep([a for a, _ in chunk]), prep([b for _, b in chunk]),
                                                   num_flow_updates=self.iters)[-1].float(), "flow", "flows")
            out += [f[:, top:top + h, left:left + w].permute(1, 2, 0).cpu().numpy() for f in flows]
        return out
