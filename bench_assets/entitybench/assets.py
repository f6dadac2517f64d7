"""EntityBench wiring: partitions, resources, metadata. The math lives in metrics.py / core."""

import json
from collections import defaultdict
from typing import Any, Optional

import cv2
import numpy as np
import pandas as pd
from dagster import (
    AssetExecutionContext,
    AutomationCondition,
    MetadataValue,
    Output,
    asset,
)

from bench_assets.core import grounding as core_grounding
from bench_assets.core.automation import board_condition
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.board_text import board_markdown
from bench_assets.core.manifest import protocol_digest
from bench_assets.core.metric_spec import board_frame
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.partitions import ENTITYBENCH as P
from bench_assets.core.records import MetricRecord
from bench_assets.core.tables import instance_row, record_row
from bench_assets.core.slots import load_slot
from bench_assets.entitybench import audit, counts, dataset, judged, judging, metrics
from bench_assets.entitybench import frames as shot_frames  # "frames" names the decoded arrays everywhere here
from bench_assets.entitybench import board
from bench_assets.entitybench.constants import (BENCH, CONSTANTS, GROUNDING_FRAMES, OFFLINE_WEAK_CONF,
                                                  PILLAR1_CHUNK, PROTOCOL, label_substitutes)
from bench_assets.entitybench.manifest import entitybench_manifest
from bench_assets.entitybench.metric_specs import METRICS
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

TYPE_METRIC = {"character": "cs_face", "object": "cs_object"}

# The sampled frames of each shot, decoded once per process (one pass, only the sampled frames converted) and
# shared by every sampling asset of a run; Pillar 1's full walk fills it (frames.py).
SHOTS = shot_frames.SHOTS
# Pillar 1 runs first among a run's steps: its pass fills SHOTS, so the sampling assets decode nothing more.
PILLAR1_OP_TAGS = {**GPU_OP_TAGS, "dagster/priority": "1"}

METRIC_GROUP = "entitybench"


def _split(context: AssetExecutionContext) -> tuple[str, str]:
    return P.split(context.partition_key)


def _load_episode(paths: BenchPaths, episode_id: str) -> dataset.Episode:
    return dataset.load_episode(paths.benchmark_dir(BENCH) / "episodes" / f"{episode_id}.json")


GROUNDING_SLOTS = ["open_vocab_detector", "clip_b32", "text_embedder"]


def _protocol(models: ModelRegistry, names: list[str], judge: Optional[Judge] = None) -> str:
    """Digest of what decides a number's meaning here: checkpoints, fingerprints, every constant and threshold,
    the protocol id, and the judge where one answers. Families fed by grounding crops pass GROUNDING_SLOTS, so
    crops from the offline detector and from GroundingDINO are never marked comparable."""
    return protocol_digest({"protocol": PROTOCOL, "models": _slot_manifest(models, names), "constants": CONSTANTS,
                            **({"judge": judge.fingerprint()} if judge is not None else {})})


def _label_substitutes(df: pd.DataFrame, models: ModelRegistry) -> None:
    """Per row, the substitutes that produced a value under a metric id: the slots its spec names whose
    checkpoint is not the paper's (e.g. EfficientNet-Lite0 for DINOv2), and CLIP missing for grounded metrics."""
    label_substitutes(df, models)


def _evaluator_metadata(df: pd.DataFrame) -> dict:
    n, why = counts.evaluator_summary(df)
    return {"evaluator_failures": n, "evaluator_failure_reasons": MetadataValue.text(why or "none")}


def _shot_paths(outputs: pd.DataFrame) -> tuple[dict[int, str], dict[int, str]]:
    paths, errors = {}, {}
    for r in outputs.itertuples():
        if isinstance(r.error, str) and r.error:
            errors[int(r.shot)] = r.error
        elif isinstance(r.path, str):
            paths[int(r.shot)] = r.path
        else:
            errors[int(r.shot)] = "shot missing"
    return paths, errors


def _slot_manifest(models: ModelRegistry, names: list[str]) -> dict[str, Any]:
    return models.manifest(names)


# ----------------------------------------------------------------------------- dataset

