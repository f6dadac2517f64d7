"""Names that become partition keys or path segments.

Dagster silently drops partition keys containing ``|``; keys also become folder names.
"""
from __future__ import annotations

import re

_SAFE = re.compile(r"^[A-Za-z0-9_.-]+$")

# Keys become path segments (``generator=<key>``, ``<key>.tmp-<pid>-<uuid>``) and most filesystems stop at
# 255 bytes per segment: 100 leaves room for every prefix and suffix we add, so a long name fails here,
# before any model runs, instead of with ENAMETOOLONG at the first write.
MAX_KEY_LENGTH = 100


class BadName(ValueError):
    pass


def validate_key(name: str, what: str = "name") -> str:
    """Return ``name`` if it is a safe partition key, else raise naming the problem."""
    if not isinstance(name, str) or not name:
        raise BadName(f"{what} {name!r}: empty")
    if "|" in name:
        raise BadName(f"{what} {name!r}: contains '|', which Dagster silently drops from partition keys")
    if "/" in name or "\\" in name:
        raise BadName(f"{what} {name!r}: contains a path separator")
    if ".." in name or name in {".", ".."}:
        raise BadName(f"{what} {name!r}: contains '..'")
    if " " in name:
        raise BadName(f"{what} {name!r}: contains spaces")
    if not _SAFE.match(name):
        raise BadName(f"{what} {name!r}: only [A-Za-z0-9_.-] are allowed")
    if len(name) > MAX_KEY_LENGTH:
        raise BadName(f"{what} {name[:40]!r}... is {len(name)} characters long; at most {MAX_KEY_LENGTH} are "
                      f"allowed (it becomes a folder name)")
    return name


def sanitize_key(name: str) -> str:
    """Map free text to a safe key (used for ids we derive, never to silently rename user input)."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "_", name.strip()).strip("_")
    cleaned = re.sub(r"\.{2,}", ".", cleaned)
    if not cleaned or cleaned in {".", ".."}:
        raise BadName(f"cannot derive a key from {name!r}")
    if len(cleaned) > MAX_KEY_LENGTH:  # derived ids stay unique: keep a digest of the full text
        import hashlib
        digest = hashlib.sha256(cleaned.encode()).hexdigest()[:12]
        cleaned = f"{cleaned[:MAX_KEY_LENGTH - 13]}-{digest}"
    return cleaned
