"""The judge: one interface to vision LLMs with structured JSON answers and a content-addressed cache.

Backends (``backend=``), chosen per judge configuration, with the same cache, retries, deadlines, concurrency
bound, circuit breaker and failure counting:

* ``anthropic`` (default): Anthropic's Messages API through the SDK; the answer is a forced ``record_answer`` tool
  call whose ``input_schema`` is the request's schema. Only the tool input is an answer: a text reply (a refusal
  that shows an example answer, prose around a JSON object) is a counted failure with its text kept (bounded).
* ``openai``: any OpenAI-compatible ``POST {base_url}/chat/completions`` server (vLLM, SGLang, Ollama, OpenAI,
  gateways). Images go as ``image_url`` parts with ``data:image/png;base64,...`` URLs before the text; the schema
  is spelled out in the prompt and enforced with ``response_format`` (``structured_output``: json_schema |
  json_object | prompt). The answer is the message content parsed as a whole (or a tool call's arguments), never
  the first JSON object found in free text; ``prompt`` alone also takes content that is one fenced JSON block.
  ``base_url`` is the API root, e.g. ``http://127.0.0.1:8000/v1``.

Using it (the whole API)::

    judge = Judge(mode="live", backend="openai", base_url="http://gpu:8000/v1",
                  model="Qwen/Qwen2.5-VL-7B-Instruct", api_key_env="", temperature=0.0)
    res = judge.ask(JudgeRequest(prompt_id, version, system, text, schema, images=[png_bytes(rgb)]))
    res.status in ("ok", "skipped", "failed"); res.answer (a dict valid for schema) or res.reason
    results = judge.ask_many(requests)                 # concurrent, order kept, repeats asked once
    answerer = judge.for_endpoint(backend="openai", base_url=..., model=..., api_key_env="VLLM_KEY")
    meta = evaluator_failures(results)                 # {"evaluator_failures": n, "evaluator_failure_reasons": ..}
    judge.fingerprint()   # answer-shaping settings for the manifest (backend, model, sampling; never the key)
    judge.state()         # mode, backend, model, endpoint, key_set: what decides whether failures would now pass

* Modes: ``live`` (cache first, then the API), ``replay`` (cache only, and only when asked for: a cached run is
  reproducible offline), ``off`` (no call and no cache read: every question is ``not evaluated`` by choice).
  Skips and failures carry a reason; they are never turned into scores. A failure, a replay miss or a missing key
  is an evaluator failure (not the generator's, and never final: the question is re-asked by the next run);
  ``judge off`` is not: ``evaluator_failures(results)`` counts the two apart for an asset's metadata.
* Bounds: an answer (``MAX_ANSWER_BYTES`` as canonical JSON), a reply body (``MAX_BODY_BYTES``), the text kept
  from a refusal or a stored raw reply (``MAX_TEXT_KEPT``) and every reason are bounded in bytes; fields the
  schema does not name are dropped from an answer.
* Counts: ``judge_counters()`` gives this process's HTTP requests by endpoint, answers reused from the cache and
  questions re-asked after an earlier failure (a failure leaves a small marker in
  ``<cache_dir>_failures``).
* Every reply the server can send is an answer or a counted failure with its reason: HTTP errors, timeouts,
  connection errors, and HTTP 200 bodies that are truncated JSON, HTML, JSON of the wrong shape, ``content: null``,
  a bare string, an error object or empty. Unusable replies and answers that do not validate against the schema
  are re-asked (``parse_retries``); no exception from a reply reaches the caller.
* Time: ``timeout_s`` bounds one HTTP request as a whole (connect to last byte; a server dripping one byte per
  second cannot hold it open, see judge_transport.py); ``deadline_s`` bounds one question (all requests, backoffs
  and re-asks); ``max_retries`` bounds transport retries (429 honouring ``retry-after``, 5xx, timeouts, connection
  errors). After ``breaker_threshold`` consecutive questions lost to the endpoint itself (connect errors,
  timeouts, 5xx; not 429 and not a bad answer, which show the endpoint is up), questions fail at once for
  ``breaker_cooldown_s``; then one question probes the endpoint, and its outcome closes or reopens the breaker.
  Our loop sits on top of clients with ``max_retries=0``, so attempts are exact.
* Sampling parameters (``temperature``, ``top_p``, ``seed``) are sent only when set, and are part of the
  fingerprint, the cache key and the cache entry.
* The API key is read from the environment variable named by ``api_key_env`` at call time (default
  ``ANTHROPIC_API_KEY`` / ``OPENAI_API_KEY`` by backend; ``""``: none, for local servers), sent only in the auth
  header, and never stored, logged or returned: every string we derive from an error is scrubbed of it.
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
from typing import TYPE_CHECKING, Any, Iterable, Literal, Optional, Sequence

import numpy as np
from dagster import ConfigurableResource

from bench_resources.judge_transport import bounded_httpx2_client, bounded_httpx_client, request_deadline

if TYPE_CHECKING:
    import anthropic

log = logging.getLogger(__name__)

TOOL_NAME = "record_answer"
CACHE_FORMAT = 1  # bump when the cache entry layout changes incompatibly
Status = Literal["ok", "skipped", "failed"]
JUDGE_OFF = "judge off"  # the reason of every question when the judge is switched off: not evaluated, by choice
MAX_ANSWER_BYTES = 16_384  # one answer as canonical JSON; judge answers are a few fields (a 5 MB one is refused)
MAX_BODY_BYTES = 1_048_576  # one HTTP reply body
MAX_TEXT_KEPT = 400  # characters of a refusal / text reply kept in a reason, and of raw text in a cache entry
MAX_REASON = 600  # characters of any reason a result carry

_COUNTS_LOCK = threading.Lock()
_COUNTS: dict[str, Any] = {"requests_by_endpoint": {}, "answers_reused": 0, "questions_reasked": 0,
                           "questions_asked": 0}


def judge_counters() -> dict[str, Any]:
    """This process's judge traffic over every configuration (judge and answerer cards alike): HTTP requests by
    endpoint (``backend model @ url``), answers reused from the cache, questions sent to an endpoint and, of those,
    questions re-asked after an earlier failure. The runner diffs two snapshots for a run's summary."""
    with _COUNTS_LOCK:
        return {**_COUNTS, "requests_by_endpoint": dict(_COUNTS["requests_by_endpoint"])}


