"""`bench`: demo, ui, evaluate, import, import-results, leaderboard, metrics, report, validate, human-alignment,
weights.

User-facing problems (unknown benchmark, missing data root, a generator matching no item, a bad generator.yaml)
are one `error:` line and exit status 2; a step failure is one line naming the step, the item and the message.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pandas, dagster and the definitions load only when a command runs: `--help` and argument
    import pandas as pd  # errors stay well under a second

PROJECT_ROOT = Path(__file__).resolve().parents[1]
# the benchmarks' names without importing their definitions (tests/test_cli.py checks them against BENCHMARKS)
BENCHMARK_NAMES = ("entitybench", "locot2v", "mbench", "narrativetrack", "vistorybench")


# The generator-card keys each benchmark's code reads (a misspelt one refused, another unknown one a warning); one
# table for the CLI, the sensors and the evaluate jobs
from bench_assets.card_keys import CARD_KEYS  # noqa: E402


# A benchmark whose cards carry what its code needs beyond the keys (an answerer's model): "module:function" of a
# check (GeneratorInfo -> the error line, or None), run when the card is read, before any work
CARD_CHECKS = {"narrativetrack": "bench_assets.narrativetrack.answering:card_problem"}


def card_checked(benchmark: str, gens: list, errors: list[str], single: bool) -> list:
    """``gens`` whose card its benchmark can use; each other one is an error (appended to ``errors``; raised
    when it is the one generator asked for)."""
    spec = CARD_CHECKS.get(benchmark)
    if spec is None:
        return gens
    import importlib
    from bench_assets.core.generators import GeneratorError
    module, fn = spec.split(":")
    check = getattr(importlib.import_module(module), fn)
    ok = []
    for g in gens:
        why = check(g)
        if why is None:
            ok.append(g)
        elif single:
            raise GeneratorError(why)
        else:
            errors.append(why)
    return ok


class CLIError(Exception):
    """A user-facing problem: printed as one line, exit status 2."""


def _benchmarks():
    from bench_assets.benchmarks import BENCHMARKS
    return BENCHMARKS


def _benchmark(name: str):
    b = _benchmarks().get(name)
    if b is None:
        raise CLIError(f"unknown benchmark {name!r}; have {', '.join(sorted(_benchmarks()))}")
    return b


def _plan(benchmark: str, generators_root: str | None = None, generator_path: str | None = None):
    from bench_assets.core.generators import GeneratorError, discover_generators, read_generator
    from bench_resources.config import build_resources
    from bench_resources.paths import BenchPaths

    b = _benchmark(benchmark)
    paths = BenchPaths(generators_root=generators_root)
    if generator_path:  # the card first: a generator for another benchmark is the more specific error
        info = read_generator(generator_path, CARD_KEYS)
        if info.benchmark != benchmark:
            raise GeneratorError(f"generator {info.name!r} is for benchmark {info.benchmark!r}, not {benchmark!r}")
    bdir = paths.benchmark_dir(benchmark)
    if not paths.data_dir.is_dir():
        raise CLIError(f"data root {paths.data_dir} does not exist (set BENCH_DATA_ROOT to the folder holding "
                       f"{benchmark}/)")
    if not bdir.is_dir():
        raise CLIError(f"data root {paths.data_dir} has no {benchmark}/ folder (set BENCH_DATA_ROOT)")
    if generator_path:
        paths = BenchPaths(generators_root=str(Path(generator_path).resolve().parent))
        gens, errors = [info], []
    else:
        gens, errors = discover_generators(paths.generators_dir, benchmark, CARD_KEYS)
    gens = card_checked(benchmark, gens, errors, single=bool(generator_path))
    for g in gens:  # card keys nothing reads: said once, the evaluation goes on
        for w in g.warnings:
            print(f"warning: {w}", file=sys.stderr)
    try:
        items = b.item_ids(paths)
    except (ValueError, OSError) as e:  # the dataset's own reader names the file and the problem
        raise CLIError(f"{benchmark} data under {bdir}: {e}") from None
    if not items:
        raise CLIError(f"no {b.partitions.item_dim} found for {benchmark} under {bdir}")
    resources = build_resources(paths=paths)
    return b, resources, items, gens, errors


def _board(resources, benchmark: str = "entitybench") -> pd.DataFrame:
    name = _benchmarks()[benchmark].leaderboard
    try:
        return resources["store"].query(f'SELECT * FROM "{name}"')
    except Exception as e:  # a missing or unreadable table is one line, not a DuckDB traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise CLIError(f"no {benchmark} leaderboard in the store {resources['store'].root} "
                       f"({type(e).__name__}: {first}); run `bench evaluate` or `bench demo` first") from None


def _print_board(board: pd.DataFrame, benchmark: str = "entitybench") -> None:
    # the board's text (cells, marks, legend) is shared with the leaderboard assets' UI metadata
    from bench_assets.core.board_text import format_board
    print(format_board(board, _benchmarks()[benchmark].headline, benchmark))


def _write_site(resources, out: str | None = None, only_if_changed: bool = False) -> Path | None:
    """The HTML report of the whole store (core/site.py); a failure is one line, never the run's failure.
    ``only_if_changed``: a run that changed no table keeps the site as it is (no 1-20 s rewrite)."""
    try:
        from bench_assets.core.site import build_site
    except ImportError:
        return None
    try:
        return build_site(resources["store"], _benchmarks(), out_dir=Path(out) if out else None,
                          only_if_changed=only_if_changed)
    except Exception as e:  # noqa: BLE001 - the scores are stored; the report is a view of them
        print(f"report not written: {type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}",
              file=sys.stderr)
        return None


def _run(benchmark: str, generator_path: str | None = None, aggregates: bool = True, quiet: bool = False,
         force: bool = False, only_items: list[str] | None = None, limit: int | None = None,
         metric: str | None = None):
    from bench_assets.core.runner import evaluate, open_instance
    b, resources, items, gens, errors = _plan(benchmark, generator_path=generator_path)
    generator_assets = list(b.generator_assets)
    if metric is not None:  # only the assets the metric reads, and what they need within the partition
        generator_assets = metric_assets(b, metric)
    instance = open_instance()
    for e in errors:
        print(f"error: {e}", file=sys.stderr)
    if generator_path:
        have = b.items_with_outputs(gens[0].path, items)
        if not have:
            raise CLIError(f"generator {gens[0].name!r} ({gens[0].path}) has outputs for none of the {len(items)} "
                           f"{benchmark} {b.partitions.item_dim}s (e.g. {', '.join(items[:3])}); expected "
                           f"<generator>/<{b.partitions.item_dim}>/ or <generator>/<{b.partitions.item_dim}>.<ext>")
        if only_items or limit is not None:
            items = choose_items(items, have, only_items, limit, b.partitions.item_dim, benchmark)
            have = [i for i in have if i in set(items)]
        missing = [i for i in items if i not in set(have)]
        if missing:
            print(f"note: {gens[0].name} has no outputs for {len(missing)} of {len(items)} "
                  f"{b.partitions.item_dim}s (first: {', '.join(missing[:5])}); they score as skipped",
                  file=sys.stderr)
    if not quiet:
        print(f"{benchmark}: {len(items)} items x {len(gens)} generators; profile {resources['models'].profile}; "
              f"judge {resources['judge'].mode}; DAGSTER_HOME={os.environ['DAGSTER_HOME']}")
    stats = evaluate(instance, assets=b.assets, resources=resources, partitions=b.partitions,
                     items=items, generators=gens, item_assets=b.item_assets, generator_assets=generator_assets,
                     aggregate_assets=[] if metric is not None else
                     (b.aggregate_assets if aggregates else board_assets(b)), force=force,
                     unit=b.unit, units=(lambda item: b.units_of(resources["paths"], item)) if b.units_of else None)
    stats.items = items
    for line in rerun_lines(stats):
        print(line)
    for line in stats.warning_summary():
        print(line, file=sys.stderr)
    from bench_assets.core.automation import staleness_unknown_lines
    for line in staleness_unknown_lines(stats):          # a staleness check that could not run says so
        print(line, file=sys.stderr)
    return resources, gens, stats


def board_assets(b) -> list[str]:
    """The leaderboard and the aggregates it reads (ViStoryBench's Inception Score), in dependency order: what a
    plain `bench evaluate` materialises after the partitions (every other aggregate with --aggregates). With the
    leaderboard alone, a user's generator had no Inception Score ('inception score not computed')."""
    from dagster import AssetKey
    key = AssetKey(b.leaderboard)
    deps = next((a.asset_deps[key] for a in b.assets if key in getattr(a, "keys", ())), set())
    return [n for n in b.aggregate_assets if AssetKey(n) in deps] + [b.leaderboard]


def choose_items(items: list[str], have: list[str], only: list[str] | None, limit: int | None, dim: str,
                 benchmark: str) -> list[str]:
    """``--items`` (those, in the dataset's order; an unknown one is an error naming it) then ``--limit N`` (the
    first N of them that the generator has outputs for)."""
    if only:
        unknown = [i for i in only if i not in set(items)]
        if unknown:
            raise CLIError(f"--items: no {dim} {', '.join(map(repr, unknown))} in {benchmark} "
                           f"(have {', '.join(items[:8])}{', ...' if len(items) > 8 else ''})")
        items = [i for i in items if i in set(only)]
    if limit is not None:
        if limit < 1:
            raise CLIError(f"--limit must be at least 1, not {limit}")
        items = [i for i in items if i in set(have)][:limit]
    return items


def metric_assets(b, metric: str) -> list[str]:
    """The generator assets ``metric`` needs: its spec's input tables and their upstream within the partition."""
    from dagster import AssetSelection
    known = sorted(s.id for s in b.metrics.specs)
    if metric not in known:
        raise CLIError(f"--metric: {b.name} declares no metric {metric!r} (`bench metrics --benchmark {b.name}`; "
                       f"e.g. {', '.join(known[:6])})")
    spec = b.metrics[metric]
    inputs = [t for t in spec.inputs if t in set(b.generator_assets)]
    if not inputs:
        raise CLIError(f"--metric: {metric!r} is computed by an aggregate ({', '.join(spec.inputs) or 'none'}), "
                       f"not per item; run without --metric")
    keys = AssetSelection.assets(*inputs).upstream().resolve(b.assets)
    names = {k.to_user_string() for k in keys}
    return [a for a in b.generator_assets if a in names]


def metric_rows(resources, b, metric: str, generator: str, items: list[str]) -> "pd.DataFrame":
    """The per-item values of one metric for one generator, from the table its spec reads."""
    import pandas as pd
    spec = b.metrics[metric]
    table = next(t for t in spec.inputs if t in set(b.generator_assets))
    df = resources["store"].query(f'SELECT * FROM "{table}"')
    df = df[(df["generator"] == generator) & (df["metric_id"] == (spec.unit_id or metric))]
    if "level" in df.columns:
        df = df[df["level"] == "item"]
    item_col = next((c for c in ("item", "episode_id", "story_id", "case_id", "sample_id", "video_id")
                     if c in df.columns), None)
    if item_col is not None:
        df = df[df[item_col].isin(items)].sort_values(item_col)
    cols = [c for c in (item_col, "value", "n_eval", "n_failed", "n_failed_evaluator", "reason", "protocol") if c]
    return pd.DataFrame(df[[c for c in cols if c in df.columns]]).rename(columns={item_col: b.partitions.item_dim})


def rerun_lines(stats) -> list[str]:
    """Why asset partitions re-ran (issue 25: input changed, stale, evaluator failures, forced), one line a reason."""
    out = []
    for reason, done in sorted(getattr(stats, "reruns", {}).items()):
        if reason == "missing":
            continue  # new work, not a re-run
        parts = sorted({pk or "-" for _, pk in done})
        out.append(f"re-ran {len(done)} asset partitions ({len(parts)} partitions: {', '.join(parts[:4])}"
                   f"{', ...' if len(parts) > 4 else ''}): {reason}")
    return out


def _judge_summary(stats) -> str:
    j = getattr(stats, "judge", None) or {}
    by = j.get("requests_by_endpoint") or {}
    where = "; ".join(f"{n} to {e}" for e, n in sorted(by.items()))
    return (f"{sum(by.values())} judge requests{f' ({where})' if where else ''}, "
            f"{j.get('questions_reasked', 0)} questions re-asked, {j.get('answers_reused', 0)} answers reused")


def _summary(name: str, stats) -> str:
    rec = f", recovered {len(stats.recovered)} crashed run(s)" if stats.recovered else ""
    return (f"{name}: materialised {len(stats.materialized)} asset partitions, {len(stats.failed)} failed{rec}; "
            f"{stats.forwards} model forwards ({stats.forward_s:.1f} s), {_judge_summary(stats)}, "
            f"{stats.decodes} video decodes; wall {stats.wall_s:.1f} s")


def cmd_demo(args) -> int:
    names = [args.benchmark] if args.benchmark else list(_benchmarks())
    failed = 0
    resources = None
    for name in names:
        resources, _, stats = _run(name)
        print()
        try:
            _print_board(_board(resources, name), name)
        except CLIError as e:  # after failed steps, what failed and what scored; not 'run bench demo first'
            why = failed_run_message(name, _benchmarks()[name].partitions.item_dim, stats) if stats.failed else e
            print(f"error: {why}", file=sys.stderr)
            failed += 1
        print(f"\n{_summary(name, stats)}\n")
        failed += len(stats.failed)
    if resources is not None:
        site = _write_site(resources, args.report, only_if_changed=True)
        if site is not None:
            print(f"report: {site}")
    print("UI: `bench ui` (or `make ui`) shows this Dagster home")
    return 0 if not failed else 1


def cmd_evaluate(args) -> int:
    b = _benchmark(args.benchmark)
    only = [i.strip() for i in (args.items or "").split(",") if i.strip()] or None
    resources, gens, stats = _run(args.benchmark, generator_path=args.generator, aggregates=args.aggregates,
                                  force=getattr(args, "force", False), only_items=only, limit=args.limit,
                                  metric=args.metric)
    name = gens[0].name
    board = rows = None
    try:
        if args.metric:  # a quick check of one metric: its per-item values, no board (the other metrics did not run)
            rows = metric_rows(resources, b, args.metric, name, stats.items)
            print(format_metric_rows(rows, args.metric, name))
        else:
            board = _board(resources, args.benchmark)
            _print_board(board[board.generator == name] if "generator" in board.columns else board, args.benchmark)
    except Exception:  # noqa: BLE001 - a missing table after failed steps: name those steps, never the advice to
        if not stats.failed:  # run `bench evaluate` the user just ran; the summary and the results still follow
            raise
        print(f"error: {failed_run_message(args.benchmark, b.partitions.item_dim, stats)}", file=sys.stderr)
    print(_summary(args.benchmark, stats))
    results = write_results(args, resources, b, name, stats, board, rows)
    print(f"results: {results}")
    if not args.metric:
        site = _write_site(resources, only_if_changed=True)
        if site is not None:
            print(f"report: {site}")
    return 0 if not stats.failed else 1


def failed_run_message(benchmark: str, dim: str, stats) -> str:
    """Why a run left no board to show: which items failed (the first failure's step and message; each was
    printed as it happened) and how many of the run's items scored, and the leaderboard step's own failure."""
    items = list(getattr(stats, "items", None) or [])
    per_item = [(step, pk, msg) for step, pk, msg in stats.failed if pk]
    bad = [i for i in items if any(i in str(pk).split("|") for _, pk, _ in per_item)]
    board_fail = next((f"{step}: {msg}" for step, pk, msg in stats.failed if not pk), None)
    parts = []
    if per_item:
        step, pk, msg = per_item[0]
        more = f"; +{len(per_item) - 1} more failed step(s)" if len(per_item) > 1 else ""
        parts.append(f"{len(bad)} of {len(items)} {dim}s failed in this run (first: {step} for {pk}: {msg}{more})")
        scored = len(items) - len(bad)
        parts.append(f"the other {scored} {dim}{'s' if scored != 1 else ''} scored and are stored" if scored
                     else f"no {dim} scored, so the leaderboard has no row to build from")
    if board_fail:
        parts.append(f"the leaderboard step failed ({board_fail})")
    return (f"no {benchmark} leaderboard to show: {'; '.join(parts)}; fix what is named above and run the same "
            f"command again (what scored is not recomputed)")


def format_metric_rows(rows, metric: str, generator: str) -> str:
    import pandas as pd
    if rows.empty:
        return f"{metric} for {generator}: no row"
    vals = pd.to_numeric(rows["value"], errors="coerce")
    shown = rows.drop(columns=[c for c in ("protocol",) if c in rows.columns])
    shown["value"] = [("None" if pd.isna(v) else f"{v:.4f}") for v in vals]
    mean = "None" if vals.isna().all() else f"{vals.mean():.4f}"
    return (f"{metric} for {generator}, per {rows.columns[0]}:\n{shown.fillna('').to_string(index=False)}\n"
            f"mean over {int(vals.notna().sum())} of {len(rows)} with a value: {mean} "
            f"(a quick check: the leaderboard's value applies the metric's coverage policy)")


def write_results(args, resources, b, generator: str, stats, board, rows) -> Path:
    """``<store>/results/<benchmark>/<generator>-<UTC time>.json`` (or ``--results PATH``): the run's config,
    versions, protocol digests and the generator's board rows (or, with --metric, the metric's per-item rows)."""
    import time as _time

    import pandas as pd

    from bench_assets.core import results as RS
    created = _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime())
    config = {"benchmark": args.benchmark, "generator": generator, "generator_path": str(Path(args.generator).resolve()),
              "items": list(stats.items), "limit": args.limit, "metric": args.metric, "force": bool(args.force),
              "aggregates": bool(args.aggregates), "profile": resources["models"].profile,
              "judge_mode": resources["judge"].mode, "store_root": str(resources["store"].root),
              "dagster_home": os.environ.get("DAGSTER_HOME")}
    run = {"materialized": len(stats.materialized), "failed": [list(f) for f in stats.failed],
           "model_forwards": stats.forwards, "video_decodes": stats.decodes, "wall_s": round(stats.wall_s, 3)}
    frame = board if board is not None else pd.DataFrame(columns=["generator"])
    doc = RS.results_document(benchmark=args.benchmark, generator=generator, board=frame, config=config,
                              versions=RS.versions(PROJECT_ROOT), run=run, created=created)
    if rows is not None:
        doc["metric_rows"] = RS.board_records(rows)
        doc["protocol_digests"] = RS.protocol_digests(rows)
    path = Path(args.results) if args.results else (
        Path(resources["store"].root) / "results" / args.benchmark / f"{generator}-{created.replace(':', '')}.json")
    return RS.write_json(doc, path)


