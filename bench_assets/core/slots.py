"""Loading a model slot inside an asset, one way for every benchmark: the model, or None with the reason the
registry gives (missing weights, a package not installed), so the caller records the reason on its rows and
never turns a missing model into a number. A slot the step cannot do without fails the step instead."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

if TYPE_CHECKING:  # the declarations below are read by light callers (a benchmark package's import): no Dagster
    from bench_resources.device import Device
    from bench_resources.models import ModelRegistry


def load_slot(models: ModelRegistry, device: Device, name: str,
              needed_by: Optional[str] = None) -> tuple[Any, Optional[str]]:
    """(model, None) or (None, reason). With ``needed_by`` (e.g. "video 07") an unavailable slot raises a Dagster
    ``Failure`` naming it and the reason: the step cannot produce any row without it."""
    model, why = models.slot_or_reason(name, device)
    if model is None and needed_by is not None:
        from dagster import Failure
        raise Failure(f"{needed_by}: the pipeline needs slot {name!r}: {why}")
    return model, why


# ----------------------------------------------------------------------------- which asset uses which slot
# Issue 25: a weights change makes stale only the assets whose values its slot decides. Each benchmark declares,
# in its wiring, the slots each of its assets loads (``declare_slots``); core/automation.py compares those slots'
# checkpoint fingerprints with the ones recorded on the run that materialised the asset. An asset that does not
# require the ``models`` resource uses no slot; one that requires it and is not declared counts every slot (the
# safe side: it re-runs on any weights change, as every asset did before declarations).
_ASSET_SLOTS: dict[str, tuple[str, ...]] = {}


def declare_slots(table: dict) -> None:
    """Register ``{asset name: slots it loads}`` (the slots whose checkpoint decides its values; a slot named only
    in a row's protocol or manifest, or read through an upstream asset, is not the asset's own)."""
    for asset, slots in table.items():
        _ASSET_SLOTS[str(asset)] = tuple(sorted(set(slots)))


def asset_slots(asset: str, required_resources=None) -> Optional[tuple[str, ...]]:
    """The declared slots of ``asset``; () when it does not require ``models``; None (every slot) otherwise."""
    if asset in _ASSET_SLOTS:
        return _ASSET_SLOTS[asset]
    if required_resources is not None and "models" not in set(required_resources):
        return ()
    return None


def declared_slots() -> dict[str, tuple[str, ...]]:
    return dict(_ASSET_SLOTS)


def with_needs(slots) -> tuple[str, ...]:
    """``slots`` and the slots their checkpoints are built on (``Checkpoint.needs``, any profile or alternative:
    the offline detector reads the text embedder, the aesthetic head CLIP ViT-L/14), transitively."""
    from bench_resources.models.specs import SLOTS
    out, todo = set(), list(slots)
    while todo:
        s = todo.pop()
        if s in out:
            continue
        out.add(s)
        spec = SLOTS.get(s)
        if spec is None:
            continue
        for ckpt in (spec.paper, spec.offline, *spec.alternatives.values()):
            todo += list(getattr(ckpt, "needs", ()) or ())
    return tuple(sorted(out))
