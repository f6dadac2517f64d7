"""Where inference runs: auto / cpu / cuda / cuda:N / mps, with a dtype and a batch size."""
from __future__ import annotations

from typing import Any

from dagster import ConfigurableResource

_DTYPES = {"float32", "float16", "bfloat16"}


class Device(ConfigurableResource):
    device: str = "auto"
    dtype: str = "float32"
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
        if self.dtype not in _DTYPES:
            raise ValueError(f"dtype {self.dtype!r} not in {sorted(_DTYPES)}")
        return getattr(torch, self.dtype)

    def describe(self) -> dict[str, Any]:
        return {"device": str(self.torch_device()), "dtype": self.dtype, "batch_size": self.batch_size}
