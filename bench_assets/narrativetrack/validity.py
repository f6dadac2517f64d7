"""NarrativeTrack validity on real footage (``bench validate --benchmark narrativetrack``).

NarrativeTrack's questions rest on its identities: if two people share an identity, every gold answer about either
is suspect. The check runs the normal per-video assets on real clips with hand-checked labels
(``data/footage/*.yaml``): people (or face centres) at sampled frames, which are the same person and which are not.
For every pair of labelled appearances the pipeline's identities must agree with the labels (same person -> same
identity, different people -> different identities). The table row compares the pipeline's pair agreement with the
ground truth's (1.0): an invariance with zero tolerance, so one merged or split pair fails it.

Invariance cases (issue 23, frozen before they were first run): the same labelled clips resized to 0.5x and 2x,
re-encoded (JPEG quality 30 per frame, then MPEG-4), and the dialogue with an unrelated real clip (15 s of the campus,
resized to the dialogue's size and resampled to its rate) placed before it or after it. The labels move with the
frames (points and boxes scaled, frame numbers shifted); each derived video must keep a pair agreement within .05
of the ground truth's 1.0 (the issue's >= .95), whatever its size and whatever else is in the file.
"""
from __future__ import annotations

import itertools
import json
import shutil
from pathlib import Path

import cv2
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
SOURCES = ("carphone_pristine.mp4", "Megamind.avi", "vtest.avi")
CASES = [core_validity.Case("identities",
                            "labelled appearances of real people (same / different) vs the pipeline's identities",
                            PIPELINE, [core_validity.Expect(METRIC, 0, 1e-9, units=f"^{c}$") for c in CLIPS],
                            sources=SOURCES)]
# derived video id -> (case, how it is made); every one is judged against the ground truth's 1.0 within .05
INVARIANCE = {
    "carphone_half": ("resize_half", "carphone", 0.5), "dialogue_half": ("resize_half", "dialogue", 0.5),
    "carphone_double": ("resize_double", "carphone", 2.0), "dialogue_double": ("resize_double", "dialogue", 2.0),
    # v2 of the resize cases: the campus too (every labelled validation clip at 0.5x and 2x)
    "campus_half": ("resize_half", "campus", 0.5), "campus_double": ("resize_double", "campus", 2.0),
    "carphone_reencoded": ("reencode", "carphone", "reencode"), "dialogue_reencoded": ("reencode", "dialogue",
                                                                                      "reencode"),
    "campus_then_dialogue": ("concat_before", "dialogue", "campus_first"),
    "dialogue_then_campus": ("concat_after", "dialogue", "campus_last"),
}
INVARIANCE_MARGIN = 0.05
# build 2 of concat_after: its campus labels fell between 1 fps samples (up to 6 frames from one; identity_at matches
# within 2), so the harness counted the walkers as lost; the campus now starts on a sample (expectation unchanged)
BUILD = {"concat_after": 2}
_DESCRIBE = {"resize_half": "every labelled clip at half its size", "resize_double": "every labelled clip at twice "
             "its size", "reencode": "every labelled clip re-encoded (JPEG quality 30 per frame, then MPEG-4)",
             "concat_before": "15 s of the campus clip placed before the dialogue in one file",
             "concat_after": "15 s of the campus clip placed after the dialogue in one file"}
for _case in dict.fromkeys(c for c, _, _ in INVARIANCE.values()):
    CASES.append(core_validity.Case(
        _case, _DESCRIBE[_case], PIPELINE,
        [core_validity.Expect(METRIC, 0, INVARIANCE_MARGIN,
                              units="^(" + "|".join(v for v, (c, _, _) in INVARIANCE.items() if c == _case) + ")$")],
        sources=SOURCES, build=BUILD.get(_case, 1)))
CAMPUS_SPAN = (500, 650)    # native campus frames (10 fps): its two labelled walkers at 550 and 600

