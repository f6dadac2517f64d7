"""Official result files imported beside ours (issue 35 item 3): ``bench import-results <benchmark> PATH``.

A researcher's run of a benchmark's own evaluation code (EntityBench per-episode JSON, ViStoryBench summary.json /
story_results.json, MBench leaderboard_submission.json, LoCoT2V {overall_score, sample_scores}, NarrativeTrack
``<model>-eval.json``) is read by that benchmark's ``official*.py`` into the long rows below and kept in the store as
the table ``imported_results`` (one Parquet file per (benchmark, source), so DuckDB reads it beside the assets'
tables and a re-import of the same file replaces its rows). Nothing here recomputes a value: the file's number is
kept as published (``value_official``) and, where the metric is one of ours, on our scale (``value``; the factor
is the benchmark reader's, e.g. ViStoryBench cosine 0-1 -> x100).

On the board an imported source is its own row set: generator ``<method> [imported]``, ``protocol`` naming the code
and commit it came from, ``comparable`` False unless the benchmark's own protocol says otherwise (EntityBench's: two
runs are comparable iff the authors' ``manifest_comparable`` accepts their run manifests; no other benchmark has
such a rule), the verdict's reason and the source in ``detail``. The per-item side by side (``side_by_side``) puts our value and theirs for each item and metric.
Pure but for ``store_rows`` / ``read_rows``, which go through the project's Store.
"""
from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from typing import Any, Iterable, Optional

import pandas as pd

TABLE = "imported_results"
LABEL = " [imported]"        # appended to the method's name on the board: never mistaken for one of our generators
COLUMNS: dict[str, str] = {
    "benchmark": "string", "source": "string", "method": "string", "code": "string", "commit": "string",
    "file": "string", "level": "string",       # "item" (episode, story, sample, question) or "overall"
    "item": "string", "slice": "string",        # slice: tier / mode / split, as the benchmark's board names it
    "metric": "string",                         # the official file's own key
    "metric_id": "string",                      # ours, when the official metric is one of ours; None otherwise
    "value": "Float64",                         # on our scale (None: not one of ours, or no value in the file)
    "value_official": "Float64",                # as the file has it
    "n_eval": "Int64", "n_failed": "Int64", "n_skipped": "Int64",
    "note": "string", "imported_at": "string",
    # whether the benchmark's own protocol makes this run comparable with ours (EntityBench: the authors'
    # manifest_comparable on the two run manifests), and why (or why not)
    "comparable": "boolean", "comparable_reason": "string",
}
NOT_COMPARABLE = "no rule of this benchmark's protocol makes another evaluator's run comparable with ours"
LEVELS = ("item", "overall")


@dataclass(frozen=True)
class Source:
    """Where an imported result came from: the official code (repository and script), the commit it was run at
    (``None``: the file does not say and the user did not give --commit; shown as 'commit not stated')."""
    benchmark: str
    method: str
    code: str
    commit: Optional[str]
    file: str

    @property
    def commit_text(self) -> str:
        return self.commit or "commit not stated"

    @property
    def protocol(self) -> str:
        return f"imported: {self.code} @ {self.commit_text}"


def _num(v: Any) -> Optional[float]:
    if v is None or isinstance(v, bool) or v is pd.NA:
        return None
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(f) or math.isinf(f) else f


def read_json_files(path) -> tuple[list[tuple[Any, Any]], list[str]]:
    """Every ``*.json`` of a folder, sorted (or the one file given): ``(file, parsed JSON)`` for each readable one
    and a problem naming each other one, so one bad file never stops the others being read."""
    from pathlib import Path
    p = Path(path)
    files = sorted(p.glob("*.json")) if p.is_dir() else [p]
    if not files or (not p.is_dir() and not p.is_file()):
        raise ValueError(f"{p}: no .json result files")
    docs, problems = [], []
    for f in files:
        try:
            docs.append((f, json.loads(f.read_text(encoding="utf-8"))))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            problems.append(f"{f.name}: not readable JSON ({type(e).__name__}: {str(e).splitlines()[0][:120]})")
    return docs, problems


