"""`bench`: demo, ui, evaluate, leaderboard, human-alignment, weights."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from bench_resources.paths import PROJECT_ROOT

def _benchmarks():
    from bench_assets.benchmarks import BENCHMARKS
    return BENCHMARKS


def _plan(benchmark: str, generators_root: str | None = None, generator_path: str | None = None):
    from bench_assets.core.generators import GeneratorError, discover_generators, read_generator
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    b = _benchmarks()[benchmark]
    paths = BenchPaths(generators_root=generators_root)
    if generator_path:
        info = read_generator(generator_path)
        if info.benchmark != benchmark:
            raise GeneratorError(f"generator {info.name!r} is for benchmark {info.benchmark!r}, not {benchmark!r}")
        paths = BenchPaths(generators_root=str(Path(generator_path).resolve().parent))
        gens, errors = [info], []
    else:
        gens, errors = discover_generators(paths.generators_dir, benchmark)
    resources = build_resources(paths=paths)
    return b, resources, b.item_ids(paths), gens, errors


def _board(resources, benchmark: str = "entitybench") -> pd.DataFrame:
    return resources["store"].query(f"SELECT * FROM {_benchmarks()[benchmark].leaderboard}")


def _print_board(board: pd.DataFrame, benchmark: str = "entitybench") -> None:
    head = board.copy()
    for col, val in (_benchmarks()[benchmark].headline or {}).items():
        head = head[head[col] == val]
    head["cell"] = [("None" if pd.isna(v) else f"{v:.3f}") for v in head["value"]]
    table = head.pivot(index="metric_id", columns="generator", values="cell")
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(table.to_string())


def _write_report(resources, board: pd.DataFrame, out: Path) -> Path:
    from bench_assets.entitybench.report import entitybench_manifest, write_entitybench_report
    manifest = entitybench_manifest(resources["models"], resources["judge"])
    return write_entitybench_report(resources["store"], manifest, board, out)


def _run(benchmark: str, generator_path: str | None = None, aggregates: bool = True):
    from dagster import DagsterInstance
    from bench_assets.core.runner import dagster_home, evaluate
    home = dagster_home()
    b, resources, items, gens, errors = _plan(benchmark, generator_path=generator_path)
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"{benchmark}: {len(items)} items x {len(gens)} generators; profile {resources['models'].profile}; "
          f"judge {resources['judge'].mode}; DAGSTER_HOME={home}")
    stats = evaluate(DagsterInstance.get(), assets=b.assets, resources=resources, partitions=b.partitions,
                     items=items, generators=gens, item_assets=b.item_assets, generator_assets=b.generator_assets,
                     aggregate_assets=b.aggregate_assets if aggregates else [b.leaderboard])
    return resources, gens, stats


def cmd_demo(args) -> int:
    names = [args.benchmark] if args.benchmark else list(_benchmarks())
    failed = 0
    for name in names:
        resources, _, stats = _run(name)
        board = _board(resources, name)
        print()
        _print_board(board, name)
        if name == "entitybench":
            print(f"report: {_write_report(resources, board, Path(args.report))}")
        print(f"\n{name}: materialised {len(stats.materialized)} asset partitions, {len(stats.failed)} failed; "
              f"{stats.forwards} model forwards ({stats.forward_s:.1f} s), {stats.judge_calls} judge calls, "
              f"{stats.decodes} video decodes; wall {stats.wall_s:.1f} s\n")
        failed += len(stats.failed)
    print("UI: `bench ui` (or `make ui`) shows this Dagster home")
    return 0 if not failed else 1


def cmd_evaluate(args) -> int:
    if args.benchmark not in _benchmarks():
        print(f"unknown or not yet implemented benchmark {args.benchmark!r}; have {sorted(_benchmarks())}",
              file=sys.stderr)
        return 2
    resources, gens, stats = _run(args.benchmark, generator_path=args.generator, aggregates=False)
    board = _board(resources, args.benchmark)
    _print_board(board[board.generator == gens[0].name], args.benchmark)
    return 0 if not stats.failed else 1


def cmd_human_alignment(args) -> int:
    """Kendall / Spearman / Pearson between a ratings table and the leaderboard's metric values."""
    from bench_assets.vistorybench.assets import human_alignment_table, read_ratings
    from bench_resources.config import build_resources
    board = _board(build_resources(), args.benchmark)
    for col, val in (_benchmarks()[args.benchmark].headline or {}).items():
        board = board[board[col] == val]
    table = human_alignment_table(read_ratings(args.ratings), board[["generator", "metric_id", "value"]])
    if args.metric:
        table = table[table.metric_id.isin(args.metric)]
    if args.json:
        print(table.to_json(orient="records", indent=2))
    else:
        cols = ["dimension", "metric_id", "kendall_tau", "spearman_rho", "pearson_r", "n_methods", "methods", "reason"]
        with pd.option_context("display.width", 220, "display.max_colwidth", 80):
            print(table[cols].round(4).to_string(index=False))
    return 0


