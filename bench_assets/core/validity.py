"""Validity as a measured property: controlled perturbations of real footage, evaluated through the normal assets.

A benchmark registers its cases in ``bench_assets/<benchmark>/validity.py`` with one function,
``build_suite(work_dir) -> Suite``: a dataset built from real footage (package-shipped clips with hand-checked
ground truth, ``core/footage.py``), a ``reference`` generator, one generator folder per perturbation, and per case
the metrics it concerns with the direction they must move. ``run_validity`` evaluates the suite through the same
Dagster assets as ``bench evaluate`` (a throw-away instance and store), reads per-unit values (shots, entities,
pairs, questions) and writes one row per (case, metric):

    expected direction, reference and perturbed means, difference, Cohen's d with a bootstrap interval,
    pass/fail, and the reason where the metric cannot run (never silently skipped).

A metric passes when it moves in its expected direction with |d| >= 1 or |difference| >= the case's stated
absolute margin; an invariance expectation (direction 0) passes when |difference| <= its margin.

The perturbation builders here are pure functions on frame arrays; writing them as videos is ``write_video``.
"""
from __future__ import annotations

import importlib
import math
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, Sequence

import cv2
import numpy as np
import pandas as pd
import yaml
from dagster import Output, asset

VALIDITY_COLUMNS = ["benchmark", "case", "perturbation", "metric_id", "expected_direction", "margin", "n_units",
                    "reference_mean", "perturbed_mean", "difference", "effect_size_d", "d_low", "d_high",
                    "passed", "reason"]
BOOTSTRAP_RESAMPLES = 2000
D_PASS = 1.0


# --- perturbations (pure: frames in, frames out; RGB uint8 [T,H,W,3]) ------------------------------------------

def fit_to(frames: np.ndarray, size: tuple[int, int], n: int) -> np.ndarray:
    """Resize to (W, H) and loop or cut to n frames, so a donor shot can stand in for another."""
    w, h = size
    out = [cv2.resize(f, (w, h), interpolation=cv2.INTER_AREA) if f.shape[1::-1] != (w, h) else f for f in frames]
    reps = [out[i % len(out)] for i in range(n)]
    return np.stack(reps)


def identity_swap(shots: list[np.ndarray], index: int, donor: np.ndarray) -> list[np.ndarray]:
    """Shot ``index`` replaced by another person's footage (same size and length as the shot it replaces)."""
    out = list(shots)
    ref = shots[index]
    out[index] = fit_to(donor, (ref.shape[2], ref.shape[1]), len(ref))
    return out


def duplicate_shot(shots: list[np.ndarray], src: int, dst: int) -> list[np.ndarray]:
    out = list(shots)
    ref = shots[dst]
    out[dst] = fit_to(shots[src], (ref.shape[2], ref.shape[1]), len(ref))
    return out


def freeze(frames: np.ndarray) -> np.ndarray:
    """Every frame is the first: no motion at all."""
    return np.repeat(frames[:1], len(frames), axis=0)


def shuffle(frames: np.ndarray, seed: int = 0) -> np.ndarray:
    """Frames in a random order (the same content, no temporal coherence)."""
    rng = np.random.default_rng(seed)
    return frames[rng.permutation(len(frames))]


def flicker(frames: np.ndarray, amplitude: float = 0.35) -> np.ndarray:
    """Alternate frames brightened and darkened by ``amplitude``: the global brightness jitter flicker metrics see."""
    gains = np.where(np.arange(len(frames)) % 2 == 0, 1.0 + amplitude, 1.0 - amplitude)
    return np.clip(frames.astype(np.float32) * gains[:, None, None, None], 0, 255).astype(np.uint8)


def blur(frames: np.ndarray, sigma: float = 4.0) -> np.ndarray:
    return np.stack([cv2.GaussianBlur(f, (0, 0), sigma) for f in frames])


def compress(frames: np.ndarray, quality: int = 4) -> np.ndarray:
    """Heavy JPEG compression per frame: blocking and ringing, as a starved encoder produces."""
    out = []
    for f in frames:
        ok, buf = cv2.imencode(".jpg", cv2.cvtColor(f, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, quality])
        out.append(cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB))
    return np.stack(out)


