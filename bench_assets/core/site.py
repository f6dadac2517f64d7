"""One static report site for the whole store: an overview, a page per benchmark, audit pages, validity.

Everything is read from the store's tables through DuckDB (``Store.query``), nothing is recomputed. Each page
tolerates a table that is missing, empty or of another schema than expected: the part it cannot show says
"not evaluated" (with why), the rest of the site still renders. Charts are inline static SVG
(``core/report.py``), images are relative links into the store's artifacts, so the site opens from disk.

    build_site(store, out_dir=None) -> Path of index.html   (default out_dir: <store root>/reports/site)
"""
from __future__ import annotations

import json
import os
import re
import time
from html import escape
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

import pandas as pd

from bench_assets.core import audit as AU
from bench_assets.core import report as R
from bench_assets.core.report import fmt, is_none

BENCH_ORDER = ("entitybench", "vistorybench", "mbench", "locot2v", "narrativetrack")
ITEM_COLUMNS = ("item", "episode_id", "story_id", "case_id", "sample_id", "video_id")
GALLERY_MAX = 24


@dataclass(frozen=True)
class PageSpec:
    """What the site knows about one benchmark's tables (presentation only; the numbers come from the tables)."""
    name: str
    title: str
    about: str
    leaderboard: str
    slice_col: Optional[str] = None         # the leaderboard column splitting it into views (tier, split, mode)
    main_slice: Optional[str] = None
    headline: tuple[str, ...] = ()          # first metric with a value is the overview's headline
    metric_tables: tuple[str, ...] = ()     # long metric tables (generator, item, level, metric_id, value, ...)
    item_label: str = "item"
    families: tuple[tuple[str, str], ...] = ()
    gallery_tables: tuple[str, ...] = ()
    scale_note: str = ""
    scale: Optional[tuple[float, float]] = None   # the published scale, when the whole board shares one


SPECS: dict[str, PageSpec] = {
    "entitybench": PageSpec(
        "entitybench", "EntityBench",
        "Multi-shot video generators: entity presence, fidelity and cross-shot consistency (51 metrics, [0,1]; "
        "imaging quality [0,100]). Values are fidelity-gate-corrected means (raw mean x coverage).",
        "entitybench_leaderboard", "tier", "all",
        ("llm_face_accuracy", "cs_face", "intra_face_fidelity", "cs_object", "subject_consistency"),
        ("entitybench_pillar1", "entitybench_presence_consistency", "entitybench_fidelity", "entitybench_action",
         "entitybench_llm_consistency"), "episode",
        (("Pillar 1: intra-shot quality", r"^(subject_consistency|temporal_flickering|motion_smoothness|"
                                          r"dynamic_degree|aesthetic_quality|imaging_quality)$"),
         ("presence", r"^intra_\w+_presence$"), ("fidelity: face", r"^intra_face"),
         ("fidelity: object", r"^intra_object"), ("fidelity: location", r"^intra_location"),
         ("action", r"^intra_action"), ("cross-shot DINOv2", r"^cs_"), ("LLM face", r"^llm_face"),
         ("LLM object", r"^llm_object"), ("LLM scene", r"^llm_scene"), ("diagnostics", r"^_")),
        ("entitybench_grounding",), "gate-corrected mean"),
    "vistorybench": PageSpec(
        "vistorybench", "ViStoryBench",
        "Story visualisation against character references: mean over stories (0-100 for the starred columns, "
        "raw for IS and aesthetics); coverage = stories scored / stories.",
        "vistorybench_leaderboard", "split", "full", ("cids_cross", "cids_self", "occm", "alignment"),
        ("vistorybench_scores", "vistorybench_alignment", "vistorybench_inception_score"), "story",
        (("character identity", r"^(cids|occm)"), ("copy-paste", r"^copy_paste"), ("style", r"^csd"),
         ("prompt alignment", r"^(alignment|scene|camera|character_action|single_character_action)"),
         ("image quality", r"^(aesthetics|inception_score)")),
        ("vistorybench_scores", "vistorybench_matches"), "mean over stories"),
    "mbench": PageSpec(
        "mbench", "MBench",
        "Memory of video world models: trigger-conditioned M-Score per sub-dimension [0,100] (coverage = "
        "triggered cases / cases); MBench-A and MBench-T are separate leaderboards.",
        "mbench_leaderboard", "mode", "A", ("m_score.entity", "m_score.environment", "m_score.causal"),
        ("mbench_scores",), "case",
        (("dimension M-Scores", r"^m_score\.(entity|environment|causal)$"),
         ("entity", r"^(m_score\.)?(identity|appearance|geometry|texture)$"),
         ("environment", r"^(m_score\.)?(epipolar|reprojection|lighting|style)$"),
         ("causal", r"^(m_score\.)?(state_evolution|evolution_correctness|text_instruction|action_instruction)$")),
        ("mbench_tracks",), "M-Score", (0.0, 100.0)),
    "locot2v": PageSpec(
        "locot2v", "LoCoT2V-Bench",
        "Long text-to-video: 26 sub-dimensions in %, five dimensions (unweighted mean of their sub-dimensions) "
        "and overall.", "locot2v_leaderboard", None, None, ("overall",),
        ("locot2v_visual", "locot2v_judged"), "sample", (), ("locot2v_derived",), "% (mean over samples)",
        (0.0, 100.0)),
    "narrativetrack": PageSpec(
        "narrativetrack", "NarrativeTrack",
        "Video MLLMs answering entity-centric QA: accuracy in % per dimension x format, strict and lenient "
        "never mixed; 'random' is the expected accuracy of uniform guessing.",
        "narrativetrack_leaderboard", "mode", "strict", ("accuracy.avg",), (), "video",
        (("average", r"^accuracy\.avg$"), ("dimension x format", r"^accuracy\.[A-Z]{2}\."),
         ("direction", r"^accuracy\.direction\."), ("track type", r"^accuracy\.track_type\."),
         ("distractor", r"^accuracy\.distractor\.")),
        ("narrativetrack_frames",), "accuracy %", (0.0, 100.0)),
}


# ----------------------------------------------------------------------------- reading

