"""LoCoT2V's per-video values as the project's value record (core/records.py ``MetricRecord``) and the embedding
helper, shared by pipeline.py and the streamed reducers in stream.py (both import this module, neither imports the
other)."""
from __future__ import annotations

import hashlib
from typing import Any, Optional, Sequence

import numpy as np

from bench_assets.core.records import MetricRecord


def value(metric_id: str, v: Optional[float], n_eval: int = 0, n_failed: int = 0, n_skipped: int = 0,
          reason: Optional[str] = None, detail: Optional[dict] = None) -> MetricRecord:
    """One sub-dimension of one video: a value in % resting on at least one instance, or None with the reason
    (one skipped instance when neither count says otherwise), plus counts and provenance (``detail``)."""
    detail = detail if detail is not None else {}
    if v is None:
        if not reason:
            raise ValueError(f"{metric_id}: None needs a reason")
        return MetricRecord(metric_id, None, 0, n_failed, n_skipped if (n_failed or n_skipped) else 1, reason, detail)
    return MetricRecord(metric_id, float(v), max(1, n_eval), n_failed, n_skipped, reason, detail)


def none(metric_id: str, reason: str, failed: bool = False, **detail: Any) -> MetricRecord:
    return value(metric_id, None, 0, int(failed), int(not failed), reason, detail)


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
