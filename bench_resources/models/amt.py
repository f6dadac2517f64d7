"""AMT-S frame interpolation as VBench runs it for motion_smoothness: the ``interpolator`` slot's paper checkpoint.

The network is the AMT-S class of VBench's package (``vbench.third_party.amt.networks.AMT-S``, imported from the
installed PyPI package, not copied), built with VBench's config (corr_radius 3, corr_lvls 4, num_flows 3) and
loaded strictly from ``amt-s.pth`` (``{'state_dict': ...}``). Each midpoint is computed as
``vbench.motion_smoothness.MotionSmoothness.motion_score`` does it at scale 1 (what it uses on CPU and, for frames
up to ~1080p, on a large GPU): frames / 255, replicate padding to multiples of 16 split half each side,
``embt = 0.5``, ``eval=True``, unpadded, then quantised to uint8 by truncation (``tensor2img``: ``x * 255``,
clipped, ``astype(uint8)``) before the difference is taken.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from bench_resources.models.base import counted, require_finite

AMT_S_PARAMS = {"corr_radius": 3, "corr_lvls": 4, "num_flows": 3}   # vbench/third_party/amt/cfgs/AMT-S.yaml
# Measured: below 128 px per side after its padding to 16, AMT-S's 4-level correlation pyramid reaches a level one
# pixel wide and its coordinate normalisation divides by zero; every midpoint pixel is NaN (VBench's own code too,
# whose uint8 cast then reads the NaNs as a smooth-looking frame). The reason such a shot's metric carries.
AMT_SMALL_HINT = "AMT-S's correlation pyramid needs at least 128 px per side after padding to 16"


def amt_s_module():
    """VBench's AMT-S network class, untrained. Where VBench's ``__init__`` cannot run (it imports decord and its
    evaluation stack; the device kit carries only AMT's files), the network file is imported without it."""
    from bench_resources.lightimport import import_module
    return import_module("vbench.third_party.amt.networks.AMT-S", {"vbench": ()}).Model(**AMT_S_PARAMS)


def pad16(h: int, w: int) -> tuple[int, int, int, int]:
    """(left, right, top, bottom): AMT's InputPadder(divisor=16)."""
    ph, pw = (-h) % 16, (-w) % 16
    return pw // 2, pw - pw // 2, ph // 2, ph - ph // 2


class FlowMidpoint:
    """The offline profile's ``interpolator`` substitute: no network; the benchmark rebuilds each midpoint by warping
    its two neighbours halfway along the ``flow`` slot's forward and backward flows (``core.kernels``). It carries
    the flow model so that one shot's flows can be shared with dynamic degree."""

    def __init__(self, flow_model):
        self.flow_model = flow_model


class AmtInterpolator:
    """Pairs of RGB uint8 frames -> their uint8 midpoint frames. Pairs of one size run ``batch_size`` at a time
    (one forward; the same midpoints as one pair per forward, tests/parity/test_parity_amt.py);
    ``autocast_dtype`` (set by the registry from BENCH_DTYPE where parity allows) runs it under torch.autocast."""

    autocast_dtype = None

    def __init__(self, module, device, batch_size: int = 8):
        self.module, self.device = module.eval().to(device), device
        self.batch_size = max(1, int(batch_size))

    @classmethod
    def load(cls, weights_path, device, slot: str = "interpolator", batch_size: int = 8):
        import torch
        from bench_resources.models.vision import load_strict
        sd = torch.load(weights_path, map_location="cpu", weights_only=True)
        module = amt_s_module()
        load_strict(module, sd.get("state_dict", sd), slot, weights_path)
        return cls(module, device, batch_size)

    def midpoints(self, pairs: Sequence[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
        import torch
        import torch.nn.functional as F
        from bench_resources.models.precision import autocast
        pairs = list(pairs)
        out: list[np.ndarray] = []
        i = 0
        while i < len(pairs):
            j = i + 1   # a run of one frame size, at most batch_size long
            while j < len(pairs) and j - i < self.batch_size and pairs[j][0].shape == pairs[i][0].shape:
                j += 1
            h, w = pairs[i][0].shape[:2]
            left, right, top, bottom = pad16(h, w)

            def prep(frames):
                t = torch.from_numpy(np.ascontiguousarray(np.stack(frames))).permute(0, 3, 1, 2) / 255.0
                return F.pad(t, (left, right, top, bottom), mode="replicate").to(self.device)

            embt = torch.tensor(0.5).float().view(1, 1, 1, 1).expand(j - i, 1, 1, 1).to(self.device)
            with torch.no_grad(), counted(j - i), autocast(self.device, self.autocast_dtype):
                mid = self.module(prep([a for a, _ in pairs[i:j]]), prep([b for _, b in pairs[i:j]]), embt,
                                  scale_factor=1.0, eval=True)["imgt_pred"]
            mid = require_finite(mid.float()[..., top:top + h, left:left + w], "interpolator", "midpoint frames",
                                 AMT_SMALL_HINT if min(h + top + bottom, w + left + right) < 128 else "")
            out += list((mid * 255.0).permute(0, 2, 3, 1).cpu().numpy().clip(0, 255).astype(np.uint8))
            i = j
        return out


def amt_smoothness(frames: np.ndarray, interpolator: AmtInterpolator) -> float | None:
    """VBench's motion smoothness on native frames: each odd frame rebuilt from its even neighbours, score
    (255 - mean |rebuilt - frame|) / 255 over uint8 frames; None without a triple."""
    triples = [(i - 1, i, i + 1) for i in range(1, len(frames) - 1, 2)]
    if not triples:
        return None
    mids = interpolator.midpoints([(frames[p], frames[n]) for p, _, n in triples])
    errs = [float(np.mean(np.abs(mid.astype(np.int16) - frames[m].astype(np.int16)))) for mid, (_, m, _) in
            zip(mids, triples)]
    return (255.0 - float(np.mean(errs))) / 255.0
