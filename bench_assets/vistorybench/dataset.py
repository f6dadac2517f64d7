"""ViStoryBench's official release format -> typed stories; generated outputs -> shot images.

Release layout: ``<root>/<NN>/story.json`` (utf-8-sig) and ``<root>/<NN>/image/<CharacterKey>/*.jpg``. Where a
generator's outputs are (its own ``<NN>/`` folders or the official ``<method>/<mode>/<language>/<timestamp>/<NN>/``
tree) and how their file numbers become story shots is layout.py.
Everything that can be wrong with one story raises ``StoryError`` naming the story; other stories are unaffected.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from bench_assets.vistorybench import layout
from bench_assets.vistorybench.layout import OutputError  # noqa: F401 - dataset.OutputError, as before
from bench_resources.paths import OutsideRoot, inside_root

LANGUAGES = ("en", "ch")
TAGS = ("non_human", "realistic_human", "unrealistic_human")
LITE = frozenset("01 08 09 15 17 19 24 27 28 29 32 41 52 53 55 57 60 64 68 79".split())
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")
VIDEO_SUFFIXES = (".mp4", ".avi", ".mov", ".mkv", ".webm")
SHOT_FIELDS = ("Plot Correspondence", "Setting Description", "Shot Perspective Design", "Static Shot Description")


class StoryError(ValueError):
    """One story cannot be read; the message names the story and what is wrong."""


@dataclass(frozen=True)
class Character:
    key: str
    tag: str
    names: dict[str, str]
    prompts: dict[str, str]
    references: tuple[str, ...]          # reference image paths, sorted


@dataclass(frozen=True)
class Shot:
    index: int                           # 1-based, as in story.json
    text: dict[str, dict[str, str]]      # field -> language -> text
    appearing: dict[str, tuple[str, ...]]  # language -> character keys on stage


@dataclass(frozen=True)
class Story:
    story_id: str
    story_type: dict[str, str]
    characters: dict[str, Character]
    shots: tuple[Shot, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def lite(self) -> bool:
        return self.story_id in LITE

    def shot(self, index: int) -> Shot:
        return self.shots[[s.index for s in self.shots].index(index)]

    def on_stage(self, index: int, language: str) -> tuple[str, ...]:
        return self.shot(index).appearing[language]

    def to_json(self) -> dict[str, Any]:
        return {"story_id": self.story_id, "story_type": self.story_type,
                "characters": {k: {"tag": c.tag, "names": c.names, "prompts": c.prompts,
                                   "references": list(c.references)} for k, c in self.characters.items()},
                "shots": [{"index": s.index, "text": s.text, "appearing": {l: list(v) for l, v in s.appearing.items()}}
                          for s in self.shots],
                "warnings": list(self.warnings)}


def story_from_json(d: dict[str, Any]) -> Story:
    chars = {k: Character(k, c["tag"], c["names"], c["prompts"], tuple(c["references"]))
             for k, c in d["characters"].items()}
    shots = tuple(Shot(int(s["index"]), s["text"], {l: tuple(v) for l, v in s["appearing"].items()})
                  for s in d["shots"])
    return Story(d["story_id"], d["story_type"], chars, shots, tuple(d.get("warnings", ())))


def discover_stories(root: str | Path) -> list[str]:
    root = Path(root)
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if p.is_dir() and (p / "story.json").is_file())


def _text(obj: Any, sid: str, what: str) -> dict[str, str]:
    if isinstance(obj, str):
        return {"en": obj}
    if not isinstance(obj, dict):
        raise StoryError(f"story {sid}: {what} must be a {{'en': ..., 'ch': ...}} mapping, got {type(obj).__name__}")
    return {k: str(v) for k, v in obj.items()}


# Pillow's own decompression-bomb bound (2 x MAX_IMAGE_PIXELS, about 179 Mpx): above it an image is refused before
# any pixel is decoded, with one clear error for that image; the other images and stories go on.
MAX_PIXELS = 2 * (Image.MAX_IMAGE_PIXELS or 89_478_485)


class ImageTooLarge(ValueError):
    pass


def _open_rgb(path: str | Path) -> np.ndarray:
    """Decode an image to RGB uint8, refusing oversized ones by their header (no pixel decoded)."""
    try:
        with Image.open(path) as im:
            w, h = im.size
            if w * h > MAX_PIXELS:
                raise ImageTooLarge(f"{Path(path).name}: image is {w}x{h} ({w * h / 1e6:.0f} Mpx), above the "
                                    f"{MAX_PIXELS / 1e6:.0f} Mpx decompression-bomb limit; not decoded")
            return np.asarray(im.convert("RGB"))
    except Image.DecompressionBombError as e:  # Pillow refuses it at open: same error, same wording
        size = re.search(r"\((\d+) pixels\)", str(e))
        what = f"{int(size.group(1)) / 1e6:.0f} Mpx" if size else "too many pixels"
        raise ImageTooLarge(f"{Path(path).name}: image has {what}, above the {MAX_PIXELS / 1e6:.0f} Mpx "
                            f"decompression-bomb limit; not decoded") from None


def _check_image(path: Path, sid: str, key: str) -> None:
    try:
        _open_rgb(path)
    except ImageTooLarge as e:
        raise StoryError(f"story {sid}: reference image of character {key!r}: {e}") from None
    except (UnidentifiedImageError, OSError) as e:
        raise StoryError(f"story {sid}: reference image {path.name} of character {key!r} does not decode ({e})") from None


def load_story(story_dir: str | Path) -> Story:
    """Read and validate one story of the release (both languages)."""
    story_dir = Path(story_dir)
    sid = story_dir.name
    f = story_dir / "story.json"
    if not f.is_file():
        raise StoryError(f"story {sid}: {f} does not exist")
    try:
        raw = json.loads(f.read_text(encoding="utf-8-sig"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise StoryError(f"story {sid}: story.json is not valid UTF-8 JSON ({e})") from None
    if not isinstance(raw, dict):
        raise StoryError(f"story {sid}: story.json must be an object")
    raw_chars = raw.get("Characters")
    if not isinstance(raw_chars, dict) or not raw_chars:
        raise StoryError(f"story {sid}: 'Characters' is missing or empty")
    chars: dict[str, Character] = {}
    for key, c in raw_chars.items():
        if not isinstance(c, dict):
            raise StoryError(f"story {sid}: character {key!r} must be an object")
        tag = c.get("tag")
        if tag not in TAGS:
            raise StoryError(f"story {sid}: character {key!r} has tag {tag!r}; expected one of {list(TAGS)}")
        ref_dir = story_dir / "image" / key
        try:  # the key names a folder: "../x" or a link must not lead out of the story's own folder
            inside_root(ref_dir, story_dir, f"story {sid}: reference folder of character {key!r}")
        except OutsideRoot as e:
            raise StoryError(str(e)) from None
        if not ref_dir.is_dir():
            raise StoryError(f"story {sid}: character {key!r} has no reference folder {ref_dir}")
        refs = sorted(p for p in ref_dir.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES)
        if not refs:
            raise StoryError(f"story {sid}: reference folder of character {key!r} holds no image")
        for p in refs:
            try:
                inside_root(p, story_dir, f"story {sid}: reference image of character {key!r}")
            except OutsideRoot as e:
                raise StoryError(str(e)) from None
            _check_image(p, sid, key)
        names = {l: str(c.get(f"name_{l}", "")) for l in LANGUAGES if c.get(f"name_{l}")}
        prompts = {l: str(c.get(f"prompt_{l}", "")) for l in LANGUAGES if c.get(f"prompt_{l}")}
        chars[key] = Character(key, tag, names, prompts, tuple(str(p) for p in refs))
    raw_shots = raw.get("Shots")
    if not isinstance(raw_shots, list) or not raw_shots:
        raise StoryError(f"story {sid}: the story has no shots")
    by_name = {lang: {c.names[lang]: k for k, c in chars.items() if lang in c.names} for lang in LANGUAGES}
    shots, warnings = [], []
    for n, s in enumerate(raw_shots, start=1):
        if not isinstance(s, dict):
            raise StoryError(f"story {sid}: shot #{n} must be an object, got {type(s).__name__}")
        idx = s.get("index")
        if not isinstance(idx, int) or idx < 1:
            raise StoryError(f"story {sid}: shot #{n} has index {idx!r}; shot indices are 1-based integers")
        text = {fld: _text(s.get(fld, ""), sid, f"shot {idx} {fld!r}") for fld in SHOT_FIELDS}
        raw_app = s.get("Characters Appearing", {})
        raw_app = {"en": raw_app} if isinstance(raw_app, list) else raw_app
        if not isinstance(raw_app, dict):
            raise StoryError(f"story {sid}: shot {idx} 'Characters Appearing' must be a {{'en': [...], 'ch': [...]}} "
                             f"mapping, got {type(raw_app).__name__}")
        appearing = _appearing(raw_app, chars, by_name, sid, idx, warnings)
        shots.append(Shot(idx, text, appearing))
    indices = [s.index for s in shots]
    if sorted(indices) != list(range(1, len(shots) + 1)):
        raise StoryError(f"story {sid}: shot indices {indices} are not 1..{len(shots)}")
    for lang in LANGUAGES:
        if any(lang not in s.appearing for s in shots):
            warnings.append(f"'Characters Appearing' has no {lang!r} list in some shots")
    return Story(sid, _text(raw.get("Story_type", {}), sid, "'Story_type'"), chars, tuple(shots), tuple(warnings))


def _appearing(raw_app: dict, chars: dict[str, Character], by_name: dict[str, dict[str, str]], sid: str, idx: int,
               warnings: list[str]) -> dict[str, tuple[str, ...]]:
    """language -> on-stage character keys. English names resolve through ``name_en`` (or the key itself). The
    Chinese list is paired with the English one by position, as the release does: its names often differ from
    ``name_ch`` (variants, nicknames), so a name lookup would drop or refuse them. Without an English list of the
    same length, Chinese names resolve by ``name_ch``."""
    def resolve(lang: str, names: Any) -> list[str]:
        if not isinstance(names, list):
            raise StoryError(f"story {sid}: shot {idx} 'Characters Appearing' ({lang}) must be a list")
        keys = []
        for name in names:
            key = by_name.get(lang, {}).get(name) or (name if name in chars else None)
            if key is None:
                raise StoryError(f"story {sid}: shot {idx} lists {name!r} ({lang}) in 'Characters Appearing', "
                                 f"which is not in 'Characters'")
            keys.append(key)
        return keys

    out: dict[str, tuple[str, ...]] = {}
    en = resolve("en", raw_app["en"]) if "en" in raw_app else None
    if en is not None:
        out["en"] = tuple(dict.fromkeys(en))
    for lang, names in raw_app.items():
        if lang == "en":
            continue
        if lang == "ch" and en is not None and isinstance(names, list) and len(names) == len(en):
            for name, key in zip(names, en):
                if chars[key].names.get("ch") not in (None, name):
                    warnings.append(f"shot {idx}: Chinese name {name!r} paired by position with {key!r} "
                                    f"(name_ch {chars[key].names.get('ch')!r})")
            out["ch"] = tuple(dict.fromkeys(en))
            continue
        if lang == "ch" and en is not None and isinstance(names, list):
            warnings.append(f"shot {idx}: {len(names)} Chinese vs {len(en)} English names in 'Characters "
                            f"Appearing'; Chinese names resolved by name_ch")
        out[lang] = tuple(dict.fromkeys(resolve(lang, names)))
    return out


# ----------------------------------------------------------------------------------- generated outputs

_INDEX = re.compile(r"(?:^|_)(\d+)$")


def shot_index_from_name(name: str) -> Optional[int]:
    """``shot_07.png`` / ``07.png`` / ``x_7.jpg`` -> 7: the integer after the last underscore (or the whole stem)."""
    m = _INDEX.search(Path(name).stem)
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class OutputIndex:
    files: dict[int, str]     # shot index -> path
    missing: tuple[int, ...]  # story shots without an output
    warning: Optional[str] = None  # an ambiguity worth showing (see index_outputs)
    renumbered: Optional[str] = None  # a 0-based set read as 1-based: the warning saying so (layout.align)


def _indices(folder: Path) -> set[int]:
    folder = layout.shots_folder(folder)
    return {i for p in folder.iterdir() if p.suffix.lower() in IMAGE_SUFFIXES + VIDEO_SUFFIXES
            for i in [shot_index_from_name(p.name)] if i is not None}


def zero_based_evidence(generator_dir: Path, exclude: str) -> Optional[str]:
    """The first other story folder of this generator that holds a shot numbered 0, or None. A generator numbers
    its shots one way: a 0-based set whose shot_00 is missing looks 1-based (1..n-1 with shot n missing) on its
    own, and only its sibling stories tell the two apart."""
    try:
        siblings = sorted(p for p in generator_dir.iterdir() if p.is_dir() and p.name != exclude)
    except OSError:
        return None
    for d in siblings:
        try:
            if 0 in _indices(d):
                return d.name
        except OSError:
            continue
    return None


def index_outputs(story: Story, folder: str | Path, generator: str) -> OutputIndex:
    """Validate a generator's output folder for one story (its shots in ``shots/`` when it has one, as the official
    reader takes them) against the story's 1-based shot indices (``layout.align``).

    A 0-based set is read as 1-based (+1, the official normalizer's rename) with a warning; indices beyond the
    story or two files for one shot are errors for the whole story (never a silent shift); an incomplete set is
    scored on the shots present with the missing ones listed. A 0-based set whose shot_00 is missing is caught by
    the generator's other stories (one of them has a shot 0); with no sibling to tell, a set missing only its last
    shots carries a warning naming the ambiguity.
    """
    folder = Path(folder)
    where = f"generator {generator!r}, story {story.story_id}"
    if not folder.is_dir():
        raise OutputError(f"{where}: no output folder {folder}")
    shots_dir = layout.shots_folder(folder)
    found: dict[int, str] = {}
    for p in sorted(shots_dir.iterdir()):
        if p.suffix.lower() not in IMAGE_SUFFIXES + VIDEO_SUFFIXES:
            continue
        idx = shot_index_from_name(p.name)
        if idx is None:
            raise OutputError(f"{where}: cannot read a shot index from {p.name!r} (expected shot_NN, NN or x_N)")
        if idx in found:
            raise OutputError(f"{where}: shot {idx} has two outputs ({Path(found[idx]).name}, {p.name})")
        try:  # the generator folder is the root: a shot (or the story folder) linked out of it is refused
            inside_root(p, folder.parent, f"{where}, shot {idx}")
        except OutsideRoot as e:
            raise OutputError(str(e)) from None
        found[idx] = str(p)
    got = layout.align(found, len(story.shots), where,
                       zero_sibling=lambda: zero_based_evidence(folder.parent, folder.name))
    return OutputIndex(got.files, got.missing, got.warning, got.renumbered)


class ShotReadError(ValueError):
    pass


def read_shot_image(path: str | Path) -> np.ndarray:
    """RGB uint8 image of one shot; for a video, its first frame."""
    path = Path(path)
    if path.suffix.lower() in VIDEO_SUFFIXES:
        cap = cv2.VideoCapture(str(path))
        ok, frame = cap.read()
        cap.release()
        if not ok or frame is None:
            raise ShotReadError(f"{path.name}: video has no decodable first frame")
        return cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
    try:
        return _open_rgb(path)
    except ImageTooLarge as e:
        raise ShotReadError(str(e)) from None
    except (UnidentifiedImageError, OSError) as e:
        raise ShotReadError(f"{path.name}: image does not decode ({e})") from None


def read_image(path: str | Path) -> np.ndarray:
    return _open_rgb(path)
