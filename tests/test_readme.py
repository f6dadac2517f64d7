"""The README's commands work as written.

- Every fenced block marked ``sh test`` is a "bring your own" recipe: the blocks of one README section run in
  order, as one bash script (``set -euo pipefail``), in an empty temporary folder, with ``$BENCH_REPO`` = this
  checkout (the recipes copy its embedded data as stand-ins for a user's files), judge off. Each recipe must
  leave a leaderboard that lists the user's generator, with values where the benchmark computes any offline.
- Every ``bench ...`` command anywhere in the README (code blocks and inline code) names a real subcommand, and
  each ``--flag`` it uses is one that subcommand accepts.
"""
from __future__ import annotations

import contextlib
import io
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.S | re.M)


def sections() -> dict[str, list[str]]:
    """``{section heading: [recipe block, ...]}`` for the ``sh test`` blocks, grouped by their ``##`` section."""
    text = README.read_text(encoding="utf-8")
    out: dict[str, list[str]] = {}
    for m in FENCE.finditer(text):
        if m.group(1).strip().split() != ["sh", "test"]:
            continue
        heads = re.findall(r"^## (.+)$", text[:m.start()], re.M)
        out.setdefault(heads[-1].strip(), []).append(m.group(2))
    return out


def bench_commands() -> list[str]:
    """Every ``bench ...`` command line of the README: lines of code blocks and inline code spans."""
    text = README.read_text(encoding="utf-8")
    cmds = []
    for m in FENCE.finditer(text):
        for line in m.group(2).splitlines():
            line = line.split("#")[0].strip()
            if line.startswith("bench "):
                cmds.append(line)
    prose = FENCE.sub("", text)
    cmds += [c.strip() for c in re.findall(r"`(bench [^`]+)`", prose)]
    return cmds


def setup_block() -> str:
    """The README's set-up block (the fence marked ``sh setup``)."""
    blocks = [m.group(2) for m in FENCE.finditer(README.read_text(encoding="utf-8"))
              if m.group(1).strip().split() == ["sh", "setup"]]
    assert len(blocks) == 1, f"README needs exactly one `sh setup` block, has {len(blocks)}"
    return blocks[0]


def setup_script() -> str:
    """The set-up block's lines after `make` (the demo itself is `make demo`; its venv is this checkout's), run in
    the checkout as the README says, in a shell with no PATH help: the same lines a new user types."""
    lines = [ln for ln in setup_block().splitlines() if ln.strip() and not ln.strip().startswith("make ")]
    return f"cd {str(ROOT)!r}\n" + "\n".join(lines) + "\n"


def clean_env(**extra: str) -> dict:
    """What a fresh login shell has: HOME, a system PATH without the venv, a locale; no BENCH_* or DAGSTER_HOME."""
    env = {"HOME": os.environ.get("HOME", "/root"), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}
    env.update(extra)
    return env


RECIPES = sections()
# what each recipe's generator is called and whether the offline profile computes any of its values
EXPECT = {"EntityBench": ("mygen", True), "ViStoryBench": ("mystory", True), "MBench": ("myworld", True),
          "LoCoT2V-Bench": ("mylong", True), "NarrativeTrack": ("myanswerer", False)}


def section_page(section: str) -> str:
    return {"EntityBench": "entitybench", "ViStoryBench": "vistorybench", "MBench": "mbench",
            "LoCoT2V-Bench": "locot2v", "NarrativeTrack": "narrativetrack"}[section] + ".html"


def test_every_benchmark_has_a_recipe():
    assert set(RECIPES) == set(EXPECT), sorted(RECIPES)
    for name, blocks in RECIPES.items():
        script = "\n".join(blocks)
        assert "bench evaluate" in script and "BENCH_DATA_ROOT" in script and "BENCH_GENERATORS_ROOT" in script, name


def _help(args: list[str]) -> str:
    from bench_assets import cli
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf), pytest.raises(SystemExit) as e:
        cli.main([*args, "--help"])
    assert e.value.code == 0, args
    return buf.getvalue()


