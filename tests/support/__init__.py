"""What test modules share: builders, fake servers and the session-scoped worlds (``tests/support/worlds.py``).
Test modules import from here, never from one another, so a shared builder has one home and a shared world is built
once per session."""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "data"
# Dagster's console logger at WARNING: a run's INFO lines are not what a test reads
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def copy_world(tmp: Path, folders, generators) -> Path:
    """``tmp/data`` holding the embedded data's ``folders`` (paths below data/) and the named generators' folders."""
    data = Path(tmp) / "data"
    for f in folders:
        (shutil.copytree if (DATA / f).is_dir() else shutil.copy)(DATA / f, data / f)
    for g in generators:
        shutil.copytree(DATA / "generators" / g, data / "generators" / g)
    return data


def run_benchmark(name: str, instance, data: Path, store_root, judge=None, generator_assets=None, items=None,
                  **resources_extra):
    """One offline evaluation of benchmark ``name`` over every item and generator under ``data`` (what ``bench
    evaluate`` runs): (RunStats, resources, generator card errors)."""
    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.generators import discover_generators
    from bench_assets.core.runner import evaluate
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths
    b = BENCHMARKS[name]
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    overrides = ({"judge": judge} if judge is not None else {}) | resources_extra
    resources = build_resources(paths=paths, store_root=str(store_root), **overrides)
    gens, errors = discover_generators(paths.generators_dir, name)
    stats = evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions,
                     items=b.item_ids(paths) if items is None else items, generators=gens,
                     item_assets=b.item_assets,
                     generator_assets=b.generator_assets if generator_assets is None else generator_assets,
                     aggregate_assets=b.aggregate_assets, progress=lambda s: None)
    return stats, resources, errors


def cli_env(monkeypatch, tmp_path: Path, data: Path | None = None, **extra) -> None:
    """The environment one in-process ``bench`` command runs under in a test: a store, a Dagster home and weights
    under ``tmp_path``, the judge off, the data root ``data`` (generators under it) or an empty one; ``extra``:
    more variables (name -> value)."""
    data = data if data is not None else tmp_path / "data"
    env = {"BENCH_DATA_ROOT": data, "BENCH_GENERATORS_ROOT": data / "generators",
           "BENCH_STORE_ROOT": tmp_path / "store", "DAGSTER_HOME": tmp_path / "home",
           "BENCH_WEIGHTS_DIR": tmp_path / "weights", "BENCH_JUDGE_MODE": "off", **extra}
    for k, v in env.items():
        monkeypatch.setenv(k, str(v))
