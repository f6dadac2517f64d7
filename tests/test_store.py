"""Artifact store, Parquet IO manager and DuckDB views: real files, real DuckDB, real Dagster, a kill mid-write."""
import hashlib
import os
import re
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
from dagster import (AssetIn, DagsterEventType, DynamicPartitionsDefinition, MultiPartitionsDefinition, asset,
                     instance_for_test, materialize)
from PIL import Image

from bench_resources.store import STALE_TMP_S, ParquetIOManager, Store

ROOT = Path(__file__).resolve().parents[1]


def _no_tmp(root: Path) -> bool:
    return not [p for p in root.rglob("*") if ".tmp-" in p.name]


# ---------------------------------------------------------------------- artifacts
def test_put_png_is_content_addressed_and_round_trips(tmp_path):
    s = Store(root=str(tmp_path))
    img = np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    a, b = s.put_png(img), s.put_png(img.copy())
    c = s.put_png(img[::-1].copy())
    assert a == b != c and re.fullmatch(r"[0-9a-f]{64}", a)
    path = Path(s.artifact_path(a))
    assert path == tmp_path / "artifacts" / a[:2] / f"{a}.png"
    assert sorted(p.name for p in (tmp_path / "artifacts").rglob("*") if p.is_file()) == sorted([f"{a}.png", f"{c}.png"])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == a
    assert np.array_equal(s.get_png(a), img) and s.get_png(a).dtype == np.uint8
    assert s.has_artifact(a) and not s.has_artifact("0" * 64)
    # gray images stay gray; bytes are deterministic across calls (no metadata)
    gray = img[..., 0].copy()
    g = s.put_png(gray)
    assert s.get_png(g).shape == (20, 30) and np.array_equal(s.get_png(g), gray)
    # put_bytes: any extension, same addressing
    j = s.put_bytes(b'{"a": 1}', "json")
    assert j == hashlib.sha256(b'{"a": 1}').hexdigest()
    assert Path(s.artifact_path(j, "json")).read_bytes() == b'{"a": 1}' and s.has_artifact(j, "json")
    assert _no_tmp(tmp_path)


def test_memory_fsspec_root_for_artifacts_and_tables():
    s = Store(root="memory://bench-store-test")
    img = np.arange(48, dtype=np.uint8).reshape(4, 4, 3)
    sha = s.put_png(img)
    assert s.has_artifact(sha) and np.array_equal(s.get_png(sha), img)
    assert s.artifact_path(sha) == f"/bench-store-test/artifacts/{sha[:2]}/{sha}.png"
    p1 = s.table_path("t", {"generator": "g1", "episode": "e1"})
    assert p1 == "/bench-store-test/tables/t/episode=e1/generator=g1/part.parquet"
    s.write_table(pd.DataFrame({"x": [1, 2]}), p1)
    s.write_table(pd.DataFrame({"x": [10]}), s.table_path("t", {"generator": "g2", "episode": "e1"}))
    s.write_table(pd.DataFrame({"y": ["only"]}), s.table_path("flat", None))
    assert s.read_table(p1)["x"].tolist() == [1, 2]
    q = s.query("SELECT generator, episode, sum(x) AS s FROM t GROUP BY ALL ORDER BY generator")
    assert q.values.tolist() == [["g1", "e1", 3], ["g2", "e1", 10]]
    assert s.query("SELECT * FROM flat")["y"].tolist() == ["only"]


# ---------------------------------------------------------------------- paths and names
def test_table_path_layout(tmp_path):
    s = Store(root=str(tmp_path))
    t = tmp_path / "tables"
    assert s.table_dir("a") == str(t / "a")
    assert s.table_path("a", None) == str(t / "a" / "part.parquet")
    assert s.table_path("a", "p-1.x") == str(t / "a" / "partition=p-1.x" / "part.parquet")
    assert s.table_path("a", {"z": "1", "b": "2", "m": "3"}) == str(t / "a" / "b=2" / "m=3" / "z=1" / "part.parquet")


