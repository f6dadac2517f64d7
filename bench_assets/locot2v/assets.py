"""LoCoT2V-Bench wiring: partitions (generator x sample), resources, metadata. Math in metrics.py, per-video work in
pipeline.py, prompts in judging.py."""

import json
from typing import Any

import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.deploy import GPU_OP_TAGS
from bench_assets.core.manifest import build_manifest, protocol_digest
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.core.partitions import BenchmarkPartitions
from bench_assets.core.tables import metric_frame
from bench_assets.locot2v import constants as K
from bench_assets.locot2v import dataset as D
from bench_assets.locot2v import metrics as M
from bench_assets.locot2v import pipeline as PL
from bench_assets.locot2v.rrub import RRUB_FILE, load_rrub
from bench_assets.locot2v.stream import DoverClips, TemporalStream
from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

BENCH = K.BENCH
P = BenchmarkPartitions(BENCH)
GROUP = "locot2v"
SLOTS = ("aesthetic_v25", "dover", "flow", "siglip2", "image_embedder", "subject_segmenter", "open_vocab_detector",
         "clip_b32", "long_text_embedder")
CHUNK = 32   # native frames per streamed chunk


def samples_dir(paths: BenchPaths):
    return paths.benchmark_dir(BENCH) / "samples"


def rrub_value(paths: BenchPaths) -> tuple[float, str]:
    return load_rrub(paths.benchmark_dir(BENCH) / RRUB_FILE)


def manifest(models: ModelRegistry, judge: Judge, paths: BenchPaths) -> dict[str, Any]:
    value, source = rrub_value(paths)
    return build_manifest(benchmark=BENCH, protocol=K.PROTOCOL, models=models.manifest(SLOTS),
                          judge=judge.fingerprint(), constants={**K.CONSTANTS, "rrub": value, "rrub_source": source},
                          extra={"profile": models.profile, "cc_sampling": PL.clarity_sampling(judge)[1]})


def _protocol(models: ModelRegistry, judge: Judge, paths: BenchPaths) -> str:
    return protocol_digest(manifest(models, judge, paths))


def _sample(df: pd.DataFrame) -> D.Sample:
    return D.parse_sample(json.loads(df["sample_json"].iloc[0]), "table")


def _video(paths: BenchPaths, generator: str, sample_id: str) -> VideoSource:
    """The output video, probed (nothing decoded yet): one VideoSource = one decode pass."""
    path = paths.generator_dir(generator) / f"{sample_id}.mp4"
    if not path.is_file():
        raise Failure(f"generator {generator!r}, sample {sample_id}: no output video {path}")
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
                  ) -> list[PL.Value]:
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
    aq_idx = M.analysis_indices(n, fps, K.AQ_FPS)
    aq = src.take(aq_idx, name="aesthetic 1 fps") if aesthetic is not None else None
    ev = (src.take(PL.event_frame_indices(n, len(events)), name="event frames")
          if events and emb is not None and det is not None else None)
    ts = TemporalStream(n, fps, (src.size[1], src.size[0]), *slot["flow"], *slot["siglip2"])
    bounds = M.clip_bounds(n, fps)
    dc = DoverClips(dover, bounds) if dover is not None else None

    def on_chunk(idx, frames):
        ts.push(idx, frames)
        if dc is not None:
            dc.push(idx, frames)

    src.chunks(on_chunk, chunk=CHUNK, name="temporal")
    values = _after_pass(src, ts, aq_idx, aq, aesthetic, aesthetic_why, rrub, bounds, dc, dover_why, ev, events,
                         events_why, seg, det, f"{seg_why}; {det_why}", emb, emb_why, slot["clip_b32"][0])
    if stats is not None:
        stats["flows"] = ts.flows_per_pair()
    return values


def _after_pass(src, ts, aq_idx, aq, aesthetic, aesthetic_why, rrub, bounds, dc, dover_why, ev, events, events_why,
                seg, det, locate_why, emb, emb_why, clip_model) -> list[PL.Value]:
    src.run()
    values = [PL.aq_value(aq_idx, list(aq.frames) if aq is not None else [], aesthetic, aesthetic_why, rrub),
              PL.tq_value(bounds, dc.scores if dc is not None else None, dover_why)]
    values += ts.finish()
    frames = dict(zip(ev.indices, ev.frames)) if ev is not None else {}
    values += PL.event_consistency(src.n_frames, ts.cuts, frames, events, events_why, seg, det, locate_why, emb,
                                   emb_why, clip_model)
    return values


def _derived(df: pd.DataFrame) -> dict[str, Any]:
    row = df.iloc[0]
    out = {}
    for name in ("events", "human_actions", "herd_questions"):
        raw = row[f"{name}_json"]
        out[name] = json.loads(raw) if isinstance(raw, str) else None
        out[f"{name}_reason"] = row[f"{name}_reason"] if isinstance(row[f"{name}_reason"], str) else None
    return out


