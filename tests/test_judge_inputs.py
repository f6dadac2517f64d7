"""Issue 39: what a judge is given that it cannot use. A base URL that does not parse (``http://[::1``, a port
over 65535) is one sentence naming the setting and what is wrong, at start (bench_resources/settings.py) and per
question of a judge built with it (a counted failure, no traceback, no request); a NaN or Infinity in an answer
is a malformed answer with its own reason, re-asked and then counted, never an internal exception ("failed after
0 request(s)") and never a score."""
import json
import logging

import pytest

from bench_resources.judge import Judge, JudgeRequest, evaluator_failures, validate_answer
from bench_resources.settings import ConfigError, validate_environment
from bench_resources.urls import base_url_problem
from tests.support.fake_anthropic import FakeAnthropic, raw_body, tool_answer
from tests.support.fake_openai import FakeOpenAI, chat_text

BAD_URLS = [("http://[::1", "not closed"), ("http://127.0.0.1:99999", "1-65535"),
            ("http://127.0.0.1:0/v1", "port is 0"), ("http://h:abc/v1", "1-65535")]


def _schema(*fields, required=None):
    return {"type": "object", "properties": {f: {"type": "number", "minimum": 0, "maximum": 10} for f in fields}
            | {"why": {"type": "string"}}, "required": list(required if required is not None else fields)}


def _req(text, schema):
    return JudgeRequest("test.nan", "v1", "system", text, schema)


@pytest.mark.parametrize("url,words", BAD_URLS)
def test_a_bad_judge_url_is_one_configuration_error_naming_the_setting(url, words):
    with pytest.raises(ConfigError) as e:
        validate_environment({"BENCH_JUDGE_BASE_URL": url})
    msg = str(e.value)
    assert msg.startswith(f"BENCH_JUDGE_BASE_URL={url!r}: ") and words in msg and "\n" not in msg, msg
    assert base_url_problem(url) and words in base_url_problem(url)


def test_good_judge_urls_pass():
    for url in ("http://127.0.0.1:8000/v1", "https://api.example.org", "http://[::1]:8000/v1", ""):
        validate_environment({"BENCH_JUDGE_BASE_URL": url})
        assert base_url_problem(url) is None, url


