"""The import rules of the developers' guide, read from the source with ``ast`` (nothing is imported): every
``import`` counts, at module level or inside a function, because a function-level import only hides a cycle
until the function runs.

- ``core/`` imports no benchmark folder, nor ``bench_assets.benchmarks`` / ``cli`` / ``definitions`` (the
  table of benchmarks and its callers sit above core: core receives what it needs as arguments);
- no benchmark folder imports another;
- ``bench_resources`` imports nothing of ``bench_assets``;
- no import cycle among the modules of ``bench_assets`` and ``bench_resources``.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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


def test_the_walker_sees_function_level_and_relative_imports(tmp_path):
    """The walker itself: a function-level import and a relative one are edges; a cycle through them is found;
    each rule fires on a constructed graph."""
    src = tmp_path / "m.py"
    src.write_text("import os\nfrom . import metrics\n\ndef f():\n    from bench_assets.benchmarks import BENCHMARKS\n"
                   "    import bench_assets.core.media as media\n")
    found = {t for t, _ in imports_of("bench_assets.entitybench.assets", src)}
    assert found == {"bench_assets.entitybench.metrics", "bench_assets.benchmarks", "bench_assets.core.media"}
    graph = {"bench_assets.core.a": [("bench_assets.benchmarks", 3)],
             "bench_assets.benchmarks": [("bench_assets.core.a", 1)],
             "bench_assets.mbench.x": [("bench_assets.locot2v.metrics", 2), ("bench_assets.mbench.y", 1)],
             "bench_resources.store": [("bench_assets.core.tables", 5)],
             "bench_assets.core.b": [("bench_assets.narrativetrack.pipeline", 7)]}
    bad = rule_violations(graph)
    assert any("core.a:3" in b and "benchmark table" in b for b in bad)
    assert any("mbench.x:2" in b and "another" in b for b in bad) and not any("mbench.y" in b for b in bad)
    assert any("bench_resources.store:5" in b for b in bad)
    assert any("core.b:7" in b and "benchmark folder" in b for b in bad)
    assert cycles(graph) == [["bench_assets.benchmarks", "bench_assets.core.a"]]


def test_the_walker_reads_the_project():
    # the known edges exist: the walk is not vacuous
    assert ("bench_assets.core.metric_spec" in {t for t, _ in GRAPH["bench_assets.benchmarks"]})
    assert len(MODULES) > 50


def test_core_and_benchmark_folders_keep_their_import_rules():
    bad = rule_violations(GRAPH)
    assert not bad, "\n".join(bad)


def test_no_import_cycle_even_through_function_level_imports():
    found = cycles(GRAPH)
    assert not found, "\n".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("bench_assets.core")))
def test_core_module_imports_no_benchmark(module):
    bad = rule_violations({module: GRAPH[module]})
    assert not bad, "\n".join(bad)
