"""NarrativeTrack's questions over EntityBench's generated episodes: a bridge between two benchmarks, so it lives
above the benchmark folders (bench_assets/bridges/, assembled by benchmarks.py), and neither folder imports the other.

QA over generated multi-shot videos (a platform extension): the ground truth comes from an EntityBench episode's
script (its entity schedule), not from detection. The same CRP questions are asked about each EntityBench
generator's video of the episode (its shots concatenated), and the report says, per generator, how often the
generated video lets an answerer recover the script's entity facts.

Entity records from the script: a character's segments are the shots it is scheduled in (time unit: one shot),
its action the shot's action sentence as it concerns the character, its outfit the costume part of its registry
description (constant: scripts do not change outfits, so no OC question), its scene the shot's location."""

import re
from collections import Counter

import numpy as np
import pandas as pd
from dagster import AssetExecutionContext, Failure, MetadataValue, Output, asset

from bench_assets.core.automation import board_condition
from bench_assets.core.generators import discover_generators
from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.entitybench import dataset as entitybench_dataset
from bench_assets.entitybench.wiring import P as ENTITYBENCH
from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import dataset
from bench_assets.narrativetrack.answering import answer_frame, answer_rows
from bench_assets.narrativetrack import metrics
from bench_assets.narrativetrack import pipeline
from bench_assets.narrativetrack import qa
from bench_assets.narrativetrack import scoring
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from bench_resources.store import Store

GROUP = "narrativetrack_episodes"
_COSTUME_STOP = re.compile(r",| standing| with | pointing| holding| behind")


def outfit_of(description: str) -> str:
    """The costume part of a character description: after ' in ', up to the first comma or clause."""
    d = description.strip()
    m = re.search(r"\bin (an? |the )?(.*)$", d)
    part = (m.group(1) or "") + m.group(2) if m else d
    part = _COSTUME_STOP.split(part, maxsplit=1)[0].strip()
    return part or d


def _ing(verb: str) -> str:
    verb = verb.lower()
    irregular = {"is": "being", "sits": "sitting", "runs": "running", "gets": "getting", "puts": "putting"}
    if verb in irregular:
        return irregular[verb]
    stem = verb[:-1] if verb.endswith("s") and not verb.endswith("ss") else verb
    if stem.endswith("e") and not stem.endswith("ee"):
        stem = stem[:-1]
    return stem + "ing"


def action_of(shot: entitybench_dataset.Shot, reg: dict, cid: str) -> str:
    """The character's action in the shot, as an -ing phrase from the shot's action sentence."""
    names = {e: reg[e].name for e in shot.entities}
    text = shot.action.strip().rstrip(".")
    loc = [names[e] for e in shot.entities if reg[e].type == "location"]
    for name in loc:
        text = re.sub(rf"\s*\b(at|in|on)\s+{re.escape(name)}\b", "", text)
    text = re.split(r",\s*next to\b", text)[0].strip()
    me = names[cid]
    if text.startswith(me + " "):
        rest = text[len(me) + 1:].split(" ", 1)
        return (_ing(rest[0]) + (" " + rest[1] if len(rest) > 1 else "")).strip()
    m = re.match(r"^(.+?) (talks|speaks|argues|walks|dances|fights) with " + re.escape(me) + r"\b", text)
    if m:
        return f"{_ing(m.group(2))} with {m.group(1)}"
    return f"appearing as the shot shows: {text}"


def script_entities(ep: entitybench_dataset.Episode) -> list[dict]:
    """Entity records of the characters from the schedule (segments = scheduled shots, in shot units)."""
    reg = ep.registry
    n = len(ep.shots)
    out = []
    for e in ep.entities:
        if e.type != "character":
            continue
        shots = [s for s in ep.shots if e.id in s.entities]
        if not shots:
            continue
        segs = []
        for s in shots:
            loc = next((reg[x].name for x in s.entities if reg[x].type == "location"), "an unnamed place")
            segs.append({"start": float(s.index - 1), "end": float(s.index), "action": action_of(s, reg, e.id),
                         "outfit": outfit_of(e.description), "scene": loc, "shot": s.index})
        runs = pipeline.presence_runs([s["start"] for s in segs], gap=1.0, step=1.0)
        tt = pipeline.track_type(runs, float(n), edge=0.5)
        others = [x for x in ep.entities if x.type == "character" and x.id != e.id]
        out.append({"entity_id": e.id, "name": e.name, "track_type": tt, "segments": segs, "runs": runs,
                    "duration": float(n), "edge": 0.5,  # time in shots
                    "flags": {"similar_looking_existence": False, "other_entities": [o.name for o in others]}})
    return out


