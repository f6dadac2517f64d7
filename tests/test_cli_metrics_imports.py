"""`bench metrics` lists the registry without importing the Dagster definitions, Dagster or torch (issue 39: it
took 37 s because the listing imported BENCHMARKS, i.e. every asset module and Dagster; 940d9bd reads metric_specs
alone). The time itself is printed by scripts/benchmark_cli.py (speed targets live in scripts); here the imports
that made it slow are what fails on a regression."""
import json
import subprocess
import sys

from tests.support import ROOT

# the console script's own function, in a fresh interpreter; the modules present after it returned
PROBE = """
import json, sys
from bench_assets import cli
code = cli.main(sys.argv[1:])
heavy = sorted(m for m in sys.modules
               if m in ("bench_assets.definitions", "bench_assets.benchmarks")
               or m.split(".")[0] in ("dagster", "torch", "torchvision", "transformers", "timm", "open_clip")
               or (m.startswith("bench_assets.") and m.rsplit(".", 1)[-1].endswith("assets")))
print("\\nPROBE " + json.dumps({"code": code, "heavy": heavy}))
"""


def _metrics(*args: str) -> tuple[dict, str]:
    proc = subprocess.run([sys.executable, "-c", PROBE, "metrics", *args], capture_output=True, text=True,
                          timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out, _, probe = proc.stdout.rpartition("\nPROBE ")
    return json.loads(probe), out


def test_bench_metrics_imports_neither_the_definitions_nor_dagster_nor_torch():
    probe, out = _metrics()
    assert probe["code"] == 0 and probe["heavy"] == [], probe["heavy"][:20]
    # a real listing naming every benchmark: the check is not passed by printing nothing
    for bench in ("entitybench", "vistorybench", "locot2v", "mbench", "narrativetrack"):
        assert bench in out, bench
    assert "subject_consistency" in out


def test_bench_metrics_json_imports_nothing_heavy_either():
    probe, out = _metrics("--json")
    assert probe["code"] == 0 and probe["heavy"] == [], probe["heavy"][:20]
    assert json.loads(out)
