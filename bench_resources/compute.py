"""Where inference runs, as a plain class (no Dagster): auto / cpu / cuda / cuda:N / mps, a dtype (``BENCH_DTYPE``,
granted per slot where parity allows: ``models.precision``) and a batch size.
``bench_resources.device.Device`` is the Dagster resource that wraps it; the device kit (scripts/device_kit.py)
uses this one on a machine that has only torch, torchvision, numpy and OpenCV."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

DTYPES = ("float32", "bfloat16", "float16")


@dataclass(frozen=True)
class ComputeDevice:
    device: str = "auto"
    dtype: str = field(default_factory=lambda: os.environ.get("BENCH_DTYPE") or "float32")   # BENCH_DTYPE
    batch_size: int = 16

    def torch_device(self):
        import torch
        want = self.device
        if want == "auto":
            if torch.cuda.is_available():
                return torch.device("cuda")
            if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
                return torch.device("mps")
            return torch.device("cpu")
        if want.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"Device {want!r} requested but CUDA is not available on this machine")
        if want == "mps" and not torch.backends.mps.is_available():
            raise RuntimeError("Device 'mps' requested but MPS is not available on this machine")
        return torch.device(want)

    def torch_dtype(self):
        import torch
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} not in {sorted(DTYPES)}")
        return getattr(torch, self.dtype)

    def describe(self) -> dict[str, Any]:
        return {"device": str(self.torch_device()), "dtype": self.dtype, "batch_size": self.batch_size}
