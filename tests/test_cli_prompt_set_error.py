"""`BENCH_ENTITYBENCH_JUDGE_PROMPTS=authors` without a readable clone of the authors' code is one `error:` line
naming what is missing, exit 2, as the README says ("one error names a missing clone or prompt"); on a clean
clone it was a PromptSetError traceback from the run's tags (nothing had started)."""
from __future__ import annotations

import shutil

import pytest

from bench_assets import cli
from tests.support import DATA, cli_env


@pytest.fixture
def one_episode(tmp_path):
    data = tmp_path / "data"
    (data / "entitybench" / "episodes").mkdir(parents=True)
    shutil.copy(DATA / "entitybench" / "episodes" / "e0001.json", data / "entitybench" / "episodes")
    gen = data / "generators" / "mygen"
    shutil.copytree(DATA / "generators" / "faithful" / "e0001", gen / "e0001")
    (gen / "generator.yaml").write_text("name: mygen\nbenchmark: entitybench\n")
    return data, gen


@pytest.mark.parametrize("clone, says", [(None, "needs BENCH_ENTITYBENCH_AUTHORS_CODE"),
                                         ("no_clone_here", "does not exist")])
def test_authors_prompts_without_a_clone_is_one_error_line(one_episode, tmp_path, monkeypatch, capsys, clone, says):
    data, gen = one_episode
    extra = {"BENCH_ENTITYBENCH_JUDGE_PROMPTS": "authors"}
    if clone:
        extra["BENCH_ENTITYBENCH_AUTHORS_CODE"] = str(tmp_path / clone)
    else:   # a clone named in the developer's own environment (the full tier's authors tests) must not leak in
        monkeypatch.delenv("BENCH_ENTITYBENCH_AUTHORS_CODE", raising=False)
    cli_env(monkeypatch, tmp_path, data, **extra)
    assert cli.main(["evaluate", "--benchmark", "entitybench", "--generator", str(gen)]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("error:") or "Traceback" in ln]
    assert len(err) == 1 and says in err[0] and "BENCH_ENTITYBENCH" in err[0]
