"""ViStoryBench's board in the common schema: every id has a MetricSpec and every spec is on the board, every value
computed on a non-paper checkpoint carries its substitute mark (per character space where the encoder depends on
the character), the copy-paste baseline is a baseline and unranked. Pure board maths on hand-made rows first, then
the board materialised on the embedded data (offline profile)."""
import json

import pandas as pd
import pytest

from bench_assets.core.metric_spec import BOARD_COLUMNS, check_board, detail_of, split_substitutes
from bench_assets.vistorybench import board as B
from bench_assets.vistorybench import dataset
from bench_assets.vistorybench import metrics
from bench_assets.vistorybench.characters import space_of
from bench_assets.vistorybench.metric_specs import (LABEL_SOURCE, METRICS, SPACE_DEPENDENT, SPACE_SLOT, label_rows,
                                                    row_slots)
from bench_resources.models.registry import ModelRegistry
from bench_resources.models.specs import SLOTS
from tests.support.vistorybench import DATA, GENERATORS

OFFLINE = ModelRegistry(profile="offline")


def substituted(slots) -> list[str]:
    """The slots among ``slots`` whose offline checkpoint is available and is not the paper's."""
    out = []
    for s in slots:
        st = OFFLINE.status(s)
        if s in SLOTS and st.available and st.checkpoint != SLOTS[s].paper.name:
            out.append(s)
    return out


def named(label, slot: str) -> bool:
    """Whether a substitute label has a 'slot: checkpoint' part for ``slot``."""
    return any(p.startswith(f"{slot}: ") for p in split_substitutes(label))


# ----------------------------------------------------------------------------------------- specs

def test_specs_declare_the_ranked_columns_and_the_copy_paste_diagnostics():
    for m in metrics.RANKED:
        assert METRICS[m].direction == "higher" and METRICS[m].kind == "metric", m
    # copy-paste degree: higher = more copying, no better direction in the paper (no arrow), never ranked
    for m in ("copy_paste", "copy_paste_paper"):
        assert METRICS[m].direction == "none" and METRICS[m].kind == "diagnostic" and m not in metrics.RANKED
    # its only additions: the CIDS values over good-quality faces only (issue 23), never ranked
    additions = {s.id for s in METRICS if s.addition}
    assert additions == {"cids_cross_good_faces_only", "cids_self_good_faces_only"}
    assert not additions & set(metrics.RANKED) and all(METRICS[m].paper_id is None for m in additions)
    for s in METRICS:                                # a slot named in a spec exists
        assert set(s.slots) <= set(SLOTS), (s.id, s.slots)
    assert METRICS["inception_score"].slots == ("inception",) and METRICS["inception_score"].scale is None
    assert METRICS["cids_self"].scale == (0.0, 100.0) and METRICS["alignment.scene"].scale == (0.0, 4.0)


def test_row_slots_follow_the_character_space():
    assert row_slots("cids_cross", "face") == ("character_detector", "face")
    assert row_slots("cids_cross", "features") == ("character_detector", "character_embedder")
    assert row_slots("cids_cross", None) == METRICS["cids_cross"].slots
    assert row_slots("occm", "face") == ("character_detector",)


