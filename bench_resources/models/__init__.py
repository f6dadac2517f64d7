"""The model slots: their registry (a plain class and the Dagster resource around it), specs and the forward counters. The names below load on
first use (PEP 562), so importing one submodule (``models.base``, ``models.face``) pulls in neither Dagster nor
every slot's code."""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from bench_resources.models.base import (SlotStatus, SlotUnavailable, forward_count, forward_items,
                                             forward_seconds, load_seconds)
    from bench_resources.models.registry import ModelRegistry
    from bench_resources.models.slot_registry import SlotRegistry, clear_loaded
    from bench_resources.models.specs import SLOTS

_WHERE = {"SlotStatus": "base", "SlotUnavailable": "base", "forward_count": "base", "forward_items": "base",
          "forward_seconds": "base", "load_seconds": "base", "ModelRegistry": "registry", "clear_loaded": "slot_registry", "SlotRegistry": "slot_registry",
          "SLOTS": "specs"}

__all__ = ["ModelRegistry", "SlotRegistry", "SlotStatus", "SlotUnavailable", "SLOTS", "forward_count", "forward_items",
           "forward_seconds", "load_seconds", "clear_loaded"]


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
    globals()[name] = value  # once: later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