class Reader:
    """Store queries that return None (and remember why) instead of raising: a missing table, an empty one or a
    schema being changed by another writer must not take the site down."""

    def __init__(self, store):
        self.store = store
        try:
            self.tables = set(store.asset_tables())
        except Exception as e:  # noqa: BLE001 - an unreadable store is shown, not raised
            self.tables, self.error = set(), f"{type(e).__name__}: {e}"
        self.problems: dict[str, str] = {}
        self._cache: dict[str, Optional[pd.DataFrame]] = {}
        self._con = None

    def has(self, table: str) -> bool:
        return table in self.tables

    def table(self, table: str, sql: Optional[str] = None) -> Optional[pd.DataFrame]:
        if table not in self.tables:
            self.problems.setdefault(table, "table not in the store")
            return None
        sql = sql or f'SELECT * FROM "{table}"'
        if sql in self._cache:
            df = self._cache[sql]
            return None if df is None or df.empty else df.copy()
        try:
            df = self._query(sql)
        except Exception as e:  # noqa: BLE001 - e.g. a view with no complete Parquet file yet
            self.problems[table] = f"unreadable ({type(e).__name__}: {str(e).splitlines()[0][:160]})"
            self._cache[sql] = None
            return None
        self._cache[sql] = df
        if df.empty:
            self.problems.setdefault(table, "table is empty")
            return None
        return df.copy()

    def _query(self, sql: str) -> pd.DataFrame:
        """One DuckDB connection (views over every table) for the whole build: making the views is the slow
        part, not the queries."""
        if self._con is None:
            self._con = self.store.duckdb()
        return self._con.execute(sql).df()

    def close(self) -> None:
        if self._con is not None:
            self._con.close()
            self._con = None


def _col(df: pd.DataFrame, name: str, default: Any = None) -> pd.Series:
    return df[name] if name in df.columns else pd.Series([default] * len(df), index=df.index, dtype="object")


def _num(s: pd.Series) -> pd.Series:
    return pd.to_numeric(s, errors="coerce").astype("float64")


def family_of(spec: PageSpec, metric_id: str, hint: Any = None) -> str:
    if not is_none(hint) and str(hint):
        return str(hint)
    for fam, pattern in spec.families:
        if re.search(pattern, metric_id):
            return fam
    return "other"


def normalise_board(spec: PageSpec, board: pd.DataFrame) -> pd.DataFrame:
    """Any leaderboard into one long shape: generator, slice, metric_id, family, value, coverage, raw_mean,
    n_eval, n_failed, n_skipped, reason, comparable, substitute, baseline. Columns a table lacks stay None."""
    b = board.copy()
    gen = _col(b, "generator") if "generator" in b.columns else _col(b, "answerer")
    out = pd.DataFrame({"generator": gen.astype("string"), "metric_id": _col(b, "metric_id").astype("string")})
    out["slice"] = _col(b, spec.slice_col, "all").astype("string").fillna("none") if spec.slice_col \
        else pd.Series("all", index=b.index, dtype="string")
    value = _col(b, "value")
    if "m_score" in b.columns:
        value = value.where(value.notna(), b["m_score"]) if "value" in b.columns else b["m_score"]
    out["value"] = _num(value)
    for c in ("n_eval", "n_failed", "n_skipped"):
        out[c] = _num(_col(b, c))
    out["raw_mean"] = _num(_col(b, "raw_mean"))
    if "coverage" in b.columns:
        cov = _num(b["coverage"])
    elif {"stories_scored", "stories"} <= set(b.columns):
        cov = _num(b["stories_scored"]) / _num(b["stories"]).where(_num(b["stories"]) > 0)
    else:
        tot = out["n_eval"].fillna(0) + out["n_failed"].fillna(0) + out["n_skipped"].fillna(0)
        cov = (out["n_eval"] / tot.where(tot > 0)) if "n_eval" in b.columns else pd.Series(None, index=b.index)
    out["coverage"] = _num(cov)
    out["reason"] = _col(b, "reason").astype("string")
    out["comparable"] = _col(b, "comparable")
    out["substitute"] = _col(b, "substitute")
    hint = _col(b, "dimension") if spec.name == "locot2v" else pd.Series(None, index=b.index, dtype="object")
    level = _col(b, "level")
    fams = []
    for mid, h, lv in zip(out["metric_id"], hint, level):
        if spec.name == "locot2v" and lv in ("dimension", "overall"):
            fams.append("dimensions and overall")
        else:
            fams.append(family_of(spec, str(mid), h))
    out["family"] = fams
    baseline = pd.Series(False, index=b.index)
    if "ranked" in b.columns:
        baseline |= b["ranked"].map(lambda v: v is False or v == 0 or str(v).lower() == "false")
    baseline |= out["generator"].isin(["random"])
    out["baseline"] = baseline.astype(bool)
    return out.dropna(subset=["generator", "metric_id"]).reset_index(drop=True)


# ----------------------------------------------------------------------------- the benchmark page

@dataclass
class BenchPage:
    name: str
    title: str
    href: str
    about: str
    status: str = "ok"
    status_reason: str = ""
    headline_label: str = ""
    headlines: dict = field(default_factory=dict)
    overview_chart: str = ""
    n_generators: int = 0
    n_metrics: int = 0
    n_values: int = 0
    n_cells: int = 0
    family_charts: list = field(default_factory=list)
    sections: list = field(default_factory=list)
    views: list = field(default_factory=list)
    reasons: list = field(default_factory=list)
    galleries: list = field(default_factory=list)
    models: dict = field(default_factory=dict)
    manifest: dict = field(default_factory=dict)
    protocols: list = field(default_factory=list)
    baselines: set = field(default_factory=set)
    audit_count: int = 0
    tables: list = field(default_factory=list)
    scale_note: str = ""


def _order(gens, baselines) -> list[str]:
    return sorted(set(gens), key=lambda g: (g in baselines, g))


def _scale_class(values) -> tuple[float, float]:
    vals = [float(v) for v in values if not is_none(v)]
    hi = max(vals, default=0.0)
    lo = min(vals, default=0.0)
    if lo < 0:
        return R._scale(vals)
    for top in (1.0, 10.0, 100.0):
        if hi <= top:
            return 0.0, top
    return R._scale(vals)


def _bar_rows(df: pd.DataFrame, label_col: str = "metric_id") -> list[dict]:
    return [{"label": r[label_col], "series": r["generator"], "value": None if is_none(r["value"]) else r["value"],
             "coverage": None if is_none(r["coverage"]) else r["coverage"],
             "note": None if is_none(r["reason"]) else str(r["reason"])[:120]}
            for r in df.to_dict("records")]


