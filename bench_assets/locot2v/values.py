"""The per-video value record of a LoCoT2V sub-dimension and the embedding helper, shared by pipeline.py and the
streamed reducers in stream.py (both import this module, neither imports the other)."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence

import numpy as np


@dataclass
class Value:
    """One sub-dimension of one video: a value in % or None with the reason, plus counts and provenance."""
    metric_id: str
    value: Optional[float]
    n_eval: int = 0
    n_failed: int = 0
    n_skipped: int = 0
    reason: Optional[str] = None
    detail: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.value is None:
            self.n_eval = 0
            if not self.n_failed and not self.n_skipped:
                self.n_skipped = 1
            if not self.reason:
                raise ValueError(f"{self.metric_id}: None needs a reason")
        else:
            self.value = float(self.value)
            self.n_eval = max(1, self.n_eval)


def none(metric_id: str, reason: str, failed: bool = False, **detail: Any) -> Value:
    return Value(metric_id, None, 0, int(failed), int(not failed), reason, detail)


def embed_unique(embedder, images: Sequence[np.ndarray]) -> np.ndarray:
    """Embed images, each distinct pixel array once (held frames, repeated backgrounds)."""
    keys = [hashlib.sha1(np.ascontiguousarray(im).tobytes() + str(im.shape).encode()).hexdigest() for im in images]
    first: dict[str, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    if not first:
        return np.zeros((0, 0), np.float32)
    emb = dict(zip(first, embedder.embed([images[i] for i in first.values()])))
    return np.stack([emb[k] for k in keys])
