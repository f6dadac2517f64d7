"""Issue 35 item 3: ``bench import-results`` of official result files (core/imported_results.py and each
benchmark's reader), on fixtures written by hand in the official schemas (no release file is committed).

EntityBench: the authors' per-episode JSON (``_episode_result_to_json`` of Catherine-R-He/EntityBench 3776439
eval/evaluate_benchmark.py: MetricValue {value, n_evaluated, n_failed, n_skipped}, legacy bare numbers and vlm_*
keys as their ``_episode_result_from_json`` accepts them) and ``report_<method>.json`` (aggregate_results).
The store is a real Store (Parquet + DuckDB); the board tables are written into it directly, no Dagster run.
"""
from __future__ import annotations

import json

import pandas as pd
import pytest

from bench_assets.core import imported_results as IR
from bench_assets.core.metric_spec import board_frame
from bench_assets.entitybench import official as EOff
from bench_assets.entitybench import official_export as EO
from bench_assets.entitybench.metric_specs import METRIC_TABLES, METRICS as EB_METRICS
from bench_resources.store import Store
from tests.support import cli_env

KNOWN = {s.id for s in EB_METRICS.specs}


def _mv(value, n=3, f=0, s=0):
    return {"value": value, "n_evaluated": n, "n_failed": f, "n_skipped": s}


def _episode(eid: str, tier: str, base: float) -> dict:
    """One episode result as the authors' evaluator writes it, values varying with the episode."""
    return {"episode_id": eid, "tier": tier, "num_shots": 6,
            "vbench_means": {"subject_consistency": _mv(base), "imaging_quality": _mv(None, 0, 6, 0)},
            "metrics": {"cs_face": _mv(base / 2, 4, 1, 2), "intra_character_presence": _mv(base + 0.1),
                        "vlm_face_accuracy": _mv(base / 4),          # legacy key: their llm_face_accuracy
                        "_meta_cross_shot_gate": {"value": 1.0, "n_evaluated": 1, "n_failed": 0, "n_skipped": 0},
                        "cs_face_v2": _mv(base)},                     # a metric we do not have
            "per_entity_scores": {}, "gap_decay_data": []}


def _write_run(d, method="mymethod", report=True, broken=False):
    d.mkdir(parents=True, exist_ok=True)
    eps = [_episode("ep_a", "easy", 0.8), _episode("ep_b", "easy", 0.6), _episode("ep_c", "hard", 0.4)]
    for e in eps:
        (d / f"{e['episode_id']}.json").write_text(json.dumps(e))
    (d / "run_manifest.json").write_text(json.dumps({"method_name": method, "timestamp_utc": "2026-11-01T00:00:00Z"}))
    if report:
        rep = {"all": {"num_episodes": 3, "num_shots": 18,
                       "vbench": {"subject_consistency": {"mean": 0.6, "std": 0.1633, "min": 0.4, "max": 0.8,
                                                          "n_episodes_evaluated": 3, "n_episodes_total": 3,
                                                          "n_episodes_with_failures": 0},
                                  "imaging_quality": {"value": None, "n_episodes_evaluated": 0,
                                                      "n_episodes_total": 3, "n_episodes_with_failures": 3}},
                       "cs_face": {"mean": 0.3, "std": 0.08, "min": 0.2, "max": 0.4, "n_episodes_evaluated": 3,
                                   "n_episodes_total": 3}},
               "easy": {"num_episodes": 2, "num_shots": 12, "vbench": {},
                        "cs_face": {"mean": 0.35, "std": 0.05, "min": 0.3, "max": 0.4, "n_episodes_evaluated": 2,
                                    "n_episodes_total": 2}},
               "_manifest": {"method_name": method}}
        (d / f"report_{method}.json").write_text(json.dumps(rep))
    (d / "_additions_x.json").write_text(json.dumps({"not": "an episode"}))   # skipped by its underscore
    if broken:
        (d / "ep_broken.json").write_text("{not json")
    return d


