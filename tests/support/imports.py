"""The project's import graph read with ``ast`` and the layering rules of the developers' guide (documented in
``tests/test_imports.py``, which enforces them; ``tests/test_entitymem.py`` reads the same graph)."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("bench_assets", "bench_resources")
ABOVE_CORE = {"bench_assets.benchmarks", "bench_assets.cli", "bench_assets.definitions"}


def _modules() -> dict[str, Path]:
    out = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return (ROOT / Path(*name.split(".")) / "__init__.py").exists()


def _resolve(name: str) -> str | None:
    """The project module that ``name`` names (itself, or the nearest enclosing module for ``pkg.mod.attr``)."""
    while name:
        if name in MODULES:
            return name
        name = name.rpartition(".")[0]
    return None


def imports_of(module: str, path: Path | None = None) -> list[tuple[str, int]]:
    """(project module imported, line) for every import statement anywhere in the module's source."""
    path = path or MODULES[module]
    tree = ast.parse(path.read_text(), filename=str(path))
    package = module if _is_package(module) else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            # ``from pkg import mod`` imports the submodule pkg.mod; ``from mod import name`` imports mod
            names = [f"{stem}.{a.name}" if f"{stem}.{a.name}" in MODULES else stem for a in node.names]
        else:
            continue
        for n in names:
            target = _resolve(n)
            if target is not None and target != module:
                out.append((target, node.lineno))
    return out


GRAPH = {m: imports_of(m) for m in MODULES}


# bridges/ holds assets that combine two benchmarks: above the benchmark folders (it may import them), below the
# benchmark table; neither core nor a benchmark folder may import it. entitymem/ (the EntityBench paper's baseline, a
# generation pipeline reading EntityBench episodes and scores) sits on the same layer, under the same rules.
ABOVE_FOLDERS = ("core", "bridges", "entitymem")
ABOVE_BENCHMARKS = ("bench_assets.bridges", "bench_assets.entitymem")  # importable by no folder nor core


def _folder(module: str) -> str | None:
    """The benchmark folder of a ``bench_assets.<benchmark>.*`` module (None for core, bridges and top level)."""
    parts = module.split(".")
    if parts[0] != "bench_assets" or len(parts) < 3 or parts[1] in ABOVE_FOLDERS:
        return None
    return parts[1]


def rule_violations(graph: dict[str, list[tuple[str, int]]]) -> list[str]:
    bad = []
    for mod, targets in graph.items():
        for target, line in targets:
            where = f"{mod}:{line} imports {target}"
            if mod.startswith("bench_assets.core"):
                if _folder(target) is not None:
                    bad.append(f"{where} (core imports a benchmark folder)")
                elif target in ABOVE_CORE:
                    bad.append(f"{where} (core imports the benchmark table or its callers)")
            if _folder(mod) is not None and _folder(target) not in (None, _folder(mod)):
                bad.append(f"{where} (a benchmark folder imports another)")
            if (mod.startswith("bench_assets.core") or _folder(mod) is not None) \
                    and target.startswith(ABOVE_BENCHMARKS):
                bad.append(f"{where} (bridges / entitymem sit above the benchmark folders; they must not import it)")
            if mod.startswith("bench_resources") and target.startswith("bench_assets"):
                bad.append(f"{where} (bench_resources imports bench_assets)")
    return bad


def cycles(graph: dict[str, list[tuple[str, int]]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan), each a set of mutually importing modules."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w, _ in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    import sys
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph) + 100))
    try:
        for v in sorted(graph):
            if v not in index:
                visit(v)
    finally:
        sys.setrecursionlimit(limit)
    return out
