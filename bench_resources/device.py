"""Where inference runs: the Dagster resource around ``bench_resources.compute.ComputeDevice`` (the logic lives
there, importable without Dagster)."""
from __future__ import annotations

import os
from typing import Any

from dagster import ConfigurableResource
from pydantic import Field

from bench_resources.compute import DTYPES, ComputeDevice

_DTYPES = set(DTYPES)


class Device(ConfigurableResource):
    device: str = "auto"
    dtype: str = Field(default_factory=lambda: os.environ.get("BENCH_DTYPE") or "float32")   # BENCH_DTYPE
    batch_size: int = 16

    def plain(self) -> ComputeDevice:
        return ComputeDevice(self.device, self.dtype, self.batch_size)

    def torch_device(self):
        return self.plain().torch_device()

    def torch_dtype(self):
        return self.plain().torch_dtype()

    def describe(self) -> dict[str, Any]:
        return self.plain().describe()
