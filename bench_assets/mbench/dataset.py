"""MBench's canonical case format -> typed cases; generator outputs are ``<generator>/<case_id>.mp4``."""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bench_assets.mbench.metrics import IDEAL_TWIST

SUBSETS = ("human", "object", "environment", "causal")
MODES = ("T", "A")
PHASES = ("exit", "wait", "reenter")


class CaseError(ValueError):
    """One case cannot be read; the message names the case and what is wrong."""


@dataclass(frozen=True)
class Case:
    case_id: str
    subset: str
    mode: str
    init_frame: Optional[str]
    caption: str
    segments: tuple[dict, ...]
    actions: tuple[dict, ...]
    target: dict
    causal_event: str

    def frame_actions(self) -> list[str]:
        """A: the action of every frame transition, in order (phase lengths in frames)."""
        out: list[str] = []
        for a in self.actions:
            out += [a["action"] if a["phase"] != "wait" else "wait"] * int(a["frames"])
        return out

    def to_json(self) -> dict[str, Any]:
        return {"case_id": self.case_id, "subset": self.subset, "mode": self.mode, "init_frame": self.init_frame,
                "caption": self.caption, "segments": list(self.segments), "actions": list(self.actions),
                "target": self.target, "causal_event": self.causal_event}


def discover_cases(root: str | Path) -> list[str]:
    root = Path(root)
    return sorted(p.stem for p in root.glob("*.json")) if root.is_dir() else []


def parse_case(raw: Any, where: str) -> Case:
    if not isinstance(raw, dict):
        raise CaseError(f"case {where}: must be a JSON object")
    cid = raw.get("case_id")
    if not isinstance(cid, str) or not cid:
        raise CaseError(f"case {where}: 'case_id' is missing")
    subset, mode = raw.get("subset"), raw.get("mode")
    if subset not in SUBSETS:
        raise CaseError(f"case {cid}: subset {subset!r} is not one of {list(SUBSETS)}")
    if mode not in MODES:
        raise CaseError(f"case {cid}: mode {mode!r} is not one of {list(MODES)}")
    segments = tuple(raw.get("segments") or ())
    actions = tuple(raw.get("actions") or ())
    if mode == "T" and not segments:
        raise CaseError(f"case {cid}: a T case needs 'segments' (camera + text per segment)")
    if mode == "A":
        if not actions:
            raise CaseError(f"case {cid}: an A case needs 'actions' (exit / wait / reenter)")
        for a in actions:
            if a.get("phase") not in PHASES or a.get("action") not in IDEAL_TWIST or int(a.get("frames", 0)) < 1:
                raise CaseError(f"case {cid}: bad action {a!r} (phase in {list(PHASES)}, action in "
                                f"{sorted(IDEAL_TWIST)}, frames >= 1)")
    target = raw.get("target") or {}
    if subset in ("object", "human") and not target.get("name"):
        raise CaseError(f"case {cid}: subset {subset!r} needs a 'target' with a name")
    if target.get("bbox") is not None and len(target["bbox"]) != 4:
        raise CaseError(f"case {cid}: target bbox must be [cx, cy, w, h]")
    return Case(cid, subset, mode, raw.get("init_frame"), str(raw.get("caption", "")), segments, actions, target,
                str(raw.get("causal_event", "")))


VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".gif")


def output_video(folder: Path, case_id: str) -> Path:
    """The generator's output for a case: ``<case_id>.mp4`` or the first other video container present (a .gif
    is a video too); the .mp4 path when none exists, so the error names what was expected."""
    for suffix in VIDEO_SUFFIXES:
        p = Path(folder) / f"{case_id}{suffix}"
        if p.exists():
            return p
    return Path(folder) / f"{case_id}.mp4"


def load_case(path: str | Path) -> Case:
    path = Path(path)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise CaseError(f"case {path.stem}: {path.name} is not valid JSON ({e})") from None
    except UnicodeDecodeError:
        head = path.read_bytes()[:2]
        enc = "UTF-16" if head in (b"\xff\xfe", b"\xfe\xff") else "not UTF-8"
        raise CaseError(f"case {path.stem}: {path.name} is {enc}; save it as UTF-8") from None
    except OSError as e:
        raise CaseError(f"case {path.stem}: cannot read {path.name} ({e.strerror})") from None
    case = parse_case(raw, path.stem)
    if case.case_id != path.stem:
        raise CaseError(f"case {path.stem}: case_id {case.case_id!r} differs from the file name")
    return case
