"""NarrativeTrack issue-15 fixes, pure parts: the lenient parser and the article "a", both denominators."""
import pandas as pd
import pytest

from bench_assets.narrativetrack import metrics as M
from bench_assets.narrativetrack import scoring as SC


@pytest.mark.parametrize("raw,fmt,want", [
    ("A man first does (c), then (b), then (a).", "ordering", "c, b, a"),
    ("A man does c, then b, then a", "ordering", "c, b, a"),
    ("b then a then c", "ordering", "b, a, c"),
    ("first c, then a, and b last", "ordering", "c, a, b"),
    ("The answer is a man in red", "mc", None),
    ("A woman walks in. Answer: (c)", "mc", "c"),
    ("The answer is B because she returns.", "mc", "b"),
    ("the answer is a", "mc", "a"),
])
def test_lenient_parser_never_reads_the_article_as_option_a(raw, fmt, want):
    assert SC.lenient_parse(raw, fmt) == want


def test_both_denominators_with_n_failed():
    df = pd.DataFrame({"dimension": ["AC"] * 5, "format": ["binary"] * 5, "direction": ["start_to_later"] * 5,
                       "track_type": ["reappear"] * 5, "distractor": ["none"] * 5,
                       "status": ["ok", "ok", "ok", "failed", "skipped"], "strict": [True, True, False, None, None],
                       "lenient": [True, True, True, None, None], "reason": [None, None, None, "HTTP 500", "off"]})
    rows = {(r["mode"], r["metric_id"]): r for r in M.accuracy_table(df)}
    avg = rows[("strict", "accuracy.avg")]
    assert avg["value"] == pytest.approx(200 / 3) and avg["value_failed_wrong"] == pytest.approx(50.0)
    assert (avg["n_eval"], avg["n_failed"], avg["n_skipped"]) == (3, 1, 1)
    assert rows[("lenient", "accuracy.avg")]["value_failed_wrong"] == pytest.approx(75.0)
    none = M.accuracy_table(df.assign(status="skipped"))[0]
    assert none["value"] is None and none["value_failed_wrong"] is None


# ------------------------------------------------------------------------------------- states and gold answers
import json  # noqa: E402

from bench_assets.narrativetrack import calibration as CAL  # noqa: E402
from bench_assets.narrativetrack import qa as Q  # noqa: E402
from bench_assets.narrativetrack import states as ST  # noqa: E402

GREY_BLUE = [0, 0, .55, 0, 0, 0, 0, 0, 0, .45, 0, 0]     # colour shares (states.COLOURS order)
BLUE_GREY = [0, 0, .45, 0, 0, 0, 0, 0, 0, .55, 0, 0]
RED = [0, 0, .1, .9, 0, 0, 0, 0, 0, 0, 0, 0]
GREEN = [0, 0, .1, 0, 0, 0, 0, .9, 0, 0, 0, 0]
YELLOW = [0, 0, .1, 0, 0, 0, .9, 0, 0, 0, 0, 0]
SCENE = [0, 0, .3, 0, 0, 0, 0, .7, 0, 0, 0, 0]
STILL, RIGHT, LEFT = [0.0, 0.0], [0.5, 0.0], [-0.5, 0.0]


def seg(action, outfit, scene, m_action, m_outfit, m_scene=SCENE, source="offline heuristic", start=0.0):
    return {"start": start, "end": start + 2, "action": action, "outfit": outfit, "scene": scene, "source": source,
            "measures": {"action": m_action, "outfit": m_outfit, "scene": m_scene}}


def test_word_order_and_measured_noise_are_no_change():
    a = seg("staying in place", "grey and blue clothes", "a place with a green and grey background", STILL, GREY_BLUE)
    b = seg("staying in place", "blue and grey clothes", "a place with a green and grey background", STILL, BLUE_GREY)
    assert ST.relation(a, b, "outfit") == "same"          # the fake outfit change
    assert ST.relation({"outfit": "grey and blue clothes"}, {"outfit": "blue and grey clothes"}, "outfit") == "same"
    c = seg("walking to the right", "red clothes", "x", RIGHT, RED)
    assert ST.relation(a, c, "outfit") == "change" and ST.relation(a, c, "action") == "change"
    # half-way between two outfits: neither the same nor a change, so the attribute asks no change question
    mid = seg("staying in place", "grey and red clothes", "x", STILL, [0, 0, .5, .35, 0, 0, 0, 0, 0, .15, 0, 0])
    assert ST.relation(a, mid, "outfit") == "unsure" and ST.attribute_states([a, mid], "outfit") is None
    # a slow drift near the walking threshold is not a confident action change
    drift = seg("walking to the right", "grey and blue clothes", "x", [0.05, 0.0], GREY_BLUE)
    assert ST.relation(a, drift, "action") == "unsure"


def _entity(segs, eid="P1", tt="reappear"):
    return {"entity_id": eid, "track_type": tt, "segments": segs, "flags": {}}


def test_failed_attribute_call_is_never_ground_truth():
    """A judge failure filled by the heuristic: its segment is left out of the change lists, so no AC/OC/SC
    question rests on "a grey suit" -> "grey and black clothes"."""
    j = "judge:m"
    segs = [{"start": 0, "end": 2, "action": "talking on a phone", "outfit": "a grey suit", "scene": "an office",
             "source": j},
            seg("staying in place", "grey and black clothes", "a place with a grey background", STILL, GREY_BLUE,
                start=4),
            {"start": 8, "end": 10, "action": "talking on a phone", "outfit": "a grey suit", "scene": "an office",
             "source": j}]
    qas = Q.generate("v", [_entity(segs)], [], style="free_text")
    assert not [q for q in qas if q["dimension"] in ("AC", "OC", "SC")], qas
    assert all(json.loads(q["attribute_sources"])["anchor"] == {"action": j, "outfit": j, "scene": j} for q in qas)
    assert ST.change_texts([s for s in segs if ST.usable(s, "free_text")], "outfit", "free_text") == ["a grey suit"]


