"""`bench`: demo, ui, evaluate, leaderboard, weights."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd

from bench_resources.paths import PROJECT_ROOT

BENCHMARKS = ("entitybench",)


def _entitybench_plan(generators_root: str | None = None, generator_path: str | None = None):
    from bench_assets import definitions as d
    from bench_assets.core.generators import discover_generators, read_generator
    from bench_assets.entitybench.dataset import discover_episodes
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    paths = BenchPaths(generators_root=generators_root)
    if generator_path:
        info = read_generator(generator_path)
        paths = BenchPaths(generators_root=str(Path(generator_path).resolve().parent))
        gens, errors = [info], []
    else:
        gens, errors = discover_generators(paths.generators_dir, "entitybench")
    resources = build_resources(paths=paths)
    items = discover_episodes(paths.benchmark_dir("entitybench") / "episodes")
    return d, resources, items, gens, errors


def _board(resources) -> pd.DataFrame:
    return resources["store"].query("SELECT * FROM entitybench_leaderboard")


def _print_board(board: pd.DataFrame) -> None:
    overall = board[board.tier == "all"].copy()
    overall["cell"] = [("None" if pd.isna(v) else f"{v:.3f}") for v in overall["value"]]
    table = overall.pivot(index="metric_id", columns="generator", values="cell")
    with pd.option_context("display.width", 200, "display.max_rows", 200):
        print(table.to_string())


def _write_report(resources, board: pd.DataFrame, out: Path) -> Path:
    from bench_assets.entitybench.report import entitybench_manifest, write_entitybench_report
    manifest = entitybench_manifest(resources["models"], resources["judge"])
    return write_entitybench_report(resources["store"], manifest, board, out)


def cmd_demo(args) -> int:
    from dagster import DagsterInstance
    from bench_assets.core.runner import dagster_home, evaluate
    home = dagster_home()
    d, resources, items, gens, errors = _entitybench_plan()
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    print(f"EntityBench demo: {len(items)} episodes x {len(gens)} generators; profile "
          f"{resources['models'].profile}; judge {resources['judge'].mode}; DAGSTER_HOME={home}")
    instance = DagsterInstance.get()
    stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH,
                     items=items, generators=gens, item_assets=d.ENTITYBENCH_ITEM_ASSETS,
                     generator_assets=d.ENTITYBENCH_GENERATOR_ASSETS,
                     aggregate_assets=["entitybench_dataset_statistics", "entitybench_leaderboard", "entitybench_gap_decay",
                                       "entitybench_effect_sizes", "entitybench_report"])
    board = _board(resources)
    print()
    _print_board(board)
    report = _write_report(resources, board, Path(args.report))
    print(f"\nmaterialised {len(stats.materialized)} asset partitions, {len(stats.failed)} failed; "
          f"{stats.forwards} model forwards ({stats.forward_s:.1f} s), {stats.judge_calls} judge calls, "
          f"{stats.decodes} video decodes; wall {stats.wall_s:.1f} s")
    print(f"report: {report}")
    print("UI: `bench ui` (or `make ui`) shows this Dagster home")
    return 0 if not stats.failed else 1


def cmd_evaluate(args) -> int:
    from dagster import DagsterInstance
    from bench_assets.core.runner import dagster_home, evaluate
    if args.benchmark not in BENCHMARKS:
        print(f"unknown or not yet implemented benchmark {args.benchmark!r}; have {BENCHMARKS}", file=sys.stderr)
        return 2
    dagster_home()
    d, resources, items, gens, errors = _entitybench_plan(generator_path=args.generator)
    instance = DagsterInstance.get()
    stats = evaluate(instance, assets=d.ALL_ASSETS, resources=resources, partitions=d.ENTITYBENCH, items=items,
                     generators=gens, item_assets=d.ENTITYBENCH_ITEM_ASSETS,
                     generator_assets=d.ENTITYBENCH_GENERATOR_ASSETS, aggregate_assets=["entitybench_leaderboard"])
    board = _board(resources)
    _print_board(board[board.generator == gens[0].name])
    return 0 if not stats.failed else 1


def cmd_leaderboard(args) -> int:
    from bench_resources.config import build_resources
    board = _board(build_resources())
    if args.json:
        print(board.to_json(orient="records", indent=2))
    else:
        _print_board(board)
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
    p = argparse.ArgumentParser(prog="bench", description="Entity-consistency benchmarks as Dagster assets")
    sub = p.add_subparsers(dest="cmd", required=True)
    demo = sub.add_parser("demo", help="evaluate the embedded benchmark with the offline profile")
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
    lb.add_argument("--benchmark", required=True, choices=BENCHMARKS)
    lb.add_argument("--json", action="store_true")
    lb.set_defaults(fn=cmd_leaderboard)
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
