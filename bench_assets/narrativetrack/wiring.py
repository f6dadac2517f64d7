"""The benchmark's Dagster partitions and group, shared by the asset modules (assets.py only assembles them)."""

import json

from bench_assets.core.automation import file_digest, input_version
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.narrativetrack import constants, dataset
from bench_resources.paths import BenchPaths


BENCH = constants.BENCH
P = BenchmarkPartitions(BENCH, "video")
GROUP = "narrativetrack"


def data_dir(paths: BenchPaths):
    return paths.benchmark_dir(BENCH)


# The content digest of what the video asset reads (core/automation.py): the video file and its own index entry
# (path, sampling rate; not the whole index, so editing one entry marks only that video's partitions stale).
@input_version("narrativetrack_video")
def video_version(paths: BenchPaths, video_id: str) -> str:
    v = dataset.load_video(data_dir(paths), video_id)
    return file_digest(v.path) + ":" + json.dumps([v.path, v.sample_fps], sort_keys=True)


# Issue 25: the model slots each asset loads (core/slots.py): a weights change re-runs exactly the assets that load
# its slot (and what reads them). Identities and answers read the profile's threshold / the slots' manifest only;
# their inputs (re-id, faces) re-run for a slot change upstream.
def _declare_slots():
    from bench_assets.core.slots import declare_slots
    detectors = ("person_detector",) + ((constants.SECOND_DETECTOR,) if constants.SECOND_DETECTOR else ())
    declare_slots({"narrativetrack_detections": detectors,
                   "narrativetrack_reid": ("reid",),
                   "narrativetrack_faces": ("face",),
                   "narrativetrack_identities": (),
                   "narrativetrack_answers": ()})


_declare_slots()
