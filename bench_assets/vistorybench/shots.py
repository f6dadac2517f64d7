"""What the ViStoryBench assets pass around: the story of a row, each shot image (decoded once per process), the
delivered shots and a story error of an outputs index, the reference vectors. Pure (no Dagster)."""

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from bench_assets.vistorybench import characters, dataset


@lru_cache(maxsize=512)
def _image(path: str, mtime_ns: int) -> np.ndarray:
    return dataset.read_shot_image(path)


def shot_image(path: str) -> np.ndarray:
    """Each shot image is decoded once per process, whichever asset asks first."""
    return _image(path, Path(path).stat().st_mtime_ns)


def story_of(df: pd.DataFrame) -> dataset.Story:
    return dataset.story_from_json(json.loads(df["story_json"].iloc[0]))


def spaces(story: dataset.Story) -> dict[str, str]:
    """character -> its identity space ('face' | 'features'): which encoder, hence which substitute, scored it."""
    return {k: characters.space_of(c.tag) for k, c in story.characters.items()}


def ok_shots(outputs: pd.DataFrame) -> pd.DataFrame:
    return outputs[outputs["status"] == "ok"]


def story_error(outputs: pd.DataFrame) -> Optional[str]:
    err = outputs[outputs["status"] == "story_error"]
    return str(err["error"].iloc[0]) if len(err) else None


def reference_vectors(refs: pd.DataFrame) -> dict[str, np.ndarray]:
    """character -> [k, d] vectors of the references that could be embedded (in the character's space)."""
    out = {}
    for key, g in refs.groupby("character"):
        vecs = [np.asarray(v, np.float32) for v in g.sort_values("ref_index")["embedding"] if v is not None]
        out[str(key)] = np.stack(vecs) if vecs else np.zeros((0, 0), np.float32)
    return out
