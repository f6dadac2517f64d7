"""The cluster path on one machine: PostgreSQL instance storage, the Dagster daemon, Celery workers on Redis.

A multi-partition EntityBench slice runs through `dagster job launch` -> queued run -> daemon -> run worker ->
celery executor -> two workers; its tables must equal an in-process run of the same slice, and its steps must have
run in worker processes. A second test checks that the `gpu` pool serialises steps across concurrent runs.
"""
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

from tests.support.distributed import services

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
BIN = Path(sys.executable).parent

if services.missing():
    if os.environ.get("BENCH_REQUIRE_DISTRIBUTED") == "1":
        pytest.fail(f"BENCH_REQUIRE_DISTRIBUTED=1 but missing: {services.missing()}", pytrace=False)
    pytest.skip(f"missing {services.missing()}; CI installs them", allow_module_level=True)
pytest.importorskip("dagster_celery")
pytest.importorskip("dagster_postgres")

SLICE_ITEMS = ["e0001"]
SLICE_GENERATORS = ["faithful", "drift"]
SLICE_ASSETS = ["entitybench_outputs", "entitybench_grounding", "entitybench_pillar1",
                "entitybench_presence_consistency"]


def _home(tmp: Path, pg) -> dict:
    host, port, user, db = pg
    home = tmp / "home"
    home.mkdir()
    shutil.copy(ROOT / "deploy" / "postgres-celery" / "dagster.yaml", home / "dagster.yaml")
    return {"DAGSTER_HOME": str(home), "DAGSTER_PG_HOST": host, "DAGSTER_PG_PORT": str(port),
            "DAGSTER_PG_USER": user, "DAGSTER_PG_PASSWORD": "", "DAGSTER_PG_DB": db}


def _world(tmp: Path) -> Path:
    data = tmp / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    for e in SLICE_ITEMS:
        shutil.copy(DATA / "entitybench" / "episodes" / f"{e}.json", data / "entitybench" / "episodes")
    for g in SLICE_GENERATORS:
        (data / "generators" / g).mkdir(parents=True)
        shutil.copy(DATA / "generators" / g / "generator.yaml", data / "generators" / g)
        for e in SLICE_ITEMS:
            shutil.copytree(DATA / "generators" / g / e, data / "generators" / g / e)
    return data


def _wait_runs(instance, run_ids, timeout=420, procs=()):
    from dagster import DagsterRunStatus
    done = {DagsterRunStatus.SUCCESS, DagsterRunStatus.FAILURE, DagsterRunStatus.CANCELED}
    deadline = time.time() + timeout
    while time.time() < deadline:
        dead = [p.args[:3] for p in procs if p.poll() is not None]
        assert not dead, f"a service process exited: {dead}"
        runs = [instance.get_run_by_id(r) for r in run_ids]
        if all(r is not None and r.status in done for r in runs):
            return runs
        time.sleep(1)
    raise TimeoutError(f"runs not finished after {timeout}s: {[(r.run_id[:8], r.status) for r in runs if r]}")


