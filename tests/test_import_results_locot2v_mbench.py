"""Issue 35: LoCoT2V per-metric {overall_score, sample_scores} out and in, MBench leaderboard_submission.json in
(both spellings: our export's sub-dimension keys and the leaderboard Space's display columns). Neither benchmark's
code could be fetched, so these are schema tests against the field names the issue and the leaderboard Space name;
every fixture is hand-written."""
from __future__ import annotations

import json

import pandas as pd
import pytest

from bench_assets.core.metric_spec import board_frame
from bench_assets.locot2v import official as LO
from bench_assets.locot2v.metric_specs import METRICS as L_METRICS
from bench_assets.mbench import official as MOff
from bench_assets.mbench import official_export as MO
from bench_assets.mbench.metric_specs import METRICS as M_METRICS
from bench_resources.store import Store
from tests.support import cli_env

L_KNOWN = {s.id for s in L_METRICS.specs}
M_KNOWN = {s.id for s in M_METRICS.specs}


def _l_records():
    rows = []
    for gen, base in (("gen1", 50.0), ("gen2", 20.0)):
        for j, sid in enumerate(("s001", "s002", "s003")):
            for k, mid in enumerate(("aesthetic_quality", "event_alignment", "herd.Themes")):
                v = None if (gen, sid, mid) == ("gen1", "s003", "event_alignment") else base + j * 10 + k
                rows.append({"generator": gen, "item": sid, "metric_id": mid, "value": v})
    return pd.DataFrame(rows)


def test_locot2v_export_writes_one_file_per_metric_and_reads_back(tmp_path):
    files = LO.export_results(_l_records(), "gen1", {"aesthetic_quality": 61.0, "event_alignment": None})
    assert set(files) == {"aesthetic_quality.json", "event_alignment.json", "herd.Themes.json"}
    ea = files["event_alignment.json"]
    assert list(ea) == list(LO.RESULT_KEYS) and ea["overall_score"] is None
    assert ea["sample_scores"] == {"s001": 51.0, "s002": 61.0, "s003": None}
    d = tmp_path / "gen1"
    d.mkdir()
    for k, v in files.items():
        (d / k).write_text(json.dumps(v))
    (d / "notes.json").write_text(json.dumps({"hello": 1}))
    method, rows, problems, _ = LO.read_results(d, L_KNOWN)
    assert method == "gen1" and problems == ["notes.json: no overall_score / sample_scores"]
    df = pd.DataFrame(rows)
    items = df[df.level == "item"].set_index(["item", "metric_id"])["value"]
    assert items[("s002", "herd.Themes")] == 62.0 and pd.isna(items[("s003", "event_alignment")])
    ov = df[df.level == "overall"].set_index("metric_id")
    assert ov.loc["aesthetic_quality", "value"] == 61.0 and ov.loc["aesthetic_quality", "n_eval"] == 3
    assert ov.loc["event_alignment", "n_eval"] == 2


def test_locot2v_one_file_of_every_metric_and_list_scores(tmp_path):
    f = tmp_path / "results.json"
    f.write_text(json.dumps({"overall": {"overall_score": 40.0, "sample_scores": [{"sample_id": "a", "score": 39.0},
                                                                                   {"sample_id": "b", "score": 41.0}]},
                             "a_metric_we_lack": {"overall_score": 0.5, "sample_scores": {}}}))
    method, rows, problems, _ = LO.read_results(f, L_KNOWN)
    df = pd.DataFrame(rows)
    assert problems == [] and set(df.loc[df.metric == "a_metric_we_lack", "metric_id"].isna()) == {True}
    assert df[(df.metric == "overall") & (df.level == "item")]["value"].tolist() == [39.0, 41.0]


def _env(tmp_path, monkeypatch):
    cli_env(monkeypatch, tmp_path)
    return Store(root=str(tmp_path / "store"))


def test_cli_locot2v_export_official_and_import(tmp_path, monkeypatch, capsys):
    from bench_assets import cli
    store = _env(tmp_path, monkeypatch)
    store.write_table(board_frame("locot2v", [
        {"generator": g, "metric_id": "aesthetic_quality", "slice": "all", "value": v} for g, v in
        (("gen1", 60.0), ("gen2", 30.0))], L_METRICS), store.table_path("locot2v_leaderboard", None))
    store.write_table(_l_records().assign(level="item"), store.table_path("locot2v_visual", None))
    out = tmp_path / "official"
    assert cli.main(["export", "--benchmark", "locot2v", "--format", "official", "--out", str(out)]) == 0
    a2 = json.loads((out / "gen2" / "aesthetic_quality.json").read_text())
    assert a2 == {"overall_score": 30.0, "sample_scores": {"s001": 20.0, "s002": 30.0, "s003": 40.0}}
    capsys.readouterr()
    assert cli.main(["import-results", "locot2v", str(out / "gen2"), "--commit", "deadbee"]) == 0
    text = capsys.readouterr().out
    assert "side by side with gen2: 9 item values on both sides" in text
    assert cli.main(["leaderboard", "--benchmark", "locot2v", "--json"]) == 0
    b = pd.DataFrame(json.loads(capsys.readouterr().out))
    imp = b[b.generator == "gen2 [imported]"]
    assert imp.set_index("metric_id").loc["aesthetic_quality", "value"] == 30.0 and not imp["comparable"].any()


def test_mbench_submission_in_both_spellings(tmp_path):
    ours = MO.export(board_frame("mbench", [
        {"generator": "m1", "metric_id": f"m_score.{k}", "slice": mode, "value": 10.0 * i + (mode == "A")}
        for i, k in enumerate(MO.SUB_DIMENSIONS) for mode in ("T", "A")], M_METRICS))["leaderboard_submission.json"]
    f = tmp_path / "leaderboard_submission.json"
    f.write_text(json.dumps(ours))
    name, rows, problems, _ = MOff.read_results(f, M_KNOWN)
    df = pd.DataFrame(rows).set_index(["slice", "metric_id"])
    assert name == "m1" and problems == []
    assert df.loc[("A", "m_score.geometry"), "value"] == 10.0 * MO.SUB_DIMENSIONS.index("geometry") + 1
    assert df.loc[("T", "m_score.action_instruction"), "value"] == 110.0
    # the leaderboard Space's display columns; a row of another model and a row without a mode are named
    g = tmp_path / "space.json"
    g.write_text(json.dumps([
        {"Model Name": "m2", "Model Type": "action-conditioned", "Human Identity": 71.5, "Physical Plausibility": 12.0,
         "Total M-Score": 40.0, "Date": "2026-06-01"},
        {"Model Name": "m3", "Model Type": "text-conditioned", "Human Identity": 1.0},
        {"Model Name": "m2", "Human Identity": 5.0}]))
    name, rows, problems, _ = MOff.read_results(g, M_KNOWN)
    df = pd.DataFrame(rows)
    assert name == "m2" and len(problems) == 2
    assert "row 2" in problems[0] and "m3" in problems[1]
    got = dict(zip(df["metric"], df["metric_id"]))
    assert got["Human Identity"] == "m_score.identity" and got["Physical Plausibility"] == "m_score.evolution_correctness"
    assert pd.isna(got["Total M-Score"]) and "Date" not in got
    assert set(df["slice"]) == {"A"}


def test_mbench_bad_file_is_one_error(tmp_path):
    f = tmp_path / "x.json"
    f.write_text(json.dumps([{"Model Name": "m"}]))
    with pytest.raises(ValueError, match="no MBench submission row read.*mode T or A"):
        MOff.read_results(f, M_KNOWN)