def family_charts(spec: PageSpec, main: pd.DataFrame, order: list[str]) -> list[str]:
    """One bar chart per metric family, in the spec's order (split further by scale so a [0,100] metric does not
    flatten [0,1] ones). A family where nothing has a value is one line naming its reasons, not an empty chart."""
    charts = []
    rank = {f: i for i, (f, _) in enumerate(spec.families)}
    fams = sorted(main["family"].unique(), key=lambda f: (rank.get(f, len(rank)), f))
    for fam in fams:
        part = main[main["family"] == fam]
        if part["value"].isna().all():
            reasons = sorted({str(r)[:140] for r in part["reason"].dropna()})[:3]
            charts.append(f'<p class="none family-none"><b>{escape(fam)}</b>: no value ({part["metric_id"].nunique()} '
                          f'metrics){": " + escape("; ".join(reasons)) if reasons else ""}</p>')
            continue
        scales: dict[tuple, list[str]] = {}
        empty = []
        for mid, m in part.groupby("metric_id", sort=True):
            if spec.scale:
                scales.setdefault(spec.scale, []).append(mid)
            elif m["value"].isna().all():
                empty.append(mid)  # drawn as None beside the others, on their scale
            else:
                scales.setdefault(_scale_class(m["value"]), []).append(mid)
        if empty:
            biggest = max(scales, key=lambda k: len(scales[k]))
            scales[biggest] = sorted(scales[biggest] + empty)
        for sc, mids in scales.items():
            sub = part[part["metric_id"].isin(mids)].sort_values("metric_id", kind="stable")
            title = fam if len(scales) == 1 else f"{fam} ({fmt(sc[0], 0)}-{fmt(sc[1], 0)})"
            charts.append(R.bar_chart_svg(_bar_rows(sub), order, title=title, scale=sc, width=620))
    return charts


def chart_or_note(rows: list[dict], order: list[str], title: str, **kw) -> str:
    """A bar chart, or one line saying why nothing has a value (an all-None chart is only noise)."""
    if rows and all(is_none(r.get("value")) for r in rows):
        reasons = sorted({str(r["note"])[:140] for r in rows if r.get("note")})[:3]
        return (f'<p class="none family-none"><b>{escape(title)}</b>: no value'
                f'{": " + escape("; ".join(reasons)) if reasons else ""}</p>')
    return R.bar_chart_svg(rows, order, title=title, **kw)


def _view(spec: PageSpec, part: pd.DataFrame, key: str, label: str, main: bool, order: list[str],
          audit_href: Callable[[str, str], Optional[str]]) -> dict:
    metrics = []
    for mid, m in part.groupby("metric_id", sort=False):
        metrics.append({"metric_id": mid, "family": m["family"].iloc[0]})
    fam_order = {f: i for i, (f, _) in enumerate(spec.families)}
    metrics.sort(key=lambda m: (fam_order.get(m["family"], 99), m["family"], m["metric_id"]))
    cells = {}
    for r in part.to_dict("records"):
        c = {k: (None if is_none(v) else v) for k, v in r.items()}
        sub = c.get("substitute")
        c["substitute"] = (str(sub) if sub not in (True, False) else ("substitute model" if sub else None)) \
            if sub is not None else None
        if c["substitute"] in ("", "False", "false", "0"):
            c["substitute"] = None
        comp = c.get("comparable")
        c["comparable"] = None if comp is None else bool(comp) and str(comp).lower() != "false"
        tip = [f"n_eval {fmt(c.get('n_eval'), 0)}, n_failed {fmt(c.get('n_failed'), 0)}, "
               f"n_skipped {fmt(c.get('n_skipped'), 0)}"]
        if c.get("reason"):
            tip.append(str(c["reason"])[:300])
        c["tooltip"] = "; ".join(tip)
        c["audit"] = audit_href(c["metric_id"], c["generator"])
        cells[(c["metric_id"], c["generator"])] = c
    gens = _order(part["generator"], set(part.loc[part["baseline"], "generator"]))
    return {"key": re.sub(r"[^A-Za-z0-9_-]", "_", key), "label": label, "main": main, "metrics": metrics,
            "generators": [g for g in order if g in gens] + [g for g in gens if g not in order], "cells": cells}


def reason_groups(main: pd.DataFrame, limit: int = 10) -> list[dict]:
    """Leaderboard cells without a value, one line per reason: how many cells, which metrics and generators."""
    none = main[main["value"].isna()]
    out = []
    for reason, part in none.groupby(none["reason"].fillna("no reason recorded"), sort=False):
        mids = sorted(part["metric_id"].unique())
        out.append({"reason": str(reason), "count": len(part), "metrics": mids[:limit],
                    "more_metrics": max(0, len(mids) - limit), "generators": sorted(part["generator"].unique())})
    return sorted(out, key=lambda g: (-g["count"], g["reason"]))


def _headline(spec: PageSpec, main: pd.DataFrame) -> tuple[str, dict]:
    """The first headline metric any generator has a value for; coverage = the generator's share of metrics
    with a value in the main view."""
    cov = main.groupby("generator")["value"].apply(lambda s: float(s.notna().mean()))
    chosen = next((m for m in spec.headline if main.loc[main["metric_id"] == m, "value"].notna().any()),
                  next((m for m in spec.headline if (main["metric_id"] == m).any()), None))
    out = {}
    for g in main["generator"].unique():
        row = main[(main["generator"] == g) & (main["metric_id"] == chosen)] if chosen else main.iloc[0:0]
        r = row.iloc[0] if len(row) else None
        out[g] = {"value": None if r is None or is_none(r["value"]) else float(r["value"]),
                  "reason": None if r is None or is_none(r["reason"]) else str(r["reason"]),
                  "coverage": float(cov.get(g, 0.0)),
                  "baseline": bool(main.loc[main["generator"] == g, "baseline"].any())}
    return chosen or "no headline metric", out


def _artifact_src(store, sha: str, page_dir: Path) -> Optional[str]:
    try:
        path = store.artifact_path(str(sha))
    except ValueError:
        return None
    if not os.path.exists(path):
        return None
    return os.path.relpath(path, page_dir)


