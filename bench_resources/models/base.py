"""Shared pieces of every model slot: counters, errors, status, fingerprints, batching."""
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
from typing import Iterator, Optional, Sequence

_lock = threading.Lock()
_forwards = 0
_items = 0
_seconds = 0.0
_load_seconds = 0.0

# glibc returns a freed block over its mmap threshold (at most 32 MiB) to the kernel and maps fresh zeroed pages for
# the next one: a batch of 16 EfficientNet-Lite0 activations (16 x 96 x 113 x 113 floats, 78 MiB) page-faulted anew
# at every layer of every batch, half the offline embedder's CPU (0.8 of 1.6 CPU-s per 81-frame shot, all of it
# system time). Below HEAP_MMAP_THRESHOLD blocks come from the heap and are reused by the next batch; up to
# HEAP_TRIM_THRESHOLD of free heap top is kept instead of handed back (at 256 MiB a 16-frame batch's blocks were still
# trimmed and re-faulted between passes; at 512 MiB not: tests/test_heap_retention.py), which is what the process may
# hold beyond its live data. Allocation only: the same arithmetic on the same bytes, values bitwise unchanged (same
# test). False: glibc's defaults (scripts/benchmark_scale.py's unoptimised path only).
RETAIN_FREED_HEAP = True
HEAP_MMAP_THRESHOLD = 256 << 20
HEAP_TRIM_THRESHOLD = 512 << 20
_heap_retained: Optional[bool] = None


def retain_freed_heap() -> bool:
    """Once per process, before its first model forward: raise glibc's mmap and trim thresholds (``mallopt``) so
    freed activation blocks are reused instead of unmapped. True when set; False where the C library is not glibc
    (nothing to change there) or ``RETAIN_FREED_HEAP`` is off."""
    global _heap_retained
    if _heap_retained is not None or not RETAIN_FREED_HEAP:
        return bool(_heap_retained)
    _heap_retained = False
    try:
        import ctypes
        import ctypes.util
        import platform
        if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
            return False
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        m_trim_threshold, m_mmap_threshold = -1, -3   # malloc.h
        _heap_retained = bool(libc.mallopt(m_mmap_threshold, HEAP_MMAP_THRESHOLD)) and \
            bool(libc.mallopt(m_trim_threshold, HEAP_TRIM_THRESHOLD))
    except (OSError, AttributeError):
        pass
    return _heap_retained


def forward_count() -> int:
    return _forwards


def forward_items() -> int:
    return _items


def forward_seconds() -> float:
    return _seconds


def load_seconds() -> float:
    """Wall seconds spent loading model slots in this process (once per slot: a fixed cost, not a per-shot one)."""
    return _load_seconds


def add_load_seconds(seconds: float) -> None:
    global _load_seconds
    with _lock:
        _load_seconds += seconds


@contextmanager
def counted(n_items: int) -> Iterator[None]:
    """Count one batched model forward over n_items and its wall time."""
    global _forwards, _items, _seconds
    if _heap_retained is None:
        retain_freed_heap()
    t0 = time.perf_counter()
    try:
        yield
    finally:
        with _lock:
            _forwards += 1
            _items += n_items
            _seconds += time.perf_counter() - t0


def batches(seq: Sequence, size: int) -> Iterator[Sequence]:
    for i in range(0, len(seq), max(1, size)):
        yield seq[i:i + size]


class NonFiniteOutput(RuntimeError):
    """A model slot returned NaN or inf: the evaluator failed (an overflow at a lower ``BENCH_DTYPE``, an input the
    network cannot take, broken weights). The metric is None with this reason, never a number made from it: a NaN
    cast to uint8 (a midpoint frame) or compared with a threshold (a flow magnitude) reads as a plausible value."""


def require_finite(x, slot: str, what: str, hint: str = ""):
    """``x`` (a torch tensor or numpy array) as it is when every element is finite; NonFiniteOutput naming the
    slot, what it returned, how many elements were not finite, and ``hint`` otherwise."""
    if hasattr(x, "detach"):
        import torch
        bad, total = int((~torch.isfinite(x)).sum()), x.numel()
    else:
        import numpy as np
        bad, total = int((~np.isfinite(x)).sum()), x.size
    if bad:
        dtype = str(x.dtype).removeprefix("torch.")
        raise NonFiniteOutput(f"slot '{slot}' returned {bad} non-finite value(s) of {total} in its {what} ({dtype})"
                              f"{': ' + hint if hint else ''}; the evaluator's failure, not the generator's")
    return x


class SlotUnavailable(RuntimeError):
    """One clear message: which slot, where its weights were expected, how to provide them."""

    def __init__(self, slot: str, profile: str, checkpoint: str, expected: str, how: str):
        self.slot, self.profile, self.checkpoint, self.expected, self.how = slot, profile, checkpoint, expected, how
        super().__init__(f"slot '{slot}' ({profile} profile: {checkpoint}) is unavailable: {expected}. {how}")


@dataclass(frozen=True)
class SlotStatus:
    slot: str
    profile: str
    available: bool
    checkpoint: str
    source: str
    fingerprint: Optional[str]
    reason: Optional[str]
    purpose: str = ""


def package_file(package: str, *relative: str) -> Optional[Path]:
    """A file shipped inside an installed package, found without importing it (some import pkg_resources)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(list(spec.submodule_search_locations)[0]).joinpath(*relative)
    return p if p.exists() else None


def fingerprint_path(path: Path) -> str:
    """sha256 over a file or a folder's files (names + bytes), cached beside it by size and mtime."""
    path = Path(path)
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file()
                                                 and not p.name.startswith(".fingerprint"))
    stamp = json.dumps([(str(f.relative_to(path.parent)), f.stat().st_size, f.stat().st_mtime_ns) for f in files])
    cache = (path.parent if path.is_file() else path) / f".fingerprint-{path.name}.json"
    try:
        cached = json.loads(cache.read_text())
        if cached.get("stamp") == stamp:
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
    try:
        tmp = cache.with_suffix(f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"stamp": stamp, "sha256": digest}))
        os.replace(tmp, cache)
    except OSError:  # read-only site-packages: recompute next time
        pass
    return digest
