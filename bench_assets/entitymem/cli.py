"""`bench entitymem --episodes ... [--config NAME|PATH.yaml] [--out DIR] [--evaluate]`: EntityMem and its control
over EntityBench episodes (or EntityMem's own probe episodes, ``<data>/entitymem/episodes``), written as two
generator folders; ``--evaluate`` then scores both with EntityBench and prints the paper's comparison (Table 5,
Table 19). Progress counts the shots both arms generate (``core.runner.Progress``: rate and ETA). Imports stay
inside the functions: `bench --help` must not load Dagster definitions."""
from __future__ import annotations

import sys


def add_parser(sub) -> None:
    p = sub.add_parser("entitymem", help="generate with EntityMem (the EntityBench paper's baseline) and its "
                                         "storymem-style control; offline stand-in by default")
    p.add_argument("--episodes", required=True,
                   help="EntityBench episode ids, comma-separated, or 'all' (EntityBench's); EntityMem's probe "
                        "episode entitymem-probe runs every step of the pipeline (not scored)")
    p.add_argument("--config", default="offline-stand-in",
                   help="a built-in configuration (offline-stand-in), <data>/entitymem/configs/NAME.yaml, or a "
                        "YAML path (registered as <data>/entitymem/configs/<its name>.yaml)")
    p.add_argument("--out", default=None, metavar="DIR",
                   help="generators root to write into (default: the generators root, BENCH_GENERATORS_ROOT)")
    p.add_argument("--evaluate", action="store_true",
                   help="then evaluate both folders with EntityBench and print EntityMem vs control")
    p.set_defaults(fn=cmd_entitymem)


def _episodes(spec: str, data_root) -> list[str]:
    """Episode ids: 'all' is EntityBench's episodes; named ids may also be EntityMem's probe episodes."""
    from pathlib import Path

    from bench_assets.entitybench.dataset import discover_episodes
    have = discover_episodes(Path(data_root) / "entitybench" / "episodes")
    if spec.strip() == "all":
        return have
    probes = discover_episodes(Path(data_root) / "entitymem" / "episodes")
    want = [e.strip() for e in spec.split(",") if e.strip()]
    missing = [e for e in want if e not in have and e not in probes]
    if missing:
        known = have + probes
        raise ValueError(f"no EntityBench episode {', '.join(missing)} under {Path(data_root) / 'entitybench'} "
                         f"(have {', '.join(known[:8])}{'...' if len(known) > 8 else ''})")
    return want


def prepare(cfg_name: str, resources: dict, log=print):
    """The configuration, registered under the data root when given as a path, and its backends built once here,
    so a bad file or backend is one error before anything runs (``ConfigError``)."""
    from bench_assets.entitymem.agents import Agents
    from bench_assets.entitymem.configs import ConfigError, load_config, register_config
    from bench_resources.generation import ImageGenerator, Segmenter, VideoBackbone

    cfg = load_config(cfg_name, resources["paths"].data_dir)
    for section, build in (("agents", lambda: Agents.from_config(cfg.agents, resources.get("judge"))),
                           ("image", lambda: ImageGenerator(**cfg.image)),
                           ("segmentation", lambda: Segmenter(**cfg.segmentation)),
                           ("video", lambda: VideoBackbone(**cfg.video))):
        try:
            build()
        except Exception as e:  # noqa: BLE001 - any backend's refusal (unknown backend, bad field) is the file's
            raise ConfigError(f"EntityMem configuration {cfg_name}: {section}: {_one_line(e)}") from None
    # registered only once it is known good: a refused file leaves nothing behind under the data root
    cfg, copied = register_config(cfg_name, resources["paths"].data_dir)
    if copied is not None:
        log(f"configuration {cfg.name}: registered as {copied}")
    return cfg


def _one_line(e: Exception) -> str:
    """A backend's refusal on one line (pydantic's validation errors span several)."""
    from pydantic import ValidationError
    if isinstance(e, ValidationError):
        return "; ".join(f"{'.'.join(str(x) for x in err['loc'])}: {err['msg']} (got {err.get('input')!r})"
                         for err in e.errors())
    return " ".join(str(e).split())


def _shots(data_root, episode_id: str) -> int:
    """Shots both arms generate for an episode (0 when its file does not load: its own step says why)."""
    from bench_assets.entitybench.dataset import load_episode
    from bench_assets.entitymem.configs import episode_file
    try:
        return 2 * len(load_episode(episode_file(data_root, episode_id)).shots)
    except Exception:  # noqa: BLE001 - progress never fails a run
        return 0


