"""Where benchmark datasets and generator outputs live."""
from __future__ import annotations

import os
from pathlib import Path

from dagster import ConfigurableResource

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def default_data_root() -> str:
    return os.environ.get("BENCH_DATA_ROOT", str(PROJECT_ROOT / "data"))


def default_generators_root() -> str:
    return os.environ.get("BENCH_GENERATORS_ROOT", str(Path(default_data_root()) / "generators"))


class BenchPaths(ConfigurableResource):
    """Dataset root (``<data_root>/<benchmark>/...``) and the generators root a sensor watches."""

    data_root: str = default_data_root()
    generators_root: str = default_generators_root()

    def benchmark_dir(self, benchmark: str) -> Path:
        return Path(self.data_root) / benchmark

    def generator_dir(self, name: str) -> Path:
        return Path(self.generators_root) / name
