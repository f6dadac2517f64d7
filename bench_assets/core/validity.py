"""Validity as a measured property: controlled perturbations of real footage, evaluated through the normal assets.

A benchmark registers its cases in ``bench_assets/<benchmark>/validity.py`` with one function,
``build_suite(work_dir) -> Suite``: a dataset built from real footage (package-shipped clips with hand-checked
ground truth, ``core/footage.py``), a ``reference`` generator, one generator folder per perturbation, and per case
the metrics it concerns with the direction they must move. ``run_validity`` evaluates the suite through the same
Dagster assets as ``bench evaluate`` (a throw-away instance and store), reads per-unit values (shots, entities,
pairs, questions) and writes one row per (case, metric):

    expected direction, reference and perturbed means, difference, Cohen's d with a bootstrap interval,
    pass/fail, and the reason where the metric cannot run (never silently skipped).

Every expectation names a metric the benchmark declares (its ``MetricSpecs``, ``Benchmark.metrics``): a case
expecting a metric without a spec is refused with an error naming the case and the metric, and each row carries
the spec's ``paper_id`` and ``addition`` flag (a validity verdict on an addition is not one on the paper's metric).
A spec that names a case of the suite (``MetricSpec.validity``) which has no expectation on it gets a row saying so.

A direction expectation with a stated absolute margin passes only when the metric moves in its expected direction
by at least that margin, whatever d says (issue 37: a margin binds; three units each dropping .002 do not pass a .10
row however consistent they are); d (|d| >= 1) decides only an expectation that states no margin. An invariance
expectation (direction 0) passes when |difference| <= its margin. The effect sizes come from core/stats.py and
follow its zero-spread policy: d is None when nothing varies. Where d is None a stated margin still judges the row;
without one, units that all moved by exactly the same amount (zero spread, non-zero difference) pass when the move
is in the expected direction (there is no noise for the move to be lost in), and with fewer than two units a side
the row cannot judge. d and its interval are reported on every row either way.
An expectation may document a blind spot of the metric's own definition (``Expect.limitation``, with the evidence):
the row is computed as any other and a miss reads LIMIT, counted apart from passes and failures (``verdict``), so
what a paper's metric cannot see stays in the table instead of being dropped from it.

Core knows no benchmark: the callers (bench_assets/cli.py, definitions.py) pass the benchmark table and each
benchmark's suite builder (``build_suite`` of ``bench_assets/<benchmark>/validity.py``).

The perturbation builders here are pure functions on frame arrays; writing them as videos is ``write_video``.

Held out (issue 23). Every case names the footage sources it reads (``Case.sources``); ``evaluate_suite`` refuses a
case naming a source that is not registered as ``validation`` (core/footage.py) and ``run_validity`` builds every
suite with the validation split in force, so reading a calibration clip fails even where a case forgot to name it.
Cases are frozen: ``validity_cases.json`` beside this file holds each case's version and the fingerprint of what it
runs and expects (``case_fingerprint``); a case whose fingerprint differs from its frozen one is not run (its row
says so) until ``scripts/freeze_validity_cases.py --reason ...`` records a new version, in a commit of its own. The
table carries each row's ``case_version``. A suite may carry the held-out error rates of the thresholds its
benchmark fitted on calibration sources (``Suite.thresholds``); ``bench validate`` prints them under the table.
"""
from __future__ import annotations

import hashlib
import json
import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional, Sequence

import cv2
import numpy as np
import pandas as pd
import yaml
from dagster import Output, asset

from bench_assets.core import stats
from bench_assets.core.metric_spec import MetricSpecs

VALIDITY_COLUMNS = ["benchmark", "case", "case_version", "perturbation", "metric_id", "paper_id", "addition",
                    "expected_direction",
                    "margin", "n_units", "reference_mean", "perturbed_mean", "difference", "effect_size_d", "d_low",
                    "d_high", "passed", "limitation", "reason"]
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


@dataclass(frozen=True)
class Expect:
    metric_id: str
    direction: int                 # -1: the perturbation must lower it; +1: raise it; 0: leave it (invariance)
    margin: Optional[float] = None  # absolute difference a pass needs (binding), or the invariance tolerance
    units: Optional[str] = None     # regex on the unit key: the expectation concerns only these units
    # a blind spot of the metric's own definition, shown by evidence (the text says which): the row is still
    # computed and printed, and a miss reads LIMIT, never PASS, counted apart from the failures
    limitation: Optional[str] = None


