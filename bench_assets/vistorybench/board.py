"""ViStoryBench's leaderboard maths (pure: frames in, the common board out; no Dagster, no store).

One row per (generator, metric, slice), slice = the story split ("full": every story of the release, "lite": the
paper's 20). A cell's value is the unweighted mean over the stories that have one; coverage = stories scored /
stories of the slice (the Inception Score, one corpus statistic, counts shot images instead). The counts are
stories, so coverage = n_eval / n_items; each story that has no value is counted once, as the generator's failure
(its outputs are missing or misaligned), the evaluator's (a model or the judge was unavailable), or a skip; the
instance-level counts of the story rows are kept in ``detail.instances``.

The rank (``detail.mean_rank``) is the mean over the eight quality columns (metrics.RANKED) of each generator's
rank among the generators whose card does not say ``rank: false``; those (the copy-paste baseline) are shown with
``baseline`` true and no rank, as the paper greys them out.
"""
from __future__ import annotations

from typing import Any, Iterable, Mapping, Optional

import pandas as pd

from bench_assets.core.metric_spec import board_frame, board_row, comparability, join_substitutes
from bench_assets.vistorybench import metrics
from bench_assets.vistorybench.constants import BENCH
from bench_assets.vistorybench.metric_specs import BOARD_METRICS, METRICS

SLICES = ("full", "lite")
RECORD_COLUMNS = ("generator", "item", "metric_id", "value", "n_eval", "n_failed", "n_skipped",
                  "n_failed_evaluator", "reason", "protocol", "substitute")
INCEPTION = "inception_score"


def _present(v: Any) -> bool:
    return v is not None and v is not pd.NA and not (isinstance(v, float) and pd.isna(v))


def _int(v: Any) -> int:
    return int(v) if _present(v) else 0


def ranked_generators(cards: Mapping[str, Mapping], generators: Iterable[str]) -> set[str]:
    """Generators that take part in the rank: every one whose card does not say ``rank: false``."""
    return {g for g in generators if cards.get(g, {}).get("rank", True) is not False}


