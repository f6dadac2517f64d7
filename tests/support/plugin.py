"""The suite's own plugin: tier markers read from what each test uses, xdist scheduling that keeps a session world
on one worker, and the count of world builds checked at the end of the run. ``tests/conftest.py`` loads it; a
test of it loads it with ``-p tests.support.plugin`` into a pytest run of its own (tests/test_tiers.py)."""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

import pytest

from tests.support.tiers import kinds_of
from tests.support.worlds import BUILDS_ENV, WORLDS, read_builds

TIER_MARKERS = ("browser", "process", "server", "dagster", "weights", "footage")


def pytest_configure(config):
    if not hasattr(config, "workerinput"):         # the controller (or a run without xdist): one count file per run
        fd, path = tempfile.mkstemp(prefix="bench-world-builds-", suffix=".jsonl")
        os.close(fd)
        os.environ[BUILDS_ENV] = config._world_builds = path
    for kind in TIER_MARKERS:
        config.addinivalue_line("markers", f"{kind}: the test uses {kind} (applied by tests/conftest.py)")
    config.addinivalue_line("markers", "heavy: the full tier only (applied when the test uses any of "
                            f"{', '.join(TIER_MARKERS)}; `make test` deselects it)")


def pytest_collection_modifyitems(config, items):
    """Mark each test with the kinds it uses (tests/support/tiers.py) and ``heavy`` if it uses any."""
    for item in items:
        kinds = kinds_of(item)
        for k in sorted(kinds):
            item.add_marker(k)
        if kinds or item.get_closest_marker("slow"):
            item.add_marker("heavy")


_WORLD_RX = re.compile(r"\b(" + "|".join(WORLDS) + r")\b")
_group_cache: dict[str, str] = {}


def world_group(rootpath: Path, nodeid: str) -> str:
    """The xdist scope of a test: the session world its file reads (every module that reads one world runs on one
    worker, so the world is built once), else its file (module fixtures build once)."""
    path = nodeid.split("::", 1)[0]
    if path not in _group_cache:
        try:
            m = _WORLD_RX.search((rootpath / path).read_text())
        except OSError:
            m = None
        _group_cache[path] = f"world:{m.group(1)}" if m else path
    return _group_cache[path]


@pytest.hookimpl(optionalhook=True)   # a hook of xdist's: absent under -p no:xdist
def pytest_xdist_make_scheduler(config, log):
    """Under xdist (``-n``), tests are scheduled by ``world_group``: whole files, and the files of one session world
    together. (``--dist loadgroup`` with ``xdist_group`` marks does not group under pytest 9 + xdist 3.8: measured.)"""
    from xdist.scheduler import LoadScopeScheduling

    class WorldScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return world_group(config.rootpath, nodeid)
    return WorldScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session, exitstatus):
    """Each session world is built at most once per run (counted across xdist workers): the controller reads the
    count every worker wrote and fails the run if a world was built twice."""
    if hasattr(session.config, "workerinput"):
        return                                   # an xdist worker: the controller checks once for all
    path = getattr(session.config, "_world_builds", None)
    if path is None:
        return
    counts = read_builds(path)
    os.unlink(path)
    twice = {w: n for w, n in counts.items() if n > 1}
    tr = session.config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None and counts:
        tr.write_line("session worlds built: " + ", ".join(f"{w} x{n}" for w, n in sorted(counts.items())))
    if twice:
        if tr is not None:
            tr.write_line(f"ERROR: session worlds built more than once: {twice}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