def _count(name: str, n: int = 1, endpoint: Optional[str] = None) -> None:
    with _COUNTS_LOCK:
        if endpoint is not None:
            by = _COUNTS["requests_by_endpoint"]
            by[endpoint] = by.get(endpoint, 0) + n
        else:
            _COUNTS[name] += n


def bounded(text: Optional[str], limit: int = MAX_TEXT_KEPT) -> Optional[str]:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if text is None or len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters cut]"


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


def structured_json(text: str, allow_fence: bool = False) -> tuple[Optional[Any], Optional[str]]:
    """``(value, None)`` when ``text`` as a whole is JSON (``allow_fence``: or is one fenced ```json block and
    nothing else), else ``(None, why)``. A JSON object inside prose is not an answer: a refusal that shows an
    example answer would otherwise be scored."""
    body = text.strip()
    if allow_fence:
        m = re.fullmatch(r"```(?:json|JSON)?\s*\n?(.*?)```", body, re.S)
        if m:
            body = m.group(1).strip()
    try:
        return json.loads(body), None
    except ValueError:
        return None, f"not a JSON answer (text reply: {json.dumps(bounded(body, MAX_TEXT_KEPT))})"


def bound_answer(answer: dict, schema: dict) -> tuple[Optional[dict], Optional[str]]:
    """The answer with the fields the schema does not name dropped, or ``(None, why)`` when it is larger than
    ``MAX_ANSWER_BYTES`` as canonical JSON."""
    props = schema.get("properties")
    if isinstance(props, dict) and props and schema.get("additionalProperties") is not True:
        answer = {k: v for k, v in answer.items() if k in props}
    size = len(_canonical(answer).encode("utf-8"))
    if size > MAX_ANSWER_BYTES:
        return None, f"answer of {size} bytes exceeds the {MAX_ANSWER_BYTES}-byte bound"
    return answer, None


def extract_json(text: str) -> Optional[dict]:
    """The JSON object in free text: a fenced ```json block first, else the first ``{...}`` that parses. For
    parsing a generator's free-text output (an answerer under test), never a judge's answer."""
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
    """Counters, the in-flight bound and the circuit breaker of one judge configuration.

    Dagster re-instantiates a ConfigurableResource for each run (private attributes do not survive), so the state
    lives in a module-level registry keyed by the resource's config: the runner's judge object and the copies the
    assets receive share one set of counters and one semaphore. Per process."""

    def __init__(self, max_concurrency: int) -> None:
        self.lock = threading.Lock()
        self.counts = {"network_calls": 0, "cache_hits": 0, "failures": 0, "skipped": 0}
        self.semaphore = threading.BoundedSemaphore(max(1, max_concurrency))
        self.transport_failures = 0  # consecutive questions lost to the endpoint (timeouts, 5xx, refused connects)
        self.last_transport_reason = ""
        self.open_until = 0.0  # monotonic instant until which questions fail fast
        self.probing = False  # the breaker let one question through after its pause; the rest fail fast meanwhile
        self.last_ok_at = 0.0  # monotonic instant the endpoint last answered (a question lost before it proves nothing)

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] += n


_STATES: dict[str, _State] = {}
_STATES_LOCK = threading.Lock()


