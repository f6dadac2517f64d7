"""One entry per benchmark: its assets, partitions, item discovery and run plan. definitions.py and the CLI
read this table; adding a benchmark is one entry here plus its folder."""
from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Callable, Sequence

from bench_assets.core.metric_spec import MetricSpecs
from bench_assets.core.page import BenchmarkPage
from bench_assets.core.partitions import BenchmarkPartitions
from bench_resources.paths import BenchPaths


@dataclass(frozen=True)
class Benchmark:
    name: str
    partitions: BenchmarkPartitions
    assets: Sequence
    item_ids: Callable[[BenchPaths], list[str]]
    item_assets: Sequence[str]
    generator_assets: Sequence[str]
    aggregate_assets: Sequence[str]       # unpartitioned, in dependency order
    leaderboard: str                      # the asset whose table `bench leaderboard` prints
    headline: dict = None                 # leaderboard rows the CLI pivots (e.g. {"slice": "all"})
    outputs_per_item: bool = True         # a generator folder holds <item> or <item>.<ext> per item (False:
                                          # an answerer, whose generator.yaml names a model; no files)
    metrics: MetricSpecs = None           # every metric of the board, declared (<benchmark>/metric_specs.py)
    page: BenchmarkPage = None            # its page on the report site (<benchmark>/page.py; core/site.py renders it)
    unit: str = ""                        # what progress counts, in the user's words: "shot", "video" (issue 26)
    units_of: Callable[[BenchPaths, str], int] = None   # how many of them one item holds (its dataset file says)
    delivered: Callable = None            # (generator_dir, items) -> the items it has outputs for, where the
                                          # benchmark reads layouts of its own (ViStoryBench's official tree)

    @property
    def item_dim(self) -> str:
        """What one item is called, its partition dimension ("episode", "story", "case", "sample", "video"): each
        benchmark's wiring passes it to its ``BenchmarkPartitions``; core receives it from there."""
        return self.partitions.item_dim

    def items_with_outputs(self, generator_dir, items: list[str]) -> list[str]:
        """The items a generator folder has an entry for (a folder ``<item>`` or a file ``<item>.<ext>``)."""
        from pathlib import Path
        if not self.outputs_per_item:
            return list(items)
        if self.delivered is not None:
            return self.delivered(generator_dir, items)
        names = set()
        for p in Path(generator_dir).iterdir():
            names.add(p.name)
            if p.is_file():
                names.update((p.stem, p.name.split(".", 1)[0]))
        return [i for i in items if i in names]


def _entitybench() -> Benchmark:
    from bench_assets.entitybench import assets as entitybench
    from bench_assets.entitybench.dataset import discover_episodes
    from bench_assets.entitybench.wiring import P as ENTITYBENCH, load_episode
    from bench_assets.entitybench.metric_specs import METRICS as ENTITYBENCH_METRICS
    from bench_assets.entitybench.page import PAGE as ENTITYBENCH_PAGE
    return Benchmark(
        "entitybench", ENTITYBENCH, entitybench.ASSETS,
        lambda p: discover_episodes(p.benchmark_dir("entitybench") / "episodes"),
        ["entitybench_episode", "entitybench_entity_registry"],
        ["entitybench_outputs", "entitybench_grounding", "entitybench_pillar1", "entitybench_fidelity",
         "entitybench_action", "entitybench_presence_consistency", "entitybench_llm_consistency"],
        ["entitybench_dataset_statistics", "entitybench_leaderboard", "entitybench_gap_decay",
         "entitybench_effect_sizes", "entitybench_manifest"],
        "entitybench_leaderboard", {"slice": "all"}, metrics=ENTITYBENCH_METRICS, page=ENTITYBENCH_PAGE,
        unit="shot", units_of=lambda p, e: len(load_episode(p, e).shots))


def _vistorybench() -> Benchmark:
    from bench_assets.vistorybench import assets as vistorybench
    from bench_assets.vistorybench.dataset import discover_stories, load_story
    from bench_assets.vistorybench.layout import delivered
    from bench_assets.vistorybench.metric_specs import METRICS as VISTORYBENCH_METRICS
    from bench_assets.vistorybench.page import PAGE as VISTORYBENCH_PAGE
    return Benchmark(
        "vistorybench", vistorybench.P, vistorybench.ASSETS,
        lambda p: discover_stories(p.benchmark_dir("vistorybench")),
        vistorybench.ITEM_ASSETS, vistorybench.GENERATOR_ASSETS,
        ["vistorybench_inception_score", "vistorybench_leaderboard", "vistorybench_human_alignment"],
        "vistorybench_leaderboard", {"slice": "full"}, metrics=VISTORYBENCH_METRICS, page=VISTORYBENCH_PAGE,
        unit="shot", units_of=lambda p, s: len(load_story(p.benchmark_dir("vistorybench") / s).shots),
        delivered=delivered)


