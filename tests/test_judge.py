"""The Judge end to end against a real local HTTP server speaking the Messages API (tests/support/fake_anthropic.py)."""
import base64
import json
import logging
import threading
import time

import numpy as np
import pytest
from dagster import asset, materialize

from bench_resources.judge import (Judge, JudgeRequest, JudgeResult, extract_json, png_bytes, structured_json,
                                   validate_answer)
from tests.support.fake_anthropic import (FakeAnthropic, error, fake_anthropic, malformed_tool, not_json,  # noqa: F401
                                  rate_limited, refusal, server_error, slow, text_answer, tool_answer)

SECRET = "sk-ant-test-SECRET-do-not-leak-0123456789"
SCHEMA = {"type": "object",
          "properties": {"same": {"type": "integer", "enum": [0, 1]},
                         "sim": {"type": "number", "minimum": 0, "maximum": 1},
                         "why": {"type": "string"}},
          "required": ["same", "sim"]}
GOOD = {"same": 1, "sim": 0.8}


def image(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 255, (8, 8, 3), dtype=np.uint8)


def request(text: str = "compare", image_seed: int = 0, **kw) -> JudgeRequest:
    return JudgeRequest("pairwise_identity", kw.pop("version", "v1"), "You are a careful judge.", text, SCHEMA,
                        (png_bytes(image(image_seed)),), **kw)


