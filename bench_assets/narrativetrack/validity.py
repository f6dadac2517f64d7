"""NarrativeTrack validity on real footage (``bench validate --benchmark narrativetrack``).

NarrativeTrack's questions rest on its identities: if two people share an identity, every gold answer about either
is suspect. The check runs the normal per-video assets on real clips with hand-checked labels
(``data/footage/*.yaml``): people (or face centres) at sampled frames, which are the same person and which are not.
For every pair of labelled appearances the pipeline's identities must agree with the labels (same person -> same
identity, different people -> different identities). The table row compares the pipeline's pair agreement with the
ground truth's (1.0): an invariance with zero tolerance, so one merged or split pair fails it.
"""
from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from bench_assets.core import footage
from bench_assets.core import validity as core_validity
from bench_assets.core.kernels import iou

BENCH = "narrativetrack"
TRUTH, PIPELINE = "ground_truth", "pipeline"
METRIC = "identity_pair_agreement"
# one row per clip: a real man alone (carphone), an animated dialogue (Megamind), pedestrians on a campus (vtest)
CLIPS = ("carphone", "dialogue", "campus")
CASES = [core_validity.Case("identities",
                            "labelled appearances of real people (same / different) vs the pipeline's identities",
                            PIPELINE, [core_validity.Expect(METRIC, 0, 1e-9, units=f"^{c}$") for c in CLIPS],
                            sources=("carphone_pristine.mp4", "Megamind.avi", "vtest.avi"))]


def labels() -> dict[str, dict]:
    """clip -> {video_id, labels: [(person, native frame, point or box)]} from the footage sidecars."""
    car = footage.ground_truth("carphone_pristine.mp4")["people"]["car_man"]["boxes"]
    mm = footage.ground_truth("Megamind.avi")["characters"]
    vt = footage.ground_truth("vtest.avi")["people"]
    return {
        "carphone_pristine.mp4": {"video_id": "carphone", "labels": [("car_man", f, ("box", car[f])) for f in (0, 60)]},
        "Megamind.avi": {"video_id": "dialogue", "labels": [
            (who, f, ("point", c)) for who in ("woman", "man") for f, c in mm[who]["face_centres"].items()]},
        "vtest.avi": {"video_id": "campus", "labels": [
            (who, f, ("box", b)) for who in ("red_jacket_man", "blonde_woman") for f, b in vt[who]["boxes"].items()]},
    }


def build_suite(work_dir: Path) -> core_validity.Suite:
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    (data / BENCH).mkdir(parents=True, exist_ok=True)
    gens.mkdir(parents=True, exist_ok=True)
    lab = labels()
    (data / BENCH / "videos").mkdir(parents=True, exist_ok=True)
    for clip in lab:   # media stays inside the dataset folder: a copy of the cached clip
        shutil.copyfile(footage.footage_path(clip), data / BENCH / "videos" / clip)
    (data / BENCH / "videos.json").write_text(json.dumps({"videos": [
        {"video_id": v["video_id"], "file": f"videos/{clip}"} for clip, v in lab.items()]}, indent=2))
    return core_validity.Suite(BENCH, data, gens, TRUTH, CASES,
                   unit_values=lambda store: unit_values(store, {v["video_id"]: v["labels"] for v in lab.values()}),
                   thresholds=thresholds())


# Constants set by looking at validation footage before the split existed (constants.py says which clip): they have
# no held-out rate and are listed as such, not hidden (issue 23). The per-video ReID link and torso-colour
# thresholds are not fitted on any source: they are learned from each file's own pairs (pipeline.link_threshold).
IN_SAMPLE = {
    "LINK_SPEED / LINK_HEIGHT_RATIO / LINK_MAX_GAP_S": "stitching gates set on the campus clip (vtest.avi)",
    "GAP_TOLERANCE_S": "set on the campus clip (vtest.avi: a missed detection made a reappearance)",
    "FACE_MIN_HEIGHT": "set on the campus clip's 5-12 px faces (vtest.avi)",
    "STATE_TOLERANCE / CHANGE_MARGIN": "set from distances measured on carphone and vtest",
}


