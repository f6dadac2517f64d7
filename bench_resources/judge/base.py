"""The ``Judge`` resource: configuration, the public API, the ask path (modes, cache, failure markers, counters) and
session opening; the conversation loop and circuit breaker are in retry.py, the providers in anthropic.py and
openai.py (see ``bench_resources.judge``)."""
from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, Optional, Sequence

from dagster import ConfigurableResource

from bench_resources.judge.anthropic import _AnthropicSession
from bench_resources.judge.common import (CACHE_FORMAT, JUDGE_OFF, MAX_REASON, TOOL_NAME, JudgeRequest, JudgeResult,
                                          Status, _canonical, _count, _endpoint_id, _scrub, base_url_problem,
                                          bounded)
from bench_resources.judge.openai import _OpenAISession
from bench_resources.judge.retry import _Asking, _Outcome
from bench_resources.judge.schema import validate_answer
from bench_resources.judge.session import _Session

log = logging.getLogger("bench_resources.judge")  # the package's logger: records keep the name they had in judge.py


# ----------------------------------------------------------------------------------------------- the resource

class Judge(_Asking, ConfigurableResource):
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
    # openai backend only: None, or an Azure OpenAI API version (e.g. "2023-07-01-preview"): then base_url is the
    # Azure endpoint and requests go where openai.AzureOpenAI posts them,
    # {base_url}/openai/deployments/{model}/chat/completions?api-version=..., with the key in an api-key header.
    azure_api_version: Optional[str] = None

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

    def identity(self) -> dict[str, Any]:
        """Who gives the answers a judge-using asset stores: backend, model, endpoint (host only) and the answer-
        shaping settings of ``fingerprint()``. core/automation.py records it on every run and re-runs exactly the
        judge-using assets whose recorded identity differs from this one. The judge switched off is an identity of
        its own (its rows say "not evaluated"); live and replay are one (a replayed answer is the live answer); the
        key never counts (a missing key is an evaluator failure, retried by ``state()``'s rule)."""
        if self.mode == "off":
            return {"mode": "off"}
        out = {**self.fingerprint(), "endpoint": _endpoint_id(self.base_url) or "default"}
        if self.azure_api_version:  # added only when set: identities recorded before the setting stay equal
            out["azure_api_version"] = self.azure_api_version
        return out

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
        if req.wire is not None:  # only with one: the keys of requests on the judge's own wire stay valid
            payload["wire"] = req.wire.describe()
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
        usable = api_key is not None and base_url_problem(self.base_url) is None  # else each ask says why
        with (self._open_session(api_key) if usable else nullcontext()) as session:
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
        bad_url = base_url_problem(self.base_url)
        if bad_url is not None:  # one sentence per question, never a urllib / httpx traceback (no request made)
            st.add("failures")
            return result("failed", reason=f"judge base_url unusable: {bad_url}")
        if req.wire is not None and self.backend != "openai":
            st.add("failures")
            return result("failed", reason=f"judge backend {self.backend} cannot send wire {req.wire.name!r}: it "
                                           f"reproduces an OpenAI chat-completions client; use backend openai")
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

    # ------------------------------------------------------------------ internals

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
                             "structured_output": self._structured_id(),
                             **({"wire": req.wire.describe()} if req.wire is not None else {})}}
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