def cmd_leaderboard(args) -> int:
    from bench_resources.config import build_resources
    board = _board(build_resources(), args.benchmark)
    if args.json:
        print(board.to_json(orient="records", indent=2))
    else:
        _print_board(board, args.benchmark)
    return 0


def cmd_ui(args) -> int:
    from bench_assets.core.runner import dagster_home
    home = dagster_home()
    cmd = [sys.executable, "-m", "dagster", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"),
           "-h", "127.0.0.1", "-p", str(args.port)]
    print(f"DAGSTER_HOME={home}: {' '.join(cmd)}")
    return subprocess.call(cmd, cwd=PROJECT_ROOT)


def cmd_weights(args) -> int:
    from bench_resources.config import build_resources
    from bench_resources.models import ModelRegistry
    base = build_resources()["models"]
    reg = ModelRegistry(profile=args.profile or base.profile, weights_dir=base.weights_dir, allow_hub=base.allow_hub)
    if args.action == "import":
        st = reg.import_weights(args.slot, args.path)
        print(f"imported {args.path} -> slot {st.slot}: available={st.available} fingerprint={st.fingerprint}")
        return 0
    rows = [{"slot": s.slot, "available": s.available, "checkpoint": s.checkpoint, "source": s.source,
             "fingerprint": (s.fingerprint or "")[:16], "reason": s.reason or ""} for s in reg.statuses()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"profile {reg.profile}, weights dir {reg.weights_dir}")
        print(pd.DataFrame(rows).to_string(index=False))
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["locot2v-rrub"]:  # its own parser (argparse would reject its --help as a leftover argument)
        from bench_assets.locot2v.rrub import main as rrub_main
        return rrub_main(argv[1:])
    p = argparse.ArgumentParser(prog="bench", description="Entity-consistency benchmarks as Dagster assets")
    sub = p.add_subparsers(dest="cmd", required=True)
    demo = sub.add_parser("demo", help="evaluate the embedded benchmarks with the offline profile")
    demo.add_argument("--benchmark", choices=sorted(_benchmarks()), help="one benchmark (default: all)")
    demo.add_argument("--report", default=str(PROJECT_ROOT / "reports" / "entitybench.html"))
    demo.set_defaults(fn=cmd_demo)
    ui = sub.add_parser("ui", help="Dagster webserver + daemon on 127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.set_defaults(fn=cmd_ui)
    ev = sub.add_parser("evaluate", help="evaluate one generator folder on one benchmark")
    ev.add_argument("--benchmark", required=True)
    ev.add_argument("--generator", required=True, help="folder holding generator.yaml and the outputs")
    ev.set_defaults(fn=cmd_evaluate)
    lb = sub.add_parser("leaderboard", help="print a benchmark's leaderboard")
    lb.add_argument("--benchmark", required=True, choices=sorted(_benchmarks()))
    lb.add_argument("--json", action="store_true")
    lb.set_defaults(fn=cmd_leaderboard)
    ha = sub.add_parser("human-alignment", help="correlate human ratings (method,dimension,rating CSV) with metrics")
    ha.add_argument("--benchmark", default="vistorybench", choices=sorted(_benchmarks()))
    ha.add_argument("--ratings", required=True, help="CSV with columns method, dimension, rating")
    ha.add_argument("--metric", action="append", help="only these metric ids (repeatable)")
    ha.add_argument("--json", action="store_true")
    ha.set_defaults(fn=cmd_human_alignment)
    sub.add_parser("locot2v-rrub", help="LoCoT2V: RR-UB (aesthetic upper bound) from an image folder "
                                        "-> data/locot2v/rrub.json")  # listed in --help; handled above
    w = sub.add_parser("weights", help="list model slots or import a checkpoint")
    w.add_argument("action", nargs="?", default="list", choices=("list", "import"))
    w.add_argument("slot", nargs="?")
    w.add_argument("path", nargs="?")
    w.add_argument("--profile", choices=("offline", "paper"))
    w.add_argument("--json", action="store_true")
    w.set_defaults(fn=cmd_weights)
    args = p.parse_args(argv)
    if args.cmd == "weights" and args.action == "import" and not (args.slot and args.path):
        p.error("weights import needs SLOT and PATH")
    return args.fn(args)


if __name__ == "__main__":
    raise SystemExit(main())
