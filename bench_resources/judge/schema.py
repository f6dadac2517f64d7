"""Judge answers against the request's JSON schema: validation, whole-text JSON parsing, size bounds (and
``extract_json`` for a generator's free text, never a judge's answer)."""
from __future__ import annotations

import json
import math
import re
from typing import Any, Optional

from bench_resources.judge.common import MAX_ANSWER_BYTES, MAX_TEXT_KEPT, _canonical, bounded

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


def _non_finite(value: Any, path: str) -> Optional[str]:
    """The first NaN / Infinity in ``value`` (Python's json reads them; JSON has no such numbers), as a problem."""
    if isinstance(value, float) and not math.isfinite(value):
        return f"{path} is {value!r} ({'NaN' if math.isnan(value) else 'Infinity'} is not a JSON number)"
    if isinstance(value, dict):
        return next((p for k, v in value.items() if (p := _non_finite(v, f"{path}.{k}"))), None)
    if isinstance(value, list):
        return next((p for i, v in enumerate(value) if (p := _non_finite(v, f"{path}[{i}]"))), None)
    return None


def validate_answer(value: Any, schema: dict, path: str = "answer") -> Optional[str]:
    """None when ``value`` satisfies the schema's basic constraints (type, required, properties, items, enum,
    minimum/maximum, exclusive bounds, minItems/maxItems), else a short description of the first problem. A NaN or
    Infinity anywhere is a problem of its own: it passes every bound (NaN < 0 and NaN > 1 are both false) and would
    reach a score."""
    return _non_finite(value, path) or _validate(value, schema, path)


def _validate(value: Any, schema: dict, path: str) -> Optional[str]:
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
                problem = _validate(value[key], sub, f"{path}.{key}")
                if problem:
                    return problem
    if isinstance(value, list):
        if isinstance(schema.get("minItems"), int) and len(value) < schema["minItems"]:
            return f"{path} has {len(value)} items, fewer than {schema['minItems']}"
        if isinstance(schema.get("maxItems"), int) and len(value) > schema["maxItems"]:
            return f"{path} has {len(value)} items, more than {schema['maxItems']}"
        if isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                problem = _validate(item, schema["items"], f"{path}[{i}]")
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
