"""`bench entitymem --episodes ... [--config NAME] [--out DIR] [--evaluate]`: EntityMem and its control over
EntityBench episodes, written as two generator folders; ``--evaluate`` then scores both with EntityBench and
prints the paper's comparison (Table 5, Table 19). Imports stay inside the functions: `bench --help` must not
load Dagster definitions."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    p = sub.add_parser("entitymem", help="generate with EntityMem (the EntityBench paper's baseline) and its "
                                         "storymem-style control; offline stand-in by default")
    p.add_argument("--episodes", required=True, help="EntityBench episode ids, comma-separated, or 'all'")
    p.add_argument("--config", default="offline-stand-in",
                   help="a built-in configuration (offline-stand-in), <data>/entitymem/configs/NAME.yaml, or a "
                        "YAML path")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="generators root to write into (default: the generators root, BENCH_GENERATORS_ROOT)")
    p.add_argument("--evaluate", action="store_true",
                   help="then evaluate both folders with EntityBench and print EntityMem vs control")
    p.set_defaults(fn=cmd_entitymem)


def _episodes(spec: str, root) -> list[str]:
    from bench_assets.entitybench.dataset import discover_episodes
    have = discover_episodes(root)
    if spec.strip() == "all":
        return have
    want = [e.strip() for e in spec.split(",") if e.strip()]
    missing = [e for e in want if e not in have]
    if missing:
        raise ValueError(f"no EntityBench episode {', '.join(missing)} under {root} (have {', '.join(have[:8])}"
                         f"{'...' if len(have) > 8 else ''})")
    return want


def generate(cfg_name: str, episodes: list[str], resources: dict, log=print) -> dict:
    """Materialise the EntityMem assets for each (configuration, episode); returns {"config", "failed",
    "recomputed", "reused", "folders"}."""
    from dagster import AssetKey, MultiPartitionKey

    from bench_assets.core.runner import error_message, guarded_materialize, home_lock, open_instance
    from bench_assets.entitybench.wiring import P as ENTITYBENCH
    from bench_assets.entitymem import assets as A
    from bench_assets.entitymem.configs import load_config

    cfg = load_config(cfg_name, resources["paths"].data_dir)
    instance = open_instance()
    import os
    from pathlib import Path
    with home_lock(Path(os.environ["DAGSTER_HOME"])):
        if cfg.name not in instance.get_dynamic_partitions(A.CONFIGS.name):
            instance.add_dynamic_partitions(A.CONFIGS.name, [cfg.name])
        known = set(instance.get_dynamic_partitions(ENTITYBENCH.items.name))
        instance.add_dynamic_partitions(ENTITYBENCH.items.name, [e for e in episodes if e not in known])
    failed, recomputed, reused = [], {}, {}
    for ep in episodes:
        key = MultiPartitionKey({"config": cfg.name, "episode": ep})
        result = guarded_materialize(A.PARTITIONED, instance=instance, log=log,
                                     selection=[AssetKey(k) for k in A.PARTITIONED_KEYS], partition_key=key,
                                     resources=resources,
                                     run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
        for ev in result.all_events:
            if ev.is_step_failure:
                failed.append((ev.step_key, ep, error_message(ev.step_failure_data.error)))
        for ev in result.get_asset_materialization_events():
            md = ev.materialization.metadata
            for name, into in (("recomputed", recomputed), ("reused", reused)):
                if name in md:
                    for k, v in md[name].value.items():
                        into[k] = into.get(k, 0) + int(v)
        log(f"  {cfg.name} x {ep}: {'ok' if result.success else 'FAILED'}")
    root = resources["paths"].generators_dir
    return {"config": cfg, "failed": failed, "recomputed": recomputed, "reused": reused,
            "folders": {arm: str(root / name) for arm, name in cfg.generator_names().items()}}


def evaluate_and_compare(cfg, episodes: list[str], resources: dict) -> tuple[str, str, list]:
    """EntityBench over both arms' folders (every aggregate), then the comparison asset; (Table 5, Table 19
    markdown, failures)."""
    from dagster import AssetKey

    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.generators import read_generator
    from bench_assets.core.runner import evaluate, guarded_materialize, open_instance
    from bench_assets.entitymem import assets as A
    from bench_assets.entitymem import rows

    b = BENCHMARKS["entitybench"]
    root = resources["paths"].generators_dir
    gens = [read_generator(root / name) for name in cfg.generator_names().values()]
    instance = open_instance()
    stats = evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions, items=episodes,
                     generators=gens, item_assets=b.item_assets, generator_assets=b.generator_assets,
                     aggregate_assets=b.aggregate_assets, show_progress=False)
    guarded_materialize([*b.assets, *A.ASSETS], instance=instance, selection=[AssetKey("entitymem_comparison")],
                        resources=resources,
                        run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
    records, gap = rows.read_scores(resources["store"])
    mine = {g.name for g in gens}
    records = records[records.generator.isin(mine)]
    gap = gap[gap.generator.isin(mine)] if gap is not None else None
    return rows.table5_markdown(rows.table5(records)), rows.table19_markdown(rows.table19(gap)), stats.failed


def cmd_entitymem(args) -> int:
    from bench_assets.entitymem.configs import ConfigError
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    paths = BenchPaths(generators_root=args.out) if args.out else BenchPaths()
    try:
        episodes = _episodes(args.episodes, paths.benchmark_dir("entitybench") / "episodes")
        resources = build_resources(paths=paths)
        out = generate(args.config, episodes, resources)
    except (ConfigError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    cfg = out["config"]
    for step, ep, msg in out["failed"]:
        print(f"FAILED {step} for {cfg.name} x {ep}: {msg}", file=sys.stderr)
    print(f"entitymem {cfg.name}{' (offline stand-in)' if cfg.offline else ''}: {len(episodes)} episode(s); "
          f"steps recomputed {dict(sorted(out['recomputed'].items()))}, reused {dict(sorted(out['reused'].items()))}")
    for arm, folder in out["folders"].items():
        print(f"  {arm}: {folder}")
    if out["failed"]:
        return 1
    if args.evaluate:
        t5, t19, failed = evaluate_and_compare(cfg, episodes, resources)
        print("\nTable 5 (paired effect sizes by category)\n" + t5)
        print("\nTable 19 (character identity by recurrence gap)\n" + t19)
        for step, part, msg in failed:
            print(f"FAILED {step} for {part}: {msg}", file=sys.stderr)
        return 1 if failed else 0
    print(f"score them: bench evaluate --benchmark entitybench --generator {out['folders']['entitymem']} "
          f"(and the control's folder)")
    return 0
