"""LoCoT2V-Bench wiring: partitions (generator x sample), resources, metadata. Math in metrics.py, per-video work in
pipeline.py, prompts in judging.py."""

import json
from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import (INPUT_SHA_KEY, board_condition, content_data_version, file_digest,
                                          files_digest, input_version)
from bench_assets.core.board_text import board_markdown
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.metric_spec import decode_warning_counts, label_substitutes, mark_judged
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.records import MetricRecord
from bench_assets.core.tables import metric_frame
from bench_assets.locot2v import board, constants, dataset, metrics, pipeline
from bench_assets.locot2v.metric_specs import METRICS, judge_label
from bench_assets.locot2v.rrub import RRUB_FILE, load_rrub
from bench_assets.locot2v.stream import DoverClips, TemporalStream
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths, OutsideRoot, inside_root
from bench_resources.store import Store

BENCH = constants.BENCH
P = BenchmarkPartitions(BENCH, "sample")
GROUP = "locot2v"
SLOTS = ("aesthetic_v25", "dover", "flow", "interpolator", "siglip2", "image_embedder", "subject_segmenter",
         "open_vocab_detector", "clip_b32", "long_text_embedder",
         "face")   # issue 23: inter_event_subject_face_identity (an addition beside the paper's crop embedding)
CHUNK = 32   # native frames per streamed chunk


def samples_dir(paths: BenchPaths):
    return paths.benchmark_dir(BENCH) / "samples"


# Content digests of the files the input assets read (core/automation.py): an edited sample or a replaced output
# video marks exactly its partitions stale; the judged asset reads the same video.
@input_version("locot2v_sample")
def sample_version(paths: BenchPaths, sample_id: str) -> str:
    return file_digest(samples_dir(paths) / f"{sample_id}.json")


@input_version("locot2v_visual", also_read_by=("locot2v_judged",))
def video_version(paths: BenchPaths, partition_key: str) -> str:
    generator, sample_id = P.split(partition_key)
    return files_digest([("video", paths.generator_dir(generator) / f"{sample_id}.mp4")])


def rrub_value(paths: BenchPaths) -> tuple[float, str]:
    return load_rrub(paths.benchmark_dir(BENCH) / RRUB_FILE)


def manifest(models: ModelRegistry, judge: Judge, paths: BenchPaths) -> dict[str, Any]:
    value, source = rrub_value(paths)
    return build_manifest(benchmark=BENCH, protocol=constants.PROTOCOL, models=models.manifest(SLOTS),
                          judge=judge.fingerprint(),
                          constants={**constants.CONSTANTS, "rrub": value, "rrub_source": source},
                          extra={"profile": models.profile, "cc_sampling": pipeline.clarity_sampling(judge)[1]})


def _protocol(models: ModelRegistry, judge: Judge, paths: BenchPaths) -> str:
    return protocol_digest(manifest(models, judge, paths))


def _sample(df: pd.DataFrame) -> dataset.Sample:
    return dataset.parse_sample(json.loads(df["sample_json"].iloc[0]), "table")


def _video(paths: BenchPaths, generator: str, sample_id: str) -> VideoSource:
    """The output video, probed (nothing decoded yet): one VideoSource = one decode pass."""
    path = paths.generator_dir(generator) / f"{sample_id}.mp4"
    if not path.is_file():
        raise Failure(f"generator {generator!r}, sample {sample_id}: no output video {path}")
    try:
        inside_root(path, paths.generator_dir(generator), f"generator {generator!r}, sample {sample_id}")
    except OutsideRoot as e:
        raise Failure(str(e)) from None
    try:
        return VideoSource(path)
    except DecodeError as e:
        raise Failure(f"generator {generator!r}, sample {sample_id}: {e}") from None


def _run(src: VideoSource, generator: str, sample_id: str) -> None:
    try:
        src.run()
    except DecodeError as e:
        raise Failure(f"generator {generator!r}, sample {sample_id}: {e}") from None