@pytest.mark.parametrize("bad", ["a|b", "../x", "a b", "..", ".", "", "x/y"])
def test_unsafe_partition_values_are_rejected(tmp_path, bad):
    s = Store(root=str(tmp_path))
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        s.table_path("t", {"generator": bad})
    with pytest.raises(ValueError, match=re.escape(repr(bad))):
        s.table_path("t", bad)


# ---------------------------------------------------------------------- DuckDB views and temp files
def test_duckdb_views_ignore_temp_files_and_handle_layouts(tmp_path):
    s = Store(root=str(tmp_path))
    s.write_table(pd.DataFrame({"v": [1, 2]}), s.table_path("flat", None))                      # unpartitioned only
    s.write_table(pd.DataFrame({"v": [5]}), s.table_path("single", "k1"))                      # one dimension
    s.write_table(pd.DataFrame({"v": [7], "extra": ["e"]}), s.table_path("single", "k2"))      # schema drift
    s.write_table(pd.DataFrame({"v": [100]}), s.table_path("moved", None))                      # stale flat file ...
    s.write_table(pd.DataFrame({"v": [3]}), s.table_path("moved", {"g": "a"}))                  # ... now partitioned
    # a temp file (what a killed writer leaves) in a partition directory and next to the flat file
    (tmp_path / "tables/single/partition=k3").mkdir()
    (tmp_path / "tables/single/partition=k3/part.parquet.tmp-1-dead").write_bytes(b"PAR1 garbage")
    (tmp_path / "tables/flat/part.parquet.tmp-1-dead").write_bytes(b"PAR1 garbage")
    (tmp_path / "tables/empty").mkdir()                                                         # no file yet: no view
    con = s.duckdb()
    try:
        views = sorted(r[0] for r in con.execute("SELECT view_name FROM duckdb_views() WHERE NOT internal").fetchall())
        assert views == ["flat", "moved", "single"]
        assert con.execute("SELECT sum(v) FROM flat").fetchone() == (3,)
        assert con.execute("SELECT partition, v, extra FROM single ORDER BY partition").fetchall() == \
            [("k1", 5, None), ("k2", 7, "e")]
        assert con.execute("SELECT g, v FROM moved").fetchall() == [("a", 3)]
    finally:
        con.close()


def test_stale_temp_files_are_cleaned_on_next_write(tmp_path):
    s = Store(root=str(tmp_path))
    path = s.table_path("t", {"generator": "g"})
    d = Path(path).parent
    d.mkdir(parents=True)
    old, fresh = d / "part.parquet.tmp-99-old", d / "part.parquet.tmp-99-fresh"
    old.write_bytes(b"x")
    fresh.write_bytes(b"x")
    past = time.time() - STALE_TMP_S - 60
    os.utime(old, (past, past))
    s.write_table(pd.DataFrame({"a": [1]}), path)
    assert not old.exists() and fresh.exists()       # a fresh temp file may belong to a live writer
    assert pq.read_table(path).to_pydict() == {"a": [1]}


# ---------------------------------------------------------------------- Dagster IO manager
episodes = DynamicPartitionsDefinition(name="store_test_episodes")
generators = DynamicPartitionsDefinition(name="store_test_generators")
multi = MultiPartitionsDefinition({"generator": generators, "episode": episodes})


@asset(partitions_def=multi)
def scores(context) -> pd.DataFrame:
    # The asset itself also reads dims through the definition (it may get a plain "e1|gen_a" string).
    dims = multi.get_partition_key_from_str(context.partition_key).keys_by_dimension
    return pd.DataFrame({"shot": [0, 1], "value": [len(dims["generator"]) + int(dims["episode"][1:])] * 2})


@asset(partitions_def=multi, ins={"scores": AssetIn()})
def scores_doubled(scores: pd.DataFrame) -> pd.DataFrame:
    return scores.assign(value=scores["value"] * 2)


@asset(ins={"scores": AssetIn()})
def board(scores: pd.DataFrame) -> pd.DataFrame:
    return scores.groupby("generator", as_index=False)["value"].sum()


def _materialization_metadata(result, asset_name):
    ev = [e for e in result.all_events if e.event_type == DagsterEventType.ASSET_MATERIALIZATION
          and e.asset_key.path[-1] == asset_name]
    assert len(ev) == 1
    return ev[0].event_specific_data.materialization.metadata