def source_id(src: Source) -> str:
    """A partition-safe id of one (benchmark, method, code, commit, file): a re-import of it replaces its rows."""
    key = json.dumps([src.benchmark, src.method, src.code, src.commit, src.file])
    return f"{''.join(c if c.isalnum() or c in '_.-' else '_' for c in src.method)[:40]}-" \
           f"{hashlib.sha256(key.encode()).hexdigest()[:12]}"


def row(level: str, metric: str, value_official: Any, *, item: Optional[str] = None, slice: Optional[str] = None,
        metric_id: Optional[str] = None, factor: float = 1.0, n_eval: Any = None, n_failed: Any = None,
        n_skipped: Any = None, note: Optional[str] = None) -> dict:
    """One imported value. ``factor`` turns the official scale into ours (only when ``metric_id`` is ours)."""
    if level not in LEVELS:
        raise ValueError(f"level {level!r} is not one of {LEVELS}")
    vo = _num(value_official)
    return {"level": level, "item": item, "slice": slice, "metric": metric, "metric_id": metric_id,
            "value_official": vo, "value": None if (vo is None or metric_id is None) else vo * factor,
            "n_eval": n_eval, "n_failed": n_failed, "n_skipped": n_skipped, "note": note}


def frame(rows: Iterable[dict], src: Source, imported_at: str, comparable: bool = False,
          comparable_reason: str = NOT_COMPARABLE) -> pd.DataFrame:
    """The rows of one source in the table's schema (source, code, commit, file and the protocol's verdict on
    comparability on every row)."""
    df = pd.DataFrame(list(rows), columns=[c for c in COLUMNS if c not in
                                           ("benchmark", "source", "method", "code", "commit", "file",
                                            "imported_at", "comparable", "comparable_reason")])
    if df.empty:
        raise ValueError(f"{src.file}: no result values found for {src.benchmark}")
    df["benchmark"], df["source"], df["method"] = src.benchmark, source_id(src), src.method
    df["code"], df["commit"], df["file"], df["imported_at"] = src.code, src.commit, src.file, imported_at
    df["comparable"], df["comparable_reason"] = bool(comparable), comparable_reason
    for c in ("n_eval", "n_failed", "n_skipped"):
        df[c] = df[c].map(lambda v: None if _num(v) is None else int(_num(v)))
    return df.reindex(columns=list(COLUMNS)).astype(COLUMNS)


def store_rows(store, df: pd.DataFrame) -> str:
    """Write one source's rows as ``tables/imported_results/benchmark=<b>/source=<id>/part.parquet`` (atomic)."""
    (bench,), (sid,) = df["benchmark"].unique(), df["source"].unique()
    path = store.table_path(TABLE, {"benchmark": str(bench), "source": str(sid)})
    if store.is_local:
        import os
        os.makedirs(os.path.dirname(path), exist_ok=True)
    store.write_table(df, path)
    return path


def read_rows(store, benchmark: str) -> pd.DataFrame:
    """Every imported row of one benchmark (an empty frame in the schema when none was imported)."""
    if not store.table_files(TABLE):
        return pd.DataFrame(columns=list(COLUMNS)).astype(COLUMNS)
    safe = benchmark.replace("'", "''")
    df = store.query(f"SELECT * FROM \"{TABLE}\" WHERE benchmark = '{safe}'")
    return df.reindex(columns=list(COLUMNS)).astype(COLUMNS)


