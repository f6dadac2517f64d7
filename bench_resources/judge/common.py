"""The judge's limits, process-wide counters, request and result types, and evaluator-failure metadata (shared by
every module of the package; see ``bench_resources.judge``)."""
from __future__ import annotations

import io
import json
import threading
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Literal, Optional, Sequence

import numpy as np

from bench_resources.urls import base_url_problem  # light: settings.py checks the variable with it

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


def _rgb_u8(image: np.ndarray, who: str) -> np.ndarray:
    """``image`` as a contiguous RGB uint8 HxWx3 array, or one error naming the encoder and what it got."""
    arr = np.ascontiguousarray(image)
    if arr.dtype != np.uint8 or arr.ndim != 3 or arr.shape[2] != 3:
        raise ValueError(f"{who} expects an RGB uint8 HxWx3 array, got {arr.dtype} {arr.shape}")
    return arr


def png_bytes(image: np.ndarray) -> bytes:
    """RGB uint8 HxWx3 -> PNG bytes. Deterministic (fixed compression, no metadata), so equal pixels give an equal
    crop id and an equal cache key."""
    from PIL import Image

    arr = _rgb_u8(image, "png_bytes")
    buf = io.BytesIO()
    Image.fromarray(arr, mode="RGB").save(buf, format="PNG", compress_level=6, optimize=False)
    return buf.getvalue()


def jpeg_bytes(image: np.ndarray, quality: int = 90) -> bytes:
    """RGB uint8 HxWx3 -> JPEG bytes as PIL writes them with ``quality`` and its defaults otherwise (4:2:0, no
    optimisation, no metadata): what a program that encodes with ``Image.save(buf, "JPEG", quality=q)`` sends, byte
    for byte with the same PIL / libjpeg."""
    from PIL import Image

    arr = _rgb_u8(image, "jpeg_bytes")
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


# ----------------------------------------------------------------------------------------------- data types

@dataclass(frozen=True)
class Wire:
    """How one request goes on the wire when it must equal another program's requests (a benchmark's authors'
    judge client), instead of the judge's own wire. Only the openai backend speaks a ``Wire``; any other backend
    fails such a question with one clear reason. The defaults are the judge's own wire; each field says:

    * ``name``: recorded in the cache key and entry (answers from two wires never share a cache entry);
    * ``text_first``: the text part before the images (own wire: images first);
    * ``system_message``: send the request's system text as a system message (own wire: always, even empty);
    * ``schema_in_text``: append "Answer with only a JSON object that satisfies this JSON schema" (own wire: yes);
    * ``response_format``: send the judge's ``structured_output`` as ``response_format`` (own wire: yes);
    * ``max_tokens``: this value, not the judge's;
    * ``sampling``: send the judge's temperature / top_p / seed when set (own wire: yes);
    * ``image_mime``: the media type of ``JudgeRequest.images`` in the data URLs (own wire: PNG);
    * ``reader``: ``whole`` (the content as a whole is the answer, own wire) or ``first_object`` (the first ``{...}``
      with at most one level of nested braces in the content, else the content without a code fence, as JSON;
      tool calls are not read);
    * ``reask``: on an unusable answer, ask again with a correction turn (own wire: up to ``parse_retries``); False:
      the question fails at once.

    The answer is still validated against the request's schema: an answer that does not satisfy it is an evaluator
    failure, never a default value."""
    name: str
    text_first: bool = False
    system_message: bool = True
    schema_in_text: bool = True
    response_format: bool = True
    max_tokens: Optional[int] = None
    sampling: bool = True
    image_mime: str = "image/png"
    reader: Literal["whole", "first_object"] = "whole"
    reask: bool = True

    def describe(self) -> dict[str, Any]:
        """Every field, for cache keys, cache entries and protocol digests."""
        return asdict(self)


@dataclass(frozen=True)
class JudgeRequest:
    """One question to the judge. ``schema`` is the JSON schema of the expected answer object
    (``{"type": "object", "properties": ..., "required": [...]}``); ``images`` are PNG bytes, sent before the text
    (with a ``wire``: encoded as ``wire.image_mime``, placed as the wire says).
    ``params`` are prompt parameters kept in the cache key (and the cache entry) for provenance. ``wire``: None
    (the judge's own wire) or a ``Wire`` reproducing another program's requests."""
    prompt_id: str
    prompt_version: str
    system: str
    text: str
    schema: dict
    images: Sequence[bytes] = ()
    params: dict = field(default_factory=dict)
    wire: Optional[Wire] = None


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



# ----------------------------------------------------------------------------------------------- helpers

def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "***") if secret else text


def _endpoint_id(url: Optional[str]) -> Optional[str]:
    """scheme://host:port/path of a base URL, without credentials or query (state digests never hold secrets). A URL
    that does not parse (``http://[::1``, port 99999) is named by a digest: the state and identity stay computable
    (and differ per URL) while ``base_url_problem`` says what is wrong."""
    if not url:
        return None
    if base_url_problem(url) is not None:
        import hashlib
        return f"unparseable-url:{hashlib.sha256(url.encode('utf-8', 'replace')).hexdigest()[:12]}"
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    host = parts.hostname or ""
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}".rstrip("/")


def json_safe(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, Infinity) written as its name: what a reply held, in a form a
    strict JSON encoder (httpx's request body) accepts, for showing the model its own bad answer on a re-ask."""
    import math
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    return value

