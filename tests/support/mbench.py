"""MBench: the embedded world copied into a temporary data root, one offline evaluation, and board rows."""
from __future__ import annotations

import pandas as pd

from bench_assets.benchmarks import BENCHMARKS
from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE
from tests.support import DATA, QUIET, ROOT, copy_world, run_benchmark  # noqa: F401

MB = BENCHMARKS["mbench"]
GENERATORS = ("mbench_consistent", "mbench_changing", "mbench_lighting", "mbench_ignoring")


def _world(tmp_path, generators=GENERATORS):
    return copy_world(tmp_path, ["mbench"], generators)


def _run(instance, data, store_root, judge=None):
    return run_benchmark("mbench", instance, data, store_root, judge)


CASES = pd.DataFrame({"case_id": ["h1", "h2", "h3", "h4", "o1", "t1", "t2"],
                      "subset": ["human"] * 4 + ["object", "human", "human"],
                      "mode": ["A"] * 5 + ["T", "T"]})


def _row(g, case, metric, value, triggered=True, n_failed_evaluator=0, n_failed=0, reason=None, substitute=None):
    return {"generator": g, "case_id": case, "metric_id": metric, "value": value, "triggered": triggered,
            "reason": reason if value is None else None, "trigger_reason": None, "protocol": "p1",
            "n_failed": n_failed, "n_failed_evaluator": n_failed_evaluator, "substitute": substitute}


def _scores(identity: dict, extra=()) -> pd.DataFrame:
    rows = []
    for g, vals in identity.items():
        for case, v in zip(("h1", "h2", "h3", "h4"), vals):
            rows.append(_row(g, case, "identity", v, reason="no face track with >= 2 detections"))
            rows.append(_row(g, case, IDENTITY_FIRST_APPEARANCE, None if v is None else v / 2,
                             reason="no face track with >= 2 detections"))
            rows.append(_row(g, case, "appearance", 0.9))
        for m in ("geometry", "texture", "action_instruction"):
            rows.append(_row(g, "o1", m, 0.8))
        for case in ("h1", "h2", "h3", "h4"):
            rows.append(_row(g, case, "action_instruction", 0.7))
    return pd.DataFrame(rows + list(extra))