def test_io_manager_multi_partitions_with_dynamic_dims(tmp_path):
    io = ParquetIOManager(root=str(tmp_path))
    store = Store(root=str(tmp_path))
    with instance_for_test() as inst:
        inst.add_dynamic_partitions("store_test_generators", ["gen_a", "gen_bb"])
        inst.add_dynamic_partitions("store_test_episodes", ["e1", "e2"])
        # Only the string key, dims sorted by name (episode|generator): the IO manager resolves the dims.
        # (gen_bb, e2) is never materialised: the aggregate reads the partitions that exist.
        for key in ("e1|gen_a", "e2|gen_a", "e1|gen_bb"):
            res = materialize([scores], partition_key=key, instance=inst, resources={"io_manager": io})
            assert res.success
        md = _materialization_metadata(res, "scores")
        hive = tmp_path / "tables/scores/episode=e1/generator=gen_bb/part.parquet"
        assert md["rows"].value == 2 and md["path"].value == str(hive)
        assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file()) == [
            "tables/scores/episode=e1/generator=gen_a/part.parquet",
            "tables/scores/episode=e1/generator=gen_bb/part.parquet",
            "tables/scores/episode=e2/generator=gen_a/part.parquet"]
        assert pq.read_table(hive).to_pydict() == {"shot": [0, 1], "value": [7, 7]}  # dims live in the path only

        # unpartitioned downstream of the multi-partitioned asset: every existing partition, dims as columns
        res = materialize([scores, board], selection=[board], instance=inst, resources={"io_manager": io})
        assert res.success
        assert _materialization_metadata(res, "board")["rows"].value == 2
        assert store.read_table(store.table_path("board", None)).to_dict("records") == [
            {"generator": "gen_a", "value": 2 * (5 + 1) + 2 * (5 + 2)},
            {"generator": "gen_bb", "value": 2 * (6 + 1)}]

        # partitioned downstream, partition by partition; a missing upstream partition is a clear error
        assert materialize([scores, scores_doubled], selection=[scores_doubled], partition_key="e2|gen_a",
                           instance=inst, resources={"io_manager": io}).success
        res = materialize([scores, scores_doubled], selection=[scores_doubled], partition_key="e2|gen_bb",
                          instance=inst, resources={"io_manager": io}, raise_on_error=False)
        assert not res.success
        errors = "".join(str(e.event_specific_data.error.to_string()) for e in res.all_events
                         if e.event_type == DagsterEventType.STEP_FAILURE)
        assert "asset scores partition 'e2|gen_bb' has no table" in errors

    # DuckDB over the hive layout: group-by values including the hive columns
    q = store.query("SELECT generator, episode, count(*) AS n, sum(value) AS s FROM scores "
                    "GROUP BY generator, episode ORDER BY generator, episode")
    assert q.values.tolist() == [["gen_a", "e1", 2, 12], ["gen_a", "e2", 2, 14], ["gen_bb", "e1", 2, 14]]
    assert store.query("SELECT episode, generator, value FROM scores_doubled").values.tolist() == \
        [["e2", "gen_a", 14], ["e2", "gen_a", 14]]
    assert store.query("SELECT * FROM board ORDER BY generator")["value"].tolist() == [26, 14]


# ---------------------------------------------------------------------- kill mid-write
ROWS = 2_000_000
WRITER = textwrap.dedent(f"""
    import sys, numpy as np, pandas as pd
    from bench_resources.store import Store
    s = Store(root=sys.argv[1])
    rng = np.random.default_rng(0)
    big = pd.DataFrame(rng.random(({ROWS}, 6)), columns=list("abcdef"))
    i = 0
    while True:
        for _ in range(3):
            s.put_png(rng.integers(0, 256, (256, 256, 3), dtype=np.uint8))
        s.write_table(big, s.table_path("big", {{"partition": f"p{{i}}"}}))
        i += 1
""")