def thresholds() -> list[dict]:
    """The face-merge threshold's held-out rates (calibration.py's file) and the constants without any."""
    from bench_assets.core.face_calibration import threshold_rows
    from bench_assets.narrativetrack import calibration
    rows = threshold_rows(calibration.load(), "FACE_MERGE_COSINE")
    rows += [{"threshold": k, "value": None, "fitted_on": [], "held_out_on": [],
              "note": f"in-sample: {v}; no held-out rate"} for k, v in IN_SAMPLE.items()]
    rows.append({"threshold": "link / colour threshold per video", "value": None,
                 "note": "learned from each file's own pairs (depends on the rest of the file)"})
    return rows


def _contains(box, point) -> bool:
    return box[0] <= point[0] <= box[2] and box[1] <= point[1] <= box[3]


def identity_at(frames: pd.DataFrame, dets: pd.DataFrame, idents: pd.DataFrame, frame: int, where) -> object:
    """Pure: the pipeline identity of the detection at the sampled frame nearest ``frame`` (within 2 native
    frames) that contains the labelled point or best overlaps the labelled box; None when nothing matches."""
    if frames.empty:
        return None
    near = frames.iloc[(frames["frame_index"] - frame).abs().argsort()[:1]]
    if abs(int(near["frame_index"].iloc[0]) - frame) > 2:
        return None
    sample = int(near["sample"].iloc[0])
    d = dets[dets["sample"] == sample]
    kind, ref = where
    best, score = None, 0.0
    for det, box in zip(d["det"], d["box"]):
        box = [float(x) for x in box]
        s = (1.0 / max(1.0, (box[2] - box[0]) * (box[3] - box[1])) if _contains(box, ref) else 0.0) \
            if kind == "point" else iou(box, ref)
        if s > score:
            best, score = det, s
    if best is None or (kind == "box" and score < 0.3):
        return None
    # the identity of every person (``identity``), not only of the 4 main characters (``entity``): the check is whether
    # the pipeline tells people apart, not whom it later picks to ask about
    col = "identity" if "identity" in idents else "entity"
    hit = idents[(idents["sample"] == sample) & (idents["det"] == best)][col]
    return None if hit.empty or pd.isna(hit.iloc[0]) else int(hit.iloc[0])


def pair_agreement(labelled: list[tuple[str, object]]) -> tuple[float, int]:
    """Pure: the share of labelled pairs whose identities agree with the labels (an unmatched appearance is a
    disagreement: the pipeline lost the person) and the number of pairs."""
    pairs = list(itertools.combinations(labelled, 2))
    ok = sum(1 for (pa, ea), (pb, eb) in pairs
             if ea is not None and eb is not None and ((pa == pb) == (ea == eb)))
    return (ok / len(pairs) if pairs else float("nan")), len(pairs)


def unit_values(store, labels_by_video: dict[str, list]) -> pd.DataFrame:
    rows = []
    for vid, labs in labels_by_video.items():
        q = lambda t, cols: store.query(f"SELECT {cols} FROM {t} WHERE video_id = '{vid}'")  # noqa: E731
        try:
            frames = q("narrativetrack_frames", "sample, frame_index")
            dets = q("narrativetrack_detections", "sample, det, box")
            try:
                idents = q("narrativetrack_identities", "sample, det, entity, identity")
            except Exception:  # a table written before the identity column existed
                idents = q("narrativetrack_identities", "sample, det, entity")
        except Exception as e:  # the video's assets did not materialise: say so in the row
            rows.append({"generator": PIPELINE, "unit": vid, "metric_id": METRIC, "value": None,
                         "reason": f"{vid}: no pipeline tables ({type(e).__name__}: {e})"})
            continue
        got = [(who, identity_at(frames, dets, idents, f, where)) for who, f, where in labs]
        value, n = pair_agreement(got)
        rows.append({"generator": TRUTH, "unit": vid, "metric_id": METRIC, "value": 1.0, "reason": None})
        rows.append({"generator": PIPELINE, "unit": vid, "metric_id": METRIC,
                     "value": None if np.isnan(value) else value,
                     "reason": None if n else f"{vid}: no labelled pair"})
    return pd.DataFrame(rows, columns=["generator", "unit", "metric_id", "value", "reason"])