def board_rows(imported: pd.DataFrame, known: Iterable[str]) -> list[dict]:
    """Board-schema rows (core/metric_spec.board_row fields) for the overall values whose metric is one of ours
    (``known``: the board's metric ids). Never comparable; the source is in protocol and detail."""
    known = set(known)
    out = []
    ov = imported[(imported["level"] == "overall") & imported["metric_id"].isin(known)]
    for _, r in ov.iterrows():
        comparable = bool(r["comparable"]) if not pd.isna(r["comparable"]) else False
        src = {"imported": True, "code": r["code"], "commit": None if pd.isna(r["commit"]) else r["commit"],
               "file": r["file"], "official_metric": r["metric"], "value_official": _num(r["value_official"]),
               "imported_at": r["imported_at"], "comparable_reason": None if pd.isna(r["comparable_reason"])
               else r["comparable_reason"]}
        n_eval = _num(r["n_eval"])
        out.append({"generator": f"{r['method']}{LABEL}", "metric_id": r["metric_id"], "slice": r["slice"],
                    "value": _num(r["value"]), "n_eval": n_eval, "n_failed": _num(r["n_failed"]),
                    "n_skipped": _num(r["n_skipped"]),
                    "reason": None if _num(r["value"]) is not None else (r["note"] if isinstance(r["note"], str)
                                                                          else "no value in the official file"),
                    "protocol": f"imported: {r['code']} @ {r['commit'] if isinstance(r['commit'], str) else 'commit not stated'}",
                    "comparable": comparable, "detail": src})
    return out


def is_imported(generator: Any) -> bool:
    return isinstance(generator, str) and generator.endswith(LABEL)


def legend_lines(board: pd.DataFrame) -> list[str]:
    """What the imported rows of a board are (printed under the board's own legend)."""
    if "generator" not in board or not board["generator"].map(is_imported).any():
        return []
    lines = [f"{LABEL.strip()} a result file of the benchmark's own evaluation code, imported as published "
             "(bench import-results); not comparable with ours ('!') unless the benchmark's protocol says so"]
    part = board[board["generator"].map(is_imported)]
    for gen, proto in sorted(set(zip(part["generator"], part["protocol"].astype(str)))):
        lines.append(f"    {gen}: {proto.removeprefix('imported: ')}")
    return lines


def side_by_side(imported: pd.DataFrame, ours: pd.DataFrame, generator: Optional[str] = None) -> pd.DataFrame:
    """Per item and metric: our value and theirs. ``ours``: item rows (generator, item, metric_id, value);
    ``generator``: which of ours to put beside them (default: each imported method beside our generator of the
    same name). Rows only one side has are kept (the other side None) so nothing is silently left out."""
    theirs = imported[(imported["level"] == "item") & imported["metric_id"].notna()]
    cols = ["method", "generator", "item", "metric_id", "ours", "theirs", "delta", "metric", "value_official"]
    if theirs.empty:
        return pd.DataFrame(columns=cols)
    frames = []
    for method, t in theirs.groupby("method", sort=True):
        gen = generator or method
        o = ours[ours["generator"] == gen][["item", "metric_id", "value"]].rename(columns={"value": "ours"})
        m = t[["item", "metric_id", "value", "metric", "value_official"]].rename(columns={"value": "theirs"})
        j = m.merge(o, on=["item", "metric_id"], how="outer")
        j["method"], j["generator"] = method, gen
        frames.append(j)
    out = pd.concat(frames, ignore_index=True)
    out["ours"] = pd.to_numeric(out["ours"], errors="coerce")
    out["theirs"] = pd.to_numeric(out["theirs"], errors="coerce")
    out["delta"] = out["ours"] - out["theirs"]
    return out[cols].sort_values(["method", "metric_id", "item"]).reset_index(drop=True)


def summary_lines(imported: pd.DataFrame) -> list[str]:
    """One line per source: counts of item and overall values, and of official metrics not mapped to ours."""
    lines = []
    for (method, code, commit, file), p in imported.groupby(["method", "code", "commit", "file"], dropna=False):
        unmapped = sorted(set(p.loc[p["metric_id"].isna(), "metric"]))
        items = p[p["level"] == "item"]
        lines.append(f"{method}: {len(items)} item values over {items['item'].nunique()} items, "
                     f"{int((p['level'] == 'overall').sum())} overall values; from {code} @ "
                     f"{commit if isinstance(commit, str) else 'commit not stated'} ({file})")
        if unmapped:
            lines.append(f"    kept, not one of our metrics ({len(unmapped)}): {', '.join(unmapped[:12])}"
                         f"{', ...' if len(unmapped) > 12 else ''}")
    return lines
