"""ViStoryBench: a shot the generator did not deliver (missing, undecodable) counts against every metric that would
have read it (issue 27, "aggregates that never pretend"). Pure rules on the real story files first, then the board
materialised on the embedded data with the same generator complete and with shots deleted / made unreadable: the
gapped copy never outranks the complete one, shows the failures and a lower coverage, and keeps the paper's mean
over the delivered shots as raw_mean; the complete generators' values are what they were (mean over stories)."""
import math
import shutil

import numpy as np
import pandas as pd
import pytest
from dagster import instance_for_test

from bench_assets.core.metric_spec import detail_of
from bench_assets.vistorybench import board as B
from bench_assets.vistorybench import dataset
from bench_assets.vistorybench import metrics
from bench_assets.vistorybench.metric_specs import METRICS
from bench_resources.judge import Judge
from tests.support.fake_anthropic import FakeAnthropic, tool_answer
from tests.support.vistorybench import DATA, _run, _world

S01 = dataset.load_story(DATA / "vistorybench" / "01")
S08 = dataset.load_story(DATA / "vistorybench" / "08")


# ----------------------------------------------------------------------------------------- the rules (pure)

def test_would_read_counts_what_a_shot_feeds_each_metric():
    w = B.would_read(S08, "en", [2, 3])      # shot 2: Inky; shot 3: Grace, Inky, Whiskers
    assert (w["aesthetics"], w["csd_self"], w["csd_cross"], w["occm"], w["inception_score"]) == (2, 2, 2, 2, 2)
    assert w["alignment.single_character_action"] == 4 and w["alignment.scene"] == 2
    assert w["alignment"] == sum(w[a] for a in B.ASPECTS)
    assert w["cids_cross"] == w["cids_self"] == 3 and B.lost_characters(S08, "en", [2]) == {"Inky"}
    assert B.would_read(S08, "en", []) == {k: 0 for k in w}


def _row(metric_id, value, n_eval, **kw):
    return {"item": "08", "metric_id": metric_id, "value": value, "n_eval": n_eval, "n_failed": 0, "n_skipped": 0,
            "n_failed_evaluator": 0, "reason": None, **kw}


def test_story_part_zero_fills_per_metric_and_leaves_a_complete_story_alone():
    gap = B.Delivery("en", frozenset({2}))
    full = B.Delivery("en")
    # a mean over shots (aesthetics): the missing shot is a 0 among the 6
    p = B.story_part("aesthetics", _row("aesthetics", 6.0, 5), S08, gap, True, True)
    assert (p.raw, p.value, p.n_eval, p.n_failed, p.lost) == (6.0, pytest.approx(5.0), 5, 1, 1)
    same = B.story_part("aesthetics", _row("aesthetics", 6.0, 6), S08, full, True, True)
    assert (same.raw, same.value, same.n_failed) == (6.0, 6.0, 0)
    # CSD self: the pairs of 6 shots, 10 of the 15 delivered
    p = B.story_part("csd_self", _row("csd_self", 60.0, 5), S08, gap, True, True)
    assert p.value == pytest.approx(60.0 * 10 / 15)
    # CIDS: Inky was on stage in shot 2, so Inky fails whatever its other shots gave; Grace and Whiskers stay
    chars = pd.DataFrame([{"item": "08", "entity_id": e, "value": v, "n_failed": 0}
                          for e, v in (("Grace", 80.0), ("Inky", 90.0), ("Whiskers", 70.0))])
    p = B.story_part("cids_self", _row("cids_self", 80.0, 3), S08, gap, True, True, chars)
    assert (p.raw, p.value, p.n_eval, p.n_failed) == (80.0, pytest.approx(50.0), 2, 1)
    # a lost character the evaluator had skipped (no detection on its shots) is counted once, as the generator's
    skipped = chars.assign(value=[80.0, None, 70.0], n_failed_evaluator=[0, 1, 0])
    p = B.story_part("cids_self", _row("cids_self", 75.0, 2, n_skipped=1, n_failed_evaluator=1), S08, gap, True,
                     True, skipped)
    assert (p.value, p.n_eval, p.n_failed, p.n_failed_evaluator) == (pytest.approx(50.0), 2, 1, 0)
    # alignment: 25 x the mean of the zero-filled aspect means; an aspect the judge failed stays out
    aspects = {"alignment.scene": _row("alignment.scene", 4.0, 5),
               "alignment.camera": _row("alignment.camera", None, 0, n_failed=5, n_failed_evaluator=5),
               "alignment.character_action": _row("alignment.character_action", 2.0, 5),
               "alignment.single_character_action": _row("alignment.single_character_action", 3.0, 9)}
    p = B.story_part("alignment", _row("alignment", (4 + 2 + 3) / 3 * 25, 19), S08, gap, True, True,
                     aspect_rows=aspects)
    assert p.value == pytest.approx((4 * 5 / 6 + 2 * 5 / 6 + 3 * 9 / 10) / 3 * 25) and p.raw == 75.0
    # a story not delivered, or delivered misaligned: every instance failed, a 0 story; not delivered != evaluator
    p = B.story_part("occm", None, S08, None, True, False)
    assert (p.value, p.raw, p.n_failed, p.status) == (0.0, None, 6, "not_delivered")
    p = B.story_part("occm", _row("occm", None, 0, n_failed=1), S08, B.Delivery("en", story_error="0-based"),
                     True, True)
    assert (p.value, p.n_failed, p.status) == (0.0, 6, "story_error")
    p = B.story_part("occm", None, S08, full, True, True)
    assert (p.value, p.n_failed_evaluator, p.status) == (None, 6, "not_computed")


