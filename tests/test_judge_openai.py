"""The OpenAI-compatible backend end to end against a real chat-completions server on 127.0.0.1
(tests/support/fake_openai.py): request shape, answers that depend on the pixels sent, cache, retries, time bounds,
malformed output, keys."""
import base64
import io
import json
import logging
import time

import numpy as np
import pytest
from PIL import Image

from bench_resources.judge import Judge, JudgeRequest, evaluator_failures, png_bytes
from tests.support.fake_openai import (FakeOpenAI, chat_answer, chat_text, completion, drip, error, hang, html_page,
                               rate_limited, raw_body, slow, user_text)

KEY = "sk-openai-SECRET-abcdef0123456789"
SCHEMA = {"type": "object", "required": ["bright", "level"],
          "properties": {"bright": {"type": "boolean"}, "level": {"type": "integer", "minimum": 0, "maximum": 4}}}


def image(value: int) -> np.ndarray:
    return np.full((8, 8, 3), value, dtype=np.uint8)


def request(value: int = 200, text: str = "How bright is the image?") -> JudgeRequest:
    return JudgeRequest("brightness", "v1", "You rate images.", text, SCHEMA, (png_bytes(image(value)),))


def pixels(body: dict) -> list[float]:
    """Mean intensity of each image the client sent (decoded from the data URLs)."""
    out = []
    for part in body["messages"][1]["content"]:
        if part["type"] == "image_url":
            url = part["image_url"]["url"]
            assert url.startswith("data:image/png;base64,")
            out.append(float(np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(",", 1)[1])))).mean()))
    return out