def colour_shift(frames: np.ndarray, hue_degrees: float = 90.0, saturation: float = 1.4) -> np.ndarray:
    """Rotate hue and raise saturation: a style / palette change that keeps shapes and identity."""
    out = []
    for f in frames:
        hsv = cv2.cvtColor(f, cv2.COLOR_RGB2HSV).astype(np.float32)
        hsv[..., 0] = (hsv[..., 0] + hue_degrees / 2.0) % 180.0  # OpenCV hue is degrees / 2
        hsv[..., 1] = np.clip(hsv[..., 1] * saturation, 0, 255)
        out.append(cv2.cvtColor(hsv.astype(np.uint8), cv2.COLOR_HSV2RGB))
    return np.stack(out)


PERTURBATIONS: dict[str, Callable[[np.ndarray], np.ndarray]] = {
    "frozen": freeze, "shuffle": shuffle, "flicker": flicker, "blur": blur, "compression": compress,
    "colour_shift": colour_shift,
}


# --- footage in, videos out ---------------------------------------------------------------------------------

def read_segment(path: str | Path, start: int, end: int, size: Optional[tuple[int, int]] = None,
                 step: int = 1) -> np.ndarray:
    """Native frames [start, end) (every ``step``-th, cut at the video's end), RGB, optionally resized to (W, H):
    one pass of the project's frame source (core/media.py), converting only these frames."""
    from bench_assets.core.media import VideoSource

    src = VideoSource(path)
    idx = list(range(start, min(end, src.n_frames), step))
    if not idx:
        raise ValueError(f"{path}: no frame in [{start}, {end})")
    req = src.take(idx, size=size, name="validity segment")
    src.run()
    return req.frames


def write_video(frames: np.ndarray, path: str | Path, fps: float) -> Path:
    """MPEG-4 part 2 in .mp4 (what OpenCV writes everywhere); high bitrate so the writer adds little of its own."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    h, w = frames.shape[1:3]
    vw = cv2.VideoWriter(str(p), cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (w, h))
    vw.set(cv2.VIDEOWRITER_PROP_QUALITY, 100)
    try:
        for f in frames:
            vw.write(cv2.cvtColor(f, cv2.COLOR_RGB2BGR))
    finally:
        vw.release()
    return p


def write_generator_yaml(folder: Path, name: str, benchmark: str, description: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "generator.yaml").write_text(yaml.safe_dump(
        {"name": name, "benchmark": benchmark, "description": description}, sort_keys=False))


# --- the statistics -----------------------------------------------------------------------------------------

def cohens_d(perturbed: Sequence[float], reference: Sequence[float]) -> float:
    """(mean_p - mean_r) / pooled sd. Zero spread with different means is an unbounded effect (+-inf)."""
    p, r = np.asarray(perturbed, float), np.asarray(reference, float)
    diff = p.mean() - r.mean()
    dof = len(p) + len(r) - 2
    if dof > 0:
        pooled = math.sqrt(((len(p) - 1) * p.var(ddof=1 if len(p) > 1 else 0)
                            + (len(r) - 1) * r.var(ddof=1 if len(r) > 1 else 0)) / dof)
    else:
        pooled = 0.0
    if pooled < 1e-12:
        return 0.0 if abs(diff) < 1e-12 else math.copysign(math.inf, diff)
    return float(diff / pooled)


def paired_d(perturbed: Sequence[float], reference: Sequence[float]) -> float:
    """Cohen's d for paired units (d_z): mean(p - r) / sd(p - r). The units of a case are the same shots, entities
    or pairs before and after the perturbation, so the spread that matters is that of their changes, not the
    spread between units (a rabbit's and a talking man's consistency differ for reasons the perturbation does not
    touch: the pooled d counted that against a duplicated shot that raised every unit). Zero spread with a non-zero
    mean change is an unbounded effect (+-inf)."""
    delta = np.asarray(perturbed, float) - np.asarray(reference, float)
    mean = float(delta.mean())
    sd = float(delta.std(ddof=1)) if len(delta) > 1 else 0.0
    if sd < 1e-12:
        return 0.0 if abs(mean) < 1e-12 else math.copysign(math.inf, mean)
    return mean / sd


def bootstrap_d(perturbed: Sequence[float], reference: Sequence[float], paired: bool,
                resamples: int = BOOTSTRAP_RESAMPLES, seed: int = 0, level: float = 0.95) -> tuple[float, float]:
    """Percentile interval of Cohen's d over resampled units (pairs kept together when the units are paired)."""
    p, r = np.asarray(perturbed, float), np.asarray(reference, float)
    rng = np.random.default_rng(seed)
    ds = []
    for _ in range(resamples):
        if paired:
            idx = rng.integers(0, len(p), len(p))
            ds.append(paired_d(p[idx], r[idx]))
        else:
            ds.append(cohens_d(p[rng.integers(0, len(p), len(p))], r[rng.integers(0, len(r), len(r))]))
    ds = np.clip(np.asarray(ds), -1e6, 1e6)  # an infinite resample is a huge one for the percentile
    a = (1 - level) / 2
    return float(np.quantile(ds, a)), float(np.quantile(ds, 1 - a))


