"""Loading a model slot inside an asset, one way for every benchmark: the model, or None with the reason the
registry gives (missing weights, a package not installed), so the caller records the reason on its rows and
never turns a missing model into a number. A slot the step cannot do without fails the step instead."""
from __future__ import annotations

from typing import Any, Optional

from dagster import Failure

from bench_resources.device import Device
from bench_resources.models import ModelRegistry


def load_slot(models: ModelRegistry, device: Device, name: str,
              needed_by: Optional[str] = None) -> tuple[Any, Optional[str]]:
    """(model, None) or (None, reason). With ``needed_by`` (e.g. "video 07") an unavailable slot raises a Dagster
    ``Failure`` naming it and the reason: the step cannot produce any row without it."""
    model, why = models.slot_or_reason(name, device)
    if model is None and needed_by is not None:
        raise Failure(f"{needed_by}: the pipeline needs slot {name!r}: {why}")
    return model, why
