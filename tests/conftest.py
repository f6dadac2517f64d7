import os
import shutil

import pytest

from tests.support import DATA, ROOT  # noqa: F401

# the suite's hooks (tiers, xdist scheduling, world build count) and the session-scoped worlds as fixtures
from tests.support.plugin import (  # noqa: F401
    pytest_collection_modifyitems,
    pytest_configure,
    pytest_sessionfinish,
    pytest_xdist_make_scheduler,
)
from tests.support.worlds import (  # noqa: F401
    locot2v_offline,
    mbench_offline,
    narrativetrack_items,
    probe_world,
    vistorybench_offline,
)

# Variables that switch the judge live. A developer's shell must not turn the offline suite into calls to a
# real endpoint; tests that want a judge set their own with monkeypatch. Session scope, so module-scoped
# fixtures (which run before function-scoped ones) see the cleared environment too.
_JUDGE_KEYS = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY")


@pytest.fixture(autouse=True)
def _dagster_state_storage_restored():
    """Each DagsterInstance sets Dagster's current defs-state storage (a ContextVar) until it is disposed; a test that
    drops an instance without disposing it leaves the variable pointing at a dead weakref, and a later
    ``materialize()`` without an instance in the same worker fails ("Attempted to resolve undefined DagsterInstance
    weakref"), an order-dependent failure seen once the worlds moved. Restore the variable after every test."""
    from dagster._core.storage.defs_state.base import _current_storage
    before = _current_storage.get()
    yield
    _current_storage.set(before)


@pytest.fixture(scope="session", autouse=True)
def _no_ambient_judge():
    with pytest.MonkeyPatch.context() as mp:
        for var in list(os.environ):
            if var in _JUDGE_KEYS or var.startswith("BENCH_JUDGE_"):
                mp.delenv(var)
        yield


@pytest.fixture
def small_world(tmp_path):
    """A copy of part of the embedded benchmark: the two smallest episodes and chosen generators."""
    def make(generators=("faithful", "drift"), episodes=None):
        import json
        eps_dir = DATA / "entitybench" / "episodes"
        if episodes is None:
            sizes = sorted((len(json.loads(p.read_text())["shots"]), p.stem) for p in eps_dir.glob("*.json"))
            episodes = [sizes[1][1]]  # the second smallest: recurring single-entity shots
        data = tmp_path / "data"
        (data / "entitybench" / "episodes").mkdir(parents=True)
        for e in episodes:
            shutil.copy(eps_dir / f"{e}.json", data / "entitybench" / "episodes" / f"{e}.json")
        for g in generators:
            dst = data / "generators" / g
            dst.mkdir(parents=True)
            shutil.copy(DATA / "generators" / g / "generator.yaml", dst / "generator.yaml")
            for e in episodes:
                shutil.copytree(DATA / "generators" / g / e, dst / e)
        return data, list(episodes)
    return make
