"""A generator is a folder under the generators root holding ``generator.yaml``; no code."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench_assets.core.names import BadName, validate_key


@dataclass(frozen=True)
class GeneratorInfo:
    name: str
    benchmark: str
    description: str
    path: str
    card: dict[str, Any]


class GeneratorError(ValueError):
    pass


# A generator card is a few lines; anything far larger is a mistake (or an attack on the parser), refused unread.
MAX_CARD_BYTES = 1 << 20


def _yaml_problem(e: yaml.YAMLError) -> str:
    """One line for a YAML error (PyYAML's own message spans several lines with a caret)."""
    problem = getattr(e, "problem", None) or str(e).strip().splitlines()[0]
    mark = getattr(e, "problem_mark", None)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else str(problem)


def read_generator(folder: str | Path) -> GeneratorInfo:
    """The generator card of ``folder``; every problem is one GeneratorError line naming the folder."""
    folder = Path(folder)
    f = folder / "generator.yaml"
    shown = folder.name if len(folder.name) <= 60 else folder.name[:40] + "..."
    where = f"generator folder {shown or str(folder)!r}"
    if not folder.is_dir():
        raise GeneratorError(f"{where}: {'not a folder' if folder.exists() else 'does not exist'} ({folder})")
    if not f.is_file():
        raise GeneratorError(f"{where}: no generator.yaml in {folder}")
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
    return GeneratorInfo(name, bench, "" if desc is None else str(desc), str(folder), raw)


def discover_generators(root: str | Path, benchmark: str | None = None) -> tuple[list[GeneratorInfo], list[str]]:
    """(generators, errors): every folder with a generator.yaml; a bad one is an error, not a crash."""
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
            if not (folder / "generator.yaml").exists():
                continue
            info = read_generator(folder)
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
