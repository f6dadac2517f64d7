"""EntityMem configurations: which backends answer (agents, image generator, segmenter, video backbone) and the
pipeline's sizes. One configuration yields two generators, the EntityMem arm and its storymem-style control (the
same backbone conditioned on whole keyframes of earlier shots, no per-entity bank), so the paper's comparison
(Table 5) always pairs outputs of one backbone.

A configuration is a name: ``offline-stand-in`` is built in; any other ``NAME`` is read from
``<data_root>/entitymem/configs/NAME.yaml`` (or a path to a YAML file). Example (README, "EntityMem")::

    name: flux-wan
    description: FLUX.1-dev portraits, Wan2.1 I2V backbone, Qwen2.5-VL agents
    agents: {backend: judge, judge_backend: openai, base_url: http://gpu:8000/v1, model: Qwen/Qwen2.5-VL-7B-Instruct}
    image: {backend: openai, base_url: http://gpu:8001/v1, model: flux.1-dev}
    video: {backend: http, base_url: http://gpu:8002/v1, model: storymem-wan2.1}
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

from bench_assets.core.names import BadName, validate_key

OFFLINE = "offline-stand-in"
KNOWN_KEYS = {"name", "description", "agents", "image", "video", "segmentation", "candidates", "max_retries",
              "frame", "n_frames", "fps", "memory_frames", "seed"}


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class EntityMemConfig:
    name: str
    description: str
    agents: dict = field(default_factory=lambda: {"backend": "rules"})
    image: dict = field(default_factory=lambda: {"backend": "offline"})
    video: dict = field(default_factory=lambda: {"backend": "offline"})
    segmentation: dict = field(default_factory=lambda: {"backend": "chroma"})
    candidates: int = 5                  # paper: N = 5 portrait candidates
    max_retries: int = 2                 # paper: up to two chroma retries (magenta, then blue)
    frame: tuple = (256, 144)            # the shots' width x height
    n_frames: int = 16
    fps: int = 8
    memory_frames: int = 3               # the control: whole keyframes of the latest earlier shots it sees
    seed: int = 0

    @property
    def offline(self) -> bool:
        """Every backend is the offline stand-in (no model anywhere)."""
        return (self.agents.get("backend") == "rules" and self.image.get("backend") == "offline"
                and self.video.get("backend") == "offline")

    def generator_names(self) -> dict[str, str]:
        """arm -> generator folder name."""
        return {"entitymem": f"entitymem_{self.name}", "control": f"storymem-control_{self.name}"}

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "agents": self.agents, "image": self.image,
                "video": self.video, "segmentation": self.segmentation, "candidates": self.candidates,
                "max_retries": self.max_retries, "frame": list(self.frame), "n_frames": self.n_frames,
                "fps": self.fps, "memory_frames": self.memory_frames, "seed": self.seed}


BUILTIN = {OFFLINE: EntityMemConfig(
    OFFLINE, "offline stand-in: rule-based agents, a deterministic renderer drawing each entity from its description "
             "and a keyframe animator (no model; plumbing and scoring only)")}


def parse_config(raw: Any, source: str) -> EntityMemConfig:
    if not isinstance(raw, dict):
        raise ConfigError(f"EntityMem configuration {source}: must be a mapping, got {type(raw).__name__}")
    unknown = sorted(set(raw) - KNOWN_KEYS)
    if unknown:
        raise ConfigError(f"EntityMem configuration {source}: unknown keys {unknown}; have {sorted(KNOWN_KEYS)}")
    name = raw.get("name")
    try:
        validate_key(name, "configuration name")
    except BadName as e:
        raise ConfigError(f"EntityMem configuration {source}: {e}") from None
    kw = {k: raw[k] for k in KNOWN_KEYS - {"name"} if k in raw}
    for k in ("agents", "image", "video", "segmentation"):
        if k in kw and not (isinstance(kw[k], dict) and kw[k].get("backend")):
            raise ConfigError(f"EntityMem configuration {name!r}: {k!r} needs a mapping with a 'backend'")
    if "frame" in kw:
        kw["frame"] = tuple(int(v) for v in kw["frame"])
    for k in ("candidates", "n_frames", "fps"):
        if k in kw and (not isinstance(kw[k], int) or kw[k] < 1):
            raise ConfigError(f"EntityMem configuration {name!r}: {k!r} must be a positive integer, got {kw[k]!r}")
    kw.setdefault("description", "")
    return EntityMemConfig(name=name, **kw)


def episode_file(data_root: str | Path, episode_id: str) -> Path:
    """An episode's file: EntityBench's (``<data>/entitybench/episodes``), else one of EntityMem's own probe
    episodes (``<data>/entitymem/episodes``: written to run every step of the pipeline, not EntityBench episodes,
    never scored); the EntityBench path when neither exists (its loader names the missing file)."""
    bench = Path(data_root) / "entitybench" / "episodes" / f"{episode_id}.json"
    probe = Path(data_root) / "entitymem" / "episodes" / f"{episode_id}.json"
    return probe if not bench.is_file() and probe.is_file() else bench


def is_probe(data_root: str | Path, episode_id: str) -> bool:
    return episode_file(data_root, episode_id).parent.parent.name == "entitymem"


def register_config(name_or_path: str, data_root: str | Path) -> tuple[EntityMemConfig, Optional[Path]]:
    """``load_config``, and for a YAML path outside ``<data_root>/entitymem/configs`` a copy there under its name
    (the assets run in Dagster's processes and find a configuration by name, as a partition key; the file's
    content is also their input digest). Returns (configuration, the copy written or None). A different file of
    that name already there is an error naming both: one name, one configuration."""
    cfg = load_config(name_or_path, data_root)
    src = Path(name_or_path)
    if name_or_path in BUILTIN or not src.suffix:
        return cfg, None
    target = Path(data_root) / "entitymem" / "configs" / f"{cfg.name}.yaml"
    data = src.read_bytes()
    if target.is_file():
        if target.resolve() == src.resolve() or target.read_bytes() == data:
            return cfg, None
        raise ConfigError(f"EntityMem configuration {src}: a different configuration named {cfg.name!r} is already "
                          f"registered as {target} (the name partitions the assets and names the folders): rename "
                          f"this one or edit that file")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
    tmp.write_bytes(data)
    os.replace(tmp, target)
    return cfg, target


def load_config(name_or_path: str, data_root: str | Path) -> EntityMemConfig:
    """The built-in configuration of that name, a YAML file's, or ``<data_root>/entitymem/configs/<name>.yaml``."""
    if name_or_path in BUILTIN:
        return BUILTIN[name_or_path]
    p = Path(name_or_path)
    if not p.suffix:
        p = Path(data_root) / "entitymem" / "configs" / f"{name_or_path}.yaml"
    if not p.is_file():
        raise ConfigError(f"EntityMem configuration {name_or_path!r}: not built in ({', '.join(BUILTIN)}) and no "
                          f"file {p}")
    try:
        raw = yaml.safe_load(p.read_text(encoding="utf-8"))
    except yaml.YAMLError as e:
        raise ConfigError(f"EntityMem configuration {p}: not valid YAML ({str(e).splitlines()[0]})") from None
    cfg = parse_config(raw, str(p))
    if p.stem != cfg.name:  # the name partitions the assets and names the folders: one name, one file
        raise ConfigError(f"EntityMem configuration {p}: name {cfg.name!r} differs from the file name")
    return cfg