def _mbench() -> Benchmark:
    from bench_assets.mbench import assets as mbench
    from bench_assets.mbench.dataset import discover_cases
    from bench_assets.mbench.metric_specs import METRICS as MBENCH_METRICS
    from bench_assets.mbench.page import PAGE as MBENCH_PAGE
    return Benchmark(
        "mbench", mbench.P, mbench.ASSETS,
        lambda p: discover_cases(p.benchmark_dir("mbench") / "cases"),
        mbench.ITEM_ASSETS, mbench.GENERATOR_ASSETS, ["mbench_leaderboard"], "mbench_leaderboard", {"slice": "A"},
        metrics=MBENCH_METRICS, page=MBENCH_PAGE, unit="video", units_of=lambda p, c: 1)


def _locot2v() -> Benchmark:
    from bench_assets.locot2v import assets as locot2v
    from bench_assets.locot2v.dataset import discover_samples
    from bench_assets.locot2v.metric_specs import METRICS as LOCOT2V_METRICS
    from bench_assets.locot2v.page import PAGE as LOCOT2V_PAGE
    return Benchmark(
        "locot2v", locot2v.P, locot2v.ASSETS,
        lambda p: discover_samples(p.benchmark_dir("locot2v") / "samples"),
        locot2v.ITEM_ASSETS, locot2v.GENERATOR_ASSETS, locot2v.AGGREGATE_ASSETS, locot2v.LEADERBOARD, {"slice": "all"},
        metrics=LOCOT2V_METRICS, page=LOCOT2V_PAGE, unit="video", units_of=lambda p, s: 1)


def _narrativetrack() -> Benchmark:
    from bench_assets.bridges import narrativetrack_episodes
    from bench_assets.narrativetrack import assets as narrativetrack
    from bench_assets.narrativetrack.dataset import discover_videos
    from bench_assets.narrativetrack.metric_specs import METRICS as NARRATIVETRACK_METRICS
    from bench_assets.narrativetrack.page import PAGE as NARRATIVETRACK_PAGE
    return Benchmark(
        # its questions over EntityBench's generated episodes (bridges/) belong to its asset group
        "narrativetrack", narrativetrack.P, [*narrativetrack.ASSETS, *narrativetrack_episodes.ASSETS],
        lambda p: discover_videos(p.benchmark_dir("narrativetrack")),
        narrativetrack.ITEM_ASSETS, narrativetrack.GENERATOR_ASSETS,
        ["narrativetrack_leaderboard"],  # the released-QA assets run on demand (they need the authors' file)
        "narrativetrack_leaderboard", {"slice": "strict"}, outputs_per_item=False,
        metrics=NARRATIVETRACK_METRICS, page=NARRATIVETRACK_PAGE, unit="video", units_of=lambda p, v: 1)


class _Benchmarks(Mapping):
    """The registry, each entry built on first use: `bench evaluate --benchmark mbench` imports MBench's
    definitions only (a no-change rerun no longer pays for the other four). Iterating the names imports nothing;
    ``.values()`` / ``.items()`` build every entry, in this order."""

    def __init__(self, builders: dict[str, Callable[[], Benchmark]]):
        self._builders, self._built = builders, {}

    def __getitem__(self, name: str) -> Benchmark:
        if name not in self._built:
            self._built[name] = self._builders[name]()  # KeyError for an unknown name, as a dict
        return self._built[name]

    def __iter__(self):
        return iter(self._builders)

    def __len__(self) -> int:
        return len(self._builders)

    def __repr__(self) -> str:
        return f"BENCHMARKS({', '.join(self._builders)})"


BENCHMARKS: Mapping[str, Benchmark] = _Benchmarks({
    "entitybench": _entitybench, "vistorybench": _vistorybench, "mbench": _mbench, "locot2v": _locot2v,
    "narrativetrack": _narrativetrack})