class _Outcome:
    """What one conversation with the API produced (internal)."""
    __slots__ = ("status", "answer", "reason", "attempts", "raw", "usage", "response_model", "transport")

    def __init__(self, status: Status, answer: Optional[dict] = None, reason: Optional[str] = None,
                 attempts: int = 0, raw: Optional[str] = None, usage: Optional[dict] = None,
                 response_model: Optional[str] = None, transport: bool = False) -> None:
        self.status, self.answer, self.reason, self.attempts = status, answer, reason, attempts
        self.raw, self.usage, self.response_model = raw, usage, response_model
        self.transport = transport  # failed because the endpoint did not answer (feeds the circuit breaker)


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


# ----------------------------------------------------------------------------------------------- the resource

class Judge(ConfigurableResource):
    """One judge interface for every benchmark: Anthropic's Messages API or any OpenAI-compatible server behind it.
    See the module docstring for the backends, the time bounds and the failure accounting."""

    mode: Literal["live", "replay", "off"] = "off"
    backend: Literal["anthropic", "openai"] = "anthropic"
    model: str = "claude-sonnet-4-6"  # claude-sonnet-4-5 reaches end-of-life on 2026-11-30 (SDK deprecation list)
    base_url: Optional[str] = None  # None: the vendor default (anthropic: the SDK's or $ANTHROPIC_BASE_URL)
    # The *name* of the variable holding the key; its value is never stored. None: ANTHROPIC_API_KEY for the
    # anthropic backend, OPENAI_API_KEY for openai (never one vendor's key to another's server). "": no key
    # (openai backend: local vLLM / SGLang / Ollama servers that need none).
    api_key_env: Optional[str] = None
    cache_dir: str = ".bench/judge_cache"
    max_retries: int = 4  # transport retries per question (429, 5xx, timeouts, connection errors)
    backoff_s: float = 1.0  # first backoff; doubles per retry, capped at max_backoff_s
    max_backoff_s: float = 30.0  # also caps a server's retry-after
    timeout_s: float = 60.0  # one HTTP request, first connect to last byte (not per read)
    deadline_s: float = 150.0  # one question: every request, backoff and re-ask together
    # After this many consecutive questions lost to the endpoint (timeouts, 5xx, connection errors after retries;
    # a bad answer or a 429 shows the endpoint is up and resets the count), questions fail at once for
    # breaker_cooldown_s, then one probe decides: a dead endpoint costs one deadline per pause, not one per
    # question. 0 disables. The failures are evaluator failures, re-asked by a later run.
    breaker_threshold: int = 5
    breaker_cooldown_s: float = 5.0  # the pause before one question probes the endpoint again
    max_concurrency: int = 4  # requests in flight at once, across ask_many calls and Dagster copies
    max_tokens: int = 1024
    # None: not sent. The anthropic SDK (2.x) speaks API version 2026-10-21, which has no sampling parameters and
    # answers 400 to any of them; a value is sent via extra_body, for gateways or API versions that accept it.
    # OpenAI-compatible servers take them in the body. Recorded in the fingerprint and the cache key.
    temperature: Optional[float] = None
    top_p: Optional[float] = None
    seed: Optional[int] = None
    parse_retries: int = 1  # re-asks when the answer (or the reply body) does not parse or validate
    # openai backend only: how the schema is enforced. json_schema: response_format json_schema (vLLM, SGLang,
    # Ollama >= 0.5, OpenAI); json_object: JSON mode only; prompt: the schema in the prompt only.
    structured_output: Literal["json_schema", "json_object", "prompt"] = "json_schema"

    # ------------------------------------------------------------------ public

    def key_variable(self) -> str:
        """The environment variable the key is read from ("" when this configuration needs no key)."""
        if self.api_key_env is not None:
            return self.api_key_env
        return "OPENAI_API_KEY" if self.backend == "openai" else "ANTHROPIC_API_KEY"

    def available(self) -> tuple[bool, str]:
        if self.mode == "off":
            return False, "judge off"
        if self.mode == "live" and self._api_key() is None:
            return False, self._no_key_reason()
        return True, self.mode

    def for_endpoint(self, *, model: str, backend: Optional[str] = None, base_url: Optional[str] = None,
                     api_key_env: Optional[str] = None, **settings: Any) -> "Judge":
        """This judge (mode, cache, retries, bounds) pointed at another model / server, e.g. an answerer card:
        ``judge.for_endpoint(backend="openai", base_url="http://gpu:8000/v1", model="Qwen/Qwen2.5-VL-7B-Instruct",
        api_key_env="", temperature=0.0)``. Unset arguments keep this judge's values, except that switching
        backend without naming ``api_key_env`` uses the new backend's default variable."""
        update: dict[str, Any] = {"model": model, **settings}
        if backend is not None and backend != self.backend:
            update["backend"] = backend
            update["base_url"] = base_url
            update["api_key_env"] = api_key_env
        else:
            if base_url is not None:
                update["base_url"] = base_url
            if api_key_env is not None:
                update["api_key_env"] = api_key_env
        return self.model_copy(update=update)

    def fingerprint(self) -> dict[str, Any]:
        """Prompt-independent settings that shape the answers, for the run manifest (no key, no paths)."""
        # mode stays out: a replayed answer is the live answer, so live and replay runs stay comparable
        fp: dict[str, Any] = {"backend": _BACKEND_IDS[self.backend], "model": self.model,
                              "max_tokens": self.max_tokens, "temperature": self.temperature,
                              "structured_output": self._structured_id(), "parse_retries": self.parse_retries,
                              "cache_format": CACHE_FORMAT}
        fp.update({k: v for k, v in (("top_p", self.top_p), ("seed", self.seed)) if v is not None})
        return fp

    def state(self) -> dict[str, Any]:
        """What decides whether a question that failed or was skipped would now be answered: mode, backend,
        model, endpoint (host only) and whether a key is set (never the key). The runner re-evaluates partitions
        that had evaluator failures when this changes."""
        return {"mode": self.mode, "backend": _BACKEND_IDS[self.backend], "model": self.model,
                "endpoint": _endpoint_id(self.base_url), "key_set": self._api_key() not in (None, "")}

    def state_digest(self) -> str:
        """A short digest of ``state()`` (16 hex characters), for materialization metadata."""
        return hashlib.sha256(_canonical(self.state()).encode("utf-8")).hexdigest()[:16]

    def endpoint_label(self) -> str:
        """``backend model @ endpoint`` (no credentials): the key of ``judge_counters()['requests_by_endpoint']``."""
        return f"{_BACKEND_IDS[self.backend]} {self.model} @ {_endpoint_id(self.base_url) or 'default'}"

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
        # Added only when not the default, so the keys of existing anthropic caches stay valid.
        if self.backend != "anthropic":
            payload["backend"] = self.backend
            payload["structured_output"] = self.structured_output
        payload.update({k: v for k, v in (("top_p", self.top_p), ("seed", self.seed)) if v is not None})
        return hashlib.sha256(_canonical(payload).encode("utf-8")).hexdigest()

    def cache_path(self, key: str) -> Path:
        return Path(self.cache_dir) / key[:2] / f"{key}.json"

    def ask(self, req: JudgeRequest) -> JudgeResult:
        return self._ask(req, session=None)

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
        api_key = self._api_key() if self.mode == "live" else None
        with (self._open_session(api_key) if api_key is not None else nullcontext()) as session:
            workers = min(max(1, self.max_concurrency), len(unique))
            if workers == 1:
                answered = [self._ask(r, session) for r in unique]
            else:
                with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="judge") as pool:
                    answered = list(pool.map(lambda r: self._ask(r, session), unique))
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

    def _ask(self, req: JudgeRequest, session: Optional["_Session"]) -> JudgeResult:
        key = self.cache_key(req)
        st = self._state()

        def result(status: Status, answer: Optional[dict] = None, reason: Optional[str] = None,
                   cached: bool = False, attempts: int = 0) -> JudgeResult:
            return JudgeResult(status, answer, reason, key, cached, self.model, req.prompt_id, req.prompt_version,
                               attempts)

        if self.mode == "off":  # not evaluated, by choice: no call and no cache read
            st.add("skipped")
            return result("skipped", reason=JUDGE_OFF)
        entry = self._cache_get(key, req.schema)
        if entry is not None:
            st.add("cache_hits")
            _count("answers_reused")
            return result("ok", entry["answer"], cached=True)
        if self.mode == "replay":
            st.add("skipped")
            return result("skipped", reason="not in judge cache (replay mode)")
        api_key = self._api_key()
        if api_key is None:
            st.add("skipped")
            return result("skipped", reason=self._no_key_reason())
        open_reason = self._breaker_open(st)
        if open_reason:
            st.add("failures")
            return result("failed", reason=open_reason)

        marker = self._failure_path(key)
        started = time.monotonic()
        _count("questions_asked")
        if marker.exists():
            _count("questions_reasked")
        try:
            with st.semaphore, (nullcontext(session) if session is not None
                                else self._open_session(api_key)) as s:
                out = self._converse(s, req, api_key)
        except Exception as e:  # noqa: BLE001 - whatever a reply does, it is one counted failure, never an abort
            log.exception("judge %s: unexpected error", req.prompt_id)
            out = _Outcome("failed", reason=_scrub(f"judge error: {type(e).__name__}: {e}", api_key)[:300])
        self._breaker_record(st, out, started)
        out.reason = bounded(out.reason, MAX_REASON)
        if out.status == "ok":
            try:
                self._cache_put(key, req, out)
                marker.unlink(missing_ok=True)
            except OSError as e:  # an unwritable cache costs a re-ask later, not this answer
                log.warning("judge cache write failed for %s: %s", key, e)
        else:
            st.add("failures")
            self._mark_failed(marker, req, out)
            log.warning("judge %s/%s failed after %d request(s): %s", req.prompt_id, req.prompt_version,
                        out.attempts, out.reason)
        return result(out.status, out.answer, out.reason, attempts=out.attempts)

    def has_failed_questions(self) -> bool:
        """Whether a question asked under this cache failed and has not been answered since (its marker is left):
        what makes re-running a judge-using asset worth it."""
        cache = Path(self.cache_dir)
        root = cache.with_name(cache.name + "_failures")
        return root.is_dir() and any(f.is_file() for d in root.iterdir() if d.is_dir() for f in d.iterdir())

    def _failure_path(self, key: str) -> Path:
        """Beside the cache, not in it (the cache holds answers only): ``<cache_dir>_failures/<key>``."""
        cache = Path(self.cache_dir)
        return cache.with_name(cache.name + "_failures") / key[:2] / key

    def _mark_failed(self, marker: Path, req: JudgeRequest, out: _Outcome) -> None:
        """A small marker beside the cache entries: the next ask of this question counts as a re-ask."""
        try:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(_canonical({"prompt_id": req.prompt_id, "reason": bounded(out.reason, 200),
                                          "at": datetime.now(timezone.utc).isoformat(timespec="seconds")}),
                              encoding="utf-8")
        except OSError:
            pass

    def _converse(self, session: "_Session", req: JudgeRequest, api_key: str) -> _Outcome:
        """Ask until a valid answer, a refusal, a non-retryable error, a retry budget or the question's deadline
        is spent. Transport retries and parse re-asks have separate bounds; ``attempts`` counts every request."""
        conv = session.conversation(req)
        deadline = time.monotonic() + self.deadline_s
        attempts = transport_retries = parse_failures = 0
        last = ""
        last_transport = True  # whether the latest trouble was the endpoint's own (no reply yet: it was)
        st = self._state()
        endpoint = self.endpoint_label()
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return _Outcome("failed", attempts=attempts, transport=last_transport,
                                reason=f"deadline {self.deadline_s:g}s passed after {attempts} request(s)"
                                       + (f" (last: {last})" if last else ""))
            attempts += 1
            st.add("network_calls")
            _count("requests", endpoint=endpoint)
            reply: Optional[_Reply] = None
            problem: Optional[str] = None  # set when a reply came back but cannot be used
            why, wait = "", None
            try:
                with request_deadline(time.monotonic() + min(self.timeout_s, left)):
                    reply = conv.send()
            except _Retry as e:
                why, wait = e.why, e.wait
                last_transport = e.transport
            except _Fatal as e:
                return _Outcome("failed", reason=_scrub(str(e), api_key), attempts=attempts)
            except _BadReply as e:
                problem, reason = str(e), _scrub(f"malformed reply: {e}", api_key)
            else:
                if reply.refused is not None:
                    return _Outcome("failed", reason=reply.refused, attempts=attempts)
                answer = reply.answer
                if answer is None:
                    problem = (reply.problem or "no structured answer in the reply") + (
                        " (cut at max_tokens)" if reply.truncated else "")
                else:
                    answer, problem = bound_answer(answer, req.schema)
                    problem = problem or validate_answer(answer, req.schema)
                if problem is None:
                    return _Outcome("ok", answer, attempts=attempts, raw=bounded(reply.text), usage=reply.usage,
                                    response_model=reply.model)
                reason = f"malformed answer: {problem}"
            if problem is not None:  # re-ask, bounded by parse_retries
                parse_failures += 1
                last_transport = False  # the endpoint answered
                last = reason
                if parse_failures > self.parse_retries:
                    return _Outcome("failed", reason=reason, attempts=attempts,
                                    raw=reply.text if reply is not None else None)
                log.info("judge %s: %s, asking again", req.prompt_id, reason)
                # Re-ask with the bad reply and what is wrong with it: a plain resend of the same prompt would
                # likely reproduce the same answer. Only the latest bad reply is kept (bounded size).
                conv.correct(reply, problem)
                continue
            transport_retries += 1
            last = why
            if transport_retries > self.max_retries:
                return _Outcome("failed", reason=f"{why} after {self.max_retries} retries", attempts=attempts,
                                transport=last_transport)
            if wait is None:
                wait = self._backoff(transport_retries - 1)
            wait = min(wait, max(0.0, deadline - time.monotonic()))
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

    def _breaker_open(self, st: _State) -> Optional[str]:
        """A reason to fail at once while the breaker is open; after its pause one question (the probe) is let
        through, the others still fail fast until the probe's outcome closes or reopens it."""
        if self.breaker_threshold <= 0:
            return None
        with st.lock:
            if st.transport_failures < self.breaker_threshold:
                return None
            if time.monotonic() >= st.open_until and not st.probing:
                st.probing = True
                return None
            return (f"judge endpoint unavailable: {st.transport_failures} consecutive questions lost to it "
                    f"(last: {bounded(st.last_transport_reason, 200)}); not asked")

    def _breaker_record(self, st: _State, out: _Outcome, started: float) -> None:
        """Count a question lost to the endpoint, unless the endpoint answered another one after this one started
        (with questions in flight together, one bad question between good ones is not an outage)."""
        with st.lock:
            st.probing = False
            if out.status == "ok" or not out.transport:  # the endpoint answered: closed
                st.transport_failures = 0
                st.last_ok_at = time.monotonic()
                return
            if started < st.last_ok_at:
                return
            st.transport_failures += 1
            st.last_transport_reason = out.reason or ""
            if self.breaker_threshold > 0 and st.transport_failures >= self.breaker_threshold:
                st.open_until = time.monotonic() + self.breaker_cooldown_s

    def _api_key(self) -> Optional[str]:
        """The key, "" when this configuration needs none, None when it needs one that is not set."""
        var = self.key_variable()
        if not var:
            return "" if self.backend == "openai" else None
        return os.environ.get(var) or None

    def _no_key_reason(self) -> str:
        var = self.key_variable()
        if not var:
            return "judge live but the anthropic backend needs a key variable (api_key_env is empty)"
        return f"judge live but ${var} is not set"

    def _structured_id(self) -> str:
        return f"tool:{TOOL_NAME}" if self.backend == "anthropic" else f"response_format:{self.structured_output}"

    def _open_session(self, api_key: str) -> "_Session":
        return (_OpenAISession if self.backend == "openai" else _AnthropicSession)(self, api_key)

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
                 "backend": _BACKEND_IDS[self.backend], "model": self.model, "response_model": out.response_model,
                 "prompt_id": req.prompt_id, "prompt_version": req.prompt_version,
                 "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
                 "attempts": out.attempts, "raw_text": bounded(out.raw), "usage": out.usage,
                 "request": {"system": req.system, "text": req.text, "params": req.params, "schema": req.schema,
                             "image_sha256": [hashlib.sha256(b).hexdigest() for b in req.images],
                             "max_tokens": self.max_tokens, "temperature": self.temperature,
                             "top_p": self.top_p, "seed": self.seed,
                             "structured_output": self._structured_id()}}
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


