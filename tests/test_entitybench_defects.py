"""Issue 13: each defect in the EntityBench wiring, pinned by a test that fails on the old code.

Pure row builders with small hand-built inputs (fast); the measured before -> after numbers are in the
docstrings."""
import json

import numpy as np
import pandas as pd
import pytest

from bench_assets.core.metric_spec import board_frame, detail_of
from bench_assets.entitybench import consistency as CS
from bench_assets.entitybench import board as B
from bench_assets.entitybench import audit as AU
from bench_assets.entitybench import counts as C
from bench_assets.entitybench import dataset as D
from bench_assets.entitybench import judged as JD
from bench_assets.entitybench import metrics as M
from bench_assets.entitybench import pillar1 as PL
from bench_assets.entitybench import wiring as W
from bench_assets.entitybench.metric_specs import METRICS
from bench_resources.judge import JudgeResult

EASY = pd.DataFrame({"item": ["e0001"], "tier": ["easy"]})


def board_of(recs: pd.DataFrame, tiers: pd.DataFrame = EASY) -> pd.DataFrame:
    """The leaderboard asset's board from item records (board.py through the common schema)."""
    return board_frame("entitybench", B.leaderboard_rows(recs, tiers, METRICS), METRICS)


def episode(n_shots=5, entities=(("c1", "character"), ("c2", "character")), schedule=None, actions=None):
    ents = [{"id": i, "type": t, "name": f"Name {i}", "description": f"a {t} {i}"} for i, t in entities]
    shots = [{"index": k, "cut": True, "entities": (schedule or {}).get(k, [i for i, _ in entities]),
              "action": (actions or {}).get(k, "stands")} for k in range(1, n_shots + 1)]
    return D.parse_episode({"episode_id": "e0001", "entities": ents, "shots": shots})


def grounding(rows):
    """rows: (shot, entity_id, entity_type, status)."""
    out = []
    for shot, eid, etype, status in rows:
        present = status in ("present", "weak")
        out.append({"shot": shot, "entity_id": eid, "entity_type": etype, "status": status,
                    "crop_id": f"crop-{eid}-{shot}" if present else None, "frame_index": 0 if present else None,
                    "source_sha256": "x", "ambiguous": False, "reason": None,
                    "x1": 0.0, "y1": 0.0, "x2": 10.0, "y2": 10.0})
    return pd.DataFrame(out)


def load_crop(crop_id):
    """A crop whose pixels depend on its id (so embeddings and judge answers vary per crop)."""
    rng = np.random.default_rng(abs(hash(crop_id)) % (2 ** 32))
    return rng.integers(0, 255, (8, 8, 3), dtype=np.uint8)


def embed(images):
    return np.stack([im.reshape(-1).astype(float)[:16] + 1.0 for im in images])


def ok_judge(answer):
    def ask_many(reqs):
        return [JudgeResult("ok", answer(r), None, "k" * 64, False, "fake", r.prompt_id, r.prompt_version)
                for r in reqs]
    return ask_many


IDENTITY = lambda r: {"same": 1, "sim": 0.9, "face": 8, "hair": 8, "clothing": 8, "build": 8}  # noqa: E731


def item(rows, metric_id):
    return next(r for r in rows if r["level"] == "item" and r["metric_id"] == metric_id)


# ------------------------------------------------------------------------------------------ defect 1

def test_llm_identity_coverage_counts_every_comparison_of_every_scheduled_entity():
    """Generator A: c1 admitted in 2 of 5 shots, c2 in 0. Old: coverage 1/4 (c2 dropped). New: 1/8.
    Generator B (worse: c1 in 1 of 5): old None with zero counts (left the denominator). New: 0 of 8."""
    ep = episode()
    a = grounding([(k, "c1", "character", "present" if k in (1, 3) else "absent") for k in range(1, 6)]
                  + [(k, "c2", "character", "absent") for k in range(1, 6)])
    rows = JD.llm_entity_rows("A", ep, a, {}, embed, None, load_crop, ok_judge(IDENTITY))
    acc = item(rows, "llm_face_accuracy")
    assert (acc["n_eval"], acc["n_skipped"], acc["n_failed"]) == (1, 7, 0)
    assert acc["n_eval"] / (acc["n_eval"] + acc["n_skipped"]) == pytest.approx(1 / 8)
    b = grounding([(k, "c1", "character", "present" if k == 1 else "absent") for k in range(1, 6)]
                  + [(k, "c2", "character", "absent") for k in range(1, 6)])
    rows = JD.llm_entity_rows("B", ep, b, {}, embed, None, load_crop, ok_judge(IDENTITY))
    acc = item(rows, "llm_face_accuracy")
    assert acc["value"] is None and (acc["n_eval"], acc["n_skipped"]) == (0, 8)
    # on the board, B ranks below A (0 < 1/8) instead of dropping out of the denominator
    recs = pd.DataFrame([item(JD.llm_entity_rows(g, ep, gr, {}, embed, None, load_crop, ok_judge(IDENTITY)),
                              "llm_face_accuracy") | {"generator": g, "protocol": "p"} for g, gr in (("A", a), ("B", b))])
    board = board_of(recs)
    v = board[board.slice == "all"].set_index("generator")
    # the ranking property is the paper text's Eq. 23-25's (the addition aggregation_eq23, detail eq23_value); the
    # headline is the authors' episode mean (issue 36): A's one episode value, its coverage 1/8 beside it
    eq = detail_of(board[board.slice == "all"]).set_index(v.index)["eq23_value"]
    assert eq["A"] == pytest.approx(1 / 8) and v.loc["B", "coverage"] == 0.0
    assert v.loc["A", "value"] == 1.0 and v.loc["A", "coverage"] == pytest.approx(1 / 8)
    assert pd.isna(v.loc["B", "value"])


