"""Read and validate NarrativeTrack's inputs: the video index, ground-truth sidecars (validity only), the synthetic
distractor pool, answerer cards, and the authors' released QA file (``narrativetrack_qa.json``)."""
from __future__ import annotations

import json
import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional
from urllib.parse import urlparse

from bench_assets.core.names import BadName, validate_key
from bench_assets.narrativetrack.constants import ANSWER_FRAMES, SAMPLE_FPS
from bench_assets.narrativetrack.scoring import lenient_parse, strict_parse
from bench_resources.paths import OutsideRoot, inside_root

RELEASED_QA = "released/narrativetrack_qa.json"   # the authors' file, when obtained (video paths relative to it)


class DatasetError(ValueError):
    pass


@dataclass(frozen=True)
class Video:
    video_id: str
    path: str
    sample_fps: float
    note: str = ""
    error: str = ""   # this video's own problem (a path out of the data root, a bad sample_fps): its item fails


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DatasetError(f"{what}: {path} not found") from None
    except json.JSONDecodeError as e:
        raise DatasetError(f"{what}: {path}: bad JSON at line {e.lineno} ({e.msg})") from None


def load_index(root: str | Path) -> dict[str, Video]:
    """``<root>/videos.json``: {"videos": [{"video_id", "file", "sample_fps"?, "note"?}]}; without an index, every
    ``<root>/videos/*.mp4`` is a video sampled at the default rate."""
    root = Path(root)
    idx = root / "videos.json"
    if not idx.is_file():
        out = {}
        for p in sorted((root / "videos").glob("*.mp4")):
            vid = validate_key(p.stem, "video id")
            try:
                inside_root(p, root, f"video {vid!r}")
                out[vid] = Video(vid, str(p), SAMPLE_FPS)
            except OutsideRoot as e:
                out[vid] = Video(vid, "", SAMPLE_FPS, error=str(e))
        return out
    raw = _read_json(idx, "video index")
    if not isinstance(raw, dict) or not isinstance(raw.get("videos"), list):
        raise DatasetError(f"{idx}: needs a 'videos' list")
    out: dict[str, Video] = {}
    first: dict[str, int] = {}
    for i, v in enumerate(raw["videos"]):
        if not isinstance(v, dict) or "video_id" not in v or "file" not in v:
            raise DatasetError(f"{idx}: entry {i} needs 'video_id' and 'file'")
        try:
            vid = validate_key(str(v["video_id"]), "video id")
        except BadName as e:
            raise DatasetError(f"{idx}: entry {i}: {e}") from None
        where = f"{idx}: video {vid!r} (entry {i})"
        if vid in first:  # which of the two is meant cannot be guessed: the index is ambiguous as a whole
            raise DatasetError(f"{idx}: video id {vid!r} listed twice (entries {first[vid]} and {i}); give each "
                               f"video its own id")
        first[vid] = i
        problem = _entry_error(v, root, where)
        out[vid] = (Video(vid, "", SAMPLE_FPS, error=problem) if problem else
                    Video(vid, str(root / v["file"]), float(v.get("sample_fps", SAMPLE_FPS)), str(v.get("note", ""))))
    return out


def _entry_error(v: dict, root: Path, where: str) -> str:
    """The problem of one index entry, or "": sample_fps a finite number > 0, file a path inside the data root."""
    raw_fps = v.get("sample_fps", SAMPLE_FPS)
    try:
        fps = float(raw_fps)
    except (TypeError, ValueError):
        fps = None
    if isinstance(raw_fps, bool) or fps is None or not math.isfinite(fps) or fps <= 0:
        return f"{where}: sample_fps must be a number of frames per second > 0, got {raw_fps!r}"
    f = v["file"]
    if not isinstance(f, str) or not f.strip():
        return f"{where}: 'file' must be a path relative to {root}, got {f!r}"
    try:
        inside_root(root / f, root, f"{where}: file {f!r}")
    except OutsideRoot as e:
        return str(e)
    return ""


def discover_videos(root: str | Path) -> list[str]:
    """The video ids of the index. An index that cannot be read at all raises (its error names the file and the
    problem, rather than "no video found"); one bad entry fails only its own video (``load_video``)."""
    if not Path(root).is_dir():
        return []
    return sorted(load_index(root))