_BACKEND_IDS = {"anthropic": "anthropic-messages", "openai": "openai-chat"}


# ----------------------------------------------------------------------------------------------- evaluator failures

def not_evaluated(result: Optional[JudgeResult]) -> bool:
    """True for a question not asked by choice (the judge switched off): not an evaluator failure."""
    return result is not None and result.status == "skipped" and result.reason == JUDGE_OFF


def evaluator_failures(results: Iterable[Optional[JudgeResult]]) -> dict[str, Any]:
    """Materialization metadata for an asset whose rows rest on judge answers: a result that failed (after
    retries), missed the cache in replay or had no key is an evaluator failure, never the generator's, and the
    next run asks it again; one not asked because the judge is off is ``not_evaluated`` (by choice).
    ``{"evaluator_failures": 3, "evaluator_failure_reasons": "3 x judge failed: HTTP 500 after 4 retries",
    "not_evaluated": 0}`` (reasons grouped, most frequent first, at most five kinds). None entries are ignored."""
    results = [r for r in results if r is not None]
    reasons = [f"judge {r.status}: {r.reason}" for r in results if r.status != "ok" and not not_evaluated(r)]
    return {"evaluator_failures": len(reasons), "evaluator_failure_reasons": summarize_reasons(reasons),
            "not_evaluated": sum(1 for r in results if not_evaluated(r))}


