#!/usr/bin/env python3
"""Run only issue 23's identity validity cases of EntityBench (a bounded form of `bench validate --benchmark
entitybench`, which runs every case on every episode): the episodes that show faces (vcarphone, vdialogue) and the
cases cross_fade, heavy_compression, identity_swap_face_donor and identity_swap (the reference for "less than half
of a real swap"). Cases run only when frozen (scripts/freeze_validity_cases.py), exactly as `bench validate` runs them.

    .venv/bin/python scripts/validate_identity_cases.py
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

CASES = ["identity_swap", "cross_fade", "heavy_compression", "identity_swap_face_donor"]


def main() -> int:
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.validity import format_table, run_validity, verdict_counts
    from bench_assets.entitybench import validity as EV

    suites = {"entitybench": lambda wd: EV.build_suite(wd, episodes=list(EV.FACE_EPISODES), cases=CASES)}
    df = run_validity(BENCHMARKS, suites, ["entitybench"])
    print(format_table(df))
    return 1 if verdict_counts(df)["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