def load_video(root: str | Path, video_id: str) -> Video:
    videos = load_index(root)
    if video_id not in videos:
        raise DatasetError(f"video {video_id!r} is not in the index of {root}")
    v = videos[video_id]
    if v.error:
        raise DatasetError(v.error)
    if not Path(v.path).is_file():
        raise DatasetError(f"video {video_id!r}: file {v.path} not found")
    return v


def load_groundtruth(root: str | Path, video_id: str) -> Optional[dict]:
    """The validity sidecar, or None when the video has none (real videos)."""
    p = Path(root) / "groundtruth" / f"{video_id}.json"
    return _read_json(p, f"ground truth of {video_id}") if p.is_file() else None


def load_pool(root: str | Path) -> list[dict]:
    """Attributes of entities of other clips (synthetic distractors); [] when the dataset ships none."""
    p = Path(root) / "synthetic_pool.json"
    if not p.is_file():
        return []
    raw = _read_json(p, "synthetic pool")
    entries = raw.get("entries") if isinstance(raw, dict) else None
    if not isinstance(entries, list):
        raise DatasetError(f"{p}: needs an 'entries' list")
    for i, e in enumerate(entries):
        missing = [k for k in ("clip", "action", "outfit", "scene") if not isinstance(e.get(k), str)]
        if missing:
            raise DatasetError(f"{p}: entry {i} lacks {missing}")
    return entries


BACKENDS = ("anthropic", "openai")
_KEY_VAR = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Answerer:
    """An answerer card (a NarrativeTrack generator.yaml): which video MLLM answers, through which endpoint.

    model: the model id the endpoint serves (``claude-haiku-4-5``, ``Qwen/Qwen2.5-VL-7B-Instruct``)
    backend: ``anthropic`` (Messages API) or ``openai`` (any OpenAI-compatible chat-completions server: vLLM,
             SGLang, Ollama, OpenAI)
    base_url: the API root (``http://gpu:8000/v1``); None: the backend's default
    api_key_env: the *name* of the environment variable holding the key; "" for a server that needs none; None:
                 the backend's default variable
    frames: frames sampled uniformly from the video (the paper: 20)
    image_size: the longer side of each frame in pixels before encoding (None: native size)
    """
    name: str
    model: str
    frames: int = ANSWER_FRAMES
    backend: str = "anthropic"
    base_url: Optional[str] = None
    api_key_env: Optional[str] = None
    image_size: Optional[int] = None

    def endpoint(self) -> dict[str, Any]:
        """What the judge needs to reach this answerer (no key, only the variable's name)."""
        out: dict[str, Any] = {"model": self.model, "backend": self.backend}
        if self.base_url is not None:
            out["base_url"] = self.base_url
        if self.api_key_env is not None:
            out["api_key_env"] = self.api_key_env
        return out


def answerer_from_card(name: str, card: dict) -> Answerer:
    """A validated answerer card; one clear error naming the answerer and the field."""
    def bad(msg: str) -> DatasetError:
        return DatasetError(f"answerer {name!r}: generator.yaml {msg}")
    model = card.get("model")
    if not isinstance(model, str) or not model.strip():
        raise bad("needs a 'model' (the video MLLM's model id)")
    try:
        frames = int(card.get("frames", ANSWER_FRAMES))
    except (TypeError, ValueError):
        raise bad(f"'frames' must be an integer, got {card.get('frames')!r}") from None
    if frames < 1:
        raise bad("'frames' must be >= 1")
    backend = str(card.get("backend", "anthropic")).strip().lower()
    if backend not in BACKENDS:
        raise bad(f"'backend' must be one of {', '.join(BACKENDS)}, got {card.get('backend')!r}")
    base_url = card.get("base_url")
    if base_url is not None:
        u = urlparse(str(base_url))
        if u.scheme not in ("http", "https") or not u.netloc:
            raise bad(f"'base_url' must be an http(s) URL such as http://127.0.0.1:8000/v1, got {base_url!r}")
        base_url = str(base_url).rstrip("/")
    key = card.get("api_key_env")
    if key is not None:
        key = str(key)
        if key and not _KEY_VAR.match(key):
            raise bad(f"'api_key_env' is the name of an environment variable (never the key), got an invalid name")
    size = card.get("image_size")
    if size is not None:
        try:
            size = int(size)
        except (TypeError, ValueError):
            raise bad(f"'image_size' must be an integer (pixels), got {size!r}") from None
        if size < 32:
            raise bad("'image_size' must be >= 32 pixels")
    return Answerer(name, model.strip(), frames, backend, base_url, key, size)


