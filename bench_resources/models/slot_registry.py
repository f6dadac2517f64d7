"""The model registry as a plain class (no Dagster): named slots, two profiles, lazy loading once per process,
fingerprints. ``bench_resources.models.registry.ModelRegistry`` is the Dagster resource that wraps it; the device
kit (scripts/device_kit.py) uses this one on a machine without Dagster."""
from __future__ import annotations

import os
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import Any, Optional

from bench_resources.compute import ComputeDevice
from bench_resources.models.base import SlotStatus, SlotUnavailable, add_load_seconds, fingerprint_path
from bench_resources.models.precision import requested_dtype, slot_dtype
from bench_resources.models.specs import SLOTS, Checkpoint, LoadContext

_loaded: dict[tuple, Any] = {}
_load_lock = threading.RLock()

PROFILES = ("paper", "offline")


class SlotRegistry:
    """``paper``: the papers' checkpoints from a local weights dir (or the hub when allowed).
    ``offline``: substitutes whose weights ship inside packages; a slot without one stays unavailable.
    ``device`` arguments take anything with ``torch_device()``, ``torch_dtype()`` and ``batch_size``
    (``ComputeDevice`` or the Dagster ``Device``)."""

    def __init__(self, profile: str = "offline", weights_dir: str = "weights", allow_hub: bool = False,
                 checkpoints: Optional[dict[str, str]] = None):
        if profile not in PROFILES:
            raise ValueError(f"profile {profile!r} not in {PROFILES}")
        self.profile, self.weights_dir, self.allow_hub = profile, str(weights_dir), bool(allow_hub)
        self.checkpoints = dict(checkpoints or {})   # slot -> alternative name, e.g. {"open_vocab_detector": ...}

    def _checkpoint(self, name: str) -> Checkpoint:
        if name not in SLOTS:
            raise KeyError(f"unknown model slot {name!r}; slots: {sorted(SLOTS)}")
        spec = SLOTS[name]
        alt = self.checkpoints.get(name)
        if alt:
            if alt not in spec.alternatives:
                raise KeyError(f"slot {name!r} has no alternative {alt!r}; have {sorted(spec.alternatives)}")
            return spec.alternatives[alt]
        if self.profile == "offline":
            if spec.offline is None:
                raise SlotUnavailable(name, "offline", spec.paper.name,
                                      "no offline substitute ships in a package (never pretend)",
                                      "Use the paper profile with its weights in the weights directory")
            return spec.offline
        return spec.paper

    def _paper_checkpoint(self, name: str) -> bool:
        """The slot runs its paper checkpoint (the one whose precision was measured)."""
        return self.profile == "paper" and not self.checkpoints.get(name)

    def _ctx(self, name: str, device=None) -> LoadContext:
        import torch
        dev = device or ComputeDevice()
        dev.torch_dtype()   # an unknown dtype is refused here, by name
        # the slot's precision: the requested one only where parity allows it for every metric the slot serves
        dtype, _ = slot_dtype(name, dev.dtype, self._paper_checkpoint(name))
        return LoadContext(name, Path(self.weights_dir), self.allow_hub, dev.torch_device(), getattr(torch, dtype),
                           dev.batch_size, self)

    def status(self, name: str) -> SlotStatus:
        """Availability, source and fingerprint without loading the model."""
        purpose = SLOTS[name].purpose if name in SLOTS else ""
        try:
            ckpt = self._checkpoint(name)
        except SlotUnavailable as e:
            return SlotStatus(name, self.profile, False, e.checkpoint, "none", None, str(e), purpose)
        ctx = LoadContext(name, Path(self.weights_dir), self.allow_hub, None, None, 1, self)
        paths, source, missing = ckpt.locate(ctx)
        if paths is None:
            # locate says 'what is missing. how to provide it'; a message without the second sentence (a missing
            # package's) still makes one clear reason, never a TypeError in `bench weights` or a step
            expected, _, how = missing.partition(". ")
            return SlotStatus(name, self.profile, False, ckpt.name, source, None,
                              str(SlotUnavailable(name, self.profile, ckpt.name, expected, how)), purpose)
        for dep in ckpt.needs:
            st = self.status(dep)
            if not st.available:
                return SlotStatus(name, self.profile, False, ckpt.name, source, None,
                                  f"slot '{name}' needs slot '{dep}': {st.reason}", purpose)
        if ckpt.weightless:
            fp = ckpt.weightless
        elif paths:
            fp = fingerprint_path(paths[0]) if len(paths) == 1 else "+".join(fingerprint_path(p)[:16] for p in paths)
        else:
            fp = f"hub:{ckpt.hub_id}"
        return SlotStatus(name, self.profile, True, ckpt.name, source, fp, None, purpose)

    def statuses(self) -> list[SlotStatus]:
        return [self.status(n) for n in SLOTS]

    def manifest(self, names) -> dict[str, Any]:
        """slot -> checkpoint, source, fingerprint, availability: what a protocol digest and a manifest record;
        under BENCH_DTYPE other than float32 also the precision each slot runs at and why one was refused."""
        out = {}
        dtype = requested_dtype()
        for n in names:
            st = self.status(n)
            out[n] = {"checkpoint": st.checkpoint, "source": st.source, "fingerprint": st.fingerprint,
                      "available": st.available}
            if dtype != "float32":   # float32 manifests (and their protocol digests) stay as they were
                used, why = slot_dtype(n, dtype, self._paper_checkpoint(n))
                out[n]["precision"] = used
                if why:
                    out[n]["precision_refused"] = why
        return out

    def slot_or_reason(self, name: str, device=None) -> tuple[Any, Optional[str]]:
        """(model, None) or (None, reason): a missing slot is a reason to skip, never a number."""
        try:
            return self.slot(name, device), None
        except SlotUnavailable as e:
            return None, str(e)

    def slot(self, name: str, device=None) -> Any:
        """The loaded model of a slot (once per process); SlotUnavailable with one clear message otherwise."""
        import torch
        ckpt = self._checkpoint(name)
        ctx = self._ctx(name, device)
        # The fingerprint is in the key: weights imported into a slot while the process lives (a code server, the
        # UI's in-process runs) load afresh instead of the old model answering under the new fingerprint.
        st = self.status(name)
        key = (self.profile, name, ckpt.name, str(Path(self.weights_dir).resolve()), str(ctx.device), str(ctx.dtype),
               ctx.batch_size, st.fingerprint)
        with _load_lock:
            if key in _loaded:
                return _loaded[key]
            if not st.available:  # the status's reason is already the whole message: not wrapped in a second one
                err = SlotUnavailable(name, self.profile, ckpt.name, "unavailable", "")
                err.args = (st.reason or str(err),)
                raise err
            t0 = time.perf_counter()
            paths, _, _ = ckpt.locate(ctx)
            try:
                model = ckpt.load(ctx, paths or [])
            except ImportError as e:  # the loader's package (or one it needs) is missing or broken: a skip reason
                missing_mod = e.name or str(e).strip().splitlines()[0]
                raise SlotUnavailable(name, self.profile, ckpt.name, f"its loader cannot import {missing_mod!r} "
                                      f"({type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''})",
                                      "Install that package in this environment") from e
            add_load_seconds(time.perf_counter() - t0)
            if hasattr(model, "autocast_dtype"):   # RAFT, AMT-S, MUSIQ: autocast instead of a cast module
                model.autocast_dtype = None if ctx.dtype == torch.float32 else str(ctx.dtype).removeprefix("torch.")
            if hasattr(model, "autocast_dtype") and hasattr(model, "batch_size"):
                model.batch_size = max(1, int(ctx.batch_size))
            _loaded[key] = model
            return model

    def import_weights(self, name: str, src: str | os.PathLike) -> SlotStatus:
        """Copy a checkpoint file or folder into <weights_dir>/<slot>/ atomically, then report the slot."""
        if name not in SLOTS:
            raise KeyError(f"unknown model slot {name!r}; slots: {sorted(SLOTS)}")
        src = Path(src)
        if not src.exists():
            raise FileNotFoundError(f"{src} does not exist")
        dest = Path(self.weights_dir) / name
        dest.mkdir(parents=True, exist_ok=True)
        tmp = dest.parent / f".{name}.import-{uuid.uuid4().hex[:8]}"
        if src.is_dir():
            shutil.copytree(src, tmp)
            for item in tmp.iterdir():
                os.replace(item, dest / item.name)
            tmp.rmdir()
        else:
            shutil.copy2(src, tmp)
            os.replace(tmp, dest / src.name)
        return SlotRegistry(profile="paper", weights_dir=self.weights_dir, allow_hub=False,
                            checkpoints=self.checkpoints).status(name)


def clear_loaded() -> None:
    with _load_lock:
        _loaded.clear()
