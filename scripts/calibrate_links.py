#!/usr/bin/env python3
"""Fit NarrativeTrack's tracklet-link thresholds on calibration videos only (issue 23, item 3).

    python scripts/calibrate_links.py              # writes bench_assets/narrativetrack/link_calibration.json
    python scripts/calibrate_links.py --dry-run    # prints, writes nothing
    python scripts/calibrate_links.py --held-out   # also measures the fixed thresholds on the validation clips
    python scripts/calibrate_links.py --held-out --out F  # writes F instead (tests/test_calibration_repro.py)

Before, the pipeline learned its stitching thresholds from each file's own pairs (Youden's J between consecutive
boxes of one IoU track and two boxes of one frame), so unrelated footage in the file, or the same frames at another
size, moved them and changed who was merged. Here the same unlabelled pairs are pooled over the calibration videos
(the embedded drawn NarrativeTrack videos nt001-nt003, registered as calibration in core/footage.py; rebuilt by
scripts/make_narrativetrack_data.py in a temporary folder) and the two thresholds are fixed once, in pipeline order:
the torso-colour Bhattacharyya (its pairs after the IoU split), then the ReID cosine (its pairs after the colour
split at the fixed colour threshold). The ReID threshold belongs to the ReID model it was fitted with (the offline
profile's); the pipeline uses the profile's REID_THRESHOLD for any other model.

It then fits the ReID clustering threshold (REID_THRESHOLD["offline"], hand-set before) on the same videos' ground
truth: the cosines of tracklet pairs of the same vs different true person that the clustering could merge (no shared
frame, colour check passed), only where both sides hold LINK_MIN_PAIRS pairs; otherwise the hand value stays and
``cluster.fitted`` is false (the pipeline then keeps the profile's REID_THRESHOLD).

With ``--held-out`` the validation clips (carphone, the Megamind dialogue, the campus) are run too, with the
validation split in force, and only measured: the share of their positive pairs below each threshold (would be cut:
a false split) and of their negative pairs at or above it (would be linked: a false merge) is stored under
``held_out``; for the clustering threshold, on the tracklets the hand labels name (validity.identity_at).
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench_assets.core import footage as F  # noqa: E402

CALIBRATION_VIDEOS = ("nt001", "nt002", "nt003")
VALIDATION_CLIPS = {"carphone": "carphone_pristine.mp4", "dialogue": "Megamind.avi", "campus": "vtest.avi"}
UPSTREAM = ["narrativetrack_video", "narrativetrack_frames", "narrativetrack_detections", "narrativetrack_tracklets",
            "narrativetrack_reid"]


def run_upstream(data_root: Path, store_root: Path, vids) -> object:
    """The pipeline's assets up to ReID (offline profile, judge off) for ``vids``; the store."""
    from dagster import instance_for_test, materialize
    from bench_assets.narrativetrack import assets as A
    from bench_resources.config import build_resources
    from bench_resources.judge import Judge
    from bench_resources.paths import BenchPaths
    paths = BenchPaths(data_root=str(data_root), generators_root=str(data_root.parent / "generators"))
    res = build_resources(store_root=str(store_root), paths=paths, judge=Judge(mode="off"))
    quiet = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
    with instance_for_test() as inst:
        inst.add_dynamic_partitions(A.P.items.name, list(vids))
        for vid in vids:
            assert materialize(A.ASSETS, selection=UPSTREAM, partition_key=vid, instance=inst, resources=res,
                               run_config=quiet).success, vid
    return res["store"]


def video_pairs(store, vid: str, colour_threshold=None):
    """(colour positives, colour negatives, reid positives, reid negatives) of one video, from the pipeline's own
    stages (stages.split_tracks, pipeline.link_pairs); the ReID pairs only with ``colour_threshold``."""
    import numpy as np
    from bench_assets.narrativetrack import pipeline, stages
    from bench_assets.narrativetrack.frame_cache import sampled_frames, video_row
    from bench_assets.narrativetrack.tables import det_records
    q = lambda t: store.query(f"SELECT * FROM {t} WHERE video_id = '{vid}'")  # noqa: E731
    fr, det = q("narrativetrack_frames").sort_values("sample"), q("narrativetrack_detections").sort_values("det")
    tr, re = q("narrativetrack_tracklets").sort_values("det"), q("narrativetrack_reid").sort_values("det")
    frames, _, _ = sampled_frames(video_row(q("narrativetrack_video")), fr)
    dets = det_records(det)
    cols = stages.torso_colours(frames, dets)
    reid = [None if e is None or (isinstance(e, float) and np.isnan(e)) else list(e) for e in re["embedding"]]
    samples, boxes = [d["sample"] for d in dets], [d["box"] for d in dets]
    tids = stages.split_tracks(dets, [int(t) for t in tr["track_id"]], reid, cols)
    cp, cn = pipeline.link_pairs(tids, samples, cols, pipeline.bhattacharyya, boxes)
    if colour_threshold is None:
        return cp, cn, None, None
    t2 = pipeline.split_on(tids, samples, cols, colour_threshold, pipeline.bhattacharyya)
    rp, rn = pipeline.link_pairs(t2, samples, reid)
    return cp, cn, rp, rn


