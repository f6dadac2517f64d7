"""`bench metrics | head -1`: the reader closes the pipe early; `bench` ends quietly with the shell's SIGPIPE status
(141), not a BrokenPipeError traceback (found following the README on a clean clone; `bench leaderboard`,
`bench human-alignment` did the same)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_a_closed_pipe_is_no_traceback(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", "from bench_assets.cli import main; main()", "metrics", "--wide"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT),
                                 "BENCH_STORE_ROOT": str(tmp_path / "store"), "COLUMNS": "100"})
    assert proc.stdout.readline()          # the first line arrives, then the reader goes away
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141
    assert "Traceback" not in err and "BrokenPipeError" not in err, err
