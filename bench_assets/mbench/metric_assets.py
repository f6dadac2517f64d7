"""MBench's metric assets, per (generator x case): the T trigger (stage 1, the judge) and the sub-dimension scores.
Rows are built in scoring.py, the maths in metrics.py / geometry.py."""

import pandas as pd
from dagster import AssetExecutionContext, MetadataValue, Output, asset

from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.mbench import frames as FR
from bench_assets.mbench import identity_calibration as IC
from bench_assets.mbench import judging
from bench_assets.mbench import pipeline as PL
from bench_assets.mbench import scoring
from bench_assets.mbench import tracking
from bench_assets.mbench import wiring as W
from bench_assets.mbench.wiring import GROUP, P
from bench_assets.mbench.metrics import IDENTITY_THRESHOLDS
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths


def _explain(df: pd.DataFrame, generator: str) -> dict:
    """The UI's answer to "why this number": each sub-dimension of the case rounded with its coverage, the rows
    worst first and the audit page of the M-Score it feeds (core/explain.py); rows carry the unit id
    (``identity``), the board the spec id (``m_score.identity``)."""
    from bench_assets.core.explain import explain_metadata
    from bench_assets.core.site import audit_link
    from bench_assets.mbench.metric_specs import METRICS
    board_id = {(s.unit_id or s.id): s.id for s in METRICS.specs}
    dirs = {u: METRICS[b].direction for u, b in board_id.items()}
    return explain_metadata(df, benchmark="mbench", generator=generator, directions=dirs,
                            audit_url=audit_link("mbench", generator, METRICS.specs, board_id))



def _thresholds_version() -> str:
    return ",".join(f"{k}{v:.4f}" for k, (v, _src) in sorted(IDENTITY_THRESHOLDS.items()))

@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="1")
def mbench_trigger(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                   judge: Judge, models: ModelRegistry) -> Output[pd.DataFrame]:
    """Stage 1 (T only): does the video create the case's memory challenge? A cases are triggered by their actions."""
    generator, case_id = P.split(context.partition_key)
    case = W.case_of(mbench_case)
    row = {"generator": generator, "case_id": case_id, "mode": case.mode, "triggered": None, "confidence": None,
           "reason": None, "cache_key": None}
    if case.mode == "A":
        row.update(triggered=True, confidence=1.0, reason="action-conditioned: the actions enforce the challenge")
    else:
        ok, why = judge.available()
        if not ok:
            row["reason"] = f"trigger needs the judge: {why}"
        else:
            src = W.video(paths, generator, case_id)
            req = src.even(PL.TRIGGER_FRAMES, name="mbench_trigger")
            with W.decoding(generator, case_id):
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
    df["protocol"] = W.protocol(models, judge)
    return Output(df, metadata={"triggered": str(row["triggered"]), "reason": MetadataValue.text(str(row["reason"]))})


# the calibrated identity thresholds and the face-domain classifier are part of the code version: a refit re-runs
# the scores
@asset(partitions_def=P.generator_x_item, group_name=GROUP,
       code_version=f"9+{_thresholds_version()}+domain{IC.DOMAIN_VERSION}", pool="gpu", op_tags=GPU_OP_TAGS)
def mbench_scores(context: AssetExecutionContext, paths: BenchPaths, mbench_case: pd.DataFrame,
                  mbench_poses: pd.DataFrame, mbench_tracks: pd.DataFrame, mbench_trigger: pd.DataFrame,
                  models: ModelRegistry, device: Device, judge: Judge) -> Output[pd.DataFrame]:
    """The sub-dimensions of the case's subset (plus text / action instruction), each on [0,1], with their
    per-pair provenance; triggered flag carried for the M-Score."""
    generator, case_id = P.split(context.partition_key)
    case = W.case_of(mbench_case)
    src = W.video(paths, generator, case_id)
    Rs, C, pairs = tracking.trajectory(mbench_poses)
    pairs = pairs or []
    why = None if Rs is not None else f"pose slot unavailable: {mbench_poses['reason'].iloc[0]}"
    # the frames and per-frame reductions every applicable sub-dimension needs, then one pass for all of them
    gather, reduced = scoring.score_plan(case, src.n_frames, Rs, C, pairs, models, device, judge, mbench_tracks)
    frames = FR.VideoFrames(src, gather, name="mbench_scores")
    FR.register(src, reduced, "mbench_scores")
    if gather or FR.has_work(reduced):
        with W.decoding(generator, case_id):
            frames.finish()
    rows = scoring.case_scores(generator, case, frames, Rs, C, pairs, models, device, judge, mbench_tracks,
                               pose_reason=why, reduced=reduced)
    df = pd.DataFrame(rows)
    trig = mbench_trigger.iloc[0]
    df["triggered"] = None if pd.isna(trig["triggered"]) else bool(trig["triggered"])
    df["trigger_reason"] = trig["reason"]
    df["source_sha256"] = src.sha256
    # the video's decode health from this pass (frames FFmpeg concealed or lost): the board's n_decode_warnings
    for col, v in src.decode_record().items():
        df[col] = v
    df["protocol"] = W.protocol(models, judge)
    df["substitute"] = scoring.substitutes(df, models, judge)
    ev = df[df["n_failed_evaluator"] > 0]
    meta = _explain(df, generator)
    meta["evaluator_failures"] = int(len(ev))
    meta["evaluator_failure_reasons"] = MetadataValue.text("; ".join(sorted(set(ev["reason"].astype(str))))[:800])
    return Output(df, metadata=meta)
