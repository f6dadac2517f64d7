"""The judge: Anthropic's Messages API (vision) with structured JSON answers and a content-addressed cache.

* Modes: ``live`` (cache first, then the API), ``replay`` (cache only: a cached run is reproducible offline),
  ``off`` (everything skipped). Skips and failures carry a reason; they are never turned into scores.
* Structured output: a forced ``record_answer`` tool call whose ``input_schema`` is the request's schema; a
  text-only reply is accepted when it contains a JSON object. Answers are validated against the schema's basic
  constraints and re-asked (bounded) when they do not validate.
* Transport: our own bounded retry loop (429 honouring ``retry-after``, 5xx/529, timeouts, connection errors) on
  top of the SDK with ``max_retries=0``, so the number of attempts is exact and testable.
* The API key is read from the environment at call time, sent only in the SDK's auth header, and never stored,
  logged or returned: every string we derive from an SDK error is scrubbed of it.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import logging
import os
import random
import re
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence

import numpy as np
from dagster import ConfigurableResource

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

TOOL_NAME = "record_answer"
CACHE_FORMAT = 1  # bump when the cache entry layout changes incompatibly
Status = Literal["ok", "skipped", "failed"]


def png_bytes(image: np.ndarray) -> bytes:
    """RGB uint8 HxWx3 -> PNG bytes. Deterministic (fixed compression, no metadata), so equal pixels give an equal
    crop id and an equal cache key."""
    from PIL import Image

    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"png_bytes expects an RGB uint8 HxWx3 array, got {arr.dtype} {arr.shape}")
    buf = io.BytesIO()
    Image.fromarray(arr, mode="RGB").save(buf, format="PNG", compress_level=6, optimize=False)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------- data types

@dataclass(frozen=True)
class JudgeRequest:
    """One question to the judge. ``schema`` is the JSON schema of the expected answer object
    (``{"type": "object", "properties": ..., "required": [...]}``); ``images`` are PNG bytes, sent before the text.
    ``params`` are prompt parameters kept in the cache key (and the cache entry) for provenance."""
    prompt_id: str
    prompt_version: str
    system: str
    text: str
    schema: dict
    images: Sequence[bytes] = ()
    params: dict = field(default_factory=dict)


@dataclass(frozen=True)
class JudgeResult:
    status: Status
    answer: Optional[dict]
    reason: Optional[str]
    cache_key: str
    cached: bool
    model: str
    prompt_id: str
    prompt_version: str
    attempts: int = 0  # HTTP requests made for this answer (0 for cache hits and skips)

    def to_record(self) -> dict[str, Any]:
        """JSON-able; holds nothing but the fields above (the key is never in a result)."""
        return asdict(self)


# ----------------------------------------------------------------------------------------------- validation

_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "number": (int, float), "integer": (int, float), "string": (str,), "boolean": (bool,),
    "array": (list,), "object": (dict,), "null": (type(None),)}


def _is_type(value: Any, t: str) -> bool:
    if not isinstance(value, _JSON_TYPES[t]):
        return False
    if t in ("number", "integer") and isinstance(value, bool):  # bool is an int in Python, not in JSON
        return False
    if t == "integer" and isinstance(value, float):
        return value.is_integer()  # JSON Schema: 1.0 is an integer
    return True


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON sees it: true is not 1 (Python's ``True == 1`` would let a boolean pass an int enum)."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def validate_answer(value: Any, schema: dict, path: str = "answer") -> Optional[str]:
    """None when ``value`` satisfies the schema's basic constraints (type, required, properties, items, enum,
    minimum/maximum, exclusive bounds, minItems/maxItems), else a short description of the first problem."""
    t = schema.get("type")
    if t is not None:
        types = [x for x in (t if isinstance(t, list) else [t]) if x in _JSON_TYPES]
        if types and not any(_is_type(value, x) for x in types):
            return f"{path} should be {'|'.join(types)}, got {type(value).__name__} {value!r:.60}"
    if "enum" in schema and not any(_json_equal(value, e) for e in schema["enum"]):
        return f"{path} = {value!r:.60} not in {schema['enum']}"
    if _is_type(value, "number"):
        for bound, bad, word in (("minimum", lambda b: value < b, "below minimum"),
                                 ("maximum", lambda b: value > b, "above maximum"),
                                 ("exclusiveMinimum", lambda b: value <= b, "not above exclusiveMinimum"),
                                 ("exclusiveMaximum", lambda b: value >= b, "not below exclusiveMaximum")):
            if isinstance(schema.get(bound), (int, float)) and bad(schema[bound]):
                return f"{path} = {value} {word} {schema[bound]}"
    if isinstance(value, dict):
        for key in schema.get("required", []):
            if key not in value:
                return f"missing required field {path}.{key}"
        for key, sub in schema.get("properties", {}).items():
            if key in value and isinstance(sub, dict):
                problem = validate_answer(value[key], sub, f"{path}.{key}")
                if problem:
                    return problem
    if isinstance(value, list):
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            return f"{path} has {len(value)} items, fewer than {schema['minItems']}"
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            return f"{path} has {len(value)} items, more than {schema['maxItems']}"
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                problem = validate_answer(item, schema["items"], f"{path}[{i}]")
                if problem:
                    return problem
    return None


_FENCED = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.S)


def extract_json(text: str) -> Optional[dict]:
    """The JSON object in a text reply: a fenced ```json block first, else the first ``{...}`` that parses."""
    decoder = json.JSONDecoder()
    for chunk in [m.group(1) for m in _FENCED.finditer(text)] + [text]:
        for m in re.finditer(r"\{", chunk):
            try:
                value, _ = decoder.raw_decode(chunk, m.start())
            except json.JSONDecodeError:
                continue
            if isinstance(value, dict):
                return value
    return None


# ----------------------------------------------------------------------------------------------- shared state

class _State:
    """Counters and the in-flight bound of one judge configuration.

    Dagster re-instantiates a ConfigurableResource for each run (private attributes do not survive), so the state
    lives in a module-level registry keyed by the resource's config: the runner's judge object and the copies the
    assets receive share one set of counters and one semaphore. Per process."""

    def __init__(self, max_concurrency: int) -> None:
        self.lock = threading.Lock()
        self.counts = {"network_calls": 0, "cache_hits": 0, "failures": 0, "skipped": 0}
        self.semaphore = threading.BoundedSemaphore(max(1, max_concurrency))

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] += n


_STATES: dict[str, _State] = {}
_STATES_LOCK = threading.Lock()


class _Outcome:
    """What one conversation with the API produced (internal)."""
    __slots__ = ("status", "answer", "reason", "attempts", "raw", "usage", "response_model")

    def __init__(self, status: Status, answer: Optional[dict] = None, reason: Optional[str] = None,
                 attempts: int = 0, raw: Optional[str] = None, usage: Optional[dict] = None,
                 response_model: Optional[str] = None) -> None:
        self.status, self.answer, self.reason, self.attempts = status, answer, reason, attempts
        self.raw, self.usage, self.response_model = raw, usage, response_model


# ----------------------------------------------------------------------------------------------- the resource

class Judge(ConfigurableResource):
    """One judge interface for every benchmark; Anthropic Claude (vision) behind it."""

    mode: Literal["live", "replay", "off"] = "off"
    model: str = "claude-sonnet-4-6"  # claude-sonnet-4-5 reaches end-of-life on 2026-11-30 (SDK deprecation list)
    base_url: Optional[str] = None  # None: the SDK default (or $ANTHROPIC_BASE_URL)
    api_key_env: str = "ANTHROPIC_API_KEY"  # the *name* of the variable; its value is never stored
    cache_dir: str = ".bench/judge_cache"
    max_retries: int = 4  # transport retries per question (429, 5xx, timeouts, connection errors)
    backoff_s: float = 1.0  # first backoff; doubles per retry, capped at max_backoff_s
    max_backoff_s: float = 30.0  # also caps a server's retry-after
    timeout_s: float = 60.0
    max_concurrency: int = 4  # requests in flight at once, across ask_many calls and Dagster copies
    max_tokens: int = 1024
    # None: not sent. The SDK (2.x) speaks API version 2026-10-21, which has no sampling parameters and answers
    # 400 to any of them; a value is sent via extra_body, for gateways or API versions that still accept it.
    temperature: Optional[float] = None
    parse_retries: int = 1  # re-asks when the answer does not parse or validate

    # ------------------------------------------------------------------ public

    def available(self) -> tuple[bool, str]:
        if self.mode == "off":
            return False, "judge off"
        if self.mode == "live" and not os.environ.get(self.api_key_env):
            return False, self._no_key_reason()
        return True, self.mode

    def fingerprint(self) -> dict[str, Any]:
        """Prompt-independent settings that shape the answers, for the run manifest (no key, no paths)."""
        # mode stays out: a replayed answer is the live answer, so live and replay runs stay comparable
        return {"backend": "anthropic-messages", "model": self.model,
                "max_tokens": self.max_tokens, "temperature": self.temperature,
                "structured_output": f"tool:{TOOL_NAME}", "parse_retries": self.parse_retries,
                "cache_format": CACHE_FORMAT}

    def stats(self) -> dict[str, int]:
        """Per-process counters of this configuration: HTTP requests sent, cache hits, failed and skipped asks."""
        st = self._state()
        with st.lock:
            return dict(st.counts)

    def cache_key(self, req: JudgeRequest) -> str:
        payload = {"model": self.model, "prompt_id": req.prompt_id, "prompt_version": req.prompt_version,
                   "system": req.system, "text": req.text,
                   "images": [hashlib.sha256(b).hexdigest() for b in req.images],
                   "schema": req.schema, "params": req.params,
                   "max_tokens": self.max_tokens, "temperature": self.temperature}
        return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()

    def cache_path(self, key: str) -> Path:
        return Path(self.cache_dir) / key[:2] / f"{key}.json"

    def ask(self, req: JudgeRequest) -> JudgeResult:
        return self._ask(req, client=None)

    def ask_many(self, reqs: Sequence[JudgeRequest]) -> list[JudgeResult]:
        """``ask`` over a thread pool of ``max_concurrency`` workers sharing one HTTP client; order preserved.
        Identical requests in one batch are asked once (they would all miss the cache together): the repeats get
        the first one's result, as a cache hit when it is ok."""
        reqs = list(reqs)
        if not reqs:
            return []
        keys = [self.cache_key(r) for r in reqs]
        first: dict[str, int] = {}
        for i, k in enumerate(keys):
            first.setdefault(k, i)
        unique = [reqs[i] for i in first.values()]
        api_key = os.environ.get(self.api_key_env) if self.mode == "live" else None
        with (self._open_client(api_key) if api_key else nullcontext()) as client:
            workers = min(max(1, self.max_concurrency), len(unique))
            if workers == 1:
                answered = [self._ask(r, client) for r in unique]
            else:
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
                    answered = list(pool.map(lambda r: self._ask(r, client), unique))
        by_key = dict(zip(first, answered))
        st = self._state()
        out = []
        for i, k in enumerate(keys):
            res = by_key[k]
            if first[k] != i:  # a repeat: count it as what it would have been, one ask later
                st.add({"ok": "cache_hits", "failed": "failures", "skipped": "skipped"}[res.status])
                if res.status == "ok":
                    res = replace(res, cached=True, attempts=0)
            out.append(res)
        return out

    # ------------------------------------------------------------------ the ask path

    def _ask(self, req: JudgeRequest, client: Optional["anthropic.Anthropic"]) -> JudgeResult:
        key = self.cache_key(req)
        st = self._state()

        def result(status: Status, answer: Optional[dict] = None, reason: Optional[str] = None,
                   cached: bool = False, attempts: int = 0) -> JudgeResult:
            return JudgeResult(status, answer, reason, key, cached, self.model, req.prompt_id, req.prompt_version,
                               attempts)

        if self.mode == "off":
            st.add("skipped")
            return result("skipped", reason="judge off")
        entry = self._cache_get(key, req.schema)
        if entry is not None:
            st.add("cache_hits")
            return result("ok", entry["answer"], cached=True)
        if self.mode == "replay":
            st.add("skipped")
            return result("skipped", reason="not in judge cache (replay mode)")
        api_key = os.environ.get(self.api_key_env)
        if not api_key:
            st.add("skipped")
            return result("skipped", reason=self._no_key_reason())

        with st.semaphore, (nullcontext(client) if client is not None else self._open_client(api_key)) as c:
            out = self._converse(c, req, api_key)
        if out.status == "ok":
            try:
                self._cache_put(key, req, out)
            except OSError as e:  # an unwritable cache costs a re-ask later, not this answer
                log.warning("judge cache write failed for %s: %s", key, e)
        else:
            st.add("failures")
            log.warning("judge %s/%s failed after %d request(s): %s", req.prompt_id, req.prompt_version,
                        out.attempts, out.reason)
        return result(out.status, out.answer, out.reason, attempts=out.attempts)

    def _converse(self, client: "anthropic.Anthropic", req: JudgeRequest, api_key: str) -> _Outcome:
        """Ask until a valid answer, a refusal, a non-retryable error, or a retry budget is spent.
        Transport retries and parse re-asks have separate bounds; ``attempts`` counts every HTTP request."""
        import anthropic

        first_turn = {"role": "user", "content": self._content(req)}
        messages: list[dict] = [first_turn]
        tools = [{"name": TOOL_NAME, "description": "Record your answer as a JSON object matching the schema.",
                  "input_schema": req.schema}]
        attempts = transport_retries = parse_failures = 0
        st = self._state()
        while True:
            attempts += 1
            st.add("network_calls")
            try:
                resp = client.messages.create(
                    model=self.model, max_tokens=self.max_tokens, system=req.system, messages=messages,
                    tools=tools, tool_choice={"type": "tool", "name": TOOL_NAME, "disable_parallel_tool_use": True},
                    extra_body=({"temperature": self.temperature} if self.temperature is not None else None))
            except anthropic.APIStatusError as e:
                code = e.status_code
                if code != 429 and code < 500:  # the request itself is wrong: asking again will not help
                    return _Outcome("failed", reason=_scrub(f"HTTP {code}: {_error_message(e)}", api_key),
                                    attempts=attempts)
                wait = (self._retry_after(e.response.headers) if code == 429 else None)
                why = f"HTTP {code}"
            except anthropic.APITimeoutError:  # before APIConnectionError: it is a subclass
                wait, why = None, "timeout"
            except anthropic.APIConnectionError:
                wait, why = None, "connection error"
            except anthropic.APIError as e:  # e.g. a response the SDK could not read
                return _Outcome("failed", reason=_scrub(f"API error: {type(e).__name__}: {e}", api_key),
                                attempts=attempts)
            else:
                if resp.stop_reason == "refusal":
                    return _Outcome("failed", reason="refused", attempts=attempts)
                answer, raw, tool_id, echo = _read_reply(resp)
                if answer is None and raw:
                    answer = extract_json(raw)
                problem = ("no JSON object in the reply" if answer is None
                           else validate_answer(answer, req.schema))
                usage = resp.usage.model_dump(exclude_none=True) if resp.usage is not None else None
                if problem is None:
                    return _Outcome("ok", answer, attempts=attempts, raw=raw, usage=usage,
                                    response_model=getattr(resp, "model", None))
                parse_failures += 1
                if parse_failures > self.parse_retries:
                    return _Outcome("failed", reason=f"malformed answer: {problem}", attempts=attempts, raw=raw)
                log.info("judge %s: malformed answer (%s), asking again", req.prompt_id, problem)
                # Re-ask with the bad reply and what is wrong with it: a plain resend of the same prompt would
                # likely reproduce the same answer. Only the latest bad reply is kept (bounded size).
                messages = [first_turn, *_correction(echo, tool_id, problem)]
                continue
            transport_retries += 1
            if transport_retries > self.max_retries:
                return _Outcome("failed", reason=f"{why} after {self.max_retries} retries", attempts=attempts)
            if wait is None:
                wait = self._backoff(transport_retries - 1)
            log.info("judge %s: %s, retry %d/%d in %.2fs", req.prompt_id, why, transport_retries,
                     self.max_retries, wait)
            time.sleep(wait)

    # ------------------------------------------------------------------ internals

    def _state(self) -> _State:
        ident = _canonical({name: getattr(self, name) for name in type(self).model_fields})
        with _STATES_LOCK:
            st = _STATES.get(ident)
            if st is None:
                st = _STATES[ident] = _State(self.max_concurrency)
            return st

    def _no_key_reason(self) -> str:
        return f"judge live but ${self.api_key_env} is not set"

    def _open_client(self, api_key: str) -> "anthropic.Anthropic":
        import anthropic

        # max_retries=0: the retry loop is ours (bounded, counted, testable).
        return anthropic.Anthropic(api_key=api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout_s)

    @staticmethod
    def _content(req: JudgeRequest) -> list[dict]:
        blocks: list[dict] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                            "data": base64.b64encode(b).decode("ascii")}}
                              for b in req.images]
        blocks.append({"type": "text", "text": req.text})
        return blocks

    def _backoff(self, n: int) -> float:
        """Exponential, capped, with jitter in [50%, 100%] so concurrent workers do not retry in lockstep."""
        return min(self.max_backoff_s, self.backoff_s * 2 ** n) * random.uniform(0.5, 1.0)

    def _retry_after(self, headers: Any) -> Optional[float]:
        """Seconds from ``retry-after-ms`` / ``retry-after`` (numeric form), capped; None when absent."""
        for name, scale in (("retry-after-ms", 1e-3), ("retry-after", 1.0)):
            try:
                value = float(headers.get(name)) * scale
            except (TypeError, ValueError):
                continue
            return min(self.max_backoff_s, max(0.0, value))
        return None

    def _cache_get(self, key: str, schema: dict) -> Optional[dict]:
        path = self.cache_path(key)
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("judge cache entry %s unreadable (%s); treated as a miss", path, type(e).__name__)
            return None
        if not isinstance(entry, dict) or validate_answer(entry.get("answer"), schema) is not None:
            log.warning("judge cache entry %s does not hold a valid answer; treated as a miss", path)
            return None
        return entry

    def _cache_put(self, key: str, req: JudgeRequest, out: _Outcome) -> None:
        """Atomic and safe across processes: write a temp file in the same directory, then os.replace. Two writers
        of one key write equivalent content, so last-writer-wins is fine."""
        entry = {"cache_format": CACHE_FORMAT, "cache_key": key, "answer": out.answer,
                 "model": self.model, "response_model": out.response_model,
                 "prompt_id": req.prompt_id, "prompt_version": req.prompt_version,
                 "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "attempts": out.attempts, "raw_text": out.raw, "usage": out.usage,
                 "request": {"system": req.system, "text": req.text, "params": req.params, "schema": req.schema,
                             "image_sha256": [hashlib.sha256(b).hexdigest() for b in req.images],
                             "max_tokens": self.max_tokens, "temperature": self.temperature}}
        path = self.cache_path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{key}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(entry, f, sort_keys=True, ensure_ascii=False, indent=1)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


# ----------------------------------------------------------------------------------------------- helpers

def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


def _error_message(e: "anthropic.APIStatusError") -> str:
    body = e.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and body["error"].get("message"):
        return str(body["error"]["message"])
    return str(e.message)


def _read_reply(resp: Any) -> tuple[Optional[dict], Optional[str], Optional[str], list[dict]]:
    """(tool input, concatenated text, tool_use id, the reply's blocks re-encoded for a follow-up turn)."""
    answer: Optional[dict] = None
    tool_id: Optional[str] = None
    texts: list[str] = []
    echo: list[dict] = []
    for block in resp.content:
        if block.type == "tool_use" and block.name == TOOL_NAME and answer is None:
            answer = block.input if isinstance(block.input, dict) else None
            tool_id = block.id
            echo.append({"type": "tool_use", "id": block.id, "name": block.name, "input": block.input})
        elif block.type == "text" and block.text:
            texts.append(block.text)
            echo.append({"type": "text", "text": block.text})
    return answer, ("\n".join(texts) if texts else None), tool_id, echo


def _correction(echo: list[dict], tool_id: Optional[str], problem: str) -> list[dict]:
    """The follow-up turns of a re-ask: the bad reply, then what was wrong with it."""
    note = (f"The answer could not be used: {problem}. "
            f"Call the {TOOL_NAME} tool again with a JSON object that satisfies its input schema.")
    if not echo:
        return []  # nothing to show back: a plain resend
    if tool_id is not None:
        feedback = [{"type": "tool_result", "tool_use_id": tool_id, "is_error": True, "content": note}]
    else:
        feedback = [{"type": "text", "text": note}]
    return [{"role": "assistant", "content": echo}, {"role": "user", "content": feedback}]
