"""MBench wiring shared by the asset modules (input_assets.py, metric_assets.py, aggregate_assets.py; assets.py
only assembles them): partitions, the protocol digest, the case row, the output video and its init frame."""

import json
from contextlib import contextmanager
from typing import Any, Optional

import pandas as pd
from dagster import Failure

from bench_assets.core.automation import files_digest, input_version
from bench_assets.core.manifest import protocol_digest
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.mbench import dataset
from bench_assets.mbench.constants import BENCH, CONSTANTS, PROTOCOL, SLOTS
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths

P = BenchmarkPartitions(BENCH, "case")
GROUP = "mbench"


def slot_manifest(models: ModelRegistry) -> dict[str, Any]:
    return models.manifest(SLOTS)


def protocol(models: ModelRegistry, judge: Optional[Judge] = None) -> str:
    return protocol_digest({"protocol": PROTOCOL, "models": slot_manifest(models), "constants": CONSTANTS,
                            "judge": judge.fingerprint() if judge is not None else None})


def case_of(df: pd.DataFrame) -> dataset.Case:
    return dataset.parse_case(json.loads(df["case_json"].iloc[0]), "table")


def case_path(paths: BenchPaths, case_id: str):
    return paths.benchmark_dir(BENCH) / "cases" / f"{case_id}.json"


# Content digests of the files the input assets read (core/automation.py): an edited case (a fixed box) or its init
# frame, or a replaced output video, marks exactly its partitions, and what is downstream of them, stale.
@input_version("mbench_case")
def case_version(paths: BenchPaths, case_id: str) -> str:
    files = [("case", case_path(paths, case_id))]
    init = json.loads(case_path(paths, case_id).read_text()).get("init_frame")
    if isinstance(init, str) and init:
        files.append(("init_frame", paths.benchmark_dir(BENCH) / "frames" / init))
    return files_digest(files)


@input_version("mbench_poses", also_read_by=("mbench_tracks", "mbench_trigger"))
def video_version(paths: BenchPaths, partition_key: str) -> str:
    generator, case_id = P.split(partition_key)
    return files_digest([("video", dataset.output_video(paths.generator_dir(generator), case_id))])


def video(paths: BenchPaths, generator: str, case_id: str) -> VideoSource:
    """The case's output video, probed (nothing decoded yet): each step states its frames, then decodes once."""
    path = dataset.output_video(paths.generator_dir(generator), case_id)
    if path.is_dir():
        raise Failure(f"generator {generator!r}, case {case_id}: {path} is a directory, not a video")
    if not path.is_file():
        raise Failure(f"generator {generator!r}, case {case_id}: no output video {path}")
    with decoding(generator, case_id):
        return VideoSource(path)


@contextmanager
def decoding(generator: str, case_id: str):
    """A video that fails while decoding (truncated, corrupt) is one clear error naming the item."""
    try:
        yield
    except DecodeError as e:
        raise Failure(f"generator {generator!r}, case {case_id}: {e}") from None


def init_size(paths: BenchPaths, case: dataset.Case) -> Optional[tuple[int, int]]:
    """(width, height) of the case's init frame: the pixel space of its ground-truth box."""
    if not case.init_frame:
        return None
    p = paths.benchmark_dir(BENCH) / "frames" / case.init_frame
    if not p.is_file():
        raise Failure(f"case {case.case_id}: init frame {p} is missing (its box cannot be placed in the output)")
    from PIL import Image
    with Image.open(p) as im:
        return im.size


# Issue 25: the model slots each asset loads (core/slots.py): a weights change re-runs exactly the assets that load
# its slot (and what reads them). The trigger names the slots only in its rows' protocol; the leaderboard records
# every slot's manifest.
def _declare_slots():
    from bench_assets.core.slots import declare_slots
    declare_slots({"mbench_poses": ("pose",),
                   "mbench_tracks": ("open_vocab_detector", "object_segmenter", "face", "person_detector"),
                   "mbench_trigger": (),
                   "mbench_scores": ("image_embedder", "style_vgg", "clip_b32", "object_segmenter"),
                   "mbench_leaderboard": SLOTS})


_declare_slots()