def _launch(env, workspace, job, tags) -> str:
    run_id = os.urandom(16).hex()
    run_id = f"{run_id[:8]}-{run_id[8:12]}-{run_id[12:16]}-{run_id[16:20]}-{run_id[20:]}"
    r = subprocess.run([str(BIN / "dagster"), "job", "launch", "-w", str(workspace), "-j", job, "--run-id", run_id,
                        "--tags", json.dumps(tags)], env=env, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, f"dagster job launch {job}: {r.stderr[-3000:]}"
    return run_id


def _events(instance, run_id, event_type):
    from dagster import DagsterEventType, EventRecordsFilter  # noqa: F401
    return [e for e in instance.all_logs(run_id) if e.dagster_event and e.dagster_event.event_type_value == event_type]


def _partition_tags(generator: str, episode: str) -> dict:
    return {"dagster/partition": f"{episode}|{generator}", "dagster/partition/episode": episode,
            "dagster/partition/generator": generator}


def test_celery_slice_matches_local_run(tmp_path):
    from dagster import DagsterInstance, instance_for_test, materialize
    from bench_assets import definitions as d
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    data = _world(tmp_path)
    with services.postgres(tmp_path / "pg") as pg, services.redis() as redis_url:
        env = {**os.environ, **_home(tmp_path, pg), "PYTHONPATH": str(ROOT), "BENCH_EXECUTOR": "celery",
               "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",  # dagster-celery execs `celery`
               "BENCH_CELERY_BROKER": f"{redis_url}/0", "BENCH_CELERY_BACKEND": f"{redis_url}/1",
               "BENCH_DATA_ROOT": str(data), "BENCH_GENERATORS_ROOT": str(data / "generators"),
               "BENCH_STORE_ROOT": str(tmp_path / "dist_store"), "BENCH_JUDGE_MODE": "off",
               "BENCH_GPU_QUEUE": "gpu"}
        workspace = tmp_path / "workspace.yaml"
        workspace.write_text(yaml.safe_dump({"load_from": [{"python_module": {
            "module_name": "bench_assets.definitions", "location_name": "bench", "working_directory": str(ROOT)}}]}))
        procs = []
        logs = []
        try:
            # worker 1 stands for a GPU host (queues dagster + gpu), worker 2 for a CPU host (dagster only)
            for name, queues in (("gpu-host", ["dagster", "gpu"]), ("cpu-host", ["dagster"])):
                log = open(tmp_path / f"{name}.log", "w")
                logs.append(log)
                cmd = [str(BIN / "dagster-celery"), "worker", "start", "-A", "dagster_celery.app", "-y",
                       str(ROOT / "deploy" / "postgres-celery" / "celery.yaml"), "-n", name,
                       "-i", "bench_assets.definitions", *sum((["-q", q] for q in queues), []),
                       "--", "--concurrency", "1", "--pool", "prefork"]
                procs.append(subprocess.Popen(cmd, env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                              start_new_session=True))
            log = open(tmp_path / "daemon.log", "w")
            logs.append(log)
            procs.append(subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env=env,
                                          cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True))
            os.environ.update({k: env[k] for k in ("DAGSTER_HOME", "DAGSTER_PG_HOST", "DAGSTER_PG_PORT",
                                                   "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD", "DAGSTER_PG_DB")})
            instance = DagsterInstance.get()
            instance.add_dynamic_partitions("entitybench_episodes", SLICE_ITEMS)
            instance.add_dynamic_partitions("entitybench_generators", SLICE_GENERATORS)
            t0 = time.perf_counter()
            items = [_launch(env, workspace, "entitybench_items", {"dagster/partition": e}) for e in SLICE_ITEMS]
            runs = _wait_runs(instance, items, procs=procs)
            assert all(r.is_success for r in runs), _failure_text(instance, runs, tmp_path)
            gen_runs = [_launch(env, workspace, "entitybench_generators", _partition_tags(g, e))
                        for g in SLICE_GENERATORS for e in SLICE_ITEMS]
            runs = _wait_runs(instance, gen_runs, procs=procs)
            dist_s = time.perf_counter() - t0
            assert all(r.is_success for r in runs), _failure_text(instance, runs, tmp_path)
            # steps ran in the Celery workers' processes, not in the run worker, and in more than one process
            step_pids, run_pids = set(), set()
            for rid in items + gen_runs:
                step_pids |= {e.dagster_event.pid for e in _events(instance, rid, "STEP_START")}
                run_pids |= {e.dagster_event.pid for e in _events(instance, rid, "PIPELINE_START")}
            assert len(step_pids) >= 2 and not (step_pids & run_pids), (step_pids, run_pids)
            worker_logs = "".join((tmp_path / f"{n}.log").read_text() for n in ("gpu-host", "cpu-host"))
            assert "execute_plan" in worker_logs
        finally:
            for p in procs:
                _stop_group(p)
            for log in logs:
                log.close()
            for k in ("DAGSTER_HOME", "DAGSTER_PG_HOST", "DAGSTER_PG_PORT", "DAGSTER_PG_USER", "DAGSTER_PG_PASSWORD",
                      "DAGSTER_PG_DB"):
                os.environ.pop(k, None)

    # the same slice in-process, on SQLite, into another store: the tables must be identical
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    local = build_resources(paths=paths, store_root=str(tmp_path / "local_store"))
    with instance_for_test() as inst:
        inst.add_dynamic_partitions("entitybench_episodes", SLICE_ITEMS)
        inst.add_dynamic_partitions("entitybench_generators", SLICE_GENERATORS)
        t0 = time.perf_counter()
        for e in SLICE_ITEMS:
            assert materialize(d.ALL_ASSETS, selection=d.ENTITYBENCH_ITEM_ASSETS, partition_key=e, instance=inst,
                               resources=local).success
        for g in SLICE_GENERATORS:
            for e in SLICE_ITEMS:
                assert materialize(d.ALL_ASSETS, selection=d.ENTITYBENCH_GENERATOR_ASSETS,
                                   partition_key=str(d.ENTITYBENCH.key(g, e)), instance=inst, resources=local).success
        local_s = time.perf_counter() - t0
    dist = build_resources(paths=paths, store_root=str(tmp_path / "dist_store"))
    for asset in SLICE_ASSETS:
        a = _table(dist["store"], asset)
        b = _table(local["store"], asset)
        assert len(a) == len(b) > 0, asset
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-6, atol=1e-9, obj=asset)
    print(f"\ndistributed slice {dist_s:.1f} s (queue, daemon, 2 celery workers, postgres) vs in-process "
          f"{local_s:.1f} s: overhead x{dist_s / local_s:.2f}")