def test_label_rows_marks_each_character_by_its_encoder_and_each_story_by_its_characters():
    required = substituted(("character_detector", "face", "character_embedder", "inception"))
    assert len(required) == 4, "the offline profile must substitute these four slots for this test to mean anything"
    rows = pd.DataFrame([
        {"item": "01", "level": "character", "metric_id": "cids_cross", "entity_id": "Ellen", "value": 80.0},
        {"item": "01", "level": "character", "metric_id": "cids_cross", "entity_id": "Whiskers", "value": 60.0},
        {"item": "01", "level": "item", "metric_id": "cids_cross", "entity_id": None, "value": 70.0},
        {"item": "08", "level": "character", "metric_id": "cids_cross", "entity_id": "Whiskers", "value": 50.0},
        {"item": "08", "level": "character", "metric_id": "cids_cross", "entity_id": "Grace", "value": None},
        {"item": "08", "level": "item", "metric_id": "cids_cross", "entity_id": None, "value": 50.0},
        {"item": "08", "level": "item", "metric_id": "occm", "entity_id": None, "value": 90.0},
        {"item": "08", "level": "question", "metric_id": "alignment.scene", "entity_id": None, "value": 3.0},
        {"item": "08", "level": "item", "metric_id": "alignment", "entity_id": None, "value": 60.0},
        {"item": "08", "level": "question", "metric_id": "alignment.single_character_action",
         "entity_id": "Grace", "value": 2.0},
    ])
    spaces = {"Ellen": "face", "Grace": "face", "Whiskers": "features"}
    out = label_rows(rows, OFFLINE, spaces)
    lab = {(r.item, r.level, r.metric_id, r.entity_id if isinstance(r.entity_id, str) else None):
           (r.substitute if isinstance(r.substitute, str) else None) for r in out.itertuples()}
    ellen = lab[("01", "character", "cids_cross", "Ellen")]
    whiskers = lab[("01", "character", "cids_cross", "Whiskers")]
    assert named(ellen, "face") and named(ellen, "character_detector") and not named(ellen, "character_embedder")
    assert named(whiskers, "character_embedder") and not named(whiskers, "face")
    # story 01 averaged a face character and a features character; story 08's only value is Whiskers'
    assert all(named(lab[("01", "item", "cids_cross", None)], s)
               for s in ("character_detector", "face", "character_embedder"))
    story08 = lab[("08", "item", "cids_cross", None)]
    assert named(story08, "character_embedder") and not named(story08, "face")
    assert lab[("08", "item", "occm", None)] == f"character_detector: {OFFLINE.status('character_detector').checkpoint}"
    assert lab[("08", "question", "alignment.scene", None)] is None          # the judge only: no model slot
    # alignment's model-dependent part is its single-character aspect: Grace (a face) was asked about
    assert named(lab[("08", "item", "alignment", None)], "face")
    assert not named(lab[("08", "item", "alignment", None)], "character_embedder")


# ----------------------------------------------------------------------------------------- board maths (pure)

def _records(values: dict[str, dict[str, float]], stories=("01", "08"), metric_ids=("cids_cross", "cids_self", "occm")):
    return pd.DataFrame([{"generator": g, "item": s, "metric_id": m, "value": v, "n_eval": 3, "n_failed": 0,
                          "n_skipped": 0, "n_failed_evaluator": 0, "reason": None, "protocol": "p1",
                          "substitute": "character_detector: ssd"}
                         for g, vals in values.items() for s in stories for m in metric_ids
                         for v in [vals.get(m)] if v is not None])


STORIES = pd.DataFrame({"story_id": ["01", "02", "08"], "lite": [False, False, True], "loaded": [True, True, True],
                        "n_shots": [6, 5, 6]})


def test_baseline_is_flagged_and_unranked_and_does_not_move_the_others():
    vals = {"a": {"cids_cross": 50, "cids_self": 60, "occm": 90}, "b": {"cids_cross": 40, "cids_self": 70, "occm": 80},
            "cp": {"cids_cross": 95, "cids_self": 99, "occm": 99}}
    cards = {"cp": {"rank": False}}
    board = B.leaderboard(_records(vals), STORIES, pd.DataFrame(), cards)
    assert list(board.columns) == list(BOARD_COLUMNS)
    d = pd.concat([board, detail_of(board)], axis=1)
    cp = d[d.generator == "cp"]
    assert cp["baseline"].all() and cp["mean_rank"].isna().all() and not cp["ranked"].any()
    others = d[d.generator != "cp"]
    assert not others["baseline"].any() and others["mean_rank"].notna().all()
    full = others[others.slice == "full"].drop_duplicates("generator").set_index("generator")["mean_rank"]
    expected = metrics.mean_rank({g: {m: float(v) for m, v in vals[g].items()} for g in ("a", "b")})
    assert full.to_dict() == {g: r["mean_rank"] for g, r in expected.items()}
    # without the baseline the others' ranks are the same
    alone = B.leaderboard(_records({g: vals[g] for g in ("a", "b")}), STORIES, pd.DataFrame(), {})
    ad = pd.concat([alone, detail_of(alone)], axis=1)
    assert ad[ad.slice == "full"].drop_duplicates("generator").set_index("generator")["mean_rank"].to_dict() \
        == full.to_dict()


