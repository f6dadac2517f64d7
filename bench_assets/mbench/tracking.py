"""MBench's per-video intermediates as rows, no Dagster: the trajectory read back from the poses table, the
target's box / mask per frame and the face tracks (track_rows, planned by track_plan)."""

import json
from typing import Optional

import numpy as np
import pandas as pd

from bench_assets.core.slots import load_slot
from bench_assets.mbench import dataset
from bench_assets.mbench import frames as FR
from bench_assets.mbench import geometry
from bench_assets.mbench import identity_calibration as IC
from bench_assets.mbench import metrics
from bench_assets.mbench import pipeline as PL
from bench_resources.device import Device
from bench_resources.models import ModelRegistry


def trajectory(poses: pd.DataFrame):
    """(rotations, camera centres, revisit pairs) read back from the poses table; (None, None, None) when the pose
    slot was unavailable."""
    if (poses["kind"] == "unavailable").any():
        return None, None, None
    fr = poses[poses["kind"] == "frame"].sort_values("frame")
    Rs = [np.asarray(r, float).reshape(3, 3) for r in fr["R"]]
    C = np.stack([np.asarray(c, float) for c in fr["C"]])
    pairs = [(int(r.i), int(r.j)) for r in poses[poses["kind"] == "pair"].itertuples()]
    return Rs, C, pairs


def scale_box(bbox_cxcywh, init_size: Optional[tuple[int, int]], out_size: tuple[int, int]):
    """The case's [cx, cy, w, h] (pixels of the init frame) as xyxy in the output's pixels."""
    cx, cy, bw, bh = (float(v) for v in bbox_cxcywh)
    sx, sy = (out_size[0] / init_size[0], out_size[1] / init_size[1]) if init_size else (1.0, 1.0)
    return ((cx - bw / 2) * sx, (cy - bh / 2) * sy, (cx + bw / 2) * sx, (cy + bh / 2) * sy)


def _init_box(case: dataset.Case, frame0: np.ndarray, models: ModelRegistry, device: Device,
              init_size: Optional[tuple[int, int]] = None):
    """(box, how): A: the case's box rescaled from the init frame to the output; T: the first-frame detection of
    "name + attributes" (open-vocabulary slot)."""
    if case.target.get("bbox") and case.mode == "A":
        h, w = frame0.shape[:2]
        how = ("the case's ground-truth box" + (f", rescaled from {init_size[0]}x{init_size[1]} to {w}x{h}"
                                                if init_size and tuple(init_size) != (w, h) else ""))
        return scale_box(case.target["bbox"], init_size, (w, h)), how
    det, why = load_slot(models, device, "open_vocab_detector")
    if det is None:
        return None, why
    if not case.target.get("name"):
        return None, "the case names no target"
    d = det.detect([frame0], f"{case.target['name']}, {case.target.get('attributes', '')}", kind="object")[0]
    if len(d) == 0:
        return None, f"the target was not detected in the first frame ({getattr(det, 'last_reason', None) or 'no box'})"
    return tuple(float(v) for v in d.xyxy[int(np.argmax(d.confidence))]), "first-frame open-vocabulary detection"