def test_entitybench_reader_keeps_values_counts_nulls_and_legacy_keys(tmp_path):
    method, rows, problems, info = EOff.read_results(_write_run(tmp_path / "run", broken=True), KNOWN)
    assert method == "mymethod" and info["method_name"] == "mymethod"
    assert problems == [p for p in problems if p.startswith("ep_broken.json: not readable JSON")] and problems
    df = pd.DataFrame(rows)
    items = df[df.level == "item"]
    assert sorted(items["item"].unique()) == ["ep_a", "ep_b", "ep_c"]
    cs = items[(items.metric == "cs_face")].set_index("item")
    assert cs.loc["ep_b", "value"] == pytest.approx(0.3) and cs.loc["ep_c", "value"] == pytest.approx(0.2)
    assert (cs.loc["ep_a", "n_eval"], cs.loc["ep_a", "n_failed"], cs.loc["ep_a", "n_skipped"]) == (4, 1, 2)
    # vlm_face_accuracy is read as llm_face_accuracy (theirs and ours)
    assert set(items.loc[items.metric == "llm_face_accuracy", "metric_id"]) == {"llm_face_accuracy"}
    # a null stays null with its counts and a note, never 0
    iq = items[items.metric == "imaging_quality"].iloc[0]
    assert pd.isna(iq["value"]) and iq["n_failed"] == 6 and "null" in iq["note"]
    # a metric we do not have is kept, mapped to none of ours
    assert items.loc[items.metric == "cs_face_v2", "metric_id"].isna().all()
    assert (items.loc[items.metric == "cs_face_v2", "value_official"] == [0.8, 0.6, 0.4]).all()
    # overall rows come from the report as published, per tier
    ov = df[df.level == "overall"].set_index(["slice", "metric"])
    assert ov.loc[("all", "cs_face"), "value"] == pytest.approx(0.3)
    assert ov.loc[("easy", "cs_face"), "value"] == pytest.approx(0.35)
    assert pd.isna(ov.loc[("all", "imaging_quality"), "value"])


def test_entitybench_reader_without_report_aggregates_like_the_authors(tmp_path):
    method, rows, problems, _ = EOff.read_results(_write_run(tmp_path / "mymethod", report=False), KNOWN)
    assert problems == []
    ov = pd.DataFrame(rows).query("level == 'overall'").set_index(["slice", "metric"])
    # aggregate_results: per tier mean over episodes with a value, 4 decimals
    assert ov.loc[("all", "cs_face"), "value"] == pytest.approx(round((0.4 + 0.3 + 0.2) / 3, 4))
    assert ov.loc[("easy", "cs_face"), "value"] == pytest.approx(0.35)
    assert ov.loc[("hard", "subject_consistency"), "value"] == pytest.approx(0.4)


def test_entitybench_reader_refuses_a_folder_without_results(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "notes.json").write_text(json.dumps({"hello": 1}))
    with pytest.raises(ValueError, match="no EntityBench episode result"):
        EOff.read_results(tmp_path / "x", KNOWN)


def _board(gen: str, value: float) -> pd.DataFrame:
    rows = [{"generator": gen, "metric_id": "cs_face", "slice": "all", "value": value, "n_eval": 3},
            {"generator": gen, "metric_id": "subject_consistency", "slice": "all", "value": 0.9, "n_eval": 3}]
    return board_frame("entitybench", rows, EB_METRICS)


@pytest.fixture
def store_env(tmp_path, monkeypatch):
    cli_env(monkeypatch, tmp_path)
    store = Store(root=str(tmp_path / "store"))
    store.write_table(_board("mymethod", 0.55), store.table_path("entitybench_leaderboard", None))
    # our item rows of the same generator, in the table the specs read cs_face from
    items = pd.DataFrame([{"generator": "mymethod", "item": e, "metric_id": "cs_face", "value": v, "level": "item"}
                          for e, v in (("ep_a", 0.41), ("ep_b", 0.33), ("ep_z", 0.1))])
    store.write_table(items, store.table_path(METRIC_TABLES["presence"], None))
    return store


