"""The judge: Anthropic Messages API (vision) with structured JSON answers and a content-addressed cache.

Bounded retries (429 with retry-after, 5xx, timeouts), a concurrency limit, modes live / replay / off.
The API key is read from the environment at call time and never stored, logged or returned.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import os
import re
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

import numpy as np
from dagster import ConfigurableResource
from pydantic import PrivateAttr

log = logging.getLogger(__name__)
TOOL_NAME = "record_answer"


def png_bytes(image: np.ndarray) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(image)).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


@dataclass(frozen=True)
class JudgeRequest:
    prompt_id: str
    prompt_version: str
    system: str
    text: str
    schema: dict
    images: tuple[bytes, ...] = ()
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeResult:
    status: Literal["ok", "skipped", "failed"]
    answer: Optional[dict]
    reason: Optional[str]
    cache_key: str
    cached: bool
    model: str
    prompt_id: str
    prompt_version: str
    attempts: int = 0

    def to_record(self) -> dict[str, Any]:
        return asdict(self)


class _Counters:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.network_calls = 0
        self.cache_hits = 0
        self.failures = 0
        self.skipped = 0

    def add(self, **kw: int) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, getattr(self, k) + v)


_COUNTERS = _Counters()  # per process: a cached re-run must show zero network calls


def validate(answer: Any, schema: dict) -> Optional[str]:
    """None when ``answer`` satisfies the schema's basic constraints, else what is wrong."""
    types = {"number": (int, float), "integer": (int,), "string": (str,), "boolean": (bool,),
             "array": (list,), "object": (dict,)}
    if not isinstance(answer, dict):
        return "answer is not a JSON object"
    for key in schema.get("required", []):
        if key not in answer:
            return f"missing required field {key!r}"
    for key, prop in schema.get("properties", {}).items():
        if key not in answer:
            continue
        v, t = answer[key], prop.get("type")
        if t and not (isinstance(v, types[t]) and not (t in ("number", "integer") and isinstance(v, bool))):
            return f"field {key!r} should be {t}, got {type(v).__name__}"
        if "enum" in prop and v not in prop["enum"]:
            return f"field {key!r} = {v!r} not in {prop['enum']}"
        if t in ("number", "integer"):
            if "minimum" in prop and v < prop["minimum"]:
                return f"field {key!r} = {v} below minimum {prop['minimum']}"
            if "maximum" in prop and v > prop["maximum"]:
                return f"field {key!r} = {v} above maximum {prop['maximum']}"
    return None


def extract_json(text: str) -> Optional[dict]:
    m = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidates = [m.group(1)] if m else []
    start, end = text.find("{"), text.rfind("}")
    if start >= 0 and end > start:
        candidates.append(text[start:end + 1])
    for c in candidates:
        try:
            v = json.loads(c)
            if isinstance(v, dict):
                return v
        except json.JSONDecodeError:
            continue
    return None


