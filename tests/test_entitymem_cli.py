"""`bench entitymem` as a user runs it: a configuration given as a YAML path (registered under the data root, the
run works), a bad configuration file (one error line, no folders), the shipped probe episode that makes the
offline stand-in run a retry, an attached object, a pan and a two-keyframe shot (read off its audit page), and the
progress lines (shots, rate, ETA)."""
from __future__ import annotations

import json
import re
import shutil

import pytest
import yaml

from tests.support import DATA
from tests.support.entitymem import EPISODE

PROBE = "entitymem-probe"


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    root = tmp_path / "data"
    (root / "entitybench" / "episodes").mkdir(parents=True)
    (root / "entitybench" / "episodes" / "t0001.json").write_text(json.dumps(EPISODE))
    (root / "entitymem" / "episodes").mkdir(parents=True)
    shutil.copy(DATA / "entitymem" / "episodes" / f"{PROBE}.json", root / "entitymem" / "episodes")
    monkeypatch.setenv("BENCH_DATA_ROOT", str(root))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    return root


def _small(name: str, **kw) -> dict:
    return {"name": name, "description": "offline backends, small", "candidates": 2, "n_frames": 4,
            "frame": [64, 36], **kw}


def test_a_configuration_given_as_a_path_runs(data_root, tmp_path, capsys):
    from bench_assets.cli import main
    src = tmp_path / "elsewhere" / "small.yaml"
    src.parent.mkdir()
    src.write_text(yaml.safe_dump(_small("small")))
    out = tmp_path / "gens"
    assert main(["entitymem", "--episodes", "t0001", "--config", str(src), "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert "FAILED" not in cap.err and "ConfigError" not in cap.err
    assert f"registered as {data_root / 'entitymem' / 'configs' / 'small.yaml'}" in cap.out
    assert (data_root / "entitymem" / "configs" / "small.yaml").read_bytes() == src.read_bytes()
    assert len(sorted((out / "entitymem_small" / "t0001").glob("shot_*.mp4"))) == 4
    assert f"entitymem: {out / 'entitymem_small'}" in cap.out
    # the same file again: nothing to register, every step reused
    assert main(["entitymem", "--episodes", "t0001", "--config", str(src), "--out", str(out)]) == 0
    cap = capsys.readouterr()
    assert "registered" not in cap.out and "recomputed {}" in cap.out
    # another file of the same name: refused, naming both, before anything runs
    other = tmp_path / "other" / "small.yaml"
    other.parent.mkdir()
    other.write_text(yaml.safe_dump(_small("small", candidates=3)))
    assert main(["entitymem", "--episodes", "t0001", "--config", str(other), "--out", str(out)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.strip().splitlines()) == 1
    assert str(other) in cap.err and "already registered as" in cap.err


@pytest.mark.parametrize("bad,words", [
    (_small("bad", candidatez=2), "unknown keys"),
    (_small("bad", image={"backend": "nonsense"}), "nonsense"),
    (_small("bad", agents={"backend": "oracle"}), "oracle"),
    ("name: bad\ncandidates: [2", "not valid YAML"),
])
def test_a_bad_configuration_file_is_one_error_and_no_folders(data_root, tmp_path, capsys, bad, words):
    from bench_assets.cli import main
    p = tmp_path / "bad.yaml"
    p.write_text(bad if isinstance(bad, str) else yaml.safe_dump(bad))
    assert main(["entitymem", "--episodes", "t0001", "--config", str(p), "--out", str(tmp_path / "gens")]) == 2
    cap = capsys.readouterr()
    lines = [line for line in cap.err.splitlines() if line.strip() and not re.match(r"\[\d\d:\d\d:\d\d\]", line)]
    assert len(lines) == 1 and lines[0].startswith("error: EntityMem configuration") and words in lines[0], cap.err
    assert "entitymem_bad" not in cap.out and "control:" not in cap.out
    assert not (tmp_path / "gens").exists()
    assert not (data_root / "entitymem" / "configs").exists()      # a refused file is not registered


def test_the_probe_episode_runs_every_step_and_its_audit_page_shows_them(data_root, tmp_path, capsys):
    from bench_assets.cli import main
    out = tmp_path / "gens"
    assert main(["entitymem", "--episodes", f"t0001,{PROBE}", "--out", str(out)]) == 0
    cap = capsys.readouterr()
    page = tmp_path / "store" / "reports" / "entitymem" / "offline-stand-in" / f"{PROBE}.html"
    assert f"audit pages: {page}" in cap.out
    html = page.read_text()
    # a retry: the Knight's green coat went with the green key, the verifier failed it, magenta passed
    knight = html[html.index("<h3>Verdant Knight"):html.index("<h3>Mara")]
    assert "attempt 1 on <b>green</b>" in knight and "fail: missing_body_region" in knight
    assert "attempt 2 on <b>magenta</b>" in knight and 'class="ok">pass' in knight
    # an attached object: the hat is drawn in its owner's portrait
    hat = html[html.index("<h3>the Hat"):html.index("<h3>the Cat")]
    assert "reference: <b>attached</b> of c1" in hat
    # a pan and a two-keyframe shot: shot 2, where three characters enter a continuation
    rows = html.split("<tr>")[2:]
    assert [("pan right" in r, r.count('title="keyframe ') == 2) for r in rows] == [
        (False, False), (True, True), (False, False)]
    assert "camera right" in rows[1] and "(continues)" in rows[1]
    # progress: the shots both arms generate (t0001 4 x 2, the probe 3 x 2), a rate and, for the second
    # episode, an ETA in time (the first episode's rate), then the final count
    err = [line for line in cap.err.splitlines() if line.startswith("[")]
    assert any(f"offline-stand-in x {PROBE}: entitymem_bank" in line and re.search(r"8/14 shots, .*ETA \d", line)
               for line in err), cap.err
    # inside an episode the count moves as its steps start (each an equal share of its shots), below its total
    probe = [int(re.search(r"(\d+)/14 shots", line).group(1)) for line in err if f"x {PROBE}:" in line]
    assert probe == sorted(probe) and probe[0] == 8 and 8 < probe[-1] < 14, probe
    assert re.search(r"entitymem 14/14 shots, .* shot/min, .*\| done$", err[-1]), err[-1]
    # a probe is not an EntityBench episode: --evaluate says so, before running anything
    assert main(["entitymem", "--episodes", PROBE, "--evaluate", "--out", str(out)]) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and "not EntityBench episodes" in cap.err and PROBE in cap.err
