"""Content-addressed artifacts, one Parquet file per asset partition, DuckDB views for queries.

Layout under ``root`` (a local path or an fsspec URL such as ``memory://x`` or ``s3://bucket/prefix``)::

    <root>/artifacts/<sha[:2]>/<sha>.<ext>                          content-addressed, immutable
    <root>/tables/<asset>/part.parquet                              unpartitioned asset
    <root>/tables/<asset>/<dim>=<value>/.../part.parquet            partitioned asset, dims sorted by name
                                                                    (single-dimension: ``partition=<key>``)

Not the stock DuckDB IO manager: in Dagster 1.13.27 it fails on multi-partitions with a dynamic
dimension ("The instance is not available to load partitions"), and a DuckDB file takes one writer
process at a time, which breaks under the multiprocess executor. Here every write is a temp file in the
target directory (``<name>.tmp-<pid>-<uuid>``, never matching ``*.parquet`` / ``*.png``), fsynced, then
``os.replace``d over the final name, so a killed process leaves at most a temp file; DuckDB only reads.
"""
from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import time
import uuid
from typing import Any, Callable, Optional

import duckdb
import fsspec
import numpy as np
import pandas as pd
from dagster import (ConfigurableIOManager, ConfigurableResource, InputContext, MetadataValue,
                     MultiPartitionsDefinition, OutputContext)
from PIL import Image

_SEGMENT = re.compile(r"[A-Za-z0-9_.-]+")
_BAD_FILES: dict[str, dict[str, str]] = {}  # store root -> {file: why}, from the last duckdb() call
_TMP_MARK = ".tmp-"
STALE_TMP_S = 3600
PNG_COMPRESS_LEVEL = 6


def check_segment(value: Any, what: str = "partition value") -> str:
    """Return ``value`` if it is a safe path segment (``[A-Za-z0-9_.-]+``, not ``.``/``..``), else ValueError."""
    if not isinstance(value, str) or not _SEGMENT.fullmatch(value) or value in {".", ".."}:
        raise ValueError(f"{what} {value!r} is not a safe path segment (allowed: [A-Za-z0-9_.-]+, not '.' or '..')")
    return value


def png_bytes(image: np.ndarray) -> bytes:
    """Deterministic PNG bytes (no metadata, fixed compression) of an RGB HxWx3 or gray HxW uint8 image."""
    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8:
        raise ValueError(f"expected a uint8 image, got dtype {arr.dtype}")
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4))):
        raise ValueError(f"expected an HxW or HxWx3 image, got shape {arr.shape}")
    if arr.ndim == 3 and arr.shape[2] == 4:
        arr = np.ascontiguousarray(arr[..., :3])
    buf = io.BytesIO()
    # Pillow writes no text/time chunks unless asked (no pnginfo, no exif, no icc): same pixels -> same bytes.
    Image.fromarray(arr).save(buf, format="PNG", compress_level=PNG_COMPRESS_LEVEL, optimize=False)
    return buf.getvalue()


@functools.lru_cache(maxsize=64)
def _resolve(root: str):
    fs, _, paths = fsspec.get_fs_token_paths(root)
    return fs, paths[0].rstrip("/") or "/"


def _is_local_root(root: str) -> bool:
    return "://" not in root or root.startswith("file://")


def _tmp_name(path: str) -> str:
    return f"{path}{_TMP_MARK}{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _fsync_dir(directory: str) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def clean_stale_tmp(directory: str, max_age_s: float = STALE_TMP_S) -> list[str]:
    """Remove ``*.tmp-*`` files older than ``max_age_s`` left in ``directory`` by killed writers."""
    removed = []
    now = time.time()
    try:
        names = os.listdir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for name in names:
        if _TMP_MARK not in name:
            continue
        p = os.path.join(directory, name)
        try:
            if os.path.isfile(p) and now - os.path.getmtime(p) > max_age_s:
                os.remove(p)
                removed.append(p)
        except OSError:
            pass  # another process renamed or removed it meanwhile
    return removed