def judge_expectation(exp: Expect, reference: Sequence[float], perturbed: Sequence[float],
                      paired: bool) -> dict:
    """One validity row's numbers and verdict from the unit values of the two generators (module docstring: the
    verdict, and what it reads when d is undefined)."""
    r, p = np.asarray(reference, float), np.asarray(perturbed, float)
    diff = float(p.mean() - r.mean())
    d = stats.paired_dz(p, r) if paired else stats.cohens_d(p, r)
    lo, hi = stats.bootstrap_interval(p, r, paired)
    note = stats.undefined_reason(p, r, paired) if d is None else None
    passed: Optional[bool]
    if exp.direction == 0:
        tol = exp.margin if exp.margin is not None else 0.0
        passed = abs(diff) <= tol
    else:
        moved = diff * exp.direction > 0
        if exp.margin is not None:
            # a stated margin binds: a consistent but negligible move (large d) is not the move the case asked for
            passed = moved and abs(diff) >= exp.margin
            if d is None:
                note += "; judged on the margin alone"
            elif moved and not passed and abs(d) >= D_PASS:
                note = (f"margin not met: |difference| {abs(diff):.4g} < {exp.margin:g} "
                        f"(|d| >= {D_PASS:g} does not pass a row that states a margin)")
        elif d is not None:
            passed = moved and abs(d) >= D_PASS
        elif stats.zero_spread(p, r, paired):
            passed = moved        # every unit moved by exactly ``diff``: nothing to beat but its sign
            note += "; judged on the difference's direction"
        else:
            passed = None
            note = f"cannot judge: {note} and the expectation states no margin"
    return {"n_units": int(min(len(r), len(p))), "reference_mean": float(r.mean()), "perturbed_mean": float(p.mean()),
            "difference": diff, "effect_size_d": d, "d_low": lo, "d_high": hi,
            "passed": None if passed is None else bool(passed), "limitation": exp.limitation, "reason": note}


# --- suites -------------------------------------------------------------------------------------------------

@dataclass
class Case:
    case_id: str
    perturbation: str
    generator: str                 # the perturbed generator's folder name
    expectations: list[Expect]
    description: str = ""
    sources: tuple = ()            # the footage (core/footage.py) it reads: every one must be a validation source
    build: int = 1                 # bumped when how the case's videos / labels are made changes (part of the freeze)


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
    # per threshold fitted on calibration sources: {"threshold", "value", "fitted_on", "held_out_on",
    # "false_merge_rate", "false_split_rate", "n_same", "n_different", ...} (printed by bench validate)
    thresholds: list[dict] = field(default_factory=list)


# --- the split and the frozen cases ---------------------------------------------------------------------------

LOCK_FILE = Path(__file__).with_name("validity_cases.json")


class CaseNotFrozen(ValueError):
    """A case changed (or is new) since its expectations were frozen."""


def case_fingerprint(case: Case) -> str:
    """What a case runs and expects, hashed: its id, perturbation, generator, sources and every expectation (metric,
    direction, margin, units). The description is prose and not part of it."""
    body = {"case": case.case_id, "perturbation": case.perturbation, "generator": case.generator,
            "sources": sorted(case.sources),
            "expect": [[e.metric_id, e.direction, e.margin, e.units] + ([e.limitation] if e.limitation else [])
                       for e in case.expectations]}
    if case.build != 1:   # (absent at 1, so fingerprints frozen before the field existed stay valid)
        body["build"] = case.build
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:16]


def load_lock(path: Path = LOCK_FILE) -> dict:
    return json.loads(Path(path).read_text()) if Path(path).is_file() else {}


def frozen_versions(benchmark: str, cases: Sequence[Case], lock: Optional[dict] = None) -> dict[str, object]:
    """case id -> its frozen version, or a ``CaseNotFrozen`` naming what differs (the case is then not run)."""
    lock = load_lock() if lock is None else lock
    out = {}
    for c in cases:
        key = f"{benchmark}/{c.case_id}"
        fp = case_fingerprint(c)
        entry = lock.get(key)
        if entry is None:
            out[c.case_id] = CaseNotFrozen(f"case {key} is not frozen: run scripts/freeze_validity_cases.py "
                                           f"--reason '...' and commit the lock on its own")
        elif entry["fingerprint"] != fp:
            out[c.case_id] = CaseNotFrozen(
                f"case {key} differs from its frozen version {entry['version']} (fingerprint {fp} != "
                f"{entry['fingerprint']}): a change to a case or an expectation is frozen in a commit of its own "
                f"(scripts/freeze_validity_cases.py --reason '...') before it is run")
        else:
            out[c.case_id] = int(entry["version"])
    return out


