"""The judge-backed steps of the pipeline: the identity-verification vote and the QA pairs' LLM filters."""

from collections import defaultdict

import numpy as np

from bench_assets.narrativetrack import constants
from bench_assets.narrativetrack import judging
from bench_assets.narrativetrack import pipeline
from bench_resources.judge import Judge


def verify_identities(judge: Judge, frames, dets, ids, tracklet_ids, faces_df) -> tuple[dict, list[dict]]:
    """Majority vote of the configured judges on face crops against the entity's reference crop; returns
    tracklet -> False for tracklets voted out (and the log)."""
    ok, why = judge.available()
    if not ok:
        return {}, [{"status": "skipped", "reason": f"identity verification needs the judge: {why}"}]
    models = list(constants.VERIFY_MODELS) or [judge.model]
    crop_votes: dict[int, list] = {}
    log = []
    faces = faces_df.set_index("det")
    for ent in sorted({e for e in ids if e is not None}):
        members = [i for i, e in enumerate(ids) if e == ent]
        # the reference: the sharpest, largest crop, found without holding every member's crop
        best = pipeline.canonical_best((i, pipeline.crop(frames[dets[i]["sample"]], dets[i]["box"])) for i in members)
        if best is None:
            continue
        ref, ref_crop = best
        with_face = [i for i in members if faces.loc[i, "face_box"] is not None and i != ref]
        n_pick = min(constants.VERIFY_FACE_CROPS, len(with_face))
        pick = [with_face[j] for j in np.linspace(0, len(with_face) - 1, n_pick).round().astype(int)] \
            if with_face else []
        pick = list(dict.fromkeys(pick))
        if not pick:
            continue
        face_crops = [pipeline.crop(frames[dets[i]["sample"]], faces.loc[i, "face_box"]) for i in pick]
        keep = [(i, c) for i, c in zip(pick, face_crops) if c is not None]
        if not keep:
            continue
        req = judging.verify_request(ref_crop, [c for _, c in keep], f"P{ent + 1}")
        votes = defaultdict(list)
        for m in models:
            res = judging.answerer_judge(judge, m).ask(req)
            log.append({"entity": ent, "model": m, "status": res.status, "reason": res.reason,
                        "cache_key": res.cache_key})
            if res.status != "ok":
                continue
            for (i, _), v in zip(keep, res.answer["verdicts"]):
                votes[i].append(v.get("same_identity"))
        crop_votes.update(votes)
    # tracklet -> False (voted out by the majority of its judged crops) or True (judged and kept)
    return pipeline.tracklet_verdicts(crop_votes, {i: tracklet_ids[i] for i in crop_votes}, len(models)), log


def qa_filters(judge: Judge):
    ok, _ = judge.available()
    if not ok:
        return None, None, None

    def grammar(question):
        res = judge.ask(judging.grammar_request(question["template"], question["question"]))
        if res.status != "ok":
            return None, res.status
        a = res.answer
        fixed = [x for x in (a.get("understandable"), a.get("grammar")) if isinstance(x, str)
                 and x.strip().lower() not in ("yes", "")]
        return (fixed[0] if fixed else None), "ok"

    def similar(o1, o2):
        res = judge.ask(judging.similar_request(o1, o2))
        return (res.answer["answer"] == "yes" if res.status == "ok" else None), res.status

    return grammar, similar, judge.model
