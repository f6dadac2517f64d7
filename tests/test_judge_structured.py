"""Issue 25 on the judge: answers only from the structured channel, bounded answers, modes that do what they say,
request counts by endpoint, re-asks counted, and a breaker that opens on the endpoint's own failures only.
Real HTTP servers on 127.0.0.1 (tests/support/fake_anthropic.py, tests/support/fake_openai.py)."""
import json
import time

import numpy as np
import pytest

from bench_resources.config import judge_mode
from bench_resources.judge import MAX_ANSWER_BYTES, Judge, JudgeRequest, evaluator_failures, judge_counters, png_bytes
from tests.support.fake_anthropic import FakeAnthropic, rate_limited, server_error, text_answer, tool_answer
from tests.support.fake_openai import FakeOpenAI, chat_answer, chat_text

SCHEMA = {"type": "object", "required": ["score", "why"],
          "properties": {"score": {"type": "integer", "minimum": 0, "maximum": 5}, "why": {"type": "string"}}}
REFUSAL = ("I'm sorry, I can't evaluate this image. If I could, my answer would follow this format: "
           '{"score": 5, "why": "example"}')


def request(text: str) -> JudgeRequest:
    img = np.full((4, 4, 3), sum(map(ord, text)) % 256, dtype=np.uint8)
    return JudgeRequest("structured", "v1", "judge", text, SCHEMA, (png_bytes(img),))


def make(server, tmp_path, backend="anthropic", **kw) -> Judge:
    cfg = dict(mode="live", cache_dir=str(tmp_path / "cache"), backoff_s=0.001, max_retries=0, timeout_s=2.0,
               parse_retries=0, api_key_env="", backend="openai", base_url=server.base_url + "/v1",
               model="fake-vl")
    if backend == "anthropic":
        cfg.update(backend="anthropic", api_key_env="FAKE_KEY", base_url=server.base_url, model="claude-x")
    cfg.update(kw)
    return Judge(**cfg)


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY", "k-123")


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_refusal_with_example_is_a_counted_failure_never_cached(backend, tmp_path):
    server = FakeAnthropic([text_answer(REFUSAL)]) if backend == "anthropic" else FakeOpenAI([chat_text(REFUSAL)])
    with server as srv:
        j = make(srv, tmp_path, backend)
        r = j.ask(request("q"))
        assert (r.status, r.answer) == ("failed", None)
        assert "I'm sorry, I can't evaluate this image" in r.reason  # its text kept, bounded
        assert evaluator_failures([r])["evaluator_failures"] == 1
        # nothing cached: the next run asks again (and the example numbers never became a score)
        assert not list((tmp_path / "cache").rglob("*.json"))


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_huge_answers_are_refused_with_a_reason(backend, tmp_path):
    big = {"score": 3, "why": "x" * 5_000_000}
    mid = {"score": 3, "why": "y" * (MAX_ANSWER_BYTES + 10)}
    steps = [tool_answer(big), tool_answer(mid)] if backend == "anthropic" else [chat_answer(big), chat_answer(mid)]
    with (FakeAnthropic if backend == "anthropic" else FakeOpenAI)(steps) as srv:
        j = make(srv, tmp_path, backend)
        r5, r20 = j.ask(request("five megabytes")), j.ask(request("twenty kilobytes"))
    assert r5.status == "failed" and "exceeds the 1048576-byte bound" in r5.reason and len(r5.reason) < 700
    assert r20.status == "failed" and f"exceeds the {MAX_ANSWER_BYTES}-byte bound" in r20.reason
    assert not list((tmp_path / "cache").rglob("*.json"))


