"""One run's results as one JSON document (config, versions, protocol digests, the board), and exports of a board
to the layouts peers read: a Hugging Face dataset folder and a Weights & Biases offline run (both written locally;
`huggingface-cli upload` / `wandb sync` publish them when the user wants).
"""
from __future__ import annotations

import json
import math
import platform
import subprocess
import time
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Optional

import pandas as pd

from bench_assets.core.board_text import cells

RESULTS_SCHEMA = "bench-results/1"
VERSIONED = ("entity-bench-platform", "dagster", "torch", "torchvision", "opencv-python", "pandas", "duckdb", "numpy")


def json_scalar(v: Any) -> Any:
    """JSON-safe scalars: NaN/NA -> None, numpy scalars -> Python."""
    if v is None:
        return None
    if hasattr(v, "item") and not isinstance(v, (list, dict, str)):
        try:
            v = v.item()
        except (ValueError, AttributeError):
            pass
    if isinstance(v, float) and math.isnan(v):
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    return v


def board_records(board: pd.DataFrame) -> list[dict]:
    return [{k: json_scalar(v) for k, v in r.items()} for r in board.to_dict("records")]


def git_commit(root: Path) -> Optional[str]:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def versions(root: Optional[Path] = None) -> dict:
    """The platform's and its main libraries' versions, Python's, and the checkout's commit."""
    out: dict[str, Any] = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["git_commit"] = git_commit(root) if root is not None else None
    return out


def protocol_digests(board: pd.DataFrame) -> list[str]:
    """Every protocol digest on the board (a cell may carry several, ';'-joined)."""
    if "protocol" not in board.columns:
        return []
    seen = set()
    for v in board["protocol"].dropna():
        seen |= {p.strip() for p in str(v).split(";") if p.strip()}
    return sorted(seen)


def results_document(*, benchmark: str, generator: str, board: pd.DataFrame, config: dict, versions: dict,
                     run: dict, created: Optional[str] = None) -> dict:
    """The results of one `bench evaluate`: the generator's board rows and everything needed to read them."""
    mine = board[board["generator"] == generator] if "generator" in board.columns else board
    return {"schema": RESULTS_SCHEMA, "benchmark": benchmark, "generator": generator,
            "created": created or time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "config": config, "versions": versions, "protocol_digests": protocol_digests(mine), "run": run,
            "board": board_records(mine)}


def write_json(doc: dict, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(doc, indent=2, sort_keys=False, default=str) + "\n", encoding="utf-8")
    tmp.replace(path)
    return path


# ---------------------------------------------------------------------- Hugging Face dataset folder
def hf_card(benchmark: str, n_rows: int, n_metrics: int, generators: Iterable[str], digests: list[str]) -> str:
    """The dataset card: YAML front matter declaring the parquet configs (the Hub's dataset viewer reads it)."""
    gens = ", ".join(sorted(generators))
    return (f"---\nconfigs:\n- config_name: leaderboard\n  data_files: data/leaderboard.parquet\n"
            f"- config_name: metrics\n  data_files: data/metrics.parquet\ntags:\n- benchmark\n- {benchmark}\n---\n\n"
            f"# {benchmark} leaderboard\n\n"
            f"Exported by `bench export --format hf` from the entity-consistency benchmarks platform.\n\n"
            f"- `leaderboard`: {n_rows} rows (generator x metric x slice), the platform's common board schema\n"
            f"- `metrics`: {n_metrics} declared metrics (paper id or addition, direction, scale, model slots)\n"
            f"- generators: {gens}\n- protocol digests: {', '.join(digests) or '-'}\n")


