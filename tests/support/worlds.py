"""Session-scoped worlds: each benchmark's embedded data evaluated once per test session (per xdist worker, and
``conftest.py`` sends every test that uses one world to the same worker), then read by every test module that
needs it. A world is read-only for its readers: a test that changes data or the store builds its own.

Every build is counted (``record_build``) in a file the whole run shares, so the session can say how often each
world was built and fail when one was built twice (``tests/conftest.py`` ``pytest_sessionfinish``)."""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

BUILDS_FILE = "world_builds.jsonl"
# the worlds this module builds: conftest groups their users on one xdist worker
WORLDS = ("mbench_offline", "vistorybench_offline", "locot2v_offline", "narrativetrack_items", "probe_world")


# the file every process of this run appends to: set by the controller (tests/conftest.py pytest_configure) before
# xdist starts its workers, which inherit the environment
BUILDS_ENV = "BENCH_TEST_WORLD_BUILDS"


def record_build(factory, world: str) -> None:
    path = os.environ.get(BUILDS_ENV) or str(Path(factory.getbasetemp()) / BUILDS_FILE)
    with open(path, "a") as f:
        f.write(json.dumps({"world": world, "worker": os.environ.get("PYTEST_XDIST_WORKER", "main"),
                            "pid": os.getpid()}) + "\n")


def read_builds(path: Path) -> dict[str, int]:
    path = Path(path)
    counts: dict[str, int] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            w = json.loads(line)["world"]
            counts[w] = counts.get(w, 0) + 1
    return counts


@pytest.fixture(scope="session")
def mbench_offline(tmp_path_factory):
    """MBench's embedded cases x its four generators, offline profile, judge default: (stats, resources, errors,
    data, instance)."""
    from dagster import instance_for_test

    from tests.support.mbench import _run, _world
    record_build(tmp_path_factory, "mbench_offline")
    tmp = tmp_path_factory.mktemp("mb")
    with instance_for_test() as instance:
        data = _world(tmp)
        stats, resources, errors = _run(instance, data, tmp / "store")
        yield stats, resources, errors, data, instance


@pytest.fixture(scope="session")
def vistorybench_offline(tmp_path_factory):
    """ViStoryBench's stories 01, 02, 08 x its four generators, offline profile: (stats, resources, errors, board,
    instance)."""
    from dagster import instance_for_test

    from tests.support.vistorybench import _run, _world
    record_build(tmp_path_factory, "vistorybench_offline")
    tmp = tmp_path_factory.mktemp("vsb")
    data = _world(tmp)
    with instance_for_test() as instance:
        stats, resources, errors = _run(instance, data, tmp / "store")
        board = resources["store"].query("SELECT * FROM vistorybench_leaderboard")
        yield stats, resources, errors, board, instance


@pytest.fixture(scope="session")
def locot2v_offline(tmp_path_factory):
    """LoCoT2V's embedded samples x its four generators, offline profile, judge off: (stats, resources, errors,
    instance, tmp)."""
    from dagster import instance_for_test

    from bench_resources.judge import Judge
    from tests.support.locot2v import _run, _world
    record_build(tmp_path_factory, "locot2v_offline")
    tmp = tmp_path_factory.mktemp("locot2v")
    with instance_for_test() as instance:
        stats, resources, errors = _run(instance, _world(tmp), tmp / "store", Judge(mode="off"))
        yield stats, resources, errors, instance, tmp


@pytest.fixture(scope="session")
def narrativetrack_items(tmp_path_factory):
    """Every item asset of NarrativeTrack's three embedded videos on one instance: judge off, except JUDGE_VIDEO
    whose pipeline asks a live judge behind a real HTTP server with recorded answers (PipelineJudge). Yields
    (instance, resources, paths, judge, store root). Readers that add answers and a leaderboard work on a fork of
    the store (tests/support/narrativetrack.py fork_items), not on this one."""
    import torch
    from dagster import instance_for_test, materialize

    from bench_assets.narrativetrack import assets as A
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths
    from tests.support import DATA, QUIET
    from tests.support.fake_anthropic import FakeAnthropic
    from tests.support.narrativetrack import (
        ANSWERERS,
        JUDGE_VIDEO,
        VIDEOS,
        PipelineJudge,
    )
    record_build(tmp_path_factory, "narrativetrack_items")
    store = tmp_path_factory.mktemp("nt_store")
    paths = BenchPaths(data_root=str(DATA), generators_root=str(DATA / "generators"))
    resources = build_resources(store_root=str(store), paths=paths, judge=Judge(mode="off", cache_dir=str(store / "jc")))
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # on a small shared CPU one intra-op thread is faster (no oversubscription)
    old_key = os.environ.get("ANTHROPIC_API_KEY")
    os.environ["ANTHROPIC_API_KEY"] = "test-key-not-real"
    pj = PipelineJudge()
    with instance_for_test() as instance:
        # the key and the thread count hold only while the world is built: a session fixture that kept them would
        # hand every later test of the worker a judge key (measured: MBench's and EntityBench's worlds built after
        # this one asked a live judge) and one torch thread
        try:
            with FakeAnthropic(responder=pj) as srv:
                instance.add_dynamic_partitions(A.P.items.name, VIDEOS)
                instance.add_dynamic_partitions(A.P.generators.name, ANSWERERS)
                live = {**resources, "judge": Judge(mode="live", base_url=srv.base_url,
                                                    cache_dir=str(store / "jc_live"), max_retries=0)}
                for v in VIDEOS:
                    res = materialize(A.ASSETS, selection=A.ITEM_ASSETS, partition_key=v, instance=instance,
                                      resources=live if v == JUDGE_VIDEO else resources, run_config=QUIET)
                    assert res.success, v
        finally:
            torch.set_num_threads(threads)
            if old_key is None:
                os.environ.pop("ANTHROPIC_API_KEY", None)
            else:
                os.environ["ANTHROPIC_API_KEY"] = old_key
        yield instance, resources, paths, pj, store


@pytest.fixture(scope="session")
def probe_world(tmp_path_factory):
    """The cheapest world: a file. tests/test_tiers.py checks on it that the scheduling and the build count work
    (two modules reading it, two workers, one build)."""
    record_build(tmp_path_factory, "probe_world")
    path = tmp_path_factory.mktemp("probe") / "world.txt"
    path.write_text(str(os.getpid()))
    return path
