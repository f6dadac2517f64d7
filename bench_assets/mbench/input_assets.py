"""MBench's input assets: the validated case (per case), and per (generator x case) the camera trajectory with its
revisit pairs and the shared intermediates (target masks, face tracks). Rows are built in tracking.py, the maths in
geometry.py / pipeline.py."""

import json

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import INPUT_SHA_KEY, content_data_version
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.slots import load_slot
from bench_assets.mbench import dataset
from bench_assets.mbench import frames as FR
from bench_assets.mbench import geometry
from bench_assets.mbench import identity_calibration as IC
from bench_assets.mbench import pipeline as PL
from bench_assets.mbench import tracking
from bench_assets.mbench import wiring as W
from bench_assets.mbench.constants import TRACK_COLUMNS
from bench_assets.mbench.wiring import GROUP, P
from bench_resources.device import Device
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def mbench_case(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated case (canonical format, T or A mode)."""
    try:
        case = dataset.load_case(W.case_path(paths, context.partition_key))
        sha = W.case_version(paths, context.partition_key)
    except dataset.CaseError as e:
        raise Failure(description=str(e)) from None
    df = pd.DataFrame([{"case_id": case.case_id, "subset": case.subset, "mode": case.mode,
                        "case_json": json.dumps(case.to_json(), sort_keys=True), "case_sha256": sha}])
    # the files' content is the data version: a fixed box marks this case's partitions stale
    code = context.assets_def.code_versions_by_key[context.asset_key]
    return Output(df, data_version=content_data_version(sha, code),
                  metadata={"subset": case.subset, "mode": case.mode, INPUT_SHA_KEY: sha})


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="2", pool="gpu", op_tags=GPU_OP_TAGS)
def mbench_poses(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                 models: ModelRegistry, device: Device) -> Output[pd.DataFrame]:
    """One camera trajectory for the whole video (pose slot) and the revisit pairs (T: pose-return ranking, top 5;
    A: turnaround split, up to 20 pairs)."""
    generator, case_id = P.split(context.partition_key)
    case = W.case_of(mbench_case)
    src = W.video(paths, generator, case_id)
    pose, why = load_slot(models, device, "pose")
    if pose is None:  # pose-dependent sub-dimensions become None with this reason; identity still scores
        df = pd.DataFrame([{"kind": "unavailable", "frame": None, "R": None, "C": None, "step_failed": None,
                            "i": None, "j": None, "reason": why}])
        df["generator"], df["case_id"], df["source_sha256"] = generator, case_id, src.sha256
        return Output(df, data_version=_video_data_version(context, paths, mbench_case),
                      metadata={"frames": 0, "pairs": 0, "pairing": MetadataValue.text(why),
                                INPUT_SHA_KEY: W.video_version(paths, context.partition_key)})
    # every frame, walked once in chunks: the trajectory keeps each frame's features, never the frames
    frames = FR.VideoFrames(src, walk=True, name="mbench_poses")
    K = geometry.intrinsics(src.size[0], src.size[1])
    with W.decoding(generator, case_id):
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
    meta[INPUT_SHA_KEY] = W.video_version(paths, context.partition_key)
    return Output(df, data_version=_video_data_version(context, paths, mbench_case), metadata=meta)


def _video_data_version(context: AssetExecutionContext, paths: BenchPaths, case_df: pd.DataFrame):
    """Content, not code alone: the output video, the case it was read against and this asset's code version, so a
    replaced video marks what reads the trajectory stale in the asset graph too."""
    return content_data_version(W.video_version(paths, context.partition_key), case_df["case_json"].iloc[0],
                                context.assets_def.code_versions_by_key[context.asset_key])


# v6: faces the domain classifier does not read as real are kept untracked (issue 37); its hash re-runs a refit
@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version=f"6+domain{IC.DOMAIN_VERSION}", pool="gpu",
       op_tags=GPU_OP_TAGS)
def mbench_tracks(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                  mbench_poses: pd.DataFrame, models: ModelRegistry, device: Device) -> Output[pd.DataFrame]:
    """Shared intermediates: the target's mask per frame (object_segmenter slot: SAM 2 video propagation; offline: the
    box carried by the trajectory's full pose; ``mask_source`` says which) and face tracks (greedy, cosine distance
    within the face model's calibrated threshold to the latest or rolling-average embedding) with each face's person
    box."""
    generator, case_id = P.split(context.partition_key)
    case = W.case_of(mbench_case)
    src = W.video(paths, generator, case_id)
    Rs, C, _ = tracking.trajectory(mbench_poses)
    gather, walk = tracking.track_plan(case, src.n_frames, Rs, C, models, device)
    frames = FR.VideoFrames(src, gather, walk=walk, name="mbench_tracks")
    with W.decoding(generator, case_id):
        rows = tracking.track_rows(case, frames, Rs, models, device, C=C, init_size=W.init_size(paths, case))
    df = pd.DataFrame(rows, columns=TRACK_COLUMNS)
    df["generator"], df["case_id"], df["source_sha256"] = generator, case_id, src.sha256
    faces = df[df["kind"] == "face"]
    msrc = sorted(set(df["mask_source"].dropna().astype(str)))
    return Output(df, metadata={"object_frames": int(((df["kind"] == "object") & df["box"].notna()).sum()),
                                "object_mask_source": ", ".join(msrc) or "none",
                                "faces": len(faces), "face_tracks": int(faces["track"].nunique()) if len(faces) else 0,
                                "face_domain": MetadataValue.json(next((json.loads(d) for d in df["domain"].dropna()),
                                                                       None)),
                                "low_quality_faces": int(faces["quality"].map(
                                    lambda q: isinstance(q, str) and bool(json.loads(q)["low"])).sum())})