def _rows(values: list[PL.Value], generator: str, sample_id: str, sha: str, protocol: str) -> pd.DataFrame:
    rows = [{"benchmark": BENCH, "generator": generator, "item": sample_id, "level": "item",
             "metric_id": v.metric_id, "value": v.value, "n_eval": v.n_eval, "n_failed": v.n_failed,
             "n_skipped": v.n_skipped, "reason": v.reason, "detail": PL.as_json(v.detail) if v.detail else None,
             "source_sha256": sha, "protocol": protocol} for v in values]
    return metric_frame(rows)


def _meta(values: list[PL.Value]) -> dict:
    return {v.metric_id: (round(v.value, 3) if v.value is not None else f"None: {v.reason}"[:200]) for v in values}


@asset(partitions_def=P.items, group_name=GROUP, code_version="1", kinds={"json"})
def locot2v_sample(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """One validated sample in the canonical format (prompt, prompt base, herd_info, optional derived artefacts)."""
    try:
        s = D.load_sample(samples_dir(paths) / f"{context.partition_key}.json")
    except D.SampleError as e:
        raise Failure(description=str(e)) from None
    df = pd.DataFrame([{"sample_id": s.sample_id, "theme": s.theme, "category": s.category,
                        "prompt_words": len(s.prompt.split()), "sample_json": json.dumps(s.to_json(), sort_keys=True)}])
    return Output(df, metadata={"theme": s.theme, "category": s.category, "prompt_words": len(s.prompt.split())})


@asset(partitions_def=P.items, group_name=GROUP, code_version="1")
def locot2v_derived(context: AssetExecutionContext, locot2v_sample: pd.DataFrame, judge: Judge
                    ) -> Output[pd.DataFrame]:
    """Events, human actions, HERD questions with polarity (supplied values win, else the judge with the appendix C
    prompts, cached by the judge) and the prompt's complexity (C.1)."""
    s = _sample(locot2v_sample)
    d = PL.derive(s, judge)
    row = {"sample_id": s.sample_id}
    for name in ("events", "human_actions", "herd_questions"):
        row[f"{name}_json"] = PL.as_json(d[name])
        row[f"{name}_source"] = d[f"{name}_source"]
        row[f"{name}_reason"] = d[f"{name}_reason"]
    row["complexity_json"] = PL.as_json(d["complexity"])
    row["complexity_reason"] = d["complexity_reason"]
    meta = {f"{n}": (f"{len(d[n])} ({d[n + '_source']})" if d[n] is not None else f"None: {d[n + '_reason']}")
            for n in ("events", "human_actions", "herd_questions")}
    return Output(pd.DataFrame([row]), metadata=meta)


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="3", pool="gpu", op_tags=GPU_OP_TAGS)
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
    df = _rows(values, generator, sample_id, src.sha256, _protocol(models, judge, paths))
    st = src.stats
    return Output(df, metadata={**_meta(values), "frames": int(src.n_frames), "fps": float(src.fps),
                                "frames_converted": int(st.frames_converted), "frames_needed": int(st.frames_needed),
                                "peak_chunk_frames": int(st.peak_chunk_frames),
                                "gathered_frames": int(st.gathered_frames),
                                # flow fields computed in the pass, by use (each pair's flow once: stream.py)
                                "flows": MetadataValue.json(stats.get("flows", {}))})


@asset(partitions_def=P.generator_x_item, group_name=GROUP, code_version="1")
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
        req = src.take(PL.judge_indices(src.n_frames), name="judge frames")
        _run(src, generator, sample_id)
        frames = list(req.frames)
    text, text_why = models.slot_or_reason("long_text_embedder", device)
    values, extra = PL.alignment(judge, frames, s.prompt_base, derived["events"], derived["events_reason"], text,
                                 text_why)
    values.append(PL.human_action(judge, frames, derived["human_actions"], derived["human_actions_reason"]))
    values += PL.content_clarity(judge, frames)
    values += PL.herd(judge, frames, derived["herd_questions"], derived["herd_questions_reason"])
    df = _rows(values, generator, sample_id, src.sha256, _protocol(models, judge, paths))
    meta = _meta(values)
    if extra.get("description"):
        meta["description"] = MetadataValue.text(extra["description"])
    return Output(df, metadata=meta)


