"""The `bench` CLI in-process: evaluate one generator folder, leaderboard JSON, weights list/import."""
import json

import pytest

from bench_assets import cli


@pytest.fixture
def env(small_world, tmp_path, monkeypatch):
    data, episodes = small_world(("faithful",))
    monkeypatch.setenv("BENCH_DATA_ROOT", str(data))
    monkeypatch.setenv("BENCH_GENERATORS_ROOT", str(data / "generators"))
    monkeypatch.setenv("BENCH_STORE_ROOT", str(tmp_path / "store"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("BENCH_WEIGHTS_DIR", str(tmp_path / "weights"))
    monkeypatch.setenv("BENCH_JUDGE_MODE", "off")
    return data, episodes


def test_evaluate_then_leaderboard_json(env, tmp_path, capsys):
    data, episodes = env
    # a generator folder outside the generators root
    import shutil
    outside = tmp_path / "elsewhere" / "mygen"
    shutil.copytree(data / "generators" / "faithful", outside)
    (outside / "generator.yaml").write_text("name: mygen\nbenchmark: entitybench\ndescription: a copy\n")
    assert cli.main(["evaluate", "--benchmark", "entitybench", "--generator", str(outside)]) == 0
    out = capsys.readouterr().out
    assert "mygen" in out and "subject_consistency" in out
    assert cli.main(["leaderboard", "--benchmark", "entitybench", "--json"]) == 0
    board = json.loads(capsys.readouterr().out)
    rows = {(r["generator"], r["metric_id"], r["tier"]): r for r in board}
    row = rows[("mygen", "subject_consistency", "all")]
    assert 0.5 < row["value"] <= 1.0 and row["coverage"] == 1.0
    miq = rows[("mygen", "imaging_quality", "all")]
    assert miq["value"] is None and "musiq" in miq["reason"]
    assert cli.main(["evaluate", "--benchmark", "mbench", "--generator", str(outside)]) == 2


def test_weights_list_and_import(env, tmp_path, capsys):
    assert cli.main(["weights", "--profile", "paper", "--json"]) == 0
    rows = {r["slot"]: r for r in json.loads(capsys.readouterr().out)}
    assert not rows["image_embedder"]["available"] and "bench weights import" in rows["image_embedder"]["reason"]
    assert rows["text_embedder"]["available"]
    ckpt = tmp_path / "raft_large.pth"
    ckpt.write_bytes(b"not really raft")
    assert cli.main(["weights", "import", "flow", str(ckpt)]) == 0
    out = capsys.readouterr().out
    import hashlib
    assert "available=True" in out and hashlib.sha256(b"not really raft").hexdigest() in out
    assert (tmp_path / "weights" / "flow" / "raft_large.pth").exists()
