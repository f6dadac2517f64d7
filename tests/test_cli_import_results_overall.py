"""`bench import-results` of a file with overall values only (MBench's leaderboard submission): the side-by-side
line says the file has no per-item values, instead of claiming that we have no generator of that name (found
following the README on a clean clone: it printed "no generator of ours named 'mbench_changing' ... have none"
while mbench_changing was on our board)."""
from __future__ import annotations

import json

from bench_assets import cli
from tests.support import cli_env


def test_overall_only_import_says_there_is_nothing_per_item(tmp_path, monkeypatch, capsys):
    cli_env(monkeypatch, tmp_path)
    f = tmp_path / "leaderboard_submission.json"
    f.write_text(json.dumps([{"model_name": "gen1", "mode": "A", "geometry": 93.5, "identity": None},
                             {"model_name": "gen1", "mode": "T", "geometry": 91.0}]))
    assert cli.main(["import-results", "mbench", str(f), "--commit", "abc"]) == 0
    out = capsys.readouterr().out
    assert "gen1 [imported]" in out
    assert "no generator of ours named" not in out
    assert "side by side: the file has no per-item values" in out


def test_item_level_import_still_names_a_missing_generator(tmp_path, monkeypatch, capsys):
    """A file with per-item values and no generator of ours under its name keeps the old line."""
    cli_env(monkeypatch, tmp_path)
    d = tmp_path / "mylong"
    d.mkdir()
    (d / "temporal_flickering.json").write_text(json.dumps(
        {"overall_score": 97.0, "sample_scores": {"life_1": 96.0, "life_2": 98.0}}))
    assert cli.main(["import-results", "locot2v", str(d)]) == 0
    out = capsys.readouterr().out
    assert "side by side: no generator of ours named 'mylong'" in out
