"""`bench locot2v-rrub` reports a user's mistake as the README promises every `bench` user error: one `error:` line,
exit 2 (found on a clean clone: the offline profile's missing aesthetic slot and a missing folder were bare lines)."""
from __future__ import annotations

from bench_assets import cli
from bench_assets.locot2v import rrub
from tests.support import cli_env


def test_missing_folder_is_one_error_line(tmp_path, capsys):
    assert rrub.main([str(tmp_path / "nowhere"), "--out", str(tmp_path / "r.json")], score=lambda ims: [1.0]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and "nowhere" in err[0]


def test_unavailable_aesthetic_slot_is_one_error_line(tmp_path, monkeypatch, capsys):
    cli_env(monkeypatch, tmp_path, BENCH_PROFILE="offline")   # aesthetic_v25 has no offline substitute
    (tmp_path / "imgs").mkdir()
    assert cli.main(["locot2v-rrub", str(tmp_path / "imgs")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: cannot score images: slot 'aesthetic_v25'")
