"""NarrativeTrack's accuracy against the official ``eval_pipeline.get_accuracy`` (apple/ml-narrativetrack), through
a golden fixture: tests/parity/golden/narrativetrack_accuracy.json, written by scripts/parity_golden_narrativetrack.py
from the official code at the commit it records, on the fixed responses in narrativetrack_responses.json.

The project's strict scoring equals the official verdict on every well-formed answer. Where they differ, the
difference comes from the official matching rule and is asserted here, case by case: the official code counts a
binary or MC answer correct when the gold string is a SUBSTRING of the answer ("a" in "(c) the cat"), and an ordering
correct when its first TWO items match. The project's spec scores strictly (exact answer; the full order) and
reports a lenient reading beside it."""
from __future__ import annotations

import json
from pathlib import Path

GOLDEN = Path(__file__).parent / "golden"

# id -> (official verdict, project strict, project lenient): the documented differences, nothing else may differ
DOCUMENTED = {
    "b5": (1, 0, 1),   # "no, she leaves": official substring match; strict wants "no"; lenient digs it out
    "m4": (1, 0, 0),   # "(c) the cat" for gold (a): official substring "a" in "cat" counts it right
    "o4": (1, 0, 0),   # "a, b" for a, b, c: official compares the first two items only
}


def test_accuracy_matches_the_official_code_except_documented_rules():
    from bench_assets.narrativetrack.scoring import score
    items = json.loads((GOLDEN / "narrativetrack_responses.json").read_text())
    golden = json.loads((GOLDEN / "narrativetrack_accuracy.json").read_text())
    assert golden["commit"] and golden["total_accuracy_line"] == "Total Accuracy: 75.000%"
    assert set(golden["correct"]) == {r["id"] for r in items}
    differ = {}
    for r in items:
        s = score(r["model_response"], r["answer"], r["question_type"])
        ref, strict, lenient = golden["correct"][r["id"]], int(s["strict"]), int(s["lenient"])
        if ref != strict:
            differ[r["id"]] = (ref, strict, lenient)
    assert differ == DOCUMENTED
    official = sum(golden["correct"].values()) / len(items)
    ours = sum(int(score(r["model_response"], r["answer"], r["question_type"])["strict"]) for r in items) / len(items)
    assert (official, ours) == (12 / 16, 9 / 16)