@pytest.fixture
def judge_for(tmp_path, monkeypatch):
    """Judge(mode=live) pointed at a fake server, a tmp cache and tiny backoffs."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    def make(server: FakeAnthropic, **kw) -> Judge:
        cfg = dict(mode="live", base_url=server.base_url, cache_dir=str(tmp_path / "cache"), backoff_s=0.01,
                   max_retries=2, timeout_s=2.0, parse_retries=1)
        cfg.update(kw)
        return Judge(**cfg)
    return make


def auth_key(recorded: dict) -> str:
    """The key as sent: ``x-api-key`` (SDK 1.x) or ``Authorization: Bearer`` (SDK 2.x)."""
    h = recorded["headers"]
    return h.get("x-api-key") or h.get("authorization", "").removeprefix("Bearer ")


def cache_files(tmp_path):
    return sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file())


# ------------------------------------------------------------------------------------------------ happy path

def test_success_request_shape_and_cache_hit(judge_for, tmp_path):
    with FakeAnthropic([tool_answer(GOOD)]) as srv:
        j = judge_for(srv, max_tokens=321, model="claude-test-model")
        r1 = j.ask(request())
        assert (r1.status, r1.answer, r1.reason, r1.cached, r1.attempts) == ("ok", GOOD, None, False, 1)
        assert (r1.model, r1.prompt_id, r1.prompt_version) == ("claude-test-model", "pairwise_identity", "v1")
        assert len(r1.cache_key) == 64 and r1.cache_key == j.cache_key(request())

        sent = srv.requests[0]
        assert sent["path"] == "/v1/messages"
        assert auth_key(sent) == SECRET  # the key travels in the auth header (SDK 2.x: bearer), and only there
        body = sent["body"]
        assert body["model"] == "claude-test-model" and body["max_tokens"] == 321
        assert "temperature" not in body  # API 2026-10-21 rejects sampling parameters
        assert body["system"] == "You are a careful judge."
        assert body["tools"] == [{"name": "record_answer", "input_schema": SCHEMA,
                                  "description": body["tools"][0]["description"]}]
        assert body["tool_choice"] == {"type": "tool", "name": "record_answer", "disable_parallel_tool_use": True}
        content = body["messages"][0]["content"]
        assert [c["type"] for c in content] == ["image", "text"]  # images before the text
        assert content[0]["source"]["media_type"] == "image/png"
        assert base64.b64decode(content[0]["source"]["data"]) == png_bytes(image(0))
        assert content[1]["text"] == "compare"

        # second identical ask: served from disk, no HTTP request
        r2 = j.ask(request())
        assert (r2.status, r2.answer, r2.cached, r2.attempts) == ("ok", GOOD, True, 0)
        assert len(srv.requests) == 1
        assert j.stats() == {"network_calls": 1, "cache_hits": 1, "failures": 0, "skipped": 0}

    # the cache entry: content-addressed path, parsed answer + metadata, no temp files left behind
    files = cache_files(tmp_path)
    assert files == [tmp_path / "cache" / r1.cache_key[:2] / f"{r1.cache_key}.json"]
    entry = json.loads(files[0].read_text())
    assert entry["answer"] == GOOD and entry["model"] == "claude-test-model"
    assert (entry["prompt_id"], entry["prompt_version"]) == ("pairwise_identity", "v1")
    assert entry["usage"]["input_tokens"] == 10 and entry["created_at"].endswith("+00:00")
    assert entry["request"]["image_sha256"] and entry["request"]["text"] == "compare"


def test_explicit_temperature_is_sent(judge_for):
    with FakeAnthropic([tool_answer(GOOD)]) as srv:
        assert judge_for(srv, temperature=0.0).ask(request()).status == "ok"
        assert srv.requests[0]["body"]["temperature"] == 0.0


def test_replay_and_off_modes(judge_for, tmp_path):
    with FakeAnthropic([tool_answer(GOOD)]) as srv:
        judge_for(srv).ask(request())
        replay = judge_for(srv, mode="replay")
        hit = replay.ask(request())
        assert (hit.status, hit.answer, hit.cached) == ("ok", GOOD, True)
        miss = replay.ask(request("another question"))
        assert (miss.status, miss.answer, miss.reason) == ("skipped", None, "not in judge cache (replay mode)")
        off = judge_for(srv, mode="off").ask(request())
        assert (off.status, off.answer, off.reason, off.cached) == ("skipped", None, "judge off", False)
        assert len(srv.requests) == 1  # neither replay nor off ever calls the API
    assert replay.available() == (True, "replay")
    assert Judge(mode="off").available() == (False, "judge off")


def test_text_replies_are_never_answers(judge_for, fake_anthropic, tmp_path):  # noqa: F811 (the fixture)
    """Only the tool input is an answer: a refusal that shows an example answer, or JSON in prose, is a counted
    failure with its text kept (bounded), re-asked once, never cached."""
    refusal_text = ("I'm sorry, I can't evaluate this image. If I could, my answer would follow this format: "
                    '{"same": 1, "sim": 0.5}')
    fake_anthropic.push(text_answer(refusal_text), text_answer(refusal_text),
                        text_answer('My verdict is {"same": 1, "sim": 0.9} final.' + "x" * 5000),
                        tool_answer({"same": 0, "sim": 0.1}))
    j = judge_for(fake_anthropic)
    r = j.ask(request("a"))
    assert (r.status, r.answer, r.attempts) == ("failed", None, 2)
    assert "no record_answer tool call" in r.reason and "I'm sorry, I can't evaluate" in r.reason
    b = j.ask(request("b"))  # text, then a tool call on the re-ask: the tool input is the answer
    assert (b.status, b.answer) == ("ok", {"same": 0, "sim": 0.1})
    assert len(fake_anthropic.requests) == 4
    assert len(r.reason) < 700  # the 5 KB of text after the JSON is never copied whole into a reason
    assert [p.name for p in cache_files(tmp_path) if p.suffix == ".json"] == [f"{b.cache_key}.json"]


# ------------------------------------------------------------------------------------------------ retries

def test_rate_limit_honours_retry_after(judge_for):
    with FakeAnthropic([rate_limited(0.3), tool_answer(GOOD)]) as srv:
        j = judge_for(srv, backoff_s=0.001)  # the wait can only come from retry-after
        t0 = time.perf_counter()
        r = j.ask(request())
        elapsed = time.perf_counter() - t0
        assert (r.status, r.answer, r.attempts) == ("ok", GOOD, 2) and len(srv.requests) == 2
        assert 0.3 <= elapsed < 2.0


def test_retry_after_is_capped(judge_for):
    with FakeAnthropic([rate_limited(3600), tool_answer(GOOD)]) as srv:
        t0 = time.perf_counter()
        r = judge_for(srv, max_backoff_s=0.05).ask(request())
        assert r.status == "ok" and time.perf_counter() - t0 < 2.0


def test_server_errors_are_bounded(judge_for, tmp_path):
    with FakeAnthropic([server_error(500)] * 10) as srv:
        j = judge_for(srv, max_retries=3)
        r = j.ask(request())
        assert (r.status, r.answer, r.reason) == ("failed", None, "HTTP 500 after 3 retries")
        assert r.attempts == 4 and len(srv.requests) == 4  # max_retries + 1
        assert j.stats()["failures"] == 1 and j.stats()["network_calls"] == 4
    assert cache_files(tmp_path) == []  # failures are not cached


def test_overloaded_then_success(judge_for):
    with FakeAnthropic([server_error(529), server_error(503), tool_answer(GOOD)]) as srv:
        r = judge_for(srv).ask(request())
        assert (r.status, r.answer, r.attempts) == ("ok", GOOD, 3)


def test_timeout_retried_then_failed(judge_for):
    with FakeAnthropic([slow(1.5, tool_answer(GOOD))] * 2) as srv:
        t0 = time.perf_counter()
        r = judge_for(srv, timeout_s=0.3, max_retries=1).ask(request())
        assert (r.status, r.reason, r.attempts) == ("failed", "timeout after 1 retries", 2)
        assert len(srv.requests) == 2 and time.perf_counter() - t0 < 1.5


def test_connection_error_retried(tmp_path, monkeypatch):
    srv = FakeAnthropic()
    url = srv.base_url
    srv.stop()  # the port was bound, never served, now closed: connections are refused
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    j = Judge(mode="live", base_url=url, cache_dir=str(tmp_path / "cache"), backoff_s=0.001, max_retries=2,
              timeout_s=1.0)
    r = j.ask(request())
    assert (r.status, r.reason, r.attempts) == ("failed", "connection error after 2 retries", 3)


def test_client_errors_fail_immediately(judge_for):
    with FakeAnthropic([error(400, message="tools.0.input_schema: bad"), tool_answer(GOOD)]) as srv:
        r = judge_for(srv).ask(request())
        assert r.status == "failed" and r.reason == "HTTP 400: tools.0.input_schema: bad"
        assert r.attempts == 1 and len(srv.requests) == 1


# ------------------------------------------------------------------------------------------------ answers

def test_malformed_answers_reasked_then_failed(judge_for, tmp_path):
    with FakeAnthropic([malformed_tool({"same": 1}), not_json(), tool_answer(GOOD)]) as srv:
        j = judge_for(srv, parse_retries=1)
        r = j.ask(request())
        assert r.status == "failed" and r.answer is None and r.attempts == 2 and len(srv.requests) == 2
        assert r.reason == ('malformed answer: no record_answer tool call in the reply '
                            '(text reply: "They look about the same to me.")')
        # the re-ask shows the model its bad tool call and what was wrong with it
        second = srv.requests[1]["body"]["messages"]
        assert [m["role"] for m in second] == ["user", "assistant", "user"]
        assert second[1]["content"] == [{"type": "tool_use", "id": "toolu_fake", "name": "record_answer",
                                         "input": {"same": 1}}]
        feedback = second[2]["content"][0]
        assert feedback["type"] == "tool_result" and feedback["is_error"] is True
        assert feedback["tool_use_id"] == "toolu_fake" and "answer.sim" in feedback["content"]
    assert cache_files(tmp_path) == []


def test_malformed_then_valid_is_ok_and_cached(judge_for, tmp_path):
    with FakeAnthropic([malformed_tool({"same": 1, "sim": 7}), tool_answer(GOOD)]) as srv:
        r = judge_for(srv, parse_retries=2).ask(request())
        assert (r.status, r.answer, r.attempts) == ("ok", GOOD, 2)
        assert "above maximum" in srv.requests[1]["body"]["messages"][2]["content"][0]["content"]
    assert len(cache_files(tmp_path)) == 1


@pytest.mark.parametrize("bad, fragment", [({"same": 1, "sim": 7}, "answer.sim = 7 above maximum 1"),
                                           ({"same": 2, "sim": 0.5}, "answer.same = 2 not in [0, 1]"),
                                           ({"same": True, "sim": 0.5}, "answer.same should be integer"),
                                           ({"same": 1, "sim": "high"}, "answer.sim should be number")])
def test_invalid_answers_fail_with_reason(judge_for, bad, fragment):
    with FakeAnthropic([malformed_tool(bad)] * 3) as srv:
        r = judge_for(srv, parse_retries=2).ask(request())
        assert r.status == "failed" and r.reason.startswith(f"malformed answer: {fragment}")
        assert r.attempts == 3 and len(srv.requests) == 3


def test_refusal_is_a_failure(judge_for, tmp_path):
    with FakeAnthropic([refusal(), tool_answer(GOOD)]) as srv:
        r = judge_for(srv).ask(request())
        assert (r.status, r.answer, r.reason, r.attempts) == ("failed", None, "refused", 1)
        assert len(srv.requests) == 1
    assert cache_files(tmp_path) == []


def test_validate_and_extract_helpers():
    schema = {"type": "object", "required": ["xs"],
              "properties": {"xs": {"type": "array", "minItems": 1, "items": {"type": "integer", "minimum": 0}},
                             "tag": {"type": ["string", "null"]}}}
    assert validate_answer({"xs": [1, 2], "tag": None}, schema) is None
    assert validate_answer({"xs": [1.0]}, schema) is None  # JSON Schema: 1.0 is an integer
    assert validate_answer({"xs": []}, schema) == "answer.xs has 0 items, fewer than 1"
    assert validate_answer({"xs": [1, -1]}, schema) == "answer.xs[1] = -1 below minimum 0"
    assert validate_answer({"xs": [1], "tag": 3}, schema).startswith("answer.tag should be string|null")
    assert validate_answer([1], schema).startswith("answer should be object")
    assert structured_json('  {"a": 1}\n') == ({"a": 1}, None)
    assert structured_json('Sure: {"a": 1}')[0] is None  # JSON inside prose is not an answer
    assert structured_json('```json\n{"a": 2}\n```', allow_fence=True)[0] == {"a": 2}
    assert structured_json('```json\n{"a": 2}\n```')[0] is None
    assert extract_json("no json here") is None
    assert extract_json("{not json} then {\"a\": 1}") == {"a": 1}
    assert extract_json("```json\n{\"a\": 2}\n```\n{\"a\": 3}") == {"a": 2}


# ------------------------------------------------------------------------------------------------ keys & secrets

def test_missing_key_is_skipped_naming_the_variable(tmp_path, monkeypatch):
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    j = Judge(mode="live", api_key_env="MY_JUDGE_KEY", cache_dir=str(tmp_path / "cache"))
    r = j.ask(request())
    assert (r.status, r.reason) == ("skipped", "judge live but $MY_JUDGE_KEY is not set")
    assert j.available() == (False, "judge live but $MY_JUDGE_KEY is not set")
    assert j.stats()["skipped"] == 1
    monkeypatch.setenv("MY_JUDGE_KEY", "x")
    assert j.available() == (True, "live")


def test_key_never_leaks(judge_for, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # includes the SDK's and httpx's debug logging
    script = [server_error(500), tool_answer(GOOD),
              error(401, message=f"invalid x-api-key {SECRET}"),  # a server that echoes the key back
              rate_limited(0.01), malformed_tool({}), not_json()]
    with FakeAnthropic(script) as srv:
        j = judge_for(srv, max_retries=1)
        results = [j.ask(request("a")), j.ask(request("b")), j.ask(request("c"))]
        assert [r.status for r in results] == ["ok", "failed", "failed"]
        assert results[1].reason == "HTTP 401: invalid x-api-key ***"
        assert all(auth_key(r) == SECRET for r in srv.requests)
        # nowhere else in what was sent: other headers, body
        assert all(SECRET not in json.dumps(r["body"]) and
                   SECRET not in json.dumps({k: v for k, v in r["headers"].items()
                                             if k not in ("authorization", "x-api-key")}) for r in srv.requests)
    blob = json.dumps([r.to_record() for r in results]) + repr(j) + str(j) + json.dumps(j.fingerprint())
    blob += json.dumps(j.stats()) + caplog.text + "".join(f.read_text() for f in cache_files(tmp_path))
    assert SECRET not in blob and SECRET[:20] not in blob
    assert "judge" in caplog.text  # the judge did log (retries, failures): the check above was not vacuous


def test_cache_key_covers_everything_that_shapes_the_answer():
    j = Judge(mode="off")
    base = j.cache_key(request())
    assert base == j.cache_key(request())  # deterministic, including the PNG encoding
    assert base != j.cache_key(request(image_seed=1))  # different pixels
    assert base != j.cache_key(request(version="v2"))
    assert base != j.cache_key(request("compare "))
    assert base != j.cache_key(request(params={"k": 1}))
    assert base != Judge(mode="off", model="other").cache_key(request())
    assert base != Judge(mode="off", temperature=0.0).cache_key(request())
    assert base != Judge(mode="off", max_tokens=7).cache_key(request())
    assert base == Judge(mode="live", max_retries=9, cache_dir="/elsewhere").cache_key(request())  # operational
    two = JudgeRequest("p", "v1", "s", "t", SCHEMA, (png_bytes(image(0)), png_bytes(image(1))))
    swapped = JudgeRequest("p", "v1", "s", "t", SCHEMA, (png_bytes(image(1)), png_bytes(image(0))))
    assert j.cache_key(two) != j.cache_key(swapped)  # image order matters


def test_png_bytes_is_deterministic_and_lossless():
    from io import BytesIO

    from PIL import Image
    img = image(3)
    assert png_bytes(img) == png_bytes(img.copy())
    assert np.array_equal(np.asarray(Image.open(BytesIO(png_bytes(img)))), img)
    with pytest.raises(ValueError):
        png_bytes(img.astype(np.float32))


# ------------------------------------------------------------------------------------------------ concurrency

def test_ask_many_order_and_concurrency(judge_for):
    def respond(body):
        text = body["messages"][0]["content"][-1]["text"]
        return slow(0.15, tool_answer({"same": 1, "sim": int(text) / 10}))

    with FakeAnthropic(responder=respond) as srv:
        j = judge_for(srv, max_concurrency=3)
        j.ask(request("4"))  # a cache hit in the middle of the batch
        res = j.ask_many([request(str(i)) for i in range(10)])
        assert [r.answer["sim"] for r in res] == [i / 10 for i in range(10)]
        assert [r.cached for r in res] == [i == 4 for i in range(10)]
        assert srv.max_in_flight == 3 and len(srv.requests) == 10
        assert j.ask_many([]) == []


def test_concurrency_bound_holds_across_callers(judge_for):
    """Two threads each running ask_many (as two Dagster steps in one process would) share the bound."""
    with FakeAnthropic(responder=lambda body: slow(0.1, tool_answer(GOOD))) as srv:
        j = judge_for(srv, max_concurrency=2)
        batches = [[request(f"{t}-{i}") for i in range(4)] for t in range(2)]
        threads = [threading.Thread(target=j.ask_many, args=(b,)) for b in batches]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(srv.requests) == 8 and srv.max_in_flight == 2


def test_ask_many_asks_repeats_once(judge_for):
    with FakeAnthropic(responder=lambda body: tool_answer(GOOD)) as srv:
        j = judge_for(srv)
        res = j.ask_many([request("a"), request("b"), request("a"), request("a")])
        assert len(srv.requests) == 2 and [r.cached for r in res] == [False, False, True, True]
        assert all(r.answer == GOOD for r in res) and len({r.cache_key for r in res}) == 2
        assert j.stats() == {"network_calls": 2, "cache_hits": 2, "failures": 0, "skipped": 0}


def test_concurrent_writers_leave_one_valid_entry(judge_for, tmp_path):
    with FakeAnthropic(responder=lambda body: slow(0.05, tool_answer(GOOD))) as srv:
        j = judge_for(srv, max_concurrency=8)
        results: list = []
        threads = [threading.Thread(target=lambda: results.append(j.ask(request()))) for _ in range(8)]
        for t in threads:  # the same question eight times at once, from independent callers
            t.start()
        for t in threads:
            t.join()
        assert len(results) == 8 and all(r.status == "ok" and r.answer == GOOD for r in results)
    files = cache_files(tmp_path)
    assert len(files) == 1 and json.loads(files[0].read_text())["answer"] == GOOD


def test_stats_survive_dagster_resource_copies(judge_for):
    """Dagster hands assets a re-initialised copy of the resource; the runner reads stats() on its own object."""
    with FakeAnthropic([tool_answer(GOOD)]) as srv:
        j = judge_for(srv)

        @asset
        def judged(judge: Judge) -> int:
            return len(judge.ask_many([request(), request()]))

        assert materialize([judged], resources={"judge": j}).success
        assert j.stats() == {"network_calls": 1, "cache_hits": 1, "failures": 0, "skipped": 0}


def test_result_record_and_fingerprint(judge_for):
    r = JudgeResult("ok", GOOD, None, "k" * 64, False, "m", "p", "v1", 1)
    assert json.loads(json.dumps(r.to_record())) == {
        "status": "ok", "answer": GOOD, "reason": None, "cache_key": "k" * 64, "cached": False, "model": "m",
        "prompt_id": "p", "prompt_version": "v1", "attempts": 1}
    fp = Judge(mode="replay", model="claude-x", max_tokens=99).fingerprint()
    assert fp["model"] == "claude-x" and fp["max_tokens"] == 99
    # a replayed answer is the live one: the mode must not split protocol digests
    assert fp == Judge(mode="live", model="claude-x", max_tokens=99).fingerprint() and "mode" not in fp
    assert "cache_dir" not in fp and "api_key_env" not in fp