def summarize_reasons(reasons: Iterable[Optional[str]], limit: int = 5) -> str:
    """'n x reason' groups, most frequent first, '' when there are none."""
    counts: dict[str, int] = {}
    for r in reasons:
        counts[r or "no reason"] = counts.get(r or "no reason", 0) + 1
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    text = "; ".join(f"{n} x {r}" for r, n in ranked[:limit])
    return text + (f"; {len(ranked) - limit} other kinds" if len(ranked) > limit else "")


# ----------------------------------------------------------------------------------------------- backends

class _Session:
    """An HTTP client shared by the questions of one ``ask``/``ask_many`` call."""

    def __init__(self, judge: Judge, api_key: str) -> None:
        self.judge, self.api_key = judge, api_key

    def conversation(self, req: JudgeRequest) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass

    def __enter__(self) -> "_Session":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class _AnthropicSession(_Session):
    def __init__(self, judge: Judge, api_key: str) -> None:
        import anthropic

        super().__init__(judge, api_key)
        self.http = bounded_httpx2_client(judge.timeout_s)
        # max_retries=0: the retry loop is ours (bounded, counted, testable).
        self.client = anthropic.Anthropic(api_key=api_key, base_url=judge.base_url, max_retries=0,
                                          timeout=judge.timeout_s, http_client=self.http)

    def close(self) -> None:
        self.client.close()
        self.http.close()

    def conversation(self, req: JudgeRequest) -> "_AnthropicConversation":
        return _AnthropicConversation(self, req)