def galleries(spec: PageSpec, reader: Reader, page_dir: Path) -> list[dict]:
    """Crops (``crop_id``) and frames (``frame_id`` / ``*_frame_id`` / ``plot_id`` columns that name a stored
    PNG) of the first item per generator, from the benchmark's tables."""
    out = []
    for t in dict.fromkeys([*spec.gallery_tables, *spec.metric_tables]):
        df = reader.table(t)
        if df is None:
            continue
        id_cols = [c for c in df.columns if c == "crop_id" or c == "frame_id" or c.endswith("_frame_id")]
        if not id_cols:
            continue
        item_col = next((c for c in ITEM_COLUMNS if c in df.columns), None)
        gen_col = "generator" if "generator" in df.columns else None
        for c in id_cols:
            d = df[df[c].notna()]
            if d.empty:
                continue
            kind = "crop" if c == "crop_id" else "frame"
            for gen, part in (d.groupby(gen_col) if gen_col else [("all", d)]):
                if item_col:
                    part = part[part[item_col] == sorted(part[item_col].astype(str))[0]]
                seen, images = set(), []
                for r in part.to_dict("records"):
                    if r[c] in seen or len(images) >= GALLERY_MAX:
                        continue
                    seen.add(r[c])
                    src = _artifact_src(reader.store, r[c], page_dir)
                    if src is None:
                        continue
                    bits = [str(r.get(k)) for k in ("shot", "entity_id", "status", "frame_index", "character")
                            if k in r and not is_none(r.get(k))]
                    images.append({"src": src, "caption": " ".join(bits) or str(r[c])[:12]})
                if images:
                    where = f" {item_col} {part[item_col].iloc[0]}" if item_col else ""
                    out.append({"title": f"{kind}s from {t}: {gen}{where}", "kind": kind, "images": images})
        if len(out) >= 8:
            break
    return out[:8]


IMAGE_EXT = (".png", ".jpg", ".jpeg", ".webp")
THUMB_W = 192


def thumbnails(video: str, out_dir: Path, n: int = 6, indices: Optional[list[int]] = None) -> list[tuple[str, int]]:
    """A few evenly spaced frames of ``video`` as small PNGs under ``out_dir/frames`` (named by the file's path,
    size and mtime, so a rebuild reuses them); [(path, frame index)]. Seeks to each frame: the video is never
    decoded whole. A video that cannot be opened gives []."""
    import cv2
    try:
        st = os.stat(video)
    except OSError:
        return []
    import hashlib
    key = hashlib.sha256(f"{os.path.abspath(video)}|{st.st_size}|{st.st_mtime_ns}".encode()).hexdigest()[:20]
    cap = cv2.VideoCapture(str(video))
    try:
        total = int(cap.get(cv2.CAP_PROP_FRAME_COUNT) or 0)
        if total <= 0:
            return []
        idx = indices if indices is not None else sorted({int(round(i * (total - 1) / max(n - 1, 1)))
                                                          for i in range(n)})
        out = []
        (out_dir / "frames").mkdir(parents=True, exist_ok=True)
        for i in idx:
            path = out_dir / "frames" / f"{key}_{i}.png"
            if not path.exists():
                cap.set(cv2.CAP_PROP_POS_FRAMES, i)
                ok, frame = cap.read()
                if not ok or frame is None:
                    continue
                h, w = frame.shape[:2]
                small = cv2.resize(frame, (THUMB_W, max(1, int(h * THUMB_W / w))), interpolation=cv2.INTER_AREA)
                tmp = path.with_name(f"{path.stem}.tmp-{os.getpid()}.png")
                cv2.imwrite(str(tmp), small)
                os.replace(tmp, path)
            out.append((str(path), i))
        return out
    finally:
        cap.release()


def _first_per_generator(df: pd.DataFrame, gen_col: str, item_col: str) -> list[tuple[str, str, pd.DataFrame]]:
    out = []
    for gen, part in df.groupby(gen_col, sort=True):
        first = sorted(part[item_col].astype(str))[0]
        out.append((str(gen), first, part[part[item_col].astype(str) == first]))
    return out


def frame_galleries(spec: PageSpec, reader: Reader, out_dir: Path) -> list[dict]:
    """Frames of the outputs (or, for NarrativeTrack, of the input videos) of the first item per generator."""
    from bench_resources.paths import BenchPaths
    out = []

    def add(title: str, images: list[dict]) -> None:
        if images:
            out.append({"title": title, "kind": "frame", "images": images})

    if spec.name == "entitybench":
        df = reader.table("entitybench_outputs")
        if df is not None and {"generator", "episode_id", "shot", "path"} <= set(df.columns):
            for gen, item, part in _first_per_generator(df.dropna(subset=["path"]), "generator", "episode_id"):
                imgs = []
                for r in part.sort_values("shot").head(12).itertuples():
                    for path, i in thumbnails(r.path, out_dir, indices=[0]):
                        imgs.append({"src": os.path.relpath(path, out_dir), "caption": f"shot {r.shot}"})
                add(f"first frame of each shot: {gen} episode {item}", imgs)
    elif spec.name == "vistorybench":
        df = reader.table("vistorybench_outputs")
        if df is not None and {"generator", "story_id", "shot", "path"} <= set(df.columns):
            for gen, item, part in _first_per_generator(df.dropna(subset=["path"]), "generator", "story_id"):
                imgs = []
                for r in part.sort_values("shot").head(GALLERY_MAX).itertuples():
                    if str(r.path).lower().endswith(IMAGE_EXT) and os.path.exists(r.path):
                        imgs.append({"src": os.path.relpath(r.path, out_dir), "caption": f"shot {r.shot}"})
                    else:
                        for path, _ in thumbnails(r.path, out_dir, indices=[0]):
                            imgs.append({"src": os.path.relpath(path, out_dir), "caption": f"shot {r.shot}"})
                add(f"shot images: {gen} story {item}", imgs)
    elif spec.name in ("mbench", "locot2v"):
        table, col = ("mbench_scores", "case_id") if spec.name == "mbench" else ("locot2v_visual", "item")
        df = reader.table(table, f'SELECT DISTINCT generator, "{col}" AS item FROM "{table}"')
        if df is not None:
            paths = BenchPaths()
            for gen, item, _ in _first_per_generator(df, "generator", "item"):
                video = paths.generator_dir(gen) / f"{item}.mp4"
                imgs = [{"src": os.path.relpath(p, out_dir), "caption": f"frame {i}"}
                        for p, i in thumbnails(str(video), out_dir, n=8)]
                add(f"frames: {gen} {spec.item_label} {item}", imgs)
    elif spec.name == "narrativetrack":
        df = reader.table("narrativetrack_video")
        if df is not None and {"video_id", "path"} <= set(df.columns):
            for r in df.sort_values("video_id").head(2).itertuples():
                imgs = [{"src": os.path.relpath(p, out_dir), "caption": f"frame {i}"}
                        for p, i in thumbnails(str(r.path), out_dir, n=8)]
                add(f"input video {r.video_id}", imgs)
    return out