def _stop_group(proc) -> None:
    """Stop a service and everything it started (dagster-celery execs `celery`, which forks pool workers; the
    daemon starts run workers and a code server): each runs in its own session, so the whole group goes."""
    import signal
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            time.sleep(0.5)
            os.killpg(proc.pid, 0)  # anything of the group left?
        except (subprocess.TimeoutExpired, ProcessLookupError, PermissionError):
            if sig == signal.SIGKILL:
                return
            continue


def _table(store, asset: str) -> pd.DataFrame:
    df = store.query(f'SELECT * FROM "{asset}"')
    drop = [c for c in df.columns if c in ("path", "protocol") or c.startswith("dagster")]
    df = df.drop(columns=drop)
    keys = [c for c in ("generator", "episode_id", "item", "shot", "entity_id", "metric_id", "level") if c in df]
    return df.sort_values(keys).reset_index(drop=True)[sorted(df.columns)]


def _failure_text(instance, runs, tmp_path) -> str:
    msgs = []
    for r in runs:
        for e in instance.all_logs(r.run_id):
            if e.dagster_event and e.dagster_event.is_failure:
                msgs.append(str(e.dagster_event.event_specific_data)[:1500])
    for n in ("daemon", "gpu-host", "cpu-host"):
        p = tmp_path / f"{n}.log"
        if p.exists():
            msgs.append(f"--- {n}.log\n" + p.read_text()[-3000:])
    return "\n".join(msgs)


def test_gpu_pool_serialises_steps_across_runs(tmp_path):
    from dagster import DagsterInstance
    with services.postgres(tmp_path / "pg") as pg:
        env = {**os.environ, **_home(tmp_path, pg), "PYTHONPATH": str(ROOT), "BENCH_TEST_GPU_HOLD_S": "8"}
        workspace = tmp_path / "workspace.yaml"
        workspace.write_text(yaml.safe_dump({"load_from": [{"python_module": {
            "module_name": "tests.support.distributed.gpu_location", "location_name": "gpu",
            "working_directory": str(ROOT)}}]}))
        # both runs are queued before the daemon starts, so it dequeues them together and they run concurrently
        runs = [_launch(env, workspace, job, {}) for job in ("gpu_a", "gpu_b")]
        log = open(tmp_path / "daemon.log", "w")
        daemon = subprocess.Popen([str(BIN / "dagster-daemon"), "run", "-w", str(workspace)], env=env, cwd=ROOT,
                                  stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        saved = dict(os.environ)
        try:
            os.environ.update({k: env[k] for k in env if k.startswith("DAGSTER_")})
            instance = DagsterInstance.get()
            finished = _wait_runs(instance, runs, timeout=300, procs=[daemon])
            assert all(r.is_success for r in finished), _failure_text(instance, finished, tmp_path)
            windows = []
            for rid in runs:
                start = [e.timestamp for e in _events(instance, rid, "STEP_START")]
                end = [e.timestamp for e in _events(instance, rid, "STEP_SUCCESS")]
                run_start = [e.timestamp for e in _events(instance, rid, "PIPELINE_START")]
                windows.append((start[0], end[0], run_start[0]))
            (s1, e1, r1), (s2, e2, r2) = sorted(windows)
            assert e1 <= s2, f"gpu steps overlapped: {windows}"
            # and the limit is what kept them apart: both runs were in flight before the first step ended
            assert max(r1, r2) < e1, f"runs did not overlap, the test proves nothing: {windows}"
        finally:
            os.environ.clear()
            os.environ.update(saved)
            _stop_group(daemon)
            log.close()