def video_tracklets(store, vid: str, links: dict):
    """The tracklets the ReID clustering decides on in one video (``stages.identities`` with the fixed ``links``, then
    ``stages.tracklet_means``): (frames table, detections table, detection rows, tracklet id per detection, members,
    mean embeddings, frames, mean colours)."""
    import numpy as np
    from bench_assets.narrativetrack import constants, stages
    from bench_assets.narrativetrack.frame_cache import sampled_frames, video_row
    from bench_assets.narrativetrack.tables import det_records
    q = lambda t: store.query(f"SELECT * FROM {t} WHERE video_id = '{vid}'")  # noqa: E731
    fr, det = q("narrativetrack_frames").sort_values("sample"), q("narrativetrack_detections").sort_values("det")
    tr, re = q("narrativetrack_tracklets").sort_values("det"), q("narrativetrack_reid").sort_values("det")
    video = video_row(q("narrativetrack_video"))
    frames, _, _ = sampled_frames(video, fr)
    dets = det_records(det)
    cols = stages.torso_colours(frames, dets)
    reid = [None if e is None or (isinstance(e, float) and np.isnan(e)) else list(e) for e in re["embedding"]]
    no_face = [{"face_embedding": None, "face_box": None}] * len(dets)
    # the motion tracks where the table has them, as narrativetrack_identities uses them (flow_links)
    motion = [int(t) for t in tr["motion_track"]] if "motion_track" in tr.columns else None
    _, info = stages.identities(dets, [int(t) for t in tr["track_id"]], reid, no_face, constants.REID_THRESHOLD["offline"],
                                shots=[int(s) for s in fr["shot"]], sample_fps=float(video["sample_fps"]),
                                colours=cols, links=links, frame_height=float(video["height"]), motion_ids=motion)
    members, emb, tframes, col = stages.tracklet_means(dets, info["tracklet_ids"], reid, cols)
    return fr, det, dets, info["tracklet_ids"], members, emb, tframes, col


def tracklet_pairs(person: dict, emb: dict, frames: dict, col, colour_threshold: float) -> tuple[list, list]:
    """(same-person cosines, different-person cosines) of the mean ReID embeddings of every two tracklets whose person
    is known (``person``: tracklet -> person) that the clustering could merge: no shared frame (cannot-link) and mean
    torso colours at or above the colour threshold (the clustering checks colour first)."""
    import numpy as np
    from bench_assets.narrativetrack.pipeline import l2_normalise
    ts = sorted(t for t in person if t in emb)
    pos, neg = [], []
    for k, a in enumerate(ts):
        for b in ts[k + 1:]:
            if frames[a] & frames[b]:
                continue
            if col is not None and a in col and b in col and float(
                    np.sqrt(np.clip(col[a], 0, None)) @ np.sqrt(np.clip(col[b], 0, None))) < colour_threshold:
                continue
            c = float(l2_normalise(emb[a]) @ l2_normalise(emb[b]))
            (pos if person[a] == person[b] else neg).append(c)
    return pos, neg


def truth_persons(gt: dict, fr, dets, tracklet_ids, members) -> dict:
    """Tracklet -> ground-truth person (the majority of its boxes matched to the sidecar's boxes per frame, Hungarian
    at IoU >= 0.5, as pipeline.identity_quality matches); tracklets with no matched box are left out."""
    from collections import Counter, defaultdict
    import numpy as np
    from scipy.optimize import linear_sum_assignment
    from bench_assets.narrativetrack.pipeline import iou_matrix
    frame_of = dict(zip(fr["sample"].astype(int), fr["frame_index"].astype(int)))
    per = defaultdict(list)
    for i, d in enumerate(dets):
        per[d["sample"]].append(i)
    who = {}
    for s, idx in per.items():
        gts = gt["frames"][frame_of[s]]["persons"] if frame_of[s] < len(gt["frames"]) else []
        if not gts:
            continue
        m = iou_matrix(np.array([dets[i]["box"] for i in idx], float), np.array([p["box"] for p in gts], float))
        r, c = linear_sum_assignment(-m)
        who.update({idx[i]: gts[j]["person"] for i, j in zip(r, c) if m[i, j] >= 0.5})
    out = {}
    for t, m in members.items():
        votes = Counter(who[i] for i in m if i in who)
        if votes:
            out[t] = votes.most_common(1)[0][0]
    return out


