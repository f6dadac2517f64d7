"""LoCoT2V-Bench ids and the constants of the spec's decisions (recorded in the manifest)."""
from __future__ import annotations

BENCH = "locot2v"
PROTOCOL = "locot2v-1.0"

HERD_DIMENSIONS = ("Emotional Response", "Narrative Flow", "Character Development", "Visual Style", "Themes",
                   "Interpretive Depth", "Overall Impression")
CLARITY_IDS = ("theme_clarity", "logical_structure", "information_completeness", "information_consistency")
TEMPORAL_IDS = ("dynamic_degree", "motion_smoothness", "warping_error", "semantic_consistency",
                "temporal_flickering", "transition_smoothness", "human_action",
                "intra_event_subject_consistency", "intra_event_background_consistency",
                "inter_event_subject_consistency", "inter_event_background_consistency")
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "static_quality": ("aesthetic_quality", "technical_quality"),
    "text_video_alignment": ("overall_alignment", "event_alignment"),
    "temporal_quality": TEMPORAL_IDS,
    "content_clarity": CLARITY_IDS,
    "herd": tuple(f"herd.{d}" for d in HERD_DIMENSIONS),
}
SUB_DIMENSIONS: tuple[str, ...] = tuple(m for ms in DIMENSIONS.values() for m in ms)   # the 26
assert len(SUB_DIMENSIONS) == 26
EVENT_FIELDS = ("subject", "setting", "action", "camera motion")

# static quality
AQ_FPS = 1.0                      # aesthetic predictor v2.5 on one frame per second
RRUB_DEFAULT = 10.0               # uncalibrated: the predictor's nominal maximum (spec decision)
RRUB_SOURCE_DEFAULT = "default 10 (uncalibrated; paper: top-10 % mean over Text-to-Image-2M data_1024_10K)"
RRUB_TOP = 0.10
TQ_MAX_CLIP_SECONDS = 10.0        # DOVER++ on clips shorter than 10 s, mean over clips

# temporal quality
ANALYSIS_FPS = 8.0                # frame-pair metrics run on frames resampled to at most 8 fps (VBench's rate)
DYNAMIC_TOP_FRACTION = 0.05       # VBench dynamic degree: mean of the top 5 % flow magnitudes ...
DYNAMIC_THRESHOLD_PER_256 = 6.0   # ... above 6 * min(H, W) / 256 ...
DYNAMIC_COUNT_PER_16 = 4          # ... in at least round(4 * frames / 16) pairs -> the video is dynamic
STATIC_TOP_FRACTION = 0.02        # flickering: static pairs have top-2 % flow magnitude ...
STATIC_FLOW_PER_256 = 3.0         # ... below 3 * min(H, W) / 256
WARP_FB_TOLERANCE_PX = 1.0        # forward-backward check for non-occluded pixels
TRANSITION_K = 4                  # window of 2k + 1 frames
TRANSITION_B = float((2 * TRANSITION_K) ** 2)
TRANSITION_C = 0.01
TRANSITION_WEIGHTS = (0.25, 0.25, 0.25, 0.25)   # (1 - MAE), SSIM, cos(embeddings), motion consistency
# motion consistency 1 / (1 + |m_j - median m| / max(median m, floor)): scale-free (a deviation relative to the
# window's own motion; an absolute 1 px made a steady real pan at 5 px/frame score 0.88 and depended on resolution),
# with a 1 px floor so sub-pixel flow noise in a still shot is not amplified
MOTION_FLOOR_PX = 1.0
SCENE_DETECTOR = "ContentDetector"
SCENE_THRESHOLD = 27.0            # PySceneDetect's default
SCENE_MIN_LEN_FRAMES = 4
EVENT_FRAMES = 8                  # frames per event for subject / background embeddings
EVENT_OVERSAMPLE = 3              # frames decoded per event frame used: event boundaries are known after the pass
EVENT_SEGMENTATION = ("event boundaries at PySceneDetect shot cuts (Hungarian-matched to the uniform boundaries "
                      "within half an event; exactly n_events - 1 cuts are the boundaries), else the uniform split")
GROUND_WEAK_CONF = 0.5            # offline grounding status rule (as EntityBench): confidence stands in for a_clip
SAME_SUBJECT_IOU = 0.5            # two descriptions ground the same subject when their boxes overlap this much

# judge
JUDGE_FRAMES = 16                 # frames sampled uniformly for every video question
CC_ROUNDS = 3
CC_TEMPERATURE = 0.7
HERD_QUESTIONS_PER_DIMENSION = 6
ACTION_SMOOTHNESS_QUESTIONS = ("Was the action continuous without abrupt interruptions?",
                               "Did the action appear natural and not stiff?",
                               "Did the action maintain fluid transitions from start to finish?")

CONSTANTS = {
    "aq_fps": AQ_FPS, "rrub_top": RRUB_TOP, "tq_max_clip_seconds": TQ_MAX_CLIP_SECONDS,
    "analysis_fps": ANALYSIS_FPS, "dynamic_top_fraction": DYNAMIC_TOP_FRACTION,
    "dynamic_threshold_per_256": DYNAMIC_THRESHOLD_PER_256, "dynamic_count_per_16": DYNAMIC_COUNT_PER_16,
    "static_top_fraction": STATIC_TOP_FRACTION, "static_flow_per_256": STATIC_FLOW_PER_256,
    "warp_fb_tolerance_px": WARP_FB_TOLERANCE_PX, "transition_k": TRANSITION_K, "transition_b": TRANSITION_B,
    "transition_c": TRANSITION_C, "transition_weights": list(TRANSITION_WEIGHTS),
    "motion_consistency": "1 / (1 + |m_j - median m| / max(median m, floor px))", "motion_floor_px": MOTION_FLOOR_PX, "scene_detector": SCENE_DETECTOR,
    "scene_threshold": SCENE_THRESHOLD, "scene_min_len_frames": SCENE_MIN_LEN_FRAMES, "event_frames": EVENT_FRAMES, "event_oversample": EVENT_OVERSAMPLE,
    "ground_weak_conf": GROUND_WEAK_CONF, "same_subject_iou": SAME_SUBJECT_IOU,
    "subject_grounding": "core/grounding.py candidates: a = a_clip x a_sharp x a_area, best present box per frame",
    "event_segmentation": EVENT_SEGMENTATION, "judge_frames": JUDGE_FRAMES, "cc_rounds": CC_ROUNDS,
    "cc_temperature": CC_TEMPERATURE, "herd_questions_per_dimension": HERD_QUESTIONS_PER_DIMENSION,
    "scale": "percent; cosine similarities clipped at 0 and x100",
    "ea_matching": "Hungarian maximum-weight matching on clipped description cosine; zero-weight pairs unmatched",
    "motion_smoothness": "flow-based frame interpolation (flow slot) in place of VBench's AMT",
}
