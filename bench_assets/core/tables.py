"""The long metric table every metric asset emits: one row per episode record or per instance."""
from __future__ import annotations

import json
from typing import Any, Optional

import pandas as pd

from bench_assets.core.records import MetricRecord

METRIC_COLUMNS = {
    "benchmark": "string", "generator": "string", "item": "string", "level": "string", "metric_id": "string",
    "shot": "Int64", "entity_id": "string", "value": "Float64", "n_eval": "Int64", "n_failed": "Int64",
    "n_skipped": "Int64", "reason": "string", "crop_id": "string", "frame_index": "Int64",
    "source_sha256": "string", "detail": "string", "protocol": "string",
}


def record_row(rec: MetricRecord, **keys: Any) -> dict[str, Any]:
    """An item-level (episode/story/...) row from a MetricRecord."""
    return {"level": "item", "metric_id": rec.metric_id, "value": rec.value, "n_eval": rec.n_eval,
            "n_failed": rec.n_failed, "n_skipped": rec.n_skipped, "reason": rec.reason, **keys}


def instance_row(metric_id: str, value: Optional[float], level: str, *, reason: Optional[str] = None,
                 detail: Optional[dict] = None, **keys: Any) -> dict[str, Any]:
    """A per-instance provenance row (per shot, per appearance, per pair)."""
    return {"level": level, "metric_id": metric_id, "value": value,
            "n_eval": int(value is not None), "n_failed": 0, "n_skipped": int(value is None),
            "reason": reason, "detail": json.dumps(detail, sort_keys=True) if detail else None, **keys}


def metric_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(METRIC_COLUMNS))
    return df.astype(METRIC_COLUMNS)
