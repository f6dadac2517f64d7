"""MBench results as ``leaderboard_submission.json``: one row per (generator, mode), one column per sub-dimension.

The MBench code (GitHub ``study-overflow/MBench``) could not be fetched here, so the columns follow the spec
(../shared/spec/mbench.md, paper Table 2): ``model_name``, ``mode`` (T or A) and the 12 sub-dimension M-Scores on
[0, 100], keyed by the sub-dimension's own name. Pure: the board in, ``{file name: JSON}`` out.
A cell without a value stays null (a 0 would rank a model that was never measured); why, and every cell's counts,
are in ``leaderboard_submission_counts.json`` beside it, row for row.
"""
from __future__ import annotations

from typing import Any

import pandas as pd

from bench_assets.core.records import number_or_none as _num
from bench_assets.core.results import json_scalar

SUB_DIMENSIONS = ("identity", "appearance", "geometry", "texture", "epipolar", "reprojection", "lighting", "style",
                  "state_evolution", "evolution_correctness", "text_instruction", "action_instruction")
PREFIX = "m_score."   # metric_specs.board_id
MODES = ("T", "A")
COUNTS = ("n_items", "n_eval", "n_failed", "n_skipped", "coverage", "reason")


def export(board: pd.DataFrame) -> dict:
    """``leaderboard_submission.json`` (a list of rows) and its counts file from the mbench board."""
    rows, counts = [], []
    for gen in sorted(set(board["generator"])):
        for mode in MODES:
            part = board[(board["generator"] == gen) & (board["slice"] == mode)]
            if part.empty:
                continue
            cells = {r["metric_id"][len(PREFIX):]: r for _, r in part.iterrows()
                     if str(r["metric_id"]).startswith(PREFIX)}
            row: dict[str, Any] = {"model_name": gen, "mode": mode}
            cnt: dict[str, Any] = {"model_name": gen, "mode": mode}
            for k in SUB_DIMENSIONS:
                c = cells.get(k)
                row[k] = None if c is None else _num(c["value"])
                cnt[k] = ({"reason": "no board row"} if c is None else
                          {f: json_scalar(c[f]) if f in c.index else None for f in COUNTS})
            rows.append(row)
            counts.append(cnt)
    if not rows:
        raise ValueError("no MBench board rows for mode T or A")
    return {"leaderboard_submission.json": rows, "leaderboard_submission_counts.json": counts}
