"""ViStoryBench prompt alignment rows: the judge's questions of one story (scene, camera, character action,
single-character action) and its answers as rows, per question, per aspect and overall. Pure (no Dagster)."""
from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING, Optional

import numpy as np
import pandas as pd

from bench_assets.core.records import MetricRecord
from bench_assets.core.tables import instance_row, record_row
from bench_assets.vistorybench import dataset, judging, metrics
from bench_assets.vistorybench.constants import BENCH
from bench_assets.vistorybench.shots import shot_image

if TYPE_CHECKING:  # the annotation only: bench_resources.store is Dagster resource wiring
    from bench_resources.store import Store

ALIGNMENT_SUBSCORES = tuple(f"alignment.{a}" for a in metrics.ALIGNMENT_ASPECTS)  # 0-4, the paper's Table 7 scale


def alignment_requests(story: dataset.Story, language: str, shots: pd.DataFrame, matches: pd.DataFrame, store: Store):
    """(aspect, shot, character, request) for every judge question of one story."""
    out = []
    crops = matches[matches["kind"] == "crop"] if len(matches) else matches
    for r in shots.itertuples():
        shot = story.shot(int(r.shot))
        image = shot_image(r.path)
        for aspect, field in (("scene", "Setting Description"), ("camera", "Shot Perspective Design"),
                              ("character_action", "Static Shot Description")):
            text = shot.text[field].get(language)
            if text:
                out.append((aspect, shot.index, None, judging.shot_request(aspect, text, language, image)))
        action = shot.text["Static Shot Description"].get(language, "")
        for c in crops[(crops["shot"] == shot.index) & crops["matched"].notna()].itertuples():
            name = story.characters[c.matched].names.get(language, c.matched)
            out.append(("single_character_action", shot.index, c.matched,
                        judging.single_character_request(name, action, language, store.get_png(c.crop_id))))
    return out


def single_action_value(scores_by_shot: dict) -> Optional[float]:
    """The story's single-character action as the official code aggregates it (ViStoryBench 514cc31,
    ``CIDSEvaluator.evaluate``; the paper only says each judgement is 0-4): per shot, the mean of its matched
    characters' scores rounded to an int; per story, the mean of those shot values rounded to an int. Python's
    round (half to even), as theirs: shots (2.5, 3, 1.5) -> (2, 3, 2) -> 2. None without an answered question."""
    shots = [int(round(sum(v) / len(v))) for _, v in sorted(scores_by_shot.items()) if len(v)]
    return float(int(round(sum(shots) / len(shots)))) if shots else None


def alignment_rows(generator: str, sid: str, asked: list[tuple], results) -> list[dict]:
    """Per question (0-4), per aspect (mean 0-4, the paper's Table 7 scale; the single-character action rounded
    per shot and per story as the official code, ``single_action_value``) and the story's alignment (mean of the
    aspect values x 25). A question the judge did not answer is n_failed / n_skipped with its reason, never 0
    (the official code scores an unparsed reply 0)."""
    keys = {"benchmark": BENCH, "generator": generator, "item": sid}
    rows, by_aspect, single_by_shot = [], defaultdict(list), defaultdict(list)
    counts = {a: {"failed": 0, "skipped": 0, "reasons": set()} for a in metrics.ALIGNMENT_ASPECTS}
    for (aspect, shot, character, _), res in zip(asked, results):
        detail = {"aspect": aspect, "cache_key": res.cache_key, "answer": res.answer, "model": res.model}
        if res.status == "ok":
            by_aspect[aspect].append(float(res.answer["score"]))
            if aspect == "single_character_action":
                single_by_shot[shot].append(float(res.answer["score"]))
            rows.append(instance_row(f"alignment.{aspect}", float(res.answer["score"]), "question", shot=shot,
                                     entity_id=character, detail=detail, **keys))
        else:
            c = counts[aspect]
            c["failed"] += res.status == "failed"
            c["skipped"] += res.status == "skipped"
            c["reasons"].add(f"judge {res.status}: {res.reason}")
            rows.append(instance_row(f"alignment.{aspect}", None, "question", shot=shot, entity_id=character,
                                     reason=f"judge {res.status}: {res.reason}", detail=detail, **keys)
                        | {"n_failed": int(res.status == "failed"), "n_skipped": int(res.status == "skipped")})
    single = single_action_value(single_by_shot)
    value, missing = metrics.alignment_score({**by_aspect, **({"single_character_action": [single]}
                                                              if single is not None else {})})
    n = sum(len(v) for v in by_aspect.values())
    failed = sum(c["failed"] for c in counts.values())
    skipped = sum(c["skipped"] for c in counts.values())
    why = "; ".join(sorted(set().union(*(c["reasons"] for c in counts.values()))))[:500] or None
    if missing and value is not None:
        why = "; ".join(x for x in (why, f"aspects without an answer: {missing}") if x)
    rows.append(record_row(MetricRecord("alignment", value, n if value is not None else 0, failed, skipped,
                                        why if (why or value is None) else None), **keys))
    for aspect in metrics.ALIGNMENT_ASPECTS:
        v, c = by_aspect.get(aspect), counts[aspect]
        reason = "; ".join(sorted(c["reasons"]))[:500] or (None if v else "no question of this aspect was asked")
        mean = (single if aspect == "single_character_action" else float(np.mean(v))) if v else None
        rows.append(record_row(MetricRecord(f"alignment.{aspect}", mean,
                                            len(v) if v else 0, c["failed"], c["skipped"], reason), **keys))
    return rows


def alignment_unavailable_rows(generator: str, sid: str, asked: list[tuple], why: str) -> list[dict]:
    """The judge cannot be asked (off, no key): every question skipped with the reason, per aspect and overall."""
    keys = {"benchmark": BENCH, "generator": generator, "item": sid}
    per = {a: sum(1 for q in asked if q[0] == a) for a in metrics.ALIGNMENT_ASPECTS}
    return ([record_row(MetricRecord("alignment", None, 0, 0, len(asked), why), **keys)]
            + [record_row(MetricRecord(f"alignment.{a}", None, 0, 0, per[a], why), **keys)
               for a in metrics.ALIGNMENT_ASPECTS])
