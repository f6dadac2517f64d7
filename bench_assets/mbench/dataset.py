"""MBench's canonical case format -> typed cases; generator outputs are ``<generator>/<case_id>.mp4``."""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from bench_assets.mbench.metrics import IDEAL_TWIST
from bench_resources.paths import OutsideRoot, inside_root

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


# Cost bound checked when the case is read (issue 39): the schedule is expanded to one action per frame, so one
# action of 10^9 frames took the run to 16 GB and the OOM killer. The paper's A cases run a few hundred frames; this
# allows minutes of video (the output's real frame count is checked against the schedule when it is scored).
MAX_SCHEDULE_FRAMES = 10_000
MAX_SCHEDULE_FRAMES_ENV = "BENCH_MAX_SCHEDULE_FRAMES"


def max_schedule_frames() -> int:
    raw = os.environ.get(MAX_SCHEDULE_FRAMES_ENV, "").strip()
    if not raw:
        return MAX_SCHEDULE_FRAMES
    try:
        value = int(raw)
    except ValueError:
        raise CaseError(f"{MAX_SCHEDULE_FRAMES_ENV}={raw!r} is not a whole number") from None
    if value < 1:
        raise CaseError(f"{MAX_SCHEDULE_FRAMES_ENV}={raw!r} must be >= 1")
    return value


def check_schedule_length(cid: str, total: int, video_frames: Optional[int] = None) -> None:
    """CaseError naming the case, the schedule's frame count and the limit: at most ``max_schedule_frames()``, and
    (given the case video's real frame count) no more frame transitions than the video has."""
    limit = max_schedule_frames()
    if total > limit:
        raise CaseError(f"case {cid}: the action schedule spans {total:,} frames; the limit is {limit:,} "
                        f"({MAX_SCHEDULE_FRAMES_ENV})")
    if video_frames is not None and total > max(0, video_frames - 1):
        raise CaseError(f"case {cid}: the action schedule spans {total:,} frame transitions but the video has "
                        f"{max(0, video_frames - 1):,} ({video_frames:,} frames)")


def _frames(action: dict) -> int:
    """An action's frame count; 0 (refused by the caller) when it is not a whole number."""
    v = action.get("frames", 0)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
        return 0
    return int(v)


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
            if not isinstance(a, dict) or a.get("phase") not in PHASES or a.get("action") not in IDEAL_TWIST \
                    or _frames(a) < 1:
                raise CaseError(f"case {cid}: bad action {a!r} (phase in {list(PHASES)}, action in "
                                f"{sorted(IDEAL_TWIST)}, frames a whole number >= 1)")
        check_schedule_length(cid, sum(_frames(a) for a in actions))
    target = raw.get("target") or {}
    if subset in ("object", "human") and not target.get("name"):
        raise CaseError(f"case {cid}: subset {subset!r} needs a 'target' with a name")
    if target.get("bbox") is not None:
        check_box(target["bbox"], cid)
    return Case(cid, subset, mode, raw.get("init_frame"), str(raw.get("caption", "")), segments, actions, target,
                str(raw.get("causal_event", "")))


# A box may reach this far past the frame's edge (rounding of a hand-drawn box); anything further is a wrong guess
# of the format (e.g. corners written as [x1, y1, x2, y2], or a box drawn on another frame size).
BOX_EDGE_TOLERANCE_PX = 2.0
BOX_FORMAT = "[cx, cy, w, h]: box centre x, centre y, width, height in pixels of the init frame"


def check_box(bbox: Any, cid: str, frame_size: Optional[tuple[int, int]] = None) -> tuple[float, float, float, float]:
    """The target box as four floats, or CaseError naming the case: four finite numbers, width and height > 0,
    centre not negative, and (with the init frame's ``frame_size`` (W, H)) inside the frame."""
    if not isinstance(bbox, (list, tuple)) or len(bbox) != 4:
        raise CaseError(f"case {cid}: target bbox must be a list of 4 numbers {BOX_FORMAT}; got {bbox!r}")
    if any(isinstance(v, bool) or not isinstance(v, (int, float)) for v in bbox):
        raise CaseError(f"case {cid}: target bbox must hold numbers {BOX_FORMAT}; got {bbox!r}")
    cx, cy, w, h = (float(v) for v in bbox)
    if not all(math.isfinite(v) for v in (cx, cy, w, h)):
        raise CaseError(f"case {cid}: target bbox {bbox!r} holds a NaN or infinite value ({BOX_FORMAT})")
    if w <= 0 or h <= 0:
        raise CaseError(f"case {cid}: target bbox {bbox!r} has width {w:g} and height {h:g}; both must be > 0 "
                        f"({BOX_FORMAT})")
    if cx < 0 or cy < 0:
        raise CaseError(f"case {cid}: target bbox {bbox!r} has a negative centre ({BOX_FORMAT})")
    if frame_size is not None:
        fw, fh = frame_size
        x1, y1, x2, y2 = cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2
        out = max(-x1, -y1, x2 - fw, y2 - fh)
        if out > BOX_EDGE_TOLERANCE_PX:
            raise CaseError(f"case {cid}: target bbox {bbox!r} (corners {x1:.1f},{y1:.1f} - {x2:.1f},{y2:.1f}) "
                            f"reaches {out:.1f} px outside the {fw}x{fh} init frame ({BOX_FORMAT})")
    return cx, cy, w, h


VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm", ".m4v", ".gif")


def output_video(folder: Path, case_id: str) -> Path:
    """The generator's output for a case: ``<case_id>.mp4`` or the first other video container present (a .gif
    is a video too); the .mp4 path when none exists, so the error names what was expected."""
    for suffix in VIDEO_SUFFIXES:
        p = Path(folder) / f"{case_id}{suffix}"
        if p.exists() or p.is_symlink():
            try:  # a link out of the generator folder is refused, never followed
                inside_root(p, folder, f"generator {Path(folder).name!r}, case {case_id}")
            except OutsideRoot as e:
                raise CaseError(str(e)) from None
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
    check_init_frame(case, path.parent.parent / "frames")
    return case


def check_init_frame(case: Case, frames_dir: Path) -> Optional[tuple[int, int]]:
    """The init frame's (W, H) when it is there; CaseError when its name leads out of ``frames_dir`` or the box
    does not fit it. A missing init frame is reported where the box is placed (wiring.init_size)."""
    if not case.init_frame:
        return None
    if not isinstance(case.init_frame, str):
        raise CaseError(f"case {case.case_id}: 'init_frame' must be a file name in frames/, got {case.init_frame!r}")
    p = frames_dir / case.init_frame
    try:
        inside_root(p, frames_dir, f"case {case.case_id}: init_frame")
    except OutsideRoot as e:
        raise CaseError(str(e)) from None
    if not p.is_file():
        return None
    from PIL import Image
    try:
        with Image.open(p) as im:   # reads the header only
            size = im.size
    except Exception as e:  # noqa: BLE001 - an unreadable init frame is this case's error
        raise CaseError(f"case {case.case_id}: init frame {p.name} cannot be read as an image ({e})") from None
    if case.target.get("bbox") is not None:
        check_box(case.target["bbox"], case.case_id, size)
    return size