def test_llm_identity_evaluator_gaps_are_not_the_generators_skips():
    """Grounding 'unavailable' (no COCO class offline) and a judge that is off are the evaluator's."""
    ep = episode(entities=(("c1", "character"),))
    g = grounding([(k, "c1", "character", "present" if k <= 2 else "unavailable") for k in range(1, 6)])
    rows = JD.llm_entity_rows("A", ep, g, {}, embed, None, load_crop, ok_judge(IDENTITY))
    acc = item(rows, "llm_face_accuracy")
    assert (acc["n_eval"], acc["n_skipped"], acc[C.EVAL]) == (1, 0, 3)
    rows = JD.llm_entity_rows("A", ep, g, {}, embed, None, load_crop, ok_judge(IDENTITY), judge_reason="judge off")
    acc = item(rows, "llm_face_accuracy")
    assert (acc["n_eval"], acc["n_skipped"], acc[C.EVAL]) == (0, 0, 4) and "judge off" in acc["reason"]


# ------------------------------------------------------------------------------------------ defect 2

def pan(n=80, h=48, w=64, speed=3):
    """A textured scene panning ``speed`` px per frame."""
    rng = np.random.default_rng(0)
    world = (rng.random((h, w + n * speed + 8, 3)) * 255).astype(np.uint8)
    import cv2
    world = cv2.GaussianBlur(world, (7, 7), 2)
    return np.stack([world[:, i * speed:i * speed + w] for i in range(n)])


class _Flow:
    def flow(self, pairs):
        from bench_resources.models.flow import DisFlow
        return DisFlow().flow(pairs)


def test_pillar1_uses_every_consecutive_native_frame_not_16_samples():
    """80-frame pan: old code scored flicker on 16 evenly sampled frames (each pair 5 frames apart):
    measured .9454 against .9612 on all consecutive frames. New: the all-frames value, whatever the chunk."""
    frames = pan()
    ep = episode(n_shots=1, entities=(("c1", "character"),))
    slots = {"image_embedder": (None, "no embedder"), "flow": (_Flow(), None), "aesthetic": (None, "none"),
             "musiq": (None, "none"), "interpolator": (_Flow(), None)}   # flow midpoints, as offline
    expected = M.temporal_flickering(frames)
    sampled = M.temporal_flickering(frames[[int(round(i)) for i in np.linspace(0, 79, 16)]])
    assert abs(expected - sampled) > 0.01  # the two definitions really differ on this clip
    values = {}
    for chunk in (7, 32, 80):
        rows = PL.pillar1_rows("g", ep, lambda k: PL.ArrayStream(frames, 24.0, chunk=chunk), {}, slots)
        values[chunk] = {r["metric_id"]: r["value"] for r in rows if r["level"] == "item"}
    for chunk in values:
        assert values[chunk]["temporal_flickering"] == pytest.approx(expected, abs=1e-6)
        assert values[chunk]["motion_smoothness"] == pytest.approx(M.motion_smoothness(frames, _Flow().flow), abs=1e-6)
        assert values[chunk]["dynamic_degree"] == pytest.approx(M.dynamic_degree(frames, 24.0, _Flow().flow))
    # missing models are the evaluator's failures, not the generator's skips
    aes = next(r for r in rows if r["level"] == "item" and r["metric_id"] == "aesthetic_quality")
    assert aes["value"] is None and aes[C.EVAL] == 1 and aes["n_skipped"] == 0


