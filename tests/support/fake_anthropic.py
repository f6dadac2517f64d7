"""A real HTTP server on 127.0.0.1 that speaks enough of the Messages API (``POST /v1/messages``) for the
anthropic SDK. Reusable by any test that needs a judge:

    from tests.support.fake_anthropic import FakeAnthropic, tool_answer, rate_limited

    with FakeAnthropic([rate_limited(0.1), tool_answer({"score": 3})]) as srv:
        judge = Judge(mode="live", base_url=srv.base_url, ...)
        ...
        assert len(srv.requests) == 2

Each step of the script (or the return value of ``responder(body)`` once the script is spent) is a dict
``{"status": int, "body": dict | str, "headers": {...}, "sleep": seconds, "content_type": str, "drip": seconds}``;
the helpers below build them. A ``str`` body is sent verbatim (truncated JSON, HTML, anything); ``drip`` sends the
whole response, status line and headers included, one byte every ``drip`` seconds; ``hang`` never answers.
With neither script nor responder left, the server answers 500 "script exhausted".
Every request is recorded in ``requests`` as ``{"path", "headers" (lower-case names), "body" (parsed JSON)}``;
``max_in_flight`` is the largest number of requests handled at the same time.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterator, Optional

import pytest

Step = dict[str, Any]

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                404: "not_found_error", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}


def _message(content: list[dict], stop_reason: str) -> Step:
    return {"status": 200, "body": {"id": "msg_fake", "type": "message", "role": "assistant", "model": "fake-model",
                                    "stop_reason": stop_reason, "stop_sequence": None,
                                    "usage": {"input_tokens": 10, "output_tokens": 5}, "content": content}}


def tool_answer(answer: dict, stop_reason: str = "tool_use", tool_id: str = "toolu_fake") -> Step:
    """Success: a ``record_answer`` tool_use block carrying ``answer`` (which may violate the schema)."""
    return _message([{"type": "tool_use", "id": tool_id, "name": "record_answer", "input": answer}], stop_reason)


def text_answer(text: str, stop_reason: str = "end_turn") -> Step:
    """Success with a text block only (the judge must dig the JSON out of it, or find none)."""
    return _message([{"type": "text", "text": text}], stop_reason)


def malformed_tool(answer: dict) -> Step:
    """A tool call whose input does not satisfy the schema (missing fields, wrong types, out of range)."""
    return tool_answer(answer)


def not_json(text: str = "They look about the same to me.") -> Step:
    """A text reply with no JSON object in it."""
    return text_answer(text)


def refusal(text: str = "I can't help with that.") -> Step:
    return _message([{"type": "text", "text": text}], "refusal")


def error(status: int, headers: Optional[dict] = None, message: Optional[str] = None) -> Step:
    return {"status": status, "headers": headers or {},
            "body": {"type": "error", "error": {"type": _ERROR_TYPES.get(status, "api_error"),
                                                "message": message or f"fake {status}"}}}


def rate_limited(retry_after: Optional[float] = None) -> Step:
    return error(429, {"retry-after": str(retry_after)} if retry_after is not None else None)


def server_error(status: int = 500) -> Step:
    return error(status)


def raw_body(text: str, status: int = 200, content_type: str = "application/json") -> Step:
    """A body sent byte for byte as given: truncated JSON, an HTML page, a bare JSON string, nothing."""
    return {"status": status, "body": text, "content_type": content_type}


def html_page(status: int = 200) -> Step:
    return raw_body("<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1>"
                    "</body></html>", status, "text/html; charset=utf-8")


def truncated(step: Step, keep: float = 0.6) -> Step:
    """``step``'s JSON body cut after ``keep`` of its characters (a proxy that dropped the rest)."""
    text = json.dumps(step["body"])
    return raw_body(text[:max(1, int(len(text) * keep))], step.get("status", 200))


def drip(seconds_per_byte: float, then: Step) -> Step:
    """``then``, sent one byte every ``seconds_per_byte`` (each read succeeds: only a whole-request bound stops it)."""
    return {**then, "drip": seconds_per_byte}


def hang(seconds: float = 3600.0) -> Step:
    """Accept the request and never answer (for as long as the test lasts)."""
    return {"status": 500, "body": {}, "sleep": seconds}


def slow(seconds: float, then: Step) -> Step:
    """``then``, after sleeping ``seconds`` (longer than the client timeout: the client gives up first)."""
    return {**then, "sleep": seconds}


class FakeServer:
    """Answers from a scripted queue, then from ``responder(body)``; records requests and concurrency. Requests to
    paths other than ``PATH`` get a 404."""

    PATH = "/v1/messages"
    NAME = "fake-anthropic"

    def __init__(self, script: Optional[list[Step]] = None, responder: Optional[Callable[[dict], Step]] = None):
        self.script: list[Step] = list(script or [])
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.server.daemon_threads = True  # a slow step still sleeping must not block shutdown
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.02},
                                        name=self.NAME, daemon=True)  # quick shutdown
        self._started = False

    # ------------------------------------------------------------------ public
    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    @property
    def bodies(self) -> list[dict]:
        return [r["body"] for r in self.requests]

    def push(self, *steps: Step) -> None:
        with self._lock:
            self.script.extend(steps)

    def start(self) -> "FakeServer":
        if not self._started:
            self._thread.start()
            self._started = True
        return self

    def stop(self) -> None:
        if self._started:
            self.server.shutdown()
            self._started = False
        self.server.server_close()

    def __enter__(self) -> "FakeServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # ------------------------------------------------------------------ internals
    def _next_step(self, body: dict) -> Step:
        with self._lock:
            step = self.script.pop(0) if self.script else None
        if step is None:
            step = self.responder(body) if self.responder else error(500, message="fake: script exhausted")
        return step

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: Any, headers: dict, content_type: str = "application/json",
                      drip: float = 0.0) -> None:
                payload = (body if isinstance(body, str) else json.dumps(body)).encode()
                head = [f"{self.protocol_version} {status} {self.responses.get(status, ('Fake',))[0]}",
                        f"content-type: {content_type}", "request-id: req_fake",
                        *(f"{k}: {v}" for k, v in headers.items()), f"content-length: {len(payload)}"]
                data = ("\r\n".join(head) + "\r\n\r\n").encode() + payload
                if not drip:
                    self.wfile.write(data)
                    return
                for i in range(len(data)):
                    self.wfile.write(data[i:i + 1])
                    time.sleep(drip)

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                body = json.loads(raw or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, "body": body,
                                          "headers": {k.lower(): v for k, v in self.headers.items()}})
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                try:
                    if not self.path.split("?")[0].endswith(fake.PATH):
                        self._send(404, error(404)["body"], {})
                        return
                    step = fake._next_step(body)
                    if step.get("sleep"):
                        time.sleep(step["sleep"])
                    self._send(step["status"], step["body"], step.get("headers", {}),
                               step.get("content_type", "application/json"), step.get("drip", 0.0))
                except (BrokenPipeError, ConnectionResetError):  # the client timed out and left
                    pass
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

        return Handler


FakeAnthropic = FakeServer  # the Messages API flavour (tests/support/fake_openai.py has the chat-completions one)


@pytest.fixture
def fake_anthropic() -> Iterator[FakeAnthropic]:
    """A started server with an empty script: ``fake_anthropic.push(...)`` or set ``.responder``."""
    with FakeAnthropic() as srv:
        yield srv
