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


def read_generator(folder: str | Path) -> GeneratorInfo:
    folder = Path(folder)
    f = folder / "generator.yaml"
    try:
        raw = yaml.safe_load(f.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise GeneratorError(f"generator folder {folder.name!r}: generator.yaml is not valid YAML ({e})") from None
    if not isinstance(raw, dict):
        raise GeneratorError(f"generator folder {folder.name!r}: generator.yaml must be a mapping")
    name = raw.get("name", folder.name)
    try:
        validate_key(str(name), "generator name")
    except BadName as e:
        raise GeneratorError(f"generator folder {folder.name!r}: {e}") from None
    if name != folder.name:
        raise GeneratorError(f"generator folder {folder.name!r}: name {name!r} differs from the folder name")
    bench = raw.get("benchmark")
    if not isinstance(bench, str) or not bench:
        raise GeneratorError(f"generator {name!r}: generator.yaml needs a 'benchmark'")
    return GeneratorInfo(name, bench, str(raw.get("description", "")), str(folder), raw)


def discover_generators(root: str | Path, benchmark: str | None = None) -> tuple[list[GeneratorInfo], list[str]]:
    """(generators, errors): every folder with a generator.yaml; a bad one is an error, not a crash."""
    root = Path(root)
    found, errors = [], []
    if not root.is_dir():
        return [], [f"generators root {root} does not exist"]
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        if not (folder / "generator.yaml").is_file():
            continue
        try:
            info = read_generator(folder)
        except GeneratorError as e:
            errors.append(str(e))
            continue
        if benchmark is None or info.benchmark == benchmark:
            found.append(info)
    return found, errors


def folder_fingerprint(folder: str | Path) -> str:
    """Cheap change detector over names, sizes and mtimes (the sensor's cursor)."""
    import hashlib
    h = hashlib.sha256()
    for p in sorted(Path(folder).rglob("*")):
        if p.is_file():
            st = p.stat()
            h.update(f"{p.relative_to(folder)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]