def _export_official(resources, benchmark: str, board: pd.DataFrame, out: Path) -> int:
    """EntityBench: the authors' per-episode JSON + report per generator (out/<generator>/); MBench: the
    leaderboard submission. The writers are pure (<bench>/official_export.py); this only queries the store."""
    import json
    if benchmark == "mbench":
        from bench_assets.mbench.official_export import export
        files = {Path(k): v for k, v in export(board).items()}
    elif benchmark == "entitybench":
        from bench_assets.entitybench.official_export import export
        from bench_assets.entitybench.metric_specs import METRIC_TABLES
        store = resources["store"]
        present = set(store.query("SELECT table_name FROM information_schema.tables")["table_name"])
        cols = {t: set(store.query(f"SELECT column_name FROM information_schema.columns WHERE table_name = '{t}'")
                       ["column_name"]) for t in METRIC_TABLES.values() if t in present}
        parts = [f"SELECT generator, item, metric_id, value, n_eval, n_failed, n_skipped, reason, "
                 f"{'n_failed_evaluator' if 'n_failed_evaluator' in c else 'NULL AS n_failed_evaluator'} "
                 f"FROM {t} WHERE level = 'item'" for t, c in cols.items()]
        if not parts:
            raise CLIError("no EntityBench metric table in the store; run `bench evaluate` first")
        records = store.query(" UNION ALL ".join(parts))
        episodes = store.query("SELECT episode_id AS item, tier, n_shots FROM entitybench_episode")
        from bench_assets.entitybench.manifest import run_manifest   # the authors' run_manifest.json fields
        # every pair of appearances (adjacent + all-pairs rows): their gap_decay_data and per-tier curves
        pairs = store.query("SELECT generator, item, metric_id, level, entity_id, value, detail FROM "
                            "entitybench_presence_consistency WHERE level = 'pair' AND metric_id IN "
                            "('gap_decay_embedding', 'gap_decay_embedding_allpairs')") \
            if "entitybench_presence_consistency" in present else None
        names = {}
        if "entitybench_entity_registry" in present:
            for r in store.query("SELECT episode_id, entity_id, name FROM entitybench_entity_registry").itertuples():
                names.setdefault(r.episode_id, {})[r.entity_id] = r.name
        files = {Path(g) / k: v for g in sorted(set(board["generator"]))
                 for k, v in export(records, episodes, g, run_manifest=run_manifest(
                     g, resources["models"], resources.get("judge")), gap_pairs=pairs, names=names).items()}
    elif benchmark == "vistorybench":   # one official run tree per generator (vistorybench/official.py)
        import time as _time

        from bench_assets.vistorybench.official import export as vsb_export
        records = _item_records(resources["store"], benchmark)
        langs = _generator_languages(resources["store"])
        ts = _time.strftime("%Y%m%d_%H%M%S", _time.gmtime())
        files = {}
        for g in sorted(set(board["generator"])):
            inc = board[(board["generator"] == g) & (board["metric_id"] == "inception_score")
                        & (board["slice"] == "full")]["value"]
            files.update({Path(k): v for k, v in vsb_export(
                records, g, language=langs.get(g, "en"), timestamp=ts,
                dataset_values={"inception_score": inc.iloc[0]} if len(inc) else None).items()})
    elif benchmark == "locot2v":   # <generator>/<metric>.json {overall_score, sample_scores} (locot2v/official.py)
        from bench_assets.locot2v.official import export_results
        records = _item_records(resources["store"], benchmark)
        files = {}
        for g in sorted(set(board["generator"])):
            part = board[(board["generator"] == g) & (board["slice"] == "all")]
            files.update({Path(g) / k: v for k, v in export_results(
                records, g, dict(zip(part["metric_id"], part["value"]))).items()})
    elif benchmark == "narrativetrack":   # <answerer>-eval.json of the released QA (narrativetrack/official.py)
        from bench_assets.narrativetrack.official import export as nt_export
        store = resources["store"]
        try:
            qas = store.query("SELECT * FROM narrativetrack_released_qa")
            answers = store.query("SELECT * FROM narrativetrack_released_answers")
        except Exception:  # noqa: BLE001 - the tables exist only once the released QA was evaluated
            raise CLIError("no released-QA answers in the store: the official format is the released QA's "
                           "(put narrativetrack_qa.json under narrativetrack/released/ and evaluate)") from None
        if answers.empty:
            raise CLIError("no released-QA answers in the store (narrativetrack_released_answers is empty)")
        files = {Path(k): v for a in sorted(set(answers["answerer"].dropna()))
                 for k, v in nt_export(answers, qas, a).items()}
    else:
        raise CLIError(f"--format official is not written for {benchmark} (entitybench, locot2v, mbench, "
                       f"narrativetrack, vistorybench)")
    for rel, doc in files.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_text(json.dumps(doc, indent=2, ensure_ascii=False), encoding="utf-8")
    print(f"wrote {len(files)} files under {out}")
    return 0