# ------------------------------------------------------------------------------ the authors' released QA file

# Per-format item counts implied by the paper's Table 2 (binary, multiple choice, ordering).
PAPER_COUNTS = {("EE", "binary"): 100, ("EE", "mc"): 100, ("AC", "binary"): 92, ("AC", "mc"): 89,
                ("AC", "ordering"): 41, ("OC", "binary"): 91, ("OC", "mc"): 83, ("OC", "ordering"): 18,
                ("SC", "binary"): 95, ("SC", "mc"): 73, ("SC", "ordering"): 23, ("EA", "binary"): 100,
                ("EA", "mc"): 101}
_DIM_ALIASES = {"ee": "EE", "existence": "EE", "entity_existence": "EE", "ac": "AC", "action": "AC",
                "action_change": "AC", "action_changes": "AC", "oc": "OC", "outfit": "OC", "outfit_change": "OC",
                "outfit_changes": "OC", "sc": "SC", "scene": "SC", "scene_change": "SC", "scene_changes": "SC",
                "ea": "EA", "ambiguity": "EA", "entity_ambiguity": "EA"}
_FMT_ALIASES = {"binary": "binary", "b": "binary", "yes/no": "binary", "mc": "mc", "multiple_choice": "mc",
                "multiple-choice": "mc", "multiple choice": "mc", "ordering": "ordering", "order": "ordering",
                "o": "ordering"}


def load_released_qa(path: str | Path) -> list[dict]:
    """The authors' QA file as published: records with video_path, question, answer, question_type, dimension,
    track_type, template_type. Returned as our QA records (format/dimension normalised, the rest kept)."""
    raw = _read_json(Path(path), "released QA")
    if isinstance(raw, dict):
        raw = raw.get("data") or raw.get("qa") or list(raw.values())
    if not isinstance(raw, list):
        raise DatasetError(f"{path}: expected a list of QA records")
    out = []
    for i, r in enumerate(raw):
        missing = [k for k in ("video_path", "question", "answer", "question_type", "dimension") if k not in r]
        if missing:
            raise DatasetError(f"{path}: record {i} lacks {missing}")
        dim = _DIM_ALIASES.get(str(r["dimension"]).strip().lower().replace(" ", "_"))
        fmt = _FMT_ALIASES.get(str(r["question_type"]).strip().lower())
        if dim is None or fmt is None:
            raise DatasetError(f"{path}: record {i}: unknown dimension {r['dimension']!r} or question_type "
                               f"{r['question_type']!r}")
        gold = strict_parse(r["answer"], fmt) or lenient_parse(r["answer"], fmt)
        if gold is None:
            raise DatasetError(f"{path}: record {i}: answer {r['answer']!r} is not a {fmt} answer")
        out.append({"qa_id": f"released_{i:04d}", "video_id": Path(str(r["video_path"])).stem,
                    "video_path": r["video_path"], "dimension": dim, "format": fmt,
                    "direction": r.get("template_type"), "track_type": r.get("track_type"),
                    "distractor": r.get("distractor_type"), "question": r["question"], "options": None,
                    "answer": gold, "answer_published": str(r["answer"])})
    return out


def released_count_check(records: list[dict]) -> dict[str, Any]:
    """Counts per (dimension, format) against the paper's: {"ok", "counts", "differences"}."""
    counts = Counter((r["dimension"], r["format"]) for r in records)
    diffs = {f"{d}.{f}": {"released": counts.get((d, f), 0), "paper": n}
             for (d, f), n in PAPER_COUNTS.items() if counts.get((d, f), 0) != n}
    extra = {f"{d}.{f}": n for (d, f), n in counts.items() if (d, f) not in PAPER_COUNTS}
    diffs.update({k: {"released": n, "paper": 0} for k, n in extra.items()})
    return {"ok": not diffs, "total": sum(counts.values()), "paper_total": sum(PAPER_COUNTS.values()),
            "counts": {f"{d}.{f}": n for (d, f), n in sorted(counts.items())}, "differences": diffs}
