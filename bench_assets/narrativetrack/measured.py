"""Questions whose gold answers rest only on what the offline pipeline measures reliably (no judge needed).

Offline, the attribute words (colours, box motion) rarely single a person out, so the attribute-anchored templates
ask nothing on real clips. Faces are measured: the face detector says where a face is and how large, and the face
identity (SFace, merge threshold calibrated on real footage) says whose it is. So the person is named by a measured,
checkable anchor -- "the person with the largest visible face at the beginning / at the end" (the largest face at
the first / last sample with a face, at least ``ANCHOR_AREA_RATIO`` times any other face there, every other box of
that sample looked at for a face) -- and the questions ask about when that face is visible (EE, the paper's three
track types plus "None of the above") and whether the two anchors are the same person (EA). Face visibility is
trusted per 1 fps sample: seen (the identity's box has a face), absent (the identity has no box there), unknown
(its box without a face: seen from behind, or not looked at). A class is used only when it is the same with every
unknown read as seen and as absent. An identity split in two would make a false absence, so an anchor whose face
is close to another identity's (within ``NEAR_MISS_MARGIN`` of the calibrated merge threshold) asks nothing. Every
question records the source of each fact it rests on.
"""
from __future__ import annotations

import json
from typing import Optional, Sequence

from bench_assets.core import kernels
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import pipeline
from bench_assets.narrativetrack.stages import min_face_height

ANCHOR_AREA_RATIO = 2.0      # the anchor's face is at least this many times larger (area) than any other face
NEAR_MISS_MARGIN = 0.1       # another identity whose mean face is within this of the merge threshold may be the
                             # anchor split in two: its presence could be the anchor's, so no question rests on it
WHEN = {"start_to_later": "at the beginning", "later_to_start": "at the end"}
ANCHOR = "the person with the largest visible face {when}"
# EE, worded on the face (a person seen from behind is not "gone" to a viewer, their face is): per track type the
# paper's group, yes when the measured class is that type; variants that claim an absence only (never "also seen")
EE_FACE_BINARY = {
    "disappear": ["Is the face of {p} seen only at the beginning and never again?",
                  "Does the face of {p} leave the view after the beginning and never come back?"],
    "reappear_start_to_later": ["Is the face of {p} out of view for a while and then seen again later?",
                                "Does the face of {p} disappear for a while and later come back into view?"],
    "appear": ["Is the face of {p} seen only at the end, and not earlier?",
               "Does the face of {p} first come into view at the end?"],
    "reappear_later_to_start": ["Was the face of {p} also seen at the beginning, and then out of view for a while?",
                                "Before the end, was the face of {p} seen at the beginning and then gone for a while?"],
}
EE_FACE_GROUPS = {"start_to_later": ("disappear", "reappear_start_to_later"),
                  "later_to_start": ("appear", "reappear_later_to_start")}
EE_FACE_MC = ["Which best describes when the face of {p} is visible?",
              "When is the face of {p} in view?"]
EE_FACE_OPTIONS = {"appear": "Only at the end",
                   "reappear": "At the start, then out of view for a while, then again",
                   "disappear": "At the start, then never again"}
EA_FACE_BINARY = ["Is {p} the same person as {q}?",
                  "Are {p} and {q} the same person?"]


def face_states(samples: Sequence[int], boxes_at: dict, entity: int) -> dict[int, str]:
    """seen / absent / unknown per sample for one identity (see the module note)."""
    out = {}
    for k in samples:
        own = [b for b in boxes_at.get(k, []) if b["entity"] == entity]
        if not own:
            out[k] = "absent"
        elif any(b["face_h"] is not None for b in own):
            out[k] = "seen"
        else:
            out[k] = "unknown"
    return out


def track_class(times: Sequence[float], seen: Sequence[bool], duration: float, step: float,
                gap: float = constants.GAP_TOLERANCE_S, edge: float = constants.EDGE_TOLERANCE_S) -> str:
    runs = pipeline.presence_runs([t for t, s in zip(times, seen) if s], gap, step)
    tt = pipeline.track_type(runs, duration, edge)
    if tt == "reappear" and runs[0][0] > edge:
        return "other"  # comes and goes, but was not there at the start: none of the paper's three
    return tt


