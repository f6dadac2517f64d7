"""The face-merge threshold of identity refinement, calibrated on faces whose identities are known (real, animated and
drawn), never picked by hand.

Why: a dialogue of two animated characters (opencv-doc's Megamind clip: a woman in shots 1 and 3, a man in 2 and 4)
has SFace cosines of .50-.60 between the two people's mean faces, so a hand-picked 0.45 merged them into one
identity. Real faces of different people sit far lower, the same person far higher; animated faces of different
people sit higher than real ones. The threshold therefore comes from labelled data of both kinds.

Data (``SOURCES``; every label is hand-checked: data/footage/*.yaml sidecars, the embedded videos' sidecars, and the
Megamind shot labels below): faces are detected on whole frames (upscaled so the short side is >= 480 px, as person
crops are upscaled in the pipeline), assigned to a labelled person by the face centre, and averaged in groups of up
to ``GROUP`` faces of one person in one shot (a tracklet's mean face, as ``face_refine`` compares them). Pairs of
groups are "same" (one person) or "different" (two people; across sources always different, except where a sidecar
says a person recurs, e.g. the bearded man of basketball1/2).

Rule (``choose_threshold``): merging two people corrupts every question about both; not merging one person's two
clusters only costs questions. So the threshold is the midpoint between the highest different-pair cosine and the
lowest same-pair cosine above it (no false merge on the calibration pairs), and ``leave_one_out`` reports, for each
source, the threshold calibrated without it and the false merges / same-pair recall on that source's pairs (a check
on data the threshold did not see). ``python -m bench_assets.narrativetrack.calibration --megamind PATH`` recomputes
``face_calibration.json`` beside this file (group embeddings, the threshold, the checks); the pipeline reads the
threshold from there and the manifest records it.
"""
from __future__ import annotations

import argparse
import hashlib
import itertools
import json
import sys
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

GROUP = 4
MIN_SHORT_SIDE = 480
FILE = Path(__file__).with_name("face_calibration.json")   # a property of the method (model + rule), not of a dataset


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


def make_groups(faces: Sequence[dict], size: int = GROUP) -> list[dict]:
    """Faces {"source", "person", "shot", "t", "emb"} -> mean unit embeddings of up to ``size`` consecutive faces of
    one person in one shot."""
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


# ----------------------------------------------------------------------------------------------- labelled sources

def _inside(c, box) -> bool:
    return box[0] <= c[0] <= box[2] and box[1] <= c[1] <= box[3]


def _megamind_label(shot: int, box, faces_in_frame) -> Optional[str]:
    """Hand labels (checked by eye on every sixth frame): shot 0 the woman (the large face) and a blurred diner behind
    her (the small face on the right); shot 1 the man; shot 2 the woman on the left and the man's half-turned head on
    the right; shot 3 the man in close-up."""
    area = (box[2] - box[0]) * (box[3] - box[1])
    if shot == 0:
        return "woman" if area > 10000 else "diner"
    if shot in (1, 3):
        return "man"
    if shot == 2:
        return "woman" if (box[0] + box[2]) / 2 < 330 else "man"
    return None


def _footage_boxes(gt: dict, person_key: str = "people") -> Callable:
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
            if _inside(c, [box[0] - margin, box[1] - margin, box[2] + margin, box[3] + margin]):
                hits.append(name)
        return hits[0] if len(hits) == 1 else None
    return label


def collect_faces(face_model, sources: dict[str, dict], step_s: float = 0.2, log=print) -> list[dict]:
    """Detect and embed every face of the labelled sources. ``sources``: name -> {"path", "kind": video|image|nt,
    "label": fn, ...}."""
    import cv2

    from bench_assets.core.media import VideoSource
    from bench_assets.narrativetrack.pipeline import shot_ids
    out = []
    for name, s in sources.items():
        if s["kind"] == "image":
            frames, idx = [cv2.cvtColor(cv2.imread(str(s["path"])), cv2.COLOR_BGR2RGB)], [0]
            shots = [0]
        else:
            src = VideoSource(s["path"])
            step = max(1, int(round(src.fps * step_s)))
            req = src.take(list(range(0, src.n_frames, step)))
            src.run()
            frames, idx = list(req.frames), list(req.indices)
            shots = shot_ids(frames) if s.get("cuts") is None else [sum(i >= c for c in s["cuts"]) for i in idx]
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


