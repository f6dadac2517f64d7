#!/usr/bin/env python3
"""Measure NarrativeTrack's motion links (flow_links.py) against the ground truth of the calibration videos only.

    python scripts/check_flow_links.py

Nothing is fitted: the motion link's overlap threshold is the tracker's own LINK_POSITIVE_IOU, and the flow image's
height (FLOW_HEIGHT), the box's central share (INNER) and OpenCV's DIS preset are stated conventions. This script
rebuilds the calibration videos nt001-nt003 (scripts/make_narrativetrack_data.py, in a temporary folder), runs the
pipeline's own assets up to ReID (scripts/calibrate_links.run_upstream; narrativetrack_tracklets now carries
``motion_track``), gives each detection the sidecar's person (Hungarian at IoU >= .5, as calibrate_links does) and
counts, per video, the links between boxes of consecutive samples that join the same true person (right) or two
different people (wrong), for the motion tracks and for the tracker's tracks cut at LINK_POSITIVE_IOU (the rule
without motion). It prints a table and writes nothing."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_assets.core import footage as F  # noqa: E402


def link_counts(track_ids, samples, person) -> dict:
    """Pure: links between consecutive boxes of one track at adjacent samples: right (same true person), wrong
    (different), unknown (a box without a true person); and same-person box pairs at adjacent samples left apart."""
    from collections import defaultdict
    order = defaultdict(list)
    for i, t in enumerate(track_ids):
        order[t].append(i)
    right = wrong = unknown = 0
    linked = set()
    for t, rows in order.items():
        rows.sort(key=lambda i: samples[i])
        for a, b in zip(rows, rows[1:]):
            if samples[b] != samples[a] + 1:
                continue
            linked.add((a, b))
            if a not in person or b not in person:
                unknown += 1
            elif person[a] == person[b]:
                right += 1
            else:
                wrong += 1
    by = defaultdict(dict)
    for i, p in person.items():
        by[samples[i]][p] = i
    missed = sum(1 for s, ps in by.items() for p, a in ps.items() if p in by.get(s + 1, {})
                 and (a, by[s + 1][p]) not in linked)
    return {"right": right, "wrong": wrong, "unknown": unknown, "missed": missed}


def main(argv=None) -> int:
    import calibrate_links as CL
    from bench_assets.narrativetrack import constants, stages
    from bench_assets.narrativetrack.tables import det_records
    F.require_split(CL.CALIBRATION_VIDEOS, F.CALIBRATION, "scripts/check_flow_links.py")
    work = Path(tempfile.mkdtemp(prefix="nt_flow_"))
    try:
        with F.use_split(F.CALIBRATION):
            subprocess.run([sys.executable, str(ROOT / "scripts" / "make_narrativetrack_data.py"), "--out",
                            str(work / "cal")], check=True, stdout=subprocess.DEVNULL)
            store = CL.run_upstream(work / "cal", work / "cal_store", CL.CALIBRATION_VIDEOS)
            out = {}
            for v in CL.CALIBRATION_VIDEOS:
                q = lambda t: store.query(f"SELECT * FROM {t} WHERE video_id = '{v}'")  # noqa: E731
                fr = q("narrativetrack_frames").sort_values("sample")
                det = q("narrativetrack_detections").sort_values("det")
                tr = q("narrativetrack_tracklets").sort_values("det")
                dets = det_records(det)
                samples = [d["sample"] for d in dets]
                gt = json.loads((work / "cal" / "narrativetrack" / "groundtruth" / f"{v}.json").read_text())
                person = CL.truth_persons(gt, fr, dets, list(range(len(dets))), {i: [i] for i in range(len(dets))})
                tracker = [int(t) for t in tr["track_id"]]
                # the rule without motion: the tracker's links cut where consecutive boxes overlap under .5
                nomotion = stages.split_tracks(dets, tracker, [None] * len(dets), colours=[None] * len(dets))
                out[v] = {"boxes": len(dets), "with_person": len(person),
                          "motion": link_counts([int(t) for t in tr["motion_track"]], samples, person),
                          "tracker_iou_cut": link_counts(nomotion, samples, person)}
                print(v, json.dumps(out[v]), flush=True)
            tot = {k: {c: sum(out[v][k][c] for v in out) for c in ("right", "wrong", "unknown", "missed")}
                   for k in ("motion", "tracker_iou_cut")}
            print("all", json.dumps(tot), "LINK_POSITIVE_IOU", constants.LINK_POSITIVE_IOU)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
