"""Issue 25, "the same after a folder edit with the daemon running": `bench demo`, then a real `dagster-daemon`
process with the project's sensors on (``default_status=RUNNING``, nothing started by hand); a generator's output
file is replaced in place while the daemon runs. The daemon launches exactly one run, it materialises exactly the
partition whose file changed (counted from the instance's materialization events), and the stored row carries the
new file's sha256; the untouched generator's partition and the item are not re-run; afterwards the sensor is quiet.

The world: one MBench case and two generators (``mbench_consistent`` and a copy of it, ``newcomer``), the cheapest
benchmark whose generator output is one file per partition (an EntityBench episode costs minutes of Pillar 1 on two
cores for the same evidence). The helpers are scripts/daemon_quiet.py's (world, environment, daemon start/stop).
"""
import hashlib
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import daemon_quiet as dq  # noqa: E402
from tests.support.daemon import poll  # noqa: E402

SENSOR = "mbench_generators_sensor"
EDITED, OTHER, CASE = "mbench_consistent", "newcomer", "a_obj01"
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def runs_since(home: Path, after: float) -> list:
    from dagster import RunsFilter
    inst = dq._instance(home)
    try:
        return inst.get_runs(filters=RunsFilter(created_after=datetime.fromtimestamp(after, tz=timezone.utc)))
    finally:
        inst.dispose()


def sensor_ticks(home: Path, after: float) -> list:
    """Completed ticks of the MBench generator sensor after ``after`` (oldest first)."""
    from dagster._core.scheduler.instigation import InstigatorType
    inst = dq._instance(home)
    try:
        for state in inst.all_instigator_state(instigator_type=InstigatorType.SENSOR):
            if state.instigator_name == SENSOR:
                ticks = inst.get_ticks(state.instigator_origin_id, state.selector_id, after=after)
                return sorted((t for t in ticks if t.status.value in ("SKIPPED", "SUCCESS", "FAILURE")),
                              key=lambda t: t.timestamp)
        return []
    finally:
        inst.dispose()


def materialized_since(home: Path, after: float) -> list[tuple[str, str | None]]:
    """(asset, partition) of every materialization stored after ``after``."""
    from dagster import AssetRecordsFilter
    inst = dq._instance(home)
    try:
        out = []
        for key in inst.get_asset_keys():
            recs = inst.fetch_materializations(AssetRecordsFilter(asset_key=key, after_timestamp=after),
                                               limit=1000).records
            out += [(key.to_user_string(), r.partition_key) for r in recs]
        return sorted(out, key=str)
    finally:
        inst.dispose()


@pytest.mark.slow
def test_daemon_reruns_exactly_the_partition_whose_file_was_replaced(tmp_path):
    t_start = time.monotonic()
    data = dq.small_world(tmp_path, ("mbench",))
    dq.add_generator_copy(data, "mbench", OTHER)
    env = dq.environment(tmp_path, data)
    home = Path(env["DAGSTER_HOME"])
    demo = subprocess.run([sys.executable, "-m", "bench_assets.cli", "demo", "--benchmark", "mbench"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    assert demo.returncode == 0, demo.stdout[-2000:] + demo.stderr[-2000:]
    t_demo = time.monotonic() - t_start
    video = data / "generators" / EDITED / f"{CASE}.mp4"
    old_sha, other_sha = sha256(video), sha256(data / "generators" / OTHER / f"{CASE}.mp4")

    started = time.time()
    proc = dq.start_daemon(env, tmp_path / "daemon.log")
    try:
        # the sensor has looked once and found everything up to date (the demo's work counts)
        poll(lambda: sensor_ticks(home, started), lambda t: len(t) >= 1, 150, proc)
        assert runs_since(home, started) == [], "the daemon queued a run before anything was edited"

        # the edit: the generator's output file gets other content (a re-rendered video saved over it)
        edited_at = time.time()
        replacement = ROOT / "data" / "generators" / "mbench_changing" / f"{CASE}.mp4"
        staged = tmp_path / "staged.mp4"   # written beside, then renamed over it: a tick never sees half a file
        staged.write_bytes(replacement.read_bytes())
        os.replace(staged, video)
        new_sha = sha256(video)
        assert new_sha != old_sha

        # the daemon launches a run and it ends (the sensor's run and the inner runs it makes)
        poll(lambda: runs_since(home, edited_at),
                    lambda rs: any(r.tags.get("dagster/sensor_name") == SENSOR for r in rs)
                    and all(r.status.value in TERMINAL for r in rs), 240, proc)
        ended = time.time()
        # then the sensor looks again (a full tick after the run) and finds nothing to do: one run was enough
        poll(lambda: sensor_ticks(home, ended), lambda t: len(t) >= 1, 60, proc)
        after_runs = runs_since(home, edited_at)
    finally:
        stop_s = dq.stop_daemon(proc)
    assert dq._group_alive(proc.pid) == []

    launched = [r for r in after_runs if r.tags.get("dagster/sensor_name") == SENSOR]
    assert len(launched) == 1, [(r.job_name, r.tags) for r in launched]
    assert launched[0].job_name == "mbench_evaluate" and launched[0].status.value == "SUCCESS", \
        (tmp_path / "daemon.log").read_text()[-3000:]
    # the runs since the edit: that one, the partition runs it made inside (bench/parent_run), and at most the
    # automation sensor's refresh of an aggregate (eager leaderboard): none of them another partition
    inner = [r for r in after_runs if r.tags.get("bench/parent_run") == launched[0].run_id]
    others = [r for r in after_runs if r.run_id != launched[0].run_id and r not in inner]
    assert inner and all(r.status.value == "SUCCESS" for r in inner), [(r.job_name, r.status) for r in inner]
    assert all("dagster/partition" not in r.tags and r.tags.get("dagster/sensor_name") != SENSOR
               for r in others), [(r.job_name, r.tags) for r in others]
    assert {r.tags.get("dagster/partition") for r in inner} - {None} == {f"{CASE}|{EDITED}"}

    # exactly the edited partition: every partitioned materialization since the edit is mbench_consistent's
    done = materialized_since(home, edited_at)
    partitioned = sorted({(a, pk) for a, pk in done if pk is not None})
    pk = f"{CASE}|{EDITED}"
    assert {p for _, p in partitioned} == {pk}, partitioned
    assert "mbench_poses" in {a for a, _ in partitioned}   # the asset that reads the video ...
    assert not any(p in (CASE, f"{CASE}|{OTHER}") for _, p in done)  # ... not the case, not the other generator

    # the stored rows name the new content; the other generator's the old (unchanged) one
    from bench_resources.store import Store
    rows = Store(root=env["BENCH_STORE_ROOT"]).query(
        f"SELECT DISTINCT generator, source_sha256 FROM mbench_poses WHERE case_id = '{CASE}'")
    shas = dict(zip(rows.generator, rows.source_sha256))
    assert shas == {EDITED: new_sha, OTHER: other_sha}, shas
    print(f"demo {t_demo:.0f} s; daemon: 1 run launched ({len(inner)} inner, {len(others)} other), "
          f"{len(partitioned)} asset partitions of {pk} ({', '.join(a for a, _ in partitioned)}), "
          f"{len([x for x in done if x[1] is None])} aggregates; stopped in {stop_s:.1f} s; "
          f"wall {time.monotonic() - t_start:.0f} s")
