"""MBench wiring: partitions (generator x case), resources, metadata. Math in metrics.py / geometry.py, per-case
model work in pipeline.py, the board's maths in board.py, the metric specs in metric_specs.py."""

import json
from contextlib import contextmanager
from typing import Any, Optional

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.board_text import board_markdown
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.metric_spec import substitute_label
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.slots import load_slot
from bench_assets.mbench import dataset
from bench_assets.mbench import frames as FR
from bench_assets.mbench import geometry
from bench_assets.mbench import judging
from bench_assets.mbench import metrics
from bench_assets.mbench import pipeline as PL
from bench_assets.mbench import board
from bench_assets.mbench.metric_specs import IDENTITY_FIRST_APPEARANCE, judge_substitute, label_text, slots_used
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

BENCH = "mbench"
PROTOCOL = "mbench-1.1"
P = BenchmarkPartitions(BENCH)
GROUP = "mbench"
SLOTS = ("pose", "image_embedder", "face", "person_detector", "open_vocab_detector", "object_segmenter", "style_vgg",
         "clip_b32")
TRACK_COLUMNS = ["kind", "frame", "box", "reason", "track", "embedding", "person_box", "threshold", "mask",
                 "mask_source"]
CONSTANTS = {"visual_odometry": geometry.VO_DEFAULT.as_dict(), "revisit_pair": geometry.PAIR_DEFAULT.as_dict(),
             "identity_frames": PL.IDENTITY_FRAMES,
             "identity_thresholds": {k: {"max_cosine_distance": v, "source": src}
                                     for k, (v, src) in metrics.IDENTITY_THRESHOLDS.items()},
             "identity_calibration": metrics.SFACE_CALIBRATION,
             "lighting_alpha": metrics.LIGHTING_ALPHA, "lighting_tau": metrics.LIGHTING_TAU,
             "trigger_frames": PL.TRIGGER_FRAMES,
             "text_frames_per_segment": PL.TEXT_FRAMES_PER_SEGMENT,
             "revisit_T": {"translation": geometry.REVISIT_T_TRANSLATION, "angle_deg": geometry.REVISIT_T_ANGLE_DEG,
                           "top": geometry.REVISIT_T_TOP},
             "revisit_A": {"max_pairs": geometry.REVISIT_A_MAX, "angle_deg": geometry.REVISIT_A_ANGLE_DEG,
                           "min_gap_fraction": geometry.REVISIT_MIN_GAP_FRACTION},
             "geometry_min_object_matches": PL.MIN_OBJECT_MATCHES,
             "object_mask": "object_segmenter slot (SAM 2 video propagation prompted on the first frame with the "
                            "case's box / the first-frame detection) when available; else (offline substitute) the "
                            "box carried by the full pose as a fronto-parallel plane at its triangulated depth "
                            "(rotation only without depth); each row records mask_source",
             "object_mask_min_pixels": PL.MIN_MASK_PIXELS,
             "geometry_warp": "homography on matches inside the object mask (or box), else K R K^-1 from the "
                              "trajectory",
             "errors": "pixels at the video's resolution; per pair the median over RANSAC-consistent matches; "
                       "score exp(-E); a forgotten return view scores 0",
             "a_mode_box": "the case's box in init-frame pixels, rescaled to the output's resolution"}


def slot_manifest(models: ModelRegistry) -> dict[str, Any]:
    return models.manifest(SLOTS)


def _protocol(models: ModelRegistry, judge: Optional[Judge] = None) -> str:
    return protocol_digest({"protocol": PROTOCOL, "models": slot_manifest(models), "constants": CONSTANTS,
                            "judge": judge.fingerprint() if judge is not None else None})


def _case(df: pd.DataFrame) -> dataset.Case:
    return dataset.parse_case(json.loads(df["case_json"].iloc[0]), "table")


