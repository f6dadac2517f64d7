"""The protocol record of an evaluation and the check that two results may be compared.

EntityBench B.5: results whose protocols differ in a non-trivial field are "not comparable".
"""
from __future__ import annotations

import hashlib
import importlib.metadata
import json
import subprocess
from pathlib import Path
from typing import Any

LIBRARIES = ("dagster", "torch", "torchvision", "timm", "open_clip_torch", "transformers", "ultralytics",
             "supervision", "opencv-python", "numpy", "scipy", "scikit-image", "duckdb", "pandas", "anthropic")

# Fields that do not change what a number means: ignored by the comparability check. The decoder is recorded
# (which one and its FFmpeg build) but, like the libraries, does not by itself make results incomparable:
# H.264/HEVC decoding is bit-exact by specification, and RGB conversion is fixed (swscale rgb24).
TRIVIAL_FIELDS = ("created_at", "code_revision", "libraries", "decoder", "run_id", "host", "device")


def library_versions() -> dict[str, str]:
    out = {}
    for name in LIBRARIES:
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = "absent"
    return out


def decoder_info() -> dict[str, Any]:
    """The video decoder every benchmark reads frames with (core/media.py) and its versions."""
    from bench_assets.core import media
    try:
        return media.decoder_info()
    except Exception as e:  # noqa: BLE001 - a manifest is still written; the reason says what is missing
        return {"decoder": "unknown", "reason": f"{type(e).__name__}: {e}"[:200]}


def code_revision(repo: Path | None = None) -> str:
    root = repo or Path(__file__).resolve().parents[2]
    try:
        rev = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                             timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, timeout=5).stdout.strip()
        if rev:
            return rev + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return "unknown"


def build_manifest(*, benchmark: str, protocol: str, models: dict[str, Any], judge: dict[str, Any],
                   constants: dict[str, Any], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """A JSON-able manifest. ``models`` maps slot -> {checkpoint, source, fingerprint, available}."""
    manifest = {
        "benchmark": benchmark,
        "protocol": protocol,
        "models": models,
        "judge": judge,
        "constants": constants,
        "libraries": library_versions(),
        "decoder": decoder_info(),
        "code_revision": code_revision(),
    }
    if extra:
        manifest.update(extra)
    return manifest


def protocol_digest(manifest: dict[str, Any]) -> str:
    """Hash of the fields that matter for comparability."""
    core = {k: v for k, v in manifest.items() if k not in TRIVIAL_FIELDS}
    return hashlib.sha256(json.dumps(core, sort_keys=True, default=str).encode()).hexdigest()[:16]


def _flatten(d: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(d, dict):
        out: dict[str, Any] = {}
        for k, v in d.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
        return out
    return {prefix: d}


def comparability(a: dict[str, Any], b: dict[str, Any]) -> tuple[bool, list[str]]:
    """(comparable, differing non-trivial fields) between two manifests."""
    fa = {k: v for k, v in _flatten(a).items() if k.split(".")[0] not in TRIVIAL_FIELDS}
    fb = {k: v for k, v in _flatten(b).items() if k.split(".")[0] not in TRIVIAL_FIELDS}
    diffs = sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))
    return (not diffs, diffs)
