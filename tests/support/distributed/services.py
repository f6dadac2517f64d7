"""PostgreSQL and Redis from Debian's packages on 127.0.0.1, started for a test and torn down after it."""
from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    return Path(found[-1]).parent if found else None


def missing() -> list[str]:
    out = []
    if pg_bin() is None:
        out.append("postgresql (apt-get install postgresql)")
    if shutil.which("redis-server") is None:
        out.append("redis-server (apt-get install redis-server)")
    return out


def _as_postgres(cmd: list[str]) -> list[str]:
    # PostgreSQL refuses to run as root: drop to the package's 'postgres' user when we are root
    return ["runuser", "-u", "postgres", "--", *cmd] if os.geteuid() == 0 else cmd


@contextmanager
def postgres(workdir: Path):
    """Yields (host, port, user, db) of a fresh cluster with trust auth on 127.0.0.1."""
    bindir = pg_bin()
    workdir.mkdir(parents=True, exist_ok=True)
    # the cluster lives where the postgres user can reach it (pytest's tmp tree is root-only)
    base = Path(tempfile.mkdtemp(prefix="bench-pg-"))
    data = base / "pgdata"
    data.mkdir()
    if os.geteuid() == 0:
        shutil.chown(base, "postgres")
        shutil.chown(data, "postgres")
    port = free_port()
    subprocess.run(_as_postgres([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", "bench",
                                 "--no-sync"]), check=True, capture_output=True)
    log = base / "pg.log"
    subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-o",
                                 f"-p {port} -k {data} -c listen_addresses=127.0.0.1 -c fsync=off "
                                 f"-c max_connections=200", "start"]), check=True, capture_output=True)
    try:
        subprocess.run(_as_postgres([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "bench",
                                     "dagster"]), check=True, capture_output=True)
        yield "127.0.0.1", port, "bench", "dagster"
    finally:
        subprocess.run(_as_postgres([str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"]),
                       capture_output=True)
        shutil.rmtree(base, ignore_errors=True)


@contextmanager
def redis():
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.2)
        yield f"redis://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