def check_split(suite: Suite) -> None:
    """Raise ``footage.SplitViolation`` for a case that names no source or a source that is not a validation one."""
    from bench_assets.core import footage
    for c in suite.cases:
        if not c.sources:
            raise footage.SplitViolation(f"{suite.benchmark} validity case {c.case_id!r} names no source: every case "
                                         f"lists the footage it reads (Case.sources)")
        footage.require_split(c.sources, footage.VALIDATION, f"{suite.benchmark} validity case {c.case_id!r}")


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


class UndeclaredMetric(ValueError):
    """A validity case expects a metric its benchmark does not declare (no MetricSpec)."""


def check_expectations(suite: Suite, specs: MetricSpecs) -> None:
    """Raise ``UndeclaredMetric`` naming every (case, metric) whose metric has no spec: a verdict on an id nobody
    declared could not say whether it concerns the paper's metric or an addition."""
    missing = list(dict.fromkeys((case.case_id, exp.metric_id) for case in suite.cases for exp in case.expectations
                                 if specs is None or specs.for_unit(exp.metric_id) is None))
    if missing:
        listed = "; ".join(f"case {c!r} expects metric {m!r}" for c, m in missing)
        raise UndeclaredMetric(f"{suite.benchmark} validity: no MetricSpec for what these cases expect: {listed} "
                               f"(declare the metric in bench_assets/{suite.benchmark}/metric_specs.py or drop the "
                               f"expectation)")


def validity_rows(suite: Suite, values: pd.DataFrame, specs: MetricSpecs,
                  versions: Optional[dict] = None) -> pd.DataFrame:
    """Pure: the validity table of one evaluated suite from its per-unit values; ``specs``: the benchmark's metric
    specs (an expectation on an undeclared metric is refused, ``check_expectations``); ``versions``: case id -> frozen
    version or ``CaseNotFrozen`` (``frozen_versions``; None: versions not checked, as for a table built in a test)."""
    check_expectations(suite, specs)
    versions = versions or {}
    rows = []
    for case in suite.cases:
        version = versions.get(case.case_id)
        for exp in case.expectations:
            spec = specs.for_unit(exp.metric_id)
            base = {"benchmark": suite.benchmark, "case": case.case_id,
                    "case_version": version if isinstance(version, int) else None,
                    "perturbation": case.perturbation,
                    "metric_id": exp.metric_id + (f" [{exp.units}]" if exp.units else ""),
                    "paper_id": spec.paper_id, "addition": spec.addition,
                    "expected_direction": exp.direction, "margin": exp.margin, "limitation": exp.limitation}
            if isinstance(version, CaseNotFrozen):   # not run: its expectations were not frozen before the run
                rows.append({**base, "n_units": 0, "reference_mean": None, "perturbed_mean": None, "difference": None,
                             "effect_size_d": None, "d_low": None, "d_high": None, "passed": None,
                             "reason": f"cannot run: {version}"})
                continue
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
                # too few pairs for a paired d: unpaired, but over the units both generators have where there are
                # any (a perturbation of one sample is compared with that sample, not with every reference sample)
                shared = ref[ref["unit"].isin(per["unit"])]
                out = judge_expectation(exp, (shared if len(shared) else ref)["value"], per["value"], paired=False)
            rows.append({**base, **out})
    # a spec that names a case of this suite as its validity check, where the case has no expectation on it: a
    # row says so (the declared check never silently disappears). Cases not built into this suite are not asked.
    present = {case.case_id: case for case in suite.cases}
    for spec in specs or ():
        for case_id in spec.validity:
            case = present.get(case_id)
            if case is None or any(spec.matches_unit(exp.metric_id) for exp in case.expectations):
                continue
            rows.append({**{c: None for c in VALIDITY_COLUMNS}, "benchmark": suite.benchmark, "case": case_id,
                         "perturbation": case.perturbation, "metric_id": spec.id, "paper_id": spec.paper_id,
                         "addition": spec.addition, "n_units": 0,
                         "reason": f"cannot run: the MetricSpec of {spec.id} names validity case {case_id!r}, "
                                   f"which has no expectation on it"})
    return pd.DataFrame(rows, columns=VALIDITY_COLUMNS)


SuiteBuilder = Callable[[Path], Suite]   # work_dir -> the benchmark's suite (its validity.py ``build_suite``)


