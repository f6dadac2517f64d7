"""Issue 39 (the daily loop): what the CLI prints is readable on a terminal.

`bench metrics` printed one 749-column line per metric; now one block per benchmark within the terminal's width
(long cells wrapped in their column, unit / aggregation / models on indented lines), every metric still listed,
``--wide`` keeps the one-line-per-metric table and ``--json`` every field."""
import json

from bench_assets import cli


def test_bench_metrics_fits_the_terminal_and_lists_every_metric(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    assert cli.main(["metrics", "--json"]) == 0
    ids = {(r["benchmark"], r["id"]) for r in json.loads(capsys.readouterr().out)}
    assert cli.main(["metrics"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= 120, max(lines, key=len)
    blocks: dict[str, list[str]] = {}
    bench = None
    for line in lines:
        if line and not line.startswith(" ") and line.endswith(" metrics)"):
            bench = line.split(" ", 1)[0]
        elif bench is not None:
            blocks.setdefault(bench, []).append(line)
    missing = [(b, i) for b, i in sorted(ids) if not any(x.startswith(f"  {i}  ") for x in blocks.get(b, []))]
    assert not missing, missing[:5]
    assert "models: " in text and "aggregation: " in text


def test_bench_metrics_wide_keeps_one_line_per_metric(capsys):
    assert cli.main(["metrics", "--benchmark", "mbench", "--wide"]) == 0
    lines = [x for x in capsys.readouterr().out.splitlines() if x.strip()]
    assert len([x for x in lines if x.split()[0] == "mbench"]) == len(cli._metric_specs("mbench").specs)