@dataclass(frozen=True)
class Expect:
    metric_id: str
    direction: int                 # -1: the perturbation must lower it; +1: raise it; 0: leave it (invariance)
    margin: Optional[float] = None  # absolute difference that passes on its own (or the invariance tolerance)
    units: Optional[str] = None     # regex on the unit key: the expectation concerns only these units


def judge_expectation(exp: Expect, reference: Sequence[float], perturbed: Sequence[float],
                      paired: bool) -> dict:
    """One validity row's numbers and verdict from the unit values of the two generators."""
    r, p = np.asarray(reference, float), np.asarray(perturbed, float)
    diff = float(p.mean() - r.mean())
    d = paired_d(p, r) if paired else cohens_d(p, r)
    lo, hi = bootstrap_d(p, r, paired) if min(len(p), len(r)) > 1 else (d, d)
    if exp.direction == 0:
        tol = exp.margin if exp.margin is not None else 0.0
        passed = abs(diff) <= tol
    else:
        moved = diff * exp.direction > 0
        big = abs(d) >= D_PASS or (exp.margin is not None and abs(diff) >= exp.margin)
        passed = bool(moved and big)
    return {"n_units": int(min(len(r), len(p))), "reference_mean": float(r.mean()), "perturbed_mean": float(p.mean()),
            "difference": diff, "effect_size_d": d, "d_low": lo, "d_high": hi, "passed": bool(passed),
            "reason": None}


# --- suites -------------------------------------------------------------------------------------------------

@dataclass
class Case:
    case_id: str
    perturbation: str
    generator: str                 # the perturbed generator's folder name
    expectations: list[Expect]
    description: str = ""


@dataclass
class Suite:
    benchmark: str
    data_root: Path
    generators_root: Path
    reference: str
    cases: list[Case]
    # store -> DataFrame[generator, unit, metric_id, value, reason]: the per-unit values of every metric
    unit_values: Callable[["object"], pd.DataFrame] = None
    notes: list[str] = field(default_factory=list)


# the row schema every benchmark's per-item tables share (core record rows): finer levels first
UNIT_KEYS = ("item", "shot", "entity_id", "pair")
LEVELS = {"pair": 0, "crop": 0, "appearance": 1, "shot": 2, "event": 2, "character": 3, "entity": 3, "item": 4}


def table_unit_values(store, tables: Sequence[str], unit_keys: Sequence[str] = UNIT_KEYS,
                      levels: Optional[dict[str, int]] = None) -> pd.DataFrame:
    """Per-unit metric values from a benchmark's generator tables: rows with ``metric_id`` and ``value``, a unit
    named by whichever of ``unit_keys`` the table has; where a ``level`` column exists only the finest level present
    for each metric is kept (an item's mean is not one more unit beside its own shots)."""
    frames = []
    for table in tables:
        files = store.table_files(table)
        if not files:
            continue
        df = pd.concat([store.read_table(f) for f in files], ignore_index=True)
        if "metric_id" not in df or "value" not in df or "generator" not in df:
            continue
        if "level" in df:
            df["_lvl"] = df["level"].map(levels or LEVELS).fillna(99)
            df = df[df["_lvl"] == df.groupby(["generator", "metric_id"])["_lvl"].transform("min")]
        keys = [k for k in unit_keys if k in df.columns]
        df = df.assign(unit=["/".join("" if pd.isna(v) else str(v) for v in row)
                             for row in df[keys].itertuples(index=False)] if keys else "all")
        if "reason" not in df:
            df["reason"] = None
        df["value"] = pd.to_numeric(df["value"], errors="coerce")
        frames.append(df[["generator", "unit", "metric_id", "value", "reason"]])
    if not frames:
        return pd.DataFrame(columns=["generator", "unit", "metric_id", "value", "reason"])
    return pd.concat(frames, ignore_index=True)