class Judge(ConfigurableResource):
    mode: Literal["live", "replay", "off"] = "off"
    model: str = "claude-sonnet-4-6"
    base_url: Optional[str] = None
    api_key_env: str = "ANTHROPIC_API_KEY"
    cache_dir: str = ".bench/judge_cache"
    max_retries: int = 4
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    timeout_s: float = 60.0
    max_concurrency: int = 4
    max_tokens: int = 1024
    parse_retries: int = 1

    _sem: Any = PrivateAttr(default=None)

    def __repr__(self) -> str:  # pydantic's repr is fine (no key is a field), but keep it short
        return f"Judge(mode={self.mode!r}, model={self.model!r})"

    # ------------------------------------------------------------------ public
    def available(self) -> tuple[bool, str]:
        if self.mode == "off":
            return False, "judge off"
        if self.mode == "live" and not os.environ.get(self.api_key_env):
            return False, f"judge live but ${self.api_key_env} is not set"
        return True, self.mode

    def fingerprint(self) -> dict[str, Any]:
        # mode stays out: a replayed answer is the live answer, so live and replay runs stay comparable
        return {"backend": "anthropic-messages", "model": self.model, "max_tokens": self.max_tokens}

    def stats(self) -> dict[str, int]:
        c = _COUNTERS
        return {"network_calls": c.network_calls, "cache_hits": c.cache_hits, "failures": c.failures,
                "skipped": c.skipped}

    def cache_key(self, req: JudgeRequest) -> str:
        payload = {"model": self.model, "prompt_id": req.prompt_id, "prompt_version": req.prompt_version,
                   "system": req.system, "text": req.text, "schema": req.schema, "params": req.params,
                   "images": [hashlib.sha256(b).hexdigest() for b in req.images],
                   "max_tokens": self.max_tokens}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()

    def ask(self, req: JudgeRequest) -> JudgeResult:
        key = self.cache_key(req)
        base = dict(cache_key=key, model=self.model, prompt_id=req.prompt_id, prompt_version=req.prompt_version)
        if self.mode == "off":
            _COUNTERS.add(skipped=1)
            return JudgeResult("skipped", None, "judge off", cached=False, **base)
        hit = self._cache_get(key)
        if hit is not None:
            _COUNTERS.add(cache_hits=1)
            return JudgeResult("ok", hit["answer"], None, cached=True, **base)
        if self.mode == "replay":
            _COUNTERS.add(skipped=1)
            return JudgeResult("skipped", None, "not in judge cache (replay mode)", cached=False, **base)
        api_key = os.environ.get(self.api_key_env)
        if not api_key:
            _COUNTERS.add(skipped=1)
            return JudgeResult("skipped", None, f"judge live but ${self.api_key_env} is not set", cached=False, **base)
        with self._semaphore():
            status, answer, reason, attempts, raw = self._call(req, api_key)
        if status == "ok":
            self._cache_put(key, {"answer": answer, "raw": raw, "model": self.model, "prompt_id": req.prompt_id,
                                  "prompt_version": req.prompt_version, "created_at": time.time()})
        else:
            _COUNTERS.add(failures=1)
            log.warning("judge %s/%s failed: %s", req.prompt_id, req.prompt_version, reason)
        return JudgeResult(status, answer, reason, cached=False, attempts=attempts, **base)

    def ask_many(self, reqs: list[JudgeRequest]) -> list[JudgeResult]:
        if not reqs:
            return []
        with ThreadPoolExecutor(max_workers=max(1, self.max_concurrency)) as pool:
            return list(pool.map(self.ask, reqs))

    # ------------------------------------------------------------------ internals
    def _semaphore(self) -> threading.BoundedSemaphore:
        if self._sem is None:
            self._sem = threading.BoundedSemaphore(max(1, self.max_concurrency))
        return self._sem

    def _cache_path(self, key: str) -> Path:
        return Path(self.cache_dir) / key[:2] / f"{key}.json"

    def _cache_get(self, key: str) -> Optional[dict]:
        p = self._cache_path(key)
        try:
            return json.loads(p.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return None

    def _cache_put(self, key: str, value: dict) -> None:
        p = self._cache_path(key)
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f"{p.name}.tmp-{os.getpid()}-{uuid.uuid4().hex[:8]}")
        tmp.write_text(json.dumps(value, sort_keys=True), encoding="utf-8")
        os.replace(tmp, p)

    def _client(self, api_key: str):
        import anthropic
        return anthropic.Anthropic(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    def _messages(self, req: JudgeRequest) -> list[dict]:
        content: list[dict] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                             "data": base64.b64encode(b).decode()}}
                               for b in req.images]
        content.append({"type": "text", "text": req.text})
        return [{"role": "user", "content": content}]

    def _call(self, req: JudgeRequest, api_key: str) -> tuple[str, Optional[dict], Optional[str], int, Optional[str]]:
        """(status, answer, reason, attempts, raw text). Transport retries and parse re-asks are both bounded."""
        import anthropic
        client = self._client(api_key)
        attempts = 0
        transport_failures = 0
        parse_failures = 0
        while True:
            attempts += 1
            try:
                _COUNTERS.add(network_calls=1)
                resp = client.messages.create(
                    model=self.model, max_tokens=self.max_tokens, system=req.system,
                    messages=self._messages(req),
                    tools=[{"name": TOOL_NAME, "description": "Record the structured answer.",
                            "input_schema": req.schema}],
                    tool_choice={"type": "tool", "name": TOOL_NAME})
            except anthropic.RateLimitError as e:
                wait = self._retry_after(e) or self._backoff(transport_failures)
                reason = "HTTP 429 rate limited"
            except anthropic.APIStatusError as e:
                if e.status_code < 500:
                    return "failed", None, f"HTTP {e.status_code}: {self._safe(str(e.message), api_key)}", attempts, None
                wait, reason = self._backoff(transport_failures), f"HTTP {e.status_code}"
            except anthropic.APITimeoutError:
                wait, reason = self._backoff(transport_failures), "timeout"
            except anthropic.APIConnectionError:
                wait, reason = self._backoff(transport_failures), "connection error"
            else:
                if resp.stop_reason == "refusal":
                    return "failed", None, "refused", attempts, None
                answer, raw = None, None
                for block in resp.content:
                    if block.type == "tool_use" and block.name == TOOL_NAME:
                        answer = dict(block.input)
                    elif block.type == "text":
                        raw = (raw or "") + block.text
                if answer is None and raw:
                    answer = extract_json(raw)
                problem = validate(answer, req.schema) if answer is not None else "no JSON object in the answer"
                if problem is None:
                    return "ok", answer, None, attempts, raw
                parse_failures += 1
                if parse_failures > self.parse_retries:
                    return "failed", None, f"malformed answer: {problem}", attempts, raw
                continue
            transport_failures += 1
            if transport_failures > self.max_retries:
                return "failed", None, f"{reason} after {self.max_retries} retries", attempts, None
            log.info("judge %s: %s, retrying in %.2fs", req.prompt_id, reason, wait)
            time.sleep(wait)

    def _backoff(self, n: int) -> float:
        return min(self.max_backoff_s, self.backoff_s * (2 ** n))

    def _retry_after(self, e) -> Optional[float]:
        try:
            v = float(e.response.headers.get("retry-after"))
            return min(self.max_backoff_s, max(0.0, v))
        except (TypeError, ValueError, AttributeError):
            return None

    @staticmethod
    def _safe(text: str, api_key: str) -> str:
        return text.replace(api_key, "***") if api_key else text