def _generator_languages(store) -> dict:
    """ViStoryBench: each generator's language as its outputs were read (generator.yaml 'language')."""
    try:
        df = store.query("SELECT DISTINCT generator, language FROM vistorybench_outputs WHERE language IS NOT NULL")
    except Exception:  # noqa: BLE001 - no outputs table yet: the default language
        return {}
    return {g: str(lang) for g, lang in zip(df["generator"], df["language"])}


def cmd_export(args) -> int:
    """The store's board of one benchmark as a Hugging Face dataset folder or a W&B offline run (local only)."""
    from bench_assets.core import results as RS
    from bench_resources.config import build_resources
    resources = build_resources()
    board = _board(resources, args.benchmark)
    if args.generator:
        if args.generator not in set(board["generator"]):
            raise CLIError(f"no generator {args.generator!r} on the {args.benchmark} leaderboard "
                           f"(have {', '.join(sorted(set(board['generator'])))})")
        board = board[board["generator"] == args.generator]
    info = {"versions": RS.versions(PROJECT_ROOT), "profile": resources["models"].profile,
            "store_root": str(resources["store"].root)}
    out = Path(args.out)
    if args.format == "official":   # the benchmark authors' own result schema (issue 35 item 3)
        return _export_official(resources, args.benchmark, board, out)
    if args.format == "hf":
        paths = RS.export_hf(board, metrics_table([args.benchmark]), args.benchmark, out, info)
        for p in paths:
            print(f"wrote {p}")
        print(f"upload with: huggingface-cli upload <user>/<dataset> {out} --repo-type dataset")
    else:
        try:
            run_dir = RS.export_wandb(board, args.benchmark, out, info)
        except RuntimeError as e:
            raise CLIError(str(e)) from None
        print(f"wrote {run_dir}")
        print(f"upload with: wandb sync {run_dir}")
    return 0