def visual_values(src: VideoSource, slot: dict, events, events_why, rrub: float, stats: dict | None = None
                  ) -> list[MetricRecord]:
    """Every model-based sub-dimension of one video from ONE streamed decode pass: needs stated first (AQ's 1 fps
    frames, the event frames, every native frame in chunks for flows / scene cuts / transition windows / DOVER
    clips), then the pass, then the reductions. Memory: the gathered frames (bounded by duration at 1 fps and by
    the event count) plus one chunk and the reducers' small state. ``stats`` (optional) receives the flow counts
    (``TemporalStream.flows_per_pair``)."""
    n, fps = src.n_frames, src.fps
    aesthetic, aesthetic_why = slot["aesthetic_v25"]
    dover, dover_why = slot["dover"]
    seg, seg_why = slot["subject_segmenter"]
    det, det_why = slot["open_vocab_detector"]
    emb, emb_why = slot["image_embedder"]
    aq_idx = metrics.analysis_indices(n, fps, constants.AQ_FPS)
    aq = src.take(aq_idx, name="aesthetic 1 fps") if aesthetic is not None else None
    ev = (src.take(pipeline.event_frame_indices(n, len(events)), name="event frames")
          if events and emb is not None and det is not None else None)
    ts = TemporalStream(n, fps, (src.size[1], src.size[0]), *slot["flow"], *slot["siglip2"],
                        *slot.get("interpolator", (None, "interpolator slot not loaded")))
    bounds = metrics.clip_bounds(n, fps)
    dc = DoverClips(dover, bounds) if dover is not None else None

    def on_chunk(idx, frames):
        ts.push(idx, frames)
        if dc is not None:
            dc.push(idx, frames)

    src.chunks(on_chunk, chunk=CHUNK, name="temporal")
    values = _after_pass(src, ts, aq_idx, aq, aesthetic, aesthetic_why, rrub, bounds, dc, dover_why, ev, events,
                         events_why, seg, det, f"{seg_why}; {det_why}", emb, emb_why, slot["clip_b32"][0],
                         *slot.get("face", (None, "face slot not loaded")))
    if stats is not None:
        stats["flows"] = ts.flows_per_pair()
    return values


def _face_name(face) -> str:
    """The face slot's embedder as the addition's detail names it (ArcFace paper, SFace offline)."""
    rec = getattr(face, "recognizer", None)
    return f"YuNet + {type(rec).__name__}" if rec is not None else type(face).__name__


def _after_pass(src, ts, aq_idx, aq, aesthetic, aesthetic_why, rrub, bounds, dc, dover_why, ev, events, events_why,
                seg, det, locate_why, emb, emb_why, clip_model, face=None,
                face_why=None) -> list[MetricRecord]:
    src.run()
    values = [pipeline.aq_value(aq_idx, list(aq.frames) if aq is not None else [], aesthetic, aesthetic_why, rrub),
              pipeline.tq_value(bounds, dc.scores if dc is not None else None, dover_why)]
    values += ts.finish()
    frames = dict(zip(ev.indices, ev.frames)) if ev is not None else {}
    values += pipeline.event_consistency(src.n_frames, ts.cuts, frames, events, events_why, seg, det, locate_why,
                                         emb, emb_why, clip_model, face_model=face, face_why=face_why,
                                         face_name=_face_name(face))
    return values


def _derived(df: pd.DataFrame) -> dict[str, Any]:
    row = df.iloc[0]
    out = {}
    for name in ("events", "human_actions", "herd_questions"):
        raw = row[f"{name}_json"]
        out[name] = json.loads(raw) if isinstance(raw, str) else None
        out[f"{name}_reason"] = row[f"{name}_reason"] if isinstance(row[f"{name}_reason"], str) else None
    return out


def _rows(values: list[MetricRecord], generator: str, sample_id: str, sha: str, protocol: str) -> pd.DataFrame:
    rows = [{"benchmark": BENCH, "generator": generator, "item": sample_id, "level": "item",
             "metric_id": v.metric_id, "value": v.value, "n_eval": v.n_eval, "n_failed": v.n_failed,
             "n_skipped": v.n_skipped, "reason": v.reason, "detail": pipeline.as_json(v.detail) if v.detail else None,
             "source_sha256": sha, "protocol": protocol} for v in values]
    return metric_frame(rows)


