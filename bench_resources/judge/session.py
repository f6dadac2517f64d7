"""What every provider's session shares: the session base, the backend-neutral reply, the exceptions a send
raises (retry, fatal, bad reply) and the decoding of an HTTP 200 body."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Optional

from bench_resources.judge.common import MAX_BODY_BYTES, JudgeRequest

class _Retry(Exception):
    """Transport trouble worth asking again: 429, 5xx, timeouts, connection errors. ``transport``: the endpoint
    itself failed (connect, timeout, 5xx: feeds the breaker); a 429 shows it is up and busy."""

    def __init__(self, why: str, wait: Optional[float] = None, transport: bool = True) -> None:
        super().__init__(why)
        self.why, self.wait, self.transport = why, wait, transport


class _Fatal(Exception):
    """The request itself is wrong (4xx other than 429): asking again will not help."""


class _BadReply(Exception):
    """An HTTP 200 whose body is not a usable reply (truncated JSON, HTML, wrong shape, content null, empty)."""


@dataclass
class _Reply:
    """One readable reply, backend-neutral."""
    answer: Optional[dict] = None  # a structured answer (tool call input), when the backend gave one
    text: Optional[str] = None
    refused: Optional[str] = None  # the refusal reason, when the model declined
    truncated: bool = False  # cut by max_tokens
    usage: Optional[dict] = None
    model: Optional[str] = None
    echo: Any = None  # what to show the model back on a re-ask (backend-specific)
    tool_id: Optional[str] = None
    problem: Optional[str] = None  # why there is no structured answer (text only, not JSON), when there is none


# ----------------------------------------------------------------------------------------------- backends

class _Session:
    """An HTTP client shared by the questions of one ``ask``/``ask_many`` call."""

    def __init__(self, judge: Any, api_key: str) -> None:  # a Judge (base.py imports this module)
        self.judge, self.api_key = judge, api_key

    def conversation(self, req: JudgeRequest) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "_Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ----------------------------------------------------------------------------------------------- reply readers

def _decode_body(body: bytes, content_type: str) -> Any:
    """An HTTP 200 body as JSON, or _BadReply naming what it is instead (also when it exceeds MAX_BODY_BYTES)."""
    if len(body) > MAX_BODY_BYTES:
        raise _BadReply(f"HTTP 200 body of {len(body)} bytes exceeds the {MAX_BODY_BYTES}-byte bound")
    text = body.decode("utf-8", errors="replace")
    if not text.strip():
        raise _BadReply("HTTP 200 with an empty body")
    try:
        return json.loads(text)
    except ValueError as e:
        head = text.lstrip()[:200].lower()
        if "html" in content_type.lower() or head.startswith(("<!doctype", "<html")):
            raise _BadReply("HTTP 200 body is HTML, not JSON") from None
        detail = f"{e.msg} at char {e.pos} of {len(text)}" if isinstance(e, json.JSONDecodeError) else str(e)
        raise _BadReply(f"HTTP 200 body is not valid JSON (truncated?): {detail}") from None


def _shape(value: Any) -> str:
    return f"{type(value).__name__} {json.dumps(value, default=str)[:40]}"


def _error_in_body(body: dict) -> Optional[str]:
    err = body.get("error")
    if err is None:
        return None
    msg = err.get("message") if isinstance(err, dict) else err
    return f"HTTP 200 carrying an error: {str(msg)[:200]}"
