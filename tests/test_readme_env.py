"""Every BENCH_* environment variable the code reads is documented in README.md (issue 39: BENCH_REPORT_URL was
read by the report code and named nowhere a user would look). The scan is the sources' string constants that are
a whole BENCH_ name (os.environ.get("BENCH_X"), X_ENV = "BENCH_X", Dagster's {"env": "BENCH_X"}), in the packages
and the scripts users run."""
import ast
import importlib.util
import re
from pathlib import Path

# located through the package on the path (found, not imported), so a scratch checkout on PYTHONPATH is checked
# against its own README
ROOT = Path(importlib.util.find_spec("bench_assets").origin).resolve().parents[1]
SOURCES = ("bench_assets", "bench_resources", "scripts")
NAME = re.compile(r"BENCH_[A-Z0-9_]+")


def read_names() -> dict[str, list[str]]:
    """BENCH_ name -> the files whose code holds it as a whole string constant."""
    found: dict[str, list[str]] = {}
    for top in SOURCES:
        for path in sorted((ROOT / top).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.fullmatch(node.value):
                    found.setdefault(node.value, []).append(str(path.relative_to(ROOT)))
    return found


def test_the_scan_finds_the_variables_read_in_each_way():
    names = read_names()
    # os.environ.get in the settings, a module constant (X_ENV = ...), a Dagster {"env": ...} config
    for known in ("BENCH_STORE_ROOT", "BENCH_MAX_SCHEDULE_FRAMES", "BENCH_CELERY_BROKER", "BENCH_REPORT_URL"):
        assert known in names, known
    assert not any(n == "BENCH_" for n in names)


def test_every_bench_variable_the_code_reads_is_in_the_readme():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"(?<![A-Z0-9_])BENCH_[A-Z0-9_]+(?![A-Z0-9_])", readme))
    missing = {n: sorted(set(files)) for n, files in sorted(read_names().items()) if n not in documented}
    assert not missing, "read by the code, not in README.md: " + "; ".join(
        f"{n} ({', '.join(files)})" for n, files in missing.items())