def default_sources(megamind: Optional[str], nt_root: Path) -> tuple[dict, dict]:
    """The labelled sources available here: the pinned real footage (bench_assets.core.footage), the embedded drawn
    videos with their sidecars, and the animated Megamind dialogue when its file is given."""
    from bench_assets.core import footage as F
    srcs: dict[str, dict] = {}
    same_as: dict[str, str] = {}
    for clip in ("carphone_pristine.mp4", "bikes.mp4", "bigbuckbunny.mp4"):
        if F.available(clip):
            gt = F.ground_truth(clip)
            lab = _footage_boxes(gt)
            srcs[clip] = {"path": F.footage_path(clip), "kind": "video", "cuts": gt.get("cuts", []),
                          "label": (lambda lab: lambda i, shot, box, c: lab(i, c))(lab)}
    stills = F.ground_truth("stills.yaml") if (F.GROUND_TRUTH_DIR / "stills.yaml").is_file() else {}
    for img in ("messi5.jpg", "basketball1.png", "basketball2.png"):
        if img in stills and F.available(img):
            people = {k: v for k, v in stills[img]["people"].items() if v.get("face_visible")}
            srcs[img] = {"path": F.footage_path(img), "kind": "image", "label": (
                lambda people: lambda i, shot, box, c: next((k for k, v in people.items() if _inside(c, v["box"])),
                                                            None))(people)}
    same_as["basketball2.png/basketball_bearded_man"] = "basketball1.png/basketball_bearded_man"
    for vid in ("nt001", "nt002", "nt003"):
        gt_p = nt_root / "groundtruth" / f"{vid}.json"
        if gt_p.is_file():
            gt = json.loads(gt_p.read_text())
            for person in gt["people"]:  # the embedded videos reuse the same four people (photographs)
                same_as[f"{vid}/{person}"] = f"embedded/{person}"
            fr = {f["frame"]: f["persons"] for f in gt["frames"]}
            srcs[vid] = {"path": nt_root / "videos" / f"{vid}.mp4", "kind": "video", "cuts": None,
                         "label": (lambda fr: lambda i, shot, box, c: next(
                             (p["person"] for p in fr.get(i, []) if _inside(c, p["box"])), None))(fr)}
    if megamind:
        srcs["Megamind.avi"] = {"path": Path(megamind), "kind": "video", "cuts": None,
                                "label": lambda i, shot, box, c: _megamind_label(shot, box, None)}
    return srcs, same_as


def load(path: Path = FILE) -> Optional[dict]:
    p = Path(path)
    return json.loads(p.read_text()) if p.is_file() else None


def recompute(doc: dict) -> dict:
    """The threshold and checks again from the stored group embeddings (what a test compares with the file)."""
    groups = [{**g, "emb": np.asarray(g["emb"], float) / np.linalg.norm(g["emb"])} for g in doc["groups"]]
    pairs = group_pairs(groups, doc["same_as"])
    cal = choose_threshold([p["cos"] for p in pairs if p["same"]], [p["cos"] for p in pairs if not p["same"]])
    return {**cal, "leave_one_source_out": leave_one_out(pairs)}


def face_merge_threshold(fallback: float, path: Path = FILE) -> tuple[float, dict]:
    """(threshold, what the manifest records): the calibrated value, or the fallback with the reason."""
    doc = load(path)
    if doc is None:
        return fallback, {"calibrated": False, "reason": f"no {Path(path).name}: FACE_MERGE_COSINE fallback"}
    keep = ("threshold", "max_different", "min_same_above", "n_same", "n_different", "same_recall", "false_merges",
            "model", "group_size", "leave_one_source_out")
    return float(doc["threshold"]), {"calibrated": True, "file": Path(path).name, **{k: doc[k] for k in keep},
                                     "sources": {k: v["kind"] for k, v in doc["sources"].items()}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--megamind", help="opencv-doc examples/data/Megamind.avi (the animated dialogue)")
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    from bench_resources.models import ModelRegistry
    from bench_resources.paths import PROJECT_ROOT
    nt_root = PROJECT_ROOT / "data" / "narrativetrack"
    reg = ModelRegistry(profile="offline")
    srcs, same_as = default_sources(a.megamind, nt_root)
    faces = collect_faces(reg.slot("face"), srcs)
    groups = make_groups(faces)
    stored = [{"source": g["source"], "person": g["person"], "shot": g["shot"], "n_faces": g["n_faces"],
               "emb": [round(float(x), 5) for x in g["emb"]]} for g in groups]
    doc0 = {"groups": stored, "same_as": same_as}
    cal = recompute(doc0)
    files = {k: hashlib.sha256(Path(v["path"]).read_bytes()).hexdigest() for k, v in srcs.items()}
    kinds = {k: ("animated" if k in ("Megamind.avi", "bigbuckbunny.mp4") else "drawn" if k.startswith("nt")
                 else "real") for k in srcs}
    doc = {"what": "FACE_MERGE_COSINE calibrated on faces of known identity (bench_assets/narrativetrack/"
                   "calibration.py)", "model": reg.status("face").checkpoint, "group_size": GROUP,
           **cal, "sources": {k: {"kind": kinds[k], "sha256": files[k],
                                  "groups": sum(g["source"] == k for g in groups),
                                  "faces": sum(f["source"] == k for f in faces)} for k in srcs},
           **doc0}
    out = Path(a.out) if a.out else FILE
    out.write_text(json.dumps(doc, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in doc.items() if k not in ("groups",)}, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
