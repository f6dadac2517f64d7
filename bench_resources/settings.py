"""Every configuration variable checked at start, before anything imports Dagster or a model: a bad value is one
``ConfigError`` line naming the variable, its value and what is accepted (the CLI prints it as ``error:``, exit 2).

The variables and their defaults are listed in bench_resources/config.py; this module adds

BENCH_MEDIA_ROOTS   extra folders generator outputs / dataset media may link into (os.pathsep-separated); default none
BENCH_MAX_STREAM_SIDE  longest side of streamed (chunked) frames, larger ones downscaled (core/media.py); default
                       2048, 0 = no bound

Kept free of heavy imports so that `bench` checks its environment in milliseconds.
"""
from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import Optional


class ConfigError(ValueError):
    """A configuration value that cannot work; one line naming the variable, its value and what is accepted."""


JUDGE_MODES = ("live", "replay", "off")
JUDGE_BACKENDS = ("anthropic", "openai")
PROFILES = ("offline", "paper")
EXECUTORS = ("default", "in_process", "multiprocess", "celery", "k8s")  # as core/deploy.py accepts them
_DEVICE = re.compile(r"^(auto|cpu|mps|cuda(:\d+)?)$")
_VAR_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _number(env: dict, name: str, cast: type, low: float, high: float = math.inf, low_open: bool = False) -> None:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return
    try:
        v = cast(raw.strip())
    except ValueError:
        raise ConfigError(f"{name}={raw!r} is not {'an integer' if cast is int else 'a number'}") from None
    if not math.isfinite(v) or (v <= low if low_open else v < low) or v > high:
        rng = (f"> {low:g}" if low_open else f">= {low:g}") + (f" and <= {high:g}" if high != math.inf else "")
        raise ConfigError(f"{name}={raw!r} is out of range: it must be {rng}")


def _folder(env: dict, name: str, must_exist: bool = False) -> None:
    raw = env.get(name)
    if raw is None or raw == "":
        return
    if "://" in raw:  # an fsspec URL (s3://, gs://): checked by its filesystem when used
        return
    p = Path(raw)
    if p.exists() and not p.is_dir():
        raise ConfigError(f"{name}={raw!r} is a file, not a folder")
    if must_exist and not p.exists():
        raise ConfigError(f"{name}={raw!r} does not exist")


def _choice(env: dict, name: str, allowed: tuple[str, ...]) -> None:
    raw = env.get(name)
    if raw is not None and raw != "" and raw not in allowed:
        raise ConfigError(f"{name}={raw!r}: use one of {', '.join(allowed)}")


def validate_environment(env: Optional[dict] = None) -> None:
    """Every configuration variable checked before anything runs; ConfigError (one line) on the first bad one.
    Unset or empty values take their defaults and are not errors."""
    env = dict(os.environ if env is None else env)
    for name in ("DAGSTER_HOME", "BENCH_STORE_ROOT", "BENCH_DATA_ROOT", "BENCH_GENERATORS_ROOT", "BENCH_WEIGHTS_DIR",
                 "BENCH_NT_SPILL_DIR", "BENCH_FOOTAGE_DIR"):
        _folder(env, name)
    for root in (env.get("BENCH_MEDIA_ROOTS") or "").split(os.pathsep):
        if root.strip() and not Path(root).is_dir():
            raise ConfigError(f"BENCH_MEDIA_ROOTS: {root!r} is not a folder")
    _choice(env, "BENCH_PROFILE", PROFILES)
    _choice(env, "BENCH_ALLOW_HUB", ("0", "1"))
    _choice(env, "BENCH_EXECUTOR", EXECUTORS)
    dev = env.get("BENCH_DEVICE")
    if dev and not _DEVICE.match(dev):
        raise ConfigError(f"BENCH_DEVICE={dev!r}: use auto, cpu, cuda, cuda:N or mps")
    _number(env, "BENCH_BATCH_SIZE", int, 1)
    for name in ("BENCH_CLIP_CACHE_BYTES", "BENCH_SHOT_FRAMES_BYTES", "BENCH_NT_SPILL_BYTES", "BENCH_MAX_STREAM_SIDE"):
        _number(env, name, int, 0)
    _choice(env, "BENCH_JUDGE_MODE", JUDGE_MODES)
    _choice(env, "BENCH_JUDGE_BACKEND", JUDGE_BACKENDS)
    if env.get("BENCH_JUDGE_BACKEND") == "openai" and not (env.get("BENCH_JUDGE_MODEL") or "").strip():
        raise ConfigError("BENCH_JUDGE_BACKEND=openai needs BENCH_JUDGE_MODEL (the model id the server serves)")
    if "BENCH_JUDGE_MODEL" in env and env["BENCH_JUDGE_MODEL"] != "" and not env["BENCH_JUDGE_MODEL"].strip():
        raise ConfigError("BENCH_JUDGE_MODEL is blank")
    url = env.get("BENCH_JUDGE_BASE_URL")
    if url:  # a URL urllib cannot parse (http://[::1, port 99999) is this one line too, not a traceback
        from bench_resources.urls import base_url_problem
        problem = base_url_problem(url)
        if problem:
            raise ConfigError(f"BENCH_JUDGE_BASE_URL={url!r}: {problem}")
    key_env = env.get("BENCH_JUDGE_KEY_ENV")
    if key_env and not _VAR_NAME.match(key_env):
        raise ConfigError("BENCH_JUDGE_KEY_ENV must name an environment variable (never the key itself), "
                          "or be empty for a server that needs none")
    _number(env, "BENCH_JUDGE_TIMEOUT_S", float, 0, 86400, low_open=True)
    _number(env, "BENCH_JUDGE_DEADLINE_S", float, 0, 7 * 86400, low_open=True)
    _number(env, "BENCH_JUDGE_RETRIES", int, 0, 100)
    _number(env, "BENCH_JUDGE_CONCURRENCY", int, 1, 1024)
    _number(env, "BENCH_JUDGE_TEMPERATURE", float, 0, 2)

