"""The Judge end to end against a real local HTTP server speaking the Messages API."""
import json
import logging
import time

import numpy as np
import pytest

from bench_resources.judge import Judge, JudgeRequest, png_bytes
from tests.fake_anthropic import FakeAnthropic, error, slow, text_answer, tool_answer

SECRET = "sk-test-SECRET-do-not-leak-123"
SCHEMA = {"type": "object", "properties": {"same": {"type": "integer", "enum": [0, 1]},
                                           "sim": {"type": "number", "minimum": 0, "maximum": 1}},
          "required": ["same", "sim"]}


def request(text="compare", image_seed=0):
    img = np.random.default_rng(image_seed).integers(0, 255, (8, 8, 3), dtype=np.uint8)
    return JudgeRequest("pairwise_identity", "v1", "You are a careful judge.", text, SCHEMA, (png_bytes(img),))


@pytest.fixture
def judge_for(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    def make(server, **kw):
        cfg = dict(mode="live", base_url=server.base_url, cache_dir=str(tmp_path / "cache"), backoff_s=0.01,
                   max_retries=2, timeout_s=2.0, parse_retries=1)
        cfg.update(kw)
        return Judge(**cfg)
    return make


def test_success_then_cache_hit(judge_for, tmp_path):
    with FakeAnthropic([tool_answer({"same": 1, "sim": 0.8})]) as srv:
        j = judge_for(srv)
        r1 = j.ask(request())
        assert r1.status == "ok" and r1.answer == {"same": 1, "sim": 0.8} and not r1.cached
        r2 = j.ask(request())
        assert r2.status == "ok" and r2.cached and r2.answer == r1.answer
        assert len(srv.requests) == 1
        sent = srv.requests[0]
        # the key travels only in the auth header (x-api-key or bearer, depending on the SDK version)
        assert SECRET in (sent["headers"].get("x-api-key"), sent["headers"].get("authorization", "")[7:])
        content = sent["body"]["messages"][0]["content"]
        assert content[0]["type"] == "image" and content[-1]["text"] == "compare"
        assert sent["body"]["tool_choice"] == {"type": "tool", "name": "record_answer"}
        # replay mode reads the same cache; a miss is skipped, not a zero
        rp = judge_for(srv, mode="replay")
        assert rp.ask(request()).answer == {"same": 1, "sim": 0.8}
        miss = rp.ask(request("other"))
        assert miss.status == "skipped" and "replay" in miss.reason and len(srv.requests) == 1


def test_text_json_answer_accepted(judge_for):
    with FakeAnthropic([text_answer('Here:\n```json\n{"same": 0, "sim": 0.1}\n```')]) as srv:
        r = judge_for(srv).ask(request())
        assert r.status == "ok" and r.answer == {"same": 0, "sim": 0.1}


def test_rate_limit_honours_retry_after(judge_for):
    with FakeAnthropic([error(429, {"retry-after": "0.3"}), tool_answer({"same": 0, "sim": 0.2})]) as srv:
        t0 = time.perf_counter()
        r = judge_for(srv).ask(request())
        assert r.status == "ok" and r.attempts == 2 and time.perf_counter() - t0 >= 0.3


def test_server_errors_bounded(judge_for):
    with FakeAnthropic([error(500)] * 5) as srv:
        r = judge_for(srv).ask(request())
        assert r.status == "failed" and r.reason == "HTTP 500 after 2 retries" and len(srv.requests) == 3


def test_timeout_retried_then_failed(judge_for):
    ok = tool_answer({"same": 1, "sim": 1.0})
    with FakeAnthropic([slow(1.5, ok), slow(1.5, ok)]) as srv:
        r = judge_for(srv, timeout_s=0.5, max_retries=1).ask(request())
        assert r.status == "failed" and r.reason == "timeout after 1 retries" and r.attempts == 2


def test_malformed_reasked_then_failed(judge_for):
    with FakeAnthropic([tool_answer({"same": 1}), text_answer("I think they match.")]) as srv:
        j = judge_for(srv)
        r = j.ask(request())
        assert r.status == "failed" and r.reason.startswith("malformed answer: no JSON object") and r.attempts == 2
        assert j._cache_get(r.cache_key) is None  # failures are not cached
    with FakeAnthropic([tool_answer({"same": 1, "sim": 7})] * 2) as srv:
        r = judge_for(srv).ask(request())
        assert r.status == "failed" and "above maximum" in r.reason


def test_refusal_and_client_error(judge_for):
    with FakeAnthropic([text_answer("I can't help with that.", stop_reason="refusal"), error(400)]) as srv:
        j = judge_for(srv)
        assert j.ask(request()).reason == "refused"
        r = j.ask(request("x"))
        assert r.status == "failed" and r.reason.startswith("HTTP 400") and len(srv.requests) == 2


def test_off_and_missing_key(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert Judge(mode="off").ask(request()).status == "skipped"
    r = Judge(mode="live", cache_dir=str(tmp_path)).ask(request())
    assert r.status == "skipped" and "$ANTHROPIC_API_KEY is not set" in r.reason
    assert Judge(mode="live").available() == (False, "judge live but $ANTHROPIC_API_KEY is not set")


def test_concurrency_limit_and_order(judge_for):
    def respond(body):
        text = body["messages"][0]["content"][-1]["text"]
        return slow(0.2, tool_answer({"same": 1, "sim": int(text) / 10}))
    with FakeAnthropic(responder=respond) as srv:
        j = judge_for(srv, max_concurrency=2)
        res = j.ask_many([request(str(i)) for i in range(6)])
        assert [r.answer["sim"] for r in res] == [i / 10 for i in range(6)]
        assert srv.max_in_flight == 2


def test_cache_key_covers_images_and_prompt_version(judge_for):
    j = Judge(mode="off")
    base = request()
    assert j.cache_key(base) != j.cache_key(request(image_seed=1))
    assert j.cache_key(base) != j.cache_key(JudgeRequest(base.prompt_id, "v2", base.system, base.text, SCHEMA,
                                                         base.images))
    assert j.cache_key(base) == j.cache_key(request())


def test_key_never_leaks(judge_for, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    with FakeAnthropic([error(500), tool_answer({"same": 1, "sim": 0.5}), error(400)]) as srv:
        j = judge_for(srv)
        results = [j.ask(request()), j.ask(request("b"))]
        blob = json.dumps([r.to_record() for r in results]) + repr(j) + json.dumps(j.fingerprint())
        blob += caplog.text
        for f in (tmp_path / "cache").rglob("*"):
            if f.is_file():
                blob += f.read_text()
        assert SECRET not in blob