def leaderboard_table(records: pd.DataFrame, sample_ids: list[str], generators: list[str]) -> pd.DataFrame:
    """Per generator: each of the 26 sub-dimensions = mean over the samples where it is not None (coverage shown);
    a dimension = unweighted mean of its available sub-dimensions; overall = mean of the five dimensions.

    ``coverage`` is on every row: a sub-dimension's share of samples scored; a dimension's = the mean of its
    sub-dimensions' coverage (a sub-dimension without any value counts 0); overall's = the mean of the five
    dimensions' coverage. So an overall computed from one dimension of five shows coverage <= 0.2 beside it."""
    rows = []
    for g in generators:
        part = records[(records["generator"] == g) & records["item"].isin(sample_ids)]
        subs, sub_cov = {}, {}
        for dim, ids in K.DIMENSIONS.items():
            for mid in ids:
                m = part[part["metric_id"] == mid]
                have = m[m["value"].notna()]
                reasons = sorted(set(m.loc[m["value"].isna(), "reason"].dropna().astype(str)))
                missing = sorted(set(sample_ids) - set(m["item"]))
                if missing:
                    reasons.append(f"samples not evaluated: {missing}")
                value = float(have["value"].astype(float).mean()) if len(have) else None
                subs[mid] = value
                sub_cov[mid] = len(have) / len(sample_ids) if sample_ids else 0.0
                rows.append({"generator": g, "level": "sub_dimension", "dimension": dim, "metric_id": mid,
                             "value": value, "samples": len(sample_ids), "samples_scored": len(have),
                             "coverage": len(have) / len(sample_ids) if sample_ids else None,
                             "n_eval": int(m["n_eval"].fillna(0).sum()), "n_failed": int(m["n_failed"].fillna(0).sum()),
                             "n_skipped": int(m["n_skipped"].fillna(0).sum()),
                             "reason": "; ".join(reasons)[:800] or None,
                             "protocol": ",".join(sorted(set(m["protocol"].dropna().astype(str)))) or None})
        dims = M.dimension_values(subs)
        dim_cov = {}
        for dim, ids in K.DIMENSIONS.items():
            have = [m for m in ids if subs[m] is not None]
            dim_cov[dim] = M.aggregate_coverage([sub_cov[m] for m in ids])
            rows.append({"generator": g, "level": "dimension", "dimension": dim, "metric_id": dim,
                         "value": dims[dim], "samples": len(sample_ids), "samples_scored": None,
                         "coverage": dim_cov[dim], "n_eval": len(have), "n_failed": 0,
                         "n_skipped": len(ids) - len(have),
                         "reason": None if len(have) == len(ids) else
                         f"mean over {len(have)} of {len(ids)} sub-dimensions with a value", "protocol": None})
        have = [d for d in K.DIMENSIONS if dims[d] is not None]
        rows.append({"generator": g, "level": "overall", "dimension": None, "metric_id": "overall",
                     "value": dims["overall"], "samples": len(sample_ids), "samples_scored": None,
                     "coverage": M.aggregate_coverage(list(dim_cov.values())), "n_eval": len(have), "n_failed": 0,
                     "n_skipped": len(K.DIMENSIONS) - len(have),
                     "reason": None if len(have) == len(K.DIMENSIONS) else
                     f"mean over {len(have)} of {len(K.DIMENSIONS)} dimensions with a value", "protocol": None})
    board = pd.DataFrame(rows)
    board["value"] = board["value"].astype("Float64")
    return board


def headline_markdown(board: pd.DataFrame) -> str:
    """Dimensions and overall per generator as 'value (coverage %)' cells: no aggregate without its coverage."""
    head = board[board.level != "sub_dimension"].copy()
    head["cell"] = [("None" if pd.isna(v) else f"{float(v):.2f}") + f" ({100 * float(c):.0f}% covered)"
                    for v, c in zip(head["value"], head["coverage"].fillna(0.0))]
    return head.pivot(index="metric_id", columns="generator", values="cell").to_markdown()


@asset(group_name=GROUP, code_version="1", deps=[locot2v_visual, locot2v_judged, locot2v_sample],
       automation_condition=board_condition("locot2v_visual", "locot2v_judged"))
def locot2v_leaderboard(context: AssetExecutionContext, store: Store, paths: BenchPaths, models: ModelRegistry,
                        judge: Judge) -> Output[pd.DataFrame]:
    """All 26 sub-dimensions, the five dimensions and overall per generator, in % (value or None with reason)."""
    from bench_assets.core.site import report_metadata  # the report site's page for this benchmark
    tables = set(store.asset_tables())
    parts = [t for t in ("locot2v_visual", "locot2v_judged") if t in tables]
    if not parts:
        raise ValueError("no LoCoT2V score partition has been materialised yet")
    cols = "generator, item, metric_id, value, n_eval, n_failed, n_skipped, reason, protocol"
    records = store.query(" UNION ALL ".join(f"SELECT {cols} FROM {t} WHERE level = 'item'" for t in parts))
    ids = sorted(set(D.discover_samples(samples_dir(paths)))
                 | (set(store.query("SELECT sample_id FROM locot2v_sample")["sample_id"])
                    if "locot2v_sample" in tables else set()))
    board = leaderboard_table(records, ids, sorted(records["generator"].unique()))
    man = manifest(models, judge, paths)
    return Output(board, metadata={"table": MetadataValue.md(headline_markdown(board)),
                                   "manifest": MetadataValue.json(man), "protocol_digest": protocol_digest(man)}
                  | report_metadata(store, BENCH))


ASSETS = [locot2v_sample, locot2v_derived, locot2v_visual, locot2v_judged, locot2v_leaderboard]
ITEM_ASSETS = ["locot2v_sample", "locot2v_derived"]
GENERATOR_ASSETS = ["locot2v_visual", "locot2v_judged"]
AGGREGATE_ASSETS = ["locot2v_leaderboard"]
LEADERBOARD = "locot2v_leaderboard"