class _AnthropicConversation:
    def __init__(self, session: _AnthropicSession, req: JudgeRequest) -> None:
        self.s, self.req = session, req
        blocks: list[dict] = [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                            "data": base64.b64encode(b).decode("ascii")}}
                              for b in req.images]
        blocks.append({"type": "text", "text": req.text})
        self.first_turn = {"role": "user", "content": blocks}
        self.messages: list[dict] = [self.first_turn]

    def send(self) -> _Reply:
        import anthropic
        import httpx2

        j = self.s.judge
        sampling = {k: v for k, v in (("temperature", j.temperature), ("top_p", j.top_p)) if v is not None}
        try:
            raw = self.s.client.messages.with_raw_response.create(
                model=j.model, max_tokens=j.max_tokens, system=self.req.system, messages=self.messages,
                tools=[{"name": TOOL_NAME, "description": "Record your answer as a JSON object matching the schema.",
                        "input_schema": self.req.schema}],
                tool_choice={"type": "tool", "name": TOOL_NAME, "disable_parallel_tool_use": True},
                extra_body=sampling or None)
            body, ctype = raw.read(), raw.headers.get("content-type", "")
        except anthropic.APIStatusError as e:
            code = e.status_code
            if code != 429 and code < 500:
                raise _Fatal(f"HTTP {code}: {_error_message(e)}") from None
            raise _Retry(f"HTTP {code}", j._retry_after(e.response.headers), transport=code != 429) from None
        except (anthropic.APITimeoutError, httpx2.TimeoutException):  # before connection errors: a subclass
            raise _Retry("timeout") from None
        except (anthropic.APIConnectionError, httpx2.TransportError):
            raise _Retry("connection error") from None
        except anthropic.APIError as e:  # e.g. a response the SDK could not read
            raise _BadReply(f"{type(e).__name__}: {e}") from None
        return _read_anthropic(_decode_body(body, ctype))

    def correct(self, reply: Optional[_Reply], problem: str) -> None:
        echo = reply.echo if reply is not None else None
        self.messages = [self.first_turn, *_correction(echo or [], reply.tool_id if reply else None, problem)]