@pytest.mark.parametrize("url,words", BAD_URLS[:2])
def test_the_cli_says_error_for_a_bad_judge_url_and_exits_2(url, words, monkeypatch, capsys, tmp_path):
    from bench_assets.cli import main
    monkeypatch.setenv("BENCH_JUDGE_BASE_URL", url)
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    assert main(["evaluate", "--benchmark", "entitybench", "--generator", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: BENCH_JUDGE_BASE_URL=") and words in err[0], err


@pytest.mark.parametrize("backend", ["openai", "anthropic"])
@pytest.mark.parametrize("url,words", BAD_URLS[:2])
def test_a_judge_built_with_a_bad_url_fails_each_question_in_words(url, words, backend, tmp_path, caplog,
                                                                  monkeypatch):
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-test")
    judge = Judge(mode="live", backend=backend, model="m", base_url=url, api_key_env="JUDGE_TEST_KEY",
                  cache_dir=str(tmp_path / "c"), max_retries=0)
    # the state and identity that every run records are computable (a digest names the URL)
    assert judge.state()["endpoint"].startswith("unparseable-url:") and judge.identity()["model"] == "m"
    assert "unparseable-url:" in judge.endpoint_label()
    with caplog.at_level(logging.DEBUG, logger="bench_resources.judge"):
        one = judge.ask(_req("q1", _schema("score")))
        many = judge.ask_many([_req("q2", _schema("a")), _req("q3", _schema("b"))])
    for res in [one, *many]:
        assert res.status == "failed" and res.attempts == 0
        assert res.reason.startswith("judge base_url unusable: ") and words in res.reason, res.reason
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    assert evaluator_failures([one, *many])["evaluator_failures"] == 3


def _anthropic_body_with(answer_json: str) -> str:
    """A tool_use reply whose input is the given JSON text (NaN and Infinity as Python's json writes them)."""
    text = json.dumps(tool_answer({"__ANSWER__": 0})["body"])
    return text.replace('{"__ANSWER__": 0}', answer_json)


@pytest.mark.parametrize("answer,field,word", [('{"score": NaN, "why": "x"}', "score", "NaN"),
                                               ('{"score": 2, "extra": Infinity, "why": "x"}', "extra",
                                                "Infinity"),
                                               ('{"score": -Infinity}', "score", "Infinity")])
def test_a_nan_in_an_anthropic_answer_is_a_malformed_answer_with_its_reason(answer, field, word, tmp_path,
                                                                           monkeypatch, caplog):
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-test")
    schema = _schema("score", required=["score", "why"])   # the third answer also lacks "why": a re-ask echoes it
    if field == "extra":
        schema["additionalProperties"] = True
    body = _anthropic_body_with(answer)
    with FakeAnthropic([raw_body(body), raw_body(body)]) as srv, \
            caplog.at_level(logging.DEBUG, logger="bench_resources.judge"):
        judge = Judge(mode="live", base_url=srv.base_url, model="m", api_key_env="JUDGE_TEST_KEY",
                      cache_dir=str(tmp_path / "c"), max_retries=0, parse_retries=1)
        res = judge.ask(_req(f"q {field}", schema))
        assert res.status == "failed" and res.answer is None, res
        assert f"answer.{field} is" in res.reason and f"{word} is not a JSON number" in res.reason, res.reason
        assert res.attempts == 2 and len(srv.requests) == 2   # asked, re-asked once, counted
        # the re-ask shows the model its own answer: the NaN as text (the SDK's encoder refuses a NaN)
        echoed = json.dumps(srv.requests[1]["body"]["messages"][1])
        assert word in echoed
    assert not [r for r in caplog.records if r.exc_info], "an internal exception was logged"
    meta = evaluator_failures([res])
    assert meta["evaluator_failures"] == 1 and "is not a JSON number" in meta["evaluator_failure_reasons"]
    # nothing was cached: a later ask asks again
    assert not list((tmp_path / "c").rglob("*.json"))


def test_a_nan_in_an_openai_answer_is_a_malformed_answer(tmp_path):
    schema = _schema("score", "other")
    with FakeOpenAI([chat_text('{"score": 1, "other": NaN}'), chat_text('{"score": NaN, "other": 2}')]) as srv:
        judge = Judge(mode="live", backend="openai", base_url=srv.base_url + "/v1", model="m", api_key_env="",
                      cache_dir=str(tmp_path / "c"), max_retries=0, parse_retries=1)
        res = judge.ask(_req("q", schema))
    assert res.status == "failed" and "answer.score is nan (NaN is not a JSON number)" in res.reason, res.reason
    assert res.attempts == 2


def test_a_cached_nan_answer_is_a_miss(tmp_path):
    """A cache entry written before NaN was refused is not an answer: replay treats it as a miss."""
    schema = _schema("score")
    judge = Judge(mode="replay", model="m", cache_dir=str(tmp_path / "c"))
    req = _req("cached", schema)
    path = judge.cache_path(judge.cache_key(req))
    path.parent.mkdir(parents=True)
    path.write_text('{"cache_format": 1, "answer": {"score": NaN, "why": "x"}}')
    res = judge.ask(req)
    assert res.status == "skipped" and "not in judge cache" in res.reason, res


def test_validate_answer_names_the_first_non_finite_number():
    schema = {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "number"}}}}
    assert validate_answer({"a": [1.0, float("nan")]}, schema) == "answer.a[1] is nan (NaN is not a JSON number)"
    assert "Infinity" in validate_answer({"a": [], "b": {"c": float("-inf")}}, schema)
    assert validate_answer({"a": [1.0, 2]}, schema) is None
