"""A generator is a folder under the generators root holding ``generator.yaml``; no code."""
from __future__ import annotations

import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

import yaml

from bench_assets.core.names import BadName, validate_key


@dataclass(frozen=True)
class GeneratorInfo:
    name: str
    benchmark: str
    description: str
    path: str
    card: dict[str, Any]
    warnings: tuple[str, ...] = ()   # card keys read by nothing (ignored), each naming the key and the card


class GeneratorError(ValueError):
    pass


# Keys every card may hold whatever its benchmark (DESIGN.md: name, benchmark, description and an optional model
# card, free-form, under 'model_card'); each benchmark adds the keys its code reads (bench_assets/card_keys.py).
COMMON_CARD_KEYS = ("name", "benchmark", "description", "model_card")
# An unknown key this close to a known one (difflib ratio, after lower-casing and '-' -> '_') is taken as that key
# misspelt ('langauge', 'frame', 'ranked', 'descripton', 'Language' are caught); unrelated words ('homepage',
# 'notes', 'license', 'url', 'paper', 'version') match nothing.
MISSPELT_RATIO = 0.8


def card_key_findings(card: Mapping[str, Any], known: Iterable[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(misspelt, unknown) keys of a card against the keys its benchmark reads plus the common ones: ``misspelt``
    as (key, the known key it resembles), ``unknown`` the rest. Why two kinds: a misspelt key is ignored while the
    default it meant to change is used ('langauge: ch' scores a Chinese story in English), so it is refused; any
    other key changes nothing the platform computes, so it is a warning (never silent, never fatal)."""
    keys = sorted(set(COMMON_CARD_KEYS) | set(known))
    misspelt, unknown = [], []
    for k in card:
        k = str(k)
        if k in keys:
            continue
        norm = k.strip().lower().replace("-", "_")
        close = [norm] if norm in keys else difflib.get_close_matches(norm, keys, n=1, cutoff=MISSPELT_RATIO)
        if close:
            misspelt.append((k, close[0]))
        else:
            unknown.append(k)
    return misspelt, unknown


# A generator card is a few lines; anything far larger is a mistake (or an attack on the parser), refused unread.
MAX_CARD_BYTES = 1 << 20


def _yaml_problem(e: yaml.YAMLError) -> str:
    """One line for a YAML error (PyYAML's own message spans several lines with a caret)."""
    problem = getattr(e, "problem", None) or str(e).strip().splitlines()[0]
    mark = getattr(e, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)


def _not_a_file(f: Path) -> str | None:
    """None for a regular file (through links); otherwise what ``f`` is, in words ('missing' when nothing is there).
    Read with stat only: opening a FIFO blocks until a writer comes."""
    import os
    import stat as st
    try:
        mode = os.stat(f).st_mode
    except FileNotFoundError:
        if os.path.islink(f):
            return f"is a broken link (to {os.readlink(f)}), not a file"
        return "missing"
    except OSError as e:
        return f"cannot be read ({e.strerror or e})"
    if st.S_ISREG(mode):
        return None
    what = ("a directory" if st.S_ISDIR(mode) else "a FIFO (named pipe)" if st.S_ISFIFO(mode)
            else "a character device" if st.S_ISCHR(mode) else "a block device" if st.S_ISBLK(mode)
            else "a socket" if st.S_ISSOCK(mode) else "not a regular file")
    via = f" (a link to {os.path.realpath(f)})" if os.path.islink(f) else ""
    return f"is {what}{via}, not a regular file; a card is a small YAML text file"


def read_generator(folder: str | Path, card_keys: Optional[Mapping[str, Iterable[str]]] = None) -> GeneratorInfo:
    """The generator card of ``folder``; every problem is one GeneratorError line naming the folder.
    ``card_keys`` (benchmark -> the keys its code reads): a misspelt key is refused, an unknown one is a warning in
    ``info.warnings`` (``card_key_findings``); a benchmark it does not list is not checked."""
    folder = Path(folder)
    f = folder / "generator.yaml"
    shown = folder.name if len(folder.name) <= 60 else folder.name[:40] + "..."
    where = f"generator folder {shown or str(folder)!r}"
    if not folder.is_dir():
        raise GeneratorError(f"{where}: {'not a folder' if folder.exists() else 'does not exist'} ({folder})")
    kind = _not_a_file(f)
    if kind is not None:  # a pipe would block the read, a device never ends: say what it is, never 'no card'
        raise GeneratorError(f"{where}: generator.yaml {kind}" if kind != "missing"
                             else f"{where}: no generator.yaml in {folder}")
    try:
        size = f.stat().st_size
        if size > MAX_CARD_BYTES:
            raise GeneratorError(f"{where}: generator.yaml is {size} bytes; a card is at most {MAX_CARD_BYTES} bytes")
        raw = yaml.safe_load(f.read_text(encoding="utf-8"))
    except RecursionError:  # PyYAML builds nested values recursively: a card nested thousands deep
        raise GeneratorError(f"{where}: generator.yaml is nested too deeply to read (a card is a flat mapping of "
                             f"name / benchmark / description)") from None
    except UnicodeDecodeError as e:
        raise GeneratorError(f"{where}: generator.yaml is not UTF-8 text (byte {e.start})") from None
    except OSError as e:
        raise GeneratorError(f"{where}: generator.yaml cannot be read ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise GeneratorError(f"{where}: generator.yaml is not valid YAML ({_yaml_problem(e)})") from None
    if not isinstance(raw, dict):
        raise GeneratorError(f"{where}: generator.yaml must be a mapping with name/benchmark/description, "
                             f"got {type(raw).__name__}")
    name = raw.get("name", folder.name)
    if not isinstance(name, str):
        raise GeneratorError(f"{where}: 'name' must be text, got {type(name).__name__} {name!r}")
    try:
        validate_key(name, "generator name")
    except BadName as e:
        raise GeneratorError(f"{where}: {e}") from None
    if name != folder.name:
        raise GeneratorError(f"{where}: name {name!r} differs from the folder name")
    bench = raw.get("benchmark")
    if not isinstance(bench, str) or not bench:
        raise GeneratorError(f"generator {name!r}: generator.yaml needs a 'benchmark' (text)")
    desc = raw.get("description", "")
    warnings: tuple[str, ...] = ()
    if card_keys is not None and bench in card_keys:
        misspelt, unknown = card_key_findings(raw, card_keys[bench])
        if misspelt:
            k, like = misspelt[0]
            raise GeneratorError(f"generator {name!r} ({f}): key {k!r} is not a {bench} card key; did you mean "
                                 f"{like!r}? (a misspelt key would be ignored and its default used)")
        known = ", ".join(sorted(set(COMMON_CARD_KEYS) | set(card_keys[bench])))
        warnings = tuple(f"generator {name!r} ({f}): key {k!r} is not a {bench} card key and is ignored (known: "
                         f"{known}; free-form notes go under 'model_card')" for k in unknown)
    return GeneratorInfo(name, bench, "" if desc is None else str(desc), str(folder), raw, warnings)


def discover_generators(root: str | Path, benchmark: str | None = None,
                        card_keys: Optional[Mapping[str, Iterable[str]]] = None) -> tuple[list[GeneratorInfo], list[str]]:
    """(generators, errors): every folder with a generator.yaml; a bad one is an error, not a crash.
    ``card_keys``: as in ``read_generator`` (a card with a misspelt key is an error here)."""
    root = Path(root)
    found, errors = [], []
    if not root.is_dir():
        return [], [f"generators root {root} does not exist"]
    try:
        folders = sorted(p for p in root.iterdir() if p.is_dir())
    except OSError as e:
        return [], [f"generators root {root} cannot be listed ({e.strerror or e})"]
    for folder in folders:
        try:
            if _not_a_file(folder / "generator.yaml") == "missing":  # a FIFO, a device or a broken link is its error
                continue
            info = read_generator(folder) if card_keys is None else read_generator(folder, card_keys)
        except GeneratorError as e:
            errors.append(str(e))
            continue
        except Exception as e:  # noqa: BLE001 - one bad folder never stops the others (CLI and sensors alike)
            errors.append(f"generator folder {folder.name!r}: cannot be read ({type(e).__name__}: "
                          f"{str(e).strip().splitlines()[0][:200] if str(e).strip() else ''})")
            continue
        if benchmark is None or info.benchmark == benchmark:
            found.append(info)
    return found, errors


def folder_fingerprint(folder: str | Path) -> str:
    """Cheap change detector over names, sizes and mtimes (the sensor's cursor)."""
    import hashlib
    h = hashlib.sha256()
    try:
        entries = sorted(Path(folder).rglob("*"))
    except OSError as e:  # a folder that cannot be walked still gets a cursor; its error is read elsewhere
        return f"unreadable:{type(e).__name__}"
    for p in entries:
        try:
            if p.is_file():
                st = p.stat()
                h.update(f"{p.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{p.relative_to(folder)}:unreadable\n".encode())
    return h.hexdigest()[:16]