def test_coverage_counts_and_reasons_per_story():
    recs = _records({"a": {"cids_cross": 50.0}}, stories=("01",))
    none_row = recs.iloc[0].to_dict() | {"item": "08", "value": None, "n_failed_evaluator": 2, "n_skipped": 2,
                                         "reason": "slot 'face' unavailable"}
    recs = pd.concat([recs, pd.DataFrame([none_row])], ignore_index=True)
    stories = STORIES.assign(loaded=[True, False, True])
    board = B.leaderboard(recs, stories, pd.DataFrame(), {}).set_index(["slice", "metric_id"])
    cell = board.loc[("full", "cids_cross")]
    # counts are instances (01's 3 characters), n_items the slice's stories
    assert (cell["value"], cell["n_items"], cell["n_eval"]) == (50.0, 3, 3)
    assert json.loads(cell["detail"])["stories_scored"] == 1
    # 08: the evaluator's (face slot, its 2 instances); 02: story.json did not load (one skip, nobody's)
    assert (cell["n_failed_evaluator"], cell["n_skipped"], cell["n_failed"]) == (2, 1, 0)
    assert cell["coverage"] == pytest.approx(3 / 6)
    assert "slot 'face' unavailable" in cell["reason"] and "stories not evaluated: ['02']" in cell["reason"]
    assert cell["substitute"] == "character_detector: ssd"
    # a metric with no row for a story the generator delivered: not computed (the evaluator's), never a 0
    occm = board.loc[("full", "occm")]
    assert pd.isna(occm["value"]) and occm["n_failed"] == 0 and occm["n_failed_evaluator"] == 2
    # a story the generator did not deliver counts against it
    missing = B.leaderboard(recs, STORIES, pd.DataFrame(), {}, delivered={"a": {"01"}})
    cell = missing.set_index(["slice", "metric_id"]).loc[("full", "cids_cross")]
    assert (cell["n_failed"], cell["n_failed_evaluator"]) == (1, 2)   # 02 not delivered; 08's None row: evaluator
    assert json.loads(cell["detail"])["stories_not_delivered"] == ["02"]
    # the story not delivered is a 0 in the ranking value; raw_mean is the paper's mean over the scored stories
    assert (cell["value"], cell["raw_mean"]) == (25.0, 50.0)
    lite = board.loc[("lite", "cids_cross")]
    assert pd.isna(lite["value"]) and lite["n_items"] == 1 and lite["coverage"] == 0


def test_inception_cell_counts_shots_not_delivered_and_carries_its_substitute():
    inc = pd.DataFrame([{"generator": "a", "item": f"split:{s}", "metric_id": "inception_score", "value": v,
                         "n_eval": n, "n_failed": 0, "n_skipped": 0, "n_failed_evaluator": 0, "reason": None,
                         "protocol": "p1", "substitute": "inception: effnet"}
                        for s, v, n in (("full", 4.2, 15), ("lite", 3.0, 6))])
    board = B.leaderboard(_records({"a": {"occm": 1.0}}), STORIES, inc, {}).set_index(["slice", "metric_id"])
    full = board.loc[("full", "inception_score")]
    assert (full["raw_mean"], full["n_items"], full["n_eval"], full["n_failed"]) == (4.2, 17, 15, 2)
    # the two shots not delivered: each a KL of 0 in the ranking value, exp(sum KL / 17) = 4.2 ** (15 / 17)
    assert full["value"] == pytest.approx(4.2 ** (15 / 17)) and full["value"] < 4.2
    assert full["coverage"] == pytest.approx(15 / 17) and full["substitute"] == "inception: effnet"
    assert board.loc[("lite", "inception_score"), "coverage"] == 1.0


# ----------------------------------------------------------------------------------------- the materialised board

def unmarked_cells(board: pd.DataFrame, rows: pd.DataFrame, tags: dict[str, dict[str, str]]) -> list[tuple]:
    """Cells with a value whose metric ran on a non-paper checkpoint while the cell's substitute does not name it.
    For a space-dependent metric the encoder slots required are those of the characters whose rows gave a value
    in the cell's stories (``tags``: story -> character -> tag)."""
    missing = []
    lite = dataset.LITE
    for r in board[board["value"].notna()].itertuples():
        spec = METRICS[r.metric_id]
        need = set(substituted(spec.slots))
        if r.metric_id in SPACE_DEPENDENT or r.metric_id in LABEL_SOURCE:
            src = LABEL_SOURCE.get(r.metric_id, r.metric_id)
            mine = rows[(rows.generator == r.generator) & (rows.metric_id == src) & (rows.level != "item")
                        & rows.value.notna() & rows.entity_id.notna()]
            if r.slice == "lite":
                mine = mine[mine.item.isin(lite)]
            used = {SPACE_SLOT[space_of(tags[i][e])] for i, e in zip(mine.item, mine.entity_id)}
            need -= set(SPACE_SLOT.values()) - used
        for slot in sorted(need):
            if not named(r.substitute, slot):
                missing.append((r.generator, r.metric_id, r.slice, slot, r.substitute))
    return missing