def cmd_report(args) -> int:
    from bench_resources.config import build_resources
    if args.out:  # the report is a folder of pages: a file (or a path through one) is refused before any work
        out = Path(args.out)
        blocker = next((q for q in (out, *out.parents) if q.exists() and not q.is_dir()), None)
        if blocker is not None:
            raise CLIError(f"report --out {args.out}: {blocker} is a file, not a folder (the report is a folder of "
                           f"HTML pages; give a folder path)")
    resources = build_resources()
    try:
        from bench_assets.core.site import build_site
        site = build_site(resources["store"], _benchmarks(), out_dir=Path(args.out) if args.out else None)
    except OSError as e:  # here the report is the whole command: its failure is the error line, not a side note
        raise CLIError(f"report not written to {e.filename or args.out or 'the store'}: "
                       f"{e.strerror or type(e).__name__}") from None
    except Exception as e:  # noqa: BLE001 - one line naming what failed, never a traceback
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise CLIError(f"report not written: {type(e).__name__}: {first}") from None
    print(f"report: {site}")
    return 0


def cmd_validate(args) -> int:
    from bench_assets.core.validity import main_validate
    from bench_assets.definitions import validity_suites
    if args.benchmark:
        _benchmark(args.benchmark)
    return main_validate(args, _benchmarks(), validity_suites())


def cmd_human_alignment(args) -> int:
    """Kendall / Spearman / Pearson between a ratings table and metric values: this store's leaderboard or an
    outside table (``--metrics CSV``), over ViStoryBench's Lite split unless ``--split`` says otherwise (the
    paper's Table 2 is over Lite). The reading and the statistics are vistorybench/human_alignment.py's."""
    import pandas as pd
    from bench_assets.vistorybench import human_alignment as ha
    from bench_resources.config import build_resources
    vistory = args.benchmark == "vistorybench"
    if args.split and not vistory:
        raise CLIError(f"--split is ViStoryBench's story split; the {args.benchmark} board is read at its headline "
                       f"slice {_benchmarks()[args.benchmark].headline}")
    board = None
    if not args.metrics:  # the store's board first: without one, that is the error whatever the ratings hold
        board = _board(build_resources(), args.benchmark)
        if not vistory:   # another benchmark's slices are not story splits: its headline slice, as printed
            for col, val in (_benchmarks()[args.benchmark].headline or {}).items():
                if col in board.columns:
                    board = board[board[col] == val]
            board = board.drop(columns=["slice"])
        board = board[[c for c in ("generator", "metric_id", "value", "slice") if c in board.columns]]
    opts = argparse.Namespace(ratings=args.ratings, metrics=args.metrics, metric=args.metric,
                              slice=args.split or (ha.DEFAULT_SLICE if vistory or args.metrics else None))
    try:
        table = ha.table_from_args(opts, lambda: board)
    except ha.TableError as e:
        raise CLIError(str(e)) from None
    if args.json:
        print(table.to_json(orient="records", indent=2))
    else:
        cols = ["slice", "dimension", "metric_id", "kendall_tau", "spearman_rho", "pearson_r", "n_methods", "methods",
                "reason"]
        with pd.option_context("display.width", 220, "display.max_colwidth", 80):
            print(table[cols].round(4).to_string(index=False))
    return 0


# `bench import <benchmark> PATH`: each benchmark's importer of its official release, (module, function) imported
# when called; the function takes (path, out) and returns the exit status, raising ValueError for a user's mistake
IMPORTERS = {
    "entitybench": ("bench_assets.entitybench.official", "cli_import"),
    "locot2v": ("bench_assets.locot2v.official", "cli_import"),
}


def cmd_import(args) -> int:
    import importlib
    module, name = IMPORTERS[args.benchmark]
    try:
        return getattr(importlib.import_module(module), name)(args.path, args.out)
    except (ValueError, OSError) as e:
        raise CLIError(f"import {args.benchmark} {args.path}: {e}") from None


# `bench import-results <benchmark> PATH`: each benchmark's reader of its official result files (module with
# read_results(path, known metric ids) -> (method, rows, problems, info) and RESULTS_CODE), imported when called
RESULT_READERS = {
    "entitybench": "bench_assets.entitybench.official",
    "vistorybench": "bench_assets.vistorybench.official",
    "narrativetrack": "bench_assets.narrativetrack.official",
    "locot2v": "bench_assets.locot2v.official",
    "mbench": "bench_assets.mbench.official",
}


def _item_records(store, benchmark: str) -> "pd.DataFrame":
    """Our item-level rows (generator, item, metric_id, value) from every table the benchmark's specs read that
    has them (an absent table is none)."""
    import pandas as pd
    tables = sorted({t for s in _metric_specs(benchmark).specs for t in s.inputs})
    present = set(store.query("SELECT table_name FROM information_schema.tables")["table_name"])
    parts = []
    for t in tables:
        if t not in present:
            continue
        cols = set(store.query(f"SELECT column_name FROM information_schema.columns WHERE table_name = '{t}'")
                   ["column_name"])
        if {"generator", "item", "metric_id", "value", "level"} <= cols:
            parts.append(f"SELECT generator, item, metric_id, value FROM \"{t}\" WHERE level = 'item'")
    if not parts:
        return pd.DataFrame(columns=["generator", "item", "metric_id", "value"])
    return store.query(" UNION ALL ".join(parts))


