"""Stored stage tables to records and back: typed text columns, boxes per entity, the registry's records and the
per-sample facts the measured questions ask about. Pure (DataFrames in, lists and dicts out)."""

import json
from collections import Counter, defaultdict
from typing import Optional

import numpy as np
import pandas as pd

from bench_assets.narrativetrack import stages


def as_strings(df: pd.DataFrame, *cols: str) -> pd.DataFrame:
    """Text columns typed as strings, so a partition where they are all null still unions with the others."""
    for c in cols:
        if c in df:
            df[c] = df[c].astype("string")
    return df


def as_list(v) -> Optional[list]:
    """A stored list (box, embedding) as a Python list, or None where the cell is missing (None, NaN, pd.NA)."""
    return None if v is None or isinstance(v, float) or v is pd.NA else list(v)


def det_records(df: pd.DataFrame) -> list[dict]:
    return [{"sample": int(r.sample), "box": [float(v) for v in r.box], "score": float(r.score)}
            for r in df.sort_values("det").itertuples()]


def entity_boxes(dets_df: pd.DataFrame, ident: pd.DataFrame) -> dict[int, list[dict]]:
    d = dets_df.set_index("det")
    out = defaultdict(list)
    for r in ident.itertuples():
        if pd.notna(r.entity):
            out[int(r.entity)].append({"det": int(r.det), "sample": int(r.sample), "box": [float(v) for v in
                                                                                           d.loc[r.det, "box"]]})
    return out


def judge_failure_metadata(reasons, n: int | None = None) -> dict:
    """Materialization metadata of a judge-using asset: ``evaluator_failures`` (the questions the judge or the
    answerer did not answer, ``n`` where not every one has a reason; core/automation.py re-asks them while the judge
    is live) and the five most common reasons."""
    top = Counter(str(r)[:120] for r in reasons).most_common(5)
    return {"evaluator_failures": len(reasons) if n is None else int(n),
            "evaluator_failure_reasons": "; ".join(f"{k}x {r}" for r, k in top)}


def even_positions(n: int, k: int) -> list[int]:
    if n <= 0:
        return []
    return sorted(set(int(round(x)) for x in np.linspace(0, n - 1, min(k, n))))


def registry_records(reg: pd.DataFrame) -> list[dict]:
    return [{"entity_id": r.entity_id, "track_type": r.track_type, "segments": json.loads(r.segments),
             "flags": json.loads(r.flags), "runs": json.loads(r.runs),
             "duration": float(r.duration) if "duration" in reg and pd.notna(r.duration) else None}
            for r in reg.itertuples()]


def measured_inputs(frames: pd.DataFrame, dets: pd.DataFrame, tracklets: pd.DataFrame, faces: pd.DataFrame,
                    idents: pd.DataFrame) -> tuple[list[dict], list[dict]]:
    """The per-sample facts measured.py asks about: every box with its main-character identity, its face box and
    whether its face was looked at (the faces stage looks at up to FACE_BOXES_PER_TRACK boxes per track)."""
    tr = tracklets.sort_values("det")
    examined = {int(tr["det"].iloc[i]) for i in stages.face_subset([int(t) for t in tr["track_id"]],
                                                                [int(x) for x in tr["sample"]])}
    fb = {int(d): (None if as_list(b) is None else [float(v) for v in b])
          for d, b in zip(faces["det"], faces["face_box"])}
    fe = {int(d): (None if as_list(e) is None else np.asarray(e, float))
          for d, e in zip(faces["det"], faces["face_embedding"])}
    ent = {int(d): (None if pd.isna(e) else int(e)) for d, e in zip(idents["det"], idents["entity"])}
    idc = idents["identity"] if "identity" in idents else idents["entity"]
    ident = {int(d): (None if pd.isna(e) else int(e)) for d, e in zip(idents["det"], idc)}
    rows = [{"sample": int(r.sample), "box": [float(v) for v in r.box], "entity": ent.get(int(r.det)),
             "identity": ident.get(int(r.det)), "face_box": fb.get(int(r.det)), "face_emb": fe.get(int(r.det)),
             "examined": int(r.det) in examined} for r in dets.itertuples()]
    fr = [{"sample": int(r.sample), "t": float(r.t)} for r in frames.itertuples()]
    return fr, rows