def test_off_never_reads_the_cache_and_replay_only_when_asked(tmp_path, monkeypatch):
    with FakeOpenAI([chat_answer({"score": 2, "why": "w"})]) as srv:
        assert make(srv, tmp_path, "openai").ask(request("a")).status == "ok"
        off = make(srv, tmp_path, "openai", mode="off").ask(request("a"))
        assert (off.status, off.answer, off.reason) == ("skipped", None, "judge off")
        meta = evaluator_failures([off])
        assert (meta["evaluator_failures"], meta["not_evaluated"]) == (0, 1)  # by choice, not a failure
    # a cache on disk never turns the default mode into replay
    monkeypatch.delenv("BENCH_JUDGE_MODE", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert judge_mode(str(tmp_path / "cache"), "ANTHROPIC_API_KEY") == "off"
    monkeypatch.setenv("BENCH_JUDGE_MODE", "replay")
    assert judge_mode(str(tmp_path / "cache"), "ANTHROPIC_API_KEY") == "replay"


def test_requests_counted_by_endpoint_and_reasks_counted(tmp_path):
    with FakeOpenAI(responder=lambda body: chat_answer({"score": 1, "why": "a"})) as a, \
            FakeAnthropic([server_error(500), tool_answer({"score": 4, "why": "b"})]) as b:
        ja, jb = make(a, tmp_path, "openai"), make(b, tmp_path, "anthropic")
        c0 = judge_counters()
        ja.ask_many([request(f"a{i}") for i in range(3)])
        assert jb.ask(request("b")).status == "failed"
        assert jb.ask(request("b")).status == "ok"  # the failed question asked again: a re-ask
        ja.ask(request("a0"))  # an answer reused
        c1 = judge_counters()
    by = {k: v - c0["requests_by_endpoint"].get(k, 0) for k, v in c1["requests_by_endpoint"].items()}
    assert by[ja.endpoint_label()] == 3 and by[jb.endpoint_label()] == 2
    assert ja.endpoint_label() != jb.endpoint_label()
    assert c1["questions_reasked"] - c0["questions_reasked"] == 1
    assert c1["answers_reused"] - c0["answers_reused"] == 1


def test_breaker_ignores_rate_limits_and_bad_answers(tmp_path):
    """429s and content faults show the endpoint is up: 12 questions in a row lost to them are all asked."""
    with FakeAnthropic([rate_limited(0.0)] * 6 + [text_answer("no")] * 6) as srv:
        j = make(srv, tmp_path, "anthropic", breaker_threshold=2)
        res = [j.ask(request(f"q{i}")) for i in range(12)]
        assert len(srv.requests) == 12
        assert not any("endpoint unavailable" in r.reason for r in res)


def test_breaker_interleaved_failures_do_not_open_it(tmp_path):
    """Every second question answered 500 (a per-question fault), four in flight: every question is sent."""
    def responder(body):
        text = body["messages"][0]["content"][-1]["text"]
        time.sleep(0.01)
        return server_error(500) if int(text[1:]) % 2 else tool_answer({"score": 1, "why": text})

    with FakeAnthropic(responder=responder) as srv:
        j = make(srv, tmp_path, "anthropic", max_concurrency=4, breaker_threshold=3)
        res = j.ask_many([request(f"q{i}") for i in range(100)])
        assert len(srv.requests) == 100
        assert sum(r.status == "ok" for r in res) == 50


def test_breaker_probes_again_after_a_short_pause(tmp_path):
    """A dead endpoint opens the breaker; after the default pause (seconds, not a minute) one question probes it;
    the healed endpoint answers and the breaker closes."""
    with FakeAnthropic([server_error(503)] * 5, responder=lambda b: tool_answer({"score": 2, "why": "ok"})) as srv:
        j = make(srv, tmp_path, "anthropic")
        assert j.breaker_cooldown_s <= 10
        res = [j.ask(request(f"d{i}")) for i in range(7)]
        assert [r.reason.startswith("judge endpoint unavailable") for r in res] == [False] * 5 + [True] * 2
        assert len(srv.requests) == 5
        time.sleep(j.breaker_cooldown_s + 0.2)
        assert [j.ask(request(f"h{i}")).status for i in range(3)] == ["ok"] * 3
        assert len(srv.requests) == 8


def test_stored_raw_text_is_bounded(tmp_path):
    with FakeAnthropic([{"status": 200, "body": {
            "id": "m", "type": "message", "role": "assistant", "model": "fake", "stop_reason": "tool_use",
            "usage": {}, "content": [{"type": "text", "text": "z" * 100_000},
                                     {"type": "tool_use", "id": "t", "name": "record_answer",
                                      "input": {"score": 1, "why": "w", "extra": "e" * 1000}}]}}]) as srv:
        j = make(srv, tmp_path, "anthropic")
        r = j.ask(request("raw"))
    assert r.answer == {"score": 1, "why": "w"}  # fields the schema does not name are dropped
    entry = json.loads(j.cache_path(r.cache_key).read_text())
    assert len(entry["raw_text"]) < 1000
