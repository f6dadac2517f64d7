"""Answer parsing and scoring. Strict: exact match after normalisation (binary yes/no, MC one letter, ordering the
full order of the three options). Lenient: the answer dug out of free text. The two are reported separately."""
from __future__ import annotations

import json
import re
from typing import Optional

from bench_resources.judge import extract_json

_LETTER = re.compile(r"^\(?\s*([a-d])\s*\)?\s*[.):]?$")
_WRAP = " \t\n\r\"'`*."
# "a" followed by a word other than these is the article ("A man first does (c)"), never option (a)
_LIST_WORDS = ("then", "and", "followed", "first", "last", "next", "finally", "before", "after", "is", "was", "comes")
_ARTICLE = re.compile(r"\s+(?!(?:" + "|".join(_LIST_WORDS) + r")\b)[a-z]{2}")


def _letters(pattern: str, text: str) -> list[str]:
    """Letters matched by ``pattern`` (its groups), leaving out an "a" that is an article."""
    out = []
    for m in re.finditer(pattern, text):
        x = next(g for g in m.groups() if g)
        if x == "a" and not text[m.end() - 1:m.end()] == ")" and _ARTICLE.match(text, m.end()):
            continue
        out.append(x)
    return out


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
        # a bare letter counts only where it cannot be the article "a" ("A man ...", "the answer is a man")
        letters = set(_letters(r"\(([a-d])\)|\boption\s+([a-d])\b|\banswer(?: is)?:?\s+\(?([a-d])\b|^([a-d])\b[.):,]",
                               text))
        if len(letters) == 1:
            return letters.pop()
        if options:
            hits = [k for k, v in options.items() if v and _norm(v) in text]
            if len(hits) == 1:
                return hits[0]
        return None
    if fmt == "ordering":
        # parenthesised letters when the answer uses them; else bare letters standing as list items, never the
        # article "a" of "A man first does (c)..."
        seq = re.findall(r"\(([a-c])\)", text)
        if len(set(seq)) < 3:
            seq = _letters(r"(?<![\w'])([a-c])(?![\w'])", text)
        letters = []
        for x in seq:
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
