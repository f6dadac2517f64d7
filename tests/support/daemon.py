"""Real Dagster processes in tests: polling an instance a daemon writes to, and a real `bench ui` started on free
ports and read until it says it is ready."""
from __future__ import annotations

import socket
import subprocess
import sys
import time


def poll(what, until, timeout_s: float, proc, every: float = 2.0):
    """``what()`` until ``until(value)``; fails when ``proc`` (the daemon) exits or ``timeout_s`` passes."""
    t0 = time.monotonic()
    while True:
        try:
            value = what()
        except Exception:  # noqa: BLE001 - the daemon may hold the SQLite write lock for a moment
            value = None
        if value is not None and until(value):
            return value
        assert proc.poll() is None, f"dagster-daemon exited with {proc.returncode}"
        assert time.monotonic() - t0 < timeout_s, f"timed out after {timeout_s} s; last: {value}"
        time.sleep(every)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_bench_ui(env: dict, port: int, timeout_s: float = 300) -> tuple[subprocess.Popen, list[str]]:
    """`bench ui` in its own session on ``port`` (the report site on another free port), its output read until
    'bench ui: ready at' (or ``timeout_s``): (the process, the lines read)."""
    proc = subprocess.Popen([sys.executable, "-m", "bench_assets.cli", "ui", "--port", str(port), "--report-port",
                             str(free_port())], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    lines: list[str] = []
    deadline = time.monotonic() + timeout_s
    for raw in iter(proc.stdout.readline, b""):
        lines.append(raw.decode(errors="replace"))
        if "bench ui: ready at" in lines[-1] or time.monotonic() > deadline:
            break
    return proc, lines
