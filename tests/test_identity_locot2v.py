"""Issue 23 item 4 for LoCoT2V (helper "identity"): ``inter_event_subject_face_identity``, face identity beside the
paper's crop-embedding ``inter_event_subject_consistency``. On the real animated dialogue (Megamind.avi: the woman in
shots 1 and 3, the man in 2 and 4), shuffling the events so each subject's events show both people lowers it
(the crop embedder raised the woman's value in the issue's run); a low-quality face is counted as such."""
import json

import numpy as np
import pytest

from bench_assets.core.footage import require_footage
from bench_assets.core.media import decode_video
from bench_assets.locot2v import pipeline as P

SHOTS = [(1, 98), (98, 154), (154, 200), (200, 270)]   # data/footage/Megamind.yaml cuts


@pytest.fixture(scope="module")
def dialogue():
    paths = require_footage("Megamind.avi")
    frames = decode_video(paths["Megamind.avi"]).frames
    from bench_resources.models import ModelRegistry
    face = ModelRegistry(profile="offline").slot("face")
    # each event's faces: the largest face of 4 frames of the shot (the in-focus speaker; the other is blurred)
    per_shot = []
    for a, b in SHOTS:
        fs = []
        for i in np.linspace(a + 2, b - 3, 4).astype(int):
            got = face.faces(frames[i])
            if got:
                fs.append(max(got, key=lambda f: f.box[2] - f.box[0]))
        per_shot.append(fs)
    return per_shot


def test_face_identity_falls_when_events_are_shuffled_across_people(dialogue):
    assert all(dialogue), "every shot of the dialogue shows a face"
    woman, man = "subject0", "subject1"
    ref = P.face_identity_value([{woman: dialogue[0]}, {man: dialogue[1]}, {woman: dialogue[2]},
                                 {man: dialogue[3]}], "YuNet+SFace")
    # events 2 and 3 exchanged: each subject's events now show both people
    shuf = P.face_identity_value([{woman: dialogue[0]}, {man: dialogue[2]}, {woman: dialogue[1]},
                                  {man: dialogue[3]}], "YuNet+SFace")
    assert ref.value is not None and shuf.value is not None, (ref, shuf)
    assert ref.value - shuf.value >= 10.0, (ref.value, shuf.value)   # in %, as the paper's value
    r, s = ref.detail["elements"], shuf.detail["elements"]
    assert s[woman] < r[woman] and s[man] < r[man]   # both subjects, not one up and one down
    assert ref.metric_id == "inter_event_subject_face_identity"


def test_low_quality_faces_are_counted_not_read_as_another_person(dialogue):
    from dataclasses import replace
    woman = "subject0"
    poor = [replace(f, quality=replace(f.quality, low=("blur (Laplacian variance) 3.0 < 25",)))
            for f in dialogue[2]]
    v = P.face_identity_value([{woman: dialogue[0]}, {woman: poor}], "YuNet+SFace")
    assert v.value is None and v.n_skipped == 1 and "below the quality floors" in v.reason
    assert v.detail["n_low_quality"] == len(poor)
    none_at_all = P.face_identity_value([{woman: []}, {}], "YuNet+SFace")
    assert none_at_all.value is None and "no face detected" in none_at_all.reason