def _video(paths: BenchPaths, generator: str, case_id: str) -> VideoSource:
    """The case's output video, probed (nothing decoded yet): each step states its frames, then decodes once."""
    path = dataset.output_video(paths.generator_dir(generator), case_id)
    if path.is_dir():
        raise Failure(f"generator {generator!r}, case {case_id}: {path} is a directory, not a video")
    if not path.is_file():
        raise Failure(f"generator {generator!r}, case {case_id}: no output video {path}")
    with _decoding(generator, case_id):
        return VideoSource(path)


@contextmanager
def _decoding(generator: str, case_id: str):
    """A video that fails while decoding (truncated, corrupt) is one clear error naming the item."""
    try:
        yield
    except DecodeError as e:
        raise Failure(f"generator {generator!r}, case {case_id}: {e}") from None


def _init_size(paths: BenchPaths, case: dataset.Case) -> Optional[tuple[int, int]]:
    """(width, height) of the case's init frame: the pixel space of its ground-truth box."""
    if not case.init_frame:
        return None
    p = paths.benchmark_dir(BENCH) / "frames" / case.init_frame
    if not p.is_file():
        raise Failure(f"case {case.case_id}: init frame {p} is missing (its box cannot be placed in the output)")
    from PIL import Image
    with Image.open(p) as im:
        return im.size


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def mbench_case(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated case (canonical format, T or A mode)."""
    try:
        case = dataset.load_case(paths.benchmark_dir(BENCH) / "cases" / f"{context.partition_key}.json")
    except dataset.CaseError as e:
        raise Failure(description=str(e)) from None
    df = pd.DataFrame([{"case_id": case.case_id, "subset": case.subset, "mode": case.mode,
                        "case_json": json.dumps(case.to_json(), sort_keys=True)}])
    return Output(df, metadata={"subset": case.subset, "mode": case.mode})


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="2", pool="gpu", op_tags=GPU_OP_TAGS)
def mbench_poses(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                 models: ModelRegistry, device: Device) -> Output[pd.DataFrame]:
    """One camera trajectory for the whole video (pose slot) and the revisit pairs (T: pose-return ranking, top 5;
    A: turnaround split, up to 20 pairs)."""
    generator, case_id = P.split(context.partition_key)
    case = _case(mbench_case)
    src = _video(paths, generator, case_id)
    pose, why = load_slot(models, device, "pose")
    if pose is None:  # pose-dependent sub-dimensions become None with this reason; identity still scores
        df = pd.DataFrame([{"kind": "unavailable", "frame": None, "R": None, "C": None, "step_failed": None,
                            "i": None, "j": None, "reason": why}])
        df["generator"], df["case_id"], df["source_sha256"] = generator, case_id, src.sha256
        return Output(df, metadata={"frames": 0, "pairs": 0, "pairing": MetadataValue.text(why)})
    # every frame, walked once in chunks: the trajectory keeps each frame's features, never the frames
    frames = FR.VideoFrames(src, walk=True, name="mbench_poses")
    K = geometry.intrinsics(src.size[0], src.size[1])
    with _decoding(generator, case_id):
        est = pose.estimate(frames, K)
        frames.finish()   # a slot that stops after the last frame leaves the pass to be closed (and checked) here
    Rs, C, failed = est
    if len(Rs) != len(frames) or not src.done:
        raise Failure(f"generator {generator!r}, case {case_id}: the pose slot placed {len(Rs)} of "
                      f"{len(frames)} frames")
    if case.mode == "A":
        pairs, how = geometry.revisit_pairs_action(Rs, C)
    else:
        seg = PL.segment_of_frames(len(frames), len(case.segments))
        pairs, how = geometry.revisit_pairs_text(Rs, C, seg, len(case.segments)), "pose-return ranking, top 5"
    rows = [{"kind": "frame", "frame": k, "R": np.asarray(Rs[k]).reshape(-1).tolist(), "C": np.asarray(C[k]).tolist(),
             "step_failed": bool(failed[k - 1]) if k > 0 else False, "i": None, "j": None}
            for k in range(len(frames))]
    rows += [{"kind": "pair", "frame": None, "R": None, "C": None, "step_failed": None, "i": i, "j": j}
             for i, j in pairs]
    df = pd.DataFrame(rows)
    df["generator"], df["case_id"], df["source_sha256"] = generator, case_id, src.sha256
    meta = {"frames": len(frames), "pairs": len(pairs), "pairing": how, "failed_steps": int(sum(failed))}
    if getattr(est, "kinds", None):
        meta["step_kinds"] = MetadataValue.json({k: est.kinds.count(k) for k in sorted(set(est.kinds))})
    if getattr(est, "loop", None):
        meta["loop_closure"] = MetadataValue.json(est.loop)
    return Output(df, metadata=meta)


def _trajectory(poses: pd.DataFrame):
    if (poses["kind"] == "unavailable").any():
        return None, None, None
    fr = poses[poses["kind"] == "frame"].sort_values("frame")
    Rs = [np.asarray(r, float).reshape(3, 3) for r in fr["R"]]
    C = np.stack([np.asarray(c, float) for c in fr["C"]])
    pairs = [(int(r.i), int(r.j)) for r in poses[poses["kind"] == "pair"].itertuples()]
    return Rs, C, pairs


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="1")
def mbench_trigger(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                   judge: Judge, models: ModelRegistry) -> Output[pd.DataFrame]:
    """Stage 1 (T only): does the video create the case's memory challenge? A cases are triggered by their actions."""
    generator, case_id = P.split(context.partition_key)
    case = _case(mbench_case)
    row = {"generator": generator, "case_id": case_id, "mode": case.mode, "triggered": None, "confidence": None,
           "reason": None, "cache_key": None}
    if case.mode == "A":
        row.update(triggered=True, confidence=1.0, reason="action-conditioned: the actions enforce the challenge")
    else:
        ok, why = judge.available()
        if not ok:
            row["reason"] = f"trigger needs the judge: {why}"
        else:
            src = _video(paths, generator, case_id)
            req = src.even(PL.TRIGGER_FRAMES, name="mbench_trigger")
            with _decoding(generator, case_id):
                src.run()
            frames = req.frames
            res = judge.ask_many([judging.trigger_request(case.subset, case.segments, case.target, list(frames))])[0]
            row["cache_key"] = res.cache_key
            if res.status == "ok":
                row.update(triggered=bool(res.answer["triggered"]), confidence=float(res.answer["confidence"]),
                           reason=res.answer.get("reason"))
            else:
                row["reason"] = f"judge {res.status}: {res.reason}"
    df = pd.DataFrame([row])
    df["protocol"] = _protocol(models, judge)
    return Output(df, metadata={"triggered": str(row["triggered"]), "reason": MetadataValue.text(str(row["reason"]))})


def _value_row(generator, case, metric, value, reason=None, detail=None, n_eval=None, n_failed=0, n_skipped=None,
               evaluator=False):
    """One per-case sub-dimension row with its counts: n_eval instances scored, n_failed instances the evaluator
    could not compute (a model, slot or judge missing: ``n_failed_evaluator`` too), n_skipped instances that were
    not applicable (no texture, target out of view, no face)."""
    if n_eval is None:
        n_eval = 0 if value is None else 1
    if n_skipped is None:
        n_skipped = 0 if value is not None or evaluator else 1
    if value is None and evaluator and not n_failed:
        n_failed = 1
    return {"generator": generator, "case_id": case.case_id, "subset": case.subset, "mode": case.mode,
            "metric_id": metric, "value": None if value is None else float(value), "reason": reason,
            "detail": json.dumps(detail, sort_keys=True, default=float) if detail else None,
            "n_eval": int(n_eval), "n_failed": int(n_failed), "n_skipped": int(n_skipped),
            "n_failed_evaluator": int(n_failed if evaluator else 0)}


POSE_METRICS = ("geometry", "texture", "epipolar", "reprojection", "lighting", "action_instruction")


def case_metrics(case: dataset.Case) -> set:
    """The sub-dimensions that apply to a case."""
    return set(metrics.SUBSET_METRICS[case.subset]) | ({"text_instruction"} if case.mode == "T"
                                                       else {"action_instruction"})


def score_plan(case: dataset.Case, n_frames: int, Rs, C, pairs, models: ModelRegistry, device: Device,
               judge: Optional[Judge], tracks: pd.DataFrame):
    """(frames to gather, reductions) that ``case_scores`` reads: the frames every applicable sub-dimension needs,
    stated before the decode pass (frames.py says which frames each one needs)."""
    applies = case_metrics(case) - (set(POSE_METRICS) if Rs is None else set())
    wanted = {"image_embedder": {"texture", "appearance"}, "style_vgg": {"style"}, "clip_b32": {"text_instruction"}}
    slots = {name: load_slot(models, device, name)[0] for name, ms in wanted.items() if ms & applies}
    judge_ok = bool({"state_evolution", "evolution_correctness"} & applies) and judge is not None \
        and judge.available()[0]
    tracks = tracks if len(tracks) else pd.DataFrame(columns=TRACK_COLUMNS)
    return FR.score_plan(case, n_frames, C, pairs, tracks, applies, slots, judge_ok)


def case_scores(generator: str, case: dataset.Case, frames, Rs, C, pairs, models: ModelRegistry,
                device: Device, judge: Judge, tracks: pd.DataFrame, pose_reason: Optional[str] = None,
                reduced: Optional[FR.ScoreInputs] = None) -> list[dict]:
    """Every sub-dimension that applies to this case, on [0,1] (None with a reason when it cannot be computed).
    ``frames``: a list of frames, or the step's ``FR.VideoFrames`` with ``reduced`` from the same pass (the
    per-frame features, CIELAB means, Gram distances and texture embeddings planned by ``score_plan``)."""
    h, w = FR.frame_hw(frames)
    K = geometry.intrinsics(w, h)
    rows = []
    if reduced is None:   # frames in memory: the same reductions, run over them
        _, reduced = score_plan(case, len(frames), Rs, C, pairs, models, device, judge, tracks)
        FR.reduce_list(frames, reduced)
    applies = case_metrics(case)
    if Rs is None:
        rows += [_value_row(generator, case, m, None, pose_reason, evaluator=True)
                 for m in POSE_METRICS if m in applies]
        applies -= set(POSE_METRICS)
    tracks = tracks if len(tracks) else pd.DataFrame(columns=TRACK_COLUMNS)
    if {"geometry", "texture"} & applies:
        objects = tracks[tracks["kind"] == "object"].sort_values("frame")
        if objects.empty:
            why = "; ".join(tracks.loc[tracks["kind"] == "object_unavailable", "reason"].astype(str)) or "no object track"
            rows += [_value_row(generator, case, m, None, why, evaluator="unavailable" in why or "slot" in why)
                     for m in ("geometry", "texture")]
        else:
            boxes, mask_text = FR.object_rows(tracks)
            masks = {i: PL.decode_mask(mask_text[i]) for i, _ in pairs
                     if boxes[i] is not None and mask_text[i] is not None}   # the pair references' only
            src = objects["mask_source"].dropna() if "mask_source" in objects else pd.Series([], dtype=object)
            mask_source = str(src.iloc[0]) if len(src) else "pose_box"
            vals, details = [], []
            for i, j in pairs:
                if boxes[i] is None:
                    continue
                R_rel, _ = geometry.relative(Rs[i], C[i], Rs[j], C[j])
                v, how = PL.geometry_pair(frames[i], frames[j], boxes[i], R_rel, K, mask=masks.get(i))
                if v is not None:
                    vals.append(v)
                    details.append({"pair": [i, j], "ssim": round(v, 4), "warp": how})
            rows.append(_value_row(generator, case, "geometry", np.mean(vals) if vals else None,
                                   None if vals else "no revisit pair with the target in view",
                                   {"pairs": details, "mask_source": mask_source},
                                   n_eval=len(vals), n_skipped=len(pairs) - len(vals)))
            embedder, why = load_slot(models, device, "image_embedder")
            if embedder is None:
                rows.append(_value_row(generator, case, "texture", None, why, evaluator=True))
            else:   # every masked crop, embedded chunk by chunk during the pass (frames.TextureEmbeddings)
                emb = reduced.texture.embeddings()
                v = metrics.centroid_consistency(emb) if emb is not None else None
                rows.append(_value_row(generator, case, "texture", v, None if v is not None else "fewer than 2 crops",
                                       {"crops": reduced.texture.crops, "mask_source": mask_source}))
    if {"identity", "appearance"} & applies:
        faces = tracks[tracks["kind"] == "face"]
        gone = tracks[tracks["kind"] == "face_unavailable"]
        if len(gone):
            rows += [_value_row(generator, case, m, None, str(gone["reason"].iloc[0]), evaluator=True)
                     for m in ("identity", IDENTITY_FIRST_APPEARANCE, "appearance")]
        else:
            by_track = [[np.asarray(e, np.float32) for e in g["embedding"]] for _, g in faces.groupby("track")]
            tv, n = metrics.tracks_consistency(by_track)
            thr = float(faces["threshold"].iloc[0]) if len(faces) else None
            per_frame = [[np.asarray(e, np.float32) for e in g["embedding"]] for _, g in faces.sort_values("frame")
                         .groupby("frame", sort=True)]
            drift = metrics.first_appearance_drift(per_frame, thr) if thr is not None else {"kept_fraction": None}
            why = None if tv is not None else "no face track with >= 2 detections"
            d = {"tracks": len(by_track), "scored": n, "faces": len(faces), "track_consistency": tv,
                 "first_appearance": drift, "max_cosine_distance": thr}
            skipped = len(by_track) - n if len(by_track) else 1
            # the paper's identity is the tracks' centroid consistency; the drift-scaled variant is our addition
            rows.append(_value_row(generator, case, "identity", tv, why, d, n_eval=n, n_skipped=skipped))
            rows.append(_value_row(generator, case, IDENTITY_FIRST_APPEARANCE, metrics.identity_score(tv, drift),
                                   why, d, n_eval=n, n_skipped=skipped))
            embedder, ewhy = load_slot(models, device, "image_embedder")
            no_person = tracks[tracks["kind"] == "person_unavailable"]
            if len(no_person) or embedder is None:
                rows.append(_value_row(generator, case, "appearance", None,
                                       str(no_person["reason"].iloc[0]) if len(no_person) else ewhy, evaluator=True))
            else:
                body = []
                for _, g in faces.groupby("track"):
                    crops = [c for c in (PL.crop(frames[int(r.frame)], json.loads(r.person_box))
                                         for r in g.itertuples() if isinstance(r.person_box, str)) if c is not None]
                    if len(crops) >= 2:
                        body.append(list(embedder.embed(crops)))
                v, n = metrics.tracks_consistency(body)
                rows.append(_value_row(generator, case, "appearance", v, None if v is not None else
                                       "no track with >= 2 full-body crops", {"scored": n}, n_eval=n))
    if {"epipolar", "reprojection", "lighting"} & applies:
        feats = reduced.features    # ORB features of the pair and helper frames, computed during the pass
        errs = [geometry.revisit_pair(feats, i, j, Rs, C, K) for i, j in pairs]
        for m, key in (("epipolar", "epipolar_px"), ("reprojection", "reprojection_px")):
            agg = metrics.spatial_score(errs, key)
            why = None if agg["value"] is not None else ("; ".join(agg["reasons"]) or "no revisit pair")
            rows.append(_value_row(generator, case, m, agg["value"], why,
                                   {"pairs": errs, "forgotten": agg["forgotten"]},
                                   n_eval=agg["n_eval"], n_skipped=agg["n_skipped"] + (0 if pairs else 1)))
        rows.append(_value_row(generator, case, "lighting",
                               metrics.lighting_from_stats([(reduced.lab[i], reduced.lab[j]) for i, j in pairs]),
                               None if pairs else "no revisit pair", n_eval=len(pairs)))
    if "style" in applies:
        vgg, why = load_slot(models, device, "style_vgg")
        rows.append(_value_row(generator, case, "style", reduced.style.score() if vgg else None,
                               why if vgg is None else None, evaluator=vgg is None))
    if {"state_evolution", "evolution_correctness"} & applies:
        ok, why = judge.available()
        if not ok:
            rows += [_value_row(generator, case, m, None, f"needs the judge: {why}", evaluator=True)
                     for m in ("state_evolution", "evolution_correctness")]
        else:
            sel = PL.even(len(frames), PL.TRIGGER_FRAMES)   # gathered by the plan
            res = judge.ask_many([judging.evolution_request(case.causal_event, [frames[k] for k in sel])])[0]
            if res.status != "ok":
                rows += [_value_row(generator, case, m, None, f"judge {res.status}: {res.reason}", evaluator=True)
                         for m in ("state_evolution", "evolution_correctness")]
            else:
                g = metrics.judge_unit(res.answer["state_evolution"])
                s = metrics.judge_unit(res.answer["evolution_correctness"])
                d = {"answer": res.answer, "cache_key": res.cache_key}
                rows += [_value_row(generator, case, "state_evolution", g, detail=d),
                         _value_row(generator, case, "evolution_correctness", g * s, detail=d)]
    if "text_instruction" in applies:
        clip_model, why = load_slot(models, device, "clip_b32")
        if clip_model is None:
            rows.append(_value_row(generator, case, "text_instruction", None, why, evaluator=True))
        else:
            per = []
            for s, pick in zip(case.segments, FR.text_frames_per_segment(len(frames), len(case.segments))):
                if pick:
                    per.append(float(clip_model.similarity([frames[i] for i in pick], [s.get("text", "")]).mean()))
            rows.append(_value_row(generator, case, "text_instruction",
                                   float(np.clip(np.mean(per), 0, 1)) if per else None,
                                   None if per else "no frame per segment", {"per_segment": per}, n_eval=len(per),
                                   n_skipped=len(case.segments) - len(per)))
    if "action_instruction" in applies:
        acts = case.frame_actions()
        tw = [geometry.twist(Rs[k], C[k], Rs[k + 1], C[k + 1]) for k in range(len(Rs) - 1)]
        if len(acts) > len(tw):
            # the generator's video is shorter than the schedule: an error of this output, not a truncation
            rows.append(_value_row(generator, case, "action_instruction", None,
                                   f"generator {generator!r}, case {case.case_id}: the action schedule has "
                                   f"{len(acts)} frame transitions but the video has {len(tw)}",
                                   {"schedule": len(acts), "transitions": len(tw)}, n_failed=1, n_skipped=0))
        else:
            v = metrics.action_alignment(tw[:len(acts)], acts)
            rows.append(_value_row(generator, case, "action_instruction", v,
                                   None if v is not None else "no moving phase",
                                   {"transitions": len(acts), "extra_video_transitions": len(tw) - len(acts)},
                                   n_eval=sum(a != "wait" for a in acts)))
    return rows


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
        person, pwhy = load_slot(models, device, "person_detector")
        if person is None:
            rows.append({"kind": "person_unavailable", "reason": pwhy})
        bodies = {f: person.detect([frames[idx[f]]])[0] for f, o in enumerate(obs) if o} if person else {}
        for t_id, t in enumerate(metrics.face_tracks([[e for e, _ in o] for o in obs], max_distance=thr)):
            for f, d in t:
                emb, fbox = obs[f][d]
                pb = bodies.get(f)
                pbox = PL.person_box_for(fbox, pb.xyxy) if pb is not None and len(pb) else None
                rows.append({"kind": "face", "frame": idx[f], "track": t_id, "embedding": np.asarray(emb).tolist(),
                             "box": json.dumps(fbox), "person_box": json.dumps(pbox) if pbox else None,
                             "threshold": thr, "reason": source})
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


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="3", pool="gpu", op_tags=GPU_OP_TAGS)
def mbench_tracks(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                  mbench_poses: pd.DataFrame, models: ModelRegistry, device: Device) -> Output[pd.DataFrame]:
    """Shared intermediates: the target's mask per frame (object_segmenter slot: SAM 2 video propagation; offline: the
    box carried by the trajectory's full pose; ``mask_source`` says which) and face tracks (greedy, cosine distance
    within the face model's calibrated threshold to the latest or rolling-average embedding) with each face's person
    box."""
    generator, case_id = P.split(context.partition_key)
    case = _case(mbench_case)
    src = _video(paths, generator, case_id)
    Rs, C, _ = _trajectory(mbench_poses)
    gather, walk = track_plan(case, src.n_frames, Rs, C, models, device)
    frames = FR.VideoFrames(src, gather, walk=walk, name="mbench_tracks")
    with _decoding(generator, case_id):
        rows = track_rows(case, frames, Rs, models, device, C=C, init_size=_init_size(paths, case))
    df = pd.DataFrame(rows, columns=TRACK_COLUMNS)
    df["generator"], df["case_id"], df["source_sha256"] = generator, case_id, src.sha256
    faces = df[df["kind"] == "face"]
    msrc = sorted(set(df["mask_source"].dropna().astype(str)))
    return Output(df, metadata={"object_frames": int(((df["kind"] == "object") & df["box"].notna()).sum()),
                                "object_mask_source": ", ".join(msrc) or "none",
                                "faces": len(faces), "face_tracks": int(faces["track"].nunique()) if len(faces) else 0})


