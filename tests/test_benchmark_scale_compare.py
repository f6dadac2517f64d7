"""scripts/benchmark_scale.py --only offline-shot compares the tables of the unoptimised and the optimised offline
runs: its comparison must see every kind of difference it claims to bound (issue 38)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    spec = importlib.util.spec_from_file_location("_benchmark_scale", ROOT / "scripts" / "benchmark_scale.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def table(**over):
    df = pd.DataFrame({"metric_id": ["a", "b", "c"], "value": [0.5, None, 0.25], "n_eval": [1, 0, 2],
                       "reason": [None, "too few frames", None], "ok": [True, False, True]})
    for k, v in over.items():
        df[k] = v
    return {"tables/x/part.parquet": df}


def test_equal_tables_differ_by_nothing():
    worst, problems = _bench().table_difference(table(), table())
    assert worst == 0.0 and problems == []


def test_numbers_strings_missing_values_and_tables_are_all_seen():
    b = _bench()
    worst, problems = b.table_difference(table(), table(value=[0.5 + 3e-8, None, 0.25]))
    assert worst == np.float64(0.5 + 3e-8) - 0.5 and problems == []
    _, problems = b.table_difference(table(), table(value=[0.5, 0.1, 0.25]))
    assert problems == ["tables/x/part.parquet:value: missing values differ"]
    _, problems = b.table_difference(table(), table(reason=[None, "other", None]))
    assert problems == ["tables/x/part.parquet:reason: 1 cells differ"]
    _, problems = b.table_difference(table(), table(ok=[True, True, True]))
    assert problems == ["tables/x/part.parquet:ok: 1 cells differ"]
    _, problems = b.table_difference(table(), {**table(), "tables/y/part.parquet": pd.DataFrame()})
    assert problems == ["tables/y/part.parquet: only in the new run"]
    _, problems = b.table_difference(table(), {"tables/x/part.parquet": table()["tables/x/part.parquet"].iloc[:2]})
    assert "row count" in problems[0]