def _manifest(reader: Reader, spec: PageSpec) -> dict:
    df = reader.table(f"{spec.name}_report")
    if df is None or "manifest_json" not in df.columns:
        return {}
    try:
        return json.loads(df["manifest_json"].dropna().iloc[-1])
    except (ValueError, IndexError):
        return {}


# ----------------------------------------------------------------------------- benchmark-specific sections

def _gap_bins(detail: pd.Series) -> list:
    out = []
    for d in detail:
        try:
            out.append(json.loads(d).get("gap_bin") if isinstance(d, str) else None)
        except ValueError:
            out.append(None)
    return out


def _bin_key(b: str) -> tuple:
    try:
        return (int(str(b).split("-")[0]), str(b))
    except ValueError:
        return (10**6, str(b))


def gap_decay_by_type(reader: Reader) -> pd.DataFrame:
    """Mean similarity and pair count per (signal, entity type, generator, shot-distance bin).

    Uses ``entitybench_gap_decay`` when it carries an entity type column; otherwise bins the pair rows it was
    made from (DINOv2 adjacent-appearance pairs joined to the registry's types, LLM anchor comparisons whose
    metric names the type)."""
    g = reader.table("entitybench_gap_decay")
    type_col = next((c for c in ("entity_type", "type") if g is not None and c in g.columns), None)
    if g is not None and type_col and {"generator", "signal", "gap_bin", "mean"} <= set(g.columns):
        g = g.rename(columns={type_col: "entity_type"})
        if "tier" in g.columns and (g["tier"] == "all").any():
            g = g[g["tier"] == "all"]  # the per-tier rows repeat the pairs of the overall curve
        g["pairs"] = _num(_col(g, "pairs", 0)).fillna(0)
        if "embedder" in g.columns:  # the model behind a cosine belongs in the curve's name
            emb = g["embedder"].fillna("").astype(str)
            g["signal"] = [f"{s} ({e})" if e and e != "judge" else s for s, e in zip(g["signal"], emb)]
        g["entity_type"] = g["entity_type"].fillna("unknown")
        return g[["signal", "entity_type", "generator", "gap_bin", "mean", "pairs"]]
    frames = []
    dino = reader.table("entitybench_presence_consistency",
                        "SELECT generator, item, entity_id, value, detail FROM entitybench_presence_consistency "
                        "WHERE metric_id IN ('gap_decay_dino', 'gap_decay_embedding') AND value IS NOT NULL")
    reg = reader.table("entitybench_entity_registry")
    if dino is not None and reg is not None and {"episode_id", "entity_id", "type"} <= set(reg.columns):
        d = dino.merge(reg[["episode_id", "entity_id", "type"]].rename(columns={"episode_id": "item"}),
                       on=["item", "entity_id"], how="left")
        d["signal"], d["entity_type"] = "embedding_cosine", d["type"].fillna("unknown")
        frames.append(d)
    llm = reader.table("entitybench_llm_consistency",
                       "SELECT generator, item, entity_id, metric_id, value, detail FROM entitybench_llm_consistency "
                       "WHERE level = 'pair' AND metric_id IN ('llm_face_mean_score', 'llm_object_mean_score') "
                       "AND value IS NOT NULL")
    if llm is not None:
        llm["signal"] = "llm_sim"
        llm["entity_type"] = llm["metric_id"].map({"llm_face_mean_score": "character",
                                                   "llm_object_mean_score": "object"})
        frames.append(llm)
    if not frames:
        return pd.DataFrame(columns=["signal", "entity_type", "generator", "gap_bin", "mean", "pairs"])
    df = pd.concat(frames, ignore_index=True)
    df["gap_bin"] = _gap_bins(df["detail"])
    df = df.dropna(subset=["gap_bin"])
    df["value"] = _num(df["value"])
    agg = df.groupby(["signal", "entity_type", "generator", "gap_bin"])["value"].agg(["mean", "count"])
    return agg.reset_index().rename(columns={"count": "pairs"})


def sections_entitybench(reader: Reader, board: pd.DataFrame, order: list[str]) -> list[dict]:
    out = []
    gap = gap_decay_by_type(reader)
    charts = []
    if len(gap):
        bins = sorted(gap["gap_bin"].astype(str).unique(), key=_bin_key)
        for (signal, etype), part in gap.groupby(["signal", "entity_type"]):
            series = {}
            for gen, p in part.groupby("generator"):
                by = {str(b): (m, int(n)) for b, m, n in zip(p["gap_bin"], p["mean"], p["pairs"])}
                series[gen] = [by.get(b, (None, 0)) for b in bins]
            charts.append(R.line_chart_svg(bins, series, order, title=f"{signal}: {etype}",
                                           y_label="shot distance (k_j - k_i)"))
    out.append({"title": "Gap decay per entity type",
                "note": "Similarity of an entity's admitted appearances by shot distance, one line per generator, "
                        "n = pairs per bin (a diagnostic, not one of the 51 metrics).",
                "charts": charts or ['<p class="none">not evaluated: no gap-decay pair in the store</p>']})
    tiers = board[board["slice"] != "all"]
    charts = []
    if len(tiers):
        keys = [m for m in ("cs_face", "cs_object", "intra_face_fidelity", "llm_face_accuracy",
                            "intra_character_presence", "subject_consistency", "temporal_flickering")
                if tiers.loc[tiers["metric_id"] == m, "value"].notna().any()][:6]
        for m in keys:
            part = tiers[tiers["metric_id"] == m]
            charts.append(R.bar_chart_svg(_bar_rows(part, "slice"), order, title=f"{m} per tier",
                                          scale=_scale_class(part["value"]), width=520))
    out.append({"title": "Per-tier breakdown", "note": "The same metric per episode tier (rows), one bar per "
                "generator; the thin line is the coverage within the tier.",
                "charts": charts or ['<p class="none">not evaluated: no per-tier value</p>']})
    return out


