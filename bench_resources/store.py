"""Content-addressed artifacts, one Parquet file per asset partition, DuckDB views for queries.

Not the stock DuckDB IO manager: in Dagster 1.13.27 it fails on multi-partitions with a dynamic
dimension, and a DuckDB file takes one writer process (the multiprocess executor has many).
Parquet files are written atomically (temp file + rename), so a killed step leaves no partial file;
DuckDB only ever reads them.
"""
from __future__ import annotations

import hashlib
import io
import os
import re
import time
import uuid
from pathlib import Path
from typing import Any, Optional

import duckdb
import fsspec
import numpy as np
import pandas as pd
from dagster import ConfigurableIOManager, ConfigurableResource, InputContext, MultiPartitionsDefinition, OutputContext
from PIL import Image

_SEGMENT = re.compile(r"^[A-Za-z0-9_.-]+$")
STALE_TMP_S = 3600


def _check_segment(value: str, what: str) -> str:
    if not isinstance(value, str) or not _SEGMENT.match(value) or value in {".", ".."} or ".." in value:
        raise ValueError(f"{what} {value!r} is not a safe path segment ([A-Za-z0-9_.-], no '..')")
    return value


def png_bytes(image: np.ndarray) -> bytes:
    """Deterministic PNG bytes (no metadata, fixed compression) of an RGB or gray uint8 image."""
    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8:
        raise ValueError(f"expected uint8 image, got {arr.dtype}")
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", compress_level=6, optimize=False)
    return buf.getvalue()


class Store(ConfigurableResource):
    """``<root>/artifacts/<aa>/<sha256>.<ext>`` and ``<root>/tables/<asset>/<dim>=<v>/.../part.parquet``."""

    root: str = ".bench"

    # ------------------------------------------------------------------ filesystem
    def _fs(self):
        fs, _, paths = fsspec.get_fs_token_paths(self.root)
        return fs, paths[0]

    @property
    def is_local(self) -> bool:
        return "://" not in self.root or self.root.startswith("file://")

    def _join(self, *parts: str) -> str:
        _, base = self._fs()
        return "/".join([base.rstrip("/"), *parts])

    def _atomic_write(self, path: str, data: bytes) -> None:
        fs, _ = self._fs()
        if self.is_local:
            d = os.path.dirname(path)
            os.makedirs(d, exist_ok=True)
            _clean_stale_tmp(d)
            tmp = f"{path}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}"
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        else:  # object stores publish a single put atomically
            fs.pipe_file(path, data)

    # ------------------------------------------------------------------ artifacts
    def artifact_path(self, sha: str, ext: str = "png") -> str:
        _check_segment(sha, "artifact id")
        return self._join("artifacts", sha[:2], f"{sha}.{ext}")

    def has_artifact(self, sha: str, ext: str = "png") -> bool:
        fs, _ = self._fs()
        return fs.exists(self.artifact_path(sha, ext))

    def put_bytes(self, data: bytes, ext: str) -> str:
        sha = hashlib.sha256(data).hexdigest()
        path = self.artifact_path(sha, ext)
        fs, _ = self._fs()
        if not fs.exists(path):
            self._atomic_write(path, data)
        return sha

    def put_png(self, image: np.ndarray) -> str:
        return self.put_bytes(png_bytes(image), "png")

    def get_bytes(self, sha: str, ext: str = "png") -> bytes:
        fs, _ = self._fs()
        with fs.open(self.artifact_path(sha, ext), "rb") as f:
            return f.read()

    def get_png(self, sha: str) -> np.ndarray:
        img = Image.open(io.BytesIO(self.get_bytes(sha, "png")))
        return np.asarray(img.convert("RGB") if img.mode not in ("L", "RGB") else img)

    # ------------------------------------------------------------------ tables
    def table_dir(self, asset_name: str) -> str:
        return self._join("tables", _check_segment(asset_name, "asset name"))

    def table_path(self, asset_name: str, partition: dict[str, str] | str | None) -> str:
        if partition is None:
            return self.table_dir(asset_name) + "/part.parquet"
        if isinstance(partition, str):
            partition = {"partition": partition}
        segs = [f"{_check_segment(k, 'partition dimension')}={_check_segment(v, 'partition value')}"
                for k, v in sorted(partition.items())]
        return "/".join([self.table_dir(asset_name), *segs, "part.parquet"])

    def write_table(self, df: pd.DataFrame, path: str) -> None:
        buf = io.BytesIO()
        df.to_parquet(buf, index=False)
        self._atomic_write(path, buf.getvalue())

    def read_table(self, path: str) -> pd.DataFrame:
        fs, _ = self._fs()
        with fs.open(path, "rb") as f:
            return pd.read_parquet(f)

    def asset_tables(self) -> list[str]:
        fs, _ = self._fs()
        base = self._join("tables")
        if not fs.exists(base):
            return []
        return sorted(Path(p.rstrip("/")).name for p in fs.ls(base, detail=False) if fs.isdir(p))

    def duckdb(self) -> duckdb.DuckDBPyConnection:
        """In-memory connection with one read-only VIEW per asset over its Parquet files."""
        con = duckdb.connect()
        if not self.is_local:
            fs, _ = self._fs()
            con.register_filesystem(fs)
        prefix = "" if self.is_local else self.root.split("://")[0] + "://"
        for name in self.asset_tables():
            d = self.table_dir(name)
            fs, _ = self._fs()
            files = [p for p in fs.glob(d + "/**/*.parquet")] if fs.exists(d) else []
            if not files:
                continue
            glob = f"{prefix}{d}/**/*.parquet" if any("=" in f for f in files) else f"{prefix}{d}/*.parquet"
            con.execute(f"CREATE VIEW {name} AS SELECT * FROM read_parquet('{glob}', "
                        f"hive_partitioning=true, union_by_name=true)")
        return con

    def query(self, sql: str) -> pd.DataFrame:
        con = self.duckdb()
        try:
            return con.execute(sql).df()
        finally:
            con.close()