def test_kill_mid_write_leaves_no_partial_file(tmp_path):
    root = tmp_path / "store"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(root)], cwd=ROOT)
    tmp_seen = None
    try:
        deadline = time.time() + 60
        # wait until one table is complete and the next one is being written, then SIGKILL
        while time.time() < deadline and proc.poll() is None:
            if (root / "tables/big/partition=p0/part.parquet").exists():
                tmp_seen = [p for p in (root / "tables/big").rglob("*.parquet.tmp-*")]
                if tmp_seen:
                    break
            time.sleep(0.005)
        assert tmp_seen, "the writer never got to a second table write"
        os.kill(proc.pid, signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()

    parquets = sorted(root.rglob("*.parquet"))
    pngs = sorted(root.rglob("*.png"))
    leftovers = sorted(root.rglob("*.parquet.tmp-*"))
    assert parquets and len(pngs) >= 3 and leftovers, "the kill should have interrupted a table write"
    for p in parquets:                                  # every visible table is complete
        assert pq.read_table(p).num_rows == ROWS
    for p in pngs:                                      # every visible PNG decodes and matches its name
        Image.open(p).load()
        assert hashlib.sha256(p.read_bytes()).hexdigest() == p.stem
        assert p.parent.name == p.stem[:2]
    # the temp file is invisible to DuckDB: the view counts exactly the complete files
    s = Store(root=str(root))
    n, parts = s.query("SELECT count(*) AS n, count(DISTINCT partition) AS k FROM big").iloc[0].tolist()
    assert (n, parts) == (ROWS * len(parquets), len(parquets))
    # the killed writer's temp file is cleaned up by a later write into its directory once it is stale
    tmp = leftovers[0]
    past = time.time() - STALE_TMP_S - 1
    os.utime(tmp, (past, past))
    s.write_table(pd.DataFrame({"a": [1.0]}), str(tmp.parent / "part.parquet"))
    assert not tmp.exists()


def test_empty_results_keep_a_schema_and_bad_files_never_break_views(tmp_path):
    """A column-less frame is stored with its siblings' schema (or a placeholder column), and one unreadable
    or column-less file leaves its asset's view over the good files while every other view keeps working."""
    import pyarrow.parquet as pq
    s = Store(root=str(tmp_path / "store"))
    s.write_table(pd.DataFrame({"generator": ["a"], "d": [0.5]}), s.table_path("effect", {"partition": "x"}))
    s.write_table(pd.DataFrame(), s.table_path("effect", {"partition": "y"}))  # no pair -> no rows, no columns
    assert pq.read_schema(s.table_path("effect", {"partition": "y"})).names[:2] == ["generator", "d"]
    s.write_table(pd.DataFrame([]), s.table_path("lonely", None))  # nothing to borrow a schema from
    assert len(pq.read_schema(s.table_path("lonely", None)).names) == 1
    s.write_table(pd.DataFrame({"v": [1, 2]}), s.table_path("good", None))
    assert s.query("SELECT count(*) AS n FROM effect").n[0] == 1 and s.query("SELECT * FROM lonely").empty

    # files that reached the store some other way: a column-less Parquet and garbage
    bad_dir = tmp_path / "store" / "tables" / "board" / "partition=z"
    bad_dir.mkdir(parents=True)
    pd.DataFrame().to_parquet(bad_dir / "part.parquet")
    s.write_table(pd.DataFrame({"metric_id": ["m"], "value": [1.0]}), s.table_path("board", {"partition": "w"}))
    (tmp_path / "store" / "tables" / "junk").mkdir()
    (tmp_path / "store" / "tables" / "junk" / "part.parquet").write_bytes(b"not parquet at all")
    assert s.query("SELECT sum(v) AS t FROM good").t[0] == 3  # the other views still work
    assert s.query("SELECT metric_id FROM board").metric_id.tolist() == ["m"]  # good files only
    bad = s.bad_files()
    assert any(k.endswith("partition=z/part.parquet") and v == "no columns" for k, v in bad.items())
    assert any("junk" in k and "unreadable" in v for k, v in bad.items())
    with pytest.raises(Exception, match="junk"):
        s.query("SELECT * FROM junk")  # no view for an asset with no good file: a clear catalog error
