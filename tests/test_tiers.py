"""The suite's own machinery (tests/support/plugin.py, tiers.py, worlds.py), run as pytest runs of their own on
generated test files: tiers follow what a test uses (directly, through a fixture or through a helper it calls),
two modules that read one session world share one build on two xdist workers, and a second build fails the run."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = "from tests.support.worlds import probe_world  # noqa: F401\n"


def _pytest(folder: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("BENCH_TEST_WORLD_BUILDS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "tests.support.plugin", "-p", "no:cacheprovider",
                           "--rootdir", str(folder), *args], cwd=folder, env=env, capture_output=True, text=True,
                          timeout=300)


def _write(folder: Path, files: dict[str, str]) -> None:
    for name, body in files.items():
        (folder / name).write_text(textwrap.dedent(body))


def test_tiers_follow_what_a_test_uses(tmp_path):
    _write(tmp_path, {"conftest.py": CONFTEST, "test_kinds.py": '''
        import subprocess
        import pytest

        def _helper(x):
            from dagster import instance_for_test
            with instance_for_test():
                return x

        def _pure(x):
            """Says materialize( and subprocess in prose: prose does not count."""
            return x + 1

        @pytest.fixture
        def spawned():
            return subprocess.run

        def test_pure():
            assert _pure(1) == 2

        def test_runs_dagster_through_a_helper():
            assert _helper(1) == 1

        def test_starts_a_process_through_a_fixture(spawned):
            assert spawned

        def test_materializes():
            from dagster import materialize
            assert materialize

        def test_reads_footage():
            from bench_assets.core.footage import require_footage
            assert require_footage

        @pytest.mark.slow
        def test_marked_by_hand():
            pass
        '''})
    fast = _pytest(tmp_path, "--collect-only", "-q", "-m", "not heavy")
    assert fast.returncode == 0, fast.stdout + fast.stderr
    ids = [line.split("::")[1] for line in fast.stdout.splitlines() if "::" in line]
    assert ids == ["test_pure"], fast.stdout
    for marker, name in (("dagster", "test_runs_dagster_through_a_helper"),
                         ("process", "test_starts_a_process_through_a_fixture"),
                         ("dagster", "test_materializes"), ("footage", "test_reads_footage")):
        run = _pytest(tmp_path, "--collect-only", "-q", "-m", marker)
        assert f"test_kinds.py::{name}" in run.stdout, (marker, run.stdout)
        assert "test_pure" not in run.stdout


def test_a_session_world_is_built_once_for_two_modules_on_two_workers(tmp_path):
    body = '''
        import os

        def test_reads(probe_world):
            assert probe_world.read_text() == str(os.getpid())
        '''
    _write(tmp_path, {"conftest.py": CONFTEST, "test_one.py": body, "test_two.py": body,
                      "test_other.py": "def test_x():\n    pass\n"})
    run = _pytest(tmp_path, "-n", "2", "-q")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "session worlds built: probe_world x1" in run.stdout, run.stdout


def test_a_second_build_fails_the_run(tmp_path):
    _write(tmp_path, {"conftest.py": CONFTEST + textwrap.dedent('''
        import pytest
        from tests.support.worlds import record_build

        @pytest.fixture(scope="module")
        def rebuilt(tmp_path_factory):
            record_build(tmp_path_factory, "probe_world")   # a module-scoped copy of the world: built per module
        '''), "test_one.py": "def test_a(rebuilt):\n    pass\n", "test_two.py": "def test_b(rebuilt):\n    pass\n"})
    run = _pytest(tmp_path, "-q")
    assert run.returncode == 1, run.stdout + run.stderr
    assert "session worlds built more than once: {'probe_world': 2}" in run.stdout, run.stdout


def _test_module_imports(root: Path) -> list[str]:
    """``file:line imports module`` for each import of a test module (``test_*``) or a conftest from a test file."""
    import ast
    bad = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            for n in names:
                parts = n.split(".")
                if parts[0] in ("tests", "conftest") or parts[0].startswith("test_"):
                    if any(p.startswith("test_") or p == "conftest" for p in parts):
                        bad.append(f"{path.relative_to(root)}:{node.lineno} imports {n}")
    return bad


def test_no_test_module_imports_another(tmp_path):
    """Shared builders and fakes live in tests/support; a test module never imports another (nor a conftest)."""
    assert _test_module_imports(ROOT / "tests") == []
    (tmp_path / "test_a.py").write_text("def f():\n    from tests.test_mbench import _run\n")
    (tmp_path / "test_b.py").write_text("from conftest import DATA\nimport tests.support.mbench\n")
    assert _test_module_imports(tmp_path) == ["test_a.py:2 imports tests.test_mbench", "test_b.py:1 imports conftest"]