def test_inception_value_never_gains_from_fewer_images():
    """IS(delivered) ** coverage (a KL of 0 per undelivered image) is at most the complete set's IS, for any
    subset; the IS of the subset itself is not (dropping the common class raises it)."""
    rng = np.random.default_rng(0)
    gained_raw = 0
    for _ in range(300):
        n = int(rng.integers(3, 12))
        probs = rng.dirichlet(np.full(5, rng.choice([0.1, 1.0, 5.0])), size=n)
        full = metrics.inception_score(probs)
        keep = rng.random(n) < rng.uniform(0.2, 0.9)
        if not keep.any() or keep.all():
            continue
        sub = metrics.inception_score(probs[keep])
        gained_raw += sub > full
        assert B.inception_value(sub, keep.sum() / n) <= full * (1 + 1e-9)
    assert gained_raw > 0, "the subset's own IS must sometimes be higher, or this test shows nothing"
    assert B.inception_value(4.2, 1.0) == 4.2 and B.inception_value(None, 0.5) is None


# ----------------------------------------------------------------------------------------- on the embedded data

GAPS = "vistory_faithful_gaps"
DELETED = {"01": [5], "08": [2]}          # 01 shot 5: Ellen and Whiskers; 08 shot 2: Inky
UNREADABLE = {"08": [4]}                  # Inky alone, replaced by bytes that do not decode


def _gapped_world(tmp_path):
    data = _world(tmp_path, generators=("vistory_faithful",))
    src = data / "generators" / "vistory_faithful"
    dst = data / "generators" / GAPS
    shutil.copytree(src, dst)
    card = (dst / "generator.yaml").read_text().replace("name: vistory_faithful", f"name: {GAPS}")
    (dst / "generator.yaml").write_text(card)
    for sid, shots in DELETED.items():
        for i in shots:
            (dst / sid / f"shot_{i:02d}.png").unlink()
    for sid, shots in UNREADABLE.items():
        for i in shots:
            (dst / sid / f"shot_{i:02d}.png").write_bytes(b"\x89PNG\r\n\x1a\n not an image")
    return data


@pytest.fixture(scope="module")
def gapped(tmp_path_factory, monkeypatch_module):
    """The complete generator and its gapped copy, through the whole pipeline with a judge (a fake one on
    127.0.0.1 that answers 3 to every question), offline models."""
    tmp = tmp_path_factory.mktemp("vsb_gaps")
    data = _gapped_world(tmp)
    with FakeAnthropic(responder=lambda body: tool_answer({"analysis": "ok", "score": 3})) as srv, \
            instance_for_test() as instance:
        monkeypatch_module.setenv("ANTHROPIC_API_KEY", "sk-test")
        judge = Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp / "cache"), backoff_s=0.01)
        stats, resources, errors = _run(instance, data, tmp / "store", judge=judge)
        assert not errors and not stats.failed, stats.failed
        store = resources["store"]
        yield store.query("SELECT * FROM vistorybench_leaderboard"), store


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def test_the_gapped_copy_sees_its_shots_missing_and_unreadable(gapped):
    _, store = gapped
    out = store.query(f"SELECT story_id, shot, status FROM vistorybench_outputs WHERE generator = '{GAPS}' "
                      "AND status != 'ok'")
    assert sorted(zip(out.story_id, out.shot.astype(int), out.status)) == [
        ("01", 5, "missing"), ("08", 2, "missing"), ("08", 4, "unreadable")]