def labelled_persons(labels, fr, det, tracklet_ids, members) -> dict:
    """Tracklet -> labelled person on a validation clip: each hand label picks its detection as the validity check
    does (validity.identity_at), and the detection's tracklet takes the label's person."""
    import pandas as pd
    from bench_assets.narrativetrack import validity as V
    member_of = {i: t for t, m in members.items() for i in m}
    dets_sorted = det.sort_values("det").reset_index(drop=True)
    idents = pd.DataFrame({"sample": dets_sorted["sample"].astype(int), "det": dets_sorted["det"],
                           "identity": pd.array([member_of.get(i) for i in range(len(dets_sorted))], dtype="Int64")})
    out = {}
    for who, f, where in labels:
        t = V.identity_at(fr[["sample", "frame_index"]], det[["sample", "det", "box"]], idents, f, where)
        if t is not None:
            out[t] = who
    return out


def cluster_fit(pos, neg, pos_all, neg_all) -> dict:
    """The clustering threshold's entry: Youden J on the pairs the ReID threshold decides (those passing the colour
    check) where both sides hold ``constants.LINK_MIN_PAIRS``; otherwise no fit (``threshold`` is the profile's hand
    value, ``fitted`` False). The fit without the colour check is recorded beside it, for information only."""
    from bench_assets.narrativetrack import constants, pipeline
    ok = min(len(pos), len(neg)) >= constants.LINK_MIN_PAIRS
    doc = {"feature": "cosine of tracklets' mean ReID embeddings (average-linkage clustering)",
           "pairs": "tracklet pairs of the same vs different ground-truth person that share no frame and pass the "
                    "colour check (the pairs this threshold decides)",
           "positives": len(pos), "negatives": len(neg), "fitted": ok}
    if ok:
        thr, fit = pipeline.youden_threshold(pos, neg)
        doc.update(threshold=round(thr, 4), **fit)
    else:
        doc.update(threshold=constants.REID_THRESHOLD["offline"],
                   note=f"not fitted: fewer than LINK_MIN_PAIRS ({constants.LINK_MIN_PAIRS}) pairs on a side; the "
                        f"profile's hand value REID_THRESHOLD['offline'] stays")
    if min(len(pos_all), len(neg_all)) >= 1:
        thr, fit = pipeline.youden_threshold(pos_all, neg_all)
        doc["without_colour_check"] = {"threshold": round(thr, 4), **fit,
                                       "min_positive": round(min(pos_all), 4), "max_negative": round(max(neg_all), 4)}
    return doc