@asset(partitions_def=P.items, group_name=METRIC_GROUP, code_version="3", kinds={"json"})
def entitybench_episode(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated episode (canonical JSON), with the paper's Table 3 / Table 10 statistics."""
    ep = _load_episode(paths, context.partition_key)
    stats = dataset.episode_statistics(ep)
    df = pd.DataFrame([{"episode_id": ep.episode_id, "tier": ep.tier, "n_shots": len(ep.shots),
                        "episode_json": json.dumps(ep.to_json(), sort_keys=True),
                        "statistics_json": json.dumps(stats, sort_keys=True),
                        "warnings": "; ".join(ep.warnings)}])
    meta = {k: v for k, v in stats.items() if isinstance(v, (int, float, str)) and v is not None}
    return Output(df, metadata={**meta, "warnings": MetadataValue.text("; ".join(ep.warnings) or "none")})


@asset(partitions_def=P.items, group_name=METRIC_GROUP, code_version="1")
def entitybench_entity_registry(context: AssetExecutionContext,
                                entitybench_episode: pd.DataFrame) -> Output[pd.DataFrame]:
    """One row per registry entity: type, description, appearances, recurrence gaps."""
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    rows = []
    for e in ep.entities:
        app = ep.appearances(e.id)
        gaps = dataset.recurrence_gaps(app)
        rows.append({"episode_id": ep.episode_id, "entity_id": e.id, "type": e.type, "name": e.name,
                     "description": e.description, "appearances": json.dumps(app), "n_appearances": len(app),
                     "cross_shot": len(app) >= 2, "max_recurrence_gap": max(gaps) if gaps else None,
                     "first_shot": app[0] if app else None})
    df = pd.DataFrame(rows)
    return Output(df, metadata={"entities": len(df), "cross_shot": int(df["cross_shot"].sum()),
                                "by_type": MetadataValue.json(df.groupby("type").size().to_dict())})


@asset(group_name=METRIC_GROUP, code_version="3", deps=[entitybench_episode],
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def entitybench_dataset_statistics(context: AssetExecutionContext, store: Store) -> pd.DataFrame:
    """Table 3 / Table 10 per tier and overall, over every materialised episode."""
    eps = store.query("SELECT statistics_json FROM entitybench_episode")
    stats = pd.DataFrame([json.loads(s) for s in eps["statistics_json"]])
    return dataset_table(stats)


def _lists(part: pd.DataFrame, col: str) -> list:
    return [x for v in part[col] if isinstance(v, list) for x in v] if col in part else []


def _pooled_statistics(part: pd.DataFrame) -> dict:
    """Tables 3 / 7 / 10 quantities pooled over entities, gaps and shots (not means of episode means)."""
    gaps, maxes = _lists(part, "recurrence_gaps"), _lists(part, "per_entity_max_gaps")
    shots = part["n_shots"].sum()
    ep_max = part["recurrence_gap_max"].dropna().astype(float)
    sched = part["scheduled_entities"].sum() if "scheduled_entities" in part else 0

    def shot_weighted(col: str) -> Optional[float]:
        return float((part[col] * part["n_shots"]).sum() / shots) if col in part and shots else None

    return {
        "recurrence_gap_mean": float(np.mean(gaps)) if gaps else None,
        "recurrence_gap_sd": float(np.std(gaps)) if gaps else None,
        "episode_max_gap_mean": float(ep_max.mean()) if len(ep_max) else None,
        "episode_max_gap_sd": float(ep_max.std(ddof=0)) if len(ep_max) else None,
        "unique_scheduled_entities": int(sched),
        "recurring_entity_rate": (float(part["recurring_entities"].sum() / sched)
                                  if sched and "recurring_entities" in part else None),
        "mean_per_entity_max_gap": float(np.mean(maxes)) if maxes else None,
        "median_per_entity_max_gap": float(np.median(maxes)) if maxes else None,
        "max_characters_per_shot": int(part["max_characters_per_shot"].max()),
        "frac_shots_3plus_chars": shot_weighted("frac_shots_3plus_chars"),
        **{f"frac_shots_{k}_chars": shot_weighted(f"frac_shots_{k}_chars") for k in (0, 1, 2)},
    }


def dataset_table(stats: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for tier, part in [*[(t, stats[stats.tier == t]) for t in dataset.TIERS], ("all", stats)]:
        if part.empty:
            continue
        slots = part["entity_slot_appearances"].sum()
        rows.append({
            "tier": tier, "episodes": len(part), "shots": int(part["n_shots"].sum()),
            **{f"cross_shot_{t}s_mean": float(part[f"cross_shot_{t}s"].mean()) for t in dataset.ENTITY_TYPES},
            **{f"cross_shot_{t}s_sd": float(part[f"cross_shot_{t}s"].std(ddof=0)) for t in dataset.ENTITY_TYPES},
            "recurrence_gap_max": float(part["recurrence_gap_max"].max()),
            "reappearance_rate": float(part["reappearances"].sum() / slots) if slots else None,
            "cut_rate": float(part["cuts"].sum() / part["n_shots"].sum()),
            "continuation_chains": int(part["continuation_chains"].sum()),
            "registry_shot_rate": float(part["registry_shots"].sum() / part["n_shots"].sum()),
            "memory_only_rate": float(part["memory_only_shots"].sum() / part["n_shots"].sum()),
            "scenes": int(part["scenes"].sum()),
            **{f"registry_{t}s": int(part[f"registry_{t}s"].sum()) for t in dataset.ENTITY_TYPES},
            **{f"appearances_{t}": int(part[f"appearances_{t}"].sum()) for t in dataset.ENTITY_TYPES},
            **{f"first_appearances_{t}": int(part[f"first_appearances_{t}"].sum()) for t in dataset.ENTITY_TYPES},
            **{f"reappearance_rate_{t}": (float(part[f"reappearances_{t}"].sum() / part[f"appearances_{t}"].sum())
                                          if part[f"appearances_{t}"].sum() else None) for t in dataset.ENTITY_TYPES},
            **{f"{k}_per_shot": float((part[f"mean_{k}_per_shot"] * part["n_shots"]).sum() / part["n_shots"].sum())
               for k in ("characters", "objects", "locations", "entities")},
            "frac_shots_tritype": float((part["frac_shots_tritype"] * part["n_shots"]).sum() / part["n_shots"].sum()),
            "frac_shots_2c1o": float((part["frac_shots_2c1o"] * part["n_shots"]).sum() / part["n_shots"].sum()),
            "mean_per_entity_max_gap_episode_mean": float(part["mean_per_entity_max_gap"].mean()),
            **_pooled_statistics(part),
        })
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- generator outputs

@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="2")
def entitybench_outputs(context: AssetExecutionContext, paths: BenchPaths,
                        entitybench_episode: pd.DataFrame) -> Output[pd.DataFrame]:
    """Index of one generator's shot videos for one episode; every shot validated, each problem recorded."""
    generator, episode_id = _split(context)
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    rows = output_rows(ep, paths.generator_dir(generator) / episode_id, generator)
    for row in rows:
        if row["error"]:
            context.log.error(row["error"])
    df = pd.DataFrame(rows)
    n_err = int(df["error"].notna().sum())
    return Output(df, metadata={"shots": len(df), "errors": n_err,
                                "first_error": MetadataValue.text(str(df["error"].dropna().iloc[0]) if n_err else "none")})


def output_rows(ep: dataset.Episode, folder, generator: str) -> list[dict]:
    """One row per scheduled shot: its file, probed without decoding (frames, fps, size, sha256), or one clear
    error naming the generator, episode, shot and problem (missing, a folder, a still image, too small ...)."""
    rows = []
    for sf in dataset.index_shot_files(ep, folder, generator):
        row = {"generator": generator, "episode_id": ep.episode_id, "shot": sf.index, "path": sf.path,
               "sha256": None, "n_frames": None, "fps": None, "width": None, "height": None, "error": sf.error}
        if sf.path:
            try:  # probe only (no decode): a still image, a folder, a tiny or empty video is rejected here
                src = VideoSource(sf.path)
                row.update(sha256=src.sha256, n_frames=src.n_frames, fps=src.fps,
                           width=src.size[0], height=src.size[1])
            except DecodeError as e:
                row["error"] = f"generator {generator!r}, episode {ep.episode_id!r}, shot {sf.index}: {e}"
        rows.append(row)
    return rows


def _episode_and_clips(outputs: pd.DataFrame, episode_df: pd.DataFrame):
    ep = dataset.parse_episode(json.loads(episode_df["episode_json"].iloc[0]))
    clips: dict[int, Any] = {}
    errors: dict[int, str] = {}
    for r in outputs.itertuples():
        if isinstance(r.error, str) and r.error:
            errors[int(r.shot)] = r.error
            continue
        try:
            clips[int(r.shot)] = SHOTS.get(r.path)
        except DecodeError as e:
            errors[int(r.shot)] = str(e)
    return ep, clips, errors


# ----------------------------------------------------------------------------- grounding

def _detect(detector, frames: list[np.ndarray], query: str, kind: str) -> tuple[list, Optional[str]]:
    dets = detector.detect(frames, query, kind=kind)
    reason = getattr(detector, "last_reason", None)
    if reason and all(len(d) == 0 for d in dets):
        return dets, reason
    return dets, None


def _candidates(fidx, frames, dets, description: str, clip_model) -> tuple[list, list]:
    """Every detection on the sampled frames as a scored candidate, with its 224x224 padded crop."""
    cands, crops = [], []
    for fi, frame, d in zip(fidx, frames, dets):
        labels = d.data.get("label") if hasattr(d, "data") else None
        for j in range(len(d)):
            box = d.xyxy[j]
            try:
                crop = core_grounding.crop_box(frame, box)
            except ValueError:
                continue
            crops.append(crop)
            cands.append(core_grounding.Candidate(int(fi), tuple(float(v) for v in box), float(d.confidence[j]),
                                                  str(labels[j]) if labels is not None else None, None,
                                                  core_grounding.a_sharp(crop),
                                                  core_grounding.a_area(box, frame.shape)))
    if cands and clip_model is not None:
        sims = np.asarray(clip_model.similarity(crops, [description])).reshape(-1)
        cands = [core_grounding.Candidate(c.frame_index, c.box, c.confidence, c.label, float(s), c.a_sharp, c.a_area)
                 for c, s in zip(cands, sims)]
    return cands, crops


@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="3", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_grounding(context: AssetExecutionContext, entitybench_outputs: pd.DataFrame,
                          entitybench_episode: pd.DataFrame, models: ModelRegistry, device: Device,
                          store: Store) -> Output[pd.DataFrame]:
    """Canonical crop per (shot, entity): 5 frames, detector queried with the description, a = a_clip*a_sharp*a_area."""
    generator, episode_id = _split(context)
    ep, clips, errors = _episode_and_clips(entitybench_outputs, entitybench_episode)
    reg = ep.registry
    detector, det_reason = load_slot(models, device, "open_vocab_detector")
    clip_model, clip_reason = load_slot(models, device, "clip_b32")
    closed = bool(getattr(detector, "closed_vocabulary", False))
    rows = []
    for shot in ep.shots:
        base = {"generator": generator, "episode_id": episode_id, "shot": shot.index}
        clip = clips.get(shot.index)
        if clip is not None:
            fidx, frames = clip.even(GROUNDING_FRAMES)
        found: dict[str, tuple[list, list]] = {}
        for eid in shot.entities:
            ent = reg[eid]
            row = {**base, "entity_id": eid, "entity_type": ent.type, "frame_index": None,
                   "x1": None, "y1": None, "x2": None, "y2": None, "confidence": None, "label": None,
                   "a_clip": None, "a_sharp": None, "a_area": None, "a": None, "status": "unavailable",
                   "ambiguous": False, "crop_id": None, "source_sha256": clip.sha256 if clip is not None else None,
                   "reason": None}
            rows.append(row)
            if clip is None:  # the generator's failure, not the evaluator's 'unavailable'
                row["status"] = judged.SHOT_ERROR
                row["reason"] = errors.get(shot.index, "shot missing")
                continue
            if detector is None:
                row["reason"] = det_reason
                continue
            dets, why = _detect(detector, list(frames), ent.description, ent.type)
            if why:
                row["reason"] = why
                continue
            found[eid] = _candidates(fidx, frames, dets, ent.description, clip_model)
        shot_rows = {r["entity_id"]: r for r in rows if r["shot"] == shot.index}
        groups: dict[str, list[str]] = defaultdict(list)
        for eid, (cands, _) in found.items():
            groups[(cands[0].label if closed and cands else eid) or eid].append(eid)
        for members in groups.values():
            if len(members) == 1:
                cands, crops = found[members[0]]
                picks, ambiguous = {members[0]: core_grounding.best_index(cands)}, False
            else:  # closed vocabulary: k same-class entities, distinct boxes, arbitrary mapping
                cands, crops = found[members[0]]
                picks = dict(zip(members, core_grounding.assign_shared_class(cands, len(members))))
                ambiguous = True
            for eid in members:
                row, i = shot_rows[eid], picks[eid]
                best = cands[i] if i is not None else None
                row["status"] = core_grounding.decide_status(best, clip_model is not None, OFFLINE_WEAK_CONF)
                row["ambiguous"] = ambiguous
                if ambiguous:
                    row["reason"] = (f"closed-vocabulary detector: {len(members)} scheduled entities share class "
                                     f"{cands[0].label!r}; boxes assigned by score, identity unknown")
                if best is not None:
                    row.update(frame_index=best.frame_index, x1=best.box[0], y1=best.box[1], x2=best.box[2],
                               y2=best.box[3], confidence=best.confidence, label=best.label, a_clip=best.a_clip,
                               a_sharp=best.a_sharp, a_area=best.a_area, a=best.score,
                               crop_id=store.put_png(crops[i]))
    df = pd.DataFrame(rows)
    status_rule = ("a_clip(c*) >= 0.20 (CLIP ViT-B/32)" if clip_model is not None else
                   f"CLIP unavailable ({clip_reason}); a_clip recorded as None, a = confidence*a_sharp*a_area, "
                   f"weak iff detector confidence < {OFFLINE_WEAK_CONF}")
    status_counts = df["status"].value_counts().to_dict() if len(df) else {}
    return Output(df, metadata={"rows": len(df), "status_counts": MetadataValue.json(status_counts),
                                "status_rule": MetadataValue.text(status_rule),
                                "models": MetadataValue.json(_slot_manifest(models, ["open_vocab_detector", "clip_b32"]))})


# ----------------------------------------------------------------------------- Pillar 1

PILLAR1_SLOTS = sorted({m.slot for m in metrics.PILLAR1 if m.slot})


class ShotStream:
    """One shot's native frames, streamed in consecutive chunks by one PyAV pass (memory flat in length). The
    same pass gathers the frames the sampling metrics read and leaves them in ``SHOTS`` (no second decode)."""

    def __init__(self, path: str, chunk: int = PILLAR1_CHUNK):
        self.src = VideoSource(path)
        self.fps, self.n_frames, self.chunk = self.src.fps, self.src.n_frames, chunk
        self._samples = shot_frames.request(self.src) if SHOTS.cached(path) is None else None

    @property
    def sha256(self) -> str:
        return self.src.sha256

    def chunks(self):
        for _, frames in self.src.iter_chunks(chunk=self.chunk, overlap=0, name="pillar1"):
            yield frames
        if self._samples is not None and self.src.done:
            SHOTS.put(self.src.path, shot_frames.collect(self.src, self._samples))


class ArrayStream:
    """The same contract over frames already in memory (tests, the embedded data)."""

    def __init__(self, frames: np.ndarray, fps: float, sha256: str = "", chunk: int = PILLAR1_CHUNK):
        self.frames, self.fps, self.n_frames, self.sha256, self.chunk = frames, fps, len(frames), sha256, chunk

    def chunks(self):
        for i in range(0, len(self.frames), self.chunk):
            yield self.frames[i:i + self.chunk]


def pillar1_rows(generator: str, ep: dataset.Episode, open_shot, errors: dict, slots: dict[str, tuple]) -> list[dict]:
    """Per-shot values of the six intra-shot metrics plus one episode record each.

    ``open_shot(index)`` returns a stream (``fps``, ``n_frames``, ``sha256``, ``chunks()``) or raises
    DecodeError; every native frame is walked once. A missing or bad shot is the generator's failure; a
    missing model or a model crash is the evaluator's."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    values: dict[str, list] = defaultdict(list)
    failed: dict[str, int] = defaultdict(int)
    evaluator: dict[str, int] = defaultdict(int)
    reasons: dict[str, set] = defaultdict(set)
    rows = []
    for shot in ep.shots:
        stream, err = None, errors.get(shot.index)
        if err is None:
            try:
                stream = open_shot(shot.index)
            except DecodeError as e:
                err = str(e)
        if stream is None:  # missing or undecodable shot: a failure of this instance, not a zero
            for metric in metrics.PILLAR1:
                failed[metric.metric_id] += 1
                reasons[metric.metric_id].add("shot missing or undecodable")
                rows.append(counts.failed_instance(metric.metric_id, "shot", err or "shot missing", shot=shot.index,
                                                   **keys))
            continue
        run = {m: slots[m.slot][0] if m.slot else None for m in metrics.PILLAR1
               if not m.slot or slots[m.slot][0] is not None}
        try:
            out = metrics.stream_pillar1(stream.chunks(), stream.fps, stream.n_frames, run)
        except DecodeError as e:  # the stream broke mid-way (truncated file): the generator's failure
            for metric in metrics.PILLAR1:
                failed[metric.metric_id] += 1
                reasons[metric.metric_id].add("shot missing or undecodable")
                rows.append(counts.failed_instance(metric.metric_id, "shot", str(e), shot=shot.index, **keys))
            continue
        for metric in metrics.PILLAR1:
            mid = metric.metric_id
            if metric not in run:
                why = slots[metric.slot][1]
                evaluator[mid] += 1
                reasons[mid].add(why)
                rows.append(counts.evaluator_instance(mid, "shot", why, shot=shot.index, source_sha256=stream.sha256,
                                                      **keys))
                continue
            v, err = out[mid]
            if err:
                evaluator[mid] += 1
                reasons[mid].add(err)
                rows.append(counts.evaluator_instance(mid, "shot", err, shot=shot.index, source_sha256=stream.sha256,
                                                      **keys))
                continue
            values[mid].append(v)
            rows.append(instance_row(mid, v, "shot", reason=None if v is not None else "too few frames",
                                     shot=shot.index, source_sha256=stream.sha256,
                                     detail={"frames": stream.n_frames, "fps": stream.fps}, **keys))
    for metric in metrics.PILLAR1:
        mid = metric.metric_id
        rows.append(counts.record(mid, values[mid], n_failed=failed[mid], n_failed_evaluator=evaluator[mid],
                                  reason="; ".join(sorted(x for x in reasons[mid] if x))[:500] or None, **keys))
    return rows


@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="5", pool="gpu",
       op_tags=PILLAR1_OP_TAGS)
def entitybench_pillar1(context: AssetExecutionContext, entitybench_outputs: pd.DataFrame,
                        entitybench_episode: pd.DataFrame, models: ModelRegistry,
                        device: Device) -> Output[pd.DataFrame]:
    """Pillar 1 (intra-shot quality, 6 metrics) on every consecutive native frame, streamed; never gated."""
    generator, _ = _split(context)
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    paths, errors = _shot_paths(entitybench_outputs)
    slots = {name: load_slot(models, device, name) for name in PILLAR1_SLOTS}
    df = counts.frame(pillar1_rows(generator, ep, lambda k: ShotStream(paths[k]), errors, slots))
    df["protocol"] = _protocol(models, PILLAR1_SLOTS)
    _label_substitutes(df, models)
    items = df[df.level == "item"]
    return Output(df, metadata={**{r.metric_id: (float(r.value) if pd.notna(r.value) else "None")
                                   for r in items.itertuples()},
                                **_evaluator_metadata(df),
                                "models": MetadataValue.json(_slot_manifest(models, PILLAR1_SLOTS))})


# ----------------------------------------------------------------------------- Pillar 2 presence, Pillar 3 DINOv2

def presence_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame) -> list[dict]:
    """Per shot with >= 1 scheduled entity of the type: share with status present. A missing shot is the
    generator's failure; a shot whose entities the evaluator could not ground is the evaluator's."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    rows = []
    for etype in dataset.ENTITY_TYPES:
        mid = f"intra_{etype}_presence"
        vals, failed, evaluator, reasons = [], 0, 0, set()
        for shot in ep.shots:
            g = grounding[(grounding["shot"] == shot.index) & (grounding["entity_type"] == etype)]
            if g.empty:
                continue  # shot schedules none of this type: not an instance
            why = "; ".join(sorted(set(g["reason"].dropna())))[:500] or None
            statuses = list(g["status"])
            if judged.SHOT_ERROR in statuses:
                failed += 1
                reasons.add(why)
                rows.append(counts.failed_instance(mid, "shot", why, shot=shot.index, **keys))
                continue
            v = metrics.presence_share(statuses)
            if v is None:  # every scheduled entity of the type was 'unavailable' (the evaluator cannot ground it)
                evaluator += 1
                reasons.add(why)
                rows.append(counts.evaluator_instance(mid, "shot", why, shot=shot.index,
                                                      detail={"statuses": dict(zip(g["entity_id"], statuses))}, **keys))
                continue
            vals.append(v)
            rows.append(instance_row(mid, v, "shot", shot=shot.index,
                                     detail={"statuses": dict(zip(g["entity_id"], statuses))}, **keys))
        rows.append(counts.record(mid, vals, n_failed=failed, n_failed_evaluator=evaluator,
                                  reason="; ".join(sorted(x for x in reasons if x))[:500] or None, **keys))
    return rows


FACE_CANVAS = 320


def _face_in_box(face_model, frame: np.ndarray, box) -> Optional[tuple[np.ndarray, float]]:
    """(SFace identity vector, YuNet confidence) of the most confident face inside the padded box, at native
    resolution (the 224x224 canonical crop squeezes the aspect ratio, which alignment does not survive)."""
    x1, y1, x2, y2 = core_grounding.padded_box(np.asarray(box, float), frame.shape)
    region = frame[y1:y2, x1:x2]
    if region.shape[0] < 16 or region.shape[1] < 16:
        return None
    # letterboxed onto one canvas size: the detector is built per input size, and box sizes vary per shot
    scale = FACE_CANVAS / max(region.shape[:2])
    resized = cv2.resize(region, (max(1, round(region.shape[1] * scale)), max(1, round(region.shape[0] * scale))),
                         interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR)
    region = np.zeros((FACE_CANVAS, FACE_CANVAS, 3), np.uint8)
    region[:resized.shape[0], :resized.shape[1]] = resized
    dets = face_model.detect([region])[0]
    if len(dets) == 0:
        return None
    best = int(np.argmax(dets.confidence))
    emb = face_model.embed_faces(region, dets[best:best + 1])
    return (emb[0], float(dets.confidence[best])) if len(emb) else None


def face_identity_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, fidelity: dict, clips: dict,
                       face_model, face_reason: Optional[str], face_name: str) -> list[dict]:
    """``cs_face_identity``: an addition beside the paper's ``cs_face``, not a replacement. Same instances
    (admitted appearances of characters with >= 2 admitted), but each appearance is a face-identity vector
    (YuNet + SFace offline, ArcFace in the paper profile) scored against the centroid of the character's *other*
    face appearances (leave-one-out: with few appearances a centroid that includes the appearance itself hides
    an identity swap - on real footage a swapped shot moved the self-inclusive mean .066, the leave-one-out
    mean .113). An appearance with no detectable face is skipped with that reason; the embedder is written
    on every row."""
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    mid = "cs_face_identity"
    rows, pooled, skipped, failed, evaluator, reasons = [], [], 0, 0, 0, set()
    lost = judged.undelivered(grounding)
    for ent in (e for e in ep.entities if e.type == "character"):
        adm, _ = judged.admitted(grounding, fidelity, ent.id)
        missing = judged.touched(ep, ent.id, lost)
        if missing:  # each score reads the other appearances' faces, the undelivered ones too
            failed += _touched_rows(rows, mid, ent.id, adm, missing, keys)
            reasons.add("appearances of a character with undelivered shots")
            continue
        if len(adm) < 2:
            continue
        if face_model is None:
            evaluator += len(adm)
            reasons.add(face_reason)
            continue
        faces = []
        for r in adm.itertuples():
            clip = clips.get(int(r.shot))
            got = (_face_in_box(face_model, clip.frames[int(r.frame_index)], (r.x1, r.y1, r.x2, r.y2))
                   if clip is not None else None)
            faces.append((r, got))
        found = [(r, g) for r, g in faces if g is not None]
        for r, g in faces:
            if g is None or len(found) < 2:
                why = "no face detected in the box" if g is None else "fewer than 2 appearances show a face"
                skipped += 1
                reasons.add(why)
                rows.append(instance_row(mid, None, "appearance", reason=why, shot=int(r.shot), entity_id=ent.id,
                                         crop_id=r.crop_id, detail={"embedder": face_name}, **keys))
        if len(found) < 2:
            continue
        scores = metrics.leave_one_out_scores(np.stack([g[0] for _, g in found]))
        for (r, g), sc in zip(found, scores):
            pooled.append(float(sc))
            rows.append(instance_row(mid, float(sc), "appearance", shot=int(r.shot), entity_id=ent.id,
                                     crop_id=r.crop_id, frame_index=int(r.frame_index), source_sha256=r.source_sha256,
                                     detail={"embedder": face_name, "face_confidence": round(g[1], 4)}, **keys))
    rows.append(counts.record(mid, pooled, n_skipped=skipped, n_failed=failed, n_failed_evaluator=evaluator,
                              reason="; ".join(sorted(x for x in reasons if x))[:500] or
                              (None if pooled or skipped or evaluator
                               else "no character with >= 2 admitted appearances"),
                              **keys))
    return rows


def _touched_rows(rows: list, mid: str, entity_id: str, adm: pd.DataFrame, missing: list[int], keys: dict) -> int:
    """Failed instances of an entity with undelivered shots: its delivered admitted appearances and its
    undelivered scheduled ones (each of which might have been admitted). Returns their count, which is never
    below the admitted appearances the complete delivery could have had."""
    why = f"{entity_id}: shots {missing} not delivered (its centroid reads every appearance)"
    for k in [*(int(x) for x in adm["shot"]), *missing]:
        rows.append(counts.failed_instance(mid, "appearance", why, shot=k, entity_id=entity_id, **keys))
    return len(adm) + len(missing)


def cross_shot_rows(generator: str, ep: dataset.Episode, grounding: pd.DataFrame, embed, embed_reason: Optional[str],
                    store: Store, clips: dict, fidelity: dict, embedder_name: str = "") -> tuple[list[dict], int]:
    """cs_face / cs_object (centroid cosine over the admitted crops C(e)), the gap-decay pairs of the image
    embedder (adjacent admitted appearances, and all pairs), and cs_transition_boundary.

    C(e) = present, attributable crops with fidelity overall >= tau or fidelity None (judge off or failed).
    Returns the rows and the gated-out appearance count over characters, objects and locations.
    """
    keys = {"benchmark": BENCH, "generator": generator, "item": ep.episode_id}
    rows: list[dict] = []
    gated_out = 0
    lost = judged.undelivered(grounding)
    for etype, mid in TYPE_METRIC.items():
        pooled, evaluator, failed, n_ambiguous = [], 0, 0, 0
        for ent in (e for e in ep.entities if e.type == etype):
            adm, gated = judged.admitted(grounding, fidelity, ent.id)
            gated_out += gated
            present = grounding[(grounding["entity_id"] == ent.id) & (grounding["status"] == "present")]
            n_ambiguous += int(present.get("ambiguous", pd.Series(dtype=bool)).fillna(False).astype(bool).sum())
            missing = judged.touched(ep, ent.id, lost)
            if missing:  # every score reads the centroid, which would have read the undelivered appearances
                failed += _touched_rows(rows, mid, ent.id, adm, missing, keys)
            if len(adm) < 2:
                continue
            if embed is None:
                evaluator += 0 if missing else len(adm)
                continue
            emb = embed([store.get_png(c) for c in adm["crop_id"]])
            _, scores = metrics.centroid_scores(emb)
            for (r, s) in zip(adm.itertuples(), scores if not missing else []):
                pooled.append(float(s))
                rows.append(instance_row(mid, float(s), "appearance", shot=int(r.shot), entity_id=ent.id,
                                         crop_id=r.crop_id, frame_index=int(r.frame_index),
                                         source_sha256=r.source_sha256, detail={"embedder": embedder_name}, **keys))
            e = metrics._l2n(emb)
            shots = [int(x) for x in adm["shot"]]
            for i in range(len(shots)):
                for j in range(i + 1, len(shots)):
                    d = shots[j] - shots[i]
                    adjacent = j == i + 1
                    # named for what produced it: the image embedder's cosine (DINOv2 in the paper profile)
                    rows.append(instance_row("gap_decay_embedding" if adjacent else "gap_decay_embedding_allpairs",
                                             float(e[i] @ e[j]), "pair", shot=shots[j], entity_id=ent.id,
                                             crop_id=adm["crop_id"].iloc[j],
                                             detail={"from_shot": shots[i], "shot_distance": d,
                                                     "gap_bin": judging.gap_bin(d), "entity_type": etype,
                                                     "embedder": embedder_name}, **keys))
        # Unattributable boxes are not instances (like gated-out appearances: coverage stays 1); the
        # count is kept in the reason and every such row is flagged in entitybench_grounding.
        why = "; ".join(x for x in (embed_reason if evaluator else None,
                                    f"{n_ambiguous} appearances not attributable (shared class)" if n_ambiguous
                                    else None,
                                    f"{failed} appearances of entities with undelivered shots" if failed
                                    else None) if x) or None
        rows.append(counts.record(mid, pooled, n_failed=failed, n_failed_evaluator=evaluator,
                                  reason=why or (None if pooled else "no entity with >= 2 admitted appearances"),
                                  **keys))
    for loc in (e for e in ep.entities if e.type == "location"):
        gated_out += judged.location_admitted(ep, grounding, fidelity, clips, loc.id)[1]
    # transition boundary over continuation pairs
    mid = "cs_transition_boundary"
    vals, skipped, failed, evaluator, reasons = [], 0, 0, 0, set()
    present_shots = set(grounding.loc[grounding["status"] == "present", "shot"].astype(int))
    for shot in ep.shots[1:]:
        if shot.cut:
            continue
        k, k1 = shot.index - 1, shot.index
        a, b = clips.get(k), clips.get(k1)
        if a is None or b is None:
            failed += 1
            reasons.add("a side's shot is missing or undecodable")
            rows.append(counts.failed_instance(mid, "pair", "a side's shot is missing or undecodable", shot=k1, **keys))
            continue
        if k not in present_shots or k1 not in present_shots:
            skipped += 1
            reasons.add("a side has no present entity")
            rows.append(instance_row(mid, None, "pair", shot=k1, reason="a side has no present entity", **keys))
            continue
        if embed is None:
            evaluator += 1
            reasons.add(embed_reason)
            rows.append(counts.evaluator_instance(mid, "pair", embed_reason, shot=k1, **keys))
            continue
        e = embed([a.frames[-1], b.frames[0]])
        v = float(metrics._l2n(e[0]) @ metrics._l2n(e[1]))
        vals.append(v)
        rows.append(instance_row(mid, v, "pair", shot=k1, detail={"from_shot": k, "to_shot": k1,
                                                                  "embedder": embedder_name},
                                 source_sha256=b.sha256, **keys))
    rows.append(counts.record(mid, vals, n_skipped=skipped, n_failed=failed, n_failed_evaluator=evaluator,
                              reason="; ".join(sorted(x for x in reasons if x))[:500] or
                              (None if vals else "no continuation pair"), **keys))
    return rows, gated_out


@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="6", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_presence_consistency(context: AssetExecutionContext, entitybench_grounding: pd.DataFrame,
                                     entitybench_outputs: pd.DataFrame, entitybench_episode: pd.DataFrame,
                                     entitybench_fidelity: pd.DataFrame, models: ModelRegistry, device: Device,
                                     store: Store) -> Output[pd.DataFrame]:
    """Pillar 2 presence (3), Pillar 3 embedding consistency (cs_face, cs_object, cs_transition_boundary) and,
    beside cs_face, the face-identity consistency cs_face_identity (an addition, labelled as such)."""
    generator, _ = _split(context)
    ep, clips, _ = _episode_and_clips(entitybench_outputs, entitybench_episode)
    embedder, why = load_slot(models, device, "image_embedder")
    face, face_why = load_slot(models, device, "face")
    fid = judged.fidelity_overall(entitybench_fidelity)
    rows = presence_rows(generator, ep, entitybench_grounding)
    cs_rows, gated_out = cross_shot_rows(generator, ep, entitybench_grounding,
                                         embedder.embed if embedder is not None else None, why, store, clips,
                                         fid, models.status("image_embedder").checkpoint)
    rows += cs_rows
    rows += face_identity_rows(generator, ep, entitybench_grounding, fid, clips, face, face_why,
                               models.status("face").checkpoint)
    n_present = int((entitybench_grounding["status"] == "present").sum())
    was_judged = entitybench_fidelity["value"].notna().any() if len(entitybench_fidelity) else False
    # a diagnostic beside the metrics (kept off the leaderboard): gated-out appearances of every entity type
    rows.append(record_row(MetricRecord("_meta_cross_shot_gate", float(gated_out) if n_present else None,
                                        n_present, 0, 0,
                                        None if was_judged or not n_present else
                                        "fidelity not judged: every present crop passed the gate (logged)"
                                        if n_present else "no present crop"),
                           benchmark=BENCH, generator=generator, item=ep.episode_id))
    df = counts.frame(rows)
    df["protocol"] = _protocol(models, ["image_embedder", "face", *GROUNDING_SLOTS])
    _label_substitutes(df, models)
    items = df[df.level == "item"]
    return Output(df, metadata={**{r.metric_id: (float(r.value) if pd.notna(r.value) else "None")
                                   for r in items.itertuples()},
                                "gated_out": gated_out, **_evaluator_metadata(df),
                                "models": MetadataValue.json(_slot_manifest(models, ["image_embedder", "face"]))})


# ----------------------------------------------------------------------------- judged metrics

def _ask(judge: Judge):
    return judge.ask_many


@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="3")
def entitybench_fidelity(context: AssetExecutionContext, entitybench_grounding: pd.DataFrame,
                         entitybench_episode: pd.DataFrame, judge: Judge, store: Store,
                         models: ModelRegistry) -> Output[pd.DataFrame]:
    """Pillar 2 fidelity (15): the judge scores each present/weak canonical crop against its description."""
    generator, _ = _split(context)
    ep = dataset.parse_episode(json.loads(entitybench_episode["episode_json"].iloc[0]))
    df = counts.frame(judged.fidelity_rows(generator, ep, entitybench_grounding, store.get_png, judge.ask_many))
    df["protocol"] = _protocol(models, GROUNDING_SLOTS, judge)
    _label_substitutes(df, models)
    return Output(df, metadata=_item_metadata(df) | _evaluator_metadata(df)
                  | {"judge": MetadataValue.json(judge.fingerprint())})