def validity_rows(suite: Suite, values: pd.DataFrame) -> pd.DataFrame:
    """Pure: the validity table of one evaluated suite from its per-unit values."""
    rows = []
    for case in suite.cases:
        for exp in case.expectations:
            base = {"benchmark": suite.benchmark, "case": case.case_id, "perturbation": case.perturbation,
                    "metric_id": exp.metric_id + (f" [{exp.units}]" if exp.units else ""), "expected_direction": exp.direction, "margin": exp.margin}
            m = values[values["metric_id"] == exp.metric_id]
            if exp.units:
                m = m[m["unit"].astype(str).str.contains(exp.units, regex=True)]
            ref = m[(m["generator"] == suite.reference) & m["value"].notna()]
            per = m[(m["generator"] == case.generator) & m["value"].notna()]
            if ref.empty or per.empty:
                reasons = sorted({str(x) for x in m.loc[m["value"].isna(), "reason"].dropna()}) if "reason" in m else []
                why = ("; ".join(reasons[:3]) if reasons else
                       f"no value for {exp.metric_id} from "
                       + " and ".join(g for g, d in ((suite.reference, ref), (case.generator, per)) if d.empty))
                rows.append({**base, "n_units": 0, "reference_mean": None, "perturbed_mean": None, "difference": None,
                             "effect_size_d": None, "d_low": None, "d_high": None, "passed": None,
                             "reason": f"cannot run: {why}"})
                continue
            joined = ref[["unit", "value"]].merge(per[["unit", "value"]], on="unit", suffixes=("_r", "_p"))
            if len(joined) >= 2:
                out = judge_expectation(exp, joined["value_r"], joined["value_p"], paired=True)
            else:
                out = judge_expectation(exp, ref["value"], per["value"], paired=False)
            rows.append({**base, **out})
    return pd.DataFrame(rows, columns=VALIDITY_COLUMNS)


def load_suite(benchmark: str, work_dir: Path) -> Suite:
    mod = importlib.import_module(f"bench_assets.{benchmark}.validity")
    return mod.build_suite(work_dir)


def registered_benchmarks() -> list[str]:
    from bench_assets.benchmarks import BENCHMARKS
    return [b for b in BENCHMARKS if importlib.util.find_spec(f"bench_assets.{b}.validity") is not None]


def evaluate_suite(suite: Suite, work_dir: Path, progress: Callable[[str], None] = print) -> pd.DataFrame:
    """Run the benchmark's normal generator assets over the suite (a private instance and store) -> validity rows."""
    from dagster import DagsterInstance

    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    b = BENCHMARKS[suite.benchmark]
    paths = BenchPaths(data_root=str(suite.data_root), generators_root=str(suite.generators_root))
    resources = build_resources(store_root=str(work_dir / "store"), paths=paths)
    gens, errors = discover_generators(paths.generators_dir, suite.benchmark)
    for e in errors:
        progress(f"  generator error: {e}")
    instance = DagsterInstance.ephemeral()
    t0 = time.perf_counter()
    evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions, items=b.item_ids(paths),
             generators=gens, item_assets=b.item_assets, generator_assets=b.generator_assets, aggregate_assets=[],
             progress=progress, only_stale=False)
    progress(f"  {suite.benchmark}: evaluated {len(gens)} generators in {time.perf_counter() - t0:.0f} s")
    values = suite.unit_values(resources["store"])
    return validity_rows(suite, values)


def run_validity(benchmarks: Optional[list[str]] = None, work_dir: Optional[Path] = None,
                 progress: Callable[[str], None] = print) -> pd.DataFrame:
    """Build, evaluate and judge every registered suite (or the named ones); a benchmark whose suite cannot be
    built or evaluated gives one row with the reason instead of disappearing."""
    names = benchmarks or registered_benchmarks()
    tables = []
    with tempfile.TemporaryDirectory(prefix="bench-validity-") as tmp:
        root = Path(work_dir or tmp)
        for name in names:
            wd = root / name
            wd.mkdir(parents=True, exist_ok=True)
            progress(f"{name}: building the validity suite from real footage")
            try:
                suite = load_suite(name, wd)
                tables.append(evaluate_suite(suite, wd, progress))
            except ModuleNotFoundError as e:
                tables.append(_failed_row(name, f"no validity cases registered ({e})"))
            except Exception as e:  # the benchmark's row says why; the other benchmarks still run
                tables.append(_failed_row(name, f"{type(e).__name__}: {e}"))
    return pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=VALIDITY_COLUMNS)


