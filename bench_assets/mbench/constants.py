"""MBench's constants: the benchmark and protocol ids, the model slots it reads, the tracks table's columns and
every constant and threshold that decides a number's meaning (the protocol digest and manifest hash them). No
Dagster."""

from bench_assets.mbench import geometry
from bench_assets.mbench import identity_calibration as IC
from bench_assets.mbench import metrics
from bench_assets.mbench import pipeline as PL
from bench_resources.models import face as face_model

BENCH = "mbench"
PROTOCOL = "mbench-1.1"
SLOTS = ("pose", "image_embedder", "face", "person_detector", "open_vocab_detector", "object_segmenter", "style_vgg",
         "clip_b32")
TRACK_COLUMNS = ["kind", "frame", "box", "reason", "track", "embedding", "person_box", "threshold", "mask",
                 "mask_source", "quality", "domain"]
CONSTANTS = {"visual_odometry": geometry.VO_DEFAULT.as_dict(), "revisit_pair": geometry.PAIR_DEFAULT.as_dict(),
             "identity_frames": PL.IDENTITY_FRAMES,
             "identity_thresholds": {k: {"max_cosine_distance": v, "source": src}
                                     for k, (v, src) in metrics.IDENTITY_THRESHOLDS.items()},
             "identity_calibration": metrics.SFACE_CALIBRATION,
             # identity only where the video's faces read as real (issue 37): drawn / uncertain -> None + reason
             "face_domain": {"classifier": "core/face_domain.json", "sha256_8": IC.DOMAIN_VERSION,
                             "rule": "core/face_calibration.py classify_faces over every face identity tracks"},
             # a face below one of these is counted apart in identity's detail (the paper's value tracks every face)
             "face_quality_floors": {"min_confidence": face_model.QUALITY_MIN_CONFIDENCE,
                                     "min_size_px": face_model.QUALITY_MIN_SIZE_PX,
                                     "min_blur": face_model.QUALITY_MIN_BLUR},
             "lighting_alpha": metrics.LIGHTING_ALPHA, "lighting_tau": metrics.LIGHTING_TAU,
             "trigger_frames": PL.TRIGGER_FRAMES,
             "text_frames_per_segment": PL.TEXT_FRAMES_PER_SEGMENT,
             "revisit_T": {"translation": geometry.REVISIT_T_TRANSLATION, "angle_deg": geometry.REVISIT_T_ANGLE_DEG,
                           "top": geometry.REVISIT_T_TOP},
             "revisit_A": {"max_pairs": geometry.REVISIT_A_MAX, "angle_deg": geometry.REVISIT_A_ANGLE_DEG,
                           "min_gap_fraction": geometry.REVISIT_MIN_GAP_FRACTION},
             "geometry_min_object_matches": PL.MIN_OBJECT_MATCHES,
             "object_mask": "object_segmenter slot (SAM 2 video propagation prompted on the first frame with the "
                            "case's box / the first-frame detection) when available; else (offline substitute) the "
                            "box carried by the full pose as a fronto-parallel plane at its triangulated depth "
                            "(rotation only without depth); each row records mask_source",
             "object_mask_min_pixels": PL.MIN_MASK_PIXELS,
             "geometry_warp": "homography on matches inside the object mask (or box), else K R K^-1 from the "
                              "trajectory",
             "errors": "pixels at the video's resolution; per pair the median over RANSAC-consistent matches; "
                       "score exp(-E); a forgotten return view scores 0",
             "a_mode_box": "the case's box in init-frame pixels, rescaled to the output's resolution"}
