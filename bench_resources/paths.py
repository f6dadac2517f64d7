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


class OutsideRoot(ValueError):
    """A path (or the link it is) that resolves outside the folder it must stay in; the message names both."""


def trusted_media_roots() -> list[Path]:
    """Extra folders generator outputs and dataset media may link into (BENCH_MEDIA_ROOTS, os.pathsep-separated;
    default none): e.g. a shared footage store that generator folders symlink to on purpose."""
    raw = os.environ.get("BENCH_MEDIA_ROOTS", "")
    return [Path(p).resolve() for p in raw.split(os.pathsep) if p.strip()]


def inside_root(path: str | Path, root: str | Path, what: str) -> Path:
    """``path`` resolved (every symlink followed, ``..`` removed) when it stays inside ``root`` or a trusted media
    root; OutsideRoot naming ``what``, the path and where it leads otherwise. A multi-user deployment must not
    read any file the worker can read because an index says ``../../x`` or a shot is a link to ``/etc/passwd``."""
    p = Path(path)
    try:
        real = p.resolve()
        base = Path(root).resolve()
    except (OSError, RuntimeError) as e:  # a symlink loop
        raise OutsideRoot(f"{what}: {p} cannot be resolved ({e})") from None
    for allowed in (base, *trusted_media_roots()):
        if real == allowed or allowed in real.parents:
            return real
    how = "is a symlink out of" if p.is_symlink() else "leads outside"
    raise OutsideRoot(f"{what}: {p} {how} {base} (it resolves to {real}); media must stay inside its folder "
                      f"(BENCH_MEDIA_ROOTS lists extra folders that links may lead to)")
