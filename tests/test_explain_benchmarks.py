"""Issue 26 item 4 for MBench, LoCoT2V and NarrativeTrack: MBench's audit rows carry crops cut from the boxes it
tracked (files in the site's crops/ folder whose pixels are that box of that frame), and LoCoT2V's / NarrativeTrack's
materialization metadata goes through core/explain.py (rounded values with coverage, the per-unit table worst first,
an audit link on the site `bench ui` serves)."""
from __future__ import annotations

import json

import numpy as np
import pandas as pd
from tests.support.site import _instance_rows  # noqa: F401


# ----------------------------------------------------------------------------- MBench crops from tracked boxes

W_, H_ = 160, 120


def _frame(k: int) -> np.ndarray:
    """BGR frame k: smooth gradients (so a lossy codec keeps them) that differ by position and by frame."""
    y, x = np.mgrid[0:H_, 0:W_]
    f = np.zeros((H_, W_, 3), np.uint8)
    f[..., 0] = (x * 255 // (W_ - 1)).astype(np.uint8)
    f[..., 1] = (y * 255 // (H_ - 1)).astype(np.uint8)
    f[..., 2] = (20 + 9 * k) % 256
    return f


def _video(path, n=24):
    import cv2
    path.parent.mkdir(parents=True, exist_ok=True)
    out = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"mp4v"), 8, (W_, H_))
    for k in range(n):
        out.write(_frame(k))
    out.release()
    return path


def _decoded(path, k):
    import cv2
    cap = cv2.VideoCapture(str(path))
    cap.set(cv2.CAP_PROP_POS_FRAMES, k)
    ok, f = cap.read()
    cap.release()
    assert ok
    return f