def test_every_bench_command_in_the_readme_exists_with_its_flags():
    cmds = bench_commands()
    assert len(cmds) >= 10, cmds
    top = _help([])
    subs = set(re.search(r"\{([^}]+)\}", top).group(1).split(","))
    helps: dict[str, str] = {}
    for cmd in cmds:
        words = cmd.split()
        sub = words[1]
        if sub.startswith("-"):  # a top-level flag (`bench --help`)
            assert sub in top, f"`bench` has no {sub} (README: {cmd})"
            continue
        assert sub in subs, f"README uses `bench {sub}`, which the CLI does not have ({sorted(subs)}): {cmd}"
        if sub not in helps:
            helps[sub] = _help([sub])
        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", cmd):
            assert flag in helps[sub], f"`bench {sub}` has no {flag} (README: {cmd})"


def check_common_board(benchmark: str, rows: list[dict]) -> None:
    """The board a user gets is the common schema, every id on it has a MetricSpec and every declared metric is on
    it, and every value whose spec's slots ran a checkpoint other than the paper's (here: the offline profile's
    substitutes) carries the substitute mark."""
    import pandas as pd

    from bench_assets.benchmarks import BENCHMARKS
    from bench_assets.core.metric_spec import BOARD_COLUMNS, check_board
    from bench_resources.models.registry import ModelRegistry
    from bench_resources.models.specs import SLOTS

    board = pd.DataFrame(rows)
    assert list(board.columns) == list(BOARD_COLUMNS), f"{benchmark}: board columns {list(board.columns)}"
    specs = BENCHMARKS[benchmark].metrics
    assert not check_board(board, specs), f"{benchmark}: {check_board(board, specs)}"
    models = ModelRegistry(profile="offline")
    unmarked = []
    for r in rows:
        if r["value"] is None or r.get("baseline"):
            continue
        subbed = [s for s in specs[r["metric_id"]].slots if s in SLOTS and models.status(s).available
                  and models.status(s).checkpoint != SLOTS[s].paper.name]
        if subbed and not r.get("substitute"):
            unmarked.append((r["metric_id"], r["slice"], subbed))
    assert not unmarked, f"{benchmark}: values from substitutes without a mark: {unmarked[:5]}"


@pytest.mark.slow
@pytest.mark.parametrize("section", sorted(EXPECT))
def test_bring_your_own_recipe_runs_as_written(section, tmp_path):
    blocks = RECIPES.get(section)
    assert blocks, f"README section {section!r} has no `sh test` recipe"
    # no PATH help and no BENCH_REPO: the set-up block's own lines provide both, as for a user
    env = clean_env(BENCH_JUDGE_MODE="off")
    script = (setup_script() + f"cd {str(tmp_path)!r}\nset -euo pipefail\n" + "\n".join(blocks))
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=1500)
    assert proc.returncode == 0, f"{section} recipe failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    name, has_values = EXPECT[section]
    board = json.loads((tmp_path / "leaderboard.json").read_text())
    mine = [r for r in board if r.get("generator") == name]
    assert mine, f"{section}: {name} is not on the leaderboard"
    values = [r for r in mine if r.get("value") is not None]
    if has_values:
        assert values, f"{section}: no value for {name} offline"
    else:
        assert all(r.get("reason") for r in mine if r.get("value") is None)
    check_common_board(section_page(section).split(".")[0], board)
    if "bench report" in script:
        report = tmp_path / "report"
        assert (report / "index.html").is_file() and (report / section_page(section)).is_file()
    # the run stayed inside the recipe's folders
    assert (tmp_path / "store" / "tables").is_dir() and (tmp_path / "dagster_home").is_dir()


