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

from tests.support.imports import (  # noqa: F401
    ABOVE_BENCHMARKS,
    ABOVE_CORE,
    GRAPH,
    MODULES,
    ROOT,
    cycles,
    imports_of,
    rule_violations,
)


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


# ----------------------------------------------------------------------------------- core names no benchmark
# Core receives what a benchmark needs as arguments (its name, its item dimension, its sources); it never names one.
# Read with ``ast`` (nothing is imported). The rule, precisely:
# - the words: every benchmark name of the registry (bench_assets/benchmarks.py ``BENCHMARKS``, read from its
#   source, so a new benchmark is covered without touching this test) and the ViStory spelling; in code a word
#   counts wherever it occurs, case-insensitively (``ENTITYBENCH``, ``"vistorybench_leaderboard"``, ``f"...mbench"``);
# - the short forms the project writes (NarrativeTrack's ``nt``): a whole word of an identifier (split at ``_``:
#   ``nt_root``), or a whole string constant (``name.startswith("nt")``; "count" or "nt001" are not short forms);
# - code is every identifier (names, attributes, definitions, arguments, keywords, imports) and every string
#   constant, f-string parts included; documentation is not: comments (not in the tree) and string statements
#   (module / class / function docstrings and the strings documenting a field or constant), which explain.
EXTRA_WORDS = ("vistory",)
SHORT_FORMS = ("nt",)


def benchmark_names(path: Path = ROOT / "bench_assets" / "benchmarks.py") -> tuple[str, ...]:
    """The keys of the ``BENCHMARKS`` table, from the source."""
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        target = node.target if isinstance(node, ast.AnnAssign) else \
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if isinstance(target, ast.Name) and target.id == "BENCHMARKS" and node.value is not None:
            table = next(d for d in ast.walk(node.value) if isinstance(d, ast.Dict))
            return tuple(k.value for k in table.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    raise AssertionError(f"no BENCHMARKS table in {path}")


def _identifiers(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, ast.arg):
        return [node.arg]
    if isinstance(node, ast.keyword):
        return [node.arg] if node.arg else []
    if isinstance(node, ast.alias):
        return [n for n in (node.name, node.asname) if n]
    if isinstance(node, ast.ImportFrom):
        return [node.module] if node.module else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return list(node.names)
    if isinstance(node, ast.ExceptHandler):
        return [node.name] if node.name else []
    return []


def benchmark_words_in(source: str, names: tuple[str, ...], filename: str = "<source>") -> list[str]:
    """``line: what`` for every identifier or string constant of ``source`` that names a benchmark (the rule above)."""
    words = tuple(n.lower() for n in names) + EXTRA_WORDS
    tree = ast.parse(source, filename=filename)
    docs = {id(n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
    bad = []
    for node in ast.walk(tree):
        line = getattr(node, "lineno", "?")
        for ident in _identifiers(node):
            low = ident.lower()
            hit = [w for w in words if w in low] + [s for s in SHORT_FORMS if s in low.split("_")]
            if hit:
                bad.append(f"{line}: identifier {ident!r} names {hit[0]!r}")
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            hit = [w for w in words if w in node.value.lower()] + [s for s in SHORT_FORMS if node.value.lower() == s]
            if hit:
                bad.append(f"{line}: string {node.value[:60]!r} names {hit[0]!r}")
    return bad


def test_the_benchmark_name_rule_reads_code_and_skips_documentation():
    names = benchmark_names()
    assert {"entitybench", "vistorybench", "mbench", "locot2v", "narrativetrack"} <= set(names)
    src = ('"""Module doc: EntityBench and NarrativeTrack are explained here."""\n'
           'import os\n'
           'from bench_assets.entitybench import wiring\n'
           'ITEM = {"vistorybench": "story"}\n'
           'X = 1\n'
           '"""A constant\'s doc naming MBench."""\n'
           'ENTITYBENCH = object()\n'
           'def f(nt_root, count=1, benchmark="locot2v"):\n'
           '    """LoCoT2V in a docstring."""\n'
           '    # narrativetrack in a comment\n'
           '    label = f"({benchmark} ViStory board)"\n'
           '    if label.startswith("nt"):\n'
           '        return {"count": count, "nt001": 1, "mbench_scores": 2}\n'
           '    return wiring.point\n')
    bad = benchmark_words_in(src, names)
    lines = sorted({b.split(":")[0] for b in bad}, key=int)
    # the import, a dict key, a name, an argument and its default, an f-string, a short form, a table key
    assert lines == ["3", "4", "7", "8", "11", "12", "13"], bad
    assert not any(b.startswith(("1:", "2:", "6:", "9:", "10:", "14:")) for b in bad)  # documentation, plain code
    assert not any("'count'" in b or "'nt001'" in b for b in bad), bad
    assert any("'nt_root'" in b for b in bad) and any("'locot2v'" in b for b in bad)


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m.startswith("bench_assets.core")))
def test_core_module_names_no_benchmark(module):
    """Core receives a benchmark's name, item dimension, sources and board text from its caller: no module of
    ``bench_assets/core`` names one in code (identifiers and strings; documentation may explain)."""
    path = MODULES[module]
    bad = benchmark_words_in(path.read_text(), benchmark_names(), str(path))
    assert not bad, f"{path.relative_to(ROOT)} names benchmarks in code:\n" + "\n".join(bad)