# Cut detection on a moving camera (issue 23: a panning video read as 195 "shots" for 37 cuts). The hand-labelled
# cuts of every native validation clip the suite reads (data/footage/<clip>.yaml ``cuts``: the first frame of each new
# shot, checked by eye on the frames either side), with two more clips: bikes (six shots, a pan over parked cars
# inside the second, a moving camera in the first) and Big Buck Bunny (one shot, the camera drifts). Scored at the
# pipeline's own sampling rate, pooled over the clips (unit ``all``): cut recall >= .8 and at most 1 false cut per
# minute of video. Frozen before it was first run.
CUT_VIDEOS = {"carphone_pristine.mp4": "carphone", "Megamind.avi": "dialogue", "vtest.avi": "campus",
              "bikes.mp4": "bikes", "bigbuckbunny.mp4": "rabbit"}
CUT_EXTRA = ("bikes.mp4", "bigbuckbunny.mp4")    # videos the identity cases do not read
CUT_RECALL, FALSE_CUTS = "cut_recall", "false_cuts_per_minute"
CASES.append(core_validity.Case(
    "cuts_moving_camera", "hand-labelled cuts on real clips with camera motion vs the pipeline's shot numbers",
    PIPELINE, [core_validity.Expect(CUT_RECALL, 0, 0.2, units="^all$"),
               core_validity.Expect(FALSE_CUTS, 0, 1.0, units="^all$")],
    sources=tuple(CUT_VIDEOS)))


def cut_counts(frame_index, shots, cuts) -> dict:
    """Pure: the pipeline's shot numbers at sampled native frames vs hand-labelled cuts (the native frame where a new
    shot starts). Each interval between consecutive samples a < b holds a true cut when a < c <= b for a labelled c
    (several in one interval count once: a sampled detector sees one change); a shot change in such an interval is a
    cut found, a shot change in an interval without one is a false cut. Cuts outside the sampled span are not
    counted."""
    out = {"intervals_with_cut": 0, "found": 0, "false": 0}
    for j in range(1, len(frame_index)):
        a, b = int(frame_index[j - 1]), int(frame_index[j])
        has = any(a < int(c) <= b for c in cuts)
        changed = shots[j] != shots[j - 1]
        out["intervals_with_cut"] += has
        out["found"] += bool(has and changed)
        out["false"] += bool(changed and not has)
    return out


def cut_rows(counts: dict[str, tuple[dict, float]]) -> list[dict]:
    """Pure: validity unit rows from video id -> (cut_counts, minutes of video): per clip and pooled (``all``), the
    ground truth's 1.0 / 0.0 beside the pipeline's values; recall is None (with a reason) where nothing was cut."""
    rows = []
    tot = {"intervals_with_cut": 0, "found": 0, "false": 0}
    minutes = 0.0
    for unit, (c, m) in list(counts.items()) + [("all", (None, None))]:
        if unit == "all":
            c, m = tot, minutes
        else:
            tot = {k: tot[k] + c[k] for k in tot}
            minutes += m
        n = c["intervals_with_cut"]
        why = None if n else f"{unit}: no labelled cut between sampled frames"
        for gen, rec, fpm in ((TRUTH, 1.0, 0.0), (PIPELINE, c["found"] / n if n else None, c["false"] / m)):
            rows.append({"generator": gen, "unit": unit, "metric_id": CUT_RECALL, "value": rec if n else None,
                         "reason": why})
            rows.append({"generator": gen, "unit": unit, "metric_id": FALSE_CUTS, "value": fpm, "reason": None})
    return rows


def cut_values(store) -> list[dict]:
    """The cut rows from the pipeline's frames table (sampled frames and their shot numbers) of every cut video."""
    counts = {}
    for clip, vid in CUT_VIDEOS.items():
        try:
            fr = store.query(f"SELECT frame_index, shot FROM narrativetrack_frames WHERE video_id = '{vid}' "
                             f"ORDER BY sample")
            v = store.query(f"SELECT duration FROM narrativetrack_video WHERE video_id = '{vid}'")
        except Exception as e:  # the video's assets did not materialise: its rows say so
            return [{"generator": PIPELINE, "unit": "all", "metric_id": m, "value": None,
                     "reason": f"{vid}: no pipeline tables ({type(e).__name__}: {e})"} for m in (CUT_RECALL, FALSE_CUTS)]
        counts[vid] = (cut_counts(list(fr["frame_index"]), list(fr["shot"]), footage.ground_truth(clip)["cuts"]),
                       float(v["duration"].iloc[0]) / 60.0)
    return cut_rows(counts)


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


