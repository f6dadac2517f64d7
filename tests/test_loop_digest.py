"""Issue 39 (the daily loop): a no-change `bench evaluate` does not read every input file again.

The content digests of the files each item reads (videos, episode files) were remembered only inside one process,
so every new `bench evaluate` hashed every input file again. Now they are kept in the Dagster home
(``bench-digests.json``, keyed by path, size, mtime and inode): a new process reads only files that changed."""
import hashlib
import os

import pytest

from bench_assets.core import automation as A


@pytest.fixture
def fresh_process(monkeypatch, tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("DAGSTER_HOME", str(home))

    def restart():   # what a new process starts with: nothing remembered in memory
        monkeypatch.setattr(A, "_DIGESTS", {})
        monkeypatch.setattr(A, "_DISK", {"loaded": None, "dirty": False})
    restart()
    return home, restart


def test_digests_survive_the_process_and_a_changed_file_is_read_again(fresh_process, tmp_path, monkeypatch):
    home, restart = fresh_process
    f = tmp_path / "shot.mp4"
    f.write_bytes(b"frames" * 1000)
    want = hashlib.sha256(f.read_bytes()).hexdigest()
    assert A.file_digest(f) == want
    A.save_digest_cache()
    assert (home / A.DIGEST_CACHE).is_file()

    restart()
    reads = []
    real = hashlib.sha256
    monkeypatch.setattr(A.hashlib, "sha256", lambda *a: reads.append(1) or real(*a))
    assert A.file_digest(f) == want and reads == []        # from the home: not read again

    f.write_bytes(b"other frames" * 1000)                   # replaced: size and mtime move
    os.utime(f, ns=(1, 2))
    assert A.file_digest(f) == real(f.read_bytes()).hexdigest() and reads == [1]


def test_a_damaged_cache_is_ignored_not_trusted(fresh_process, tmp_path):
    home, restart = fresh_process
    (home / A.DIGEST_CACHE).write_text("[[1, 2")
    f = tmp_path / "e.json"
    f.write_text("{}")
    assert A.file_digest(f) == hashlib.sha256(b"{}").hexdigest()
