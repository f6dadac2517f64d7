"""EntityBench wiring shared by the asset modules (input_assets.py, metric_assets.py, aggregate_assets.py;
assets.py only assembles them): partition keys, the protocol digest, substitute labels and step metadata."""

from typing import Any, Optional

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue

from bench_assets.core.automation import file_digest, files_digest, input_version
from bench_assets.core.manifest import protocol_digest
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.entitybench import constants, counts, dataset
from bench_assets.entitybench.constants import BENCH, CONSTANTS, PROTOCOL
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths

METRIC_GROUP = "entitybench"
P = BenchmarkPartitions(BENCH, "episode")   # generator x episode (core/partitions.py)


def split(context: AssetExecutionContext) -> tuple[str, str]:
    return P.split(context.partition_key)


def episode_path(paths: BenchPaths, episode_id: str):
    return paths.benchmark_dir(BENCH) / "episodes" / f"{episode_id}.json"


def load_episode(paths: BenchPaths, episode_id: str) -> dataset.Episode:
    return dataset.load_episode(episode_path(paths, episode_id))


# Content digests of the files each input asset reads (core/automation.py): an edited episode or a replaced,
# added or deleted shot file marks exactly its partitions, and what is downstream of them, stale.
@input_version("entitybench_episode")
def episode_version(paths: BenchPaths, episode_id: str) -> str:
    return file_digest(episode_path(paths, episode_id))


@input_version("entitybench_outputs")
def shots_version(paths: BenchPaths, partition_key: str) -> str:
    generator, episode_id = P.split(partition_key)
    folder = paths.generator_dir(generator) / episode_id
    return files_digest((f.name, f) for f in sorted(folder.iterdir()) if f.is_file()) if folder.is_dir() else \
        files_digest([])


GROUNDING_SLOTS = ["open_vocab_detector", "clip_b32", "text_embedder"]


def protocol(models: ModelRegistry, names: list[str], judge: Optional[Judge] = None,
             gate: Optional[str] = None) -> str:
    """Digest of what decides a number's meaning here: checkpoints, fingerprints, every constant and threshold,
    the protocol id, and the judge where one answers. Families fed by grounding crops pass GROUNDING_SLOTS, so
    crops from the offline detector and from GroundingDINO are never marked comparable; gated families pass the
    fidelity gate's state (judged.gate_state: ungated, or gated by which judge), so rows under different judges or
    gate states are never comparable either. Where a judge answers, the prompt set in force
    (judging.prompt_set_id: ours from the paper, or the authors' texts with their digest) is part of it, so
    answers to different prompt sets are never marked comparable."""
    from bench_assets.entitybench.judging import prompt_set_id
    prompts = prompt_set_id() if judge is not None else "paper"
    return protocol_digest({"protocol": PROTOCOL, "models": slot_manifest(models, names), "constants": CONSTANTS,
                            **({"judge": judge.fingerprint()} if judge is not None else {}),
                            # the default set keeps the digests recorded before there was a choice
                            **({"judge_prompts": prompts} if prompts != "paper" else {}),
                            **({"gate": gate} if gate is not None else {})})


def label_substitutes(df: pd.DataFrame, models: ModelRegistry) -> None:
    """Per row, the substitutes that produced a value under a metric id: the slots its spec names whose
    checkpoint is not the paper's (e.g. EfficientNet-Lite0 for DINOv2), and CLIP missing for grounded metrics."""
    constants.label_substitutes(df, models)


def evaluator_metadata(df: pd.DataFrame) -> dict:
    n, why = counts.evaluator_summary(df)
    return {"evaluator_failures": n, "evaluator_failure_reasons": MetadataValue.text(why or "none")}


def slot_manifest(models: ModelRegistry, names: list[str]) -> dict[str, Any]:
    return models.manifest(names)


def item_metadata(df: pd.DataFrame) -> dict:
    items = df[df.level == "item"]
    return {r.metric_id: (float(r.value) if pd.notna(r.value) else "None") for r in items.itertuples()}



# Issue 25: the model slots each asset loads (core/slots.py). A weights change re-runs exactly the assets that
# load its slot (and what reads them); fidelity loads none (its crops come from grounding, which re-runs). A slot
# named only in a row's protocol is not loaded here. The leaderboard and manifest record every slot's manifest.
def _declare_slots():
    from bench_assets.core.slots import declare_slots
    from bench_assets.entitybench.pillar1 import PILLAR1_SLOTS
    table = {"entitybench_grounding": ("open_vocab_detector", "clip_b32"),
             "entitybench_pillar1": tuple(PILLAR1_SLOTS),
             "entitybench_fidelity": (),
             "entitybench_action": ("open_vocab_detector",),
             "entitybench_presence_consistency": ("image_embedder", "face"),
             "entitybench_llm_consistency": ("image_embedder",)}
    every = tuple(sorted({s for v in table.values() for s in v} | set(GROUNDING_SLOTS)))
    declare_slots({**table, "entitybench_leaderboard": every, "entitybench_manifest": every})


_declare_slots()