def _meta(df: pd.DataFrame, generator: str) -> dict:
    """The UI's answer to "why this number" (core/explain.py): each sub-dimension rounded with its coverage and
    reason, the events and subjects behind the event-consistency values worst first (page.unit_rows) and the
    audit page of each board metric on the site `bench ui` serves."""
    from bench_assets.core.explain import explain_metadata
    from bench_assets.core.site import audit_link
    from bench_assets.locot2v.page import UNIT_COLUMNS, unit_rows
    units = unit_rows(df)
    rows = pd.concat([df, units], ignore_index=True) if len(units) else df
    return explain_metadata(rows, benchmark=BENCH, generator=generator,
                            directions={s.id: s.direction for s in METRICS.specs},
                            audit_url=audit_link(BENCH, generator, METRICS.specs), unit_cols=UNIT_COLUMNS,
                            unit_label="events, subjects")


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def locot2v_sample(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated sample in the canonical format (prompt, prompt base, herd_info, optional derived artefacts)."""
    try:
        s = dataset.load_sample(samples_dir(paths) / f"{context.partition_key}.json")
    except dataset.SampleError as e:
        raise Failure(description=str(e)) from None
    df = pd.DataFrame([{"sample_id": s.sample_id, "theme": s.theme, "category": s.category,
                        "prompt_words": len(s.prompt.split()), "sample_json": json.dumps(s.to_json(), sort_keys=True)}])
    sha = sample_version(paths, context.partition_key)
    code = context.assets_def.code_versions_by_key[context.asset_key]
    return Output(df, data_version=content_data_version(sha, code),
                  metadata={"theme": s.theme, "category": s.category, "prompt_words": len(s.prompt.split()),
                            INPUT_SHA_KEY: sha})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def locot2v_derived(context: AssetExecutionContext, locot2v_sample: pd.DataFrame, judge: Judge
                    ) -> Output[pd.DataFrame]:
    """Events, human actions, HERD questions with polarity (supplied values win, else the judge with the appendix C
    prompts, cached by the judge) and the prompt's complexity (C.1)."""
    s = _sample(locot2v_sample)
    d = pipeline.derive(s, judge)
    row = {"sample_id": s.sample_id}
    for name in ("events", "human_actions", "herd_questions"):
        row[f"{name}_json"] = pipeline.as_json(d[name])
        row[f"{name}_source"] = d[f"{name}_source"]
        row[f"{name}_reason"] = d[f"{name}_reason"]
    row["complexity_json"] = pipeline.as_json(d["complexity"])
    row["complexity_reason"] = d["complexity_reason"]
    meta = {f"{n}": (f"{len(d[n])} ({d[n + '_source']})" if d[n] is not None else f"None: {d[n + '_reason']}")
            for n in ("events", "human_actions", "herd_questions")}
    return Output(pd.DataFrame([row]), metadata=meta)


# code version 6: the face-identity addition (issue 23) joins the visual rows; 7: AQ's aesthetic_v25 resizes as
# SigLIP's processor does (PIL bicubic, antialiased; issue 24)
@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="8", pool="gpu", op_tags=GPU_OP_TAGS)
def locot2v_visual(context: AssetExecutionContext, paths: BenchPaths, locot2v_sample: pd.DataFrame,
                   locot2v_derived: pd.DataFrame, models: ModelRegistry, device: Device,
                   judge: Judge) -> Output[pd.DataFrame]:
    """Static quality (AQ, TQ) and the ten model-based temporal sub-dimensions of one video, from one decode:
    flows over the <= 8 fps analysis frames are shared by dynamic degree, motion smoothness, warping error and
    flickering; transitions by PySceneDetect on the same frames; event-level consistency on the prompt's events."""
    generator, sample_id = P.split(context.partition_key)
    src = _video(paths, generator, sample_id)
    slot = {n: models.slot_or_reason(n, device) for n in SLOTS if n not in ("long_text_embedder",)}
    bound, _ = rrub_value(paths)
    derived = _derived(locot2v_derived)
    stats: dict = {}
    try:
        values = visual_values(src, slot, derived["events"], derived["events_reason"], bound, stats)
    except DecodeError as e:
        raise Failure(f"generator {generator!r}, sample {sample_id}: {e}") from None
    df = label_substitutes(_rows(values, generator, sample_id, src.sha256, _protocol(models, judge, paths)), METRICS,
                           models)
    # the video's decode health from this pass (frames FFmpeg concealed or lost): the board's n_decode_warnings
    for col, v in src.decode_record().items():
        df[col] = v
    st = src.stats
    return Output(df, metadata={**_meta(df, generator), "frames": int(src.n_frames), "fps": float(src.fps),
                                INPUT_SHA_KEY: video_version(paths, context.partition_key),
                                "frames_converted": int(st.frames_converted), "frames_needed": int(st.frames_needed),
                                "peak_chunk_frames": int(st.peak_chunk_frames),
                                "gathered_frames": int(st.gathered_frames),
                                # flow fields computed in the pass, by use (each pair's flow once: stream.py)
                                "flows": MetadataValue.json(stats.get("flows", {}))})


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="3")
def locot2v_judged(context: AssetExecutionContext, paths: BenchPaths, locot2v_sample: pd.DataFrame,
                   locot2v_derived: pd.DataFrame, models: ModelRegistry, device: Device,
                   judge: Judge) -> Output[pd.DataFrame]:
    """The judge's sub-dimensions of one video: OA and EA (description and its events), human action, content
    clarity (R rounds) and HERD; judge-derived parts are None with the reason when the judge is off."""
    generator, sample_id = P.split(context.partition_key)
    s = _sample(locot2v_sample)
    derived = _derived(locot2v_derived)
    src = _video(paths, generator, sample_id)
    frames: list = []
    if judge.available()[0]:  # the judge sees 16 frames; with it off nothing is decoded
        req = src.take(pipeline.judge_indices(src.n_frames), name="judge frames")
        _run(src, generator, sample_id)
        frames = list(req.frames)
    text, text_why = models.slot_or_reason("long_text_embedder", device)
    values, extra = pipeline.alignment(judge, frames, s.prompt_base, derived["events"], derived["events_reason"],
                                       text, text_why)
    values.append(pipeline.human_action(judge, frames, derived["human_actions"], derived["human_actions_reason"]))
    values += pipeline.content_clarity(judge, frames)
    values += pipeline.herd(judge, frames, derived["herd_questions"], derived["herd_questions_reason"])
    df = label_substitutes(_rows(values, generator, sample_id, src.sha256, _protocol(models, judge, paths)), METRICS,
                           models)
    df = mark_judged(df, judge_label(judge.model))   # every value here is the judge's answer
    meta = _meta(df, generator)
    if extra.get("description"):
        meta["description"] = MetadataValue.text(extra["description"])
    return Output(df, metadata=meta)


