"""NarrativeTrack answerer cards over any endpoint: card validation, and the same QA answered through the Anthropic
Messages API and an OpenAI-compatible chat-completions server (both real HTTP servers on 127.0.0.1) by answerers
that look at the pixels they are sent, so a wrong frame, order, count or size shows up as a wrong answer."""
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from dagster import instance_for_test, materialize

from bench_assets.core.media import VideoSource, even_indices
from bench_assets.narrativetrack import answering as AN
from bench_assets.narrativetrack import assets as A
from bench_assets.narrativetrack import dataset as D
from bench_resources.config import build_resources
from bench_resources.judge import Judge
from bench_resources.paths import BenchPaths
from tests.support.fake_anthropic import FakeAnthropic, tool_answer
from tests.support.fake_openai_nt import FakeOpenAINT, decode_image

ROOT = Path(__file__).resolve().parents[1]
VIDEO = ROOT / "data" / "narrativetrack" / "videos" / "nt002.mp4"
QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}
HAS_BACKENDS = "backend" in Judge.model_fields


def test_answerer_card_validation():
    a = D.answerer_from_card("qwen", {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "backend": "openai",
                                      "base_url": "http://127.0.0.1:8000/v1/", "api_key_env": "", "frames": 16,
                                      "image_size": 448})
    assert (a.backend, a.base_url, a.api_key_env, a.frames, a.image_size) == (
        "openai", "http://127.0.0.1:8000/v1", "", 16, 448)
    assert a.endpoint() == {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "backend": "openai",
                            "base_url": "http://127.0.0.1:8000/v1", "api_key_env": ""}
    assert D.answerer_from_card("c", {"model": "claude-haiku-4-5"}).endpoint() == {"model": "claude-haiku-4-5",
                                                                                   "backend": "anthropic"}
    for card, msg in [({"model": "m", "backend": "gemini"}, "'backend' must be one of anthropic, openai"),
                      ({"model": "m", "base_url": "127.0.0.1:8000"}, "'base_url' must be an http"),
                      ({"model": "m", "api_key_env": "sk-live-abc"}, "name of an environment variable"),
                      ({"model": "m", "image_size": 8}, "'image_size' must be >= 32"),
                      ({"model": "m", "frames": "many"}, "'frames' must be an integer"),
                      ({"frames": 4}, "needs a 'model'")]:
        with pytest.raises(D.DatasetError, match=re.escape(msg)) as e:
            D.answerer_from_card("bad_card", card)
        assert "bad_card" in str(e.value) and "sk-live-abc" not in str(e.value)


def brightness_order(images: list[np.ndarray]) -> str:
    """What a viewer of these frames answers: is the last frame brighter than the first?"""
    return "yes" if float(images[-1].mean()) > float(images[0].mean()) else "no"


def _question(text: str) -> str:
    return text.split("Question: ", 1)[1]


