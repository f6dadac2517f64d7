"""Generation backends as resources (EntityMem, bench_assets/entitymem/): a text-to-image generator, a chroma-key
segmenter and a video backbone, each with an offline stand-in (offline.py) and swappable by configuration. The
names below load on first use (PEP 562): importing ``generation.offline`` alone pulls in no Dagster."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench_resources.generation.images import GenerationError, ImageGenerator  # noqa: F401
    from bench_resources.generation.segmentation import Segmenter  # noqa: F401
    from bench_resources.generation.video import VideoBackbone  # noqa: F401

_WHERE = {"GenerationError": "images", "ImageGenerator": "images", "Segmenter": "segmentation",
          "VideoBackbone": "video"}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))