def sections_vistorybench(reader: Reader, board: pd.DataFrame, order: list[str], raw: pd.DataFrame) -> list[dict]:
    charts = []
    for split, part in board.groupby("slice"):
        if split == "full":
            continue
        for fam, p in part.groupby("family"):
            charts.append(chart_or_note(_bar_rows(p), order, title=f"{fam} ({split})",
                                        scale=_scale_class(p["value"]), width=520))
    out = [{"title": "Per-split breakdown (Lite)", "note": "The Lite subset's values, per family.",
            "charts": charts or ['<p class="none">not evaluated: no Lite story in the store</p>']}]
    if "mean_rank" in raw.columns:
        r = raw[(_col(raw, "split") == "full")].drop_duplicates("generator")
        rows = [{"label": "mean rank (lower is better)", "series": g, "value": None if is_none(v) else float(v),
                 "coverage": None} for g, v in zip(r["generator"], r["mean_rank"])]
        out.append({"title": "Mean rank over the quality columns",
                    "note": "Baselines shown but not ranked have no rank.",
                    "charts": [R.bar_chart_svg(rows, order, title="mean rank", width=520)]})
    return out


def sections_mbench(reader: Reader, board: pd.DataFrame, order: list[str]) -> list[dict]:
    dims, subs = [], []
    for mode, part in board.groupby("slice"):
        is_dim = part["family"] == "dimension M-Scores"
        d = part[is_dim]
        dims.append(chart_or_note(_bar_rows(d), order, title=f"MBench-{mode}: dimension M-Scores",
                                  scale=(0.0, 100.0), width=520))
        if mode != "A":
            s = part[~is_dim]
            subs.append(chart_or_note(_bar_rows(s), order, title=f"MBench-{mode}: sub-dimensions",
                                      scale=(0.0, 100.0)))
    return [{"title": "Per-dimension M-Scores", "note": "Entity, environment and causal M-Scores per mode.",
             "charts": dims or ['<p class="none">not evaluated</p>']},
            {"title": "MBench-T sub-dimensions", "note": "A T case whose trigger is unknown leaves the coverage "
             "unknown (None), never 0.", "charts": subs or ['<p class="none">not evaluated: no MBench-T row</p>']}]


def sections_locot2v(reader: Reader, board: pd.DataFrame, order: list[str]) -> list[dict]:
    d = board[board["family"] == "dimensions and overall"]
    return [{"title": "Dimensions and overall", "note": "Coverage here = share of sub-dimensions with a value.",
             "charts": [R.bar_chart_svg(_bar_rows(d), order, title="dimensions (%)", scale=(0.0, 100.0))]
             if len(d) else ['<p class="none">not evaluated</p>']}]


def sections_narrativetrack(reader: Reader, board: pd.DataFrame, order: list[str]) -> list[dict]:
    heat, avg = [], []
    for mode, part in board.groupby("slice"):
        cells = part[part["family"] == "dimension x format"]
        for gen, p in cells.groupby("generator"):
            vals = {}
            for mid, v in zip(p["metric_id"], p["value"]):
                _, dim, form = mid.split(".", 2)
                vals[(dim, form)] = None if is_none(v) else float(v)
            rows = [d for d in ("EE", "AC", "OC", "SC", "EA") if any(k[0] == d for k in vals)]
            rows += sorted({k[0] for k in vals} - set(rows))
            cols = [f for f in ("binary", "mc", "ordering") if any(k[1] == f for k in vals)]
            cols += sorted({k[1] for k in vals} - set(cols))
            heat.append(R.heatmap_svg(rows, cols, vals, title=f"{gen} ({mode})", vmax=100.0))
        a = part[part["metric_id"] == "accuracy.avg"]
        avg.append(chart_or_note(_bar_rows(a, "slice"), order, title=f"average accuracy ({mode})",
                                 scale=(0.0, 100.0), width=520))
    return [{"title": "Accuracy by dimension and format", "note": "Rows: dimensions (EE, AC, OC, SC, EA); "
             "columns: formats; grey: no item of that kind. None: no item was answered.",
             "charts": heat or ['<p class="none">not evaluated</p>']},
            {"title": "Average accuracy against the random baseline", "note": "", "charts": avg}]


# ----------------------------------------------------------------------------- audit sources

def audit_rows(spec: PageSpec, reader: Reader) -> Optional[pd.DataFrame]:
    """Every row behind the leaderboard in one long shape (generator, item, level, metric_id, value, reason,
    n_*, crop_id, frame_index, source_sha256, detail), or None when no source table is readable."""
    frames = []
    for t in spec.metric_tables:
        df = reader.table(t)
        if df is None or "metric_id" not in df.columns:
            continue
        item_col = next((c for c in ITEM_COLUMNS if c in df.columns), None)
        d = pd.DataFrame({"generator": _col(df, "generator").astype(object),
                          "item": (df[item_col] if item_col else pd.Series("", index=df.index)).astype(str),
                          "level": _col(df, "level", "item").fillna("item").astype(object),
                          "metric_id": df["metric_id"].astype(object), "value": _num(_col(df, "value"))})
        for c in ("n_eval", "n_failed", "n_skipped", "shot", "frame_index"):
            d[c] = _col(df, c)
        for c in ("entity_id", "reason", "crop_id", "source_sha256", "detail"):
            d[c] = _col(df, c)
        if spec.name == "mbench":  # one row per (case, sub-dimension): the case is the item
            d["level"] = "item"
            if "trigger_reason" in df.columns:
                d["reason"] = d["reason"].where(d["reason"].notna(), df["trigger_reason"])
        frames.append(d)
    if spec.name == "narrativetrack":
        ans = reader.table("narrativetrack_answers")
        if ans is not None:
            frames.append(_narrativetrack_rows(ans))
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True)