class Store(ConfigurableResource):
    """Artifact root ``<root>/artifacts`` and table root ``<root>/tables`` (see the module docstring)."""

    root: str = ".bench"

    # ------------------------------------------------------------------ filesystem
    def _fs(self):
        """(fsspec filesystem, root path without protocol)."""
        return _resolve(self.root)

    @property
    def is_local(self) -> bool:
        return _is_local_root(self.root)

    def _join(self, *parts: str) -> str:
        _, base = self._fs()
        return "/".join([base.rstrip("/"), *parts])

    def _atomic_write(self, path: str, write: Callable[[Any], None]) -> None:
        """Call ``write(file_obj)`` so that ``path`` appears complete or not at all."""
        fs, _ = self._fs()
        if self.is_local:
            d = os.path.dirname(path)
            os.makedirs(d, exist_ok=True)
            clean_stale_tmp(d)
            tmp = _tmp_name(path)
            try:
                with open(tmp, "wb") as f:
                    write(f)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                try:
                    os.remove(tmp)
                except OSError:
                    pass
                raise
            _fsync_dir(d)
        else:  # an object store publishes a single put atomically
            buf = io.BytesIO()
            write(buf)
            fs.pipe_file(path, buf.getvalue())

    def exists(self, path: str) -> bool:
        if self.is_local:
            return os.path.exists(path)
        fs, _ = self._fs()
        return fs.exists(path)

    # ------------------------------------------------------------------ artifacts
    def artifact_path(self, sha: str, ext: str = "png") -> str:
        check_segment(sha, "artifact id")
        check_segment(ext, "artifact extension")
        return self._join("artifacts", sha[:2], f"{sha}.{ext}")

    def has_artifact(self, sha: str, ext: str = "png") -> bool:
        return self.exists(self.artifact_path(sha, ext))

    def put_bytes(self, data: bytes, ext: str) -> str:
        """Store ``data`` under its sha256 (idempotent, atomic); return the hex digest."""
        sha = hashlib.sha256(data).hexdigest()
        path = self.artifact_path(sha, ext.lstrip("."))
        if not self.exists(path):
            self._atomic_write(path, lambda f: f.write(data))
        return sha

    def put_png(self, image: np.ndarray) -> str:
        return self.put_bytes(png_bytes(image), "png")

    def get_bytes(self, sha: str, ext: str = "png") -> bytes:
        fs, _ = self._fs()
        with fs.open(self.artifact_path(sha, ext), "rb") as f:
            return f.read()

    def get_png(self, sha: str) -> np.ndarray:
        img = Image.open(io.BytesIO(self.get_bytes(sha, "png")))
        if img.mode not in ("L", "RGB"):
            img = img.convert("RGB")
        return np.asarray(img)

    # ------------------------------------------------------------------ tables
    def table_dir(self, asset_name: str) -> str:
        return self._join("tables", check_segment(asset_name, "asset name"))

    def table_path(self, asset_name: str, partition: dict[str, str] | str | None) -> str:
        """``<root>/tables/<asset>[/<dim>=<value>...]/part.parquet``, dims sorted by name."""
        if partition is None:
            return self.table_dir(asset_name) + "/part.parquet"
        if isinstance(partition, str):
            partition = {"partition": partition}
        segs = [f"{check_segment(k, 'partition dimension')}={check_segment(v, 'partition value')}"
                for k, v in sorted(partition.items())]
        return "/".join([self.table_dir(asset_name), *segs, "part.parquet"])

    def write_table(self, df: pd.DataFrame, path: str) -> None:
        """Write ``df`` as Parquet at ``path`` atomically (temp file in the same dir, fsync, os.replace).

        A frame with no columns (``pd.DataFrame([])`` from an empty result) is never written as such: Parquet
        readers refuse column-less files. It takes the schema of the asset's other files when there are
        any, else a single placeholder column ``_empty`` (zero rows either way).
        """
        if not path.endswith(".parquet"):
            raise ValueError(f"table path must end in .parquet: {path}")
        if len(df.columns) == 0:
            df = self._empty_like(path)
        self._atomic_write(path, lambda f: df.to_parquet(f, index=False))

    def _empty_like(self, path: str) -> pd.DataFrame:
        import pyarrow.parquet as pq
        base = path[:path.index("/tables/") + len("/tables/")] if "/tables/" in path else None
        if base is not None:
            asset = path[len(base):].split("/", 1)[0]
            try:
                siblings = [f for f in self.table_files(asset) if f != path]
            except ValueError:
                siblings = []
            for f in siblings:
                try:
                    schema = pq.read_schema(f) if self.is_local else None
                except Exception:  # noqa: BLE001 - try the next file
                    continue
                if schema is not None and len(schema.names):
                    return schema.empty_table().to_pandas()
        return pd.DataFrame({"_empty": pd.Series([], dtype="boolean")})

    def read_table(self, path: str) -> pd.DataFrame:
        if self.is_local:
            return pd.read_parquet(path)
        fs, _ = self._fs()
        with fs.open(path, "rb") as f:
            return pd.read_parquet(f)

    def table_files(self, asset_name: str) -> list[str]:
        """Every complete Parquet file of an asset (temp files never match)."""
        d = self.table_dir(asset_name)
        if self.is_local:
            out = []
            for dirpath, _, names in os.walk(d):
                out.extend(os.path.join(dirpath, n) for n in names if n.endswith(".parquet"))
            return sorted(out)
        fs, _ = self._fs()
        return sorted(p for p in fs.find(d) if p.endswith(".parquet")) if fs.exists(d) else []

    def asset_tables(self) -> list[str]:
        """Names of the asset directories under ``<root>/tables``."""
        base = self._join("tables")
        if self.is_local:
            if not os.path.isdir(base):
                return []
            return sorted(n for n in os.listdir(base) if os.path.isdir(os.path.join(base, n)) and _SEGMENT.fullmatch(n))
        fs, _ = self._fs()
        if not fs.exists(base):
            return []
        names = (p.rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(base, detail=False) if fs.isdir(p))
        return sorted(n for n in names if _SEGMENT.fullmatch(n))

    def _glob(self, asset_name: str) -> Optional[str]:
        """The read_parquet glob of one asset, or None when it has no complete file yet."""
        files = self.table_files(asset_name)
        if not files:
            return None
        d = self.table_dir(asset_name)
        partitioned = any("=" in f[len(d):] for f in files)
        # An asset that was unpartitioned once and is partitioned now keeps a stale top-level part.parquet:
        # only read hive directories then (DuckDB refuses to mix hive and non-hive files in one scan).
        pattern = f"{d}/*=*/**/*.parquet" if partitioned else f"{d}/*.parquet"
        if not self.is_local:
            fs, _ = self._fs()
            pattern = fs.unstrip_protocol(pattern)
        return pattern

    def _file_problem(self, path: str) -> Optional[str]:
        """Why DuckDB could not read ``path`` as part of a view (None: readable, with at least one column)."""
        import pyarrow.parquet as pq
        try:
            if self.is_local:
                schema = pq.read_schema(path)
            else:
                fs, _ = self._fs()
                with fs.open(path, "rb") as f:
                    schema = pq.read_schema(f)
        except Exception as e:  # noqa: BLE001 - any unreadable footer is the same verdict
            return f"unreadable Parquet ({type(e).__name__}: {str(e).strip().splitlines()[0][:160]})"
        if len(schema.names) == 0:
            return "no columns"
        return None

    def table_problem(self, asset_name: str, partition: dict[str, str] | str | None) -> Optional[str]:
        """Why an asset partition's table cannot be read back, or None when its Parquet footer reads.

        ``table missing: <the asset's table folder>`` (the folder, not the file: a new store or a deleted folder is
        one reason per asset for all its partitions, which the caller lists, not one line per file) or ``table
        unreadable: <file> (<why>)``. The instance can say "materialised" of a table deleted or damaged since (or
        written under another store root): staleness asks this, so such a partition re-runs."""
        path = self.table_path(asset_name, partition)
        if not self.exists(path):
            return f"table missing: {self.table_dir(asset_name)}"
        why = self._file_problem(path)
        return f"table unreadable: {path} ({why})" if why else None

    def has_table(self, asset_name: str, partition: dict[str, str] | str | None) -> bool:
        return self.table_problem(asset_name, partition) is None

    def _view_sql(self, name: str, source: str) -> str:
        return (f'CREATE OR REPLACE VIEW "{name}" AS SELECT * FROM read_parquet({source}, '
                f"hive_partitioning=true, union_by_name=true)")

    def duckdb(self) -> duckdb.DuckDBPyConnection:
        """In-memory connection with one read-only VIEW per asset over its Parquet files.

        Views glob the files at query time, so queries see every file renamed into place so far and
        never a temp file; any number of processes can query while others write. An asset with an
        unreadable or column-less file gets a view over its good files only (the bad ones are listed by
        ``bad_files()``), and an asset with none is left out: one bad file never breaks another query.
        """
        con = duckdb.connect()
        if not self.is_local:
            fs, _ = self._fs()
            con.register_filesystem(fs)
        bad: dict[str, str] = {}
        for name in self.asset_tables():
            glob = self._glob(name)
            if glob is None:
                continue
            lit = glob.replace("'", "''")
            try:
                con.execute(self._view_sql(name, f"'{lit}'"))
                con.execute(f'SELECT * FROM "{name}" LIMIT 0')  # binding reads every file's schema
                continue
            except duckdb.Error:
                pass
            files = self.table_files(name)
            d = self.table_dir(name)
            if any("=" in f[len(d):] for f in files):
                files = [f for f in files if "=" in f[len(d):]]
            good = []
            for f in files:
                why = self._file_problem(f)
                if why is None:
                    good.append(f)
                else:
                    bad[f] = why
            try:
                con.execute(f'DROP VIEW IF EXISTS "{name}"')
                if good:
                    if not self.is_local:
                        fs, _ = self._fs()
                        good = [fs.unstrip_protocol(f) for f in good]
                    listed = ", ".join("'" + f.replace("'", "''") + "'" for f in good)
                    con.execute(self._view_sql(name, f"[{listed}]"))
                    con.execute(f'SELECT * FROM "{name}" LIMIT 0')
            except duckdb.Error as e:
                con.execute(f'DROP VIEW IF EXISTS "{name}"')
                bad[self.table_dir(name)] = f"no view: {str(e).strip().splitlines()[0][:160]}"
        _BAD_FILES[self.root] = bad
        if bad:
            import logging
            logging.getLogger("bench.store").warning(
                "%d table file(s) left out of the DuckDB views: %s", len(bad),
                "; ".join(f"{k} ({v})" for k, v in list(bad.items())[:3]))
        return con

    def bad_files(self) -> dict[str, str]:
        """Files (or asset folders) the last ``duckdb()`` call left out, with the reason."""
        return dict(_BAD_FILES.get(self.root, {}))

    def query(self, sql: str) -> pd.DataFrame:
        con = self.duckdb()
        try:
            return con.execute(sql).df()
        finally:
            con.close()


