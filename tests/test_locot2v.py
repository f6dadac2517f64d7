"""LoCoT2V-Bench: hand-computed metric values, the embedded long videos end to end (judge off), and the
judge-derived artefacts / content clarity / HERD / alignment through a local Messages API with recorded answers."""
import base64
import json
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pandas as pd
import pytest
from dagster import instance_for_test

from bench_assets.locot2v import assets, board, constants, dataset, metrics, pipeline, rrub
from bench_resources.config import build_resources
from bench_resources.judge import Judge, png_bytes
from bench_resources.paths import BenchPaths
from tests.support.fake_anthropic import FakeAnthropic, tool_answer
from tests.support.locot2v import _run, _world  # noqa: F401
from tests.support.locot2v import GENERATORS  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"
PAPER_IDS = set(constants.SUB_DIMENSIONS) | set(constants.DIMENSIONS) | {"overall"}
ALL_IDS = PAPER_IDS | {f"{d}_available" for d in (*constants.DIMENSIONS, "overall")}   # + the partial means
ALL_IDS |= {"inter_event_subject_face_identity"}   # + the face-identity addition (issue 23)


# ------------------------------------------------------------------------------------------ hand-computed values

def _ones(shape):
    return [np.ones(shape) for _ in constants.EVENT_FIELDS]


def test_event_alignment_by_hand():
    # identical order, perfect fields
    assert metrics.event_alignment(np.eye(3), _ones((3, 3)))[0] == pytest.approx(100.0)
    # one inversion (video shows prompt events 1, 0, 2): factor 1 - 1/3; setting field half similar
    sem = np.full((3, 3), 0.2)
    sem[0, 1] = sem[1, 0] = sem[2, 2] = 1.0
    fields = _ones((3, 3))
    fields[1][:] = 0.5
    v, d = metrics.event_alignment(sem, fields)
    assert d["pairs"] == [[0, 1], [1, 0], [2, 2]] and d["inversions"] == 1
    assert v == pytest.approx(100 * (2 / 3) * 0.875)
    # fully reversed: I = I_max, EA = 0 (a value, not None)
    assert metrics.event_alignment(np.fliplr(np.eye(3)), _ones((3, 3)))[0] == pytest.approx(0.0)
    # unmatched prompt event: 2 video events vs 3 prompt events, mean over the N = 2 matched pairs
    v, d = metrics.event_alignment(np.array([[0.8, 0.0, 0.0], [0.0, 0.0, 0.6]]), _ones((2, 3)))
    assert v == pytest.approx(70.0) and d["matched"] == 2 and d["prompt_events"] == 3 and d["inversions"] == 0
    # a zero-similarity pair is no match: N = 1 -> order factor 1; per-field mean (1 + 0 + 1 + 1) / 4
    f = _ones((2, 2))
    f[1][:] = 0.0
    v, d = metrics.event_alignment(np.array([[0.0, 0.0], [0.0, 0.5]]), f)
    assert d["matched"] == 1 and v == pytest.approx(100 * 0.5 * 0.75)
    # nothing matched -> None
    assert metrics.event_alignment(np.zeros((2, 2)), _ones((2, 2)))[0] is None
    assert metrics.event_alignment(np.zeros((0, 3)), _ones((0, 3)))[0] is None
    # empty fields: both empty agree, one empty disagrees
    assert metrics.field_similarity(np.ones(2), np.ones(2), "", " ") == 1.0
    assert metrics.field_similarity(np.ones(2), np.ones(2), "a cat", "") == 0.0


