"""The one place resources are configured. Environment variables override the local defaults.

BENCH_STORE_ROOT    artifact + table root (path or fsspec URL)         default <repo>/.bench
BENCH_PROFILE       model profile: offline | paper                     default offline
BENCH_WEIGHTS_DIR   local checkpoints, one folder per slot             default <repo>/weights
BENCH_ALLOW_HUB     1 lets the paper profile fetch from the hub        default 0
BENCH_DEVICE        auto | cpu | cuda | cuda:N | mps                   default auto
BENCH_BATCH_SIZE    inference batch size                               default 16
BENCH_JUDGE_MODE    live | replay | off                                default: live with a key, replay with a cache, else off
BENCH_JUDGE_MODEL   judge model id                                     default claude-sonnet-4-6
ANTHROPIC_API_KEY   read by the Judge from the environment only; never stored
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import PROJECT_ROOT, BenchPaths
from bench_resources.store import ParquetIOManager, Store


def store_root() -> str:
    return os.environ.get("BENCH_STORE_ROOT", str(PROJECT_ROOT / ".bench"))


def judge_mode(cache_dir: str) -> str:
    explicit = os.environ.get("BENCH_JUDGE_MODE")
    if explicit:
        return explicit
    if os.environ.get("ANTHROPIC_API_KEY"):
        return "live"
    if Path(cache_dir).is_dir() and any(Path(cache_dir).iterdir()):
        return "replay"
    return "off"


def build_resources(**overrides: Any) -> dict[str, Any]:
    root = overrides.pop("store_root", None) or store_root()
    cache_dir = os.path.join(root, "judge_cache")
    resources = {
        "io_manager": ParquetIOManager(root=root),
        "store": Store(root=root),
        "paths": BenchPaths(),
        "device": Device(device=os.environ.get("BENCH_DEVICE", "auto"),
                         batch_size=int(os.environ.get("BENCH_BATCH_SIZE", "16"))),
        "models": ModelRegistry(profile=os.environ.get("BENCH_PROFILE", "offline"),
                                weights_dir=os.environ.get("BENCH_WEIGHTS_DIR", str(PROJECT_ROOT / "weights")),
                                allow_hub=os.environ.get("BENCH_ALLOW_HUB", "0") == "1"),
        "judge": Judge(mode=judge_mode(cache_dir), cache_dir=cache_dir,
                       model=os.environ.get("BENCH_JUDGE_MODEL", "claude-sonnet-4-6")),
    }
    resources.update(overrides)
    return resources
