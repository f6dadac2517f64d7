"""`bench demo` then a real `dagster-daemon`: the sensors tick, skip with a reason, and queue no run; a new
generator folder dropped in afterwards does get its runs (the negative control: the check can fail).

A bounded form of scripts/daemon_quiet.py: one MBench case and one generator (the cheapest world; the other four
benchmarks have no folder, so their sensors find nothing and say so), the quiet phase ends once every generator
sensor completed two ticks (minimum_interval_seconds=10; the second is a quick tick), then the control runs until a run is queued. The full
form, every benchmark for 120 s: `python scripts/daemon_quiet.py`.
"""
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_daemon_after_demo_queues_nothing_but_a_new_generator_does(tmp_path):
    out = tmp_path / "counts.json"
    t0 = time.monotonic()
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "daemon_quiet.py"), "--benchmarks", "mbench", "--seconds", "100",
         "--until-ticks", "2", "--negative-control", "--control-seconds", "75", "--work", str(tmp_path / "w"),
         "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=480)
    wall = time.monotonic() - t0
    tail = f"{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    assert proc.returncode == 0, tail
    r = json.loads(out.read_text())
    quiet, control = r["quiet"], r["control"]
    # the quiet phase: the demo's materialisations count, nothing is queued ...
    assert quiet["runs"] == [] and quiet["backfills"] == [], quiet["runs"]
    # ... and that is not vacuous: every generator sensor evaluated twice and said why it skipped
    for name in ("entitybench", "vistorybench", "mbench", "locot2v", "narrativetrack"):
        s = quiet["sensors"][f"{name}_generators_sensor"]
        assert s["status"].get("SKIPPED", 0) >= 2 and not s["status"].get("FAILURE"), (name, s)
    # a full check's reason, or a quick tick's ("unchanged since the check at HH:MM:SS UTC: <that reason>")
    for name, why in (("mbench", "every item and generator partition is up to date"),
                      ("entitybench", "no item or generator found")):
        reasons = set(quiet["sensors"][f"{name}_generators_sensor"]["skip_reasons"])
        assert reasons and all(r == why or (r.startswith("unchanged since the check at ") and
                                            r.endswith(f" UTC: {why}")) for r in reasons), (name, reasons)
    # the control: a new generator folder gets runs, for that generator only
    assert control["runs"], control
    assert {run["tags"].get("bench/generator") for run in control["runs"]} == {"newcomer"}
    assert r["failures"] == []
    # the daemon's whole process group was stopped (the script checks /proc and would have failed otherwise)
    assert "PASS" in proc.stdout and r["stop_s"] < 30
    print(f"demo {r['demo_s']} s, quiet {quiet['seconds']} s, control {control['seconds']} s, wall {wall:.0f} s")
