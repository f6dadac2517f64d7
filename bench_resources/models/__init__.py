from bench_resources.models.base import (SlotStatus, SlotUnavailable, forward_count, forward_items,
                                         forward_seconds, load_seconds)
from bench_resources.models.registry import ModelRegistry, clear_loaded
from bench_resources.models.specs import SLOTS

__all__ = ["ModelRegistry", "SlotStatus", "SlotUnavailable", "SLOTS", "forward_count", "forward_items",
           "forward_seconds", "load_seconds", "clear_loaded"]