def anchor(samples_order: Sequence[int], boxes_at: dict, times: dict, duration: float, direction: str,
           edge: float = constants.EDGE_TOLERANCE_S) -> tuple[Optional[int], dict]:
    """The identity with the largest face at the first (last) sample with a face, or None and why."""
    order = list(samples_order) if direction == "start_to_later" else list(reversed(samples_order))
    k = next((k for k in order if any(b["face_h"] is not None for b in boxes_at.get(k, []))), None)
    if k is None:
        return None, {"why": "no face large enough anywhere"}
    t = times[k]
    if (direction == "start_to_later" and t > edge) or (direction == "later_to_start" and t < duration - edge - 1.0):
        return None, {"why": f"the first/last face is at {t:.1f} s, not {WHEN[direction]}"}
    bs = boxes_at[k]
    faces = sorted([b for b in bs if b["face_h"] is not None], key=lambda b: -b["face_area"])
    top = faces[0]
    if top["entity"] is None:
        return None, {"why": "the largest face belongs to no main character"}
    second = faces[1]["face_area"] if len(faces) > 1 else 0.0
    if second * ANCHOR_AREA_RATIO > top["face_area"]:
        return None, {"why": f"two faces of similar size at sample {k}"}
    for b in bs:
        if b is top or b["face_h"] is not None:
            continue
        if not b["examined"] and b["box_area"] * ANCHOR_AREA_RATIO > top["face_area"]:
            return None, {"why": f"a box at sample {k} was not looked at for a face"}
    return top["entity"], {"sample": k, "t": round(t, 3), "face_height_px": round(top["face_h"], 1),
                           "area_ratio_to_next_face": (round(top["face_area"] / second, 2) if second else None)}


def near_miss(dets: Sequence[dict], entity: int, merge: float, frame_height: Optional[float] = None) -> Optional[float]:
    """The highest cosine between the identity's mean face and another identity's (every identity, main character
    or not) when it is within ``NEAR_MISS_MARGIN`` of ``merge``, else None. Faces below the identity step's size limit
    (relative to ``frame_height``) are left out, as the identity step leaves them out."""
    min_h = min_face_height(frame_height)
    by: dict = {}
    anchor_ids = {d.get("identity") for d in dets if d["entity"] == entity}
    for d in dets:
        if d.get("face_emb") is None or d.get("identity") is None:
            continue
        fb = d["face_box"]
        if fb is None or fb[3] - fb[1] < min_h:
            continue
        by.setdefault(d["identity"], []).append(kernels.l2_normalise(d["face_emb"]))
    mine = [v for i in anchor_ids if i in by for v in by[i]]
    if not mine:
        return None
    m = kernels.l2_normalise(sum(mine))
    worst = max((float(m @ kernels.l2_normalise(sum(vs))) for i, vs in by.items() if i not in anchor_ids), default=-1.0)
    return round(worst, 3) if worst >= merge - NEAR_MISS_MARGIN else None


