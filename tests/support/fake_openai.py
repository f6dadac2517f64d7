"""A real HTTP server on 127.0.0.1 speaking OpenAI chat completions (``POST /v1/chat/completions``), the interface
vLLM, SGLang, Ollama and OpenAI serve. Same machinery as tests/support/fake_anthropic.py (script, responder, recorded
requests, concurrency, raw/drip/hang steps); the helpers below build chat-completion replies and OpenAI errors.

    from tests.support.fake_openai import FakeOpenAI, chat_answer, rate_limited

    with FakeOpenAI([rate_limited(0.1), chat_answer({"score": 3})]) as srv:
        judge = Judge(mode="live", backend="openai", base_url=srv.base_url + "/v1", api_key_env="", ...)
"""
from __future__ import annotations

import json
from typing import Any, Iterator, Optional

import pytest

from tests.support.fake_anthropic import (  # noqa: F401 (re-exported)
    FakeServer,
    Step,
    drip,
    hang,
    html_page,
    raw_body,
    slow,
)


def completion(content: Optional[str], finish_reason: str = "stop", refusal: Optional[str] = None,
               tool_calls: Optional[list] = None) -> Step:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {"status": 200, "body": {
        "id": "chatcmpl-fake", "object": "chat.completion", "created": 1700000000, "model": "fake-vl",
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
        "usage": {"prompt_tokens": 12, "completion_tokens": 6, "total_tokens": 18}}}


def chat_answer(answer: Any, finish_reason: str = "stop") -> Step:
    """Success: the message content is ``answer`` serialised as JSON (which may violate the schema)."""
    return completion(json.dumps(answer), finish_reason)


def chat_text(text: str, finish_reason: str = "stop") -> Step:
    return completion(text, finish_reason)


def error(status: int, headers: Optional[dict] = None, message: Optional[str] = None) -> Step:
    return {"status": status, "headers": headers or {},
            "body": {"error": {"message": message or f"fake {status}", "type": "fake_error", "code": status}}}


def rate_limited(retry_after: Optional[float] = None) -> Step:
    return error(429, {"retry-after": str(retry_after)} if retry_after is not None else None)


class FakeOpenAI(FakeServer):
    PATH = "/v1/chat/completions"
    NAME = "fake-openai"


def user_text(body: dict) -> str:
    """The text part of the user message (the question plus the schema note)."""
    parts = body["messages"][1]["content"]
    return next(p["text"] for p in parts if p.get("type") == "text")


@pytest.fixture
def fake_openai() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as srv:
        yield srv