def _action_detector(detector, reg):
    """frames, entity ids -> per frame {entity: box}: the highest-confidence box of each scheduled entity;
    entities a closed-vocabulary detector cannot tell apart get distinct boxes by score."""
    def boxes(frames, entity_ids):
        out = [dict() for _ in frames]
        by_label: dict[str, list[str]] = defaultdict(list)
        dets = {}
        for e in entity_ids:
            d, why = _detect(detector, frames, reg[e].description, reg[e].type)
            dets[e] = d
            label = getattr(detector, "last_label", None) if getattr(detector, "closed_vocabulary", False) else e
            by_label[label or e].append(e)
        for members in by_label.values():
            for t in range(len(frames)):
                d = dets[members[0]][t]
                order = list(np.argsort(-d.confidence)) if len(d) else []
                for e, j in zip(members, order):
                    out[t][e] = tuple(float(v) for v in d.xyxy[j])
        return out
    return boxes


@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="4", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_action(context: AssetExecutionContext, entitybench_outputs: pd.DataFrame,
                       entitybench_episode: pd.DataFrame, models: ModelRegistry, device: Device,
                       judge: Judge) -> Output[pd.DataFrame]:
    """Pillar 2 action (6): a 2x3 grid of 6 frames with labelled boxes, judged against the action text."""
    generator, _ = _split(context)
    ep, clips, errors = _episode_and_clips(entitybench_outputs, entitybench_episode)
    detector, why = load_slot(models, device, "open_vocab_detector")
    detect = _action_detector(detector, ep.registry) if detector is not None else None
    ok, judge_why = judge.available()
    df = counts.frame(judged.action_rows(generator, ep, clips, errors, detect, why, judge.ask_many,
                                         judge_reason=None if ok else judge_why))
    df["protocol"] = _protocol(models, ["open_vocab_detector", "text_embedder"], judge)
    _label_substitutes(df, models)
    return Output(df, metadata=_item_metadata(df) | _evaluator_metadata(df))


