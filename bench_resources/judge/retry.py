"""The conversation loop of one question (transport retries, parse re-asks, the deadline), the per-configuration
state (counters, in-flight bound, circuit breaker) and backoff: ``_Asking``, a mixin of ``Judge`` (base.py), whose
methods read the Judge's fields."""
from __future__ import annotations

import logging
import random
import threading
import time
from typing import Any, Optional

from bench_resources.judge.common import JudgeRequest, Status, _canonical, _count, _scrub, bounded
from bench_resources.judge.schema import bound_answer, validate_answer
from bench_resources.judge.session import _BadReply, _Fatal, _Reply, _Retry, _Session
from bench_resources.judge.transport import request_deadline

log = logging.getLogger("bench_resources.judge")  # the package's logger: records keep the name they had in judge.py


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


class _Asking:
    """Judge's conversation loop, retry bounds and circuit breaker (moved out of base.py to keep modules small)."""

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
                # a wire without re-asks (another program's client, which never re-asks) fails at once
                if parse_failures > (self.parse_retries if req.wire is None or req.wire.reask else 0):
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
