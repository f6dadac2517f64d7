"""Launched runs (UI, sensors, backfills) execute in one process by default, so models load once per run."""
import pytest

from bench_assets.core import deploy


def test_executor_follows_bench_executor(monkeypatch):
    monkeypatch.delenv("BENCH_EXECUTOR", raising=False)
    assert deploy.executor_from_env().name == "in_process"
    monkeypatch.setenv("BENCH_EXECUTOR", "multiprocess")
    assert deploy.executor_from_env().name == "multiprocess"
    monkeypatch.setenv("BENCH_EXECUTOR", "in_process")
    assert deploy.executor_from_env().name == "in_process"
    monkeypatch.setenv("BENCH_EXECUTOR", "threads")
    with pytest.raises(ValueError, match="threads"):
        deploy.executor_from_env()


def test_every_job_of_the_location_runs_in_process(monkeypatch):
    monkeypatch.delenv("BENCH_EXECUTOR", raising=False)
    from bench_assets import definitions as d
    jobs = d.defs.get_repository_def().get_all_jobs()
    assert any(j.name == "__ASSET_JOB" for j in jobs)  # the UI's Materialize button
    assert {j.executor_def.name for j in jobs} == {"in_process"}