@asset(partitions_def=P.generator_x_item, group_name=METRIC_GROUP, code_version="4", pool="gpu", op_tags=GPU_OP_TAGS)
def entitybench_llm_consistency(context: AssetExecutionContext, entitybench_grounding: pd.DataFrame,
                                entitybench_fidelity: pd.DataFrame, entitybench_outputs: pd.DataFrame,
                                entitybench_episode: pd.DataFrame, models: ModelRegistry, device: Device,
                                judge: Judge, store: Store) -> Output[pd.DataFrame]:
    """Pillar 3 LLM (12 + 6): pairwise identity against the centroid anchor; locations on full frames."""
    generator, _ = _split(context)
    ep, clips, _ = _episode_and_clips(entitybench_outputs, entitybench_episode)
    embedder, why = load_slot(models, device, "image_embedder")
    embed = embedder.embed if embedder is not None else None
    fid = judged.fidelity_overall(entitybench_fidelity)
    ok, judge_why = judge.available()
    jr = None if ok else judge_why   # nothing to ask: skip the anchors' embeddings too
    rows = judged.llm_entity_rows(generator, ep, entitybench_grounding, fid, embed, why, store.get_png, judge.ask_many,
                                  judge_reason=jr)
    rows += judged.llm_location_rows(generator, ep, entitybench_grounding, clips, embed, why, judge.ask_many,
                                     judge_reason=jr, fidelity=fid)
    df = counts.frame(rows)
    df["protocol"] = _protocol(models, ["image_embedder", *GROUNDING_SLOTS], judge)
    _label_substitutes(df, models)
    return Output(df, metadata=_item_metadata(df) | _evaluator_metadata(df))