def cmd_import_results(args) -> int:
    """Official result files -> the store's imported_results (core/imported_results.py), a summary, and the
    per-item side by side with one of our generators (printed; all rows to --side-by-side CSV)."""
    import importlib
    import time as _time

    import pandas as pd

    from bench_assets.core import imported_results as IR
    from bench_resources.config import build_resources
    mod = importlib.import_module(RESULT_READERS[args.benchmark])
    known = {s.id for s in _metric_specs(args.benchmark).specs}
    try:
        method, rows, problems, info = mod.read_results(args.path, known)
    except (ValueError, OSError, KeyError) as e:
        raise CLIError(f"import-results {args.benchmark} {args.path}: {e}") from None
    src = IR.Source(args.benchmark, args.method or method, args.code or mod.RESULTS_CODE,
                    args.commit or (info or {}).get("commit"), str(Path(args.path).resolve()))
    resources = build_resources()
    # comparable only where the benchmark's protocol has a rule for it (EntityBench: the run manifests)
    verdict = getattr(mod, "protocol_comparable", None)
    comparable, why = verdict(info, resources) if verdict else (False, IR.NOT_COMPARABLE)
    df = IR.frame(rows, src, _time.strftime("%Y-%m-%dT%H:%M:%SZ", _time.gmtime()), comparable, why)
    where = IR.store_rows(resources["store"], df)
    for line in IR.summary_lines(df):
        print(line)
    print(f"stored as {src.method}{IR.LABEL} in {where}; {'comparable' if comparable else 'not comparable'} "
          f"with ours: {why}")
    for p in problems:
        print(f"error: {p}", file=sys.stderr)
    ours = _item_records(resources["store"], args.benchmark)
    gen = args.against or (src.method if src.method in set(ours["generator"]) else None)
    if not (df["level"] == "item").any():  # an overall-only file (MBench's submission): nothing per item to pair
        print(f"side by side: the file has no per-item values (only overall ones); compare the board's cells: "
              f"bench leaderboard --benchmark {args.benchmark}")
    elif gen is None:
        print(f"side by side: no generator of ours named {src.method!r} (give --against GENERATOR; have "
              f"{', '.join(sorted(set(ours['generator']))) or 'none'})")
    else:
        sbs = IR.side_by_side(df, ours, gen)
        both = sbs.dropna(subset=["ours", "theirs"])
        o, t = sbs["ours"].notna(), sbs["theirs"].notna()
        print(f"side by side with {gen}: {len(both)} item values on both sides, {int((t & ~o).sum())} only theirs, "
              f"{int((o & ~t).sum())} only ours, {int((~o & ~t).sum())} null on both")
        if len(both):
            per = both.groupby("metric_id").agg(items=("item", "nunique"), ours=("ours", "mean"),
                                                theirs=("theirs", "mean"),
                                                mean_abs_delta=("delta", lambda d: d.abs().mean()))
            with pd.option_context("display.width", 200, "display.max_rows", 200):
                print(per.round(4).to_string())
        if args.side_by_side:
            sbs.to_csv(args.side_by_side, index=False)
            print(f"wrote {args.side_by_side} ({len(sbs)} rows)")
    return 1 if problems else 0


def _with_imported(resources, benchmark: str, board: "pd.DataFrame") -> "pd.DataFrame":
    """The board with the imported official results' rows (marked, never comparable) below ours."""
    import pandas as pd

    from bench_assets.core import imported_results as IR
    from bench_assets.core.metric_spec import board_frame
    imported = IR.read_rows(resources["store"], benchmark)
    rows = IR.board_rows(imported, set(board["metric_id"].dropna())) if len(imported) else []
    if not rows:
        return board
    extra = board_frame(benchmark, rows, _metric_specs(benchmark))
    return pd.concat([board, extra], ignore_index=True)


def cmd_leaderboard(args) -> int:
    from bench_assets.core.imported_results import legend_lines
    from bench_resources.config import build_resources
    resources = build_resources()
    board = _with_imported(resources, args.benchmark, _board(resources, args.benchmark))
    if args.json:
        print(board.to_json(orient="records", indent=2))
    else:
        _print_board(board, args.benchmark)
        for line in legend_lines(board):
            print(line)
    return 0


def metrics_table(names: list[str]) -> pd.DataFrame:
    """Every declared metric of the named benchmarks (their ``metric_specs.py``), one row each."""
    import pandas as pd
    frames = [_metric_specs(n).table() for n in names]
    frames = [f for f in frames if len(f)]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()


def _metric_specs(name: str):
    """A benchmark's declared metrics, the ``metrics`` of its BENCHMARKS entry, read from its
    ``<benchmark>/metric_specs.py`` without building the entry (which imports its assets: 1-2 s for a listing)."""
    import importlib
    if name not in BENCHMARK_NAMES:  # the names alone import no benchmark (BENCHMARKS imports every asset)
        _benchmark(name)  # the unknown-benchmark error
    return importlib.import_module(f"bench_assets.{name}.metric_specs").METRICS


def slot_models(slots: str, registry, short: int = 0) -> str:
    """What computes a metric in this profile: 'slot: checkpoint' per model slot ('*' a substitute for the paper's
    model, 'unavailable: why' when the slot has no weights here)."""
    from bench_resources.models.specs import SLOTS
    parts = []
    for slot in [x.strip() for x in str(slots or "").split(",") if x.strip()]:
        if slot not in SLOTS:
            parts.append(slot)
            continue
        st = registry.status(slot)
        if not st.available:
            parts.append(f"{slot}: unavailable")
            continue
        name = st.checkpoint or "?"
        if short and len(name) > short:
            name = name[:short - 3] + "..."
        parts.append(f"{slot}: {name}{'*' if st.checkpoint != SLOTS[slot].paper.name else ''}")
    return "; ".join(parts)


# `bench metrics` without --wide: (column, header, most characters before it wraps), per benchmark; the models
# (and unit, aggregation) on indented lines below, wrapped at "; "
_METRIC_COLUMNS = (("id", "id", 40), ("paper_id", "paper id", 22), ("family", "family", 24),
                   ("direction", "dir", 6), ("scale", "scale", 11), ("kind", "kind", 10))


def metrics_text(shown: "pd.DataFrame", width: int = 120) -> list[str]:
    """The metric listing as lines no wider than ``width``: one block per benchmark, one row per metric (long cells
    wrapped inside their column), then its unit, aggregation and models on indented lines."""
    import textwrap
    out: list[str] = []
    for bench, part in shown.groupby("benchmark", sort=False):
        widths = [min(cap, max(len(head), *(len(str(v)) for v in part[c]))) for c, head, cap in _METRIC_COLUMNS]
        out.append(f"{bench} ({len(part)} metrics)")
        out.append("  " + "  ".join(h.ljust(w) for (_, h, _), w in zip(_METRIC_COLUMNS, widths)).rstrip())
        for r in part.to_dict("records"):
            cells = [[str(r[c])] if c == "id" else textwrap.wrap(str(r[c]), w, break_on_hyphens=False) or [""]
                     for (c, _, _), w in zip(_METRIC_COLUMNS, widths)]   # an id is never cut: it is typed
            for k in range(max(len(x) for x in cells)):
                out.append("  " + "  ".join((x[k] if k < len(x) else "").ljust(w)
                                            for x, w in zip(cells, widths)).rstrip())
            for label in ("unit", "aggregation", "models", "reference"):   # reference: to the authors' code
                text = str(r.get(label) or "")
                if not text:
                    continue
                if label != "models":
                    out += textwrap.wrap(text, width, initial_indent=f"      {label}: ",
                                         subsequent_indent=" " * (8 + len(label)), break_on_hyphens=False)
                    continue
                pieces = text.split("; ")   # a slot and its checkpoint never split over two lines
                line = f"      {label}: "
                for i, piece in enumerate(pieces):
                    piece = piece + (";" if i < len(pieces) - 1 else "")
                    if len(line) + len(piece) > width and line.strip() != f"{label}:":
                        out.append(line.rstrip())
                        line = " " * (8 + len(label))
                    line += piece + " "
                out.append(line.rstrip())
        out.append("")
    return out


