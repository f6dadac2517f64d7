"""Which tier a test belongs to, read from what it uses, so that nobody has to remember to mark it.

A test is *heavy* when its own source, the source of every fixture it requests (transitively) or the source of any
function or class it names (transitively, through this project's test modules and ``tests/support``) uses one of
the kinds below. Everything else is *fast*: pure functions, fakes in the process, small files. ``make test`` runs the
fast tier (``-m "not heavy"``); ``make test-all`` runs both.

The kinds are markers too (``pytest -m browser``), applied by ``tests/conftest.py``. A test may also be marked
``heavy`` by hand where the reading misses it; the reading never removes a mark."""
from __future__ import annotations

import inspect
import re
from types import FunctionType

# kind -> what in a source says the test uses it. Patterns name calls and imports, not words in prose: a docstring
# that says "Dagster" does not make a test heavy, a call to ``materialize(`` does.
KINDS: dict[str, str] = {
    "browser": r"playwright|chromium",
    "process": r"\bsubprocess\b|\bPopen\b|multiprocessing|os\.fork|os\.kill|signal\.SIG|\bpexpect\b|_bench\(|"
               r"\bbench_cli\b|sys\.executable|dagster dev|DagsterDaemon|daemon",
    "server": r"FakeAnthropic|FakeOpenAI|FakeServer|FakeImages|FakeVideo|HTTPServer|socketserver|serve_site\(|"
              r"services\.",
    "dagster": r"\bmaterialize(_to_memory)?\b|instance_for_test|DagsterInstance|execute_in_process|\bevaluate\(|"
               r"\bbuild_sensor_context\b|\bbuild_asset_context\b|Definitions\(|\bdefinitions\b|"
               r"main\(\[\s*[\"'](evaluate|entitymem|ui|validate|demo|automate)[\"']",
    "weights": r"ModelRegistry|save_pretrained|torch\.save|load_state_dict|from_pretrained|timm\.create_model|"
               r"open_clip|build_resources\(|\bregistry\(|\.models\.|LoadContext",
    "footage": r"require_footage|fetch_footage|bench-footage|\bfootage\b|clip_frames",
}
_COMPILED = {k: re.compile(v) for k, v in KINDS.items()}
# folders whose every test is heavy: the reference implementations and the fault / recovery drills
HEAVY_PATHS = ("tests/parity/", "tests/faults/")
# fixtures that are light by construction even though their source matches (pytest's own)
LIGHT_FIXTURES = {"tmp_path", "tmp_path_factory", "monkeypatch", "capsys", "capfd", "caplog", "request",
                  "recwarn", "pytestconfig", "tmpdir", "tmpdir_factory", "record_property", "cache"}

_source_cache: dict[int, str] = {}


def _source(obj) -> str:
    key = id(obj)
    if key not in _source_cache:
        try:
            _source_cache[key] = inspect.getsource(obj)
        except (OSError, TypeError):
            _source_cache[key] = ""
    return _source_cache[key]


def _ours(obj) -> bool:
    mod = getattr(obj, "__module__", "") or ""
    return mod.startswith("tests") or mod.startswith("test_") or mod == "conftest"


def _strip_docstrings(src: str) -> str:
    """Source without triple-quoted strings and comments: prose does not count."""
    src = re.sub(r'"""(?:.|\n)*?"""', '""', src)
    src = re.sub(r"'''(?:.|\n)*?'''", "''", src)
    return re.sub(r"#[^\n]*", "", src)


def reachable_sources(roots, namespace: dict, depth: int = 4) -> list[str]:
    """The source of each root and of every function or class of ours that a reached source names, ``depth`` steps
    deep (names are looked up in ``namespace`` and in the reached object's own module)."""
    seen: set[int] = set()
    out: list[str] = []
    frontier = [(r, namespace) for r in roots]
    for _ in range(depth + 1):
        nxt = []
        for obj, ns in frontier:
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            src = _strip_docstrings(_source(obj))
            if not src:
                continue
            out.append(src)
            own = getattr(inspect.getmodule(obj), "__dict__", {}) or {}
            for name in set(re.findall(r"\b[A-Za-z_]\w*\b", src)):
                target = own.get(name, ns.get(name))
                if isinstance(target, (FunctionType, type)) and _ours(target) and id(target) not in seen:
                    nxt.append((target, own))
        frontier = nxt
    return out


def kinds_of(item) -> set[str]:
    """The kinds a collected pytest item uses."""
    func = getattr(item, "function", None)
    if func is None:
        return set()
    roots = [func]
    info = getattr(item, "_fixtureinfo", None)
    for name in (info.names_closure if info else []):
        if name in LIGHT_FIXTURES:
            continue
        for fdef in (info.name2fixturedefs.get(name) or ()):
            roots.append(fdef.func)
    found = {k for src in reachable_sources(roots, getattr(item.module, "__dict__", {}))
             for k, rx in _COMPILED.items() if rx.search(src)}
    path = str(item.path).replace("\\", "/")
    if any(p in path for p in HEAVY_PATHS):
        found.add("process" if "faults" in path else "weights")
    return found
