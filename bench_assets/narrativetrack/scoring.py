"""Answer parsing and scoring. Strict: exact match after normalisation (binary yes/no, MC one letter, ordering the
full order of the three options). Lenient: the answer dug out of free text. The two are reported separately."""
from __future__ import annotations

import json
import re
from typing import Optional

from bench_resources.judge import extract_json

_LETTER = re.compile(r"^\(?\s*([a-d])\s*\)?\s*[.):]?$")
_WRAP = " \t\n\r\"'`*."


def unwrap(raw) -> str:
    """The answer string: a JSON object's "answer" field (also inside ```json fences), else the text itself."""
    if raw is None:
        return ""
    if isinstance(raw, dict):
        return str(raw.get("answer", ""))
    text = str(raw).strip()
    if "{" in text:
        obj = extract_json(text)
        if isinstance(obj, dict) and "answer" in obj:
            return str(obj["answer"])
    fence = re.fullmatch(r"```(?:\w+)?\s*(.*?)\s*```", text, re.S)
    return fence.group(1) if fence else text


def _norm(text: str) -> str:
    return " ".join(text.strip().lower().split()).strip(_WRAP).strip()


def gold(answer: str, fmt: str) -> str:
    g = strict_parse(answer, fmt)
    if g is None:
        raise ValueError(f"gold answer {answer!r} is not a valid {fmt} answer")
    return g


def strict_parse(raw, fmt: str) -> Optional[str]:
    text = _norm(unwrap(raw))
    if fmt == "binary":
        return text if text in ("yes", "no") else None
    if fmt == "mc":
        m = _LETTER.match(text)
        return m.group(1) if m else None
    if fmt == "ordering":
        parts = [p for p in re.split(r"\s*(?:,|->|>|;|\s)\s*", text) if p]
        letters = []
        for p in parts:
            m = _LETTER.match(p)
            if not m:
                return None
            letters.append(m.group(1))
        return ", ".join(letters) if sorted(letters) == ["a", "b", "c"] else None
    raise ValueError(f"unknown format {fmt!r}")


def lenient_parse(raw, fmt: str, options: Optional[dict] = None) -> Optional[str]:
    strict = strict_parse(raw, fmt)
    if strict is not None:
        return strict
    text = _norm(unwrap(raw))
    if fmt == "binary":
        words = set(re.findall(r"\b(yes|no)\b", text))
        return words.pop() if len(words) == 1 else None
    if fmt == "mc":
        found = re.findall(r"\(([a-d])\)|\boption\s+([a-d])\b|\banswer(?: is)?:?\s+\(?([a-d])\b|^([a-d])\b[.):,]",
                           text)
        letters = {next(x for x in f if x) for f in found}
        if len(letters) == 1:
            return letters.pop()
        if options:
            hits = [k for k, v in options.items() if v and _norm(v) in text]
            if len(hits) == 1:
                return hits[0]
        return None
    if fmt == "ordering":
        seq = re.findall(r"\(([a-c])\)|\b([a-c])\b", text)
        letters = []
        for f in seq:
            x = f[0] or f[1]
            if x not in letters:
                letters.append(x)
        if sorted(letters) == ["a", "b", "c"]:
            return ", ".join(letters)
        if options:
            pos = {k: text.find(_norm(v)) for k, v in options.items() if k in "abc" and v}
            if len(pos) == 3 and all(p >= 0 for p in pos.values()):
                return ", ".join(sorted(pos, key=pos.get))
        return None
    raise ValueError(f"unknown format {fmt!r}")


def score(raw, answer: str, fmt: str, options: Optional[dict] = None) -> dict:
    """{"strict": bool, "lenient": bool, "parsed_strict", "parsed_lenient"} for one answer."""
    g = gold(answer, fmt)
    ps, pl = strict_parse(raw, fmt), lenient_parse(raw, fmt, options)
    return {"strict": ps == g, "lenient": pl == g, "parsed_strict": ps, "parsed_lenient": pl}


def dumps_options(options) -> Optional[str]:
    return json.dumps(options, sort_keys=True) if options else None