class _OpenAISession(_Session):
    def __init__(self, judge: Judge, api_key: str) -> None:
        super().__init__(judge, api_key)
        self.http = bounded_httpx_client(judge.timeout_s)
        self.url = (judge.base_url or "https://api.openai.com/v1").rstrip("/") + "/chat/completions"

    def close(self) -> None:
        self.http.close()

    def conversation(self, req: JudgeRequest) -> "_OpenAIConversation":
        return _OpenAIConversation(self, req)


class _OpenAIConversation:
    """Chat completions: system message, then one user message with the images as ``image_url`` data URLs and the
    text with the schema spelled out (servers without guided decoding still see what to return)."""

    def __init__(self, session: _OpenAISession, req: JudgeRequest) -> None:
        self.s, self.req = session, req
        parts: list[dict] = [{"type": "image_url", "image_url": {
            "url": "data:image/png;base64," + base64.b64encode(b).decode("ascii")}} for b in req.images]
        parts.append({"type": "text", "text": f"{req.text}\n\nAnswer with only a JSON object that satisfies this "
                                              f"JSON schema:\n{json.dumps(req.schema, sort_keys=True)}"})
        self.base = [{"role": "system", "content": req.system}, {"role": "user", "content": parts}]
        self.messages: list[dict] = list(self.base)

    def body(self) -> dict:
        j = self.s.judge
        body: dict[str, Any] = {"model": j.model, "messages": self.messages, "max_tokens": j.max_tokens}
        body.update({k: v for k, v in (("temperature", j.temperature), ("top_p", j.top_p), ("seed", j.seed))
                     if v is not None})
        if j.structured_output == "json_schema":
            body["response_format"] = {"type": "json_schema",
                                       "json_schema": {"name": TOOL_NAME, "schema": self.req.schema}}
        elif j.structured_output == "json_object":
            body["response_format"] = {"type": "json_object"}
        return body

    def send(self) -> _Reply:
        import httpx

        headers = {"content-type": "application/json", "accept": "application/json"}
        if self.s.api_key:
            headers["authorization"] = f"Bearer {self.s.api_key}"
        try:
            r = self.s.http.post(self.s.url, json=self.body(), headers=headers)
        except httpx.TimeoutException:
            raise _Retry("timeout") from None
        except httpx.TransportError:  # refused, reset, closed mid-body
            raise _Retry("connection error") from None
        code = r.status_code
        if code == 429 or code >= 500:
            raise _Retry(f"HTTP {code}", self.s.judge._retry_after(r.headers), transport=code != 429)
        if code >= 300:
            raise _Fatal(f"HTTP {code}: {_openai_error(r.content)}")
        return _read_openai(_decode_body(r.content, r.headers.get("content-type", "")),
                            self.s.judge.structured_output)

    def correct(self, reply: Optional[_Reply], problem: str) -> None:
        if reply is None or not reply.text:
            self.messages = list(self.base)  # nothing to show back: a plain resend
            return
        self.messages = [*self.base, {"role": "assistant", "content": reply.text},
                         {"role": "user", "content": f"The answer could not be used: {problem}. Answer again with "
                                                     "only a JSON object that satisfies the schema."}]


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