def track_rows(case: dataset.Case, frames: list[np.ndarray], Rs, models: ModelRegistry, device: Device, C=None,
               init_size: Optional[tuple[int, int]] = None) -> list[dict]:
    """Object box per frame (the case box / first-frame detection carried by the full pose) and face detections
    with their track id, embedding and enclosing person box, for the subsets that use them. ``frames``: a list, or
    the step's ``FR.VideoFrames`` planned by ``track_plan``."""
    h, w = FR.frame_hw(frames)
    K = geometry.intrinsics(w, h)
    subs = set(metrics.SUBSET_METRICS[case.subset])
    rows: list[dict] = []
    if {"geometry", "texture"} & subs:
        if Rs is None:
            rows.append({"kind": "object_unavailable", "reason": "the box is propagated along the trajectory, and the "
                                                                 "pose slot is unavailable"})
        else:
            init_box, how = _init_box(case, frames[0], models, device, init_size)
            segmenter, swhy = load_slot(models, device, "object_segmenter") if init_box is not None else (None, None)
            if init_box is None:
                rows.append({"kind": "object_unavailable", "reason": how})
            elif segmenter is not None:
                name = getattr(segmenter, "name", type(segmenter).__name__)
                for k, m in enumerate(PL.object_masks(segmenter, frames, init_box)):
                    b = PL.mask_box(m) if m is not None else None
                    rows.append({"kind": "object", "frame": k, "box": json.dumps(b) if b else None,
                                 "mask": PL.encode_mask(m) if b else None, "mask_source": name,
                                 "reason": f"{how}; masks propagated over the video by the object_segmenter slot"})
            else:
                depth, dhow = (None, "no camera centres") if C is None else \
                    PL.box_depth(PL.LazyFeatures(frames), Rs, C, K, init_box)
                for k, b in enumerate(PL.propagate_box(init_box, Rs, K, (w, h), C=C, depth=depth)):
                    rows.append({"kind": "object", "frame": k, "box": json.dumps(b) if b else None,
                                 "mask": None, "mask_source": "pose_box",
                                 "reason": f"{how}; {dhow}; box carried by the pose (offline substitute: {swhy})"})
    if {"identity", "appearance"} & subs:
        face, why = load_slot(models, device, "face")
        if face is None:
            rows.append({"kind": "face_unavailable", "reason": why})
            return rows
        thr, source = metrics.identity_threshold(models.status("face").checkpoint)
        if thr is None:
            rows.append({"kind": "face_unavailable", "reason": source})
            return rows
        idx = PL.even(len(frames), PL.IDENTITY_FRAMES)
        obs = PL.face_observations(face, frames, idx)
        # the threshold is the face model's on real faces: the video's faces must read as real (issue 37); drawn or
        # uncertain faces are kept (counted, with their quality) but not tracked, so nothing is merged by it
        dom = IC.face_domain([e for o in obs for e, _, _ in o], models.status("face").checkpoint)
        rows.append({"kind": "face_domain", "reason": dom["unknown_reason"], "domain": json.dumps(dom)})
        if dom["unknown_reason"]:
            rows += [{"kind": "face", "frame": idx[f], "track": None, "embedding": np.asarray(emb).tolist(),
                      "box": json.dumps(fbox), "person_box": None, "threshold": None, "reason": dom["unknown_reason"],
                      "quality": json.dumps(q.as_dict()) if q is not None else None}
                     for f, o in enumerate(obs) for emb, fbox, q in o]
            return rows
        person, pwhy = load_slot(models, device, "person_detector")
        if person is None:
            rows.append({"kind": "person_unavailable", "reason": pwhy})
        bodies = {f: person.detect([frames[idx[f]]])[0] for f, o in enumerate(obs) if o} if person else {}
        for t_id, t in enumerate(metrics.face_tracks([[e for e, _, _ in o] for o in obs], max_distance=thr)):
            for f, d in t:
                emb, fbox, q = obs[f][d]
                pb = bodies.get(f)
                pbox = PL.person_box_for(fbox, pb.xyxy) if pb is not None and len(pb) else None
                rows.append({"kind": "face", "frame": idx[f], "track": t_id, "embedding": np.asarray(emb).tolist(),
                             "box": json.dumps(fbox), "person_box": json.dumps(pbox) if pbox else None,
                             "threshold": thr, "reason": source,
                             "quality": json.dumps(q.as_dict()) if q is not None else None})
    return rows


def track_plan(case: dataset.Case, n_frames: int, Rs, C, models: ModelRegistry,
               device: Device) -> tuple[set[int], bool]:
    """(frames to gather, walk every frame) for ``track_rows``: frame 0 for the init box; with the object_segmenter
    slot every frame in order (propagation), else the frames ``box_depth`` triangulates with; the identity frames."""
    subs = set(metrics.SUBSET_METRICS[case.subset])
    gather, walk = set(), False
    if {"geometry", "texture"} & subs and Rs is not None:
        gather.add(0)
        if load_slot(models, device, "object_segmenter")[0] is not None:
            walk = True
        elif C is not None:
            gather |= set(geometry.helper_candidates(0, n_frames + 10 * geometry.PAIR_DEFAULT.helper_window, C,
                                                     n_frames))
    if {"identity", "appearance"} & subs and load_slot(models, device, "face")[0] is not None \
            and metrics.identity_threshold(models.status("face").checkpoint)[0] is not None:
        gather |= set(PL.even(n_frames, PL.IDENTITY_FRAMES))
    return gather, walk
