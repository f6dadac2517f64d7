"""The metric registry and the one board schema (core/metric_spec.py), and `bench metrics` over the five specs."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from bench_assets import cli
from bench_assets.benchmarks import BENCHMARKS
from bench_assets.core.metric_spec import (BOARD_COLUMNS, MetricSpec, MetricSpecs, all_parts, board_frame,
                                           check_board, comparability, join_substitutes, label_substitutes,
                                           substitute_label)
from bench_resources.models.registry import ModelRegistry
from bench_resources.models.specs import SLOTS

SPECS = MetricSpecs("demo", [
    MetricSpec("cs_face", "cross-shot", "higher", "DINOv2 cosine of admitted faces", slots=("image_embedder",)),
    MetricSpec("cs_face_kept", "cross-shot", "higher", "ours: cs_face x kept fraction", paper_id=None),
    MetricSpec("accuracy.cell", "cells", "higher", "one accuracy per dimension x format",
               pattern=r"accuracy\.[A-Z]{2}\.(mcq|yn)"),
    MetricSpec("overall", "overall", "higher", "mean of the dimensions", kind="aggregate",
               parts=("cs_face", "accuracy.cell")),
    MetricSpec("_meta_gate", "diagnostics", "none", "gated-out appearances", kind="diagnostic"),
])


def test_lookup_exact_then_pattern_and_duplicates_refused():
    assert SPECS["cs_face"].paper_id == "cs_face" and not SPECS["cs_face"].addition
    assert SPECS["cs_face_kept"].addition and SPECS["cs_face_kept"].higher_is_better
    assert SPECS["accuracy.EE.mcq"].id == "accuracy.cell"
    assert SPECS.get("accuracy.EE.open") is None
    with pytest.raises(KeyError, match="no MetricSpec"):
        SPECS["accuracy.EE.open"]
    with pytest.raises(ValueError, match="declared twice"):
        MetricSpecs("x", [SPECS["cs_face"], SPECS["cs_face"]])
    with pytest.raises(ValueError, match="names the parts"):
        MetricSpec("o", "f", "higher", "d", kind="aggregate")
    with pytest.raises(ValueError, match="direction"):
        MetricSpec("o", "f", "up", "d")
    # per-unit rows may carry another id than the board (MBench: the case score behind the M-Score)
    unit = MetricSpecs("u", [MetricSpec("m_score.identity", "entity", "higher", "d", unit_id="identity"),
                             MetricSpec("style", "env", "higher", "d")])
    assert unit.for_unit("identity").id == "m_score.identity" and unit.for_unit("style").id == "style"
    assert unit.for_unit("m_score.identity") is None and unit.get("identity") is None


def _rows():
    return [dict(generator="a", metric_id="cs_face", slice="all", value=0.8, coverage=1.0, n_eval=4,
                 substitute="image_embedder: efficientnet-lite0", detail={"n_pairs": 4}),
            dict(generator="a", metric_id="cs_face_kept", slice="all", value=0.6, coverage=1.0, n_eval=4),
            dict(generator="a", metric_id="accuracy.EE.mcq", slice="all", value=50.0, n_eval=2),
            dict(generator="a", metric_id="overall", slice="all", value=None, reason="needs all parts")]


def test_board_frame_is_the_schema_and_takes_addition_from_the_spec():
    board = board_frame("demo", _rows(), SPECS)
    assert list(board.columns) == list(BOARD_COLUMNS)
    assert board.set_index("metric_id")["addition"].to_dict() == {
        "cs_face": False, "cs_face_kept": True, "accuracy.EE.mcq": False, "overall": False}
    assert json.loads(board.loc[0, "detail"]) == {"n_pairs": 4}
    assert pd.isna(board.loc[3, "value"]) and board.loc[3, "reason"] == "needs all parts"
    # a row claiming the paper's id for an addition cannot: the flag comes from the spec, not the row
    lie = board_frame("demo", [dict(_rows()[1], addition=False)], SPECS)
    assert bool(lie.loc[0, "addition"]) is True
    with pytest.raises(KeyError, match="without a MetricSpec"):
        board_frame("demo", [dict(_rows()[0], metric_id="cs_objekt")], SPECS)
    with pytest.raises(KeyError, match="not in the schema"):
        board_frame("demo", [dict(_rows()[0], tier="all")], SPECS)


def test_check_board_names_every_problem():
    board = board_frame("demo", _rows(), SPECS)
    assert check_board(board, SPECS) == []  # the diagnostic need not be on the board
    short = board[board.metric_id != "overall"]
    assert check_board(short, SPECS) == ["overall: declared but not on the board"]
    alien = pd.concat([board, board.iloc[:1].assign(metric_id="mystery")])
    assert check_board(alien, SPECS) == ["mystery: no MetricSpec"]
    flipped = board.assign(addition=[True, True, False, False])
    assert check_board(flipped, SPECS) == ["cs_face: board's addition flag differs from the spec"]
    assert check_board(board.assign(tier="all"), SPECS) == ["columns outside the schema: ['tier']"]


def test_substitutes_come_from_the_slot_actually_used(tmp_path):
    offline, paper = ModelRegistry(profile="offline"), ModelRegistry(profile="paper", weights_dir=str(tmp_path))
    st = offline.status("image_embedder")
    assert st.available and st.checkpoint != SLOTS["image_embedder"].paper.name
    assert substitute_label(("image_embedder",), offline) == f"image_embedder: {st.checkpoint}"
    # the paper profile without weights: nothing runs, so nothing is a substitute (the value is None anyway)
    assert substitute_label(("image_embedder",), paper) is None
    # a weightless slot whose offline checkpoint is the paper's is not a substitute
    same = [s for s, spec in SLOTS.items() if spec.offline is not None and spec.offline.name == spec.paper.name
            and offline.status(s).available]
    assert same and substitute_label(same[:1], offline) is None
    df = label_substitutes(pd.DataFrame({"metric_id": ["cs_face", "cs_face_kept", "cs_face"]}), SPECS, offline)
    assert df["substitute"].tolist()[0] == f"image_embedder: {st.checkpoint}" and pd.isna(df["substitute"][1])
    assert join_substitutes(["b: y; a: x", None, "a: x", float("nan")]) == "a: x; b: y"
    assert join_substitutes([None, pd.NA]) is None
    # a checkpoint name holding ';' stays whole (the offline ReID's name does)
    odd = "reid: osnet (offline substitute; not a person-ReID model)"
    assert join_substitutes([f"{odd}; face: yunet", "face: yunet"]) == f"face: yunet; {odd}"
    # a part named by a few words starts a part too (NarrativeTrack's and MBench's non-slot marks)
    assert join_substitutes([f"{odd}; contextual recognition: offline heuristic; trigger judge: m (paper: S)"]) \
        == f"contextual recognition: offline heuristic; {odd}; trigger judge: m (paper: S)"


def test_aggregates_need_all_parts_and_comparability_is_per_metric():
    assert all_parts({"a": 1.0, "b": 2.0}, "overall") == (True, None)
    ok, why = all_parts({"a": 1.0, "b": None, "c": float("nan")}, "overall")
    assert not ok and why == "overall needs all 3 parts; without a value: b, c"
    recs = pd.DataFrame({"generator": ["g1", "g1", "g2", "g1", "g2"], "metric_id": ["m", "m", "m", "n", "n"],
                         "protocol": ["p1", "p1", "p2", "p1", "p1"]})
    c = comparability(recs).set_index(["generator", "metric_id"])
    assert not c.loc[("g1", "m"), "comparable"] and not c.loc[("g2", "m"), "comparable"]
    assert c.loc[("g1", "n"), "comparable"] and c.loc[("g2", "n"), "protocol"] == "p1"


def test_bench_metrics_lists_every_declared_metric_of_the_five(capsys):
    assert cli.main(["metrics", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    for name, b in BENCHMARKS.items():
        assert len(b.metrics) > 0, f"{name} declares no metric"
        mine = [r for r in listed if r["benchmark"] == name]
        assert sorted(r["id"] for r in mine) == sorted(s.id for s in b.metrics)
        for r in mine:
            s = b.metrics[r["id"]]
            assert (r["direction"], r["family"], r["addition"]) == (s.direction, s.family, s.addition)
    assert cli.main(["metrics", "--benchmark", "mbench"]) == 0
    text = capsys.readouterr().out
    assert "m_score.geometry" in text and "entitybench" not in text


def test_every_spec_slot_is_a_registry_slot():
    for name, b in BENCHMARKS.items():
        for s in b.metrics:
            unknown = [x for x in s.slots if x not in SLOTS]
            assert not unknown, f"{name}/{s.id}: unknown slots {unknown}"


def test_every_validity_expectation_names_a_declared_metric(tmp_path):
    """Each benchmark's real-footage suite (built, not run): every expectation resolves to a MetricSpec through its
    unit id, and every case a spec names as its validity check exists in the suite."""
    from bench_assets.core import footage
    from bench_assets.core import validity
    from bench_assets.definitions import validity_suites

    footage.require_footage("carphone_pristine.mp4", "bikes.mp4", "Megamind.avi", "vtest.avi")
    for name, build in validity_suites().items():
        suite = build(tmp_path / name)
        specs = BENCHMARKS[name].metrics
        validity.check_expectations(suite, specs)   # raises UndeclaredMetric naming the case and metric
        cases = {c.case_id for c in suite.cases}
        named = {c for s in specs for c in s.validity}
        assert named <= cases, f"{name}: specs name validity cases the suite lacks: {sorted(named - cases)}"