def _read_anthropic(body: Any) -> _Reply:
    if not isinstance(body, dict):
        raise _BadReply(f"JSON {_shape(body)}, not a message object")
    if body.get("type") == "error" and (problem := _error_in_body(body)):
        raise _BadReply(problem)
    content = body.get("content")
    if not isinstance(content, list):
        raise _BadReply(f"no content list (content: {_shape(content)})")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    stop = body.get("stop_reason")
    if stop == "refusal":
        return _Reply(refused="refused", usage=usage, model=model)
    answer: Optional[dict] = None
    tool_id: Optional[str] = None
    texts: list[str] = []
    echo: list[dict] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "tool_use" and block.get("name") == TOOL_NAME and answer is None and tool_id is None:
            value = block.get("input")
            if isinstance(value, str):  # some gateways pass the arguments through as a string: the whole of it
                value, _ = structured_json(value)
            answer = value if isinstance(value, dict) else None
            if isinstance(block.get("id"), str):
                tool_id = block["id"]
                echo.append({"type": "tool_use", "id": tool_id, "name": TOOL_NAME,
                             "input": answer if answer is not None else {}})
        elif kind == "text" and isinstance(block.get("text"), str) and block["text"]:
            texts.append(block["text"])
            echo.append({"type": "text", "text": block["text"]})
    text = "\n".join(texts) if texts else None
    problem = None
    if answer is None:  # text is never read for an answer: a refusal showing an example answer would be scored
        problem = (f"no {TOOL_NAME} tool call in the reply"
                   + (f" (text reply: {json.dumps(bounded(text))})" if text else ""))
    return _Reply(answer=answer, text=text, truncated=stop == "max_tokens", usage=usage, model=model, echo=echo,
                  tool_id=tool_id, problem=problem)


def _read_openai(body: Any, structured_output: str = "json_schema") -> _Reply:
    if not isinstance(body, dict):
        raise _BadReply(f"JSON {_shape(body)}, not a chat completion")
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise _BadReply(_error_in_body(body) or f"no choices (choices: {_shape(choices)})")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise _BadReply(f"choice without a message ({_shape(choice)})")
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else None
    model = body.get("model") if isinstance(body.get("model"), str) else None
    finish = choice.get("finish_reason")
    if isinstance(message.get("refusal"), str) and message["refusal"]:
        return _Reply(refused=f"refused: {bounded(message['refusal'])}", usage=usage, model=model)
    if finish == "content_filter":
        return _Reply(refused="refused (content_filter)", usage=usage, model=model)
    content = message.get("content")
    if isinstance(content, list):  # content parts
        content = "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    text = content if isinstance(content, str) and content else None
    answer: Optional[dict] = None
    problem: Optional[str] = None
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        fn = call.get("function") if isinstance(call, dict) else None
        args = fn.get("arguments") if isinstance(fn, dict) else None
        value = structured_json(args)[0] if isinstance(args, str) else args
        if isinstance(value, dict):
            answer = value
            break
    if answer is None and text is not None:
        # the content as a whole is the answer (what response_format constrains); never a JSON object in prose
        value, problem = structured_json(text, allow_fence=structured_output == "prompt")
        if value is not None and not isinstance(value, dict):
            value, problem = None, f"JSON {_shape(value)} is not an object"
        answer = value
    elif answer is None:
        problem = "no JSON object in the reply (no content)"
    return _Reply(answer=answer, text=text, truncated=finish == "length", usage=usage, model=model,
                  problem=problem)


def _openai_error(body: bytes) -> str:
    try:
        parsed = json.loads(body.decode("utf-8", errors="replace"))
    except ValueError:
        return body.decode("utf-8", errors="replace")[:200] or "no body"
    if isinstance(parsed, dict):
        err = parsed.get("error", parsed.get("detail", parsed.get("message")))
        if isinstance(err, dict):
            err = err.get("message", err)
        return str(err)[:200]
    return str(parsed)[:200]


# ----------------------------------------------------------------------------------------------- helpers

def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


def _endpoint_id(url: Optional[str]) -> Optional[str]:
    """scheme://host:port/path of a base URL, without credentials or query (state digests never hold secrets)."""
    if not url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


def _error_message(e: "anthropic.APIStatusError") -> str:
    body = e.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict) and body["error"].get("message"):
        return str(body["error"]["message"])
    return str(e.message)


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
