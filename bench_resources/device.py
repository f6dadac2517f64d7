"""Where inference runs: auto / cpu / cuda / cuda:N / mps, with a dtype and a batch size."""
from __future__ import annotations

import re
from typing import Any

from dagster import ConfigurableResource

_DTYPES = ("float32", "float16", "bfloat16")
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")


class Device(ConfigurableResource):
    """Inference device. ``auto`` picks cuda, then mps, then cpu. GPU assets declare ``pool="gpu"``."""

    device: str = "auto"
    dtype: str = "float32"
    batch_size: int = 16

    def torch_device(self):
        import torch
        want = self.device.strip().lower()
        if not _DEVICE.match(want):
            raise ValueError(f"Device {self.device!r} is not one of auto | cpu | cuda | cuda:N | mps")
        if want == "auto":
            if torch.cuda.is_available():
                return torch.device("cuda")
            if _mps_available():
                return torch.device("mps")
            return torch.device("cpu")
        if want.startswith("cuda"):
            if not torch.cuda.is_available():
                raise RuntimeError(f"Device {want!r} requested but CUDA is not available on this machine "
                                   f"(torch {torch.__version__}, built with CUDA {torch.version.cuda}); "
                                   f"use device='cpu' or 'auto'")
            index = int(want.split(":")[1]) if ":" in want else 0
            if index >= torch.cuda.device_count():
                raise RuntimeError(f"Device {want!r} requested but only {torch.cuda.device_count()} CUDA "
                                   f"device(s) are visible")
        if want == "mps" and not _mps_available():
            raise RuntimeError("Device 'mps' requested but MPS is not available on this machine")
        return torch.device(want)

    def torch_dtype(self):
        import torch
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not one of {list(_DTYPES)}")
        return getattr(torch, self.dtype)

    def describe(self) -> dict[str, Any]:
        """For the run manifest: resolved device, its name, dtype, batch size, torch version."""
        import torch
        dev = self.torch_device()
        name = "cpu"
        if dev.type == "cuda":
            name = torch.cuda.get_device_name(dev)
        elif dev.type == "mps":
            name = "Apple MPS"
        return {"device": str(dev), "requested": self.device, "name": name, "dtype": self.dtype,
                "batch_size": self.batch_size, "torch": torch.__version__}


def _mps_available() -> bool:
    import torch
    mps = getattr(torch.backends, "mps", None)
    return bool(mps is not None and mps.is_available())