def episode_pool(paths: BenchPaths, episode_id: str) -> list[dict]:
    """Synthetic distractors: the characters of the other episodes of the dataset (cross-clip)."""
    root = paths.benchmark_dir("entitybench") / "episodes"
    pool = []
    for eid in entitybench_dataset.discover_episodes(root):
        if eid == episode_id:
            continue
        try:
            ep = entitybench_dataset.load_episode(root / f"{eid}.json")
        except entitybench_dataset.EpisodeError:
            continue
        for ent in script_entities(ep):
            for s in ent["segments"]:
                pool.append({"clip": eid, "entity": ent["entity_id"], "action": s["action"], "outfit": s["outfit"],
                             "scene": s["scene"], "style": "script"})
    return pool


@asset(partitions_def=ENTITYBENCH.items, group_name=GROUP, code_version="1")
def narrativetrack_episode_qa(context: AssetExecutionContext, paths: BenchPaths) -> Output[pd.DataFrame]:
    """NarrativeTrack questions whose answers come from an EntityBench episode's script (no detection)."""
    eid = context.partition_key
    try:
        ep = entitybench_dataset.load_episode(paths.benchmark_dir("entitybench") / "episodes" / f"{eid}.json")
    except entitybench_dataset.EpisodeError as e:
        raise Failure(description=str(e)) from None
    ents = script_entities(ep)
    raw = qa.generate(eid, ents, episode_pool(paths, eid), constants.QA_SEED, "script")
    kept, dropped = qa.apply_filters(raw)
    kept = qa.balance(kept, constants.QA_SEED, eid)
    df = pd.DataFrame([{**q, "kept": True, "drop_reason": None} for q in kept] + [{**q, "kept": False}
                                                                                   for q in dropped])
    if df.empty:
        raise Failure(f"episode {eid}: the script supports no question (no character with a change or a track type)")
    df["options"] = pd.Series([scoring.dumps_options(o) for o in df["options"]], index=df.index, dtype="string")
    df = df.drop(columns=[c for c in ("group", "filters") if c in df])
    df["episode_id"] = eid
    cells = Counter(zip(df.loc[df["kept"], "dimension"], df.loc[df["kept"], "format"]))
    return Output(df, metadata={"qa": int(df["kept"].sum()), "cells": MetadataValue.json(
        {f"{d}.{f}": n for (d, f), n in sorted(cells.items())}),
        "track_types": MetadataValue.json({e["entity_id"]: e["track_type"] for e in ents})})


def episode_frames(paths: BenchPaths, generator: str, ep: entitybench_dataset.Episode,
                   k: int) -> tuple[list[np.ndarray], list[str]]:
    """k frames sampled uniformly over the generator's shots concatenated in order; problems listed per shot. Each
    shot is probed, then decoded once keeping only its share of the k frames."""
    files = entitybench_dataset.index_shot_files(ep, paths.generator_dir(generator) / ep.episode_id, generator)
    srcs, problems = [], []
    for f in files:
        if f.path is None:
            problems.append(f.error)
            continue
        try:
            srcs.append(VideoSource(f.path))
        except DecodeError as e:
            problems.append(f"shot {f.index}: {e}")
    total = sum(s.n_frames for s in srcs)
    if not total:
        return [], problems
    want = [int(round(i)) for i in np.linspace(0, total - 1, min(k, total))]
    out, start = [], 0
    for s in srcs:
        local = [i - start for i in want if start <= i < start + s.n_frames]
        start += s.n_frames
        if not local:
            continue
        req = s.take(local)
        try:
            s.run()
        except DecodeError as e:
            problems.append(f"{s.path}: {e}")
            continue
        out += list(req.frames)
    return out, problems