def looks(body: dict) -> dict:
    """The fake model's answer reads the pixels: a judge wired wrong cannot get these right."""
    mean = pixels(body)[0]
    return chat_answer({"bright": mean > 127, "level": min(4, int(mean // 51))})


@pytest.fixture
def judge_for(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", KEY)

    def make(server, **kw) -> Judge:
        cfg = dict(mode="live", backend="openai", base_url=server.base_url + "/v1", model="qwen2.5-vl-7b",
                   cache_dir=str(tmp_path / "cache"), backoff_s=0.01, max_retries=2, timeout_s=2.0, parse_retries=1)
        cfg.update(kw)
        return Judge(**cfg)
    return make


def test_request_shape_answers_from_pixels_and_cache(judge_for, tmp_path):
    with FakeOpenAI(responder=looks) as srv:
        j = judge_for(srv, temperature=0.2, seed=7, max_tokens=99)
        res = j.ask_many([request(v) for v in (0, 60, 130, 250)])
        assert [(r.status, r.answer) for r in res] == [
            ("ok", {"bright": False, "level": 0}), ("ok", {"bright": False, "level": 1}),
            ("ok", {"bright": True, "level": 2}), ("ok", {"bright": True, "level": 4})]
        sent = srv.requests[0]
        assert sent["path"] == "/v1/chat/completions"
        assert sent["headers"]["authorization"] == f"Bearer {KEY}"
        body = sent["body"]
        assert body["model"] == "qwen2.5-vl-7b" and body["max_tokens"] == 99
        assert (body["temperature"], body["seed"]) == (0.2, 7) and "top_p" not in body
        assert body["messages"][0] == {"role": "system", "content": "You rate images."}
        assert [p["type"] for p in body["messages"][1]["content"]] == ["image_url", "text"]
        assert user_text(body).startswith("How bright is the image?") and '"level"' in user_text(body)
        assert body["response_format"] == {"type": "json_schema",
                                           "json_schema": {"name": "record_answer", "schema": SCHEMA}}
        again = j.ask(request(130))
        assert (again.status, again.cached, again.answer) == ("ok", True, {"bright": True, "level": 2})
        assert len(srv.requests) == 4
    entry = json.loads(j.cache_path(res[2].cache_key).read_text())
    assert entry["backend"] == "openai-chat" and entry["request"]["temperature"] == 0.2
    assert entry["request"]["seed"] == 7 and entry["usage"]["total_tokens"] == 18
    fp = j.fingerprint()
    assert fp["backend"] == "openai-chat" and fp["model"] == "qwen2.5-vl-7b"
    assert (fp["temperature"], fp["seed"], fp["structured_output"]) == (0.2, 7, "response_format:json_schema")
    # backend and sampling shape answers: they are in the cache key
    assert j.cache_key(request()) != j.model_copy(update={"backend": "anthropic"}).cache_key(request())
    assert j.cache_key(request()) != j.model_copy(update={"seed": 8}).cache_key(request())
    assert j.cache_key(request()) != j.model_copy(update={"top_p": 0.9}).cache_key(request())


def test_local_server_without_a_key(judge_for, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-travel")
    with FakeOpenAI(responder=looks) as srv:
        default = judge_for(srv, api_key_env=None)
        assert default.ask(request()).reason == "judge live but $OPENAI_API_KEY is not set"
        keyless = judge_for(srv, api_key_env="")
        assert keyless.available() == (True, "live") and keyless.ask(request()).status == "ok"
        assert "authorization" not in srv.requests[0]["headers"]
        assert "sk-ant" not in json.dumps(srv.requests)


def test_for_endpoint_switches_backend_and_key_variable(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-must-not-travel")
    monkeypatch.setenv("VLLM_KEY", KEY)
    base = Judge(mode="live", cache_dir=str(tmp_path), backoff_s=0.01, max_retries=0)
    with FakeOpenAI(responder=looks) as srv:
        ans = base.for_endpoint(backend="openai", base_url=srv.base_url + "/v1", model="qwen", api_key_env="VLLM_KEY",
                                temperature=0.0)
        assert (ans.backend, ans.model, ans.cache_dir, ans.temperature) == ("openai", "qwen", str(tmp_path), 0.0)
        assert ans.ask(request(10)).answer == {"bright": False, "level": 0}
        assert srv.requests[0]["headers"]["authorization"] == f"Bearer {KEY}"
        # no key variable named: the openai default, never the anthropic key
        assert base.for_endpoint(backend="openai", model="x").key_variable() == "OPENAI_API_KEY"
        assert base.for_endpoint(model="claude-other").key_variable() == "ANTHROPIC_API_KEY"


def test_rate_limit_5xx_and_timeouts_are_retried(judge_for):
    with FakeOpenAI([rate_limited(0.3), error(503), slow(1.0, chat_answer({"bright": True, "level": 4}))]) as srv:
        srv.responder = looks
        j = judge_for(srv, max_retries=3, timeout_s=0.4, backoff_s=0.001)
        t0 = time.perf_counter()
        r = j.ask(request(250))
        assert (r.status, r.answer, r.attempts) == ("ok", {"bright": True, "level": 4}, 4)
        assert time.perf_counter() - t0 >= 0.3  # the retry-after was honoured
    with FakeOpenAI([error(500)] * 5) as srv:
        r = judge_for(srv, max_retries=2).ask(request())
        assert (r.status, r.reason, r.attempts) == ("failed", "HTTP 500 after 2 retries", 3)


def test_client_error_fails_at_once_with_the_servers_message(judge_for):
    with FakeOpenAI([error(400, message="response_format json_schema is not supported")]) as srv:
        r = judge_for(srv).ask(request())
        assert (r.status, r.reason, r.attempts) == (
            "failed", "HTTP 400: response_format json_schema is not supported", 1)


@pytest.mark.parametrize("step, reason", [
    (chat_text("It is quite bright, I would say."), 'malformed answer: not a JSON answer (text reply: "It is'),
    (chat_text('I cannot rate this. If I could, I would answer {"bright": true, "level": 3}'),
     "malformed answer: not a JSON answer (text reply: \"I cannot rate this."),
    (chat_answer({"bright": True, "level": 3, "why": "x" * 5_000_000}),
     "malformed reply: HTTP 200 body of 5000"),
    (chat_answer({"bright": "yes", "level": 2}), "malformed answer: answer.bright should be boolean"),
    (chat_text('{"bright": true, "lev', finish_reason="length"),
     "malformed answer: not a JSON answer (text reply: \"{\\\"bright\\\": true, \\\"lev\") (cut at max_tokens)"),
    (completion(None), "malformed answer: no JSON object in the reply (no content)"),
    (raw_body('{"id": "x", "choices": [{"index": 0, "message": {"role": "assistant", "content": "{\\"brig'),
     "malformed reply: HTTP 200 body is not valid JSON (truncated?)"),
    (html_page(200), "malformed reply: HTTP 200 body is HTML, not JSON"),
    (raw_body('"ok"'), "malformed reply: JSON str \"ok\", not a chat completion"),
    (raw_body('{"choices": []}'), "malformed reply: no choices (choices: list [])"),
    (raw_body('{"choices": null}'), "malformed reply: no choices (choices: NoneType null)"),
    (raw_body('{"choices": ["a"]}'), "malformed reply: choice without a message (str \"a\")"),
    (raw_body('{"object": "error", "message": "model not loaded"}'), "malformed reply: no choices"),
    (raw_body('{"error": {"message": "engine dead"}}'), "malformed reply: HTTP 200 carrying an error: engine dead"),
    (raw_body(""), "malformed reply: HTTP 200 with an empty body"),
    (completion(None, refusal="I can't rate that."), "refused: I can't rate that."),
    (completion("", finish_reason="content_filter"), "refused (content_filter)"),
])
def test_malformed_output_is_a_counted_failure(judge_for, step, reason):
    with FakeOpenAI([step]) as srv:
        j = judge_for(srv, parse_retries=0)
        r = j.ask(request())
        assert (r.status, r.answer, r.attempts) == ("failed", None, 1)
        assert r.reason.startswith(reason), r.reason
        assert evaluator_failures([r])["evaluator_failures"] == 1


def test_malformed_output_is_reasked_with_what_was_wrong(judge_for):
    with FakeOpenAI([chat_answer({"bright": True, "level": 9}), chat_answer({"bright": True, "level": 4})]) as srv:
        r = judge_for(srv).ask(request())
        assert (r.status, r.answer, r.attempts) == ("ok", {"bright": True, "level": 4}, 2)
        msgs = srv.bodies[1]["messages"]
        assert [m["role"] for m in msgs] == ["system", "user", "assistant", "user"]
        assert msgs[2]["content"] == json.dumps({"bright": True, "level": 9})
        assert "answer.level = 9 above maximum 4" in msgs[3]["content"]


def test_answers_come_from_content_as_a_whole_or_tool_calls(judge_for):
    """The content as a whole (a fence alone only with structured_output=prompt) or a tool call's arguments;
    never a JSON object in prose."""
    call = [{"id": "c1", "type": "function", "function": {"name": "record_answer",
                                                          "arguments": '{"bright": false, "level": 1}'}}]
    fenced = chat_text('```json\n{"bright": true, "level": 3}\n```')
    with FakeOpenAI([chat_text('Sure.\n```json\n{"bright": true, "level": 3}\n```'), fenced,
                     completion(None, finish_reason="tool_calls", tool_calls=call),
                     chat_text(' {"bright": true, "level": 2, "extra": "' + "y" * 100 + '"}\n'), fenced]) as srv:
        j = judge_for(srv, parse_retries=0)
        assert j.ask(request(1)).status == "failed"  # prose around a fence
        assert j.ask(request(2)).status == "failed"  # a fence under json_schema: not the schema's content
        assert j.ask(request(3)).answer == {"bright": False, "level": 1}
        assert j.ask(request(4)).answer == {"bright": True, "level": 2}  # fields the schema lacks are dropped
        assert judge_for(srv, parse_retries=0, structured_output="prompt").ask(request(5)).answer == {
            "bright": True, "level": 3}


@pytest.mark.parametrize("mode, expected", [("json_object", {"type": "json_object"}), ("prompt", None)])
def test_structured_output_modes(judge_for, mode, expected):
    with FakeOpenAI(responder=looks) as srv:
        assert judge_for(srv, structured_output=mode).ask(request()).status == "ok"
        assert srv.bodies[0].get("response_format") == expected


def test_whole_request_timeout_and_deadline(judge_for):
    with FakeOpenAI([drip(0.05, chat_answer({"bright": True, "level": 4}))]) as srv:
        t0 = time.perf_counter()
        r = judge_for(srv, timeout_s=0.5, max_retries=0).ask(request())
        # ~15 s with a per-read timeout; slack for a loaded CI machine
        assert (r.status, r.reason) == ("failed", "timeout after 0 retries") and time.perf_counter() - t0 < 4.0
    with FakeOpenAI([hang()] * 30) as srv:
        t0 = time.perf_counter()
        r = judge_for(srv, timeout_s=0.3, max_retries=20, deadline_s=0.8, breaker_threshold=0).ask(request())
        # 21 timeouts (6.3 s) without the deadline
        assert r.status == "failed" and r.reason.startswith("deadline 0.8s passed") and r.attempts <= 4
        assert time.perf_counter() - t0 < 5.0


def test_connection_refused_is_retried_then_counted(tmp_path):
    srv = FakeOpenAI()
    url = srv.base_url
    srv.stop()
    j = Judge(mode="live", backend="openai", base_url=url + "/v1", api_key_env="", cache_dir=str(tmp_path),
              backoff_s=0.001, max_retries=2, timeout_s=1.0)
    r = j.ask(request())
    assert (r.status, r.reason, r.attempts) == ("failed", "connection error after 2 retries", 3)


def test_concurrency_bound_and_order(judge_for):
    with FakeOpenAI(responder=lambda body: {**looks(body), "sleep": 0.1}) as srv:
        j = judge_for(srv, max_concurrency=3)
        res = j.ask_many([request(v) for v in range(0, 256, 32)])
        assert [r.answer["level"] for r in res] == [min(4, v // 51) for v in range(0, 256, 32)]
        assert srv.max_in_flight == 3


def test_key_never_leaks(judge_for, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeOpenAI([error(401, message=f"bad key {KEY}"), error(500), chat_answer({"bright": True, "level": 4}),
                     raw_body(f'{{"error": {{"message": "key {KEY} revoked"}}}}')]) as srv:
        j = judge_for(srv, max_retries=1, parse_retries=0)
        res = [j.ask(request(1)), j.ask(request(2)), j.ask(request(3))]
        assert [r.status for r in res] == ["failed", "ok", "failed"]
        assert res[0].reason == "HTTP 401: bad key ***" and "***" in res[2].reason
    files = [p for p in (tmp_path / "cache").rglob("*") if p.is_file()]
    blob = json.dumps([r.to_record() for r in res]) + repr(j) + json.dumps(j.fingerprint()) + json.dumps(j.state())
    blob += caplog.text + "".join(p.read_text() for p in files)
    assert files and KEY not in blob and KEY[:16] not in blob


def test_config_builds_the_judge_from_the_environment(tmp_path, monkeypatch):
    from bench_resources.config import build_judge, build_resources

    for var in ("BENCH_JUDGE_MODE", "BENCH_JUDGE_KEY_ENV", "BENCH_JUDGE_BASE_URL", "BENCH_JUDGE_MODEL",
                "ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("BENCH_JUDGE_BACKEND", "openai")
    monkeypatch.setenv("BENCH_JUDGE_MODEL", "Qwen/Qwen2.5-VL-7B-Instruct")
    monkeypatch.setenv("BENCH_JUDGE_BASE_URL", "http://127.0.0.1:8000/v1")
    monkeypatch.setenv("BENCH_JUDGE_KEY_ENV", "")
    monkeypatch.setenv("BENCH_JUDGE_TIMEOUT_S", "3")
    monkeypatch.setenv("BENCH_JUDGE_DEADLINE_S", "20")
    monkeypatch.setenv("BENCH_JUDGE_RETRIES", "2")
    monkeypatch.setenv("BENCH_JUDGE_TEMPERATURE", "0")
    j = build_judge(str(tmp_path / "jc"))
    assert (j.mode, j.backend, j.model, j.base_url, j.key_variable()) == (
        "live", "openai", "Qwen/Qwen2.5-VL-7B-Instruct", "http://127.0.0.1:8000/v1", "")  # keyless local server
    assert (j.timeout_s, j.deadline_s, j.max_retries, j.temperature) == (3.0, 20.0, 2, 0.0)
    monkeypatch.delenv("BENCH_JUDGE_KEY_ENV")
    assert build_judge(str(tmp_path / "jc")).mode == "off"  # OPENAI_API_KEY is not set, no cache
    monkeypatch.setenv("BENCH_JUDGE_RETRIES", "many")
    with pytest.raises(ValueError, match="BENCH_JUDGE_RETRIES='many'"):
        build_judge(str(tmp_path / "jc"))
    for var in ("BENCH_JUDGE_BACKEND", "BENCH_JUDGE_MODEL", "BENCH_JUDGE_BASE_URL", "BENCH_JUDGE_TIMEOUT_S",
                "BENCH_JUDGE_DEADLINE_S", "BENCH_JUDGE_RETRIES", "BENCH_JUDGE_TEMPERATURE"):
        monkeypatch.delenv(var)
    default = build_resources(store_root=str(tmp_path / "store"))["judge"]
    assert (default.mode, default.backend, default.model, default.timeout_s) == (
        "off", "anthropic", "claude-sonnet-4-6", 60.0)