def substitutes(df: pd.DataFrame, models: ModelRegistry, judge: Optional[Judge]) -> list[Optional[str]]:
    """Per score row, the models that decided it and are not the paper's (None when all are): the slots it actually
    used (metric_specs.slots_used: mode, mask source), the pose-carried box standing in for SAM 2, and the judges
    (the T trigger: every T row's coverage; self-evolution: its score) when they are not the paper's."""
    segmenter = models.status("object_segmenter").available
    model = getattr(judge, "model", None) if judge is not None else None
    cache: dict = {}
    out = []
    for r in df.itertuples():
        detail = json.loads(r.detail) if isinstance(r.detail, str) and r.detail else {}
        slots, extra = slots_used(r.metric_id, r.mode, detail.get("mask_source"), segmenter)
        for slot in slots:   # one slot at a time: a checkpoint name may hold '; ' (the labels' separator)
            if slot not in cache:
                cache[slot] = label_text(substitute_label((slot,), models))
        parts = [*(cache[slot] for slot in slots), *extra]
        if r.metric_id in ("state_evolution", "evolution_correctness") and "answer" in detail:
            parts.append(judge_substitute("self_evolution", model))
        if r.mode == "T" and r.triggered is not None and not pd.isna(r.triggered):
            parts.append(judge_substitute("trigger", model))
        out.append("; ".join(p for p in parts if p) or None)
    return out


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="6", pool="gpu", op_tags=GPU_OP_TAGS)
def mbench_scores(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                  mbench_poses: pd.DataFrame, mbench_tracks: pd.DataFrame, mbench_trigger: pd.DataFrame,
                  models: ModelRegistry, device: Device, judge: Judge) -> Output[pd.DataFrame]:
    """The sub-dimensions of the case's subset (plus text / action instruction), each on [0,1], with their
    per-pair provenance; triggered flag carried for the M-Score."""
    generator, case_id = P.split(context.partition_key)
    case = _case(mbench_case)
    src = _video(paths, generator, case_id)
    Rs, C, pairs = _trajectory(mbench_poses)
    pairs = pairs or []
    why = None if Rs is not None else f"pose slot unavailable: {mbench_poses['reason'].iloc[0]}"
    # the frames and per-frame reductions every applicable sub-dimension needs, then one pass for all of them
    gather, reduced = score_plan(case, src.n_frames, Rs, C, pairs, models, device, judge, mbench_tracks)
    frames = FR.VideoFrames(src, gather, name="mbench_scores")
    FR.register(src, reduced, "mbench_scores")
    if gather or FR.has_work(reduced):
        with _decoding(generator, case_id):
            frames.finish()
    rows = case_scores(generator, case, frames, Rs, C, pairs, models, device, judge, mbench_tracks,
                       pose_reason=why, reduced=reduced)
    df = pd.DataFrame(rows)
    trig = mbench_trigger.iloc[0]
    df["triggered"] = None if pd.isna(trig["triggered"]) else bool(trig["triggered"])
    df["trigger_reason"] = trig["reason"]
    df["source_sha256"] = src.sha256
    df["protocol"] = _protocol(models, judge)
    df["substitute"] = substitutes(df, models, judge)
    ev = df[df["n_failed_evaluator"] > 0]
    meta = {r.metric_id: (round(r.value, 4) if pd.notna(r.value) else "None") for r in df.itertuples()}
    meta["evaluator_failures"] = int(len(ev))
    meta["evaluator_failure_reasons"] = MetadataValue.text("; ".join(sorted(set(ev["reason"].astype(str))))[:800])
    return Output(df, metadata=meta)


