"""Artifact store, Parquet IO manager and DuckDB views: real files, real Dagster, and a kill mid-write."""
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from dagster import (AssetIn, DynamicPartitionsDefinition, MultiPartitionsDefinition, asset, instance_for_test,
                     materialize)
from PIL import Image

from bench_resources.store import ParquetIOManager, Store

ROOT = Path(__file__).resolve().parents[1]


def test_content_addressed_png(tmp_path):
    s = Store(root=str(tmp_path))
    img = np.random.default_rng(0).integers(0, 255, (20, 30, 3), dtype=np.uint8)
    a, b = s.put_png(img), s.put_png(img.copy())
    c = s.put_png(img[::-1].copy())
    assert a == b != c
    path = Path(s.artifact_path(a))
    assert path == tmp_path / "artifacts" / a[:2] / f"{a}.png"
    assert len(list((tmp_path / "artifacts").rglob("*.png"))) == 2
    assert np.array_equal(s.get_png(a), img)
    import hashlib
    assert hashlib.sha256(path.read_bytes()).hexdigest() == a


def test_memory_fsspec_root():
    s = Store(root="memory://bench-test")
    sha = s.put_png(np.zeros((4, 4, 3), np.uint8))
    assert s.has_artifact(sha) and s.get_png(sha).shape == (4, 4, 3)
    p = s.table_path("t", {"generator": "g", "episode": "e1"})
    s.write_table(pd.DataFrame({"x": [1, 2]}), p)
    assert s.read_table(p)["x"].tolist() == [1, 2]
    assert s.query("SELECT sum(x) AS s, any_value(generator) AS g FROM t").iloc[0].tolist() == [3, "g"]


@pytest.mark.parametrize("bad", ["a|b", "../x", "a b", ".."])
def test_unsafe_partition_values(tmp_path, bad):
    with pytest.raises(ValueError, match="not a safe path segment"):
        Store(root=str(tmp_path)).table_path("t", {"generator": bad})


gens = DynamicPartitionsDefinition(name="gens")
items = DynamicPartitionsDefinition(name="items")
multi = MultiPartitionsDefinition({"generator": gens, "item": items})


@asset(partitions_def=multi)
def scores(context) -> pd.DataFrame:
    dims = multi.get_partition_key_from_str(context.partition_key).keys_by_dimension
    return pd.DataFrame({"value": [len(dims["generator"]) + int(dims["item"][1:])]})


@asset(ins={"scores": AssetIn()})
def board(scores: pd.DataFrame) -> pd.DataFrame:
    return scores.groupby("generator", as_index=False)["value"].sum()


def test_io_manager_multi_partitions(tmp_path):
    io = ParquetIOManager(root=str(tmp_path))
    with instance_for_test() as inst:
        inst.add_dynamic_partitions("gens", ["ga", "gbb"])
        inst.add_dynamic_partitions("items", ["i1", "i2"])
        for g in ("ga", "gbb"):
            for i in ("i1", "i2"):
                # plain string keys (what a run launched with only the dagster/partition tag gets)
                assert materialize([scores], partition_key=f"{g}|{i}", instance=inst,
                                   resources={"io_manager": io}).success
        assert (tmp_path / "tables/scores/generator=gbb/item=i2/part.parquet").exists()
        res = materialize([scores, board], selection=[board], instance=inst, resources={"io_manager": io})
        assert res.success
        out = Store(root=str(tmp_path)).query("SELECT * FROM board ORDER BY generator")
        assert out.to_dict("records") == [{"generator": "ga", "value": 2 + 1 + 2 + 2},
                                          {"generator": "gbb", "value": 3 + 1 + 3 + 2}]
        q = Store(root=str(tmp_path)).query(
            "SELECT generator, item, value FROM scores ORDER BY generator, item")
        assert q.values.tolist() == [["ga", "i1", 3], ["ga", "i2", 4], ["gbb", "i1", 4], ["gbb", "i2", 5]]


WRITER = textwrap.dedent("""
    import sys, numpy as np, pandas as pd
    from bench_resources.store import Store
    s = Store(root=sys.argv[1])
    rng = np.random.default_rng(0)
    big = pd.DataFrame(rng.random((6_000_000, 6)), columns=list("abcdef"))
    i = 0
    while True:
        s.put_png(rng.integers(0, 255, (512, 512, 3), dtype=np.uint8))
        s.write_table(big, s.table_path("big", {"partition": f"p{i}"}))
        i += 1
""")


def test_kill_mid_write_leaves_no_partial_file(tmp_path):
    root = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root)], cwd=ROOT)
    try:
        deadline = time.time() + 120
        seen_tmp = False
        while time.time() < deadline and not seen_tmp:
            seen_tmp = any(".parquet.tmp-" in p.name for p in root.rglob("*")) if root.exists() else False
            time.sleep(0.01)
        assert seen_tmp, "writer never started a write"
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
    import hashlib
    for p in root.rglob("*.parquet"):
        assert pq.read_table(p).num_rows == 6_000_000
    for p in root.rglob("*.png"):
        Image.open(p).load()
        assert hashlib.sha256(p.read_bytes()).hexdigest() == p.stem
    leftovers = [p for p in root.rglob("*") if ".tmp-" in p.name]
    assert leftovers, "the kill should have interrupted a write"
    # temp files are invisible to queries
    s = Store(root=str(root))
    if any(root.rglob("*.parquet")):
        assert s.query("SELECT count(*) AS n FROM big").n[0] % 6_000_000 == 0