def test_judged_scores_by_hand():
    # HERD: polarity-consistent over yes + no; unclear excluded
    answers = [("yes", "positive"), ("no", "negative"), ("yes", "negative"), ("unclear", "positive")]
    assert metrics.herd_score(answers) == (pytest.approx(200 / 3), 3)
    assert metrics.herd_score([("unclear", "positive"), ("unclear", "negative")]) == (None, 0)
    assert metrics.herd_score([("no", "positive")]) == (0.0, 1)
    # human action: occurrence share x smoothness share of the actions that occur
    assert metrics.human_action_score([True, False], [[True, False, True], []]) == pytest.approx(100 * 0.5 * 2 / 3)
    assert metrics.human_action_score([False], [[]]) == 0.0
    assert metrics.human_action_score([], []) is None
    # content clarity: mean over rounds / 4
    assert metrics.clarity_score([4, 3, 2]) == pytest.approx(75.0)
    assert metrics.clarity_score([]) is None
    # aggregation (board.py): a dimension = mean of its sub-dimensions when every one has a value, else None; its
    # partial mean (an addition) averages those that have one; overall likewise over the five
    sub = {m: None for m in constants.SUB_DIMENSIONS}
    sub.update(aesthetic_quality=60.0, technical_quality=80.0, overall_alignment=50.0, dynamic_degree=100.0,
               motion_smoothness=90.0, theme_clarity=40.0, **{"herd.Themes": 20.0})
    dims, partial = {}, {}
    for d, ids in constants.DIMENSIONS.items():
        dims[d], partial[d] = board.aggregate_rows("g", d, {m: {"value": sub[m], "coverage": 1.0} for m in ids},
                                                   "sub-dimensions", "dimension", 1)
    assert dims["static_quality"]["value"] == 70.0 and partial["static_quality"]["value"] == 70.0
    assert dims["text_video_alignment"]["value"] is None and partial["text_video_alignment"]["value"] == 50.0
    assert "without a value: event_alignment" in dims["text_video_alignment"]["reason"]
    assert partial["temporal_quality"]["value"] == 95.0 and partial["content_clarity"]["value"] == 40.0
    assert partial["herd"]["value"] == 20.0
    overall, _ = board.aggregate_rows("g", "overall", dims, "dimensions", "overall", 1)
    _, overall_partial = board.aggregate_rows("g", "overall", partial, "dimensions", "overall", 1)
    assert overall["value"] is None and overall_partial["value"] == pytest.approx((70 + 50 + 95 + 40 + 20) / 5)
    # AQ: mean / RR-UB capped at 1; RR-UB = mean of the top 10 %
    assert metrics.rrub(list(range(1, 21))) == pytest.approx(19.5)
    assert metrics.aesthetic_quality([5.0, 6.0], 8.0) == pytest.approx(100 * 5.5 / 8)
    assert metrics.aesthetic_quality([9.0], 8.0) == 100.0
    assert len(metrics.clip_bounds(480, 8.0)) == 7   # 60 s: six clips of exactly 10 s are not shorter than 10 s
    assert metrics.clip_bounds(160, 8.0) == [(0, 53), (53, 107), (107, 160)]   # 20 s: three clips of 6.7 s


def test_clip_bounds_are_shorter_than_ten_seconds():
    for n, fps in ((480, 8.0), (240, 24.0), (1441, 24.0), (10, 8.0)):
        b = metrics.clip_bounds(n, fps)
        assert b[0][0] == 0 and b[-1][1] == n and all(e - s < constants.TQ_MAX_CLIP_SECONDS * fps for s, e in b)


