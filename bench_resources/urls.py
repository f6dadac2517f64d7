"""Base URLs of judge and answerer endpoints, checked without importing anything heavy (bench_resources/settings.py
checks BENCH_JUDGE_BASE_URL with it at start; the judge checks its ``base_url`` before it connects)."""
from __future__ import annotations

from typing import Optional


def base_url_problem(url: Optional[str]) -> Optional[str]:
    """What is wrong with a judge / answerer base URL, in words, or None when it is usable (None and "": the vendor
    default). Checked before anything connects, so a bad URL is one sentence, never a traceback from urllib or
    httpx. The URL itself is not repeated here (it may hold credentials): the caller names the setting."""
    if not url:
        return None
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        port = parts.port  # raises for a port outside 0-65535 or not a number
    except ValueError as e:
        why = str(e)
        if "IPv6" in why:
            return "its host is a bracketed IPv6 address that is not closed (use http://[::1]:8000/v1)"
        if "Port" in why or "port" in why:
            return f"its port is not a number in 1-65535 ({why})"
        return f"it is not a valid URL ({why})"
    if parts.scheme not in ("http", "https"):
        return f"use an http(s) URL such as http://127.0.0.1:8000/v1 (scheme {parts.scheme or 'missing'!r})"
    if not parts.hostname:
        return "it names no host (use an http(s) URL such as http://127.0.0.1:8000/v1)"
    if port == 0:
        return "its port is 0 (use a port in 1-65535)"
    return None