def scale_label(label, s: float):
    """Pure: a label (person, native frame, (kind, point or box)) with its coordinates scaled by ``s``."""
    who, f, (kind, ref) = label
    return who, f, (kind, [float(x) * s for x in ref])


def shift_label(label, offset: int, sx: float = 1.0, sy: float = 1.0, frame_map=None):
    """Pure: a label moved to another place in a file: frame ``frame_map(f) + offset`` and coordinates scaled."""
    who, f, (kind, ref) = label
    xy = [float(x) * (sx if i % 2 == 0 else sy) for i, x in enumerate(ref)]
    return who, (frame_map(f) if frame_map else f) + offset, (kind, xy)


def _write(frames, path: Path, fps: float, size=None, transform=None) -> None:
    """Frames (RGB) to an MPEG-4 file one at a time (a 2x dialogue does not fit in memory at once)."""
    h, w = frames[0].shape[:2]
    out_w, out_h = size or (w, h)
    vw = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), float(fps), (out_w, out_h))
    try:
        for f in frames:
            g = f if (out_w, out_h) == (w, h) else cv2.resize(f, (out_w, out_h), interpolation=cv2.INTER_AREA
                                                              if out_w < w else cv2.INTER_CUBIC)
            if transform is not None:
                g = transform(g)
            vw.write(cv2.cvtColor(g, cv2.COLOR_RGB2BGR))
    finally:
        vw.release()


def derived_videos(root: Path, lab: dict) -> dict[str, list]:
    """Write every invariance video under ``root`` and return video id -> its labels (moved with the frames)."""
    by_vid = {v["video_id"]: (clip, v["labels"]) for clip, v in lab.items()}
    gt = {vid: footage.ground_truth(clip) for vid, (clip, _) in by_vid.items()}
    native = {vid: core_validity.read_segment(footage.footage_path(clip), 0, 10 ** 6)
              for vid, (clip, _) in by_vid.items() if vid in {b for _, b, _ in INVARIANCE.values()}}
    out = {}
    for vid, (_case, base, how) in INVARIANCE.items():
        frames, labs, fps = native[base], by_vid[base][1], float(gt[base]["fps"])
        h, w = frames.shape[1:3]
        path = root / f"{vid}.mp4"
        if isinstance(how, float):
            size = (int(round(w * how / 2)) * 2, int(round(h * how / 2)) * 2)
            _write(frames, path, fps, size)
            out[vid] = [shift_label(x, 0, size[0] / w, size[1] / h) for x in labs]
        elif how == "reencode":
            _write(frames, path, fps, transform=lambda g: core_validity.compress(g[None], 30)[0])
            out[vid] = list(labs)
        else:
            c_fps = float(gt["campus"]["fps"])
            campus = core_validity.read_segment(footage.footage_path("vtest.avi"), *CAMPUS_SPAN)
            ch, cw = campus.shape[1:3]
            # resampled to the dialogue's rate: output frame k shows campus frame round(k * c_fps / fps)
            n_out = int(len(campus) * fps / c_fps)
            cidx = [min(len(campus) - 1, int(round(k * c_fps / fps))) for k in range(n_out)]
            campus_rs = np.stack([cv2.resize(campus[i], (w, h), interpolation=cv2.INTER_AREA)
                                  for i in cidx])
            to_out = lambda f: int(round((f - CAMPUS_SPAN[0]) * fps / c_fps))  # noqa: E731
            campus_labs = [shift_label(x, 0, w / cw, h / ch, to_out) for x in by_vid["campus"][1]
                           if CAMPUS_SPAN[0] <= x[1] < CAMPUS_SPAN[1]]
            if how == "campus_first":
                _write(np.concatenate([campus_rs, frames]), path, fps)
                out[vid] = campus_labs + [shift_label(x, n_out) for x in labs]
            else:
                # the campus starts on a 1 fps sample (the dialogue's last frame held until then): its labelled
                # frames, whole seconds into the campus, then fall on samples as they do in the campus alone
                start = next(int(round(j * fps)) for j in range(10 ** 6) if int(round(j * fps)) >= len(frames))
                hold = np.repeat(frames[-1:], start - len(frames), axis=0)
                _write(np.concatenate([frames, hold, campus_rs]), path, fps)
                out[vid] = list(labs) + [shift_label(x, start) for x in campus_labs]
    return out