@asset(partitions_def=ENTITYBENCH.generator_x_item, group_name=GROUP, code_version="1")
def narrativetrack_episode_answers(context: AssetExecutionContext, paths: BenchPaths,
                                   narrativetrack_episode_qa: pd.DataFrame, judge: Judge) -> Output[pd.DataFrame]:
    """Every NarrativeTrack answerer asked the episode's script questions about this generator's video."""
    generator, eid = ENTITYBENCH.split(context.partition_key)
    try:
        ep = entitybench_dataset.load_episode(paths.benchmark_dir("entitybench") / "episodes" / f"{eid}.json")
    except entitybench_dataset.EpisodeError as e:
        raise Failure(description=str(e)) from None
    gens, _ = discover_generators(paths.generators_dir, constants.BENCH)
    qas = narrativetrack_episode_qa.assign(video_id=eid)
    rows = []
    for g in gens:
        try:
            answerer = dataset.answerer_from_card(g.name, g.card)
        except dataset.DatasetError as e:
            rows += [{"qa_id": r.qa_id, "answerer": g.name, "status": "failed", "reason": str(e)}
                     for r in qas.itertuples()]
            continue
        frames, problems = episode_frames(paths, generator, ep, answerer.frames)
        if not frames:
            rows += [{"qa_id": r.qa_id, "video_id": eid, "dimension": r.dimension, "format": r.format,
                      "direction": r.direction, "track_type": r.track_type, "distractor": r.distractor,
                      "answerer": g.name, "model": answerer.model, "status": "failed",
                      "reason": "; ".join(problems)[:500]} for r in qas[qas["kept"]].itertuples()]
            continue
        for row in answer_rows(judge, answerer, qas, frames):
            if problems and row["status"] == "ok":
                row["reason"] = "some shots missing: " + "; ".join(problems)[:300]
            rows.append(row)
    df = answer_frame(rows)
    df["generator"], df["episode_id"] = generator, eid
    st = Counter(df["status"])
    return Output(df, metadata={"answerers": len(gens), "answered": int(st.get("ok", 0)),
                                "skipped": int(st.get("skipped", 0)), "failed": int(st.get("failed", 0))})


@asset(group_name=GROUP, code_version="1", deps=[narrativetrack_episode_answers, narrativetrack_episode_qa],
       automation_condition=board_condition("narrativetrack_episode_answers"))
def narrativetrack_episode_report(context: AssetExecutionContext, store: Store) -> Output[pd.DataFrame]:
    """Per EntityBench generator x answerer: how often the generated video lets the answerer recover the script's
    entity facts (accuracy on the script's questions, strict and lenient, per cell and overall), beside random."""
    tables = set(store.asset_tables())
    if "narrativetrack_episode_answers" not in tables:
        raise ValueError("no episode answers have been materialised yet")
    ans = store.query("SELECT * FROM narrativetrack_episode_answers")
    qas = store.query("SELECT * FROM narrativetrack_episode_qa WHERE kept")
    rows = []
    for (gen, a), g in ans.groupby(["generator", "answerer"], sort=True):
        for r in metrics.accuracy_table(g):
            rows.append({"generator": gen, "answerer": a, **r})
    for r in metrics.random_baseline(qas):
        rows.append({"generator": "random", "answerer": "random", **r})
    df = pd.DataFrame(rows, columns=["generator", "answerer", "mode", "metric_id", "value", "n_eval", "n_failed",
                                     "n_skipped", "reason", "value_failed_wrong"])
    head = df[(df["metric_id"] == "accuracy.avg") & (df["mode"] != "lenient")]
    return Output(df, metadata={"recovery": MetadataValue.md(head.drop(columns=["metric_id"]).to_markdown(index=False))})


ASSETS = [narrativetrack_episode_qa, narrativetrack_episode_answers, narrativetrack_episode_report]
