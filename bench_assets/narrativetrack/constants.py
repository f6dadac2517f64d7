"""Every threshold and constant of the NarrativeTrack protocol (recorded in the manifest)."""
from __future__ import annotations

BENCH = "narrativetrack"
PROTOCOL = "narrativetrack-1.0"

# Pipeline (spec: frames at 1 fps; a video's index entry may override sample_fps)
SAMPLE_FPS = 1.0
DETECTOR_MIN_SCORE = 0.3          # paper: confidence threshold 0.3 for both detectors
DUPLICATE_CONTAINMENT = 0.85      # one detector's box inside another of its boxes (>= 85 % of its area): a duplicate
MERGE_IOU = 0.5                   # two detectors' boxes with IoU >= 0.5 are one entity; keep the higher score
SECOND_DETECTOR = None            # a slot name (e.g. "open_vocab_detector") to ensemble with person_detector
BYTETRACK = {"track_activation_threshold": 0.5, "lost_track_buffer_s": 1.0, "minimum_matching_threshold": 0.8,
             "low_score": 0.1}       # ByteTrack; the lost-track buffer is in seconds (frames = ceil(s x fps))
REID_THRESHOLD = {"paper": 0.7, "offline": 0.8}   # cosine for agglomerative (average-linkage) tracklet merging
MAIN_CHARACTERS = 4
MIN_TRACKLET_BOXES = 2            # shorter tracklets are noise (never an entity on their own)
FACE_BOXES_PER_TRACK = 8         # faces are looked for in up to this many evenly spaced boxes of each track
FACE_UPSCALE_HEIGHT = 320         # person crops are upscaled to this height before face detection
FACE_MERGE_COSINE = 0.45          # fallback only: the pipeline uses the calibrated value (face_calibration.json,
                                  # calibration.py), recorded in the manifest
FACE_SPLIT_COSINE = 0.15          # a tracklet whose face disagrees with its identity's face is split off
GAP_TOLERANCE_S = 2.5             # presence runs closer than this are one run: one missed sample at 1 fps (a 2 s
                                  # hole) is not a disappearance (vtest: a missed detection made a "reappear")
EDGE_TOLERANCE_S = 1.5            # "at the start" / "at the end" of the video
CUT_CHANGED_FRACTION = 0.4        # a shot cut: this fraction of pixels changes between consecutive sampled frames
CUT_COMPENSATED_FRACTION = 0.48   # ... and, judged on the samples alone, still changes once the camera's global
                                  # motion is undone (cuts.py)
CUT_ABRUPT_FRACTION = 0.316       # ... where the native frames are at hand instead: two consecutive native frames
                                  # between the samples still differ this much once the camera's motion is undone (a
                                  # cut is abrupt, a pan / parallax / passing object is spread over the second)
CUT_BLEND_RESIDUAL = 0.255        # ... or every native frame between them is this close to a mix of the two ends (a
                                  # dissolve: no abrupt pair; cuts.blend_residual)
CUT_BLACK_LEVEL = 9.4             # a frame whose 95th grey percentile is below this is black; black <-> picture is a
                                  # cut (a cut from black to a dark shot changes few pixels by much)
# the four fitted on calibration stills only by scripts/calibrate_cuts.py (Youden J: pans, zooms, rotations, parallax
# pans, passing occluders, at 1 fps and frame by frame at 25 fps, vs cuts between and within calibration stills and
# 6-24 frame dissolves; black: 0-2 % vs 15-40 % exposures); issue 23, redesigned after the held-out case cuts_moving_camera failed
TRACKLET_SPLIT_COSINE = 0.75      # consecutive boxes of one track below this ReID cosine: two tracklets
# Stitching tracklets that IoU tracking broke (a walker moves about a box width between 1 fps samples): the ReID link
# and torso-colour thresholds are fixed, fitted on the calibration videos only (scripts/calibrate_links.py ->
# link_calibration.json; issue 23: no longer learned from each file's own pairs, which made identities depend on the
# rest of the file; the profile's REID_THRESHOLD for a ReID model the file was not fitted with); a link also needs
# the box within LINK_SPEED box heights per second of the last one (people walk about one body height per second)
# and heights within LINK_HEIGHT_RATIO, at most LINK_MAX_GAP_S apart
LINK_SPEED = 1.5
LINK_HEIGHT_RATIO = 1.5
LINK_MAX_GAP_S = 2.0
LINK_MIN_PAIRS = 10
LINK_POSITIVE_IOU = 0.5           # torso-colour calibration: consecutive boxes overlapping this much are one person
# Motion links (flow_links.py, issue 23): each box is carried to the next sample through the native frames between
# them by dense optical flow (OpenCV DIS, its MEDIUM preset) on grey frames of FLOW_HEIGHT rows (the same working
# size for any copy of a file), by the median flow in the central FLOW_INNER share of the box (a walker's box is about
# half background); linked one to one where the carried box overlaps the next one at LINK_POSITIVE_IOU (at their mean
# size). Conventions, not fitted; scripts/check_flow_links.py measures the links on the calibration videos.
FLOW_HEIGHT = 240
FLOW_INNER = 0.5
COLOUR_FALLBACK = 0.0             # torso-colour agreement where there is no link_calibration.json: no check
FACE_MIN_HEIGHT = 15              # a face under this many native pixels carries no identity (campus walkers: 5-12 px)
FACE_MIN_FRACTION = 15 / 576       # the same limit as a share of the frame height (15 px of the campus' 576 rows),
                                  # so a resized copy keeps the same faces; FACE_MIN_HEIGHT where no height is known
VERIFY_FACE_CROPS = 6             # face crops per identity sent to the judge for verification
VERIFY_MODELS: tuple[str, ...] = ()   # judge model ids for the majority vote; () = the configured judge model
CONTEXT_FRAMES = 4                # frames per segment shown to the judge with the green box
WALK_SPEED = 0.04                 # |dx| in box heights per second above which a person is walking
DEPTH_SPEED = 0.08                # relative box-height change per second above which they move in depth
# Offline attributes compare as measured quantities (states.py): colour-share histograms by total variation, motion
# vectors in box heights per second. Within STATE_TOLERANCE: the same state; a change needs CHANGE_MARGIN (between
# the two: unsure, and the attribute asks no change question). Set from the distances measured between segments of
# one person in one outfit / place on the real clips (carphone, vtest) and between different outfits.
STATE_TOLERANCE = 0.25
CHANGE_MARGIN = 0.5
ACTION_MARGIN = 2.0               # an action label must hold with the speed thresholds halved and doubled

# QA generation
QA_SEED = 20260101
DIMENSIONS = ("EE", "AC", "OC", "SC", "EA")
FORMATS = ("binary", "mc", "ordering")
DIRECTIONS = ("start_to_later", "later_to_start", "agnostic")
ORDERING_DIMENSIONS = ("AC", "OC", "SC")
N_VARIANTS = 5
NONE_OPTION = "None of the above"
NEAR_DUPLICATE_JACCARD = 0.8      # lexical option filter (always on; the LLM filter adds to it)

# Evaluation
ANSWER_FRAMES = 20
RANDOM_BASELINE = {"binary": 50.0, "mc": 25.0, "ordering": 100.0 / 6}

CONSTANTS = {k: v for k, v in dict(globals()).items() if k.isupper() and not k.startswith("_")}