def test_mbench_audit_rows_show_crops_cut_from_tracked_boxes(tmp_path, monkeypatch):
    """Each sub-dimension that reads tracked boxes lists them with a crop: a PNG in the site's crops/ folder whose
    pixels are that box of that frame of the case's video (not another frame, not another place); a box partly
    out of frame is clipped, one wholly out gets no crop and says so, a video replaced since tracking gets none."""
    import cv2

    from bench_assets.core.media import sha256_file
    from bench_assets.core.site import Reader, write_audits
    from bench_assets.mbench.page import MAX_BOX_CROPS
    from bench_assets.mbench.page import PAGE as MBENCH
    from bench_resources.store import Store

    gens = tmp_path / "generators"
    monkeypatch.setenv("BENCH_GENERATORS_ROOT", str(gens))
    store = Store(root=str(tmp_path / "store"))
    gen = "mb_gen"
    v1 = _video(gens / gen / "c1.mp4")
    _video(gens / gen / "c2.mp4")   # c2: a video whose content is not the one tracked
    sha1 = sha256_file(v1)
    scores = pd.DataFrame([{"generator": gen, "case_id": c, "metric_id": m, "value": 0.5 + 0.1 * i, "reason": None,
                            "n_eval": 1, "n_failed": 0, "n_skipped": 0, "detail": None, "trigger_reason": "t"}
                           for i, c in enumerate(["c1", "c2"]) for m in ("texture", "identity", "appearance")])
    store.write_table(scores, store.table_path("mbench_scores", None))
    tracks = []
    obj_boxes = {}
    for k in range(20):   # the object's box moves with the frame; frames 18, 19 carry it out of view
        box = [10 + 3 * k, 8 + 2 * k, 50 + 3 * k, 40 + 2 * k] if k < 18 else [W_ + 5, 10, W_ + 40, 50]
        if k == 17:
            box = [W_ - 20, 70, W_ + 25, 110]   # partly out: clipped to the frame
        obj_boxes[k] = box
        tracks.append({"kind": "object", "frame": k, "box": json.dumps(box), "track": None, "person_box": None,
                       "mask_source": "pose_box"})
    face_boxes = {}
    for k in (2, 9, 15):
        fb, pb = [60 + k, 20, 80 + k, 44], [50 + k, 15, 95 + k, 110]
        face_boxes[k] = (fb, pb)
        tracks.append({"kind": "face", "frame": k, "box": json.dumps(fb), "track": 1, "person_box": json.dumps(pb),
                       "mask_source": None})
    t1 = pd.DataFrame(tracks).assign(generator=gen, case_id="c1", source_sha256=sha1)
    t2 = t1.copy().assign(case_id="c2", source_sha256="0" * 64)   # c2's video is not the one tracked
    store.write_table(pd.concat([t1, t2], ignore_index=True), store.table_path("mbench_tracks", None))
    board = pd.DataFrame([{"generator": gen, "metric_id": f"m_score.{m}", "slice": "A", "value": 60.0,
                           "coverage": 1.0, "n_eval": 2, "n_failed": 0, "n_skipped": 0, "reason": None}
                          for m in ("texture", "identity", "appearance")])
    out = tmp_path / "site"
    written = write_audits(MBENCH, Reader(store), board, "A", out)
    assert written == {(f"m_score.{m}", gen) for m in ("texture", "identity", "appearance")}

    def page(m):
        p = out / "audit" / "mbench" / f"m_score.{m}__{gen}.html"
        return p, _instance_rows(p.read_text())

    p, rows = page("texture")
    c1 = [r for r in rows if r["level"] == "object box" and "sha256 differs" not in r["detail"]]
    c2 = [r for r in rows if "sha256 differs" in r["detail"]]
    assert len(c1) == MAX_BOX_CROPS and len(c2) == MAX_BOX_CROPS
    assert all(r["src"] is None for r in c2)   # a replaced video: no crop from the wrong pixels
    frames = [r["frame"] for r in c1]
    assert frames == sorted(frames) and frames[0] == 0 and frames[-1] == 19   # evenly over the tracked frames
    checked = 0
    for r in c1:
        box = obj_boxes[r["frame"]]
        if box[0] >= W_:
            assert r["src"] is None and "outside" in r["detail"], r
            continue
        path = (p.parent / r["src"]).resolve()
        assert path.is_file() and path.parent == (out / "crops").resolve(), r["src"]
        crop = cv2.imread(str(path))
        x1, y1, x2, y2 = box[0], box[1], min(box[2], W_), min(box[3], H_)
        assert crop.shape[:2] == (y2 - y1, x2 - x1), (r, crop.shape)
        frame = _decoded(v1, r["frame"]).astype(int)
        assert np.abs(crop.astype(int) - frame[y1:y2, x1:x2]).mean() < 4, r     # the box of that frame
        shifted = frame[min(y1 + 12, H_ - (y2 - y1)):, :][: y2 - y1, x1:x2]
        assert np.abs(crop.astype(int) - shifted).mean() > 5                     # not another place
        near = _decoded(v1, (r["frame"] + 3) % 20).astype(int)[y1:y2, x1:x2]
        assert np.abs(crop.astype(int) - near).mean() > 6                        # not another frame
        checked += 1
    assert checked >= 4
    # faces under identity, the person box around them under appearance; each crop is its own box
    for m, level, pick in (("identity", "face box", 0), ("appearance", "person box", 1)):
        p, rows = page(m)
        mine = [r for r in rows if r["level"] == level and r["src"]]
        assert sorted(r["frame"] for r in mine) == [2, 9, 15] and all(r["entity"].endswith("track 1") for r in mine)
        for r in mine:
            x1, y1, x2, y2 = face_boxes[r["frame"]][pick]
            crop = cv2.imread(str((p.parent / r["src"]).resolve()))
            assert crop.shape[:2] == (y2 - y1, x2 - x1)
            assert np.abs(crop.astype(int) - _decoded(v1, r["frame"]).astype(int)[y1:y2, x1:x2]).mean() < 4
    # a rebuild reuses the crops (same files), a replaced video gets new ones
    before = sorted(x.name for x in (out / "crops").iterdir())
    write_audits(MBENCH, Reader(store), board, "A", out)
    assert sorted(x.name for x in (out / "crops").iterdir()) == before


