"""The one place resources are configured. Environment variables override the local defaults.

BENCH_STORE_ROOT    artifact + table root (path or fsspec URL)         default <repo>/.bench
BENCH_PROFILE       model profile: offline | paper                     default offline
BENCH_WEIGHTS_DIR   local checkpoints, one folder per slot             default <repo>/weights
BENCH_ALLOW_HUB     1 lets the paper profile fetch from the hub        default 0
BENCH_DEVICE        auto | cpu | cuda | cuda:N | mps                   default auto
BENCH_BATCH_SIZE    inference batch size                               default 16
BENCH_JUDGE_MODE    live | replay | off                                default: live with a key, else off (replay only when set)
BENCH_JUDGE_BACKEND anthropic | openai (any chat-completions server)   default anthropic
BENCH_JUDGE_MODEL   judge model id                                     default claude-sonnet-4-6
BENCH_JUDGE_BASE_URL API root (openai: e.g. http://127.0.0.1:8000/v1)  default: the vendor's
BENCH_JUDGE_KEY_ENV name of the variable holding the key ("" = none)   default ANTHROPIC_API_KEY / OPENAI_API_KEY
BENCH_JUDGE_TIMEOUT_S   one HTTP request, connect to last byte         default 60
BENCH_JUDGE_DEADLINE_S  one question, all retries and re-asks          default 150
BENCH_JUDGE_RETRIES     transport retries per question                 default 4
BENCH_JUDGE_CONCURRENCY requests in flight                             default 4
BENCH_JUDGE_TEMPERATURE sampling temperature (unset: not sent)         default unset
ANTHROPIC_API_KEY / OPENAI_API_KEY   read by the Judge from the environment only; never stored
BENCH_ENTITYBENCH_JUDGE_PROMPTS  EntityBench judge_prompts: paper | authors        default paper
BENCH_ENTITYBENCH_AUTHORS_CODE   with authors: a local clone of Catherine-R-He/EntityBench, whose
                                 eval/evaluate_benchmark.py prompt texts are parsed at run time (never stored)
"""
from __future__ import annotations

import os
from typing import Any, Optional

from bench_resources.device import Device
from bench_resources.judge import Judge
from bench_resources.models import ModelRegistry
from bench_resources.paths import PROJECT_ROOT, BenchPaths
from bench_resources.store import ParquetIOManager, Store


def store_root() -> str:
    return os.environ.get("BENCH_STORE_ROOT", str(PROJECT_ROOT / ".bench"))


def judge_mode(cache_dir: str, key_env: str = "ANTHROPIC_API_KEY") -> str:
    """BENCH_JUDGE_MODE when set; else live when the key is there (or none is needed: ``key_env`` ""), off
    otherwise. Replay only when asked for: a judge cache on disk never turns "off" into replay (``cache_dir`` is
    kept for callers)."""
    explicit = os.environ.get("BENCH_JUDGE_MODE")
    if explicit:
        return explicit
    if key_env == "" or os.environ.get(key_env):
        return "live"
    return "off"


def _env_number(name: str, cast: type, default: Any) -> Any:
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return cast(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a valid {cast.__name__}") from None


def build_judge(cache_dir: str) -> Judge:
    """The Judge from the BENCH_JUDGE_* variables (see the module docstring)."""
    backend = os.environ.get("BENCH_JUDGE_BACKEND", "anthropic")
    if backend not in ("anthropic", "openai"):
        raise ValueError(f"BENCH_JUDGE_BACKEND={backend!r}: use anthropic or openai")
    key_env: Optional[str] = os.environ.get("BENCH_JUDGE_KEY_ENV")
    default_model = "claude-sonnet-4-6" if backend == "anthropic" else None
    model = os.environ.get("BENCH_JUDGE_MODEL") or default_model
    if model is None:
        raise ValueError("BENCH_JUDGE_BACKEND=openai needs BENCH_JUDGE_MODEL (the served model id)")
    probe = Judge(backend=backend, api_key_env=key_env, model=model)
    settings = {k: v for k, v in {
        "timeout_s": _env_number("BENCH_JUDGE_TIMEOUT_S", float, None),
        "deadline_s": _env_number("BENCH_JUDGE_DEADLINE_S", float, None),
        "max_retries": _env_number("BENCH_JUDGE_RETRIES", int, None),
        "max_concurrency": _env_number("BENCH_JUDGE_CONCURRENCY", int, None),
        "temperature": _env_number("BENCH_JUDGE_TEMPERATURE", float, None),
    }.items() if v is not None}
    return Judge(mode=judge_mode(cache_dir, probe.key_variable()), cache_dir=cache_dir, backend=backend,
                 model=model, base_url=os.environ.get("BENCH_JUDGE_BASE_URL") or None, api_key_env=key_env,
                 **settings)


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
    }
    if "judge" not in overrides:
        resources["judge"] = build_judge(cache_dir)
    resources.update(overrides)
    return resources