def decode_warnings(store: Store, tables: set, generators) -> dict:
    """generator -> videos read with decode warnings (``locot2v_visual``'s decode-pass columns); None (unknown) for
    a generator with a video scored before they were recorded, or with no visual partition."""
    cols = ["generator", "item", "corrupt_frames", "lost_frames", "decode_warnings"]
    files = (store.query("SELECT * FROM locot2v_visual WHERE level = 'item'").reindex(columns=cols)
             .drop_duplicates(["generator", "item"]) if "locot2v_visual" in tables else None)
    return {g: None for g in generators} | decode_warning_counts(files)


# code version 4: n_decode_warnings from locot2v_visual's decode-pass columns
# code version 3: the board carries inter_event_subject_face_identity (an addition) beside the 26 sub-dimensions
@asset(group_name=GROUP, code_version="4", deps=[locot2v_visual, locot2v_judged, locot2v_sample],
       automation_condition=board_condition("locot2v_visual", "locot2v_judged"))
def locot2v_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths, models: ModelRegistry,
                        judge: Judge) -> Output[pd.DataFrame]:
    """All 26 sub-dimensions, the five dimensions and overall (None unless every part has a value) and their partial
    means per generator, in %, in the common board schema (board.py)."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    parts = [t for t in ("locot2v_visual", "locot2v_judged") if t in tables]
    if not parts:
        raise ValueError("no LoCoT2V score partition has been materialised yet")
    cols = ["generator", "item", "metric_id", "value", "n_eval", "n_failed", "n_skipped", "reason", "protocol",
            "substitute"]
    # SELECT * then reindex: partitions written before the substitute column have none (NULL, not an error)
    records = pd.concat([store.query(f"SELECT * FROM {t} WHERE level = 'item'").reindex(columns=cols)
                         for t in parts], ignore_index=True)
    ids = sorted(set(dataset.discover_samples(samples_dir(paths)))
                 | (set(store.query("SELECT sample_id FROM locot2v_sample")["sample_id"])
                    if "locot2v_sample" in tables else set()))
    generators = sorted(records["generator"].dropna().unique())
    # the samples each generator delivered a video for: the rest count as its failures on every sub-dimension
    delivered = {g: {s for s in ids if (paths.generator_dir(g) / f"{s}.mp4").is_file()} for g in generators}
    table = board.leaderboard_table(records, ids, generators, delivered, decode_warnings(store, tables, generators))
    man = manifest(models, judge, paths)
    return Output(table, metadata={"table": MetadataValue.md(board_markdown(table, {"slice": board.SLICE})),
                                   "dimensions": MetadataValue.md(board.headline_markdown(table)),
                                   "manifest": MetadataValue.json(man), "protocol_digest": protocol_digest(man)}
                  | report_metadata(store, BENCH))


ASSETS = [locot2v_sample, locot2v_derived, locot2v_visual, locot2v_judged, locot2v_leaderboard]
ITEM_ASSETS = ["locot2v_sample", "locot2v_derived"]
GENERATOR_ASSETS = ["locot2v_visual", "locot2v_judged"]
AGGREGATE_ASSETS = ["locot2v_leaderboard"]
LEADERBOARD = "locot2v_leaderboard"
