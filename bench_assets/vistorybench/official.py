"""ViStoryBench results in the official result layout, out and in (issue 35 item 3).

The official code (GitHub ``ViStoryBench/vistorybench``, ``vistorybench/result_management/manager.py``
ResultManager) writes one run as ``<method>/<mode>/<language>/<timestamp>/`` holding ``metadata.json``,
``summary.json`` and ``metrics/<metric>/story_results.json`` (per story ``{run, metric, scope, status, metrics}``),
dataset-level metrics as ``metrics/<metric>/scores.json``; ``utils/export_bench_results_csv.py`` reads the tree back.
``export`` writes that tree from our story rows (pure: rows in, ``{relative path: JSON}`` out); ``read_results``
reads one back into imported rows (core/imported_results.py) for ``bench import-results vistorybench``.

The official metric keys and their scale against ours (``OFFICIAL``): CIDS and CSD are cosines and copy-paste a
probability in [0, 1] there, x100 on our board; OCCM is 0-100 and the alignment aspects 0-4 on both. A story value
we do not have is written as null (their ``_aggregate_story_metrics_mean`` averages only numbers, so a null is left
out, never averaged in as 0; the official evaluators themselves write 0.0 for a story without images, which an
import cannot tell apart from a real 0 and is kept as published).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from bench_assets.core.records import number_or_none as _num

RESULTS_CODE = "ViStoryBench/vistorybench bench_run.py (result_management/manager.py)"
# our metric id -> (official metric folder, key in its "metrics", official value x factor = ours)
OFFICIAL: dict[str, tuple[str, str, float]] = {
    "cids_cross": ("cids", "cids_cross_mean", 100.0), "cids_self": ("cids", "cids_self_mean", 100.0),
    "occm": ("cids", "occm", 1.0), "copy_paste": ("cids", "copy_paste_score", 100.0),
    "alignment.single_character_action": ("cids", "single_character_action", 1.0),
    "csd_cross": ("csd", "cross_csd", 100.0), "csd_self": ("csd", "self_csd", 100.0),
    "alignment.scene": ("prompt_align", "scene", 1.0), "alignment.camera": ("prompt_align", "camera", 1.0),
    "alignment.character_action": ("prompt_align", "character_action", 1.0),
    "aesthetics": ("aesthetic", "aesthetic_score", 1.0),
}
DATASET_LEVEL: dict[str, tuple[str, str, float]] = {"inception_score": ("diversity", "inception_score", 1.0)}
_BY_OFFICIAL = {(m, k): (mid, f) for mid, (m, k, f) in {**OFFICIAL, **DATASET_LEVEL}.items()}
DATASET = "ViStory"


def _run(method: str, mode: str, language: str, timestamp: str) -> dict:
    return {"method": method, "mode": mode, "language": language, "dataset": DATASET, "timestamp": timestamp}


def export(records: pd.DataFrame, generator: str, *, mode: str = "base", language: str = "en",
           timestamp: str, dataset_values: Optional[dict[str, Any]] = None) -> dict[str, dict]:
    """One generator's run in the official tree. ``records``: story rows (generator, item = story id, metric_id,
    value); ``dataset_values``: dataset-level metric id -> value (inception_score). Keys are paths relative to the
    export root: ``<generator>/<mode>/<language>/<timestamp>/...``."""
    sub = records[(records["generator"] == generator) & records["metric_id"].isin(OFFICIAL)]
    if sub.empty and not dataset_values:
        raise ValueError(f"no ViStoryBench story rows for generator {generator!r}")
    root = f"{generator}/{mode}/{language}/{timestamp}"
    run = _run(generator, mode, language, timestamp)
    files: dict[str, dict] = {f"{root}/metadata.json": {"run": {**run, "dataset_name": DATASET,
                                                                "outputs_timestamp": None}}}
    per_metric: dict[str, dict[str, dict]] = {}
    for (story, mid), rows in sub.groupby(["item", "metric_id"], sort=True):
        folder, key, factor = OFFICIAL[mid]
        v = _num(rows["value"].iloc[0])
        rec = per_metric.setdefault(folder, {}).setdefault(str(story), {
            "run": {k: run[k] for k in ("method", "mode", "language", "dataset", "timestamp")},
            "metric": {"name": folder}, "scope": {"level": "story", "story_id": str(story)},
            "status": "complete", "metrics": {}})
        rec["metrics"][key] = None if v is None else v / factor
    summary: dict[str, Any] = {"run": dict(run), "metrics": {}}
    for folder, stories in sorted(per_metric.items()):
        files[f"{root}/metrics/{folder}/story_results.json"] = stories
        # compute_and_save_summary: the numeric mean per key over the stories
        keys = sorted({k for s in stories.values() for k in s["metrics"]})
        means = {}
        for k in keys:
            vals = [s["metrics"][k] for s in stories.values() if isinstance(s["metrics"].get(k), (int, float))]
            means[k] = sum(vals) / len(vals) if vals else 0.0   # their own fallback for a key without numbers
        summary["metrics"][folder] = {"metrics": means}
    for mid, v in (dataset_values or {}).items():
        folder, key, factor = DATASET_LEVEL[mid]
        rec = {"metric": {"name": folder}, "scope": {"level": "dataset"},
               "metrics": {key: None if _num(v) is None else _num(v) / factor}}
        files[f"{root}/metrics/{folder}/scores.json"] = rec
        summary["metrics"][folder] = rec
    files[f"{root}/summary.json"] = summary
    return files


def _run_dirs(p: Path) -> list[Path]:
    """The run folders (holding summary.json or metrics/) under ``p``, ``p`` itself first."""
    if (p / "summary.json").is_file() or (p / "metrics").is_dir():
        return [p]
    found = sorted({q.parent for q in p.rglob("summary.json")} | {q.parent for q in p.rglob("metrics")
                                                                  if q.is_dir()})
    return found


def read_results(path: str | Path, known: set[str]) -> tuple[str, list[dict], list[str], dict]:
    """One official run folder (``.../<method>/<mode>/<language>/<timestamp>/``; or a folder holding exactly one;
    or its summary.json) -> (method, imported rows, problems, info). Story values from every
    ``metrics/<m>/story_results.json`` (per story ``metrics``), overall values from ``summary.json`` (slice
    'full': the run's own mean over the stories it evaluated) and ``metrics/<m>/scores.json``."""
    from bench_assets.core.imported_results import row
    p = Path(path)
    if p.is_file():
        p = p.parent
    if not p.is_dir():
        raise ValueError(f"{p}: no such folder")
    runs = _run_dirs(p)
    if len(runs) != 1:
        raise ValueError(f"{p}: {'no' if not runs else len(runs)} ViStoryBench run folders (summary.json or "
                         f"metrics/) found; give one <method>/<mode>/<language>/<timestamp>/ folder")
    run_dir = runs[0]
    problems: list[str] = []
    rows: list[dict] = []
    info: dict[str, Any] = {}

    def load(f: Path) -> Optional[dict]:
        try:
            d = json.loads(f.read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            problems.append(f"{f.relative_to(run_dir)}: not readable JSON ({type(e).__name__})")
            return None
        if not isinstance(d, dict):
            problems.append(f"{f.relative_to(run_dir)}: the top level is not an object")
            return None
        return d

    for f in sorted(run_dir.glob("metrics/*/story_results.json")):
        folder = f.parent.name
        d = load(f)
        for sid, obj in (d or {}).items():
            if not isinstance(obj, dict):
                problems.append(f"{f.relative_to(run_dir)}: story {sid}: not an object")
                continue
            info.setdefault("run", obj.get("run"))
            metrics = obj.get("metrics") if isinstance(obj.get("metrics"), dict) else obj
            for k, v in metrics.items():
                if isinstance(v, (dict, list)):
                    continue
                mid, factor = _BY_OFFICIAL.get((folder, k), (None, 1.0))
                rows.append(row("item", f"{folder}.{k}", v if isinstance(v, (int, float)) else None, item=str(sid),
                                slice="full", metric_id=mid if mid in known else None, factor=factor,
                                note=None if isinstance(v, (int, float)) else f"{v!r} in the official file"))
    summary = load(run_dir / "summary.json") if (run_dir / "summary.json").is_file() else None
    blocks = dict((summary or {}).get("metrics") or {})
    for f in sorted(run_dir.glob("metrics/*/scores.json")):
        blocks.setdefault(f.parent.name, load(f) or {})
    for folder, block in sorted(blocks.items()):
        vals = block.get("metrics") if isinstance(block, dict) and isinstance(block.get("metrics"), dict) else block
        for k, v in (vals or {}).items():
            if isinstance(v, (dict, list)):
                continue
            mid, factor = _BY_OFFICIAL.get((folder, k), (None, 1.0))
            rows.append(row("overall", f"{folder}.{k}", v if isinstance(v, (int, float)) else None, slice="full",
                            metric_id=mid if mid in known else None, factor=factor,
                            note="summary.json: the run's mean over the stories it evaluated"))
    if summary:
        info["run"] = summary.get("run") or info.get("run")
    run = info.get("run") or {}
    parts = run_dir.parts
    method = run.get("method") or (parts[-4] if len(parts) >= 4 else run_dir.name)
    info.update({k: run.get(k) for k in ("mode", "language", "timestamp")})
    if not rows:
        raise ValueError(f"{run_dir}: no story_results.json, summary.json or scores.json values" +
                         (f" ({'; '.join(problems[:3])})" if problems else ""))
    return method, rows, problems, info
