"""ViStoryBench's aggregation against golden fixtures from the official code (ViStoryBench/vistorybench):
tests/parity/golden/vistorybench/{inputs,outputs}.json, written by scripts/parity_golden_vistorybench.py at the
commit recorded in outputs.json. The same inputs go through the project's pure functions (scores.py, metrics.py,
alignment.py); values must agree within 1e-4 on the official 0-1 (or 0-4) scale. The official CIDS values are
rounded to 4 decimals, so the bar there is the rounding (5e-5) plus float noise.

Documented difference (the paper's definition kept): the official leaderboard script's prompt-alignment total
(``_compute_pa_avg_from_row``) averages five numbers, the single-character action twice (once as itself, once as
the "character existence" fallback), on the 0-4 scale. The paper (Appendix, prompt adherence) averages the subtasks
and reports x 25 (Table 1's 26.2 for the copy-paste baseline = mean of Table 7's four 0.49 / 2.06 / 0.65 / 0.99
x 25); the project follows the paper. Second documented difference: a story where no character was matched has
copy-paste "null" in the official story result but 0.0 in its story metrics, and that 0.0 enters the official mean
over stories; the project's story value is None and the mean covers the stories that have one (the paper averages
"across all stories equipped with" the data; the project's no-silent-zero rule).

The single-character action follows the official code (the paper is silent on its aggregation): per shot the
rounded mean of the matched characters' scores, per story the rounded mean of the shots, Python's round (half to
even); the fixture runs that block of ``CIDSEvaluator.evaluate`` on per-character judge scores."""
from __future__ import annotations

import json
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

GOLDEN = Path(__file__).parent / "golden" / "vistorybench"
INPUTS = json.loads((GOLDEN / "inputs.json").read_text())
OUT = json.loads((GOLDEN / "outputs.json").read_text())
BAR = 1e-4


def _story(sid: str, plan: dict[str, list[int]]):
    """A duck-typed Story: plan = character -> the shots it is scheduled in (language 'en')."""
    shots = sorted({s for v in plan.values() for s in v})
    shot_objs = [types.SimpleNamespace(index=s, appearing={"en": tuple(c for c, v in plan.items() if s in v)})
                 for s in shots]
    chars = {c: types.SimpleNamespace(tag="non_human") for c in plan}
    return types.SimpleNamespace(story_id=sid, shots=shot_objs, characters=chars,
                                 shot=lambda i: next(x for x in shot_objs if x.index == i),
                                 on_stage=lambda i, lang: next(x for x in shot_objs if x.index == i).appearing[lang])


def _character_rows(sid: str) -> pd.DataFrame:
    from bench_assets.vistorybench.scores import character_rows
    chars = INPUTS["cids"][sid]
    # character k's j-th crop comes from shot j+1; a character with no crop is scheduled in shot 1, never matched
    plan = {k: list(range(1, len(c["crops"]) + 1)) or [1] for k, c in chars.items()}
    refs = pd.DataFrame([{"character": k, "ref_index": i, "embedding": e, "reason": None,
                          "mirror_embedding": c["mirror"] if i == 0 else None}
                         for k, c in chars.items() for i, e in enumerate(c["references"])])
    shots = sorted({s for v in plan.values() for s in v})
    matches = pd.DataFrame(
        [{"kind": "shot", "shot": s, "n_detections": 1, "reason": None, "matched": None, "crop_id": None,
          "source_sha256": None, "box": None, "match_score": None, "features": None} for s in shots]
        + [{"kind": "crop", "shot": j + 1, "n_detections": None, "reason": None, "matched": k,
            "crop_id": f"{k}{j}", "source_sha256": f"sha{j}", "box": "[0, 0, 1, 1]", "match_score": 0.5,
            "features": e} for k, c in chars.items() for j, e in enumerate(c["crops"])])
    return pd.DataFrame(character_rows("g", _story(sid, plan), "en", refs, matches, shots, True))


@pytest.mark.parametrize("sid", sorted(INPUTS["cids"]))
def test_cids_and_copy_paste_per_character_and_story(sid):
    rows = _character_rows(sid)
    ref = OUT["cids"]["stories"][sid]
    ch = rows[rows.level == "character"]
    for mid, key in (("cids_cross", "cross"), ("cids_self", "self")):
        mine = ch[ch.metric_id == mid].set_index("entity_id")["value"] / 100
        assert set(mine.index) == set(ref["cids"])
        for c, v in ref["cids"].items():
            assert abs(mine[c] - v[key]) <= BAR, (sid, mid, c, mine[c], v[key])
        item = rows[(rows.level == "item") & (rows.metric_id == mid)]["value"].iloc[0] / 100
        assert abs(item - ref["metrics"][f"cids_{key}_mean"]) <= BAR, (sid, mid, item)
    cp = rows[(rows.level == "item") & (rows.metric_id == "copy_paste")]["value"].iloc[0]
    if ref["copy-paste-score"] == "null":   # no character matched: official "null", then 0.0 in its story metrics
        assert pd.isna(cp) and ref["metrics"]["copy_paste_score"] == 0.0   # the project: None (no silent zero)
    else:
        assert abs(cp / 100 - ref["copy-paste-score"]) <= BAR, (sid, cp, ref["copy-paste-score"])