def export_hf(board: pd.DataFrame, metrics: pd.DataFrame, benchmark: str, out: Path, info: dict) -> list[Path]:
    """``out/README.md``, ``out/data/leaderboard.parquet``, ``out/data/metrics.parquet``, ``out/results.json``:
    the folder `huggingface-cli upload <repo> <out> --repo-type dataset` publishes as it is."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "data").mkdir(exist_ok=True)
    board = board.reset_index(drop=True)
    metrics = metrics.reset_index(drop=True).copy()
    for c in metrics.columns:  # tuples (slots, inputs, parts, scale) as lists: parquet-friendly
        if metrics[c].map(lambda v: isinstance(v, tuple)).any():
            metrics[c] = metrics[c].map(lambda v: list(v) if isinstance(v, tuple) else v)
    paths = [out / "data" / "leaderboard.parquet", out / "data" / "metrics.parquet"]
    board.to_parquet(paths[0], index=False)
    metrics.to_parquet(paths[1], index=False)
    digests = protocol_digests(board)
    card = out / "README.md"
    card.write_text(hf_card(benchmark, len(board), len(metrics), set(board.get("generator", [])), digests),
                    encoding="utf-8")
    doc = {"schema": RESULTS_SCHEMA, "benchmark": benchmark, **info, "protocol_digests": digests}
    return [card, *paths, write_json(doc, out / "results.json")]


# ---------------------------------------------------------------------- Weights & Biases offline run
WANDB_KEY = ("generator", "metric_id", "slice", "value")


def wandb_table(board: pd.DataFrame) -> tuple[list[str], list[list]]:
    """The columns and rows of the W&B ``leaderboard`` table: the cell's key and value first, then every other board
    column (a mark dropped from an export makes a substitute's value read as the paper's), then ``marked``: the
    value as the CLI prints it, with its marks."""
    board = board.reset_index(drop=True)
    texts, _ = cells(board)
    cols = [c for c in WANDB_KEY if c in board.columns] + [c for c in board.columns if c not in WANDB_KEY]
    rows = [[json_scalar(r[c]) for c in cols] + [t] for r, t in zip(board.to_dict("records"), texts)]
    return cols + ["marked"], rows


def wandb_summary(board: pd.DataFrame) -> dict[str, Any]:
    """``{'<generator>/<metric_id>/<slice>': value}`` for every cell with a value (None cells are in the table);
    beside a cell with any mark, ``marks/<key>``: the value with the CLI's marks ('0.812*!'), and beside a value a
    substitute produced (an offline slot, a judge that is not the paper's), ``substitute/<key>``: its label."""
    board = board.reset_index(drop=True)
    texts, _ = cells(board)
    out: dict[str, Any] = {}
    for r, text in zip(board.to_dict("records"), texts):
        v = json_scalar(r.get("value"))
        if v is None:
            continue
        key = f"{r['generator']}/{r['metric_id']}/{r['slice']}"
        out[key] = float(v)
        if text != f"{float(v):.3f}":
            out[f"marks/{key}"] = text
        if json_scalar(r.get("substitute")) is not None:
            out[f"substitute/{key}"] = str(r["substitute"])
    return out


def export_wandb(board: pd.DataFrame, benchmark: str, out: Path, info: dict) -> Path:
    """A W&B offline run under ``out/wandb/offline-run-*`` (config: benchmark, versions, protocol digests; summary:
    one key per valued cell; a ``leaderboard`` table of every cell). No network: `wandb sync <dir>` uploads it."""
    import os
    try:
        import wandb
    except ImportError:
        raise RuntimeError("the W&B export needs the wandb package: pip install -e '.[export]'") from None
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("WANDB_SILENT", "true")
    cols, rows = wandb_table(board)
    run = wandb.init(mode="offline", dir=str(out), project=f"bench-{benchmark}", job_type="evaluation",
                     name=f"{benchmark}-leaderboard",
                     config={"benchmark": benchmark, "protocol_digests": protocol_digests(board), **info},
                     settings=wandb.Settings(console="off", x_disable_stats=True, x_disable_meta=True))
    try:
        run.log({"leaderboard": wandb.Table(columns=cols, data=rows)})
        for k, v in wandb_summary(board).items():
            run.summary[k] = v
        run_dir = Path(run.dir).parent
    finally:
        run.finish()
    _wait_for_exit_record(run_dir)
    return run_dir


def _record_kinds(run_dir: Path) -> list[str]:
    from wandb.proto import wandb_internal_pb2 as pb
    kinds = []
    for f in Path(run_dir).glob("run-*.wandb"):
        try:
            for data in wandb_records(f.read_bytes()):
                rec = pb.Record()
                rec.ParseFromString(data)
                kinds.append(rec.WhichOneof("record_type"))
        except ValueError:  # a record still being written
            return kinds
    return kinds


def _wait_for_exit_record(run_dir: Path, timeout_s: float = 30.0) -> None:
    """W&B's writer process may still be appending after ``finish()`` returns: the export is complete (and the
    CLI says so) only once the run file ends with its exit record."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if "exit" in _record_kinds(run_dir):
            return
        time.sleep(0.1)
    raise RuntimeError(f"the W&B run file under {run_dir} has no exit record after {timeout_s:.0f} s")


def read_wandb_run(run_dir: Path) -> dict:
    """What an offline run file holds (config, summary, the logged keys), read back with wandb's own datastore."""
    import json as _json

    from wandb.proto import wandb_internal_pb2 as pb
    f = next(Path(run_dir).glob("run-*.wandb"))
    config, summary, history_keys = {}, {}, set()
    for data in wandb_records(f.read_bytes()):
        rec = pb.Record()
        rec.ParseFromString(data)
        kind = rec.WhichOneof("record_type")
        if kind == "run":
            for item in rec.run.config.update:
                config[item.key] = _json.loads(item.value_json)
        elif kind == "config":
            for item in rec.config.update:
                config[item.key] = _json.loads(item.value_json)
        elif kind == "summary":
            for item in rec.summary.update:
                key = item.key or "/".join(item.nested_key)
                summary[key] = _json.loads(item.value_json)
        elif kind == "history":
            history_keys |= {item.key or "/".join(item.nested_key) for item in rec.history.item}
    return {"config": config, "summary": summary, "history_keys": sorted(history_keys)}


def wandb_records(raw: bytes) -> list[bytes]:
    """The protobuf records of a ``.wandb`` file: a 7-byte header (':W&B', magic, version), then LevelDB-log
    records (crc32 4, length 2 little-endian, type 1: full / first / middle / last) in 32 KiB blocks; checked so a
    malformed file is an error, not a partial read."""
    import struct
    import zlib
    if raw[:4] != b":W&B":
        raise ValueError("not a W&B run file (no ':W&B' header)")
    block, pos, out, part = 32768, 7, [], b""
    while pos + 7 <= len(raw):
        left = block - pos % block
        if left < 7:  # the block's tail is padding
            pos += left
            continue
        crc, length, kind = struct.unpack("<IHB", raw[pos:pos + 7])
        if length == 0 and kind == 0:  # zero padding at the end of the file
            break
        data = raw[pos + 7:pos + 7 + length]
        if len(data) != length:
            raise ValueError(f"truncated record at byte {pos}")
        if zlib.crc32(bytes([kind]) + data) & 0xFFFFFFFF != crc:
            raise ValueError(f"bad checksum at byte {pos}")
        pos += 7 + length
        if kind == 1:
            out.append(data)
        elif kind == 2:
            part = data
        elif kind == 3:
            part += data
        elif kind == 4:
            out.append(part + data)
            part = b""
    return out