class _SlotStatuses:
    """The model slots as ``bench metrics`` reads them: the registry the resources build (BENCH_PROFILE,
    BENCH_WEIGHTS_DIR, BENCH_ALLOW_HUB, as bench_resources/config.py reads them) without Dagster's import (the
    resource wraps this plain registry), each slot's status read once (a listing asked 678 times for 40 slots)."""

    def __init__(self):
        from bench_resources.models.slot_registry import SlotRegistry
        self.profile = os.environ.get("BENCH_PROFILE", "offline")
        self._reg = SlotRegistry(self.profile, os.environ.get("BENCH_WEIGHTS_DIR", str(PROJECT_ROOT / "weights")),
                                 os.environ.get("BENCH_ALLOW_HUB", "0") == "1", {})
        self._seen: dict = {}

    def status(self, slot: str):
        if slot not in self._seen:
            self._seen[slot] = self._reg.status(slot)
        return self._seen[slot]


def cmd_sensors(args) -> int:
    """Each generator sensor's last tick (what it decided), its next one, and the folders waiting for it."""
    from bench_assets.core.runner import open_instance
    from bench_assets.core.sensor_status import sensor_lines
    from bench_resources.paths import BenchPaths
    names = [args.benchmark] if args.benchmark else list(BENCHMARK_NAMES)
    instance = open_instance()
    for line in sensor_lines(instance, [f"{n}_generators_sensor" for n in names], BenchPaths().generators_dir):
        print(line)
    return 0


def cmd_metrics(args) -> int:
    import pandas as pd
    names = [args.benchmark] if args.benchmark else list(BENCHMARK_NAMES)
    table = metrics_table(names)
    registry = _SlotStatuses()
    if not table.empty:
        table["models"] = [slot_models(s, registry) for s in table["slots"]]
    if args.json:
        print(table.to_json(orient="records", indent=2))
        return 0
    if table.empty:
        print("(no metric declared)")
        return 0
    cols = ["benchmark", "id", "paper_id", "family", "direction", "scale", "unit", "aggregation", "coverage_policy",
            "kind", "models", "reference"]
    shown = table[cols].copy()
    shown["paper_id"] = [("addition" if a else p) for a, p in zip(table["addition"], table["paper_id"])]
    shown["models"] = [slot_models(s, registry, short=28) for s in table["slots"]]
    if args.wide:   # every column on one line per metric (749 columns wide; --json for a program)
        with pd.option_context("display.width", 320, "display.max_rows", 2000, "display.max_columns", 20,
                               "display.max_colwidth", 110):
            print(shown.fillna("").to_string(index=False))
    else:
        import shutil
        width = max(80, shutil.get_terminal_size((120, 24)).columns)
        for line in metrics_text(shown.fillna(""), width):
            print(line)
    n_add = int(table["addition"].sum())
    import textwrap
    print("\n" + textwrap.fill(
        f"{len(table)} metrics in {len(names)} benchmark(s); {n_add} additions (not the papers' metrics); "
        f"models: what computes each metric in profile {registry.profile} (* a substitute for the paper's model; "
        f"`bench weights` for the full names)", 10_000 if args.wide else 120))
    return 0


def _descendants(pid: int) -> list[int]:
    try:
        import psutil
        return [c.pid for c in psutil.Process(pid).children(recursive=True)]
    except Exception:  # psutil missing or the process already gone: the process group covers the rest
        return []


def stop_process_tree(proc: subprocess.Popen, grace_s: float = 3.0, rest_s: float = 1.0,
                      wait_for: tuple[str, ...] = ("dagster._daemon", "dagster-daemon")) -> None:
    """SIGTERM ``proc`` alone; once it has ended, or the processes whose command line holds one of ``wait_for``
    have (the daemon: it writes ticks and launches runs), or ``grace_s`` passed, SIGTERM its process group (and
    any descendant that left it: a run it launched) and SIGKILL what remains after ``rest_s``.

    `dagster dev` stops its webserver, daemon and code servers in order, but the webserver and the code servers
    (no state of their own) took 4-7 s more after the daemon, and signalling the whole group at once made the
    webserver restart the code server it saw die, which then sat out the whole grace: 16-20 s per stop."""
    import signal
    import time
    pids = _descendants(proc.pid)
    watched = [p for p in pids if any(w in _cmdline(p) for w in wait_for)]
    try:
        proc.send_signal(signal.SIGTERM)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and proc.poll() is None and (not watched or any(map(_pid_alive, watched))):
        time.sleep(0.05)
    pids = [p for p in pids if _pid_alive(p)] + _descendants(proc.pid)
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + (rest_s if sig == signal.SIGTERM else 5.0)
        while time.monotonic() < deadline:
            alive = [p for p in pids if _pid_alive(p)]
            if proc.poll() is not None and not alive:
                return
            time.sleep(0.1)
        pids = [p for p in pids if _pid_alive(p)] + _descendants(proc.pid)


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except (OSError, IndexError):
        return True