def test_across_stories_is_the_mean_of_story_values_not_a_pool_of_characters():
    """The newest official summary (ResultManager._aggregate_story_metrics_mean) averages per-story values, as the
    board's raw mean does; the fixture's stories have 3 and 1 characters, so a pool over characters would differ."""
    story_vals = {sid: _character_rows(sid) for sid in INPUTS["cids"]}
    item = {sid: r[(r.level == "item") & (r.metric_id == "cids_cross")]["value"].iloc[0] / 100
            for sid, r in story_vals.items()}
    official = OUT["cids"]["across_stories"]["cids_cross_mean"]
    assert abs(np.mean(list(item.values())) - official) <= BAR
    pooled = np.mean([v["cross"] for s in OUT["cids"]["stories"].values() for v in s["cids"].values()])
    assert abs(pooled - official) > 100 * BAR   # the fixture can tell the two apart (0.0136)
    # documented difference: the official summary averages the 0.0 of a story with no matched character into
    # copy-paste; the project leaves that story out (None), as the paper averages "across all stories equipped
    # with" the data
    cp = [r[(r.level == "item") & (r.metric_id == "copy_paste")]["value"].iloc[0] for r in story_vals.values()]
    ours = np.mean([v / 100 for v in cp if not pd.isna(v)])
    stories = OUT["cids"]["stories"]
    assert abs(ours - np.mean([s["copy-paste-score"] for s in stories.values() if s["copy-paste-score"] != "null"])) <= BAR
    assert abs(OUT["cids"]["across_stories"]["copy_paste_score"] - ours * (len(cp) - 1) / len(cp)) <= BAR


def test_csd_self_and_cross(monkeypatch):
    from bench_assets.vistorybench import scores
    c = INPUTS["csd"]
    monkeypatch.setattr(scores, "shot_image", lambda p: p)   # the "image" is its fixture name
    plan = {k: [s["index"] for s in c["shots"] if k in s["character_key"]] for k in c["characters"]}
    story = _story("01", plan)
    story.shots = [types.SimpleNamespace(index=s["index"], appearing={"en": tuple(s["character_key"])})
                   for s in c["shots"]]
    story.shot = lambda i: next(x for x in story.shots if x.index == i)
    story.on_stage = lambda i, lang: story.shot(i).appearing[lang]
    refs = pd.DataFrame([{"character": k, "ref_index": 0, "style": c["style"][v[0]]}
                         for k, v in c["characters"].items()])
    shots = pd.DataFrame([{"shot": int(s), "path": p, "sha256": p} for s, p in c["outputs"].items()])
    style = types.SimpleNamespace(embed=lambda imgs: [np.asarray(c["style"][p], np.float32) for p in imgs])
    rows = pd.DataFrame(scores.style_rows("g", story, "en", refs, shots, style, None))
    ref = OUT["csd"]
    self_v = rows[(rows.level == "item") & (rows.metric_id == "csd_self")]["value"].iloc[0] / 100
    assert abs(self_v - ref["self_csd"]) <= BAR
    per_shot = rows[(rows.level == "shot") & (rows.metric_id == "csd_cross")].set_index("shot")["value"] / 100
    assert {str(int(s)) for s in per_shot.index} == set(ref["per_shot"])   # the shot with nobody on stage included
    for s, v in ref["per_shot"].items():
        assert abs(per_shot[int(s)] - v) <= BAR, (s, per_shot[int(s)], v)
    cross = rows[(rows.level == "item") & (rows.metric_id == "csd_cross")]["value"].iloc[0] / 100
    assert abs(cross - ref["cross_csd"]) <= BAR


def test_csd_preprocessing_is_the_officials():
    """The CSD slot's preprocessing (``CsdStyleEncoder``: ``csd_pixels``) = ``CSDEvaluator._preprocess`` and
    ``_encode``: the whole image squashed to 224 x 224 on floats (bicubic, antialiased), CLIP-normalised. Both sides'
    tower is the same average pooling to 16 x 16, compared after L2 normalisation (the scores use cosines). The
    short-side resize and centre crop the slot ran before is asserted to differ."""
    import skimage.data as sd
    import torch
    from bench_resources.models.story import CLIP_MEAN, CLIP_STD, CsdStyleEncoder, _center_crop_resize
    from bench_resources.models.vision import to_tensor
    spec, ref = INPUTS["csd_pixels"], OUT["csd_pixels"]
    noise = np.random.default_rng(spec["noise_seed"]).integers(0, 256, (*spec["noise_shape"], 3), dtype=np.uint8)
    images = [getattr(sd, n)() for n in spec["skimage"]] + [noise]
    pool = ref["pool"]

    class Pool(torch.nn.Module):
        def forward(self, x):
            return torch.nn.functional.adaptive_avg_pool2d(x, pool).flatten(1)

    enc = CsdStyleEncoder(Pool(), torch.eye(3 * pool * pool), "cpu", torch.float32, batch_size=2, size=ref["size"])
    got = enc.embed(images)
    want = np.asarray(ref["pooled"])
    want = want / np.linalg.norm(want, axis=1, keepdims=True)
    diff = float(np.max(np.abs(got - want)))
    old = Pool()(to_tensor([_center_crop_resize(im, 224) for im in images], 224, CLIP_MEAN, CLIP_STD, "cpu",
                           torch.float32)).numpy()
    old = old / np.linalg.norm(old, axis=1, keepdims=True)
    print(f"\nparity CSD preprocessing: max diff {diff:.3g}; short side + centre crop: "
          f"{float(np.max(np.abs(old - want))):.3g}")
    assert diff <= BAR
    assert float(np.max(np.abs(old - want))) > 100 * BAR