def build_suite(work_dir: Path, invariance: bool = True, cuts: bool = True) -> core_validity.Suite:
    data, gens = Path(work_dir) / "data", Path(work_dir) / "generators"
    (data / BENCH).mkdir(parents=True, exist_ok=True)
    gens.mkdir(parents=True, exist_ok=True)
    lab = labels()
    (data / BENCH / "videos").mkdir(parents=True, exist_ok=True)
    for clip in lab:   # media stays inside the dataset folder: a copy of the cached clip
        shutil.copyfile(footage.footage_path(clip), data / BENCH / "videos" / clip)
    entries = [{"video_id": v["video_id"], "file": f"videos/{clip}"} for clip, v in lab.items()]
    by_video = {v["video_id"]: v["labels"] for v in lab.values()}
    cases = [c for c in CASES if (invariance or c.case_id == "identities" or c.case_id == "cuts_moving_camera")
             and (cuts or c.case_id != "cuts_moving_camera")]
    if cuts:   # the clips only the cut case reads, as the suite's other videos (copied into the dataset)
        for clip in CUT_EXTRA:
            shutil.copyfile(footage.footage_path(clip), data / BENCH / "videos" / clip)
            entries.append({"video_id": CUT_VIDEOS[clip], "file": f"videos/{clip}"})
    if invariance:
        derived = derived_videos(data / BENCH / "videos", lab)
        entries += [{"video_id": vid, "file": f"videos/{vid}.mp4"} for vid in derived]
        by_video.update(derived)
    (data / BENCH / "videos.json").write_text(json.dumps({"videos": entries}, indent=2))
    values = (lambda store: pd.concat([unit_values(store, by_video), pd.DataFrame(cut_values(store))],
                                      ignore_index=True)) if cuts else (lambda store: unit_values(store, by_video))
    return core_validity.Suite(BENCH, data, gens, TRUTH, cases, unit_values=values, thresholds=thresholds())


# Constants set by looking at validation footage before the split existed (constants.py says which clip): they have
# no held-out rate and are listed as such, not hidden (issue 23). The ReID link and torso-colour thresholds are fixed
# (scripts/calibrate_links.py, calibration videos only; no longer learned from each file's own pairs).
IN_SAMPLE = {
    "LINK_SPEED / LINK_HEIGHT_RATIO / LINK_MAX_GAP_S": "stitching gates set on the campus clip (vtest.avi)",
    "GAP_TOLERANCE_S": "set on the campus clip (vtest.avi: a missed detection made a reappearance)",
    "FACE_MIN_HEIGHT / FACE_MIN_FRACTION": "set on the campus clip's 5-12 px faces (vtest.avi; 15 of its 576 rows)",
    "STATE_TOLERANCE / CHANGE_MARGIN": "set from distances measured on carphone and vtest",
    "FLOW_HEIGHT / FLOW_INNER (motion links)": "conventions, not fitted; the central-half rule and the mean-size "
                                               "overlap were added after the campus at 0.5x failed (vtest.avi)",
}


def thresholds() -> list[dict]:
    """The face-merge threshold's held-out rates (calibration.py's file) and the constants without any."""
    from bench_assets.core.face_calibration import threshold_rows
    from bench_assets.narrativetrack import calibration
    rows = threshold_rows(calibration.load(), "FACE_MERGE_COSINE")
    rows += [{"threshold": k, "value": None, "fitted_on": [], "held_out_on": [],
              "note": f"in-sample: {v}; no held-out rate"} for k, v in IN_SAMPLE.items()]
    rows += link_rows(calibration.link_thresholds_doc())
    return rows