def _scene(seed: int, shift: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    base = cv2.resize(rng.integers(0, 255, (12, 20, 3)).astype(np.uint8), (160, 96), interpolation=cv2.INTER_CUBIC)
    return np.roll(base, shift, axis=1)


def _window_score(frames, flow):
    emb = np.stack([cv2.resize(f, (8, 8), interpolation=cv2.INTER_AREA).astype(np.float64).ravel() for f in frames])
    flows = flow.flow([(frames[i], frames[i + 1]) for i in range(len(frames) - 1)])
    return metrics.transition_window_score(frames, emb, flows)[0]


def test_transition_smoothness_gradual_above_hard():
    from bench_resources.models.flow import DisFlow
    flow = DisFlow()
    a, b = _scene(1), _scene(2)
    n = 2 * constants.TRANSITION_K + 1
    steady = [_scene(1, k) for k in range(n)]                                         # no transition: smooth pan
    fade = [cv2.addWeighted(a, 1 - k / (n - 1), b, k / (n - 1), 0) for k in range(n)]   # gradual across the window
    cut = [a] * (constants.TRANSITION_K + 1) + [b] * constants.TRANSITION_K         # hard cut in the middle
    s_steady, s_fade, s_cut = (_window_score(w, flow) for w in (steady, fade, cut))
    assert s_steady > 0.95 and s_cut < 0.3, (s_steady, s_fade, s_cut)
    assert s_fade > s_cut + 0.4, (s_fade, s_cut)
    # A = Var b / (Var b + c), Var b the squared coefficient of variation of s over the 2k pairs
    s = np.array([1.0] * 7 + [0.3])
    cv2_ = np.var(s) / np.mean(s) ** 2
    assert metrics.abruptness(s) == pytest.approx(cv2_ / (cv2_ + constants.TRANSITION_C))
    # PySceneDetect finds the hard cut in a decoded sequence
    assert metrics.detect_transitions(np.stack([a] * 12 + [b] * 12), 8.0) == [12]
    # the embedded videos: the window on smooth's cross-fade at the first event boundary beats jerky's hard cut there
    from bench_assets.core.media import decode_video
    got = {}
    for g in ("locot2v_smooth", "locot2v_jerky"):
        frames = decode_video(DATA / "generators" / g / "nature_1.mp4").frames
        t = metrics.event_ranges(len(frames), 3)[1][0]
        lo, hi = metrics.window_bounds(t, len(frames))
        got[g] = _window_score(list(frames[lo:hi + 1]), flow)
    assert got["locot2v_smooth"] > 0.6 and got["locot2v_jerky"] < 0.3, got


def test_frame_pair_metrics_by_hand():
    from bench_resources.models.flow import DisFlow
    flow = DisFlow()
    still = [_scene(3)] * 6
    f = flow.flow(list(zip(still[:-1], still[1:])))
    assert metrics.dynamic_degree(f, (96, 160))[0] == 0.0
    assert metrics.temporal_flickering(still, metrics.static_pairs(f, (96, 160))) == pytest.approx(100.0)
    we, neglog, _ = metrics.warping_error(still, f, f)
    assert we == pytest.approx(100.0, abs=1e-3) and neglog > 10
    moving = [_scene(3, 8 * k) for k in range(9)]   # 8 px per frame: above 6 * 96 / 256 = 2.25 px
    fm = flow.flow(list(zip(moving[:-1], moving[1:])))
    assert metrics.dynamic_degree(fm, (96, 160))[0] == 100.0
    assert metrics.static_pairs(fm, (96, 160)) == [] and metrics.temporal_flickering(moving, []) is None
    # linear motion is rebuilt well by the interpolator; a frame that jumps back is not
    slow = [_scene(3, 3 * k) for k in range(9)]
    skips = [(flow.flow([(slow[2 * j], slow[2 * j + 2])])[0], flow.flow([(slow[2 * j + 2], slow[2 * j])])[0])
             for j in range(4)]
    smooth = metrics.motion_smoothness(slow, skips)
    jerky = list(slow)
    jerky[3] = slow[1]
    assert smooth > 95 and smooth > metrics.motion_smoothness(jerky, skips) + 1
    # event-level consistency: a subject that drifts between events scores lower across events
    e0 = np.array([[1.0, 0.0, 0.0], [0.99, 0.1, 0.0]])
    same = [{"cat": e0}, {"cat": e0.copy()}]
    drift = [{"cat": e0}, {"cat": np.array([[0.6, 0.8, 0.0], [0.5, 0.85, 0.1]])}]
    assert metrics.inter_event_consistency(drift)[0] < metrics.inter_event_consistency(same)[0]
    assert metrics.inter_event_consistency([{"cat": e0}, {"dog": e0}])[0] is None   # each subject in one event only
    v, _ = metrics.intra_event_consistency([{"cat": e0}, {"cat": np.array([[0.0, 1.0, 0.0]])}], [10, 30])
    # the 1-appearance event is skipped
    assert v == pytest.approx(100 * float(metrics.l2n(e0[0]) @ metrics.l2n(e0[1])))


def test_sentence_chunks_keep_late_text():
    text = " ".join(f"Sentence number {i} has some words." for i in range(60)) + " The dragon appears at the end."
    chunks = metrics.sentence_chunks(text, 50)
    assert all(len(c.split()) <= 50 for c in chunks) and chunks[-1].endswith("The dragon appears at the end.")
    assert " ".join(chunks).split() == text.split()


def test_bad_sample_is_one_clear_error():
    raw = json.loads((DATA / "locot2v" / "samples" / "nature_1.json").read_text())
    bad = dict(raw, herd_questions=[{"dimension": "Themes", "question": "?", "polarity": "sideways"}])
    with pytest.raises(dataset.SampleError, match="sample nature_1: bad HERD question"):
        dataset.parse_sample(bad, "x")
    with pytest.raises(dataset.SampleError, match="sample nature_1: event 1 lacks"):
        dataset.parse_sample(dict(raw, events=[{"event": "x"}]), "x")


def test_rrub_command(tmp_path):
    folder = tmp_path / "ref"
    folder.mkdir()
    for i in range(20):
        cv2.imwrite(str(folder / f"{i:02d}.png"), np.full((8, 8, 3), i * 10, np.uint8))
    (folder / "broken.png").write_bytes(b"not a png")
    score = lambda images: [float(im.mean()) / 20 for im in images]  # noqa: E731  (0.0 .. 9.5 by brightness)
    out = tmp_path / "rrub.json"
    assert rrub.main([str(folder), "--out", str(out), "--source", "twenty grey squares"], score=score) == 0
    rec = json.loads(out.read_text())
    assert rec["images"] == 20 and rec["unreadable"] == 1 and rec["rrub"] == pytest.approx((9.5 + 9.0) / 2)
    value, source = rrub.load_rrub(out)
    assert value == pytest.approx(9.25) and "twenty grey squares" in source
    assert rrub.load_rrub(tmp_path / "absent.json") == (constants.RRUB_DEFAULT, constants.RRUB_SOURCE_DEFAULT)
    assert rrub.main([str(tmp_path / "nowhere"), "--out", str(out)], score=score) == 2


# ------------------------------------------------------------------------------------------ the embedded graph


def test_leaderboard_has_all_26_for_every_generator(locot2v_offline):
    stats, resources, errors, _, _ = locot2v_offline
    assert not errors and not stats.failed, stats.failed
    board = resources["store"].query("SELECT * FROM locot2v_leaderboard")
    assert set(board.generator) == set(GENERATORS)
    for g, part in board.groupby("generator"):
        assert set(part.metric_id) == ALL_IDS and len(part) == len(ALL_IDS) == 26 + 5 + 1 + 6 + 1, g
    assert board[board.value.isna()]["reason"].notna().all()
    v = board.pivot(index="metric_id", columns="generator", values="value").astype(float)
    r = board.pivot(index="metric_id", columns="generator", values="reason")
    # no offline aesthetic predictor v2.5 / DOVER++: None with the slot's reason; the judge is off
    assert v.loc[["aesthetic_quality", "technical_quality", "static_quality"]].isna().all().all()
    assert r.loc["aesthetic_quality"].str.contains("aesthetic_v25").all()
    assert r.loc["technical_quality"].str.contains("dover").all()
    for m in ("overall_alignment", "theme_clarity", "herd.Themes", "human_action"):
        assert v.loc[m].isna().all() and r.loc[m].str.contains("judge off").all(), m
    # the model-based temporal sub-dimensions have values for every generator (offline slots)
    for m in ("dynamic_degree", "motion_smoothness", "warping_error", "semantic_consistency",
              "temporal_flickering", "transition_smoothness", "intra_event_subject_consistency",
              "intra_event_background_consistency", "inter_event_subject_consistency",
              "inter_event_background_consistency"):
        assert v.loc[m].notna().all(), m
    # supplied events win with the judge off: nature_1's event consistency is computed, life_1's needs the judge
    scores = resources["store"].query("SELECT * FROM locot2v_visual")
    ev = scores[scores.metric_id == "inter_event_subject_consistency"].set_index(["generator", "item"])
    assert ev.loc[("locot2v_smooth", "nature_1"), "value"] > 0
    assert pd.isna(ev.loc[("locot2v_smooth", "life_1"), "value"])
    assert "needs the prompt's events: judge off" in ev.loc[("locot2v_smooth", "life_1"), "reason"]
    assert (board[board.metric_id == "inter_event_subject_consistency"]["coverage"] == 0.5).all()
    # validity
    assert v.loc["dynamic_degree", "locot2v_frozen"] == 0.0
    assert (v.loc["dynamic_degree", ["locot2v_smooth", "locot2v_jerky", "locot2v_drift"]] == 100.0).all()
    assert v.loc["transition_smoothness", "locot2v_smooth"] > v.loc["transition_smoothness", "locot2v_jerky"] + 40
    assert v.loc["transition_smoothness", "locot2v_jerky"] < 40                 # hard cuts ~0.15-0.2 of 1
    assert v.loc["inter_event_subject_consistency", "locot2v_drift"] < \
        v.loc["inter_event_subject_consistency", "locot2v_smooth"] - 5
    assert v.loc["motion_smoothness", "locot2v_smooth"] > v.loc["motion_smoothness", "locot2v_jerky"]
    assert v.loc["temporal_flickering", "locot2v_frozen"] > 99.9
    # the paper's dimensions and overall need every part: with the judge off none has a value (temporal quality
    # lacks human_action); the partial means average what exists, overall's from its one dimension
    assert v.loc[list(constants.DIMENSIONS) + ["overall"]].isna().all().all()
    assert r.loc["temporal_quality"].str.contains("without a value: human_action").all()
    assert r.loc["overall"].str.contains("needs all 5 dimensions").all()
    temporal = [m for m in constants.TEMPORAL_IDS if pd.notna(v.loc[m, "locot2v_smooth"])]
    assert v.loc["temporal_quality_available", "locot2v_smooth"] == \
        pytest.approx(v.loc[temporal, "locot2v_smooth"].mean())
    assert v.loc["overall_available", "locot2v_smooth"] == \
        pytest.approx(v.loc["temporal_quality_available", "locot2v_smooth"])
    # the jerky video's hard cuts are the transitions PySceneDetect found
    ts = scores[(scores.metric_id == "transition_smoothness") & (scores.generator == "locot2v_jerky")]
    assert all("PySceneDetect" in json.loads(d)["how"] for d in ts.detail)


def test_one_decode_per_video_and_nothing_twice(locot2v_offline):
    stats, resources, _, instance, tmp = locot2v_offline
    assert stats.decodes == len(GENERATORS) * 2   # one decode per video, shared by every metric
    again, _, _ = _run(instance, tmp / "data", tmp / "store", Judge(mode="off"))
    assert again.materialized == [] and again.decodes == 0


def test_embedded_data_regenerates_byte_for_byte():
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "make_locot2v_data.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and "0 differ" in r.stdout, r.stdout + r.stderr


# ------------------------------------------------------------------------------------------ through the judge

def _first_image_ids(data) -> dict[str, str]:
    """base64 of the first frame each video question carries -> sample id (to answer per sample)."""
    out = {}
    for sid in ("nature_1", "life_1"):
        from bench_assets.core.media import decode_video
        clip = decode_video(data / "generators" / "locot2v_smooth" / f"{sid}.mp4")
        out[base64.b64encode(png_bytes(pipeline.judge_frames(clip.frames)[0])).decode()] = sid
    return out


def _responder(data, prompt_events):
    ids = _first_image_ids(data)
    cc_rounds = iter([4, 3, 2] * 100)

    def answer(body):
        props = body["tools"][0]["input_schema"]["properties"]
        content = body["messages"][0]["content"]
        text = content[-1]["text"]
        sid = ids.get(content[0]["source"]["data"]) if content[0]["type"] == "image" else None
        if "description" in props:
            return tool_answer({"description": f"FAKE DESCRIPTION OF {sid}: the subject walks through places."})
        if "events" in props:
            if "FAKE DESCRIPTION OF nature_1" in text:   # the video shows prompt events 1, 0, 2
                ev = prompt_events["nature_1"]
                return tool_answer({"events": [ev[1], ev[0], ev[2]]})
            if "FAKE DESCRIPTION OF life_1" in text:     # one of the two events only
                return tool_answer({"events": [LIFE_EVENTS[1]]})
            return tool_answer({"events": LIFE_EVENTS})   # derived from life_1's prompt base
        if "human_actions" in props:
            return tool_answer({"human_actions": [{"subject": "the astronaut", "action": "walks across the pad"}]})
        if "Themes" in props:
            return tool_answer({d: [f"Q1 about {d}?", f"Q2 about {d}?"] for d in constants.HERD_DIMENSIONS})
        if "polarities" in props:
            n = sum(1 for line in text.splitlines() if line[:1].isdigit() and ". " in line[:4])
            return tool_answer({"polarities": ["positive", "negative"] * (n // 2)})
        if "semantic_complexity" in props:
            return tool_answer({k: {"score": 5, "explanation": "x"} for k in
                                ("semantic_complexity", "structural_complexity", "control_complexity")})
        if "theme_clarity" in props:
            return tool_answer({"theme_clarity": {"score": next(cc_rounds)}, "logical_structure": {"score": 4},
                                "information_completeness": {"score": 0}, "information_consistency": {"score": 2}})
        if "answer" in props:   # human action occurrence, then the three smoothness questions
            return tool_answer({"answer": "No" if "not stiff" in text else "Yes"})
        if "answers" in props:
            qs = [line.split(". ", 1)[1] for line in text.splitlines() if line[:1].isdigit() and ". " in line[:4]]
            out = []
            for q in qs:
                out.append("no" if "black and white" in q or "Emotional" in q or "calm" in q else
                           "unclear" if "exploration" in q else "yes")
            return tool_answer({"answers": out})
        raise AssertionError(f"unexpected request: {list(props)}")
    return answer


LIFE_EVENTS = [
    {"event": "An astronaut walks across a rocket launch pad", "subject": "a woman astronaut",
     "setting": "a rocket launch pad", "action": "walks from left to right", "camera motion": "static"},
    {"event": "The astronaut stands in a flower garden, then walks", "subject": "a woman astronaut",
     "setting": "a flower garden", "action": "stands still, then walks", "camera motion": "static"}]


def test_derived_artefacts_clarity_herd_and_alignment_through_the_judge(tmp_path, monkeypatch):
    data = _world(tmp_path, ("locot2v_smooth",))
    # a broken generator beside it: its failures name the sample, the good generator still scores
    bad = data / "generators" / "locot2v_broken"
    bad.mkdir()
    (bad / "generator.yaml").write_text("name: locot2v_broken\nbenchmark: locot2v\n")
    (bad / "nature_1.mp4").write_bytes(b"garbage")
    nature = dataset.load_sample(data / "locot2v" / "samples" / "nature_1.json")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with FakeAnthropic(responder=_responder(data, {"nature_1": list(nature.events)})) as srv, \
            instance_for_test() as instance:
        judge = Judge(mode="live", base_url=srv.base_url, cache_dir=str(tmp_path / "cache"), backoff_s=0.01)
        stats, resources, _ = _run(instance, data, tmp_path / "store", judge, generator_assets=["locot2v_judged"])
        failed = {(k.split("|")[0] if k else None, msg) for _, k, msg in stats.failed}
        assert len(failed) == 2 and all(g == "locot2v_broken" for g, _ in failed), failed
        assert any("sample nature_1" in m and "cannot be opened" in m for _, m in failed)
        assert any("sample life_1: no output video" in m for _, m in failed)
        store = resources["store"]
        derived = store.query("SELECT * FROM locot2v_derived").set_index("sample_id")
        # supplied values win; absent ones come from the judge, with polarity
        assert derived.loc["nature_1", "events_source"] == "supplied"
        assert derived.loc["life_1", "events_source"] == "judge"
        assert json.loads(derived.loc["life_1", "events_json"]) == LIFE_EVENTS
        qs = json.loads(derived.loc["life_1", "herd_questions_json"])
        assert len(qs) == 14 and {q["polarity"] for q in qs} == {"positive", "negative"}
        assert json.loads(derived.loc["life_1", "complexity_json"]) == {"semantic_complexity": 5,
                                                                        "structural_complexity": 5,
                                                                        "control_complexity": 5}
        texts = [b["messages"][0]["content"][-1]["text"] for b in srv.bodies]
        assert not any("tabby cat walks from left to right" in t and "event extraction" in t and "FAKE" not in t
                       for t in texts)   # nature_1's supplied events were not derived again
        s = store.query("SELECT * FROM locot2v_judged WHERE generator = 'locot2v_smooth'")
        val = s.pivot(index="metric_id", columns="item", values="value").astype(float)
        # EA: nature_1's video shows the prompt's events in the order 1, 0, 2 with identical text: 1 - 1/3
        assert val.loc["event_alignment", "nature_1"] == pytest.approx(100 * 2 / 3, abs=0.01)
        # life_1's video shows one of two events: N = 1 matched, order factor 1, identical fields
        assert val.loc["event_alignment", "life_1"] == pytest.approx(100.0, abs=0.01)
        ea = json.loads(s[(s.metric_id == "event_alignment") & (s.item == "life_1")].detail.iloc[0])
        assert ea["matched"] == 1 and ea["total_prompt_events"] == 2
        # OA: the clipped cosine of the description and the prompt base (offline chunked MiniLM)
        text = resources["models"].slot("long_text_embedder")
        e = text.embed(["FAKE DESCRIPTION OF nature_1: the subject walks through places.", nature.prompt_base])
        assert val.loc["overall_alignment", "nature_1"] == pytest.approx(100 * max(0.0, float(e[0] @ e[1])), abs=1e-3)
        # content clarity: three rounds 4, 3, 2 -> 75 %; constant 4 -> 100; 0 -> 0; 2 -> 50
        assert np.allclose(val.loc["theme_clarity"], 75.0)
        assert (val.loc["logical_structure"] == 100.0).all() and (val.loc["information_completeness"] == 0.0).all()
        assert (val.loc["information_consistency"] == 50.0).all()
        # human action: nature_1 supplies none -> None; life_1: occurs, 2 of 3 smoothness answers Yes
        assert np.isnan(val.loc["human_action", "nature_1"]) and val.loc["human_action", "life_1"] == \
            pytest.approx(100 * 2 / 3)
        # HERD by hand: nature_1's supplied questions are all positive except "black and white" (negative)
        assert val.loc["herd.Visual Style", "nature_1"] == 100.0         # yes to positive, no to negative
        assert val.loc["herd.Emotional Response", "nature_1"] == 0.0     # "no" to a positive question
        assert np.isnan(val.loc["herd.Themes", "nature_1"])               # its only answer is unclear
        assert (val.loc["herd.Narrative Flow"] == [50.0, 100.0]).all()   # life_1: yes to (pos, neg) -> 1 of 2
        board = store.query("SELECT * FROM locot2v_leaderboard WHERE generator = 'locot2v_smooth'")
        b = board.set_index("metric_id")
        assert set(b.index) == ALL_IDS
        assert b.loc["herd.Themes", "value"] == pytest.approx(50.0) and b.loc["herd.Themes", "n_eval"] == 1
        assert json.loads(b.loc["herd.Themes", "detail"])["samples_scored"] == 1
        assert b.loc["content_clarity", "value"] == pytest.approx((75 + 100 + 0 + 50) / 4)
        # every answer is cached: a replay judge (no network) answers the derivation and the video questions
        assert stats.judge_calls == len(srv.requests)
        calls = len(srv.requests)
        replay = Judge(mode="replay", cache_dir=str(tmp_path / "cache"))
        from bench_assets.locot2v import judging
        life = dataset.load_sample(data / "locot2v" / "samples" / "life_1.json")
        again = replay.ask(judging.events_request(life.prompt_base))
        assert again.status == "ok" and again.cached and again.answer["events"] == LIFE_EVENTS
        from bench_assets.core.media import decode_video
        frames = pipeline.judge_frames(decode_video(data / "generators" / "locot2v_smooth" / "life_1.mp4").frames)
        asked = replay.ask_many([judging.clarity_request(frames, i) for i in range(constants.CC_ROUNDS)])
        assert [r.status for r in asked] == \
            ["ok"] * constants.CC_ROUNDS
        assert len(srv.requests) == calls


def test_paper_siglip2_slot_loads_a_same_architecture_model(tmp_path):
    """The paper profile's SigLIP2 loader on a randomly initialised SigLIP model of the same architecture."""
    from transformers import SiglipConfig, SiglipModel

    from bench_resources.models import ModelRegistry
    cfg = SiglipConfig(text_config={"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 1,
                                    "num_attention_heads": 2, "vocab_size": 99},
                       vision_config={"hidden_size": 32, "intermediate_size": 37, "num_hidden_layers": 1,
                                      "num_attention_heads": 2, "image_size": 32, "patch_size": 8})
    SiglipModel(cfg).save_pretrained(tmp_path / "siglip2")
    reg = ModelRegistry(profile="paper", weights_dir=str(tmp_path))
    assert reg.status("siglip2").available
    model = reg.slot("siglip2")
    e = model.embed([_scene(1), _scene(2), _scene(1)])
    assert e.shape == (3, 32) and np.allclose(np.linalg.norm(e, axis=1), 1.0, atol=1e-5)
    assert np.allclose(e[0], e[2], atol=1e-6) and not np.allclose(e[0], e[1], atol=1e-6)  # batch position: float noise
    assert metrics.semantic_consistency(e) is not None


def test_manifest_records_rrub_and_slots(tmp_path):
    paths = BenchPaths(data_root=str(tmp_path))
    res = build_resources(paths=paths, store_root=str(tmp_path / "store"), judge=Judge(mode="off"))
    man = assets.manifest(res["models"], res["judge"], paths)
    assert man["constants"]["rrub"] == 10.0 and "uncalibrated" in man["constants"]["rrub_source"]
    assert man["models"]["flow"]["available"] and not man["models"]["dover"]["available"]
    rrub.write_json(tmp_path / "locot2v" / "rrub.json", {"rrub": 7.5, "source": "my reference set", "images": 3,
                                                      "top": 0.1})
    man2 = assets.manifest(res["models"], res["judge"], paths)
    assert man2["constants"]["rrub"] == 7.5 and "my reference set" in man2["constants"]["rrub_source"]


def test_paper_subject_segmenter_loads_sam2_and_masks_a_detected_subject(tmp_path):
    """The paper profile's Grounded-SAM-2 loader on a randomly initialised SAM 2 of the same architecture, prompted
    by the real offline detector's box (GroundingDINO weights are not available here)."""
    import torch
    from transformers import Sam2Config, Sam2ImageProcessor, Sam2Model, Sam2Processor

    from bench_resources.device import Device
    from bench_resources.models import ModelRegistry
    from bench_resources.models.slots_locot2v import SLOTS as LSLOTS
    from bench_resources.models.specs import LoadContext
    torch.manual_seed(0)
    d = tmp_path / "subject_segmenter"
    # SAM 2.1 hiera (the default config) at a 256 px input instead of 1024, to keep the test fast
    cfg = Sam2Config(vision_config={"backbone_config": {"model_type": "sam2_hiera_det_model", "image_size": [256, 256]},
                                    "backbone_feature_sizes": [[64, 64], [32, 32], [16, 16]]},
                     prompt_encoder_config={"image_size": 256})
    Sam2Model(cfg).save_pretrained(d)
    Sam2Processor(image_processor=Sam2ImageProcessor(size={"height": 256, "width": 256},
                                                     mask_size={"height": 64, "width": 64})).save_pretrained(d)
    offline = ModelRegistry(profile="offline")
    ctx = LoadContext("subject_segmenter", tmp_path, False, Device(device="cpu").torch_device(), torch.float32, 4,
                      offline)
    ckpt = LSLOTS["subject_segmenter"].paper
    paths, _, missing = ckpt.locate(ctx)
    assert paths is not None, missing
    seg = ckpt.load(ctx, paths)
    from bench_assets.core.media import decode_video
    frame = decode_video(DATA / "generators" / "locot2v_smooth" / "nature_1.mp4").frames[0]
    masks, boxes, how = pipeline.subject_masks(seg, None, frame, "a small orange tabby cat")
    assert how == "mask" and len(masks) == 1 and masks[0].shape == frame.shape[:2] and masks[0].dtype == bool
    assert masks[0].any() and len(boxes[0]) == 4