def test_cli_import_results_stores_marks_and_puts_items_side_by_side(tmp_path, store_env, capsys):
    from bench_assets import cli
    sbs = tmp_path / "sbs.csv"
    rc = cli.main(["import-results", "entitybench", str(_write_run(tmp_path / "run", broken=True)),
                   "--commit", "3776439", "--side-by-side", str(sbs)])
    out, err = capsys.readouterr()
    assert rc == 1 and "ep_broken.json" in err            # the bad file named, the others imported
    assert "mymethod: " in out and "3 items" in out and "3776439" in out
    stored = IR.read_rows(store_env, "entitybench")
    assert set(stored["commit"]) == {"3776439"} and set(stored["code"]) == {EOff.RESULTS_CODE}
    # side by side: ep_a, ep_b on both sides, ep_c only theirs, ep_z only ours
    df = pd.read_csv(sbs)
    cs = df[df.metric_id == "cs_face"].set_index("item")
    assert cs.loc["ep_a", "ours"] == pytest.approx(0.41) and cs.loc["ep_a", "theirs"] == pytest.approx(0.4)
    assert cs.loc["ep_b", "delta"] == pytest.approx(0.03)
    assert pd.isna(cs.loc["ep_c", "ours"]) and pd.isna(cs.loc["ep_z", "theirs"])
    # per episode 5 valued metrics of ours and imaging_quality null (cs_face_v2 is none of ours): 3 x 6 rows
    assert "2 item values on both sides, 13 only theirs, 1 only ours, 3 null on both" in out
    # the board: our row and the imported one, marked, never comparable, its source named
    assert cli.main(["leaderboard", "--benchmark", "entitybench", "--json"]) == 0
    board = pd.DataFrame(json.loads(capsys.readouterr().out))
    imp = board[(board.generator == "mymethod [imported]") & (board.slice == "all")].set_index("metric_id")
    assert set(board.loc[board.generator == "mymethod [imported]", "slice"]) == {"all", "easy"}
    assert imp.loc["cs_face", "value"] == pytest.approx(0.3) and not imp.loc["cs_face", "comparable"]
    assert imp.loc["cs_face", "protocol"] == f"imported: {EOff.RESULTS_CODE} @ 3776439"
    assert json.loads(imp.loc["cs_face", "detail"])["official_metric"] == "cs_face"
    ours = board[board.generator == "mymethod"].set_index("metric_id")
    assert ours.loc["cs_face", "value"] == pytest.approx(0.55) and ours.loc["cs_face", "comparable"]
    assert cli.main(["leaderboard", "--benchmark", "entitybench"]) == 0
    text = capsys.readouterr().out
    assert "0.300!" in text and "mymethod [imported]: " + EOff.RESULTS_CODE + " @ 3776439" in text
    # a re-import of the same files replaces its rows (one source), a second commit is a second source
    assert cli.main(["import-results", "entitybench", str(tmp_path / "run"), "--commit", "3776439"]) == 1
    assert IR.read_rows(store_env, "entitybench")["source"].nunique() == 1
    assert cli.main(["import-results", "entitybench", str(tmp_path / "run"), "--method", "other"]) == 1
    again = IR.read_rows(store_env, "entitybench")
    assert again["source"].nunique() == 2
    assert again.loc[again.method == "other", "commit"].isna().all()
    capsys.readouterr()
    assert cli.main(["leaderboard", "--benchmark", "entitybench"]) == 0
    assert "other [imported]: " + EOff.RESULTS_CODE + " @ commit not stated" in capsys.readouterr().out