def _failed_row(benchmark: str, reason: str) -> pd.DataFrame:
    return pd.DataFrame([{**{c: None for c in VALIDITY_COLUMNS}, "benchmark": benchmark, "case": "*",
                          "reason": f"cannot run: {reason}"}], columns=VALIDITY_COLUMNS)


def format_table(df: pd.DataFrame) -> str:
    def f(v, fmt="{:.3f}"):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        if isinstance(v, float) and (math.isinf(v) or abs(v) >= 1e6):  # 1e6: a bootstrap bound of an unbounded d
            return "+inf" if v > 0 else "-inf"
        return fmt.format(v)

    lines = [f"{'benchmark':14s} {'case':20s} {'metric':34s} {'exp':>3s} {'ref':>8s} {'pert':>8s} {'diff':>8s} "
             f"{'d':>7s} {'d 95% CI':>17s}  verdict"]
    for r in df.to_dict("records"):
        verdict = "PASS" if r["passed"] is True else ("FAIL" if r["passed"] is False else "n/a")
        exp = {-1: "-", 1: "+", 0: "="}.get(r["expected_direction"], "?") if r["expected_direction"] is not None \
            and not (isinstance(r["expected_direction"], float) and math.isnan(r["expected_direction"])) else "?"
        ci = f"[{f(r['d_low'], '{:.2f}')}, {f(r['d_high'], '{:.2f}')}]" if r["d_low"] is not None else "-"
        line = (f"{str(r['benchmark']):14s} {str(r['case']):20s} {str(r['metric_id'] or '*'):34s} {exp:>3s} "
                f"{f(r['reference_mean']):>8s} {f(r['perturbed_mean']):>8s} {f(r['difference']):>8s} "
                f"{f(r['effect_size_d'], '{:.2f}'):>7s} {ci:>17s}  {verdict}")
        if isinstance(r["reason"], str) and r["reason"]:
            line += f"  ({r['reason']})"
        lines.append(line)
    n_pass = int((df["passed"] == True).sum())  # noqa: E712
    n_fail = int((df["passed"] == False).sum())  # noqa: E712
    n_na = int(df["passed"].isna().sum())
    lines.append(f"{n_pass} pass, {n_fail} fail, {n_na} cannot run (reason given)")
    return "\n".join(lines)


def write_table(store, df: pd.DataFrame) -> str:
    """The validity table beside the leaderboards (`SELECT * FROM validity`)."""
    path = store.table_path("validity", None)
    store.write_table(df, path)
    return path


def main_validate(args) -> int:
    """`bench validate [--benchmark NAME] [--keep DIR]`: prints the table, stores it, exits 1 when a metric fails."""
    from bench_resources.config import build_resources

    names = [args.benchmark] if getattr(args, "benchmark", None) else None
    keep = Path(args.keep) if getattr(args, "keep", None) else None
    df = run_validity(names, keep)
    print(format_table(df))
    path = write_table(build_resources()["store"], df)
    print(f"validity table: {path}")
    return 1 if (df["passed"] == False).any() else 0  # noqa: E712


@asset(name="validity", group_name="validity", code_version="1",
       description="Per metric: expected direction, measured difference, Cohen's d with a bootstrap interval and "
                   "pass/fail on controlled perturbations of real footage (bench validate). Never automated: it "
                   "evaluates every registered suite from scratch.")
def validity_table(context) -> Output[pd.DataFrame]:
    df = run_validity(progress=context.log.info)
    return Output(df, metadata={
        "passed": int((df["passed"] == True).sum()),  # noqa: E712
        "failed": int((df["passed"] == False).sum()),  # noqa: E712
        "cannot_run": int(df["passed"].isna().sum()),
        "benchmarks": ", ".join(sorted({str(b) for b in df["benchmark"].dropna()})),
    })