def test_subject_consistency_streamed_equals_consecutive_pairs():
    frames = pan(n=23)

    class Emb:
        def embed(self, ims):
            return np.stack([im.mean(axis=(0, 1)) + np.arange(3) for im in ims])

    out = M.stream_pillar1((frames[i:i + 5] for i in range(0, 23, 5)), 24.0, 23, {M.PILLAR1[0]: Emb()})
    assert out["subject_consistency"][0] == pytest.approx(M.subject_consistency(Emb().embed(list(frames))))


# ------------------------------------------------------------------------------------------ defect 3

LOC = lambda r: {"consistency": 8, "all_consistent": True, "outlier_indices": [],  # noqa: E731
                 "layout": 8, "color_mood": 8, "landmarks": 8, "perspective": 8}


class _Clip:
    def __init__(self, seed):
        self.frames = np.random.default_rng(seed).integers(0, 255, (8, 16, 16, 3), dtype=np.uint8)
        self.n_frames, self.sha256 = 8, f"sha{seed}"

    def even(self, k):
        idx = list(range(min(k, 8)))
        return idx, self.frames[idx]

    grounding = even


def test_location_llm_metrics_pass_the_fidelity_gate():
    """l1 in 3 shots, present, fidelity .9 / .2 / .9. Old: the .2 shot was judged and the gate count ignored
    locations. New: one set question over the 2 admitted shots, and the gated-out shot is in _meta_cross_shot_gate."""
    ep = episode(n_shots=3, entities=(("l1", "location"),))
    g = grounding([(k, "l1", "location", "present") for k in (1, 2, 3)])
    clips = {k: _Clip(k) for k in (1, 2, 3)}
    fid = {(1, "l1"): 0.9, (2, "l1"): 0.2, (3, "l1"): 0.9}
    asked = []

    def ask_many(reqs):
        asked.extend(reqs)
        return ok_judge(LOC)(reqs)

    rows = JD.llm_location_rows("g", ep, g, clips, embed, None, ask_many, fidelity=fid)
    assert len(asked) == 1 and len(asked[0].images) == 4   # shots 1 and 3, 2 frames each
    assert item(rows, "llm_scene_accuracy")["n_eval"] == 1
    _, gated = CS.cross_shot_rows("g", ep, g, None, "none", None, clips, fid)
    assert gated == 1
    # two of three gated out: fewer than 2 admitted shots is the generator's skip
    fid[(3, "l1")] = 0.1
    rows = JD.llm_location_rows("g", ep, g, clips, embed, None, ok_judge(LOC), fidelity=fid)
    acc = item(rows, "llm_scene_accuracy")
    assert acc["value"] is None and acc["n_skipped"] == 1


# ------------------------------------------------------------------------------------------ defect 4

def test_gap_decay_one_curve_per_entity_type_and_tier():
    """A character pair at .9 and an object pair at .1 in one bin: old code pooled them into one bin at .5."""
    def pair(etype, v, item="e0001"):
        return {"generator": "g", "item": item, "metric_id": "gap_decay_embedding", "shot": 2, "entity_id": etype,
                "value": v, "detail": json.dumps({"gap_bin": "1-2", "entity_type": etype, "embedder": "X"})}

    emb = pd.DataFrame([pair("character", 0.9), pair("object", 0.1), pair("character", 0.7, "e0002")])
    table = AU.gap_decay_table(emb, None, pd.DataFrame({"item": ["e0001", "e0002"], "tier": ["easy", "hard"]}))
    allt = table[table.tier == "all"].set_index("entity_type")
    assert allt.loc["character", "mean"] == pytest.approx(0.8) and allt.loc["object", "mean"] == pytest.approx(0.1)
    assert set(table.tier) == {"all", "easy", "hard"}
    assert table[(table.tier == "hard")]["mean"].tolist() == [pytest.approx(0.7)]
    assert (table.embedder == "X").all() and set(table.signal) == {"embedding_cosine"}


# ------------------------------------------------------------------------------------------ defect 5

