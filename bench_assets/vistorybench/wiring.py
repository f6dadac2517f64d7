"""ViStoryBench wiring shared by the asset modules (input_assets.py, metric_assets.py, aggregate_assets.py;
assets.py only assembles them): the partitions (generator x story), the group, a generator's declared language
and the identity encoders loaded from their slots."""

from dagster import Failure

from bench_assets.core.automation import folder_digest, input_version
from bench_assets.core.generators import GeneratorError, read_generator
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.slots import declare_slots, load_slot
from bench_assets.vistorybench import characters, dataset
from bench_assets.vistorybench.constants import BENCH
from bench_resources.device import Device
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths

P = BenchmarkPartitions(BENCH, "story", "stories")
GROUP = "vistorybench"


def generator_language(paths: BenchPaths, generator: str) -> str:
    try:
        card = read_generator(paths.generator_dir(generator)).card
    except (GeneratorError, FileNotFoundError) as e:
        raise Failure(f"generator {generator!r}: {e}") from None
    lang = card.get("language", "en")
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
    return folder_digest(paths.generator_dir(generator) / sid)


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