@pytest.fixture(scope="module")
def materialised(vistorybench_offline):
    _, resources, _, board, _ = vistorybench_offline
    store = resources["store"]
    rows = pd.concat([store.query(f"SELECT generator, item, level, metric_id, entity_id, value, substitute FROM {t}")
                      for t in ("vistorybench_scores", "vistorybench_alignment")], ignore_index=True)
    tags = {s: {k: c.tag for k, c in dataset.load_story(DATA / "vistorybench" / s).characters.items()}
            for s in set(rows["item"])}
    return board, rows, tags


def test_every_board_id_has_a_spec_and_every_spec_is_on_the_board(materialised):
    board, _, _ = materialised
    assert list(board.columns) == list(BOARD_COLUMNS)
    assert check_board(board, METRICS) == []
    # check_board leaves diagnostics optional; the copy-paste degree is on this board all the same
    assert set(board["metric_id"]) == {s.id for s in METRICS}
    assert set(board["slice"]) == {"full", "lite"} and set(board["generator"]) == set(GENERATORS)
    assert set(board.loc[board["addition"], "metric_id"]) == {"cids_cross_good_faces_only",
                                                              "cids_self_good_faces_only"}


def test_offline_substitutes_are_marked_on_every_cell_that_used_one(materialised):
    board, rows, tags = materialised
    assert board.loc[board.value.notna(), "metric_id"].isin(["cids_cross", "cids_self", "occm", "inception_score",
                                                              "copy_paste"]).sum() > 0
    assert unmarked_cells(board, rows, tags) == []
    # the identity cells of the embedded stories (realistic humans and cartoon characters) name both encoders
    cids = board[(board.metric_id == "cids_self") & board.value.notna()]
    assert len(cids) and all(named(s, "face") and named(s, "character_embedder") and named(s, "character_detector")
                             for s in cids["substitute"])
    assert board.loc[board.metric_id == "inception_score", "substitute"].map(lambda s: named(s, "inception")).all()
    # per row: a cartoon character's value came from the embedder, a realistic human's from the face model
    ch = rows[(rows.level == "character") & (rows.metric_id == "cids_cross") & rows.value.notna()]
    assert len(ch)
    for r in ch.itertuples():
        face = space_of(tags[r.item][r.entity_id]) == "face"
        assert named(r.substitute, "face") == face and named(r.substitute, "character_embedder") == (not face), r


def test_the_substitute_check_fails_when_a_mark_is_missing(materialised):
    board, rows, tags = materialised
    for mid in ("cids_cross", "inception_score", "occm"):
        stripped = board.copy()
        hit = stripped.index[(stripped.metric_id == mid) & stripped.value.notna()][0]
        stripped.loc[hit, "substitute"] = pd.NA
        assert unmarked_cells(stripped, rows, tags), mid
    # a label naming only the detector on an identity cell misses the encoders
    stripped = board.copy()
    hit = stripped.index[(stripped.metric_id == "cids_self") & stripped.value.notna()][0]
    stripped.loc[hit, "substitute"] = f"character_detector: {OFFLINE.status('character_detector').checkpoint}"
    assert {m[3] for m in unmarked_cells(stripped, rows, tags)} == {"face", "character_embedder"}


def test_copy_paste_baseline_is_a_baseline_and_unranked(materialised):
    board, _, _ = materialised
    d = pd.concat([board, detail_of(board)], axis=1)
    cp = d[d.generator == "vistory_copy_paste"]
    assert len(cp) and cp["baseline"].all() and cp["mean_rank"].isna().all() and (cp["ranked_columns"] == 0).all()
    rest = d[d.generator != "vistory_copy_paste"]
    assert not rest["baseline"].any() and rest.loc[rest.slice == "full", "mean_rank"].notna().all()
    # it is still shown with its values, and it scores highest on cross CIDS (it pastes the references)
    full = d[(d.slice == "full") & (d.metric_id == "cids_cross")].set_index("generator")["value"]
    assert full.idxmax() == "vistory_copy_paste"