def test_audit_link_covers_board_ids_a_pattern_spec_declares():
    """NarrativeTrack's measured.<dim>.<format> cells are board ids declared by one pattern spec: they get their page's
    link; an id the pattern does not match, or no spec at all, still gets none (no 404 link)."""
    from bench_assets.core import audit as AU
    from bench_assets.core.site import audit_link, report_base_url
    from bench_assets.narrativetrack.metric_specs import METRICS
    link = audit_link("narrativetrack", "ans", METRICS.specs)
    assert link("measured.EE.binary") == f"{report_base_url()}/audit/narrativetrack/" \
                                         f"{AU.audit_filename('measured.EE.binary', 'ans')}"
    assert link("accuracy.direction.forward").endswith("/accuracy.direction.forward__ans.html")
    assert link("accuracy.avg").endswith("/accuracy.avg__ans.html")
    for bad in ("measured.OC.ordering", "measured.EE", "accuracy.nothing", "no_such_metric"):
        assert link(bad) is None, bad


def test_locot2v_units_are_the_events_and_subjects_in_the_rows_detail():
    """Pure: per event its intra-event consistency in % (None with why where it had < 2 appearances), per subject
    its inter-event consistency, a subject grounded in one event only None with why; other metrics give no unit."""
    from bench_assets.locot2v.page import appearance_rows, unit_rows
    found = [{"event": 0, "frame": f, "subject": "subject0", "text": "a cat", "box": [1, 2, 30, 40], "a": 0.5}
             for f in (0, 3, 6, 9, 12, 15)] + [{"event": 2, "frame": 50, "subject": "subject1", "text": "a dog",
                                                "box": [5, 5, 25, 25], "a": 0.4}]
    rows = pd.DataFrame([
        {"generator": "g", "item": "s1", "level": "item", "metric_id": "intra_event_subject_consistency",
         "value": 80.0, "source_sha256": "abc",
         "detail": json.dumps({"events": [0.9, None, -0.2], "ranges": [[0, 20], [20, 40], [40, 60]],
                               "found": found, "subjects": {"subject0": ["a cat"], "subject1": ["a dog"]}})},
        {"generator": "g", "item": "s1", "level": "item", "metric_id": "inter_event_subject_consistency",
         "value": 70.0, "source_sha256": "abc",
         "detail": json.dumps({"elements": {"subject0": 0.7}, "subjects": {"subject0": ["a cat", "the cat"],
                                                                           "subject1": ["a dog"]}})},
        {"generator": "g", "item": "s1", "level": "item", "metric_id": "dynamic_degree", "value": 100.0,
         "detail": json.dumps({"events": [0.1]})}])
    u = unit_rows(rows)
    u = u.astype(object).where(u.notna(), None)
    got = [(r["metric_id"], r["level"], r["entity_id"], r["subject"], r["frames"], r["value"], r["reason"])
           for r in u.to_dict("records")]
    assert got == [
        ("intra_event_subject_consistency", "event", "event 0", "a cat", "0-19", 90.0, None),
        ("intra_event_subject_consistency", "event", "event 1", None, "20-39", None,
         "fewer than 2 subject appearances in this event"),
        ("intra_event_subject_consistency", "event", "event 2", "a dog", "40-59", 0.0, None),
        ("inter_event_subject_consistency", "subject", "subject0", "a cat; the cat", None, 70.0, None),
        ("inter_event_subject_consistency", "subject", "subject1", "a dog", None, None,
         "grounded in fewer than 2 events")]
    # appearances: 4 of event 0's 6 evenly (first and last kept), event 2's one, under both subject metrics
    a = appearance_rows(rows, video_of=lambda g, i: f"/v/{g}/{i}.mp4", sha_of=lambda p: "abc")
    assert sorted(set(a["metric_id"])) == ["inter_event_subject_consistency", "intra_event_subject_consistency"]
    mine = a[a["metric_id"] == "intra_event_subject_consistency"]
    assert list(mine["frame_index"]) == [0, 6, 9, 15, 50] and set(mine["crop_video"]) == {"/v/g/s1.mp4"}
    assert list(mine["crop_box"])[-1] == "[5, 5, 25, 25]"
    moved = appearance_rows(rows, video_of=lambda g, i: "/v/x.mp4", sha_of=lambda p: "other")
    assert moved["crop_box"].isna().all() and moved["detail"].str.contains("sha256 differs").all()
