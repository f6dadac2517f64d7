"""NarrativeTrack's protocol manifest (checkpoints, judge, constants, calibrated face threshold) and its digest."""

from typing import Any

from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.narrativetrack import calibration
from bench_assets.narrativetrack import constants
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry


SLOTS = ("person_detector", "reid", "face", "image_embedder")
FACE_MERGE, FACE_CALIBRATION = calibration.face_merge_threshold(constants.FACE_MERGE_COSINE)
# the fixed tracklet-link thresholds (scripts/calibrate_links.py; issue 23: no longer learned from each file's pairs)
_LINKS = calibration.link_thresholds(None)
LINKS_VERSION = ("none" if _LINKS is None else f"{_LINKS['colour']:.4f}/"
                 f"{calibration.link_thresholds_doc()['reid']['threshold']:.4f}")


def manifest(models: ModelRegistry, judge: Judge) -> dict[str, Any]:
    slots = SLOTS + ((constants.SECOND_DETECTOR,) if constants.SECOND_DETECTOR else ())
    return build_manifest(benchmark=constants.BENCH, protocol=constants.PROTOCOL, models=models.manifest(slots),
                          judge=judge.fingerprint(),
                          constants={k: (list(v) if isinstance(v, tuple) else v)
                                     for k, v in constants.CONSTANTS.items()},
                          extra={"profile": models.profile,
                                 "reid_threshold": constants.REID_THRESHOLD[models.profile],
                                 "face_merge_cosine": FACE_MERGE,
                                 "face_merge_calibration": FACE_CALIBRATION,
                                 "link_thresholds": calibration.link_thresholds(models.status("reid").checkpoint),
                                 "tracker": "ByteTrack (own implementation; supervision 0.31 has none)",
                                 "context_offline": "heuristic: action from box motion, outfit and scene from "
                                                    "dominant colours (used where the judge gives no answer)"})


def protocol(models: ModelRegistry, judge: Judge) -> str:
    return protocol_digest(manifest(models, judge))
