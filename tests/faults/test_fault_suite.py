"""The fault suite's bounded form (scripts/fault_suite.py --bounded): a real `bench evaluate` SIGKILLed while a
pool="gpu" step holds its slot and resumed unaided to tables identical to a clean run, three evaluations at
once on a fresh home, every judge fault kind, bad inputs, and no canary key in any file written. Then the UI
after the CLI: the generator sensor, ticking on the home the CLI filled, requests nothing."""
import importlib.util
import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _suite():
    spec = importlib.util.spec_from_file_location("fault_suite", ROOT / "scripts" / "fault_suite.py")
    mod = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "scripts"))
    sys.modules["fault_suite"] = mod  # dataclasses look their module up there; bad_inputs imports it too
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_bounded_fault_suite_then_sensor_requests_nothing(tmp_path, monkeypatch):
    suite = _suite()
    home_before = os.environ.get("DAGSTER_HOME")
    figures = tmp_path / "figures.json"
    rc = suite.main(["--bounded", "--workdir", str(tmp_path / "work"), "--json", str(figures), "--timeout", "900"])
    data = json.loads(figures.read_text())
    # the suite sets a canary key and DAGSTER_HOME while it runs; later tests must not inherit them
    assert os.environ.get("ANTHROPIC_API_KEY") != suite.CANARY
    assert os.environ.get("DAGSTER_HOME") == home_before
    assert data["crash"]["survived"] == data["crash"]["kills"] == 1, data["crash"]
    assert "pool=gpu" in data["crash"]["trials"][0]["killed"]
    assert data["concurrent"]["finished"] == data["concurrent"]["started"] == 3, data["concurrent"]
    assert data["judge"]["escaped"] == [] and data["judge"]["uncounted"] == [], data["judge"]
    assert data["judge"]["batch_losses"] == 0
    assert data["canary"]["hits"] == [] and data["canary"]["files"] > 50
    assert data["inputs"]["collateral"] == 0, data["inputs"]
    assert data["inputs"]["tried"] >= 25
    assert rc == 0, {k: v for k, v in data.items() if not v["ok"]}

    # UI after CLI: on the home a clean `bench evaluate` filled, the sensor requests no run.
    from dagster import DagsterInstance, build_sensor_context
    clean = tmp_path / "work" / "crash" / "clean"
    for k, v in suite.bench_env(clean, clean / "data").items():
        monkeypatch.setenv(k, v)
    from bench_assets import definitions as d
    instance = DagsterInstance.get()
    try:
        ctx = build_sensor_context(instance=instance, repository_def=d.defs.get_repository_def())
        result = d.SENSORS["mbench"].evaluate_tick(ctx)
        assert list(result.run_requests or []) == [], [r.partition_key for r in result.run_requests]
        assert "up to date" in (result.skip_message or "")
    finally:
        instance.dispose()
