"""Issue 23 item 4, LoCoT2V end to end: the face-identity addition ``inter_event_subject_face_identity`` through a
real Dagster materialization of the LoCoT2V assets (one generator, one embedded sample, judge off, offline models).

The sample is nature_1 (a cat, no human face): the addition must be on the board as an addition, None with its
reason and counts (never a silent zero), read by no aggregate, and the paper's ``inter_event_subject_consistency``
must be what the same video gives with no face model at all."""
import json
from pathlib import Path

import pandas as pd
import pytest
from dagster import instance_for_test

from bench_assets.core.generators import discover_generators
from bench_assets.core.metric_spec import check_board
from bench_assets.core.runner import evaluate
from bench_assets.locot2v import assets, constants, dataset
from bench_assets.locot2v.metric_specs import METRICS
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support.locot2v import GEN, SAMPLE, one_sample_world  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
FACE_ID = "inter_event_subject_face_identity"


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("locot2v_face")
    data = tmp / "data"
    one_sample_world(data)
    paths = BenchPaths(data_root=str(data), generators_root=str(data / "generators"))
    resources = build_resources(paths=paths, store_root=str(tmp / "store"), judge=Judge(mode="off"))
    gens, errors = discover_generators(paths.generators_dir, "locot2v")
    with instance_for_test() as instance:
        stats = evaluate(instance, assets=assets.ASSETS, resources=resources, partitions=assets.P,
                         items=dataset.discover_samples(data / "locot2v" / "samples"), generators=gens,
                         item_assets=assets.ITEM_ASSETS, generator_assets=assets.GENERATOR_ASSETS,
                         aggregate_assets=assets.AGGREGATE_ASSETS, progress=lambda s: None)
        yield stats, errors, resources, paths


def test_face_identity_addition_is_on_the_board_as_an_addition(run):
    stats, errors, resources, _ = run
    assert not errors and not stats.failed, stats.failed
    store = resources["store"]
    board = store.query("SELECT * FROM locot2v_leaderboard")
    assert check_board(board, METRICS) == []          # every id has a spec, the addition flag is the spec's
    row = board[board.metric_id == FACE_ID]
    assert len(row) == 1 and row.iloc[0]["generator"] == GEN
    row = row.iloc[0]
    assert bool(row["addition"]) and METRICS[FACE_ID].paper_id is None
    assert json.loads(row["detail"])["level"] == "addition"
    # the paper's rows stay the paper's
    paper = board[board.metric_id.isin(constants.SUB_DIMENSIONS)]
    assert len(paper) == 26 and not paper["addition"].fillna(False).astype(bool).any()
    # a cat has no face: None with the reason and the counts, never a silent zero
    assert pd.isna(row["value"]) and "no face detected" in row["reason"], row["reason"]
    assert int(row["n_skipped"]) == 1 and int(row["n_eval"]) == 0
    items = store.query(f"SELECT * FROM locot2v_visual WHERE metric_id = '{FACE_ID}'")
    assert len(items) == 1 and pd.isna(items.iloc[0]["value"])
    d = json.loads(items.iloc[0]["detail"])
    assert d["n_faces"] == 0 and d["n_low_quality"] == 0 and "SFaceRecognizer" in d["embedder"]
    # no aggregate reads it: temporal quality's parts are the paper's sub-dimensions only
    for spec in METRICS:
        assert FACE_ID not in spec.parts, spec.id
    tq = json.loads(board[board.metric_id == "temporal_quality_available"].iloc[0]["detail"])
    assert tq["parts"] == len(constants.DIMENSIONS["temporal_quality"])


def test_paper_inter_event_subject_consistency_is_unchanged_by_the_face_slot(run):
    _, _, resources, paths = run
    store, models, device = resources["store"], resources["models"], resources["device"]
    got = store.query("SELECT metric_id, value FROM locot2v_visual").set_index("metric_id")["value"]
    assert got["inter_event_subject_consistency"] > 0
    # the same video through the same code with no face model at all (the state before the addition)
    slot = {n: models.slot_or_reason(n, device) for n in assets.SLOTS if n not in ("long_text_embedder", "face")}
    slot["face"] = (None, None)   # neither a model nor a reason: event_consistency as it was before the addition
    derived = store.query("SELECT * FROM locot2v_derived")
    events = json.loads(derived.iloc[0]["events_json"])
    without = {v.metric_id: v.value for v in assets.visual_values(assets._video(paths, GEN, SAMPLE), slot, events,
                                                                    None, 10.0)}
    assert FACE_ID not in without    # no face slot passed: no face row either
    for m in ("inter_event_subject_consistency", "intra_event_subject_consistency",
              "inter_event_background_consistency", "intra_event_background_consistency"):
        assert got[m] == pytest.approx(without[m], abs=1e-9), m


def test_event_consistency_reads_real_faces_and_leaves_the_paper_value_alone():
    """The pipeline function the asset calls, on real footage (the animated dialogue Megamind.avi: the woman in
    shots 1 and 3, the man in 2 and 4; offline detector and embedder): the addition gets a value from the faces
    inside the grounded person boxes, falls when each subject's events show both people, and the paper's
    crop-embedding values are the same with or without the face model."""
    from bench_assets.core.footage import require_footage
    from bench_assets.core.media import decode_video
    from bench_assets.locot2v import pipeline as P
    from bench_resources.models import ModelRegistry
    fr = decode_video(require_footage("Megamind.avi")["Megamind.avi"]).frames
    reg = ModelRegistry(profile="offline")
    face, det, emb = reg.slot("face"), reg.slot("open_vocab_detector"), reg.slot("image_embedder")
    n, cuts = len(fr), [98, 154, 200]   # data/footage/Megamind.yaml cuts
    frames = {i: fr[i] for i in P.event_frame_indices(n, 4)}
    right = [{"subject": s} for s in ("a woman", "a man", "a woman", "a man")]
    mixed = [{"subject": s} for s in ("a woman", "a woman", "a man", "a man")]   # each subject: both people

    def run(events, fm):
        return {v.metric_id: v for v in P.event_consistency(n, cuts, frames, events, None, None, det, None, emb,
                                                             None, None, face_model=fm, face_name="YuNet+SFace")}
    ref, shuf, plain = run(right, face), run(mixed, face), run(right, None)
    a, b = ref[FACE_ID], shuf[FACE_ID]
    assert a.value is not None and b.value is not None, (a.reason, b.reason)
    assert a.value - b.value >= 5.0, (a.value, b.value)
    assert a.detail["n_faces"] > 0 and "n_low_quality" in a.detail
    assert FACE_ID not in plain
    for m in P.EVENT_IDS:
        assert ref[m].value == pytest.approx(plain[m].value, abs=1e-9), m