def slice_stories(stories: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """slice -> its stories (``story_id``, ``lite``, ``loaded``, ``n_shots``)."""
    return {"full": stories, "lite": stories[stories["lite"].astype(bool)]}


def story_cell(generator: str, metric_id: str, slice_name: str, rows: pd.DataFrame, stories: pd.DataFrame,
               delivered: Optional[set[str]] = None) -> dict[str, Any]:
    """One cell from a generator's story rows of one metric over the slice's stories. ``delivered``: the stories
    the generator has outputs for (default: those it has rows for). A story without a row counts once: against
    the generator when it delivered nothing for it, as a skip when its story.json did not load, as the
    evaluator's when the generator delivered it but this metric was not computed."""
    ids = list(stories["story_id"])
    loaded = dict(zip(stories["story_id"], stories.get("loaded", pd.Series(True, index=stories.index))))
    rows = rows[rows["item"].isin(ids)]
    have = rows[rows["value"].notna()]
    counts = {"n_failed": 0, "n_failed_evaluator": 0, "n_skipped": 0}
    reasons: list[str] = sorted(set(rows.loc[rows["value"].isna(), "reason"].dropna().astype(str)))
    for r in rows[rows["value"].isna()].itertuples():
        if _int(r.n_failed_evaluator) > 0:
            counts["n_failed_evaluator"] += 1
        elif _int(r.n_failed) > 0:
            counts["n_failed"] += 1      # story_error: the generator's outputs are misaligned
        else:
            counts["n_skipped"] += 1     # nothing to score (copy-paste on a multi-reference generator, ...)
    missing = sorted(set(ids) - set(rows["item"]))
    delivered = set(rows["item"]) if delivered is None else delivered
    unloaded = [s for s in missing if not loaded.get(s, True)]
    undelivered = [s for s in missing if loaded.get(s, True) and s not in delivered]
    uncomputed = [s for s in missing if loaded.get(s, True) and s in delivered]
    counts["n_failed"] += len(undelivered)            # no outputs for the story: against the generator
    counts["n_skipped"] += len(unloaded)              # story.json failed validation: nobody's score
    counts["n_failed_evaluator"] += len(uncomputed)   # delivered, not computed yet: never final
    if missing:
        reasons.append(f"stories not evaluated: {missing}")
    value = float(have["value"].mean()) if len(have) else None
    substitute = join_substitutes(have["substitute"] if len(have) else rows["substitute"])
    detail = {"stories": len(ids), "stories_scored": len(have),
              "instances": {c: int(pd.to_numeric(rows[c], errors="coerce").fillna(0).sum())
                            for c in ("n_eval", "n_failed", "n_skipped", "n_failed_evaluator")}}
    for key, part in (("stories_not_delivered", undelivered), ("stories_not_loaded", unloaded),
                      ("stories_not_computed", uncomputed)):
        if part:
            detail[key] = part
    return board_row(generator, metric_id, slice_name, value, raw_mean=value,
                     coverage=len(have) / len(ids) if ids else None, n_items=len(ids), n_eval=len(have),
                     reason="; ".join(reasons)[:800] or None, substitute=substitute, detail=detail, **counts)


def inception_cell(generator: str, slice_name: str, rows: pd.DataFrame, stories: pd.DataFrame) -> dict[str, Any]:
    """The Inception Score of one slice: one value over all shot images; coverage = images read / shots."""
    r = rows[rows["item"] == f"split:{slice_name}"]
    shots = int(pd.to_numeric(stories.get("n_shots", pd.Series(dtype=float)), errors="coerce").fillna(0).sum())
    if not len(r):
        return board_row(generator, INCEPTION, slice_name, None, coverage=0.0 if shots else None, n_items=shots,
                         n_eval=0, reason="inception score not computed", detail={"stories": len(stories)})
    row = r.iloc[0]
    value = float(row["value"]) if _present(row["value"]) else None
    delivered = _int(row["n_eval"]) + _int(row["n_skipped"]) + _int(row["n_failed"])
    n_eval = _int(row["n_eval"]) if value is not None else 0
    n_eval_failed = _int(row.get("n_failed_evaluator")) if value is None else 0
    counts = {"n_failed": max(shots - delivered, 0),           # shots the generator did not deliver
              "n_failed_evaluator": n_eval_failed,
              "n_skipped": delivered - n_eval - n_eval_failed if value is None else 0}
    reason = None if value is None or counts["n_failed"] == 0 else \
        f"{counts['n_failed']} of {shots} shots not delivered"
    if value is None:
        reason = str(row["reason"]) if _present(row["reason"]) else "no value"
    return board_row(generator, INCEPTION, slice_name, value, raw_mean=value,
                     coverage=(n_eval / shots) if shots else None, n_items=shots, n_eval=n_eval, reason=reason,
                     substitute=row.get("substitute") if _present(row.get("substitute")) else None,
                     detail={"stories": len(stories), "images": delivered, "shots": shots}, **counts)


def rank_detail(cells: list[dict], ranked: set[str]) -> dict[tuple[str, str], dict]:
    """(generator, slice) -> mean_rank, ranked_columns, ranked (metrics.mean_rank over the ranked generators)."""
    out = {}
    for slice_name in {c["slice"] for c in cells}:
        values: dict[str, dict[str, Optional[float]]] = {}
        for c in cells:
            if c["slice"] == slice_name:
                values.setdefault(c["generator"], {})[c["metric_id"]] = c["value"]
        ranks = metrics.mean_rank({g: v for g, v in values.items() if g in ranked})
        for g in values:
            r = ranks.get(g, {"mean_rank": None, "ranked_columns": 0})
            out[(g, slice_name)] = {**r, "ranked": g in ranked}
    return out


def leaderboard_rows(records: pd.DataFrame, stories: pd.DataFrame, inception: pd.DataFrame,
                     cards: Mapping[str, Mapping],
                     delivered: Optional[Mapping[str, set[str]]] = None) -> list[dict[str, Any]]:
    """Every (generator, metric, slice) cell. ``records``: the story rows (level 'item') of the score and alignment
    tables (RECORD_COLUMNS); ``stories``: story_id, lite, loaded (story.json validated), n_shots; ``inception``:
    the inception-score table's rows (item 'split:<slice>'); ``cards``: generator -> generator.yaml card;
    ``delivered``: generator -> the stories it has outputs for (default: the stories it has any row for)."""
    records = _with_columns(records)
    inception = _with_columns(inception)
    generators = sorted(set(records["generator"].dropna()) | set(inception["generator"].dropna()))
    ranked = ranked_generators(cards, generators)
    cells = []
    for slice_name, part in slice_stories(stories).items():
        ids = set(part["story_id"])
        protocols = comparability(pd.concat([
            records.loc[records["item"].isin(ids), ["generator", "metric_id", "protocol"]],
            inception.loc[inception["item"] == f"split:{slice_name}", ["generator", "metric_id", "protocol"]]]))
        proto = {(r.generator, r.metric_id): (r.protocol, r.comparable) for r in protocols.itertuples()}
        for g in generators:
            mine = records[records["generator"] == g]
            given = set(delivered.get(g, ())) if delivered is not None else set(mine["item"])
            for mid in BOARD_METRICS:
                if mid == INCEPTION:
                    cell = inception_cell(g, slice_name, inception[inception["generator"] == g], part)
                else:
                    cell = story_cell(g, mid, slice_name, mine[mine["metric_id"] == mid], part, given)
                cell["protocol"], cell["comparable"] = proto.get((g, mid), (None, True))
                cell["baseline"] = g not in ranked
                cells.append(cell)
    ranks = rank_detail(cells, ranked)
    for c in cells:
        c["detail"] = {**c["detail"], **ranks[(c["generator"], c["slice"])]}
    return cells


def leaderboard(records: pd.DataFrame, stories: pd.DataFrame, inception: pd.DataFrame,
                cards: Mapping[str, Mapping], delivered: Optional[Mapping[str, set[str]]] = None) -> pd.DataFrame:
    """The common board (core/metric_spec.BOARD_COLUMNS) of ViStoryBench."""
    return board_frame(BENCH, leaderboard_rows(records, stories, inception, cards, delivered), METRICS)


def _with_columns(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for c in RECORD_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df
