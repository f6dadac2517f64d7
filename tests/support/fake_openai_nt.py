"""A small real HTTP server on 127.0.0.1 speaking OpenAI chat completions (``POST /v1/chat/completions``, the
interface vLLM, SGLang, Ollama and OpenAI serve), for NarrativeTrack's answerer tests. Its answers come from a
responder that reads the request (its text and its images' pixels), so they vary per input; ``fail_first`` makes the
first requests answer HTTP 500 / 429 to exercise retries.

    with FakeOpenAINT(responder) as srv:      # responder(text: str, images: list[np.ndarray RGB]) -> dict | str
        card = {"backend": "openai", "base_url": srv.base_url + "/v1", "api_key_env": "", "model": "qwen-vl"}
"""
from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable, Optional

import cv2
import numpy as np


def decode_image(url: str) -> np.ndarray:
    """An ``image_url`` data URL -> RGB array."""
    data = base64.b64decode(url.split(",", 1)[1])
    bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
    return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


class FakeOpenAINT:
    def __init__(self, responder: Callable[[str, list], object], fail_first: Optional[list[int]] = None) -> None:
        self.responder = responder
        self.fail = list(fail_first or [])   # status codes answered to the first requests, in order
        self.requests: list[dict] = []
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a):  # quiet
                pass

            def _send(self, status: int, body: dict, headers: Optional[dict] = None) -> None:
                raw = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(raw)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self):  # noqa: N802
                n = int(self.headers.get("content-length", 0))
                body = json.loads(self.rfile.read(n) or b"{}")
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body,
                                           "auth": self.headers.get("authorization")})
                    status = outer.fail.pop(0) if outer.fail else 200
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                if status != 200:
                    return self._send(status, {"error": {"message": f"fake {status}", "code": status}},
                                      {"retry-after": "0"} if status == 429 else None)
                parts = body["messages"][-1]["content"]
                parts = parts if isinstance(parts, list) else [{"type": "text", "text": parts}]
                text = "\n".join(p.get("text", "") for p in parts if p.get("type") == "text")
                images = [decode_image(p["image_url"]["url"]) for p in parts if p.get("type") == "image_url"]
                answer = outer.responder(text, images)
                content = answer if isinstance(answer, str) else json.dumps(answer)
                self._send(200, {"id": "chatcmpl-nt", "object": "chat.completion", "created": 1700000000,
                                 "model": body.get("model"), "choices": [{
                                     "index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": content}}],
                                 "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeOpenAINT":
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()