@pytest.mark.skipif(not HAS_BACKENDS, reason="bench_resources.judge has no `backend` field yet (OpenAI backend)")
def test_answerers_through_both_backends_look_at_pixels(tmp_path, monkeypatch):
    data = tmp_path / "data"
    rel = data / "narrativetrack" / "released"
    (rel / "clips").mkdir(parents=True)
    shutil.copy(VIDEO, rel / "clips" / "v1.mp4")
    # gold answers computed here from the video itself: is the k-th sampled frame brighter than the first?
    src = VideoSource(rel / "clips" / "v1.mp4")
    req = src.take(even_indices(src.n_frames, 8))
    src.run()
    frames = req.frames
    recs, gold = [], {}
    for k in range(1, 8):
        q = f"Looking at frames 1 and {k + 1}: is frame {k + 1} brighter than frame 1?"
        ans = "yes" if float(frames[k].mean()) > float(frames[0].mean()) else "no"
        recs.append({"video_path": "clips/v1.mp4", "question": q, "answer": ans, "question_type": "binary",
                     "dimension": "Action Changes", "track_type": "reappear", "template_type": "start_to_later"})
        gold[q] = ans
    assert set(gold.values()) == {"yes", "no"}  # an answerer that ignores the pixels cannot get them all right
    (rel / "narrativetrack_qa.json").write_text(json.dumps(recs))

    def look(text: str, images: list) -> dict:
        k = int(re.search(r"frames 1 and (\d+)", text).group(1))
        return {"answer": brightness_order([images[0], images[k - 1]]), "justification": "compared brightness"}

    def anthropic_responder(body):
        content = body["messages"][0]["content"]
        images = [decode_image("data:;base64," + b["source"]["data"]) for b in content if b["type"] == "image"]
        return tool_answer(look(_question(content[-1]["text"]), images))

    seen_sizes: list = []

    def openai_responder(text, images):
        seen_sizes.append({max(i.shape[:2]) for i in images})
        return look(_question(text), images)

    gens = data / "generators"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key-not-real")
    with FakeAnthropic(responder=anthropic_responder) as ant, \
            FakeOpenAINT(openai_responder, fail_first=[500, 429]) as oai:
        cards = {"nt_claude": {"model": "claude-haiku-4-5", "frames": 8},
                 "nt_qwen_vllm": {"model": "Qwen/Qwen2.5-VL-7B-Instruct", "backend": "openai",
                                  "base_url": oai.base_url + "/v1", "api_key_env": "", "frames": 8,
                                  "image_size": 64}}
        for name, card in cards.items():
            (gens / name).mkdir(parents=True)
            (gens / name / "generator.yaml").write_text(
                "\n".join([f"name: {name}", "benchmark: narrativetrack", "description: test answerer"]
                          + [f"{k}: {json.dumps(v)}" for k, v in card.items()]) + "\n")
        paths = BenchPaths(data_root=str(data), generators_root=str(gens))
        judge = Judge(mode="live", base_url=ant.base_url, cache_dir=str(tmp_path / "jc"), max_retries=2,
                      backoff_s=0.01)
        resources = build_resources(store_root=str(tmp_path / "store"), paths=paths, judge=judge)
        with instance_for_test() as instance:
            res = materialize(A.ASSETS, selection=["narrativetrack_released_qa", "narrativetrack_released_answers",
                                                   "narrativetrack_released_leaderboard"],
                              instance=instance, resources=resources, run_config=QUIET)
            assert res.success
    # each answerer reached its own endpoint, with its model id, frame count and image size
    assert {r["body"]["model"] for r in ant.requests} == {"claude-haiku-4-5"} and len(ant.requests) == 7
    assert {r["body"]["model"] for r in oai.requests} == {"Qwen/Qwen2.5-VL-7B-Instruct"}
    assert len(oai.requests) == 7 + 2  # two retried failures (HTTP 500, 429), then every question once
    assert {r["path"] for r in oai.requests} == {"/v1/chat/completions"} and not any(r["auth"] for r in oai.requests)
    assert seen_sizes and all(s == {64} for s in seen_sizes)
    board = resources["store"].query("SELECT * FROM narrativetrack_released_leaderboard WHERE slice = 'strict' "
                                     "AND metric_id = 'accuracy.avg'").set_index("generator")
    for g in ("nt_claude", "nt_qwen_vllm"):
        assert board.loc[g, "value"] == 100.0 and board.loc[g, "n_eval"] == 7 and board.loc[g, "n_failed"] == 0
        assert board.loc[g, "coverage"] == 1.0 and pd.isna(board.loc[g, "substitute"])  # the authors' questions
    ans = resources["store"].query("SELECT answerer, backend, raw_answer FROM narrativetrack_released_answers")
    assert dict(zip(ans.answerer, ans.backend)) == {"nt_claude": "anthropic", "nt_qwen_vllm": "openai"}


@pytest.mark.skipif(not HAS_BACKENDS, reason="bench_resources.judge has no `backend` field yet (OpenAI backend)")
def test_unreachable_openai_answerer_fails_counted_not_scored(tmp_path):
    """A card pointing at a dead server: every item failed with the reason, value None, never 0 %."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    answerer = D.answerer_from_card("dead", {"model": "m", "backend": "openai", "base_url": f"http://127.0.0.1:{port}/v1",
                                             "api_key_env": "", "frames": 2})
    qas = __import__("pandas").DataFrame([{"qa_id": "q1", "video_id": "v", "entity_id": None, "dimension": "AC",
                                           "format": "binary", "direction": "start_to_later", "track_type": "appear",
                                           "distractor": "none", "question": "Q?", "options": None, "answer": "yes",
                                           "kept": True}])
    judge = Judge(mode="live", cache_dir=str(tmp_path / "jc"), max_retries=0, timeout_s=2, deadline_s=5)
    rows = AN.answer_rows(judge, answerer, qas, [np.zeros((40, 40, 3), np.uint8)] * 2)
    assert rows[0]["status"] == "failed" and rows[0]["strict"] is None and rows[0]["backend"] == "openai"
    from bench_assets.narrativetrack import metrics as M
    out = M.accuracy_table(AN.answer_frame(rows))[0]
    assert out["value"] is None and out["n_failed"] == 1 and out["value_failed_wrong"] == 0.0