def test_missing_shots_never_outrank_the_complete_generator(gapped):
    board, _ = gapped
    b = board.set_index(["generator", "slice", "metric_id"])
    compared = 0
    for s in ("full", "lite"):
        for spec in METRICS:
            full, gaps = b.loc[("vistory_faithful", s, spec.id)], b.loc[(GAPS, s, spec.id)]
            # every metric would have read the deleted shots: failures shown, coverage lower wherever it had any
            assert gaps["n_failed"] > full["n_failed"], (s, spec.id)
            if full["coverage"] > 0:
                assert gaps["coverage"] < full["coverage"], (s, spec.id)
            if spec.direction == "none" or pd.isna(full["value"]):
                continue
            compared += 1
            assert pd.notna(gaps["value"]) and gaps["value"] < full["value"], (s, spec.id, gaps["value"],
                                                                              full["value"])
            assert "did not deliver" in gaps["reason"] or "not delivered" in gaps["reason"], gaps["reason"]
    # offline: the identity metrics, OCCM, the Inception Score, and (through the judge) alignment and its aspects
    assert compared >= 2 * 9, compared
    d = pd.concat([board, detail_of(board)], axis=1)
    ranks = d.drop_duplicates(["generator", "slice"]).set_index(["generator", "slice"])["mean_rank"]
    for s in ("full", "lite"):
        assert ranks[(GAPS, s)] > ranks[("vistory_faithful", s)]
    cell = d[(d.generator == GAPS) & (d.slice == "full") & (d.metric_id == "occm")].iloc[0]
    assert cell["shots_not_delivered"] == {"01": [5], "08": [2, 4]}


def test_raw_mean_is_the_papers_mean_over_the_delivered_shots(gapped):
    """The judge answers 3 everywhere: the paper's mean over what was delivered stays 3 (75 for the total), the
    ranking value is lower by exactly the zero-filled questions of the undelivered shots."""
    board, store = gapped
    b = board[(board.slice == "full")].set_index(["generator", "metric_id"])
    for mid in ("alignment.scene", "alignment.camera", "alignment.character_action"):
        assert b.loc[(GAPS, mid), "raw_mean"] == pytest.approx(3.0) == b.loc[("vistory_faithful", mid), "value"]
    assert b.loc[(GAPS, "alignment"), "raw_mean"] == pytest.approx(75.0)
    # scene: 6 + 5 + 6 shots, 1 missing in 01 and 2 in 08 (one of them unreadable)
    assert b.loc[(GAPS, "alignment.scene"), "value"] == pytest.approx((3 + 3 * 5 / 6 + 3 * 4 / 6) / 3)
    assert b.loc[(GAPS, "alignment.scene"), "n_failed"] == 3
    # CIDS: in 08 Inky (on stage in both lost shots) is a 0; its two other characters keep their values
    ch = store.query(f"SELECT item, entity_id, value FROM vistorybench_scores WHERE generator = '{GAPS}' "
                     "AND level = 'character' AND metric_id = 'cids_self' AND item = '08'").set_index("entity_id")
    items = store.query(f"SELECT item, value FROM vistorybench_scores WHERE generator = '{GAPS}' AND level = 'item' "
                        "AND metric_id = 'cids_self'").set_index("item")["value"]
    s08 = (ch.loc["Grace", "value"] + ch.loc["Whiskers", "value"]) / 3
    # in 01 Ellen and Whiskers were on stage in the deleted shot 5: Inky alone keeps its value
    ch01 = store.query(f"SELECT entity_id, value FROM vistorybench_scores WHERE generator = '{GAPS}' AND "
                       "level = 'character' AND metric_id = 'cids_self' AND item = '01'").set_index("entity_id")
    s01 = ch01.loc["Inky", "value"] / 3
    assert b.loc[(GAPS, "cids_self"), "value"] == pytest.approx((s01 + float(items["02"]) + s08) / 3)
    assert b.loc[(GAPS, "cids_self"), "raw_mean"] == pytest.approx(float(items.mean()))


def test_complete_generators_keep_their_values(gapped):
    """A generator that delivered every shot: value == raw_mean == the unweighted mean over stories of its stored
    story values (the board before this rule), no generator failure, and the Inception Score as stored."""
    board, store = gapped
    rows = pd.concat([store.query(f"SELECT generator, item, metric_id, value FROM {t} WHERE level = 'item'")
                      for t in ("vistorybench_scores", "vistorybench_alignment")], ignore_index=True)
    inc = store.query("SELECT generator, item, value FROM vistorybench_inception_score")
    mine = board[board.generator == "vistory_faithful"]
    checked = 0
    for r in mine.itertuples():
        ids = [s for s in ("01", "02", "08") if r.slice == "full" or s in dataset.LITE]
        if r.metric_id == "inception_score":
            stored = inc[(inc.generator == r.generator) & (inc["item"] == f"split:{r.slice}")]["value"].iloc[0]
        else:
            v = rows[(rows.generator == r.generator) & (rows.metric_id == r.metric_id) & rows["item"].isin(ids)]
            v = v["value"].dropna()
            stored = float(v.mean()) if len(v) else None
        if stored is None or (isinstance(stored, float) and math.isnan(stored)):
            assert pd.isna(r.value), r
            continue
        checked += 1
        assert r.value == pytest.approx(stored, rel=1e-12) and r.raw_mean == pytest.approx(stored, rel=1e-12), r
        assert r.n_failed == 0 and "did not deliver" not in str(r.reason)
    assert checked >= 20, checked
