"""ViStoryBench's leaderboard maths (pure: frames in, the common board out; no Dagster, no store).

One row per (generator, metric, slice), slice = the story split ("full": every story of the release, "lite": the
paper's 20). The paper's value of a cell (``raw_mean``) is the unweighted mean over the stories that have one, each
story scored on the shots the generator delivered: the paper "only considered the average on the data that
successfully generated results" and marks such results, saying it "introduced some discrepancies" (sec. 4.1). So
that delivering less never ranks higher, the ranking ``value`` counts what was not delivered as the generator's
failure with a zero contribution (as EntityBench's Eq. 23 counts a failed instance; the paper has no such rule):
- a shot missing or undecodable: every instance it would have given (``would_read``: the shot for aesthetics and
  CSD self (its pairs), the shot with a scheduled character for CSD cross and OCCM, its judge questions per aspect,
  one single-character question per character on stage) is a 0 in the story's mean; for CIDS (a character's value
  reads all its appearances), every character on stage in it is a 0 in the story's mean over characters;
  alignment = 25 x the mean of the zero-filled aspect means; the Inception Score = IS(delivered) ** coverage,
  each missing image a KL of 0 (see ``inception_value``);
- a story not delivered, or delivered misaligned: a 0 story in the mean over stories.
A story delivered complete keeps its row's value exactly. The copy-paste degree (a diagnostic with no better
direction) keeps value = raw_mean; its counts show the failures all the same.

Counts are the metric's instances (characters, shots, pairs' shots, judge questions), summed over the slice's
stories: ``n_failed`` the generator's (shots missing or undecodable, stories not delivered or misaligned; also a
character whose references could not be embedded, as the score rows count it), ``n_failed_evaluator`` the
evaluator's (a model or the judge unavailable, a story delivered but not computed: never final), ``n_skipped`` the
rest (a story whose story.json did not load counts as one); coverage = n_eval / all of them. ``n_items`` is the
slice's stories; the story-level picture is in ``detail`` (stories_scored, stories_not_delivered, ...,
shots_not_delivered). The Inception Score (one corpus statistic) counts shot images.

The rank (``detail.mean_rank``) is the mean over the eight quality columns (metrics.RANKED) of each generator's
rank among the generators whose card does not say ``rank: false``, on ``value``; those (the copy-paste baseline)
are shown with ``baseline`` true and no rank, as the paper greys them out.

The CIDS cells (the paper's and the good-faces-only additions beside them) carry the slice's count of faces below
the quality floors in ``detail`` (``n_low_quality`` matched crops, ``n_low_quality_references``; issue 23).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional

import pandas as pd

from bench_assets.core.metric_spec import board_frame, board_row, by_choice, comparability, join_substitutes
from bench_assets.vistorybench import dataset, metrics
from bench_assets.vistorybench.constants import BENCH
from bench_assets.vistorybench.metric_specs import BOARD_METRICS, METRICS

SLICES = ("full", "lite")
RECORD_COLUMNS = ("generator", "item", "metric_id", "value", "n_eval", "n_failed", "n_skipped",
                  "n_failed_evaluator", "reason", "protocol", "substitute", "detail")
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


# ----------------------------------------------------------------------------------------- undelivered shots

# metrics whose story value is a mean over per-character values that read every appearance of the character
# (CIDS: all matched crops against the references / against each other): an undelivered shot fails every
# character on stage in it, whatever the other shots gave
CHARACTER_METRICS = ("cids_cross", "cids_self", "cids_cross_good_faces_only", "cids_self_good_faces_only",
                     "copy_paste", "copy_paste_paper")
# identity cells that carry the slice's count of faces below the quality floors (issue 23): the paper's CIDS read
# them, the good-faces-only additions set them aside
FACE_QUALITY_METRICS = ("cids_cross", "cids_self", "cids_cross_good_faces_only", "cids_self_good_faces_only")
FACE_QUALITY_COUNTS = ("n_low_quality", "n_low_quality_references")
# metrics whose story value is a mean over pairs of shots
PAIR_METRICS = ("csd_self",)
ALIGNMENT = "alignment"
ASPECTS = tuple(f"alignment.{a}" for a in metrics.ALIGNMENT_ASPECTS)
_ASPECT_FIELD = {"alignment.scene": "Setting Description", "alignment.camera": "Shot Perspective Design",
                 "alignment.character_action": "Static Shot Description"}
GENERATOR_FAULT = ("missing", "unreadable")       # outputs index statuses that are the generator's (a shot)


@dataclass(frozen=True)
class Delivery:
    """What one generator delivered for one story (from the outputs index): ``missing`` = the shots without a
    decodable image (absent or unreadable); ``story_error``: the outputs were refused as a whole (misaligned)."""
    language: str = "en"
    missing: frozenset = frozenset()
    story_error: Optional[str] = None


def deliveries(shots: Optional[pd.DataFrame]) -> dict[tuple[str, str], Delivery]:
    """(generator, story) -> Delivery, from the outputs index rows (generator, story_id, shot, status, language).
    A story absent here was not delivered at all."""
    out: dict[tuple[str, str], Delivery] = {}
    if shots is None or not len(shots):
        return out
    for (g, sid), part in shots.groupby(["generator", "story_id"]):
        lang = part["language"].dropna() if "language" in part else pd.Series(dtype=object)
        err = part.loc[part["status"] == "story_error", "error"] if "error" in part else pd.Series(dtype=object)
        bad = part[part["status"].isin(GENERATOR_FAULT) & part["shot"].notna()]
        out[(str(g), str(sid))] = Delivery(str(lang.iloc[0]) if len(lang) else "en",
                                           frozenset(int(s) for s in bad["shot"]),
                                           (str(err.iloc[0]) if len(err) else "outputs refused")
                                           if (part["status"] == "story_error").any() else None)
    return out


def _on_stage(story: dataset.Story, index: int, language: str) -> tuple[str, ...]:
    shot = story.shot(index)
    return tuple(shot.appearing[language]) if language in shot.appearing else ()


def lost_characters(story: dataset.Story, language: str, shots: Iterable[int]) -> set[str]:
    """The characters on stage in any of ``shots``: each of their CIDS values would have read those shots."""
    return {c for i in shots for c in _on_stage(story, i, language)}


def would_read(story: dataset.Story, language: str, shots: Iterable[int]) -> dict[str, int]:
    """metric id -> the instances ``shots`` would have given it (protocol 1.3's instances): a shot for aesthetics,
    the Inception Score and CSD self; a shot with a scheduled character for CSD cross and OCCM; a judge question
    per aspect whose text the shot has (single-character action: one per character on stage, the most that can be
    matched); a character for CIDS and copy-paste."""
    wanted = set(shots)
    idx = [s.index for s in story.shots if s.index in wanted]
    on = {i: _on_stage(story, i, language) for i in idx}
    n_on = sum(1 for i in idx if on[i])
    out = {"aesthetics": len(idx), "inception_score": len(idx), "csd_self": len(idx), "csd_cross": n_on,
           "occm": n_on, "alignment.single_character_action": sum(len(v) for v in on.values())}
    for mid, fld in _ASPECT_FIELD.items():
        out[mid] = sum(1 for i in idx if story.shot(i).text.get(fld, {}).get(language))
    out[ALIGNMENT] = sum(out[a] for a in ASPECTS)
    n_chars = len(lost_characters(story, language, idx))
    for mid in CHARACTER_METRICS:
        out[mid] = n_chars
    return out


@dataclass
class StoryPart:
    """One story's share of a cell: its ranking value (None: not counted in the value), the paper's value over
    the delivered shots (``raw``, None: not scored) and its instance counts."""
    value: Optional[float] = None
    raw: Optional[float] = None
    n_eval: int = 0
    n_failed: int = 0
    n_skipped: int = 0
    n_failed_evaluator: int = 0
    n_not_evaluated: int = 0          # of the evaluator's: by choice (judge off, a slot the profile lacks)
    lost: int = 0                     # of n_failed: instances of shots the generator did not deliver
    status: str = "scored"            # scored | not_delivered | story_error | not_loaded | not_computed | no_value


def _row_counts(row) -> tuple[int, int, int]:
    """(generator failures, skips, evaluator failures) of a story row. ``with_evaluator_counts`` puts every lost
    instance of a row whose reason is the evaluator's into n_failed_evaluator."""
    nfe = _int(row.get("n_failed_evaluator"))
    if nfe > 0:
        return 0, 0, nfe
    return _int(row.get("n_failed")), _int(row.get("n_skipped")), 0


def _zero_filled(raw: float, n_eval: int, lost: int) -> float:
    """A mean over n_eval instances with ``lost`` more instances each contributing 0."""
    return raw * n_eval / (n_eval + lost) if n_eval + lost else raw


def story_part(metric_id: str, row: Optional[Mapping], story: Optional[dataset.Story], delivery: Optional[Delivery],
               loaded: bool, delivered: bool, char_rows: Optional[pd.DataFrame] = None,
               aspect_rows: Optional[Mapping[str, Mapping]] = None) -> StoryPart:
    """One story's share of a (generator, metric) cell. The paper's value (``raw``) is the story row's, over the
    shots delivered; the ranking value counts every instance an undelivered shot would have given as the
    generator's failure and a zero contribution (CIDS / copy-paste: every character on stage in it fails). A story
    delivered as a whole with no shot missing keeps its row's value exactly."""
    language = delivery.language if delivery is not None else "en"
    everything = would_read(story, language, [s.index for s in story.shots]) if story is not None else {}
    expected = everything.get(metric_id, 1) if story is not None else 1
    if not loaded:
        return StoryPart(n_skipped=1, status="not_loaded")       # story.json failed validation: nobody's
    if delivery is not None:
        story_error = delivery.story_error is not None
    else:   # no outputs index (hand-made rows): a row the generator failed as a whole, as the asset writes it
        story_error = row is not None and not _present(row.get("value")) and _row_counts(row)[0] > 0
    if not delivered or story_error:
        # nothing (usable) delivered: every instance of the story is the generator's failure, a zero story
        return StoryPart(value=0.0 if expected else None, n_failed=expected, lost=expected,
                         status="story_error" if delivered else "not_delivered")
    if row is None:
        return StoryPart(n_failed_evaluator=expected, status="not_computed")   # delivered, not computed: never final
    missing = delivery.missing if delivery is not None else frozenset()
    lost = would_read(story, language, missing).get(metric_id, 0) if (story is not None and missing) else 0
    fail, skip, nfe = _row_counts(row)
    if not _present(row.get("value")) and not (fail or skip or nfe or _int(row.get("n_eval"))):
        lost = 0            # the metric does not apply to this story (copy-paste of a multi-reference method)
    if not _present(row.get("value")):
        return StoryPart(n_failed=fail + lost, n_skipped=skip, n_failed_evaluator=nfe, lost=lost, status="no_value")
    raw = float(row["value"])
    n_eval = _int(row.get("n_eval"))
    part = StoryPart(value=raw, raw=raw, n_eval=n_eval, n_failed=fail + lost, n_skipped=skip,
                     n_failed_evaluator=nfe, lost=lost)
    if not lost:
        return part
    if metric_id in CHARACTER_METRICS and char_rows is not None and story is not None:
        gone = lost_characters(story, language, missing)
        have = char_rows[char_rows["value"].notna()]
        kept = have[~have["entity_id"].isin(gone)]
        # a lost character moves to the generator's failures from wherever its row counted it (evaluated, failed,
        # skipped or the evaluator's), so each character is counted once
        for r in char_rows[char_rows["value"].isna() & char_rows["entity_id"].isin(gone)].to_dict("records"):
            if nfe > 0:
                nfe -= 1
            elif _int(r.get("n_failed")) > 0 and fail > 0:
                fail -= 1
            elif skip > 0:
                skip -= 1
        part.n_eval = len(kept)
        part.n_failed = fail + len(gone)
        part.n_skipped, part.n_failed_evaluator = skip, nfe
        part.lost = len(gone)
        total = float(pd.to_numeric(kept["value"]).sum())
        part.value = total / (len(kept) + len(gone)) if len(kept) + len(gone) else None
    elif metric_id in PAIR_METRICS:
        n = n_eval + lost                                         # pairs of the shots it should have had
        part.value = raw * (n_eval * (n_eval - 1)) / (n * (n - 1)) if n > 1 else raw
    elif metric_id == ALIGNMENT and aspect_rows is not None and story is not None:
        means = []
        for a in ASPECTS:
            ar = aspect_rows.get(a)
            n_a = _int(ar.get("n_eval")) if ar is not None and _present(ar.get("value")) else 0
            u_a = would_read(story, language, missing).get(a, 0)
            if n_a:
                means.append(_zero_filled(float(ar["value"]), n_a, u_a))
            elif u_a and (ar is None or _int(ar.get("n_failed_evaluator")) == 0):
                means.append(0.0)                                  # every question of the aspect was undelivered
        part.value = float(sum(means) / len(means) * 25.0) if means else None
    else:
        part.value = _zero_filled(raw, n_eval, lost)
    return part


def story_cell(generator: str, metric_id: str, slice_name: str, rows: pd.DataFrame, stories: pd.DataFrame,
               delivered: Optional[set[str]] = None, story_defs: Optional[Mapping[str, dataset.Story]] = None,
               delivery: Optional[Mapping[str, Delivery]] = None, char_rows: Optional[pd.DataFrame] = None,
               aspect_rows: Optional[pd.DataFrame] = None) -> dict[str, Any]:
    """One cell from a generator's story rows of one metric over the slice's stories (see ``story_part``).

    ``value`` (the ranking value) = mean over the stories of their zero-filled values, a story the generator did not
    deliver (or delivered misaligned) counting 0; ``raw_mean`` = mean over the scored stories of the paper's story
    values (shots delivered only, as the paper's "average on the data that successfully generated results"); for a
    diagnostic (direction none) the value is the raw mean. Counts are instances (characters, shots, questions) of
    the metric; a story whose story.json did not load counts as one skipped instance; coverage = n_eval / all of
    them. ``delivered``: the stories the generator has outputs for (default: those it has rows for)."""
    ids = list(stories["story_id"])
    loaded = dict(zip(stories["story_id"], stories.get("loaded", pd.Series(True, index=stories.index))))
    rows = rows[rows["item"].isin(ids)]
    by_story = {str(r["item"]): r for r in rows.to_dict("records")}
    delivered = set(rows["item"]) if delivered is None else delivered
    story_defs = story_defs or {}
    delivery = delivery or {}
    parts: dict[str, StoryPart] = {}
    for sid in ids:
        chars = char_rows[char_rows["item"] == sid] if char_rows is not None else None
        aspects = ({str(r["metric_id"]): r for r in aspect_rows[aspect_rows["item"] == sid].to_dict("records")}
                   if aspect_rows is not None else None)
        d = delivery.get(sid)
        if d is None and delivery:      # not delivered: the generator's language still says what was scheduled
            d = Delivery(language=next(iter(delivery.values())).language)
        parts[sid] = story_part(metric_id, by_story.get(sid), story_defs.get(sid), d, bool(loaded.get(sid, True)),
                                sid in delivered or sid in by_story, chars, aspects)   # a row: it was delivered
        row = by_story.get(sid)
        if row is not None and parts[sid].n_failed_evaluator and by_choice(row.get("reason")):
            # per story, by its own row's reason: judge off / a slot the profile lacks is not evaluated (by choice)
            parts[sid].n_not_evaluated, parts[sid].n_failed_evaluator = parts[sid].n_failed_evaluator, 0
    scored = [p for p in parts.values() if p.raw is not None]
    raw = float(sum(p.raw for p in scored) / len(scored)) if scored else None
    counted = [p.value for p in parts.values() if p.value is not None]
    diagnostic = METRICS[metric_id].direction == "none"
    if diagnostic:
        value = raw
    elif scored:
        value = float(sum(counted) / len(counted)) if counted else None
    else:   # nothing scored: 0 only when every story is the generator's failure (nothing the evaluator lost)
        gen_only = all(p.status in ("not_delivered", "story_error", "not_loaded") for p in parts.values())
        value = 0.0 if counted and gen_only else None
    counts = {k: sum(getattr(p, k) for p in parts.values())
              for k in ("n_eval", "n_failed", "n_skipped", "n_failed_evaluator", "n_not_evaluated")}
    total = sum(counts.values())
    reasons: list[str] = sorted(set(rows.loc[rows["value"].isna(), "reason"].dropna().astype(str)))
    lost = sum(p.lost for p in parts.values())
    shots_missing = {sid: sorted(d.missing) for sid, d in delivery.items() if sid in ids and d.missing}
    if lost:
        reasons.insert(0, f"{lost} instances of shots the generator did not deliver count as failures"
                          + ("" if diagnostic else " (0 in value; raw_mean: delivered shots only)"))
    missing = sorted(set(ids) - set(by_story))
    if missing:
        reasons.append(f"stories not evaluated: {missing}")
    have = rows[rows["value"].notna()]
    substitute = join_substitutes(have["substitute"] if len(have) else rows["substitute"])
    detail: dict[str, Any] = {"stories": len(ids), "stories_scored": len(scored)}
    for key, status in (("stories_not_delivered", "not_delivered"), ("stories_not_loaded", "not_loaded"),
                        ("stories_not_computed", "not_computed"), ("stories_misaligned", "story_error")):
        part = sorted(s for s, p in parts.items() if p.status == status)
        if part:
            detail[key] = part
    if shots_missing:
        detail["shots_not_delivered"] = shots_missing
    if lost:
        detail["instances_not_delivered"] = lost
    if metric_id in FACE_QUALITY_METRICS:
        detail.update(face_quality_counts(rows))
    return board_row(generator, metric_id, slice_name, value, raw_mean=raw,
                     coverage=counts["n_eval"] / total if total else None, n_items=len(ids),
                     n_eval=counts["n_eval"], reason="; ".join(reasons)[:800] or None, substitute=substitute,
                     detail=detail, **{k: v for k, v in counts.items() if k != "n_eval"})


def face_quality_counts(rows: pd.DataFrame) -> dict[str, Optional[int]]:
    """Faces below the quality floors over a cell's story rows (their ``detail``): matched crops
    (``n_low_quality``) and references (``n_low_quality_references``). A story row that read something (a value or
    evaluated instances) without the count (written before it was kept) makes the sum unknown (None), never 0; a
    row that read nothing (a story not delivered) adds nothing."""
    out: dict[str, Optional[int]] = {k: 0 for k in FACE_QUALITY_COUNTS}
    for r in rows.to_dict("records"):
        d = r.get("detail")
        try:
            d = json.loads(d) if isinstance(d, str) and d else {}
        except ValueError:
            d = {}
        read = _present(r.get("value")) or _int(r.get("n_eval")) > 0
        for k in FACE_QUALITY_COUNTS:
            if k in d and d[k] is not None and out[k] is not None:
                out[k] += int(d[k])
            elif k not in d and read:
                out[k] = None
    return out


def inception_value(raw: Optional[float], coverage: Optional[float]) -> Optional[float]:
    """The ranking Inception Score with undelivered shots: IS = exp(mean over images of KL(p(y|x) || p(y))), and an
    image that was not delivered contributes a KL of 0 (the zero contribution), so the value is
    exp(sum over delivered KL / shots) = IS_delivered ** coverage. It never exceeds the IS of the complete set:
    sum_i KL(p_i || q) is smallest at q = the mean of the p_i, so a subset's KL sum under its own marginal is at most
    its sum under the full set's marginal, itself at most the full set's sum (each KL >= 0)."""
    if raw is None or coverage is None:
        return raw
    return float(raw ** coverage) if coverage < 1 else raw


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
        f"{counts['n_failed']} of {shots} shots not delivered (each a KL of 0 in value; raw_mean: delivered only)"
    if value is None:
        reason = str(row["reason"]) if _present(row["reason"]) else "no value"
    coverage = (n_eval / shots) if shots else None
    return board_row(generator, INCEPTION, slice_name, inception_value(value, coverage), raw_mean=value,
                     coverage=coverage, n_items=shots, n_eval=n_eval, reason=reason,
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
                     delivered: Optional[Mapping[str, set[str]]] = None, shots: Optional[pd.DataFrame] = None,
                     story_defs: Optional[Mapping[str, dataset.Story]] = None,
                     characters: Optional[pd.DataFrame] = None) -> list[dict[str, Any]]:
    """Every (generator, metric, slice) cell. ``records``: the story rows (level 'item') of the score and alignment
    tables (RECORD_COLUMNS); ``stories``: story_id, lite, loaded (story.json validated), n_shots; ``inception``:
    the inception-score table's rows (item 'split:<slice>'); ``cards``: generator -> generator.yaml card;
    ``delivered``: generator -> the stories it has outputs for (default: the stories in ``shots``, else those it
    has any row for); ``shots``: the outputs index (generator, story_id, shot, status, language, error);
    ``story_defs``: story_id -> Story (what each shot schedules); ``characters``: the character-level rows of the
    CIDS / copy-paste metrics (RECORD_COLUMNS + entity_id). Without ``shots`` and ``story_defs`` a missing shot
    cannot be seen (only whole stories)."""
    records = _with_columns(records)
    inception = _with_columns(inception)
    characters = _with_columns(characters if characters is not None else pd.DataFrame(columns=["entity_id"]))
    if "entity_id" not in characters.columns:
        characters["entity_id"] = None
    given_by = deliveries(shots)
    if delivered is None and shots is not None:
        delivered = {}
        for g, sid in given_by:
            delivered.setdefault(g, set()).add(sid)
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
            gives = {sid: d for (gen, sid), d in given_by.items() if gen == g}
            chars = characters[characters["generator"] == g]
            aspects = mine[mine["metric_id"].isin(ASPECTS)]
            for mid in BOARD_METRICS:
                if mid == INCEPTION:
                    cell = inception_cell(g, slice_name, inception[inception["generator"] == g], part)
                else:
                    cell = story_cell(g, mid, slice_name, mine[mine["metric_id"] == mid], part, given, story_defs,
                                      gives, chars[chars["metric_id"] == mid] if mid in CHARACTER_METRICS else None,
                                      aspects if mid == ALIGNMENT else None)
                cell["protocol"], cell["comparable"] = proto.get((g, mid), (None, True))
                cell["baseline"] = g not in ranked
                cells.append(cell)
    ranks = rank_detail(cells, ranked)
    for c in cells:
        c["detail"] = {**c["detail"], **ranks[(c["generator"], c["slice"])]}
    return cells


def leaderboard(records: pd.DataFrame, stories: pd.DataFrame, inception: pd.DataFrame,
                cards: Mapping[str, Mapping], delivered: Optional[Mapping[str, set[str]]] = None,
                shots: Optional[pd.DataFrame] = None, story_defs: Optional[Mapping[str, dataset.Story]] = None,
                characters: Optional[pd.DataFrame] = None) -> pd.DataFrame:
    """The common board (core/metric_spec.BOARD_COLUMNS) of ViStoryBench."""
    return board_frame(BENCH, leaderboard_rows(records, stories, inception, cards, delivered, shots, story_defs,
                                               characters), METRICS)


def _with_columns(df: pd.DataFrame) -> pd.DataFrame:
    df = df.copy()
    for c in RECORD_COLUMNS:
        if c not in df.columns:
            df[c] = None
    return df