def test_presence_unavailable_is_the_evaluators_and_coverage_is_fixed_at_1():
    """Shot 1 c1 present, shot 2 c1 'unavailable' (evaluator cannot ground). Old board: raw 1.0 x coverage .5
    = .5. New: 1.0, with one evaluator failure beside it; presence is never multiplied by coverage."""
    ep = episode(n_shots=2, entities=(("c1", "character"),))
    g = grounding([(1, "c1", "character", "present"), (2, "c1", "character", "unavailable")])
    rows = CS.presence_rows("g", ep, g)
    rec = item(rows, "intra_character_presence")
    assert (rec["value"], rec["n_eval"], rec["n_skipped"], rec[C.EVAL]) == (1.0, 1, 0, 1)
    # a missing shot is the generator's failure: counted, and even on a fixed-coverage family it is a zero
    # (issue 27: old value 1.0 = the raw mean, so the generator that delivered less tied the one that delivered all)
    g2 = grounding([(1, "c1", "character", "present"), (2, "c1", "character", JD.SHOT_ERROR)])
    rec2 = item(CS.presence_rows("g", ep, g2), "intra_character_presence")
    assert (rec2["n_eval"], rec2["n_failed"]) == (1, 1)
    recs = pd.DataFrame([rec | {"protocol": "p"}, rec2 | {"generator": "h", "protocol": "p"}])
    b = board_of(recs)
    b = b[b.slice == "all"].set_index("generator")
    eq = detail_of(b.reset_index()).set_index(b.index)   # Eq. 23-25: the addition aggregation_eq23 (issue 36)
    assert b.loc["g", "value"] == 1.0 and b.loc["g", C.EVAL] == 1 and eq.loc["g", "eq23_value"] == 1.0
    assert eq.loc["h", "eq23_value"] == 0.5 and eq.loc["h", "eq23_raw_mean"] == 1.0
    assert b.loc["h", "value"] == 1.0   # the headline, the authors' episode mean, does not count the missing shot
    assert b.loc["h", "coverage"] == 0.5 and b.loc["h", "n_failed"] == 1
    assert METRICS["intra_character_presence"].coverage_policy == "reported"


def test_judge_failures_do_not_lower_fidelity_coverage():
    """Old: four HTTP 500s of ten turned intra_face_fidelity 1.0 into .6. New: 1.0 with 4 evaluator failures."""
    ep = episode(n_shots=10, entities=(("c1", "character"),))
    g = grounding([(k, "c1", "character", "present") for k in range(1, 11)])

    def ask_many(reqs):
        return [JudgeResult("failed" if i < 4 else "ok", None if i < 4 else
                            {"overall": 10, "face": 10, "hair": 10, "clothing": 10, "build": 10},
                            "HTTP 500" if i < 4 else None, "k", False, "m", r.prompt_id, "v1")
                for i, r in enumerate(reqs)]

    rows = JD.fidelity_rows("g", ep, g, load_crop, ask_many)
    rec = item(rows, "intra_face_fidelity") | {"protocol": "p"}
    board = board_of(pd.DataFrame([rec]))
    b = board[board.slice == "all"].iloc[0]
    assert b.value == 1.0 and b[C.EVAL] == 4 and "HTTP 500" in b.reason


def test_protocol_digests_name_the_grounding_models_and_thresholds():
    """Old: fidelity's digest was judge + protocol only, so GroundingDINO and the offline detector's crops
    were 'comparable'. New: every grounding-fed family digests the detector, CLIP and every constant."""
    from bench_resources.models import ModelRegistry
    offline = ModelRegistry(profile="offline")
    alt = ModelRegistry(profile="offline", checkpoints={"open_vocab_detector": "yolo_world"})
    assert W.protocol(offline, W.GROUNDING_SLOTS) != W.protocol(alt, W.GROUNDING_SLOTS)
    assert "offline_weak_conf_threshold" in W.CONSTANTS and "fidelity_gate_tau" in W.CONSTANTS


def test_meta_gate_diagnostic_is_not_a_leaderboard_row():
    rec = {"generator": "g", "item": "e0001", "metric_id": "_meta_cross_shot_gate", "value": 0.0, "n_eval": 3,
           "n_failed": 0, "n_skipped": 0, "reason": None, "protocol": "p"}
    other = rec | {"metric_id": "cs_face", "value": 0.9}
    recs = pd.DataFrame([rec, other])
    board = board_of(recs)
    assert "_meta_cross_shot_gate" not in set(board.metric_id)
    assert B.gate_diagnostics(recs).iloc[0].gated_out == 0.0


# ------------------------------------------------------------------------------------------ also

def test_object_interaction_resolves_ids_and_names():
    """The spec's own example names entities by id ('c1 walks ...'); old code matched names only."""
    ep = episode(n_shots=1, entities=(("c1", "character"), ("o1", "object")))
    text, named = JD.resolve_action("c1 picks up o1 and walks", ep.registry, ["c1", "o1"])
    assert named == ["o1"] and "Name c1 (c1)" in text and "Name o1 (o1)" in text
    text, named = JD.resolve_action("Name c1 holds the name o1", ep.registry, ["c1", "o1"])
    assert named == ["o1"]
    assert JD.resolve_action("c1 waves", ep.registry, ["c1", "o1"])[1] == []
    assert JD.resolve_action("c10 waves at o1x", ep.registry, ["c1", "o1"])[1] == []