def _item_metadata(df: pd.DataFrame) -> dict:
    items = df[df.level == "item"]
    return {r.metric_id: (float(r.value) if pd.notna(r.value) else "None") for r in items.itertuples()}


# ----------------------------------------------------------------------------- leaderboard

METRIC_TABLES = ("entitybench_pillar1", "entitybench_presence_consistency", "entitybench_fidelity",
                 "entitybench_action", "entitybench_llm_consistency")


@asset(group_name=METRIC_GROUP, code_version="4",
       deps=[*METRIC_TABLES, "entitybench_episode"],
       automation_condition=board_condition(*METRIC_TABLES))
def entitybench_leaderboard(context: AssetExecutionContext, store: Store, models: ModelRegistry,
                            judge: Judge) -> Output[pd.DataFrame]:
    """The common board (core/metric_spec.BOARD_COLUMNS): every metric for every generator (value or None with
    reason), slice "all" and one per tier; the maths in board.py."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    con = store.duckdb()
    present = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
    parts = []
    for t in METRIC_TABLES:
        if t not in present:
            continue
        cols = {r[0] for r in con.execute(f"SELECT column_name FROM information_schema.columns "
                                          f"WHERE table_name = '{t}'").fetchall()}
        extra = ", ".join(f"{c}" if c in cols else f"NULL AS {c}" for c in (counts.EVAL, "substitute"))
        parts.append(f"SELECT generator, item, metric_id, value, n_eval, n_failed, n_skipped, reason, protocol, "
                     f"{extra} FROM {t} WHERE level = 'item'")
    if not parts:
        raise ValueError("no EntityBench metric partition has been materialised yet")
    records = con.execute(" UNION ALL ".join(parts)).df()
    tiers = con.execute("SELECT episode_id AS item, tier FROM entitybench_episode").df()
    table = board_frame(BENCH, board.leaderboard_rows(records, tiers, METRICS), METRICS)
    gate = board.gate_diagnostics(records)
    manifest = entitybench_manifest(models, judge)
    main = table[table["slice"] == board.MAIN_SLICE]
    return Output(table, metadata={
        "generators": MetadataValue.json(sorted(table["generator"].unique().tolist())),
        "table": MetadataValue.md(board_markdown(table, {"slice": board.MAIN_SLICE})),
        "gate_diagnostics": MetadataValue.md(gate.to_markdown(index=False) if len(gate) else "none"),
        "evaluator_failures": int(main["n_failed_evaluator"].sum()),
        "generator_failures": int(main["n_failed"].sum()),
        "protocol_digest": protocol_digest(manifest), "profile": manifest["profile"],
        "judge_mode": manifest["judge_mode"],
        "grounding_status_rule": MetadataValue.text(manifest["grounding_status_rule"]),
        "manifest": MetadataValue.json(json.loads(json.dumps(manifest, default=str)))}
        | report_metadata(store, BENCH))


ASSETS = [entitybench_episode, entitybench_entity_registry, entitybench_dataset_statistics, entitybench_outputs,
          entitybench_grounding, entitybench_pillar1, entitybench_fidelity, entitybench_action,
          entitybench_presence_consistency, entitybench_llm_consistency, entitybench_leaderboard]


@asset(group_name=METRIC_GROUP, code_version="2",
       deps=["entitybench_presence_consistency", "entitybench_llm_consistency"],
       automation_condition=AutomationCondition.eager().without(~AutomationCondition.any_deps_missing()))
def entitybench_gap_decay(context: AssetExecutionContext, store: Store) -> Output[pd.DataFrame]:
    """Gap-decay diagnostic: DINOv2 cosine of adjacent admitted appearances and LLM sim of the anchor
    comparisons, binned by shot distance (1-2, 3-5, 6-10, 11-20, 21-50), with pair counts; plotted."""
    tables = set(store.asset_tables())
    cols = "generator, item, metric_id, shot, entity_id, value, detail"
    emb = store.query(f"SELECT {cols} FROM entitybench_presence_consistency WHERE metric_id IN "
                      f"('gap_decay_embedding', 'gap_decay_embedding_allpairs')") \
        if "entitybench_presence_consistency" in tables else None
    llm = store.query(f"SELECT {cols} FROM entitybench_llm_consistency WHERE level = 'pair' AND metric_id IN "
                      f"('llm_face_mean_score', 'llm_object_mean_score', 'llm_scene_pair')") \
        if "entitybench_llm_consistency" in tables else None
    tiers = store.query("SELECT episode_id AS item, tier FROM entitybench_episode") \
        if "entitybench_episode" in tables else None
    table = audit.gap_decay_table(emb, llm, tiers)
    png = audit.gap_decay_plot(table)
    plot_id = store.put_bytes(png, "png") if png else None
    table["plot_id"] = plot_id
    meta = {"pairs": int(table["pairs"].sum()) if len(table) else 0}
    if plot_id:
        meta["plot"] = MetadataValue.path(store.artifact_path(plot_id))
    return Output(table, metadata=meta)


@asset(group_name=METRIC_GROUP, code_version="1", deps=[entitybench_leaderboard],
       automation_condition=AutomationCondition.eager())
def entitybench_effect_sizes(context: AssetExecutionContext, store: Store) -> Output[pd.DataFrame]:
    """Cohen's d (pooled) and d_z (paired over shared episodes) between every two generators, per metric."""
    tables = set(store.asset_tables())
    parts = [f"SELECT generator, item, metric_id, value, protocol FROM {t} WHERE level = 'item'"
             for t in METRIC_TABLES if t in tables]
    table = board.effect_size_table(store.query(" UNION ALL ".join(parts)))
    return Output(table, metadata={"pairs": len(table)})


@asset(name="entitybench_manifest", group_name=METRIC_GROUP, code_version="1", deps=[entitybench_leaderboard],
       automation_condition=AutomationCondition.eager())
def entitybench_manifest_table(context: AssetExecutionContext, models: ModelRegistry,
                               judge: Judge) -> Output[pd.DataFrame]:
    """The run's protocol manifest (checkpoints, judge, constants, grounding status rule) as one row: the report
    site's EntityBench page shows its models and profile from ``manifest_json``."""
    manifest = entitybench_manifest(models, judge)
    df = pd.DataFrame([{"protocol_digest": protocol_digest(manifest), "profile": manifest["profile"],
                        "judge_mode": manifest["judge_mode"],
                        "manifest_json": json.dumps(manifest, sort_keys=True, default=str)}])
    return Output(df, metadata={"protocol_digest": protocol_digest(manifest), "profile": manifest["profile"],
                                "judge_mode": manifest["judge_mode"]})


ASSETS.append(entitybench_gap_decay)
ASSETS.append(entitybench_effect_sizes)
ASSETS.append(entitybench_manifest_table)