def test_setup_block_puts_bench_on_path_in_a_clean_shell(tmp_path):
    """After `make demo`, the README's next lines typed as written give a shell where `bench` and `$BENCH_REPO`
    work: no venv on PATH beforehand, no variable set by hand (issue 26: `bench: command not found`)."""
    block = setup_block()
    make_targets = re.findall(r"^make (\w+)", block, re.M)
    makefile = (ROOT / "Makefile").read_text()
    assert make_targets and all(re.search(rf"^{t}:", makefile, re.M) for t in make_targets), make_targets
    assert "source $(VENV)/bin/activate" in makefile, "the Makefile prints the activation line"
    probe = setup_script() + 'echo "BENCH=$(command -v bench)"; echo "REPO=$BENCH_REPO"\n'
    no_help = subprocess.run(["bash", "-c", "command -v bench || echo none"], env=clean_env(), capture_output=True,
                             text=True)
    assert no_help.stdout.strip() == "none", "the clean shell must not find bench by itself"
    proc = subprocess.run(["bash", "-c", "set -euo pipefail\n" + probe], cwd=tmp_path, env=clean_env(),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f"BENCH={ROOT / '.venv' / 'bin' / 'bench'}" in proc.stdout, proc.stdout
    assert f"REPO={ROOT}" in proc.stdout
    assert "usage: bench" in proc.stdout and "evaluate" in proc.stdout


# README numbers that have a source are read from it. The face thresholds: each calibration file's stored threshold
# is what the README quotes wherever it names that threshold (the file, the module that once wrote it, its table
# row), and its benchmark's section quotes it. A number quoted there is the file's value at the digits shown.
FACE_THRESHOLDS = {  # file -> (README section, the phrases after which the README states that threshold)
    "bench_assets/mbench/identity_calibration.json": (
        "MBench", ("identity_calibration.json", "MBench identity (single faces)")),
    "bench_assets/narrativetrack/face_calibration.json": (
        "NarrativeTrack", ("face_calibration.json", "bench_assets.narrativetrack.calibration",
                           "`FACE_MERGE_COSINE` (tracklet mean faces)")),
}
DECIMAL = re.compile(r"(?<![\w.])0?\.(\d{3,})\b")


def readme_section(text: str, heading: str) -> str:
    m = re.search(rf"^## {re.escape(heading)}\s*$", text, re.M)
    assert m, f"README has no section ## {heading}"
    end = re.search(r"^## ", text[m.end():], re.M)
    return text[m.end():m.end() + end.start()] if end else text[m.end():]


def quotes(value: float, number: re.Match) -> bool:
    """Whether the README's number is ``value`` at the digits it shows."""
    return round(value, len(number.group(1))) == float("0." + number.group(1))


def face_threshold_problems(text: str) -> list[str]:
    """What the README says about each face threshold that its calibration file does not."""
    bad = []
    for rel, (section, anchors) in FACE_THRESHOLDS.items():
        value = float(json.loads((ROOT / rel).read_text())["threshold"])
        for anchor in anchors:
            for m in re.finditer(re.escape(anchor), text):
                n = DECIMAL.search(text, m.end(), m.end() + 80)
                line = text.count("\n", 0, m.start()) + 1
                if n is None:
                    bad.append(f"README:{line}: {anchor} without its threshold ({value} in {rel})")
                elif not quotes(value, n):
                    bad.append(f"README:{line}: {anchor} quotes {n.group(0)}; {rel} holds {value}")
        if not any(quotes(value, n) for n in DECIMAL.finditer(readme_section(text, section))):
            bad.append(f"README section {section} does not quote its face threshold {value} ({rel})")
    return bad


def test_readme_quotes_the_face_thresholds_the_calibration_files_hold():
    problems = face_threshold_problems(README.read_text(encoding="utf-8"))
    assert not problems, "\n".join(problems)


def test_the_threshold_check_catches_a_stale_or_missing_quote():
    text = README.read_text(encoding="utf-8")
    stale = text.replace("identity_calibration.json`, cosine .4251", "identity_calibration.json`, cosine 0.617")
    assert stale != text and any("quotes 0.617" in p for p in face_threshold_problems(stale))
    gone = re.sub(r"\.4499\b", ".4100", text)
    assert len(face_threshold_problems(gone)) >= 3   # both anchors and the section
