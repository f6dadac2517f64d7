"""EntityBench generator outputs: the per-shot file index of one generator's episode, and the shots it opens.
Pure (no Dagster): the outputs and metric assets call these."""

import json
from typing import Any

import pandas as pd

from bench_assets.core.media import DecodeError, VideoSource
from bench_assets.entitybench import dataset
from bench_assets.entitybench.frames import SHOTS


def output_rows(ep: dataset.Episode, folder, generator: str) -> list[dict]:
    """One row per scheduled shot: its file, probed without decoding (frames, fps, size, sha256), or one clear
    error naming the generator, episode, shot and problem (missing, a folder, a still image, too small ...)."""
    rows = []
    for sf in dataset.index_shot_files(ep, folder, generator):
        row = {"generator": generator, "episode_id": ep.episode_id, "shot": sf.index, "path": sf.path,
               "sha256": None, "n_frames": None, "fps": None, "width": None, "height": None, "error": sf.error,
               "decode_warnings": ""}
        if sf.path:
            try:  # probe only (no decode): a still image, a folder, a tiny or empty video is rejected here
                src = VideoSource(sf.path)
                # what reading the file found (cut short, reading stopped, a wrong rate header): the board counts
                # such shots per generator (n_decode_warnings) and says so
                row.update(sha256=src.sha256, n_frames=src.n_frames, fps=src.fps,
                           width=src.size[0], height=src.size[1], decode_warnings="; ".join(src.warnings)[:1000])
            except DecodeError as e:
                row["error"] = f"generator {generator!r}, episode {ep.episode_id!r}, shot {sf.index}: {e}"
        rows.append(row)
    return rows


def shot_paths(outputs: pd.DataFrame) -> tuple[dict[int, str], dict[int, str]]:
    paths, errors = {}, {}
    for r in outputs.itertuples():
        if isinstance(r.error, str) and r.error:
            errors[int(r.shot)] = r.error
        elif isinstance(r.path, str):
            paths[int(r.shot)] = r.path
        else:
            errors[int(r.shot)] = "shot missing"
    return paths, errors


def episode_and_clips(outputs: pd.DataFrame, episode_df: pd.DataFrame):
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