def test_ordering_only_over_states_in_one_block_each_and_flags_honoured():
    mk = lambda o, m, t: seg("staying in place", o, "a place", STILL, m, start=t)  # noqa: E731
    # outfits red, green, red, yellow: red recurs, so the only single-block states are green and yellow: no ordering
    recurring = [mk("red clothes", RED, 0), mk("green clothes", GREEN, 3), mk("red clothes", RED, 6),
                 mk("yellow clothes", YELLOW, 9)]
    qas = Q.generate("v", [_entity(recurring)], [], style="heuristic")
    assert not [q for q in qas if q["format"] == "ordering"]
    clean = [mk("red clothes", RED, 0), mk("green clothes", GREEN, 3), mk("yellow clothes", YELLOW, 6)]
    qas = Q.generate("v", [_entity(clean)], [], style="heuristic")
    orders = [q for q in qas if q["dimension"] == "OC" and q["format"] == "ordering"]
    assert orders and all(q["options"] == ["red clothes", "green clothes", "yellow clothes"] for q in orders)
    vetoed = dict(_entity(clean), flags={"over_three_outfit_changes": False, "significant_outfit_transition": False})
    assert not [q for q in Q.generate("v", [vetoed], [], style="heuristic") if q["dimension"] == "OC"]


def test_anchor_must_single_the_person_out():
    """Two people who look alike in every measured attribute: no question describes one of them by attributes the
    other shares."""
    a = [seg("staying in place", "red clothes", "a place", STILL, RED, start=0),
         seg("staying in place", "green clothes", "a place", STILL, GREEN, start=5)]
    b = [seg("staying in place", "red clothes", "a place", STILL, RED, start=0)]
    qas = Q.generate("v", [_entity(a), _entity(b, "P2", "disappear")], [], style="heuristic")
    assert not [q for q in qas if q["entity_id"] == "P1" and q["direction"] == "start_to_later"]
    assert not [q for q in qas if q["entity_id"] == "P2"]


def test_face_calibration_file_recomputes():
    doc = CAL.load()
    assert doc is not None, "bench_assets/narrativetrack/face_calibration.json is missing"
    again = CAL.recompute(doc)
    assert again["threshold"] == doc["threshold"] and again["false_merges"] == 0
    # fitted on calibration sources only, measured on validation ones (issue 23; tests/test_heldout_split.py)
    assert {v["kind"] for v in doc["held_out"]["sources"].values()} == {"real", "animated"}
    assert CAL.choose_threshold([0.9, 0.8, 0.3], [0.1, 0.5])["threshold"] == pytest.approx(0.65)


# Held out since issue 23: the dialogue is a validation source and the threshold is fitted without it; until issue 37
# a strict xfail recorded that the real-face threshold (.4154) lies below the animated man-vs-woman cosine of
# cluster means. Issue 37 replaced it by what holds now: the dialogue's faces are classified out of the real domain
# (core/face_domain.json, fitted on calibration faces), and outside it there is no threshold, only the reason.
def test_face_calibration_gives_the_dialogue_no_threshold_and_says_why():
    import numpy as np
    from bench_assets.core import face_calibration as FC
    doc = CAL.load()
    groups = [g for g in doc["held_out"]["groups"] if g["source"] == "Megamind.avi" and g["person"] in ("man", "woman")]
    mean = {p: np.mean([g["emb"] for g in groups if g["person"] == p], axis=0) for p in ("man", "woman")}
    cos = float(mean["man"] @ mean["woman"] / np.linalg.norm(mean["man"]) / np.linalg.norm(mean["woman"]))
    assert cos >= doc["threshold"]            # the real-face threshold would merge them (the issue-23 result)
    # the dialogue's single faces (stored with MBench's per-face calibration: the classifier reads single faces)
    from pathlib import Path
    per_face = json.loads((Path(CAL.__file__).parents[1] / "mbench" / "identity_calibration.json").read_text())
    single = [g["emb"] for g in per_face["held_out"]["groups"] if g["source"] == "Megamind.avi"]
    dom = CAL.identity_domain(single, per_face["model"])
    assert dom["domain"] in ("drawn", "uncertain") and dom["face_merge"] is None
    assert dom["unknown_reason"], dom


def test_reappear_existence_needs_the_beginning_and_the_end():
    """Every reappear template says "... at the beginning ... reappear at the end": a person who comes back in the
    middle (the Megamind woman: shots 1 and 3 of 4) gets no such question."""
    segs = [seg("staying in place", "red clothes", "a place", STILL, RED, start=0),
            seg("staying in place", "red clothes", "a place", STILL, RED, start=6)]
    mid = dict(_entity(segs), runs=[[0, 2], [6, 8]], duration=12.0)
    assert not [q for q in Q.generate("v", [mid], [], style="heuristic") if q["dimension"] == "EE"]
    end = dict(_entity(segs), runs=[[0, 2], [6, 11.5]], duration=12.0)
    ee = [q for q in Q.generate("v", [end], [], style="heuristic") if q["dimension"] == "EE"]
    assert {q["answer"] for q in ee if q["format"] == "binary"} == {"yes", "no"}