def rates(pos, neg, thr: float) -> dict:
    return {"positives": len(pos), "negatives": len(neg),
            "false_split_rate": round(sum(p < thr for p in pos) / len(pos), 4) if pos else None,
            "false_merge_rate": round(sum(n >= thr for n in neg) / len(neg), 4) if neg else None,
            "min_positive": round(min(pos), 4) if pos else None, "max_negative": round(max(neg), 4) if neg else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true")
    ap.add_argument("--held-out", action="store_true", help="also measure on the validation clips")
    ap.add_argument("--out", type=Path, default=None, help="write this file instead of link_calibration.json")
    a = ap.parse_args(argv)
    from bench_assets.narrativetrack import calibration, pipeline
    from bench_resources.models import ModelRegistry
    F.require_split(CALIBRATION_VIDEOS, F.CALIBRATION, "scripts/calibrate_links.py")
    work = Path(tempfile.mkdtemp(prefix="nt_links_"))
    try:
        with F.use_split(F.CALIBRATION):
            subprocess.run([sys.executable, str(ROOT / "scripts" / "make_narrativetrack_data.py"), "--out",
                            str(work / "cal")], check=True, stdout=subprocess.DEVNULL)
            store = run_upstream(work / "cal", work / "cal_store", CALIBRATION_VIDEOS)
            per = {v: video_pairs(store, v) for v in CALIBRATION_VIDEOS}
            cp = [x for v in per.values() for x in v[0]]
            cn = [x for v in per.values() for x in v[1]]
            colour, colour_fit = pipeline.youden_threshold(cp, cn)
            per = {v: video_pairs(store, v, colour) for v in CALIBRATION_VIDEOS}
            rp = [x for v in per.values() for x in v[2]]
            rn = [x for v in per.values() for x in v[3]]
            reid, reid_fit = pipeline.youden_threshold(rp, rn)
            # the clustering threshold (REID_THRESHOLD["offline"]): tracklet pairs of the same vs different true
            # person (the videos' ground-truth sidecars), on the tracklets the clustering sees with the link
            # thresholds just fitted; fitted only where both sides hold LINK_MIN_PAIRS pairs (the rule every pair
            # fit here follows), otherwise the profile's hand value stays and the file says so
            fixed = {"reid": round(reid, 4), "colour": round(colour, 4)}
            cluster_per, cp2, cn2, up2, un2 = {}, [], [], [], []
            for v in CALIBRATION_VIDEOS:
                fr, _det, dets, tids, members, emb, tf, col = video_tracklets(store, v, fixed)
                gt = json.loads((work / "cal" / "narrativetrack" / "groundtruth" / f"{v}.json").read_text())
                person = truth_persons(gt, fr, dets, tids, members)
                p, n = tracklet_pairs(person, emb, tf, col, fixed["colour"])
                up, un = tracklet_pairs(person, emb, tf, None, 0.0)
                cluster_per[v] = {"tracklets": len(members), "with_person": len(person), "pairs": [len(p), len(n)],
                                  "pairs_without_colour_check": [len(up), len(un)]}
                cp2, cn2, up2, un2 = cp2 + p, cn2 + n, up2 + up, un2 + un
            cluster = cluster_fit(cp2, cn2, up2, un2)
            cluster["per_video"] = cluster_per
        model = ModelRegistry(profile="offline").status("reid").checkpoint
        doc = {"what": "NarrativeTrack tracklet-link thresholds (stitching and torso-colour split), fitted on "
                       "calibration videos only (scripts/calibrate_links.py)",
               "method": "Youden J (midpoint of a clean gap) on unlabelled pairs pooled over the videos: consecutive "
                         "IoU-overlapping boxes of one track (same person) vs two boxes of one frame (two people)",
               "fitted_on": list(CALIBRATION_VIDEOS), "reid_model": model,
               "colour": {"threshold": round(colour, 4), "feature": "torso HSV histogram, Bhattacharyya",
                          **colour_fit, "per_video": {v: [len(p[0]), len(p[1])] for v, p in per.items()}},
               "reid": {"threshold": round(reid, 4), **reid_fit,
                        "per_video": {v: [len(p[2]), len(p[3])] for v, p in per.items()}},
               "cluster": cluster}
        if a.held_out:
            F.require_split(VALIDATION_CLIPS.values(), F.VALIDATION, "scripts/calibrate_links.py --held-out")
            with F.use_split(F.VALIDATION):
                vdir = work / "val" / "narrativetrack"
                (vdir / "videos").mkdir(parents=True)
                for vid, clip in VALIDATION_CLIPS.items():
                    shutil.copyfile(F.footage_path(clip), vdir / "videos" / clip)
                (vdir / "videos.json").write_text(json.dumps({"videos": [
                    {"video_id": vid, "file": f"videos/{clip}"} for vid, clip in VALIDATION_CLIPS.items()]}))
                vstore = run_upstream(work / "val", work / "val_store", VALIDATION_CLIPS)
                held = {}
                from bench_assets.narrativetrack import validity as V
                lab = {v["video_id"]: v["labels"] for v in V.labels().values()}
                for vid in VALIDATION_CLIPS:
                    p = video_pairs(vstore, vid, round(colour, 4))
                    held[vid] = {"colour": rates(p[0], p[1], round(colour, 4)),
                                 "reid": rates(p[2], p[3], round(reid, 4))}
                    # the clustering threshold on tracklets the hand labels name (validity.identity_at picks them)
                    fr, det, dets, tids, members, emb, tf, col = video_tracklets(vstore, vid, fixed)
                    person = labelled_persons(lab[vid], fr, det, tids, members)
                    cp_v, cn_v = tracklet_pairs(person, emb, tf, col, fixed["colour"])
                    held[vid]["cluster"] = rates(cp_v, cn_v, cluster["threshold"])
                doc["held_out"] = {"sources": sorted(VALIDATION_CLIPS.values()), "per_video": held}
        print(json.dumps(doc, indent=1))
        if not a.dry_run:
            (a.out or calibration.LINK_FILE).write_text(json.dumps(doc, sort_keys=True, indent=1) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