def test_cli_import_results_comparable_only_when_the_run_manifests_match(tmp_path, store_env, capsys):
    """EntityBench's protocol: two runs are comparable iff the authors' manifest_comparable accepts their
    run_manifest.json files. A run whose manifest equals the one this platform writes for its runs (same config,
    checkpoints, libraries) is marked comparable; one knob changed, it is not, and the reason names the knob."""
    from bench_assets import cli
    from bench_assets.entitybench.manifest import run_manifest
    from bench_resources.config import build_resources
    res = build_resources()
    man = run_manifest("theirs", res["models"], res.get("judge"), timestamp_utc="2026-01-01T00:00:00Z")
    run = _write_run(tmp_path / "same", method="theirs")
    (run / "run_manifest.json").write_text(json.dumps(man))
    assert cli.main(["import-results", "entitybench", str(run)]) == 0
    assert "; comparable with ours: run manifests match" in capsys.readouterr().out
    other = _write_run(tmp_path / "other", method="other")
    changed = {**man, "config": {**man["config"], "gdino_box_threshold": 0.35}}
    (other / "run_manifest.json").write_text(json.dumps(changed))
    assert cli.main(["import-results", "entitybench", str(other)]) == 0
    out = capsys.readouterr().out
    assert "not comparable with ours: run manifests differ" in out and "config" in out
    assert cli.main(["leaderboard", "--benchmark", "entitybench", "--json"]) == 0
    board = pd.DataFrame(json.loads(capsys.readouterr().out))
    same = board[board.generator == "theirs [imported]"]
    diff = board[board.generator == "other [imported]"]
    assert len(same) and same["comparable"].all() and len(diff) and not diff["comparable"].any()
    assert "gdino_box_threshold" in json.loads(diff["detail"].iloc[0])["comparable_reason"]


def test_cli_import_results_bad_path_is_one_error(tmp_path, store_env, capsys):
    from bench_assets import cli
    assert cli.main(["import-results", "entitybench", str(tmp_path / "nowhere.json")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere.json" in err


@pytest.fixture
def eb_run(small_world, tmp_path, monkeypatch):
    data, _ = small_world(("faithful",))
    cli_env(monkeypatch, tmp_path, data)
    return data


def test_our_official_export_imports_back_item_for_item(eb_run, tmp_path, capsys):
    """A real run (bench evaluate, offline profile), exported in the authors' schema and imported back as if it were
    theirs: every item value pairs with ours at delta 0, nulls stay null on both sides, and the board gets the
    imported row set beside ours."""
    from bench_assets import cli
    gen = eb_run / "generators" / "faithful"
    assert cli.main(["evaluate", "--benchmark", "entitybench", "--generator", str(gen)]) == 0
    out = tmp_path / "official"
    assert cli.main(["export", "--benchmark", "entitybench", "--format", "official", "--out", str(out)]) == 0
    capsys.readouterr()
    sbs = tmp_path / "sbs.csv"
    assert cli.main(["import-results", "entitybench", str(out / "faithful"), "--method", "faithful-authors",
                     "--against", "faithful", "--side-by-side", str(sbs)]) == 0
    df = pd.read_csv(sbs)
    both = df.dropna(subset=["ours", "theirs"])
    # judge off: the judged metrics are null on both sides; every value either side has, the other has too, equal
    assert len(both) >= 8 and (both["delta"].abs() < 1e-12).all()
    assert df.loc[df["ours"].isna(), "theirs"].isna().all()
    # what only we have are our additions, which the authors' files never carry (_additions_<method>.json)
    only_ours = set(df.loc[df["theirs"].isna() & df["ours"].notna(), "metric_id"])
    assert only_ours and not only_ours & {*EO.ALL_METRICS, *EO.VBENCH_DIMENSIONS}
    assert {"cs_face", "subject_consistency", "intra_character_presence"} <= set(both["metric_id"])
    out_text = capsys.readouterr().out
    assert f"{len(both)} item values on both sides, 0 only theirs, {len(only_ours)} only ours" in out_text
    assert cli.main(["leaderboard", "--benchmark", "entitybench", "--json"]) == 0
    board = pd.DataFrame(json.loads(capsys.readouterr().out))
    imp = board[(board.generator == "faithful-authors [imported]") & (board.slice == "all")].set_index("metric_id")
    ours = board[(board.generator == "faithful") & (board.slice == "all")].set_index("metric_id")
    # our own run re-imported: its run_manifest.json matches ours under the authors' rule, so it is comparable
    assert len(imp) >= 8 and imp["comparable"].all()
    # their report's overall value of a per-episode metric is the mean over episodes: one episode here, so equal
    # to our board's raw mean where the board keeps no coverage correction
    sc = "subject_consistency"
    assert imp.loc[sc, "value"] == pytest.approx(ours.loc[sc, "raw_mean"], abs=1e-4)