def read_cases(ids: list[str], load) -> tuple[pd.DataFrame, list[str]]:
    """(case_id, subset, mode, moves, translates) of every case that parses, and one error per case that does not:
    a malformed case file must not take the leaderboard of the other cases with it. ``moves`` / ``translates``: an
    A case's schedule asks for camera motion / for translation (board.applicable_cases reads them)."""
    rows, errors = [], []
    for i in ids:
        try:
            c = load(i)
            rows.append({"case_id": c.case_id, "subset": c.subset, "mode": c.mode,
                         **board.case_motion(c.mode, c.frame_actions() if c.mode == "A" else [])})
        except (dataset.CaseError, OSError, ValueError) as e:
            errors.append(str(e))
    return pd.DataFrame(rows, columns=["case_id", "subset", "mode", "moves", "translates"]), errors


@asset(group_name=GROUP, code_version="4", deps=[mbench_scores, mbench_case],
       automation_condition=board_condition("mbench_scores"))
def mbench_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths, models: ModelRegistry,
                       judge: Judge) -> Output[pd.DataFrame]:
    """The common board (core/metric_spec.py): per generator and mode (slice A / T) the trigger-conditioned M-Score
    of the 12 sub-dimensions, our identity_first_appearance addition and the three dimension M-Scores (board.py).
    ``coverage`` = cases scored / cases the sub-dimension applies to; the paper's trigger coverage C_k, the
    reliability S_k and the case counts are in ``detail``."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    if "mbench_scores" not in tables:
        raise ValueError("no MBench score partition has been materialised yet")
    scores = store.query("SELECT * FROM mbench_scores")
    root = paths.benchmark_dir(BENCH) / "cases"
    cases, case_errors = read_cases(dataset.discover_cases(root), lambda i: dataset.load_case(root / f"{i}.json"))
    scores = scores[scores["case_id"].isin(cases["case_id"])]
    generators = sorted(scores["generator"].unique())
    missing = {g: missing_outputs(paths, g, cases["case_id"]) for g in generators}
    table = board.leaderboard(scores, cases, generators, missing)
    manifest = build_manifest(benchmark=BENCH, protocol=PROTOCOL, models=slot_manifest(models),
                              judge=judge.fingerprint(), constants=CONSTANTS)
    return Output(table, metadata={"table": MetadataValue.md(board_markdown(table, {"slice": "A"}, digits=2)),
                                   "table_T": MetadataValue.md(board_markdown(table, {"slice": "T"}, digits=2)),
                                   "manifest": MetadataValue.json(manifest),
                                   "protocol_digest": protocol_digest(manifest),
                                   "invalid_cases": len(case_errors),
                                   "invalid_case_errors": MetadataValue.text("\n".join(case_errors)[:2000] or "none")}
                                  | report_metadata(store, BENCH))


def missing_outputs(paths: BenchPaths, generator: str, case_ids) -> set:
    """The cases whose output video the generator did not deliver (counted against it, never left out)."""
    folder = paths.generator_dir(generator)
    return {c for c in case_ids if not dataset.output_video(folder, c).exists()}


ASSETS = [mbench_case, mbench_poses, mbench_tracks, mbench_trigger, mbench_scores, mbench_leaderboard]
ITEM_ASSETS = ["mbench_case"]
GENERATOR_ASSETS = ["mbench_poses", "mbench_tracks", "mbench_trigger", "mbench_scores"]
