"""Issue 39 ("Incremental"): the store and the Dagster instance agree, and a kill at any moment resumes.

Real `bench evaluate` (cli.main, offline profile, judge off) on a one-episode EntityBench world, a real Dagster home,
real Parquet files. A deleted or damaged table whose partition the instance calls materialised re-runs with the
reason and comes back equal to the first run's; a new empty store under an old home recomputes; a process SIGKILLed
while it creates a fresh home's schema (a real kill, at a chosen CREATE TABLE) leaves a home the plain rerun
completes, equal to a clean run."""
import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest

from bench_assets import cli
from tests.support import ROOT
from tests.support.entitybench import world

BOARD = "entitybench_leaderboard"


def evaluate(mp, data, store, home, capsys) -> str:
    """One `bench evaluate` of the faithful generator; its stdout (the re-run lines) after asserting exit 0."""
    mp.setenv("BENCH_DATA_ROOT", str(data))
    mp.setenv("BENCH_STORE_ROOT", str(store))
    mp.setenv("DAGSTER_HOME", str(home))
    mp.setenv("BENCH_JUDGE_MODE", "off")
    capsys.readouterr()
    rc = cli.main(["evaluate", "--benchmark", "entitybench", "--generator", str(data / "generators" / "faithful")])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    return out.out


def tables(store) -> dict[str, pd.DataFrame]:
    base = store / "tables"
    return {str(p.relative_to(base)): pd.read_parquet(p) for p in sorted(base.rglob("part.parquet"))}


def same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    pd.testing.assert_frame_equal(a.reset_index(drop=True), b.reset_index(drop=True), check_like=True)


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    """A clean first evaluation: (data, store, home, its tables)."""
    tmp = tmp_path_factory.mktemp("agree")
    data = world(tmp)
    with pytest.MonkeyPatch.context() as mp:
        class Cap:  # the module fixture has no capsys: a pass-through
            @staticmethod
            def readouterr():
                return type("O", (), {"out": "", "err": ""})()
        evaluate(mp, data, tmp / "store", tmp / "home", Cap)
    got = tables(tmp / "store")
    assert len(got[BOARD + "/part.parquet"])
    return data, tmp / "store", tmp / "home", got


def fork(clean, tmp_path):
    """The clean world's store and home copied (a test that changes them works on its own copy)."""
    data, store, home, before = clean
    shutil.copytree(store, tmp_path / "store")
    shutil.copytree(home, tmp_path / "home")
    return data, tmp_path / "store", tmp_path / "home", before


def test_deleted_and_damaged_tables_rerun_and_come_back_equal(clean, tmp_path, capsys, monkeypatch):
    data, store, home, before = fork(clean, tmp_path)
    gone = "entitybench_grounding/episode=e0001/generator=faithful/part.parquet"
    bad = "entitybench_episode/partition=e0001/part.parquet"
    (store / "tables" / gone).unlink()
    (store / "tables" / bad).write_bytes(b"PAR1 not a table")   # cut short / overwritten
    out = evaluate(monkeypatch, data, store, home, capsys)
    # each named with its reason; the deleted one's readers in the partition and the board follow
    assert f"table missing: {store}/tables/entitybench_grounding" in out, out
    assert f"table unreadable: {store}/tables/{bad} (unreadable Parquet" in out, out
    assert "upstream entitybench_grounding re-runs" in out, out
    after = tables(store)
    assert sorted(after) == sorted(before)
    for name in before:
        same(after[name], before[name])
    # and agreed now: nothing re-runs
    out = evaluate(monkeypatch, data, store, home, capsys)
    assert "re-ran" not in out, out


def test_new_store_under_an_old_home_recomputes(clean, tmp_path, capsys, monkeypatch):
    data, _, home, before = fork(clean, tmp_path)
    store = tmp_path / "new_store"
    out = evaluate(monkeypatch, data, store, home, capsys)  # was: 'no entitybench leaderboard ... run bench evaluate'
    assert f"table missing: {store}/tables/entitybench_outputs" in out, out
    after = tables(store)
    assert sorted(after) == sorted(before)
    same(after[BOARD + "/part.parquet"], before[BOARD + "/part.parquet"])


# A hook that SIGKILLs the real `bench evaluate` right after it created <table> in <db file>: Dagster creates a
# fresh home's tables one autocommitted CREATE TABLE at a time, so each point leaves another half-made home.
KILLER = """
import os, signal, sys
from sqlalchemy import Table, event
db, table = sys.argv[1], sys.argv[2]
@event.listens_for(Table, "after_create")
def _kill(target, connection, **kw):
    if target.name == table and str(connection.engine.url).endswith(db):
        os.kill(os.getpid(), signal.SIGKILL)
from bench_assets import cli
cli.main(["evaluate", "--benchmark", "entitybench", "--generator", sys.argv[3]])
"""


@pytest.mark.parametrize("db,table", [
    ("runs/index.db", "event_logs"),           # the reported one: no dynamic_partitions table afterwards
    ("runs/index.db", "dynamic_partitions"),   # partitions table there, concurrency tables not
    ("runs/index.db", "asset_check_executions"),  # every table, no revision stamp
    ("history/runs.db", "runs"),
    ("schedules/schedules.db", "jobs"),
])
def test_kill_while_the_home_is_created_resumes(clean, tmp_path, capsys, monkeypatch, db, table):
    data, _, _, before = clean
    store, home = tmp_path / "store", tmp_path / "home"
    env = {**os.environ, "BENCH_DATA_ROOT": str(data), "BENCH_STORE_ROOT": str(store), "DAGSTER_HOME": str(home),
           "BENCH_JUDGE_MODE": "off", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", KILLER, db, table, str(data / "generators" / "faithful")],
                          env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == -9, (proc.returncode, proc.stderr[-2000:])   # killed where asked, not before
    out = evaluate(monkeypatch, data, store, home, capsys)
    err = capsys.readouterr().err
    after = tables(store)
    assert sorted(after) == sorted(before), out + err
    for name in before:
        same(after[name], before[name])
    # the resumed home is whole: a second rerun has nothing to do
    out = evaluate(monkeypatch, data, store, home, capsys)
    assert "re-ran" not in out and "materialised 0 asset partitions" in out, out
