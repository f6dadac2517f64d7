"""Issue 34 item 5: a staleness check that cannot run says so instead of switching itself off in silence.

Three fallbacks of core/automation.py used to turn weights or input staleness off without a word: ``slot_tags``
when the model registry cannot give its slots' fingerprints (the run then records none, so a later weights change
re-runs nothing), and the sensors' data paths and model registry when they cannot be built. Each is made to fire
here and its ``staleness unknown: <why>`` is looked for where a user looks: the sensor's or schedule's tick log
(a warning), the CLI's summary lines (``staleness_unknown_lines``, from the run's ``RunStats``) and the metadata of
every output the run materialised.
"""
from __future__ import annotations

import logging

import pandas as pd
import pytest
from dagster import (AssetKey, AssetRecordsFilter, DagsterInstance, RunRequest, asset, build_schedule_context,
                     build_sensor_context, instance_for_test)

from bench_assets.core import automation
from bench_assets.core.partitions import BenchmarkPartitions
from bench_resources.store import ParquetIOManager

P = BenchmarkPartitions("tiny", "thing")


@asset(partitions_def=P.items)
def tiny_item(context) -> pd.DataFrame:
    return pd.DataFrame({"item": [context.partition_key]})


class BrokenRegistry:
    """A model registry that cannot say what its slots hold (a corrupt weights folder, a broken mount)."""

    profile = "offline"

    def status(self, slot):
        raise RuntimeError("weights folder unreadable")

    def statuses(self):
        raise RuntimeError("weights folder unreadable")


class Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[tuple[int, str]] = []

    def emit(self, record):
        self.records.append((record.levelno, record.getMessage()))

    def warnings(self) -> list[str]:
        return [m for lvl, m in self.records if lvl == logging.WARNING]


def test_slot_tags_says_why_it_records_no_fingerprints():
    tags = automation.slot_tags(BrokenRegistry())
    assert automation.SLOT_FP_TAG not in tags
    why = tags[automation.STALENESS_UNKNOWN_TAG]
    assert why.startswith("weights:") and "RuntimeError: weights folder unreadable" in why


def test_an_unreadable_registry_reaches_the_cli_summary_and_the_outputs_metadata(tmp_path):
    """``bench evaluate``'s path (core/runner.py evaluate): the run's tags, its RunStats (the CLI summary's lines)
    and the metadata of what it materialised all say that weights staleness is unknown, and why."""
    from bench_assets.core.runner import evaluate

    resources = {"models": BrokenRegistry(), "io_manager": ParquetIOManager(root=str(tmp_path / "store"))}
    instance = DagsterInstance.ephemeral()
    stats = evaluate(instance, assets=[tiny_item], resources=resources, partitions=P, items=["a"], generators=[],
                     item_assets=["tiny_item"], generator_assets=[], aggregate_assets=[], show_progress=False)
    assert stats.materialized == [("tiny_item", "a")] and not stats.failed
    lines = automation.staleness_unknown_lines(stats)
    assert len(lines) == 1, lines
    assert lines[0].startswith("staleness unknown: weights:") and "weights folder unreadable" in lines[0]
    rec = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("tiny_item")), limit=1).records[0]
    meta = rec.asset_materialization.metadata
    assert "staleness_unknown" in meta, sorted(meta)
    assert meta["staleness_unknown"].value == lines[0]
    run = instance.get_run_by_id(rec.run_id)
    assert "weights folder unreadable" in run.tags[automation.STALENESS_UNKNOWN_TAG]


def test_a_run_whose_checks_ran_says_nothing(tmp_path):
    class Registry(BrokenRegistry):
        def status(self, slot):
            from bench_resources.models.base import SlotStatus
            return SlotStatus(slot, "offline", False, f"{slot} checkpoint", "local", None, "missing")

        def statuses(self):
            return []

    from bench_assets.core.runner import evaluate
    resources = {"models": Registry(), "io_manager": ParquetIOManager(root=str(tmp_path / "store"))}
    instance = DagsterInstance.ephemeral()
    stats = evaluate(instance, assets=[tiny_item], resources=resources, partitions=P, items=["a"], generators=[],
                     item_assets=["tiny_item"], generator_assets=[], aggregate_assets=[], show_progress=False)
    assert automation.staleness_unknown_lines(stats) == []
    rec = instance.fetch_materializations(AssetRecordsFilter(asset_key=AssetKey("tiny_item")), limit=1).records[0]
    assert "staleness_unknown" not in rec.asset_materialization.metadata


def _break(monkeypatch, paths: bool, models: bool):
    import bench_resources.config
    import bench_resources.paths

    def no_paths(*a, **k):
        raise OSError("BENCH_DATA_ROOT is on a mount that is gone")

    def no_models(*a, **k):
        raise RuntimeError("profile file unreadable")

    if paths:
        monkeypatch.setattr(bench_resources.paths, "BenchPaths", no_paths)
    if models:
        monkeypatch.setattr(bench_resources.config, "build_resources", no_models)


@pytest.mark.parametrize("paths,models", [(True, False), (False, True), (True, True)])
def test_the_sensor_tick_logs_each_check_it_cannot_run(monkeypatch, tmp_path, paths, models):
    _break(monkeypatch, paths, models)
    (tmp_path / "generators").mkdir()
    sensor = automation.generator_sensor_factory(
        benchmark="tiny", partitions=P, item_ids=lambda: ["a"], generators_root=lambda: str(tmp_path / "generators"),
        item_assets=["tiny_item"], generator_assets=[], assets_fn=lambda: [tiny_item])
    instance = DagsterInstance.ephemeral()
    ctx = build_sensor_context(instance=instance)
    seen = Capture()
    ctx.log.addHandler(seen)
    result = sensor(ctx)
    warned = [w for w in seen.warnings() if w.startswith("staleness unknown: ")]
    assert any(w.startswith("staleness unknown: inputs:") and "mount that is gone" in w for w in warned) == paths
    assert any(w.startswith("staleness unknown: weights:") and "profile file unreadable" in w
               for w in warned) == models
    # the run it requests carries the same words, so what that run materialises says so too
    requests = [r for r in (result.run_requests or []) if isinstance(r, RunRequest)]
    assert requests, result
    tag = requests[0].tags[automation.STALENESS_UNKNOWN_TAG]
    assert [f"staleness unknown: {w}" for w in tag.split("; ")] == warned


def test_the_nightly_schedule_logs_it_too(monkeypatch):
    _break(monkeypatch, True, True)
    schedule = automation.nightly_stale_schedule(name="tiny_nightly", assets_fn=lambda: [tiny_item],
                                                 asset_keys=["tiny_item"], partitions=P)
    seen = Capture()
    with instance_for_test() as instance:
        ctx = build_schedule_context(instance=instance)
        ctx.log.addHandler(seen)
        schedule(ctx)
    warned = [w for w in seen.warnings() if w.startswith("staleness unknown: ")]
    # build_resources broken: the weights check and the store check (issue 39's sensor store check) cannot run
    assert len(warned) == 3 and warned[0].startswith("staleness unknown: inputs:") \
        and warned[1].startswith("staleness unknown: weights:") \
        and warned[2].startswith("staleness unknown: store:"), warned


def test_the_store_reads_the_tag_core_writes():
    """bench_resources may not import bench_assets: the IO manager names the tag itself; the two must agree."""
    from bench_resources import store
    assert store.STALENESS_UNKNOWN_TAG == automation.STALENESS_UNKNOWN_TAG
