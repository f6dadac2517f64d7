"""The command line every embedded-data script shares: write the data, or ``--check`` that it regenerates byte for
byte. A script owns one benchmark folder under ``data/`` and a set of generator folders."""
from __future__ import annotations

import argparse
import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable

DATA = Path(__file__).resolve().parents[1] / "data"


def digest(root: Path, benchmark: str, generators: Iterable[str]) -> dict[str, str]:
    """sha256 of every file the script owns under ``root``."""
    gens = set(generators)
    out = {}
    for p in sorted(root.rglob("*")):
        rel = p.relative_to(root).parts
        if p.is_file() and (rel[0] == benchmark or (len(rel) > 1 and rel[0] == "generators" and rel[1] in gens)):
            out[str(p.relative_to(root))] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def main(doc: str, benchmark: str, generators: Iterable[str], write_all: Callable[[Path], None]) -> int:
    generators = list(generators)
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=str(DATA))
    ap.add_argument("--check", action="store_true", help="regenerate into a temp dir and compare every file")
    args = ap.parse_args()
    out = Path(args.out)
    if args.check:
        with tempfile.TemporaryDirectory() as tmp:
            write_all(Path(tmp))
            new, old = digest(Path(tmp), benchmark, generators), digest(out, benchmark, generators)
            diff = sorted(k for k in set(new) | set(old) if new.get(k) != old.get(k))
            for k in diff[:20]:
                print(f"differs: {k}")
            print(f"{len(new)} files regenerated, {len(diff)} differ")
            return 1 if diff else 0
    for g in generators:
        shutil.rmtree(out / "generators" / g, ignore_errors=True)
    shutil.rmtree(out / benchmark, ignore_errors=True)
    write_all(out)
    print(f"wrote the embedded {benchmark} data under {out}")
    return 0
