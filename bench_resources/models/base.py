"""Shared pieces of every model slot: forward counters, the error, the status, fingerprints, batching."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

_lock = threading.Lock()
_forwards = 0
_items = 0
_seconds = 0.0


def forward_count() -> int:
    """Model forward calls in this process (one per batched call)."""
    return _forwards


def forward_items() -> int:
    """Items (images, pairs, texts, faces) that went through those forwards."""
    return _items


def forward_seconds() -> float:
    """Wall time spent inside model forwards."""
    return _seconds


@contextmanager
def counted(n_items: int) -> Iterator[None]:
    """Count one batched model forward over n_items and its wall time. Every slot's inference goes through it."""
    global _forwards, _items, _seconds
    t0 = time.perf_counter()
    try:
        yield
    finally:
        with _lock:
            _forwards += 1
            _items += n_items
            _seconds += time.perf_counter() - t0


def batches(seq: Sequence, size: int) -> Iterator[Sequence]:
    size = max(1, int(size))
    for i in range(0, len(seq), size):
        yield seq[i:i + size]


def runtime(device: Any = None) -> tuple[Any, Any, int]:
    """(torch.device, torch.dtype, batch_size) from a Device resource, a torch.device, a string or None (cpu)."""
    import torch
    from bench_resources.device import Device
    if device is None:
        device = Device(device="cpu")
    if isinstance(device, Device):
        return device.torch_device(), device.torch_dtype(), device.batch_size
    return torch.device(device), torch.float32, 16


class SlotUnavailable(RuntimeError):
    """One clear message: which slot and checkpoint, where its weights were expected, how to provide them."""

    def __init__(self, slot: str, profile: str, expected_location: str, how_to_provide: str, *,
                 checkpoint: str = "", problem: Optional[str] = None):
        self.slot, self.profile, self.checkpoint = slot, profile, checkpoint
        self.expected_location, self.how_to_provide = expected_location, how_to_provide
        self.problem = problem or f"has no weights at {expected_location}"
        what = f"{profile}: {checkpoint}" if checkpoint else profile
        msg = f"slot '{slot}' ({what}) {self.problem}"
        super().__init__(f"{msg}; {how_to_provide}" if how_to_provide else msg)


@dataclass(frozen=True)
class SlotStatus:
    slot: str
    profile: str
    available: bool
    checkpoint: str                # human-readable name of the checkpoint that would be (or is) loaded
    source: str                    # package:<pkg> | local:<dir> | hub:<id> | builtin:<algorithm> | none
    fingerprint: Optional[str]     # sha256 of the weight file(s), or a version string for weightless algorithms
    reason: Optional[str]          # None when available
    purpose: str = ""
    expected_location: Optional[str] = None


def package_file(package: str, *relative: str) -> Optional[Path]:
    """A file shipped inside an installed package, found without importing it (some import pkg_resources)."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(list(spec.submodule_search_locations)[0]).joinpath(*relative)
    return p if p.exists() else None


_memo: dict[tuple[str, str], str] = {}


def _sidecar(path: Path) -> Path:
    return (path.parent if path.is_file() else path) / f".fingerprint-{path.name}.json"


def fingerprint_path(path: Path) -> str:
    """sha256 of a file, or of a folder's files (relative names + bytes). Hashed once: the digest is kept in a
    sidecar ``.fingerprint-<name>.json`` keyed by the files' size and mtime (and in memory, for read-only places)."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(
        p for p in path.rglob("*") if p.is_file() and not p.name.startswith(".fingerprint"))
    stamp = json.dumps([(f.name if path.is_file() else str(f.relative_to(path)), f.stat().st_size,
                         f.stat().st_mtime_ns) for f in files])
    key = (str(path.resolve()), stamp)
    if key in _memo:
        return _memo[key]
    cache = _sidecar(path)
    try:
        cached = json.loads(cache.read_text())
        if cached.get("stamp") == stamp:
            _memo[key] = cached["sha256"]
            return cached["sha256"]
    except (OSError, ValueError):
        pass
    h = hashlib.sha256()
    for f in files:
        if path.is_dir():
            h.update(str(f.relative_to(path)).encode() + b"\0")
        with open(f, "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
    digest = h.hexdigest()
    _memo[key] = digest
    try:
        tmp = cache.with_name(f"{cache.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"stamp": stamp, "sha256": digest}))
        os.replace(tmp, cache)
    except OSError:  # read-only location: the in-memory memo still saves rehashing in this process
        pass
    return digest


def fingerprint_paths(paths: Sequence[Path]) -> str:
    """One file: its sha256. Several: sha256 over 'name:sha256' lines, so the digest is still one hex string."""
    if len(paths) == 1:
        return fingerprint_path(paths[0])
    lines = "".join(f"{Path(p).name}:{fingerprint_path(p)}\n" for p in paths)
    return hashlib.sha256(lines.encode()).hexdigest()
