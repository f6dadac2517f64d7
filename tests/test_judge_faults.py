"""Every reply the Messages API can send is an answer or a counted failure with its reason; time is bounded per
request and per question. Real HTTP against tests/support/fake_anthropic.py on 127.0.0.1."""
import json
import time

import anthropic  # noqa: F401 - imported up front: a cold import takes seconds and must not count in timings
import numpy as np
import pytest
from dagster import AssetExecutionContext, MaterializeResult, asset, materialize

from bench_resources.judge import Judge, JudgeRequest, JudgeResult, evaluator_failures, png_bytes, summarize_reasons
from tests.support.fake_anthropic import (FakeAnthropic, drip, hang, html_page, raw_body, server_error, tool_answer,
                                  truncated)

SECRET = "sk-ant-faults-SECRET-0123456789"
SCHEMA = {"type": "object", "required": ["score"],
          "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 4}}}


def request(text: str = "rate it", seed: int = 0) -> JudgeRequest:
    img = np.random.default_rng(seed).integers(0, 255, (6, 6, 3), dtype=np.uint8)
    return JudgeRequest("faults", "v1", "judge", text, SCHEMA, (png_bytes(img),))


@pytest.fixture
def judge_for(tmp_path, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)

    def make(server, **kw) -> Judge:
        cfg = dict(mode="live", base_url=server.base_url, cache_dir=str(tmp_path / "cache"), backoff_s=0.01,
                   max_retries=1, timeout_s=2.0, parse_retries=0)
        cfg.update(kw)
        return Judge(**cfg)
    return make


def message(**overrides) -> dict:
    body = tool_answer({"score": 3})["body"]
    return {"status": 200, "body": {**body, **overrides}}


# (step, fragment of the failure reason): every kind of HTTP 200 body that is not a usable reply
BAD_REPLIES = {
    "truncated_json": (truncated(tool_answer({"score": 3})), "malformed reply: HTTP 200 body is not valid JSON"),
    "html_200": (html_page(200), "malformed reply: HTTP 200 body is HTML, not JSON"),
    "empty_body": (raw_body(""), "malformed reply: HTTP 200 with an empty body"),
    "string_body": (raw_body('"overloaded, try later"'), "malformed reply: JSON str \"overloaded, try later\""),
    "list_body": (raw_body("[1, 2]"), "malformed reply: JSON list [1, 2], not a message object"),
    "number_body": (raw_body("42"), "malformed reply: JSON int 42"),
    "wrong_shape": (raw_body('{"answer": {"score": 3}}'), "malformed reply: no content list (content: NoneType"),
    "content_null": (message(content=None), "malformed reply: no content list (content: NoneType null)"),
    "content_string": (message(content="score 3"), "malformed reply: no content list (content: str"),
    "content_empty": (message(content=[]), "malformed answer: no record_answer tool call in the reply"),
    "blocks_not_objects": (message(content=["x", 3, None]), "malformed answer: no record_answer tool call in the reply"),
    "tool_input_null": (message(content=[{"type": "tool_use", "id": "t1", "name": "record_answer",
                                          "input": None}]), "malformed answer: no record_answer tool call in the reply"),
    "tool_input_string": (message(content=[{"type": "tool_use", "id": "t1", "name": "record_answer",
                                            "input": "four"}]), "malformed answer: no record_answer tool call in the reply"),
    "cut_at_max_tokens": (message(content=[{"type": "text", "text": '{"score": '}], stop_reason="max_tokens"),
                          "malformed answer: no record_answer tool call in the reply (text reply: \"{\\\"score\\\": \") (cut at max_tokens)"),
    "stop_reason_object": (message(stop_reason={"weird": 1}), None),  # an odd stop_reason does not matter
    "error_object_200": (raw_body('{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}'),
                         "malformed reply: HTTP 200 carrying an error: busy"),
    "out_of_range": (tool_answer({"score": 9}), "malformed answer: answer.score = 9 above maximum 4"),
}


@pytest.mark.parametrize("kind", sorted(BAD_REPLIES))
def test_each_bad_reply_is_a_counted_failure_with_its_reason(judge_for, kind):
    step, fragment = BAD_REPLIES[kind]
    with FakeAnthropic([step]) as srv:
        j = judge_for(srv)
        r = j.ask(request())
        if fragment is None:
            assert (r.status, r.answer) == ("ok", {"score": 3})
            return
        assert (r.status, r.answer, r.attempts) == ("failed", None, 1), r
        assert r.reason.startswith(fragment), r.reason
        assert j.stats()["failures"] == 1


@pytest.mark.parametrize("kind", ["truncated_json", "html_200", "content_null", "string_body", "empty_body"])
def test_bad_reply_is_reasked_and_then_answered(judge_for, kind):
    with FakeAnthropic([BAD_REPLIES[kind][0], tool_answer({"score": 2})]) as srv:
        r = judge_for(srv, parse_retries=1).ask(request())
        assert (r.status, r.answer, r.attempts) == ("ok", {"score": 2}, 2)
        # nothing readable came back, so the re-ask is the original question again
        assert srv.bodies[1]["messages"] == srv.bodies[0]["messages"]


def test_html_error_page_is_retried_as_a_server_error(judge_for):
    with FakeAnthropic([html_page(502), tool_answer({"score": 1})]) as srv:
        r = judge_for(srv).ask(request())
        assert (r.status, r.answer, r.attempts) == ("ok", {"score": 1}, 2)


def test_a_batch_with_bad_replies_answers_the_rest(judge_for):
    """The fault probe's case: 3 truncated replies out of 18 must cost exactly 3 answers, nothing else."""
    bad = {2, 9, 15}

    def respond(body):
        i = int(body["messages"][0]["content"][-1]["text"].split()[-1])
        return truncated(tool_answer({"score": i % 5})) if i in bad else tool_answer({"score": i % 5})

    with FakeAnthropic(responder=respond) as srv:
        j = judge_for(srv, max_concurrency=3)
        res = j.ask_many([request(f"question {i}") for i in range(18)])
        assert [r.status for r in res] == ["failed" if i in bad else "ok" for i in range(18)]
        assert [r.answer["score"] for r in res if r.status == "ok"] == [i % 5 for i in range(18) if i not in bad]
        meta = evaluator_failures(res)
        assert meta["evaluator_failures"] == 3
        assert meta["evaluator_failure_reasons"].startswith("3 x judge failed: malformed reply: HTTP 200 body is "
                                                            "not valid JSON")


def test_bad_replies_never_fail_an_asset(judge_for):
    with FakeAnthropic([truncated(tool_answer({"score": 1})), tool_answer({"score": 4}), raw_body("null")]) as srv:
        j = judge_for(srv, max_concurrency=1)

        @asset
        def judged(context: AssetExecutionContext, judge: Judge) -> MaterializeResult:
            res = judge.ask_many([request("a"), request("b"), request("c")])
            return MaterializeResult(metadata={"n_ok": sum(r.status == "ok" for r in res),
                                               **evaluator_failures(res), "judge_state": judge.state_digest()})

        out = materialize([judged], resources={"judge": j})
        assert out.success
        meta = out.asset_materializations_for_node("judged")[0].metadata
        assert meta["n_ok"].value == 1 and meta["evaluator_failures"].value == 2
        assert "malformed reply" in meta["evaluator_failure_reasons"].value
        assert meta["judge_state"].value == j.state_digest()


# ------------------------------------------------------------------------------------------------ time bounds

def test_timeout_bounds_the_whole_request_not_each_read(judge_for):
    """A server sending one byte every 50 ms (the reply would take ~20 s) must not hold a 0.5 s timeout."""
    step = drip(0.05, tool_answer({"score": 3}))
    with FakeAnthropic([step]) as srv:
        j = judge_for(srv, timeout_s=0.5, max_retries=0)
        t0 = time.perf_counter()
        r = j.ask(request())
        elapsed = time.perf_counter() - t0
        assert (r.status, r.reason, r.attempts) == ("failed", "timeout after 0 retries", 1)
        assert elapsed < 4.0, elapsed  # ~16 s with a per-read timeout; slack for a loaded CI machine


def test_a_dripping_server_fast_enough_still_answers(judge_for):
    with FakeAnthropic([drip(0.0005, tool_answer({"score": 3}))]) as srv:
        r = judge_for(srv, timeout_s=5.0).ask(request())
        assert (r.status, r.answer) == ("ok", {"score": 3})


def test_deadline_bounds_a_question_across_retries(judge_for):
    """A hanging endpoint with 10 retries allowed: the question's deadline ends it, not 11 timeouts."""
    with FakeAnthropic([hang()] * 30) as srv:
        j = judge_for(srv, timeout_s=0.4, max_retries=20, deadline_s=1.0, breaker_threshold=0)
        t0 = time.perf_counter()
        r = j.ask(request())
        elapsed = time.perf_counter() - t0
        assert r.status == "failed" and r.reason.startswith("deadline 1s passed after ")
        assert r.reason.endswith("(last: timeout)") and 2 <= r.attempts <= 4
        assert 0.9 <= elapsed < 4.0, elapsed  # 21 timeouts (8.4 s) without the deadline


def test_breaker_makes_a_dead_endpoint_cost_one_deadline_not_one_per_question(judge_for):
    with FakeAnthropic([hang()] * 4) as srv:
        srv.responder = lambda body: tool_answer({"score": 4})
        j = judge_for(srv, timeout_s=0.3, max_retries=0, deadline_s=1.0, breaker_threshold=2,
                      breaker_cooldown_s=0.5, max_concurrency=1)
        t0 = time.perf_counter()
        res = j.ask_many([request(f"q{i}") for i in range(16)])
        elapsed = time.perf_counter() - t0
        assert [r.reason for r in res[:2]] == ["timeout after 0 retries"] * 2
        assert all(r.status == "failed" and r.reason.startswith("judge endpoint unavailable: 2 consecutive "
                                                                "questions lost to it (last: timeout") for r in res[2:])
        assert len(srv.requests) == 2 and elapsed < 3.0, elapsed  # 16 x 0.3 s = 4.8 s without the breaker
        assert j.stats()["failures"] == 16
        # after the cooldown one question probes the endpoint; a failed probe reopens the breaker at once
        for probe in ("later 1", "later 3"):
            time.sleep(0.6)
            assert j.ask(request(probe)).reason == "timeout after 0 retries"
            assert j.ask(request(probe + "b")).reason.startswith("judge endpoint unavailable: ")
        time.sleep(0.6)  # the endpoint recovered (the script's hangs are spent): answers again, breaker closed
        assert j.ask(request("later 5")).answer == {"score": 4}
        assert j.ask(request("later 6")).answer == {"score": 4}


def test_server_errors_feed_the_breaker_but_bad_answers_do_not(judge_for):
    with FakeAnthropic([tool_answer({"score": 9})] * 3 + [server_error(500)] * 4) as srv:
        j = judge_for(srv, max_retries=1, breaker_threshold=2)
        assert [j.ask(request(f"m{i}")).reason[:16] for i in range(3)] == ["malformed answer"] * 3
        assert [j.ask(request(f"s{i}")).reason for i in range(2)] == ["HTTP 500 after 1 retries"] * 2
        assert j.ask(request("s2")).reason.startswith("judge endpoint unavailable: 2 consecutive")


# ------------------------------------------------------------------------------------------------ accounting

def test_evaluator_failures_and_state(tmp_path, monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    res = [JudgeResult("ok", {"score": 1}, None, "k", False, "m", "p", "1"),
           JudgeResult("failed", None, "HTTP 500 after 4 retries", "k", False, "m", "p", "1"),
           JudgeResult("failed", None, "HTTP 500 after 4 retries", "k", False, "m", "p", "1"),
           JudgeResult("skipped", None, "judge off", "k", False, "m", "p", "1"), None]
    # judge off is not evaluated by choice: never an evaluator failure
    assert evaluator_failures(res) == {
        "evaluator_failures": 2, "evaluator_failure_reasons": "2 x judge failed: HTTP 500 after 4 retries",
        "not_evaluated": 1}
    assert evaluator_failures([]) == {"evaluator_failures": 0, "evaluator_failure_reasons": "", "not_evaluated": 0}
    assert summarize_reasons([str(i) for i in range(7)], limit=2) == "1 x 0; 1 x 1; 5 other kinds"

    live = Judge(mode="live", cache_dir=str(tmp_path), base_url="https://user:pw@gw.example:8443/anthropic?x=1")
    st = live.state()
    assert st == {"mode": "live", "backend": "anthropic-messages", "model": "claude-sonnet-4-6",
                  "endpoint": "https://gw.example:8443/anthropic", "key_set": False}
    before = live.state_digest()
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
    assert live.state()["key_set"] is True and live.state_digest() != before  # a key arriving changes the state
    assert SECRET not in json.dumps(live.state()) and "pw" not in json.dumps(live.state())
    assert Judge(mode="off").state_digest() != Judge(mode="replay").state_digest()
    assert len(before) == 16
