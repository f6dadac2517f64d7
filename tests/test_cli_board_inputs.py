"""A plain `bench evaluate` also materialises the aggregates its leaderboard reads: ViStoryBench's Inception Score
(an unpartitioned asset over every shot image) was left out, so the README's ViStoryBench recipe showed
`inception_score None: inception score not computed` for the user's generator although the offline profile
computes it (EfficientNet-Lite0's ImageNet softmax)."""
from __future__ import annotations

import json
import shutil

from bench_assets import cli
from bench_assets.benchmarks import BENCHMARKS
from tests.support import DATA, cli_env


def test_board_assets_are_the_leaderboard_and_what_it_reads():
    assert cli.board_assets(BENCHMARKS["vistorybench"]) == ["vistorybench_inception_score", "vistorybench_leaderboard"]
    assert cli.board_assets(BENCHMARKS["mbench"]) == ["mbench_leaderboard"]


def test_vistorybench_recipe_gets_its_inception_score(tmp_path, monkeypatch, capsys):
    data = tmp_path / "mydata"
    shutil.copytree(DATA / "vistorybench" / "08", data / "vistorybench" / "08")
    gen = data / "generators" / "mystory"
    shutil.copytree(DATA / "generators" / "vistory_faithful" / "08", gen / "08")
    (gen / "generator.yaml").write_text("name: mystory\nbenchmark: vistorybench\nlanguage: en\n")
    cli_env(monkeypatch, tmp_path, data)
    assert cli.main(["evaluate", "--benchmark", "vistorybench", "--generator", str(gen)]) == 0
    capsys.readouterr()
    assert cli.main(["leaderboard", "--benchmark", "vistorybench", "--json"]) == 0
    rows = {r["slice"]: r for r in json.loads(capsys.readouterr().out)
            if r["metric_id"] == "inception_score" and r["generator"] == "mystory"}
    assert set(rows) == {"full", "lite"}
    for r in rows.values():
        assert r["value"] is not None and r["value"] >= 1.0, r     # IS of softmaxes is >= 1
        assert "EfficientNet-Lite0" in (r["substitute"] or "")     # the offline model, marked