def evaluate_suite(suite: Suite, benchmark: Any, work_dir: Path,
                   progress: Callable[[str], None] = print) -> pd.DataFrame:
    """Run the benchmark's normal generator assets over the suite (a private instance and store) -> validity rows.
    ``benchmark``: the suite's entry of the benchmark table (``Benchmark``: assets, partitions, item ids, asset
    names, ``metrics``), passed by the caller. The expectations are checked against its specs before any work."""
    from dagster import DagsterInstance

    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    b = benchmark
    check_expectations(suite, b.metrics)
    check_split(suite)
    versions = frozen_versions(suite.benchmark, suite.cases)
    paths = BenchPaths(data_root=str(suite.data_root), generators_root=str(suite.generators_root))
    resources = build_resources(store_root=str(work_dir / "store"), paths=paths)
    gens, errors = discover_generators(paths.generators_dir, suite.benchmark)
    for e in errors:
        progress(f"  generator error: {e}")
    instance = DagsterInstance.ephemeral()
    t0 = time.perf_counter()
    evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions, items=b.item_ids(paths),
             generators=gens, item_assets=b.item_assets, generator_assets=b.generator_assets, aggregate_assets=[],
             progress=progress, only_stale=False, unit=getattr(b, "unit", ""),
             units=(lambda item: b.units_of(paths, item)) if getattr(b, "units_of", None) else None)
    progress(f"  {suite.benchmark}: evaluated {len(gens)} generators in {time.perf_counter() - t0:.0f} s")
    values = suite.unit_values(resources["store"])
    return validity_rows(suite, values, b.metrics, versions)


def run_validity(benchmarks: Mapping[str, Any], suites: Mapping[str, SuiteBuilder],
                 names: Optional[list[str]] = None, work_dir: Optional[Path] = None,
                 progress: Callable[[str], None] = print) -> pd.DataFrame:
    """Build, evaluate and judge every suite in ``suites`` (or the named benchmarks'); ``benchmarks``: the
    benchmark table. A benchmark whose suite is missing, cannot be built, expects an undeclared metric or cannot be
    evaluated gives one row with the reason instead of disappearing."""
    from bench_assets.core import footage

    names = names or list(suites)
    tables, thresholds = [], []
    with tempfile.TemporaryDirectory(prefix="bench-validity-") as tmp, footage.use_split(footage.VALIDATION):
        root = Path(work_dir or tmp)
        for name in names:
            if name not in suites or name not in benchmarks:
                tables.append(_failed_row(name, "no validity cases registered" if name in benchmarks
                                          else "unknown benchmark"))
                continue
            wd = root / name
            wd.mkdir(parents=True, exist_ok=True)
            progress(f"{name}: building the validity suite from real footage")
            try:
                suite = suites[name](wd)
                thresholds += [{"benchmark": name, **t} for t in suite.thresholds]
                tables.append(evaluate_suite(suite, benchmarks[name], wd, progress))
            except Exception as e:  # the benchmark's row says why; the other benchmarks still run
                tables.append(_failed_row(name, f"{type(e).__name__}: {e}"))
    out = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=VALIDITY_COLUMNS)
    out.attrs["thresholds"] = thresholds
    return out


def format_thresholds(thresholds: Sequence[dict]) -> str:
    """Each fitted threshold with what it was fitted on and its error rates on held-out (validation) pairs."""
    def f(v):
        return "-" if v is None else f"{v:.3f}" if isinstance(v, float) else str(v)
    lines = [f"{'benchmark':14s} {'threshold':34s} {'value':>7s} {'false merge':>12s} {'false split':>12s} "
             f"{'same':>5s} {'diff':>6s}  fitted on -> held out on"]
    for t in thresholds:
        lines.append(f"{t['benchmark']:14s} {t['threshold']:34s} {f(t.get('value')):>7s} "
                     f"{f(t.get('false_merge_rate')):>12s} {f(t.get('false_split_rate')):>12s} "
                     f"{f(t.get('n_same')):>5s} {f(t.get('n_different')):>6s}  "
                     f"{len(t.get('fitted_on') or [])} calibration sources -> "
                     f"{', '.join(t.get('held_out_on') or []) or '-'}"
                     + (f"  ({t['note']})" if t.get("note") else ""))
    return "\n".join(lines)


def _failed_row(benchmark: str, reason: str) -> pd.DataFrame:
    return pd.DataFrame([{**{c: None for c in VALIDITY_COLUMNS}, "benchmark": benchmark, "case": "*",
                          "reason": f"cannot run: {reason}"}], columns=VALIDITY_COLUMNS)


def verdict(row: Mapping) -> str:
    """PASS, FAIL, LIMIT (a miss the expectation documents as a blind spot of the metric's definition) or n/a."""
    passed, lim = row.get("passed"), row.get("limitation")
    if passed is True or passed is np.True_:
        return "PASS"
    if passed is False or passed is np.False_:
        return "LIMIT" if isinstance(lim, str) and lim else "FAIL"
    return "n/a"