# ---------------------------------------------------------------------- IO manager
def _asset_name(key) -> str:
    return "__".join(key.path)


def partition_dims(partitions_def, partition_key: str) -> dict[str, str]:
    """Dimension -> key. Goes through the definition: a run launched with only the ``dagster/partition``
    tag hands the asset a plain ``"a|b"`` string (dims sorted by name)."""
    if isinstance(partitions_def, MultiPartitionsDefinition):
        return dict(partitions_def.get_partition_key_from_str(partition_key).keys_by_dimension)
    return {"partition": partition_key}


# A run tag bench_assets/core/automation.py sets when a staleness check cannot run (its STALENESS_UNKNOWN_TAG): every
# output of such a run says so in its metadata, where the asset's materialization shows it.
STALENESS_UNKNOWN_TAG = "bench/staleness_unknown"


def _run_tags(context: OutputContext) -> dict:
    try:
        return dict(context.step_context.run_tags)
    except Exception:  # noqa: BLE001 - an output context built outside a run (tests, direct calls): no tags
        return {}


class ParquetIOManager(ConfigurableIOManager):
    """Every asset output is a DataFrame: one Parquet file per asset partition, written atomically."""

    root: str = ".bench"

    @property
    def store(self) -> Store:
        return Store(root=self.root)

    def _path(self, key, partitions_def, partition_key: Optional[str]) -> str:
        if partitions_def is None or partition_key is None:
            return self.store.table_path(_asset_name(key), None)
        return self.store.table_path(_asset_name(key), partition_dims(partitions_def, partition_key))

    def table_problem(self, key, partitions_def, partition_key: Optional[str]) -> Optional[str]:
        """``Store.table_problem`` of the table this IO manager writes for ``key`` / ``partition_key``."""
        dims = None if partitions_def is None or partition_key is None else partition_dims(partitions_def,
                                                                                            partition_key)
        return self.store.table_problem(_asset_name(key), dims)

    def handle_output(self, context: OutputContext, obj: pd.DataFrame) -> None:
        if obj is None:
            return
        if not isinstance(obj, pd.DataFrame):
            raise TypeError(f"{context.asset_key.to_user_string()}: ParquetIOManager expects a pandas DataFrame, "
                            f"got {type(obj).__name__}")
        if context.has_asset_partitions:
            path = self._path(context.asset_key, context.asset_partitions_def, context.asset_partition_key)
        else:
            path = self._path(context.asset_key, None, None)
        self.store.write_table(obj, path)
        meta = {"rows": len(obj), "path": MetadataValue.path(path)}
        why = _run_tags(context).get(STALENESS_UNKNOWN_TAG)
        if why:
            meta["staleness_unknown"] = MetadataValue.text("; ".join(f"staleness unknown: {w}"
                                                                     for w in why.split("; ")))
        context.add_output_metadata(meta)

    def load_input(self, context: InputContext) -> pd.DataFrame:
        key = context.asset_key
        name = key.to_user_string()
        if not context.has_asset_partitions:
            path = self._path(key, None, None)
            if not self.store.exists(path):
                raise FileNotFoundError(f"asset {name} has no table at {path}; materialise it first")
            return self.store.read_table(path)
        pdef = context.asset_partitions_def
        keys = list(context.asset_partition_keys)
        if len(keys) == 1:
            pk = keys[0]
            path = self._path(key, pdef, pk)
            if not self.store.exists(path):
                raise FileNotFoundError(f"asset {name} partition {pk!r} has no table at {path}; materialise it first")
            return self._with_dims(self.store.read_table(path), pdef, pk)
        # Several upstream partitions (or every partition, for an unpartitioned downstream): read those that exist.
        frames = []
        for pk in keys:
            path = self._path(key, pdef, pk)
            if self.store.exists(path):
                frames.append(self._with_dims(self.store.read_table(path), pdef, pk))
        if not frames:
            raise FileNotFoundError(f"asset {name}: none of its {len(keys)} mapped partitions is materialised "
                                    f"(e.g. {keys[:3]}) under {self.store.table_dir(_asset_name(key))}")
        return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]

    @staticmethod
    def _with_dims(df: pd.DataFrame, pdef, pk: str) -> pd.DataFrame:
        for dim, val in partition_dims(pdef, pk).items():
            if dim not in df.columns:
                df[dim] = val
        return df
