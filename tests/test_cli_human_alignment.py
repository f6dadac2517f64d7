"""`bench human-alignment` as the README documents it: `--ratings CSV [--metrics CSV] [--split lite|full]
[--metric ID]`, over ViStoryBench's Lite split by default (the paper's Table 2), or against an outside metrics
table. The leaderboard here is a table written into the store (no evaluation run): Lite and full rank the four
methods in opposite orders, so the split a correlation was computed over shows in its sign."""
from __future__ import annotations

import json

import pandas as pd
import pytest
from scipy import stats

from bench_assets import cli
from tests.support import cli_env

METHODS = ["m_a", "m_b", "m_c", "m_d"]
RATINGS = [1.0, 2.0, 3.5, 3.0]                      # human character-consistency ratings of the four methods
LITE = {"cids_self": [10.0, 20.0, 40.0, 30.0], "occm": [5.0, 6.0, 9.0, 7.0]}   # both rank as the ratings do
FULL = {"cids_self": [40.0, 30.0, 10.0, 20.0], "occm": [9.0, 7.0, 5.0, 6.0]}   # the reverse


@pytest.fixture
def store_with_board(tmp_path, monkeypatch):
    cli_env(monkeypatch, tmp_path)
    rows = [{"benchmark": "vistorybench", "generator": g, "metric_id": m, "slice": sl, "value": vals[m][i]}
            for sl, vals in (("lite", LITE), ("full", FULL)) for m in vals for i, g in enumerate(METHODS)]
    table = tmp_path / "store" / "tables" / "vistorybench_leaderboard"
    table.mkdir(parents=True)
    pd.DataFrame(rows).to_parquet(table / "part.parquet", index=False)
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("method,dimension,rating\n" + "".join(f"{g},character,{r}\n" for g, r in zip(METHODS, RATINGS)))
    return tmp_path, ratings


def _rows(capsys, *argv) -> list[dict]:
    assert cli.main(["human-alignment", *argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_default_split_is_lite_as_the_paper_table_2(store_with_board, capsys):
    _, ratings = store_with_board
    default = {r["metric_id"]: r for r in _rows(capsys, "--ratings", str(ratings))}
    full = {r["metric_id"]: r for r in _rows(capsys, "--ratings", str(ratings), "--split", "full")}
    for m in LITE:
        assert default[m]["kendall_tau"] == pytest.approx(stats.kendalltau(RATINGS, LITE[m]).statistic)
        assert default[m]["pearson_r"] == pytest.approx(stats.pearsonr(RATINGS, LITE[m]).statistic)
        assert default[m]["n_methods"] == 4 and default[m]["slice"] == "lite"
        assert full[m]["kendall_tau"] == pytest.approx(stats.kendalltau(RATINGS, FULL[m]).statistic)
        assert full[m]["slice"] == "full"
    assert default["cids_self"]["kendall_tau"] > 0 > full["cids_self"]["kendall_tau"]


def test_metric_filter_repeatable_and_comma_separated(store_with_board, capsys):
    _, ratings = store_with_board
    assert [r["metric_id"] for r in _rows(capsys, "--ratings", str(ratings), "--metric", "occm")] == ["occm"]
    both = _rows(capsys, "--ratings", str(ratings), "--metric", "occm,cids_self")
    assert sorted(r["metric_id"] for r in both) == ["cids_self", "occm"]
    assert cli.main(["human-alignment", "--ratings", str(ratings), "--metric", "nope"]) == 2
    assert "unknown metric id(s) nope" in capsys.readouterr().err


def test_outside_metrics_table(store_with_board, capsys):
    """`--metrics CSV` reads another table's values (here a metric the store does not have), wide or long."""
    tmp, ratings = store_with_board
    mine = [0.3, 0.1, 0.9, 0.5]
    long = tmp / "outside_long.csv"
    long.write_text("method,metric_id,value\n" + "".join(f"{g},my_metric,{v}\n" for g, v in zip(METHODS, mine)))
    wide = tmp / "outside_wide.csv"
    wide.write_text("method,my_metric\n" + "".join(f"{g},{v}\n" for g, v in zip(METHODS, mine)))
    for path in (long, wide):
        rows = _rows(capsys, "--ratings", str(ratings), "--metrics", str(path))
        assert [r["metric_id"] for r in rows] == ["my_metric"]
        assert rows[0]["spearman_rho"] == pytest.approx(stats.spearmanr(RATINGS, mine).statistic)
        assert rows[0]["n_methods"] == 4


def test_split_names_vistorybench_only(store_with_board, capsys):
    _, ratings = store_with_board
    assert cli.main(["human-alignment", "--benchmark", "mbench", "--ratings", str(ratings), "--split", "lite"]) == 2
    assert "--split" in capsys.readouterr().err