def verdict_counts(df: pd.DataFrame) -> dict[str, int]:
    """How many rows of each verdict (a LIMIT is neither a pass nor a failure)."""
    got = [verdict(r) for r in df.to_dict("records")]
    return {k: got.count(k) for k in ("PASS", "FAIL", "LIMIT", "n/a")}


def format_table(df: pd.DataFrame) -> str:
    """The table as text; an undefined d or interval bound (core/stats.py: zero spread, too few units) is "-"."""
    def f(v, fmt="{:.3f}"):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "-"
        return fmt.format(v)

    lines = [f"{'benchmark':14s} {'case':20s} {'metric':34s} {'exp':>3s} {'ref':>8s} {'pert':>8s} {'diff':>8s} "
             f"{'d':>7s} {'d 95% CI':>17s}  verdict"]
    for r in df.to_dict("records"):
        v = verdict(r)
        exp = {-1: "-", 1: "+", 0: "="}.get(r["expected_direction"], "?") if r["expected_direction"] is not None \
            and not (isinstance(r["expected_direction"], float) and math.isnan(r["expected_direction"])) else "?"
        ci = (f"[{f(r['d_low'], '{:.2f}')}, {f(r['d_high'], '{:.2f}')}]"
              if f(r["d_low"]) != "-" or f(r["d_high"]) != "-" else "-")
        cv = r.get("case_version")
        case = str(r["case"]) + (f"@v{int(cv)}" if cv is not None and not (isinstance(cv, float) and math.isnan(cv))
                                 else "")
        line = (f"{str(r['benchmark']):14s} {case:20s} {str(r['metric_id'] or '*'):34s} {exp:>3s} "
                f"{f(r['reference_mean']):>8s} {f(r['perturbed_mean']):>8s} {f(r['difference']):>8s} "
                f"{f(r['effect_size_d'], '{:.2f}'):>7s} {ci:>17s}  {v}")
        if isinstance(r["reason"], str) and r["reason"]:
            line += f"  ({r['reason']})"
        if v == "LIMIT":
            line += f"  (known limitation of the definition: {r['limitation']})"
        lines.append(line)
    n = verdict_counts(df)
    lim = f"{n['LIMIT']} known limitation of a metric's definition, " if n["LIMIT"] else ""
    lines.append(f"{n['PASS']} pass, {n['FAIL']} fail, {lim}{n['n/a']} cannot run or cannot judge (reason given)")
    return "\n".join(lines)


def write_table(store, df: pd.DataFrame) -> str:
    """The validity table beside the leaderboards (`SELECT * FROM validity`)."""
    path = store.table_path("validity", None)
    store.write_table(df, path)
    return path


def main_validate(args, benchmarks: Mapping[str, Any], suites: Mapping[str, SuiteBuilder]) -> int:
    """`bench validate [--benchmark NAME] [--keep DIR]`: prints the table, stores it, exits 1 when a metric fails.
    ``benchmarks`` / ``suites``: the benchmark table and the suite builders (the CLI passes them)."""
    from bench_resources.config import build_resources

    names = [args.benchmark] if getattr(args, "benchmark", None) else None
    keep = Path(args.keep) if getattr(args, "keep", None) else None
    df = run_validity(benchmarks, suites, names, keep)
    print(format_table(df))
    if df.attrs.get("thresholds"):
        print("\nthresholds fitted on calibration sources, error rates on validation sources (held out; a "
              "[drawn cal] row: in sample on drawn calibration faces the threshold was not fitted on):")
        print(format_thresholds(df.attrs["thresholds"]))
    path = write_table(build_resources()["store"], df)
    print(f"validity table: {path}")
    return 1 if verdict_counts(df)["FAIL"] else 0


def validity_asset(benchmarks: Mapping[str, Any], suites: Callable[[], Mapping[str, SuiteBuilder]]):
    """The ``validity`` asset over the given benchmark table and suite builders (definitions.py builds it)."""

    @asset(name="validity", group_name="validity", code_version="3",
           description="Per metric: expected direction, measured difference, Cohen's d with a bootstrap interval "
                       "and pass/fail on controlled perturbations of real footage (bench validate), with the "
                       "metric's paper id / addition flag from its spec. Never automated: it evaluates every "
                       "registered suite from scratch.")
    def validity_table(context) -> Output[pd.DataFrame]:
        df = run_validity(benchmarks, suites(), progress=context.log.info)
        n = verdict_counts(df)
        return Output(df, metadata={
            "passed": n["PASS"], "failed": n["FAIL"], "known_limitations": n["LIMIT"], "cannot_run": n["n/a"],
            "benchmarks": ", ".join(sorted({str(b) for b in df["benchmark"].dropna()})),
        })

    return validity_table
