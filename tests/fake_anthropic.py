"""A real HTTP server on 127.0.0.1 that speaks enough of the Messages API for the anthropic SDK."""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Optional


def tool_answer(answer: dict, stop_reason: str = "tool_use") -> dict:
    return {"status": 200, "body": {"id": "msg_1", "type": "message", "role": "assistant", "model": "fake",
                                    "stop_reason": stop_reason, "stop_sequence": None,
                                    "usage": {"input_tokens": 10, "output_tokens": 5},
                                    "content": [{"type": "tool_use", "id": "tu_1", "name": "record_answer",
                                                 "input": answer}]}}


def text_answer(text: str, stop_reason: str = "end_turn") -> dict:
    return {"status": 200, "body": {"id": "msg_2", "type": "message", "role": "assistant", "model": "fake",
                                    "stop_reason": stop_reason, "stop_sequence": None,
                                    "usage": {"input_tokens": 10, "output_tokens": 5},
                                    "content": [{"type": "text", "text": text}]}}


def error(status: int, headers: Optional[dict] = None) -> dict:
    kind = {429: "rate_limit_error", 500: "api_error", 529: "overloaded_error", 400: "invalid_request_error"}
    return {"status": status, "headers": headers or {},
            "body": {"type": "error", "error": {"type": kind.get(status, "api_error"), "message": f"fake {status}"}}}


def slow(seconds: float, then: dict) -> dict:
    return {**then, "sleep": seconds}


class FakeAnthropic:
    """Answers from a scripted queue (or a responder callable); records requests and concurrency."""

    def __init__(self, script: Optional[list[dict]] = None, responder: Optional[Callable[[dict], dict]] = None):
        self.script = list(script or [])
        self.responder = responder
        self.requests: list[dict[str, Any]] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # keep test output clean
                pass

            def do_POST(self):
                n = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                with fake._lock:
                    fake.requests.append({"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}, "body": body})
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                    step = fake.script.pop(0) if fake.script else None
                try:
                    if step is None:
                        step = fake.responder(body) if fake.responder else error(500)
                    if step.get("sleep"):
                        time.sleep(step["sleep"])
                    payload = json.dumps(step["body"]).encode()
                    self.send_response(step["status"])
                    self.send_header("content-type", "application/json")
                    for k, v in step.get("headers", {}).items():
                        self.send_header(k, v)
                    self.send_header("content-length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with fake._lock:
                        fake.in_flight -= 1

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> "FakeAnthropic":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
