#!/usr/bin/env python3
"""Freeze the validity cases: record each case's version and fingerprint in bench_assets/core/validity_cases.json.

    python scripts/freeze_validity_cases.py --check                 # exit 1 when a case differs from its frozen one
    python scripts/freeze_validity_cases.py --reason "why it changed"   # bump the version of every changed case

``bench validate`` runs a case only when what it runs and expects (``core.validity.case_fingerprint``) equals its
frozen fingerprint. A change to a case or an expectation is therefore frozen here, with its reason, and committed on
its own, before the run that judges it: an expectation is never rewritten in the same change that looked at its
result. The lock keeps every earlier version's fingerprint and reason (``history``).
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_assets.core import validity as V  # noqa: E402

BENCHMARKS = ("entitybench", "vistorybench", "locot2v", "mbench", "narrativetrack")


def current_cases() -> dict[str, V.Case]:
    out = {}
    for b in BENCHMARKS:
        for c in importlib.import_module(f"bench_assets.{b}.validity").CASES:
            out[f"{b}/{c.case_id}"] = c
    return out


def diff(lock: dict, cases: dict[str, V.Case]) -> list[str]:
    """Keys whose case is new or whose fingerprint differs from the frozen one."""
    return [k for k, c in cases.items() if lock.get(k, {}).get("fingerprint") != V.case_fingerprint(c)]


def freeze(lock: dict, cases: dict[str, V.Case], reason: str, when: str, only=None) -> dict:
    out = json.loads(json.dumps(lock))
    for k in diff(lock, cases):
        if only and k not in only:
            continue
        c, old = cases[k], lock.get(k)
        entry = {"version": (old["version"] + 1) if old else 1, "fingerprint": V.case_fingerprint(c),
                 "sources": sorted(c.sources), "reason": reason, "frozen_at": when,
                 "history": (old.get("history", []) + [{k2: old[k2] for k2 in ("version", "fingerprint", "reason",
                                                                             "frozen_at")}]) if old else []}
        out[k] = entry
    return dict(sorted(out.items()))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--reason", help="why the changed cases changed (stored with their new version)")
    ap.add_argument("--only", nargs="*", help="freeze only these <benchmark>/<case> keys (another's cases may be "
                                               "unfinished in a shared tree)")
    a = ap.parse_args(argv)
    lock, cases = V.load_lock(), current_cases()
    changed = diff(lock, cases)
    if a.check or not a.reason:
        for k in changed:
            print(f"not frozen: {k}")
        if not a.reason and not a.check:
            print("give --reason to freeze them")
        return 1 if changed else 0
    when = datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    V.LOCK_FILE.write_text(json.dumps(freeze(lock, cases, a.reason, when, a.only), indent=1) + "\n")
    for k in changed:
        if not a.only or k in a.only:
            print(f"frozen: {k}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