def test_aesthetic_story_mean(monkeypatch):
    from bench_assets.vistorybench import scores
    monkeypatch.setattr(scores, "shot_image", lambda p: p)
    got = {}
    for sid, vals in INPUTS["aesthetic"].items():
        shots = pd.DataFrame([{"shot": i + 1, "path": f"{sid}/{i}", "sha256": f"{sid}{i}"} for i in range(len(vals))])
        model = types.SimpleNamespace(score=lambda imgs, v=vals: [v[int(p.split("/")[1])] for p in imgs])
        rows = pd.DataFrame(scores.aesthetic_rows("g", types.SimpleNamespace(story_id=sid), shots, model, None))
        got[sid] = rows[rows.level == "item"]["value"].iloc[0]
        assert abs(got[sid] - OUT["aesthetic"]["stories"][sid]["aesthetic_score"]) <= BAR
    assert abs(np.mean(list(got.values())) - OUT["aesthetic"]["across_stories"]["aesthetic_score"]) <= BAR


def _alignment_rows(sid: str) -> pd.DataFrame:
    from bench_assets.vistorybench.alignment import alignment_rows
    pa = INPUTS["prompt_align"]
    asked, results = [], []
    for shot, dims in pa["judge"][sid].items():
        for aspect, score in dims.items():
            asked.append((aspect, int(shot), None, None))
            results.append(types.SimpleNamespace(status="ok", answer={"score": score}, cache_key="k", model="m"))
    # the single-character action: one question per (shot, matched character), the fixture's judge scores
    for shot, chars in pa["single_character"][sid].items():
        for char, score in chars.items():
            asked.append(("single_character_action", int(shot), char, None))
            results.append(types.SimpleNamespace(status="ok", answer={"score": score}, cache_key="k", model="m"))
    return pd.DataFrame(alignment_rows("g", sid, asked, results))


@pytest.mark.parametrize("sid", sorted(INPUTS["prompt_align"]["single_character"]))
def test_single_character_action_rounds_as_the_official_code(sid):
    """The story value equals the official CIDS evaluator's int(round(mean of int(round(shot means)))); the
    plain mean of the questions (the project's old value) and round-half-up differ on this fixture."""
    from bench_assets.vistorybench.alignment import single_action_value
    official = OUT["cids"]["stories"][sid]["metrics"]["single_character_action"]
    rows = _alignment_rows(sid)
    item = rows[rows.level == "item"].set_index("metric_id")
    assert item.loc["alignment.single_character_action", "value"] == official
    shots = INPUTS["prompt_align"]["single_character"][sid]
    for shot, ref in OUT["cids"]["stories"][sid]["single_character_action_shots"].items():
        assert single_action_value({1: list(shots[shot].values())}) == ref["single_character_action"], shot
    plain = np.mean([v for c in shots.values() for v in c.values()])
    assert abs(plain - official) > 0.1                 # the fixture tells the old plain mean apart
    half_up = np.floor(np.mean([np.floor(np.mean(list(c.values())) + 0.5) for c in shots.values()]) + 0.5)
    assert half_up != official                         # and round-half-up


def test_prompt_alignment_aspects_equal_and_total_is_the_papers():
    ref = OUT["prompt_align"]
    totals = {}
    for sid in INPUTS["prompt_align"]["judge"]:
        rows = _alignment_rows(sid)
        rows = rows[rows.level == "item"].set_index("metric_id")
        for aspect in ("scene", "camera", "character_action"):
            assert abs(rows.loc[f"alignment.{aspect}", "value"] - ref["stories"][sid][aspect]) <= BAR, (sid, aspect)
        totals[sid] = rows.loc["alignment", "value"]
    across = ref["across_stories"]
    four = [across[a] for a in ("scene", "camera", "character_action", "single_character_action")]
    ours = float(np.mean(list(totals.values())))
    # the paper's definition: mean of the four subtasks x 25
    assert abs(ours - 25 * np.mean(four)) <= BAR
    # the documented difference: the official total counts the single-character action twice, 0-4 scale
    assert abs(ref["pa_avg"] - (sum(four) + across["single_character_action"]) / 5) <= BAR
    assert abs(ours / 25 - ref["pa_avg"]) > 0.05


def test_fixture_records_its_commit():
    assert OUT["source"] == "ViStoryBench/vistorybench" and len(OUT["commit"]) == 40