def generate(video_id: str, frames: Sequence[dict], dets: Sequence[dict], duration: float, step: float,
             entity_names: dict, seed_rng=None, face_merge: Optional[float] = None,
             frame_height: Optional[float] = None) -> list[dict]:
    """Measured questions of one video. ``frames``: [{sample, t}]; ``dets``: [{sample, box, entity (main character
    id or None), identity (any identity or None), face_box, face_emb (or None), examined}]; ``entity_names``: entity
    -> "P1"...; ``face_merge``: the calibrated face merge threshold (the near-miss guard); ``frame_height``: the
    video's height, so a face's size is judged against the frame's as the identity step judges it (issue 23: the
    same frames at another size anchor the same faces); without it the absolute ``FACE_MIN_HEIGHT``. Returns QA
    records (truth at (a) for MC, or "d" when none of the three types fits)."""
    min_h = min_face_height(frame_height)
    times = {int(f["sample"]): float(f["t"]) for f in frames}
    order = sorted(times)
    boxes_at: dict[int, list] = {}
    for d in dets:
        fb = d.get("face_box")
        fh = float(fb[3] - fb[1]) if fb is not None else None
        if fh is not None and fh < min_h:
            fh = None  # too small to carry identity (the identity step ignores it too)
        b = d["box"]
        boxes_at.setdefault(int(d["sample"]), []).append({
            "entity": d["entity"], "face_h": fh,
            "face_area": (float((fb[2] - fb[0]) * (fb[3] - fb[1])) if fh is not None else 0.0),
            "box_area": float((b[2] - b[0]) * (b[3] - b[1])), "examined": bool(d.get("examined", True))})
    out: list[dict] = []
    anchors = {}
    for direction in ("start_to_later", "later_to_start"):
        ent, info = anchor(order, boxes_at, times, duration, direction)
        if ent is not None and face_merge is not None and near_miss(dets, ent, face_merge, frame_height) is not None:
            continue  # possibly one person split into two identities: absences would be false
        if ent is not None:
            if face_merge is not None:
                info = {**info, "nearest_other_face_cosine_below": round(face_merge - NEAR_MISS_MARGIN, 4)}
            anchors[direction] = (ent, info)
    pick = (lambda n: 0) if seed_rng is None else (lambda n: int(seed_rng.integers(n)))

    def add(ent, dim, fmt, direction, question, options, answer, template, sources):
        out.append({"qa_id": f"{video_id}.{entity_names[ent]}.{dim}.{fmt}.{direction}.m{len(out):02d}",
                    "video_id": video_id, "entity_id": entity_names[ent], "dimension": dim, "format": fmt,
                    "direction": direction, "track_type": cls_of.get(ent, "unknown"), "distractor": "none",
                    "question": question, "options": options, "answer": answer, "template": template,
                    "anchor_segment": None, "group": None,
                    "attribute_sources": json.dumps(sources, sort_keys=True)})

    cls_of: dict = {}
    for direction, (ent, info) in anchors.items():
        st = face_states(order, boxes_at, ent)
        ts = [times[k] for k in order]
        hi = track_class(ts, [st[k] != "absent" for k in order], duration, step)
        lo = track_class(ts, [st[k] == "seen" for k in order], duration, step)
        if hi != lo:
            continue  # an unknown sample decides the class: no question
        cls_of[ent] = hi
        p = ANCHOR.format(when=WHEN[direction])
        src = {"anchor": {"source": "face detector (largest face)", **info},
               "identity": f"ReID + face identity {entity_names[ent]} (face merge cosine calibrated)",
               "presence": {"source": "face seen per 1 fps sample",
                            "seen_s": [round(times[k], 2) for k in order if st[k] == "seen"],
                            "unknown_s": [round(times[k], 2) for k in order if st[k] == "unknown"]},
               "class": hi}
        for g in EE_FACE_GROUPS[direction]:
            kind = g.split("_")[0]
            ans = "yes" if hi == kind else "no"
            v = pick(len(EE_FACE_BINARY[g]))
            add(ent, "EE", "binary", direction, EE_FACE_BINARY[g][v].format(p=p), None, ans,
                f"EE.binary.face.{g}.{v}", src)
        v = pick(len(EE_FACE_MC))
        kinds = ["appear", "reappear", "disappear"]
        if hi in kinds:
            opts = [EE_FACE_OPTIONS[hi]] + [EE_FACE_OPTIONS[o] for o in kinds if o != hi]
            ans = "a"
        else:
            opts, ans = [EE_FACE_OPTIONS[o] for o in kinds], "d"  # visible throughout, or none of the three
        add(ent, "EE", "mc", direction, EE_FACE_MC[v].format(p=p), opts, ans, f"EE.mc.face.{v}", src)
    if len(anchors) == 2:
        (e1, i1), (e2, i2) = anchors["start_to_later"], anchors["later_to_start"]
        v = pick(len(EA_FACE_BINARY))
        q = EA_FACE_BINARY[v].format(p=ANCHOR.format(when=WHEN["start_to_later"]),
                                     q=ANCHOR.format(when=WHEN["later_to_start"]))
        add(e1, "EA", "binary", "start_to_later", q, None, "yes" if e1 == e2 else "no", f"EA.binary.face.{v}",
            {"anchor": {"source": "face detector (largest face)", **i1},
             "other": {"source": "face detector (largest face)", **i2},
             "identity": f"ReID + face identities {entity_names[e1]} / {entity_names[e2]} "
                         f"(face merge cosine calibrated)"})
    return out