def cmd_ui(args) -> int:
    """`dagster dev` (webserver + daemon) in its own process group; SIGINT/SIGTERM stop the whole group. The
    webserver also serves the report site (core/ui_webserver), so the root-relative report and audit links the
    assets wrote open on the UI's own address; the site is served on --report-port too, for a browser alone."""
    import signal
    from bench_assets.core.runner import open_instance
    from bench_assets.core.site import serve_site
    from bench_resources.config import build_resources
    # the home's schema created or completed (a half-made home from a killed process), as `bench evaluate` does,
    # before the webserver and the daemon open it concurrently
    instance = open_instance()
    home = Path(os.environ["DAGSTER_HOME"])
    note = startup_timeout_note(instance, home)
    instance.dispose()
    if note:
        print(note, flush=True)
    try:
        server, site_url = serve_site(build_resources()["store"], args.report_port)
    except OSError as e:
        raise CLIError(f"cannot serve the report site on 127.0.0.1:{args.report_port} ({e.strerror or e}); "
                       f"pick another with --report-port") from None
    cmd = [sys.executable, "-m", "bench_assets.core.ui_webserver", "dev", "-w", str(PROJECT_ROOT / "workspace.yaml"),
           "-h", "127.0.0.1", "-p", str(args.port)]
    print(f"DAGSTER_HOME={home}: {' '.join(cmd)}", flush=True)
    print(f"report site: {site_url}/index.html", flush=True)
    proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, start_new_session=True, env=ui_env(os.environ),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    stopping = {"sig": None}
    log_path = home / "bench-ui.log"
    relay = UiOutput(proc.stdout, log_path, stopping)
    watch_ui_start(args.port, proc, stopping)

    def _stop(signum, _frame):
        stopping["sig"] = signum

    old = {s: signal.signal(s, _stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        while proc.poll() is None and stopping["sig"] is None:
            try:
                proc.wait(timeout=0.5)
            except subprocess.TimeoutExpired:
                pass
    finally:
        stop_process_tree(proc)
        server.shutdown()
        relay.close()
        for s, h in old.items():
            signal.signal(s, h)
    if relay.hidden:
        print(f"bench ui: {relay.hidden} traceback(s) of processes being stopped kept out of the terminal: "
              f"{log_path}")
    if stopping["sig"] is not None:
        print(f"bench ui: stopped webserver, daemon and their runs ({signal.Signals(stopping['sig']).name})")
        return 128 + stopping["sig"]
    return proc.returncode or 0


# Dagster's gRPC and code-server start timeouts (60 s and 180 s) for `bench ui`'s processes, unless set: loading
# the code location imports every benchmark (40-50 s on a loaded 2-CPU machine), and a sensor-launched run then
# failed with the code server's timeout
UI_TIMEOUTS = {"DAGSTER_GRPC_TIMEOUT_SECONDS": "300", "DAGSTER_REPOSITORY_GRPC_TIMEOUT_SECONDS": "300",
               "DAGSTER_SENSOR_GRPC_TIMEOUT_SECONDS": "300", "DAGSTER_SCHEDULE_GRPC_TIMEOUT_SECONDS": "300",
               "DAGSTER_CODE_SERVER_STARTUP_TIMEOUT": "600"}


def startup_timeout_note(instance, home: Path) -> str | None:
    """A home made before the project's dagster.yaml set the code location's start timeout (an instance setting, no
    environment variable reaches it) waits Dagster's 180 s: one line saying how to raise it, None when it is set."""
    if (instance.get_settings("code_servers") or {}).get("local_startup_timeout"):
        return None
    return (f"note: Dagster waits {instance.code_server_process_startup_timeout} s for the code location to load; "
            f"under load that may not be enough: add 'code_servers: {{local_startup_timeout: 600}}' to "
            f"{home / 'dagster.yaml'} (as the project's dagster.yaml has)")


def ui_env(env) -> dict:
    """``env`` with ``UI_TIMEOUTS`` where the user set none."""
    return {**UI_TIMEOUTS, **dict(env)}


class UiOutput:
    """`dagster dev`'s output relayed to the terminal and appended to ``log_path`` (the home's bench-ui.log).
    Once a stop was asked for, a traceback (processes interrupted mid-call while they stop: 'cannot schedule new
    futures after shutdown', KeyboardInterrupt) goes to the log only, and ``hidden`` counts them for one line."""

    def __init__(self, stream, log_path: Path, stopping: dict):
        import threading
        self.stream, self.stopping, self.hidden = stream, stopping, 0
        self.log = open(log_path, "ab")
        self.thread = threading.Thread(target=self._relay, name="bench-ui-output", daemon=True)
        self.thread.start()

    def _relay(self) -> None:
        out = getattr(sys.stdout, "buffer", None)
        in_tb = False
        for line in iter(self.stream.readline, b""):
            self.log.write(line)
            if self.stopping["sig"] is not None:
                text = line.decode(errors="replace")
                if text.startswith("Traceback (most recent call last)"):
                    in_tb, self.hidden = True, self.hidden + 1
                    continue
                if in_tb:   # indented frames, then the exception's own line ends it
                    in_tb = text[:1] in (" ", "\t") or not text.strip()
                    continue
                if text.strip() in ("Aborted!", "KeyboardInterrupt"):
                    continue
            if out is not None:
                out.write(line)
                out.flush()
            else:
                print(line.decode(errors="replace"), end="", flush=True)

    def close(self) -> None:
        self.thread.join(timeout=5)
        self.log.close()


def ui_loaded(port: int) -> bool | None:
    """Whether the UI on ``port`` has its code location loaded (None: the webserver does not answer yet)."""
    import urllib.request
    query = b'{"query": "{ workspaceOrError { ... on Workspace { locationEntries { loadStatus } } } }"}'
    try:
        req = urllib.request.Request(f"http://127.0.0.1:{port}/graphql", data=query,
                                     headers={"Content-Type": "application/json"})
        body = json.loads(urllib.request.urlopen(req, timeout=5).read())
        entries = body["data"]["workspaceOrError"]["locationEntries"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return bool(entries) and all(e["loadStatus"] == "LOADED" for e in entries)


def watch_ui_start(port: int, proc, stopping: dict, every_s: float = 10.0) -> None:
    """Say, while `bench ui` starts, what it is waiting for and for how long (the webserver, then the code
    location, which imports every benchmark), and once when the UI is ready: the terminal was silent for 40 s."""
    import threading
    import time

    def watch():
        t0 = last = time.monotonic()
        while proc.poll() is None and stopping["sig"] is None:
            state = ui_loaded(port)
            waited = time.monotonic() - t0
            if state:
                print(f"bench ui: ready at http://127.0.0.1:{port} (code location loaded in {waited:.0f} s)",
                      flush=True)
                return
            if time.monotonic() - last >= every_s:
                last = time.monotonic()
                what = "the webserver to answer" if state is None else "the code location to load"
                print(f"bench ui: waiting for {what} ({waited:.0f} s)", flush=True)
            time.sleep(1.0)
    threading.Thread(target=watch, name="bench-ui-start", daemon=True).start()


def cmd_weights(args) -> int:
    import pandas as pd
    from bench_resources.config import build_resources
    from bench_resources.models import ModelRegistry
    base = build_resources()["models"]
    reg = ModelRegistry(profile=args.profile or base.profile, weights_dir=base.weights_dir, allow_hub=base.allow_hub)
    if args.action == "import":
        empty = _empty_checkpoint(Path(args.path))
        if empty:  # nothing would be copied and the slot would stay as it was: refused, never 'imported'
            raise CLIError(f"weights import {args.slot} {args.path}: {empty}; give the checkpoint file or the "
                           f"folder holding it")
        try:
            st = reg.import_weights(args.slot, args.path)
        except (OSError, ValueError, KeyError) as e:
            raise CLIError(f"weights import {args.slot} {args.path}: {str(e).strip().splitlines()[0]}") from None
        print(f"imported {args.path} -> slot {st.slot}: available={st.available} fingerprint={st.fingerprint}")
        if not st.available:  # copied, but the slot still lacks files (a slot of several files takes several imports)
            print(f"note: slot {st.slot} is still unavailable: {st.reason}", file=sys.stderr)
        return 0
    rows = [{"slot": s.slot, "available": s.available, "checkpoint": s.checkpoint, "source": s.source,
             "fingerprint": (s.fingerprint or "")[:16], "reason": s.reason or ""} for s in reg.statuses()]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"profile {reg.profile}, weights dir {reg.weights_dir}")
        print(pd.DataFrame(rows).to_string(index=False))
    return 0


def _empty_checkpoint(path: Path) -> str | None:
    """Why ``path`` holds no checkpoint ('' / None when it may): an empty file, or a folder with no non-empty
    file in it (an empty folder copied would leave the slot as it was and say 'imported')."""
    if path.is_file():
        return "the file is empty (0 bytes)" if path.stat().st_size == 0 else None
    if path.is_dir():
        try:
            files = [f for f in path.rglob("*") if f.is_file()]
        except OSError as e:
            return f"the folder cannot be listed ({e.strerror or e})"
        if not files:
            return "the folder holds no file"
        if all(f.stat().st_size == 0 for f in files):
            return f"every file in the folder is empty ({len(files)} of 0 bytes)"
    return None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bench", description="Entity-consistency benchmarks as Dagster assets")
    sub = p.add_subparsers(dest="cmd", required=True)
    names = list(BENCHMARK_NAMES)
    demo = sub.add_parser("demo", help="evaluate the embedded benchmarks with the offline profile")
    demo.add_argument("--benchmark", choices=names, help="one benchmark (default: all)")
    demo.add_argument("--report", default=None, metavar="DIR",
                      help="where to write the HTML report (default: <store>/reports/site)")
    demo.set_defaults(fn=cmd_demo)
    ui = sub.add_parser("ui", help="Dagster webserver + daemon on 127.0.0.1")
    ui.add_argument("--port", type=int, default=3000)
    ui.add_argument("--report-port", type=int, default=3001,
                    help="where the report site is served on 127.0.0.1 (the UI's report and audit links)")
    ui.set_defaults(fn=cmd_ui)
    ev = sub.add_parser("evaluate", help="evaluate one generator folder on one benchmark")
    ev.add_argument("--benchmark", required=True, help=f"one of {', '.join(names)}")
    ev.add_argument("--generator", required=True, help="folder holding generator.yaml and the outputs")
    ev.add_argument("--aggregates", action="store_true",
                    help="also every other aggregate (effect sizes, reports, ...), not only the leaderboard and "
                         "what it reads")
    ev.add_argument("--force", action="store_true",
                    help="re-run every partition of this generator (and the items) even when up to date")
    ev.add_argument("--items", default=None, metavar="ID,ID",
                    help="only these items (episodes, stories, cases, samples, videos), comma-separated")
    ev.add_argument("--limit", type=int, default=None, metavar="N",
                    help="a quick check: only the first N items the generator has outputs for")
    ev.add_argument("--metric", default=None, metavar="ID",
                    help="only the assets one metric needs; prints its per-item values instead of the board")
    ev.add_argument("--results", default=None, metavar="PATH",
                    help="where to write the run's results JSON (default: <store>/results/<benchmark>/...)")
    ev.set_defaults(fn=cmd_evaluate)
    lb = sub.add_parser("leaderboard", help="print a benchmark's leaderboard")
    lb.add_argument("--benchmark", required=True, choices=names)
    lb.add_argument("--json", action="store_true")
    lb.set_defaults(fn=cmd_leaderboard)
    se = sub.add_parser("sensors", help="the generator sensors: last tick and what it decided, next tick, the "
                                        "folders waiting for it (read from DAGSTER_HOME)")
    se.add_argument("--benchmark", default=None, choices=names)
    se.set_defaults(fn=cmd_sensors)
    me = sub.add_parser("metrics", help="every declared metric: paper id or addition, family, direction, scale, "
                                        "aggregation, coverage policy, model slots")
    me.add_argument("--benchmark", default=None, choices=names)
    me.add_argument("--json", action="store_true", help="every field of every metric, as JSON")
    me.add_argument("--wide", action="store_true", help="every column on one line per metric (very wide)")
    me.set_defaults(fn=cmd_metrics)
    ex = sub.add_parser("export", help="a benchmark's board as a Hugging Face dataset folder, a W&B offline run or "
                                       "the benchmark's own result files (written locally)")
    ex.add_argument("--benchmark", required=True, choices=names)
    ex.add_argument("--format", required=True, choices=("hf", "wandb", "official"))
    ex.add_argument("--out", required=True, metavar="DIR")
    ex.add_argument("--generator", default=None, help="only this generator's rows")
    ex.set_defaults(fn=cmd_export)
    rp = sub.add_parser("report", help="write the HTML report of the whole store")
    rp.add_argument("--out", default=None, metavar="DIR", help="default: <store>/reports/site")
    rp.set_defaults(fn=cmd_report)
    va = sub.add_parser("validate", help="perturbation cases on real footage: expected direction, effect size")
    va.add_argument("--benchmark", default=None)
    va.add_argument("--keep", default=None, metavar="DIR", help="keep the perturbed clips here")
    va.set_defaults(fn=cmd_validate)
    ha = sub.add_parser("human-alignment", help="correlate human ratings (method,dimension,rating CSV) with metrics")
    ha.add_argument("--benchmark", default="vistorybench", choices=names)
    ha.add_argument("--ratings", required=True, help="CSV with columns method, dimension, rating")
    ha.add_argument("--metric", action="append", metavar="ID", help="only this metric id (repeatable, or "
                                                                     "comma-separated)")
    ha.add_argument("--metrics", default=None, metavar="CSV", help="metric values from an outside table, long "
                    "(method,metric_id,value[,slice]) or wide (method,<metric_id>...); default: the store's board")
    ha.add_argument("--split", choices=("lite", "full"), default=None,
                    help="ViStoryBench story split (default: lite, as the paper's Table 2)")
    ha.add_argument("--json", action="store_true")
    ha.set_defaults(fn=cmd_human_alignment)
    im = sub.add_parser("import", help="convert a benchmark's official release into DATA_ROOT (canonical files, "
                                       "tiers, an import report of every quirk met)")
    im.add_argument("benchmark", choices=sorted(IMPORTERS))
    im.add_argument("path", help="the release's folder (a checkout of the official repository)")
    im.add_argument("--out", default=None, metavar="DATA_ROOT", help="default: BENCH_DATA_ROOT")
    im.set_defaults(fn=cmd_import)
    ir = sub.add_parser("import-results", help="put a run of a benchmark's own evaluation code (its official "
                                               "result files) beside ours: marked rows, not comparable unless "
                                               "the benchmark's protocol says so")
    ir.add_argument("benchmark", choices=sorted(RESULT_READERS))
    ir.add_argument("path", help="the official result file or folder (see README 'From the official release')")
    ir.add_argument("--method", default=None, help="name of the method (default: from the files)")
    ir.add_argument("--code", default=None, help="the official code that wrote them (default: the benchmark's)")
    ir.add_argument("--commit", default=None, help="the commit of that code (shown with every imported row)")
    ir.add_argument("--against", default=None, metavar="GENERATOR", help="our generator for the side by side "
                                                                        "(default: the method's name)")
    ir.add_argument("--side-by-side", default=None, metavar="CSV", help="write every per-item pair here")
    ir.set_defaults(fn=cmd_import_results)
    sub.add_parser("locot2v-rrub", help="LoCoT2V: RR-UB (aesthetic upper bound) from an image folder "
                                        "-> data/locot2v/rrub.json")  # listed in --help; handled in main
    w = sub.add_parser("weights", help="list model slots or import a checkpoint")
    w.add_argument("action", nargs="?", default="list", choices=("list", "import"))
    w.add_argument("slot", nargs="?")
    w.add_argument("path", nargs="?")
    w.add_argument("--profile", choices=("offline", "paper"))
    w.add_argument("--json", action="store_true")
    w.set_defaults(fn=cmd_weights)
    from bench_assets.entitymem.cli import add_parser as add_entitymem  # the paper's baseline; lazy inside
    add_entitymem(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    """The console script calls this with no argv: then the process ends by ``os._exit`` once the output is
    flushed, skipping CPython's final collection of the dagster/torch/pandas heap (3-11 s after the last line)."""
    if argv is None:
        try:
            code = _main(sys.argv[1:])
        except BrokenPipeError:  # `bench metrics | head`: the reader left; no traceback, the shell's SIGPIPE status
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            code = 141
        _exit_now(code)
    return _main(list(argv))


def _exit_now(code: int) -> None:
    import logging
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    logging.shutdown()
    os._exit(code)


def _main(argv: list[str]) -> int:
    import contextlib
    if argv[:1] == ["locot2v-rrub"]:  # its own parser (argparse would reject its --help as a leftover argument)
        from bench_assets.locot2v.rrub import main as rrub_main
        return rrub_main(argv[1:])
    p = _parser()
    args = p.parse_args(argv)
    if args.cmd == "weights" and args.action == "import" and not (args.slot and args.path):
        p.error("weights import needs SLOT and PATH")
    from bench_resources.settings import ConfigError, validate_environment
    try:  # every configuration value checked before anything runs (bench_resources/settings.py)
        validate_environment()
        if isinstance(getattr(args, "generator", None), str) and not args.generator.strip():
            raise ConfigError("--generator is empty; give the folder holding generator.yaml and the outputs")
    except ConfigError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    from bench_assets.core import interrupts
    from bench_assets.core.generators import GeneratorError
    from bench_assets.core.names import BadName
    # SIGINT and SIGTERM stop like Ctrl-C (runs marked failed, slots freed, nothing built from partial tables);
    # `bench ui` handles both itself for its child processes
    watch = interrupts.watching() if args.cmd != "ui" else contextlib.nullcontext()
    try:
        with watch:
            return args.fn(args)
    except (CLIError, GeneratorError, BadName) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # EntityBench's `authors` prompt set without a readable clone: the user's setting
        from bench_assets.entitybench.judging import PromptSetError
        if not isinstance(e, PromptSetError):
            raise
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(interrupts.message(), file=sys.stderr)
        return interrupts.exit_code()


def threading_main() -> bool:
    import threading
    return threading.current_thread() is threading.main_thread()


if __name__ == "__main__":
    raise SystemExit(main())