def generate(cfg_name: str, episodes: list[str], resources: dict, log=print,
             show_progress: bool | None = None) -> dict:
    """Materialise the EntityMem assets for each (configuration, episode); returns {"config", "failed",
    "recomputed", "reused", "folders"}. Progress on stderr (a bar on a terminal, timestamped lines elsewhere)."""
    from dagster import AssetKey, MultiPartitionKey

    from bench_assets.core.runner import (Progress, error_message, guarded_materialize, home_lock, open_instance,
                                          step_starts)
    from bench_assets.entitybench.wiring import P as ENTITYBENCH
    from bench_assets.entitymem import assets as A

    cfg = prepare(cfg_name, resources, log)
    instance = open_instance()
    import os
    from pathlib import Path
    with home_lock(Path(os.environ["DAGSTER_HOME"])):
        if cfg.name not in instance.get_dynamic_partitions(A.CONFIGS.name):
            instance.add_dynamic_partitions(A.CONFIGS.name, [cfg.name])
        known = set(instance.get_dynamic_partitions(ENTITYBENCH.items.name))
        instance.add_dynamic_partitions(ENTITYBENCH.items.name, [e for e in episodes if e not in known])
    data_root = resources["paths"].data_dir
    units = {ep: _shots(data_root, ep) for ep in episodes}
    kind = "config x episode"
    # the count moves inside an episode too, one equal share per step as each starts (Progress: "a stage that
    # opens no video moves it when the next stage starts"; these steps read no shot files, hence no files listed)
    bar = Progress(sum(units.values()), "entitymem", enabled=show_progress, unit="shot", opened=lambda _n: (0, []))
    bar.plan(kind, sum(units.values()), unit="shot")
    failed, recomputed, reused = [], {}, {}
    try:
        for ep in episodes:
            bar.label(f"{cfg.name} x {ep}", kind, units[ep], root=str(resources["paths"].generators_dir))
            bar.expect(len(A.PARTITIONED))
            key = MultiPartitionKey({"config": cfg.name, "episode": ep})
            with step_starts(instance, bar.stage):
                result = guarded_materialize(A.PARTITIONED, instance=instance, log=bar.write, tick=bar.tick,
                                             selection=[AssetKey(k) for k in A.PARTITIONED_KEYS], partition_key=key,
                                             resources=resources,
                                             run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
            bar.step()
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
    finally:
        bar.close()
    root = resources["paths"].generators_dir
    return {"config": cfg, "failed": failed, "recomputed": recomputed, "reused": reused,
            "folders": {arm: str(root / name) for arm, name in cfg.generator_names().items()}}


def evaluate_and_compare(cfg, episodes: list[str], resources: dict,
                         show_progress: bool | None = None) -> tuple[str, str, list]:
    """EntityBench over both arms' folders (every aggregate), then the comparison asset; (Table 5, Table 19
    markdown, failures). Progress on stderr, counted in the shots scored (a bar on a terminal, lines elsewhere)."""
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
    # progress as `bench evaluate` gives it (shots scored, rate, ETA, stage): the longest part of --evaluate
    stats = evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions, items=episodes,
                     generators=gens, item_assets=b.item_assets, generator_assets=b.generator_assets,
                     aggregate_assets=b.aggregate_assets, show_progress=show_progress, unit=b.unit,
                     units=lambda item: b.units_of(resources["paths"], item))
    guarded_materialize([*b.assets, *A.ASSETS], instance=instance, selection=[AssetKey("entitymem_comparison")],
                        resources=resources,
                        run_config={"loggers": {"console": {"config": {"log_level": "CRITICAL"}}}})
    records, gap = rows.read_scores(resources["store"])
    mine = {g.name for g in gens}
    records = records[records.generator.isin(mine)]
    gap = gap[gap.generator.isin(mine)] if gap is not None else None
    return rows.table5_markdown(rows.table5(records)), rows.table19_markdown(rows.table19(gap, records)), stats.failed


def cmd_entitymem(args) -> int:
    from bench_assets.entitymem.configs import ConfigError, is_probe
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    paths = BenchPaths(generators_root=args.out) if args.out else BenchPaths()
    try:
        episodes = _episodes(args.episodes, paths.data_dir)
        probes = [e for e in episodes if is_probe(paths.data_dir, e)]
        if probes and args.evaluate:
            raise ValueError(f"{', '.join(probes)}: EntityMem's probe episode(s) under {paths.data_dir / 'entitymem'}"
                             f" run every step of the pipeline but are not EntityBench episodes, so they are not "
                             f"scored: drop --evaluate or name EntityBench episodes")
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
    if out["failed"]:   # no folders to score: the failed episodes' shots are missing or stale
        failed_eps = sorted({ep for _, ep, _ in out["failed"]})
        print(f"entitymem {cfg.name}: {len(failed_eps)} of {len(episodes)} episode(s) failed "
              f"({', '.join(failed_eps)}); re-run to resume", file=sys.stderr)
        return 1
    for arm, folder in out["folders"].items():
        print(f"  {arm}: {folder}")
    if probes:
        print("audit pages: " + ", ".join(str(resources["store"]._join("reports", "entitymem", cfg.name,
                                                                        f"{e}.html")) for e in probes))
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