def _narrativetrack_rows(ans: pd.DataFrame) -> pd.DataFrame:
    """Answers as audit rows: value = strict correctness (1/0) of an answered question, None otherwise."""
    status = _col(ans, "status").astype("string")
    strict = _col(ans, "strict")
    value = [None if s != "ok" or is_none(v) else float(bool(v)) for s, v in zip(status, strict)]
    detail = []
    for r in ans.to_dict("records"):
        keep = {k: r.get(k) for k in ("question", "qa_id", "dimension", "format", "direction", "track_type",
                                      "distractor", "answer", "expected", "strict", "lenient", "raw")
                if k in r and not is_none(r.get(k))}
        detail.append(json.dumps(keep, default=str, sort_keys=True))
    return pd.DataFrame({
        "generator": _col(ans, "answerer").astype("string"), "item": _col(ans, "video_id").astype("string"),
        "level": "question", "metric_id": "accuracy", "value": value, "n_eval": None, "n_failed": None,
        "n_skipped": None, "shot": None, "frame_index": None, "entity_id": _col(ans, "qa_id"),
        "reason": _col(ans, "reason"), "crop_id": None, "source_sha256": _col(ans, "source_sha256"),
        "detail": detail, "dimension": _col(ans, "dimension"), "format": _col(ans, "format"),
        "direction": _col(ans, "direction"), "track_type": _col(ans, "track_type"),
        "distractor": _col(ans, "distractor")})


class RowIndex:
    """The audit rows split once by (generator, metric_id), so each audit page picks its rows without scanning
    the whole table again."""

    def __init__(self, spec: PageSpec, rows: pd.DataFrame):
        self.spec = spec
        self.by_gen = {g: part for g, part in rows.groupby("generator", sort=False)}
        self.by_cell = {k: part for k, part in rows.groupby(["generator", "metric_id"], sort=False)}
        self.metrics: dict[str, list[str]] = {}
        for g, m in self.by_cell:
            self.metrics.setdefault(g, []).append(m)

    def rows_for(self, metric_id: str, generator: str) -> pd.DataFrame:
        mine = self.by_gen.get(generator)
        if mine is None:
            return pd.DataFrame(columns=["generator", "item", "level", "metric_id", "value"])
        if self.spec.name == "narrativetrack":
            parts = metric_id.split(".")
            if parts[0] != "accuracy" or len(parts) < 2:
                return mine.iloc[0:0]
            if parts[1] == "avg":
                return mine
            if len(parts) == 3 and parts[1] in ("direction", "track_type", "distractor"):
                return mine[mine[parts[1]].fillna("none").astype(str) == parts[2]]
            if len(parts) == 3:
                return mine[(mine["dimension"] == parts[1]) & (mine["format"] == parts[2])]
            return mine.iloc[0:0]
        if self.spec.name == "mbench" and metric_id.startswith("m_score."):
            metric_id = metric_id[len("m_score."):]  # the board names a sub-dimension's M-Score, rows its scores
        keys = [m for m in self.metrics.get(generator, []) if m == metric_id or str(m).startswith(f"{metric_id}.")]
        if not keys:
            return mine.iloc[0:0]
        return pd.concat([self.by_cell[(generator, k)] for k in keys]) if len(keys) > 1 \
            else self.by_cell[(generator, keys[0])]


# ----------------------------------------------------------------------------- building

def _nav() -> list[dict]:
    return [{"name": n, "title": SPECS[n].title, "href": f"{n}.html"} for n in BENCH_ORDER]


def build_benchmark(spec: PageSpec, reader: Reader, out_dir: Path) -> BenchPage:
    page = BenchPage(spec.name, spec.title, f"{spec.name}.html", spec.about, scale_note=spec.scale_note)
    raw = reader.table(spec.leaderboard)
    if raw is None:
        page.status = "none"
        page.status_reason = f"{spec.leaderboard}: {reader.problems.get(spec.leaderboard, 'not readable')}"
        return page
    if not {"metric_id"} <= set(raw.columns) or not ({"generator", "answerer"} & set(raw.columns)):
        page.status = "none"
        page.status_reason = f"{spec.leaderboard} has no generator / metric_id columns: {sorted(raw.columns)}"
        return page
    board = normalise_board(spec, raw)
    page.baselines = set(board.loc[board["baseline"], "generator"])
    order = _order(board["generator"], page.baselines)
    main_key = spec.main_slice if spec.main_slice in set(board["slice"]) else (board["slice"].iloc[0] if len(board)
                                                                                else "all")
    main = board[board["slice"] == main_key]
    page.protocols = sorted({p for p in _col(raw, "protocol").dropna().astype(str) for p in p.split(",") if p})[:4]
    page.manifest = _manifest(reader, spec)
    page.models = page.manifest.get("models", {}) if isinstance(page.manifest.get("models"), dict) else {}
    page.headline_label, page.headlines = _headline(spec, main)
    page.n_generators, page.n_metrics = len(order), main["metric_id"].nunique()
    page.n_cells, page.n_values = len(main), int(main["value"].notna().sum())
    page.overview_chart = R.bar_chart_svg(
        [{"label": g, "series": g, "value": h["value"], "coverage": h["coverage"]}
         for g, h in page.headlines.items()], order, title=f"headline: {page.headline_label}",
        scale=_scale_class([h["value"] for h in page.headlines.values()]), width=420)
    page.family_charts = family_charts(spec, main, order)
    section = {"entitybench": lambda: sections_entitybench(reader, board, order),
               "vistorybench": lambda: sections_vistorybench(reader, board, order, raw),
               "mbench": lambda: sections_mbench(reader, board, order),
               "locot2v": lambda: sections_locot2v(reader, board, order),
               "narrativetrack": lambda: sections_narrativetrack(reader, board, order)}.get(spec.name)
    page.sections = section() if section else []

    # audit pages: one per (metric, generator) of the main view that has rows behind it
    rows = audit_rows(spec, reader)
    audit_dir = out_dir / "audit" / spec.name
    written: set[tuple[str, str]] = set()
    if rows is not None:
        index = RowIndex(spec, rows)
        tiers = None
        if spec.name == "entitybench":
            ep = reader.table("entitybench_episode")
            if ep is not None and {"episode_id", "tier"} <= set(ep.columns):
                tiers = dict(zip(ep["episode_id"].astype(str), ep["tier"]))
        for cell in main.to_dict("records"):
            mid, gen = cell["metric_id"], cell["generator"]
            mine = index.rows_for(mid, gen)
            if mine.empty:
                continue
            items = mine[mine["level"] == "item"].copy()
            extra: tuple[str, ...] = ()
            if tiers is not None:
                items["tier"] = items["item"].astype(str).map(tiers)
                extra = ("tier",)
            AU.render_audit(metric_id=mid, generator=gen, headline=cell, episodes=items,
                            instances=mine[mine["level"] != "item"], artifact_path=reader.store.artifact_path,
                            out_dir=audit_dir, back=f"../../{spec.name}.html", item_label=spec.item_label,
                            css="../../site.css", benchmark=spec.title, extra_columns=extra)
            written.add((mid, gen))
    page.audit_count = len(written)

    def href(mid: str, gen: str) -> Optional[str]:
        return f"audit/{spec.name}/{AU.audit_filename(mid, gen)}" if (mid, gen) in written else None

    slices = list(dict.fromkeys([main_key, *sorted(set(board["slice"]) - {main_key})]))
    for s in slices:
        part = board[board["slice"] == s]
        label = "" if s == "all" and not spec.slice_col else f"{spec.slice_col} {s}"
        page.views.append(_view(spec, part, s, label, s == main_key, order, href))
    page.reasons = reason_groups(main)
    page.galleries = galleries(spec, reader, out_dir)
    try:
        page.galleries += frame_galleries(spec, reader, out_dir)
    except Exception as e:  # noqa: BLE001 - a video that cannot be read loses its thumbnails, not the page
        page.galleries.append({"title": f"frames not shown ({type(e).__name__}: {str(e)[:120]})", "kind": "frame",
                               "images": []})
    page.tables = sorted(t for t in reader.tables if t.startswith(spec.name))
    return page


