"""ModelRegistry: the Dagster resource around ``slot_registry.SlotRegistry`` (named slots, two profiles, lazy
loading once per process, fingerprints); the logic lives there, importable without Dagster."""
from __future__ import annotations

from typing import Any, Literal, Optional

from dagster import ConfigurableResource

from bench_resources.models.base import SlotStatus, SlotUnavailable
from bench_resources.models.slot_registry import SlotRegistry, clear_loaded  # noqa: F401  (re-exported)


class ModelRegistry(ConfigurableResource):
    """``paper``: the papers' checkpoints from a local weights dir (or the hub when allowed).
    ``offline``: substitutes whose weights ship inside packages; a slot without one stays unavailable."""

    profile: Literal["paper", "offline"] = "offline"
    weights_dir: str = "weights"
    allow_hub: bool = False
    checkpoints: dict[str, str] = {}   # slot -> alternative name, e.g. {"open_vocab_detector": "yolo_world"}

    def plain(self) -> SlotRegistry:
        return SlotRegistry(self.profile, self.weights_dir, self.allow_hub, dict(self.checkpoints))

    def status(self, name: str) -> SlotStatus:
        """Availability, source and fingerprint without loading the model."""
        return self.plain().status(name)

    def statuses(self) -> list[SlotStatus]:
        return self.plain().statuses()

    def manifest(self, names) -> dict[str, Any]:
        """slot -> checkpoint, source, fingerprint, availability: what a protocol digest and a manifest record."""
        return self.plain().manifest(names)

    def slot_or_reason(self, name: str, device=None) -> tuple[Any, Optional[str]]:
        """(model, None) or (None, reason): a missing slot is a reason to skip, never a number. Goes through
        ``self.slot`` (the one load point of the resource), so whatever wraps or records ``slot`` sees every load."""
        try:
            return self.slot(name, device), None
        except SlotUnavailable as e:
            return None, str(e)

    def slot(self, name: str, device=None) -> Any:
        """The loaded model of a slot (once per process); SlotUnavailable with one clear message otherwise."""
        return self.plain().slot(name, device)

    def import_weights(self, name: str, src) -> SlotStatus:
        """Copy a checkpoint file or folder into <weights_dir>/<slot>/ atomically, then report the slot."""
        return self.plain().import_weights(name, src)
