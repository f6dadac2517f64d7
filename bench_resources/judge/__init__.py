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
  ``base_url`` is the API root, e.g. ``http://127.0.0.1:8000/v1``; with ``azure_api_version`` set, the Azure
  endpoint (Azure OpenAI's deployment URL and ``api-key`` header).
* A request's ``wire`` (``Wire``, default None: the judge's own wire as above) reproduces another program's
  requests exactly, per request: part order, system message, schema in the text, ``response_format``,
  ``max_tokens``, sampling parameters, image media type, how the answer is read and whether it is re-asked
  (EntityBench's ``judge_prompts: authors``). Only the openai backend sends one; the anthropic backend fails such
  a question with one reason saying so. The wire is part of the cache key.

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
    judge.identity()      # who answers (fingerprint + endpoint, or off): a change re-runs the judge-using assets

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
  (a NaN or Infinity anywhere in an answer among them) are re-asked (``parse_retries``); no exception from a reply
  reaches the caller. A ``base_url`` that does not parse fails each question in words, before any connection.
* Time: ``timeout_s`` bounds one HTTP request as a whole (connect to last byte; a server dripping one byte per
  second cannot hold it open, see transport.py); ``deadline_s`` bounds one question (all requests, backoffs
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

Layout (one module per concern, one per provider, as lm-evaluation-harness splits ``lm_eval/models``):

* ``common``: limits, process-wide counters, request/result types, evaluator-failure metadata;
* ``schema``: answer validation against the request's JSON schema, whole-text JSON parsing, answer bounds;
* ``base``: the ``Judge`` resource: configuration, public API, the ask path, cache and failure markers;
* ``retry``: the conversation loop (transport retries, parse re-asks, deadline) and the circuit breaker;
* ``session``: the provider-independent session base, reply type and reply-body decoding;
* ``anthropic`` / ``openai``: each provider's session, conversation and reply reader;
* ``transport``: HTTP clients whose timeout bounds the whole request.
"""
from __future__ import annotations

from bench_resources.judge.base import Judge
from bench_resources.judge.common import (CACHE_FORMAT, JUDGE_OFF, MAX_ANSWER_BYTES, MAX_BODY_BYTES, MAX_REASON,
                                          MAX_TEXT_KEPT, TOOL_NAME, JudgeRequest, JudgeResult, Status, Wire,
                                          bounded, evaluator_failures, jpeg_bytes, judge_counters, not_evaluated,
                                          png_bytes, summarize_reasons)
from bench_resources.judge.schema import bound_answer, extract_json, structured_json, validate_answer

__all__ = ["CACHE_FORMAT", "JUDGE_OFF", "MAX_ANSWER_BYTES", "MAX_BODY_BYTES", "MAX_REASON", "MAX_TEXT_KEPT",
           "TOOL_NAME", "Judge", "JudgeRequest", "JudgeResult", "Status", "Wire", "bound_answer", "bounded",
           "evaluator_failures", "extract_json", "jpeg_bytes", "judge_counters", "not_evaluated", "png_bytes",
           "structured_json", "summarize_reasons", "validate_answer"]