def build_validity(reader: Reader) -> Optional[dict]:
    if not reader.has("validity"):
        return None
    df = reader.table("validity")
    cols = ["benchmark", "case", "metric_id", "expected_direction", "difference", "effect_size_d", "d_low",
            "d_high", "passed", "reason"]
    if df is None:
        return {"rows": [], "columns": cols, "passed": 0, "total": 0, "chart": ""}
    columns = [c for c in cols if c in df.columns] + [c for c in df.columns if c not in cols]
    rows = []
    for r in df.to_dict("records"):
        rows.append({k: (None if is_none(v) else v) for k, v in r.items()})
    for r in rows:
        if r.get("passed") is not None:
            r["passed"] = bool(r["passed"])
    passed = sum(1 for r in rows if r.get("passed") is True)
    chart = R.interval_chart_svg(
        [{"label": " / ".join(str(r.get(k)) for k in ("benchmark", "case", "metric_id") if r.get(k) is not None),
          "value": r.get("effect_size_d"), "low": r.get("d_low"), "high": r.get("d_high"), "passed": r.get("passed")}
         for r in rows], title="effect size d with its interval (green: passed, red: failed)")
    return {"rows": rows, "columns": columns, "passed": passed, "total": len(rows), "chart": chart}


def default_out_dir(store) -> Path:
    return Path(store.root) / "reports" / "site"


def report_metadata(store, benchmark: str) -> dict:
    """Materialization metadata linking the store's report site: this benchmark's page and the overview, as
    path and file:// URL (the pages ``build_site`` writes: ``<store>/reports/site/<benchmark>.html`` and
    ``index.html``). The site is written by `bench report`, `bench demo` and `bench evaluate`, so a leaderboard
    materialised from the UI says whether the page is there yet. A remote store has no local site: {}."""
    from dagster import MetadataValue
    if benchmark not in SPECS:
        raise ValueError(f"unknown benchmark {benchmark!r}; the site has pages for {', '.join(BENCH_ORDER)}")
    if not getattr(store, "is_local", True):
        return {}
    out = default_out_dir(store).resolve()
    page, index = out / f"{benchmark}.html", out / "index.html"
    return {"report_page": MetadataValue.path(str(page)), "report_url": MetadataValue.url(page.as_uri()),
            "report_index": MetadataValue.path(str(index)), "report_index_url": MetadataValue.url(index.as_uri()),
            "report_status": MetadataValue.text(
                "written" if page.is_file() else "not written when this materialised: `bench report` writes it (demo and "
                "evaluate do at their end)")}


def build_site(store, out_dir: Path | None = None) -> Path:
    """Write the whole site (index.html, <benchmark>.html, audit/<benchmark>/*.html, validity.html, site.css)
    and return the index.html path. Needs a local store (the pages link its artifacts by relative path)."""
    if not getattr(store, "is_local", True):
        raise ValueError(f"the report site is written next to a local store; {store.root} is remote")
    out = Path(out_dir) if out_dir is not None else default_out_dir(store)
    out.mkdir(parents=True, exist_ok=True)
    R.copy_stylesheet(out)
    env = R.environment()
    reader = Reader(store)
    nav = _nav()
    validity = build_validity(reader)
    if validity is not None:
        nav = [*nav, {"name": "validity", "title": "Validity", "href": "validity.html"}]
        R.write_atomic(out / "validity.html", env.get_template("site/validity.html.j2").render(
            title="Validity", root="", nav=nav, here="validity", **validity))
    pages = []
    try:
        _build_pages(reader, out, env, nav, pages)
    finally:
        reader.close()
    generators = sorted({g for p in pages for g in p.headlines})
    index = out / "index.html"
    R.write_atomic(index, env.get_template("site/index.html.j2").render(
        title="Benchmarks overview", root="", nav=nav, here="index", benchmarks=pages, generators=generators,
        validity=validity, store_root=store.root, built=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())))
    return index


def _build_pages(reader: Reader, out: Path, env, nav: list, pages: list) -> None:
    for name in BENCH_ORDER:
        try:
            page = build_benchmark(SPECS[name], reader, out)
        except Exception as e:  # noqa: BLE001 - one benchmark's odd table must not take the other pages down
            page = BenchPage(name, SPECS[name].title, f"{name}.html", SPECS[name].about, status="error",
                             status_reason=f"the page could not be built from the store's tables "
                                           f"({type(e).__name__}: {str(e)[:200]})")
        R.write_atomic(out / page.href, env.get_template("site/benchmark.html.j2").render(
            title=f"{page.title}: leaderboard", root="", nav=nav, here=name, b=page))
        pages.append(page)