def link_rows(doc) -> list[dict]:
    """Pure: the fixed link thresholds' rows. Their held-out rates are on the validation clips' unlabelled pairs
    (consecutive overlapping boxes of one track: a share below the threshold would be cut, a false split; two boxes
    of one frame: a share at or above it would be linked, a false merge)."""
    if not doc:
        return [{"threshold": "link thresholds", "value": None, "note": "no link_calibration.json"}]
    out = []
    for key, name in (("colour", "LINK colour (torso Bhattacharyya)"), ("reid", "LINK ReID cosine")):
        held = (doc.get("held_out") or {}).get("per_video", {})
        pos = sum(v[key]["positives"] for v in held.values())
        neg = sum(v[key]["negatives"] for v in held.values())
        fs = sum((v[key]["false_split_rate"] or 0) * v[key]["positives"] for v in held.values())
        fm = sum((v[key]["false_merge_rate"] or 0) * v[key]["negatives"] for v in held.values())
        out.append({"threshold": name, "value": float(doc[key]["threshold"]), "fitted_on": list(doc["fitted_on"]),
                    "held_out_on": sorted((doc.get("held_out") or {}).get("sources", [])),
                    "false_merge_rate": round(fm / neg, 4) if neg else None,
                    "false_split_rate": round(fs / pos, 4) if pos else None,
                    "n_same": pos, "n_different": neg,
                    "note": "unlabelled pairs: same track vs same frame"})
    cl = doc.get("cluster")
    if cl:
        # the tracklet clustering's ReID cosine: fitted on the calibration videos' ground truth only where they hold
        # LINK_MIN_PAIRS tracklet pairs a side; held out on the tracklets the validation clips' hand labels name
        held = [v["cluster"] for v in ((doc.get("held_out") or {}).get("per_video", {})).values() if "cluster" in v]
        pos, neg = sum(h["positives"] for h in held), sum(h["negatives"] for h in held)
        fs = sum((h["false_split_rate"] or 0) * h["positives"] for h in held)
        fm = sum((h["false_merge_rate"] or 0) * h["negatives"] for h in held)
        out.append({"threshold": "REID_THRESHOLD offline (tracklet clustering)", "value": float(cl["threshold"]),
                    "fitted_on": list(doc["fitted_on"]) if cl.get("fitted") else [],
                    "held_out_on": sorted((doc.get("held_out") or {}).get("sources", [])),
                    "false_merge_rate": round(fm / neg, 4) if neg else None,
                    "false_split_rate": round(fs / pos, 4) if pos else None, "n_same": pos, "n_different": neg,
                    "note": ("labelled tracklet pairs" if cl.get("fitted") else
                             f"hand value: not fitted ({cl['positives']} same / {cl['negatives']} different "
                             f"calibration tracklet pairs); held out on labelled tracklet pairs")})
    return out


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


def _identity_unknown(q) -> str | None:
    """The reason a video's identities were withheld (every row's ``decision`` 'identity unknown: ...'), else None."""
    try:
        d = q("narrativetrack_identities", "entity, identity, decision")
    except Exception:  # a table written before the decision column: identities were never withheld
        return None
    why = d["decision"].dropna().astype(str)
    if len(d) and d["identity"].isna().all() and len(why) and why.str.startswith("identity unknown").all():
        return why.iloc[0]
    return None


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
        rows.append({"generator": TRUTH, "unit": vid, "metric_id": METRIC, "value": 1.0, "reason": None})
        # identity withheld (issue 37: no identity model for the video's faces) is not a lost person: no value, the
        # reason, never an agreement of 0 that an invariance row would read as "unchanged"
        unknown = _identity_unknown(q)
        if unknown:
            rows.append({"generator": PIPELINE, "unit": vid, "metric_id": METRIC, "value": None,
                         "reason": f"{vid}: {unknown}"})
            continue
        got = [(who, identity_at(frames, dets, idents, f, where)) for who, f, where in labs]
        value, n = pair_agreement(got)
        rows.append({"generator": PIPELINE, "unit": vid, "metric_id": METRIC,
                     "value": None if np.isnan(value) else value,
                     "reason": None if n else f"{vid}: no labelled pair"})
    return pd.DataFrame(rows, columns=["generator", "unit", "metric_id", "value", "reason"])
