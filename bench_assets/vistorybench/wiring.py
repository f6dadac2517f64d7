"""ViStoryBench wiring shared by the asset modules (input_assets.py, metric_assets.py, aggregate_assets.py;
assets.py only assembles them): the partitions (generator x story), the group, a generator's declared language,
where its story folders are (its own layout or the official tree, layout.py) and the identity encoders loaded from
their slots."""

from pathlib import Path

from dagster import Failure

from bench_assets.core.automation import folder_digest, input_version
from bench_assets.core.generators import GeneratorError, read_generator
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.slots import declare_slots, load_slot
from bench_assets.vistorybench import characters, dataset, layout
from bench_assets.vistorybench.constants import BENCH
from bench_resources.device import Device
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths

P = BenchmarkPartitions(BENCH, "story", "stories")
GROUP = "vistorybench"


def generator_layout(paths: BenchPaths, generator: str) -> layout.Layout:
    """Where the generator's story folders are: its own ``<NN>/`` or the official tree the card narrows."""
    gdir = paths.generator_dir(generator)
    try:
        return layout.resolve(gdir, read_generator(gdir).card)
    except (GeneratorError, FileNotFoundError) as e:      # LayoutError is a GeneratorError
        raise Failure(f"generator {generator!r}: {e}") from None


def story_outputs(paths: BenchPaths, generator: str, story_id: str) -> Path:
    return generator_layout(paths, generator).story_dir(story_id)


def generator_language(paths: BenchPaths, generator: str) -> str:
    """The official layout's path names the language; otherwise the card's ``language`` (default en)."""
    try:
        card = read_generator(paths.generator_dir(generator)).card
    except (GeneratorError, FileNotFoundError) as e:
        raise Failure(f"generator {generator!r}: {e}") from None
    found = generator_layout(paths, generator)
    lang = found.language if found.official else card.get("language", "en")
    if lang not in dataset.LANGUAGES:
        raise Failure(f"generator {generator!r}: language {lang!r} is not one of {list(dataset.LANGUAGES)}")
    return lang


def encoders(models: ModelRegistry, device: Device) -> characters.Encoders:
    face, face_reason = load_slot(models, device, "face")
    feats, feats_reason = load_slot(models, device, "character_embedder")
    return characters.Encoders(face, face_reason, feats, feats_reason)


# Content digests of the files the input assets read (core/automation.py): an edited story (its JSON or a reference
# image) or a replaced shot image marks exactly its partitions, and what is downstream of them, stale.
@input_version("vistorybench_story")
def story_version(paths: BenchPaths, story_id: str) -> str:
    return folder_digest(paths.benchmark_dir(BENCH) / story_id)


@input_version("vistorybench_outputs")
def shots_version(paths: BenchPaths, partition_key: str) -> str:
    generator, sid = P.split(partition_key)
    try:
        folder = story_outputs(paths, generator, sid)
    except Failure:   # an unreadable layout: the outputs asset names it; the digest is of what would be read
        folder = paths.generator_dir(generator) / sid
    return folder_digest(folder)


# Issue 25: the model slots each asset loads (core/slots.py): a weights change re-runs exactly the assets that load
# its slot (and what reads them). Alignment asks the judge over matched crops (the matches re-run for a detector).
_ENCODERS = ("face", "character_embedder")   # ``encoders``
declare_slots({"vistorybench_references": ("character_detector", "style_csd", *_ENCODERS),
               "vistorybench_matches": ("character_detector", *_ENCODERS),
               "vistorybench_scores": ("style_csd", "aesthetic_v25", "character_detector", *_ENCODERS),
               "vistorybench_alignment": (),
               "vistorybench_inception_score": ("inception",),
               "vistorybench_leaderboard": ("character_detector", "style_csd", "aesthetic_v25", "inception",
                                            *_ENCODERS)})
