"""Where benchmark datasets and generator outputs live."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from dagster import ConfigurableResource

PROJECT_ROOT = Path(__file__).resolve().parents[1]


def default_data_root() -> str:
    return os.environ.get("BENCH_DATA_ROOT", str(PROJECT_ROOT / "data"))


def default_generators_root() -> str:
    return os.environ.get("BENCH_GENERATORS_ROOT", str(Path(default_data_root()) / "generators"))


class BenchPaths(ConfigurableResource):
    """Dataset root (``<data_root>/<benchmark>/...``) and the generators root a sensor watches.

    Unset fields follow BENCH_DATA_ROOT / BENCH_GENERATORS_ROOT at call time (default: the repo's data/).
    """

    data_root: Optional[str] = None
    generators_root: Optional[str] = None

    @property
    def data_dir(self) -> Path:
        return Path(self.data_root or default_data_root())

    @property
    def generators_dir(self) -> Path:
        return Path(self.generators_root or default_generators_root())

    def benchmark_dir(self, benchmark: str) -> Path:
        return self.data_dir / benchmark

    def generator_dir(self, name: str) -> Path:
        return self.generators_dir / name
