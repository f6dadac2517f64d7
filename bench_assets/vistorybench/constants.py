"""ViStoryBench protocol id and every constant a number depends on (recorded in the manifest)."""
BENCH = "vistorybench"
PROTOCOL = "vistorybench-1.3"
DETECTOR_PROMPT = "character"
BOX_THRESHOLD = 0.25
TEXT_THRESHOLD = 0.25
OCCM_EPSILON = 1e-6
COPY_PASTE_TEMPERATURE = 0.01
AESTHETIC_EXCELLENT = 5.5
IS_SPLITS = 1
STARRED_SCALE = 100.0   # CSD, CIDS, copy-paste cosines x 100 (OCCM and alignment are 0-100 already)
SLOTS = ("character_detector", "face", "character_embedder", "style_csd", "inception", "aesthetic_v25")
CONSTANTS = {
    "detector_prompt": DETECTOR_PROMPT, "box_threshold": BOX_THRESHOLD, "text_threshold": TEXT_THRESHOLD,
    "matching": "hungarian (scipy linear_sum_assignment), no threshold; score = max over references",
    "cids_self": "strict upper triangle; 1.0 if matched once; 0 if never matched (counts)",
    "cids_cross": "mean over matched crops x references; 0 if never matched (counts)",
    "occm_epsilon": OCCM_EPSILON, "occm_detections": "raw count of 'character' boxes above threshold",
    "copy_paste_temperature": COPY_PASTE_TEMPERATURE, "copy_paste_reference": "first reference (00)",
    "inception_splits": IS_SPLITS, "aesthetic_excellent": AESTHETIC_EXCELLENT, "starred_scale": STARRED_SCALE,
    "alignment": "mean of the 4 aspect means (0-4) x 25; failed parse = n_failed",
    "face_pairs": "a crop without a face cannot match a realistic_human (NaN, never assigned)",
    "language": "from generator.yaml 'language' (default en); prompts and names in that language",
}