def _clean_stale_tmp(directory: str) -> None:
    now = time.time()
    try:
        for name in os.listdir(directory):
            if ".tmp-" in name:
                p = os.path.join(directory, name)
                try:
                    if now - os.path.getmtime(p) > STALE_TMP_S:
                        os.remove(p)
                except OSError:
                    pass
    except FileNotFoundError:
        pass


def _asset_name(key) -> str:
    return "__".join(key.path)


def _dims(partitions_def, partition_key: str) -> dict[str, str]:
    # A run launched with only the dagster/partition tag hands a plain string: always go through the definition.
    if isinstance(partitions_def, MultiPartitionsDefinition):
        return dict(partitions_def.get_partition_key_from_str(partition_key).keys_by_dimension)
    return {"partition": partition_key}


class ParquetIOManager(ConfigurableIOManager):
    """Every asset output is a DataFrame: one Parquet file per partition, written atomically."""

    root: str = ".bench"

    @property
    def store(self) -> Store:
        return Store(root=self.root)

    def _path(self, key, partitions_def, partition_key: Optional[str]) -> str:
        if partition_key is None or partitions_def is None:
            return self.store.table_path(_asset_name(key), None)
        return self.store.table_path(_asset_name(key), _dims(partitions_def, partition_key))

    def handle_output(self, context: OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(f"{context.asset_key.to_user_string()}: expected a pandas DataFrame, got {type(obj)}")
        pk = context.partition_key if context.has_partition_key else None
        path = self._path(context.asset_key, context.asset_partitions_def if pk else None, pk)
        self.store.write_table(obj, path)
        context.add_output_metadata({"rows": len(obj), "path": path})

    def load_input(self, context: InputContext) -> pd.DataFrame:
        key = context.asset_key
        pdef = context.upstream_output.asset_partitions_def if context.upstream_output else None
        if pdef is None:
            return self.store.read_table(self._path(key, None, None))
        keys = list(context.asset_partition_keys)
        frames = []
        for pk in keys:
            path = self._path(key, pdef, pk)
            fs, _ = self.store._fs()
            if not fs.exists(path):
                if len(keys) == 1:
                    raise FileNotFoundError(f"asset {key.to_user_string()} partition {pk!r} has no table at {path}; "
                                            f"materialise it first")
                continue
            df = self.store.read_table(path)
            for dim, val in _dims(pdef, pk).items():
                if dim not in df.columns:
                    df[dim] = val
            frames.append(df)
        if not frames:
            raise FileNotFoundError(f"asset {key.to_user_string()}: none of {len(keys)} partitions is materialised")
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
