"""MUSIQ on pyiqa's architecture from a state dict, with VBench's frame preprocessing (imaging_quality).

VBench (``vbench.imaging_quality``) builds ``pyiqa.archs.musiq_arch.MUSIQ`` with the SPAQ checkpoint
(``musiq_spaq_ckpt-358bb6af.pth``), cuts each frame's longer side to 512 px ('longer' mode: torchvision bilinear on
the uint8 tensor, no antialias) and scores frames one by one (MUSIQ's multi-scale patches take any size). The project
builds the same class (pyiqa from PyPI, installed without its dependencies) and loads the checkpoint strictly;
the TorchScript file it loaded before was fixed to one frame size by its trace and had no recipe.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np

from bench_resources.models.base import counted, require_finite

# pyiqa's packages stood in for when their __init__ cannot run, and what musiq_arch reads from them
PYIQA_BARE = {"pyiqa": (), "pyiqa.archs": (), "pyiqa.utils": ("registry", "download_util"),
              "pyiqa.matlab_utils": ("padding",), "pyiqa.data": ()}
LONGER_SIDE = 512  # VBench's default imaging_quality_preprocessing_mode 'longer'


def musiq_module(num_class: int = 1):
    """pyiqa's MUSIQ, untrained (SPAQ's head is one MOS output). Where pyiqa's ``__init__`` cannot run (the device
    kit carries the network's own files, not scipy and pyiqa's other metrics), the file is imported without it."""
    from bench_resources.lightimport import import_module
    arch = import_module("pyiqa.archs.musiq_arch", PYIQA_BARE)
    return arch.MUSIQ(num_class=num_class, pretrained=False)


def vbench_longer_side(frame: np.ndarray, longer: int = LONGER_SIDE):
    """[1, 3, h, w] float tensor in [0, 1]: the frame with its longer side cut to ``longer`` exactly as VBench's
    ``transform(images, 'longer')`` (size int(scale * h) x int(scale * w), bilinear, antialias off, on uint8)."""
    import torch
    from torchvision.transforms import functional as TF
    x = torch.from_numpy(np.ascontiguousarray(frame)).permute(2, 0, 1)[None]
    h, w = x.shape[-2:]
    if max(h, w) > longer:
        scale = longer / max(h, w)
        x = TF.resize(x, [int(scale * h), int(scale * w)], antialias=False)
    return x / 255.0


class MusiqIQA:
    """Frames (RGB uint8) -> MUSIQ scores on the checkpoint's native 0-100 scale. Frames of one size are scored
    ``batch_size`` at a time (one forward; each frame's patches and score are its own: the same values as one frame
    per forward, tests/test_models.py); ``autocast_dtype`` (set by the registry from BENCH_DTYPE where parity
    allows) runs the forward under torch.autocast."""

    autocast_dtype = None

    def __init__(self, module, device, longer: int = LONGER_SIDE, batch_size: int = 16):
        self.module = module.eval().to(device)
        self.device, self.longer, self.batch_size = device, longer, max(1, int(batch_size))

    @classmethod
    def load(cls, weights_path, device, slot: str = "musiq", batch_size: int = 16):
        import torch
        from bench_resources.models.vision import load_strict
        sd = torch.load(weights_path, map_location="cpu", weights_only=True)
        # pyiqa's released checkpoints keep the tensors under 'params'
        sd = sd.get("params", sd.get("state_dict", sd)) if isinstance(sd, dict) else sd
        head = sd.get("head.weight") if isinstance(sd, dict) else None
        module = musiq_module(num_class=int(head.shape[0]) if head is not None else 1)
        load_strict(module, sd, slot, weights_path)
        return cls(module, device, batch_size=batch_size)

    def score(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch
        from bench_resources.models.precision import autocast
        images = list(images)
        out: list[float] = []
        i = 0
        while i < len(images):
            j = i + 1   # a run of one frame size, at most batch_size long
            while j < len(images) and j - i < self.batch_size and images[j].shape == images[i].shape:
                j += 1
            x = torch.cat([vbench_longer_side(im, self.longer) for im in images[i:j]]).to(self.device)
            with torch.inference_mode(), counted(j - i), autocast(self.device, self.autocast_dtype):
                s = require_finite(self.module(x).float().reshape(j - i, -1)[:, 0], "imaging_quality", "scores")
                out += [float(v) for v in s.cpu()]
            i = j
        return np.asarray(out)
