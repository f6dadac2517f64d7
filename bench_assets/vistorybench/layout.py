"""Where a ViStoryBench generator's shot images are, and which story shot each one is. Pure: folders in, paths and
messages out (no Dagster, no image decoding).

Two layouts of a generator folder (the one holding ``generator.yaml``):
- the project's own: ``<generator>/<NN>/[shots/]<shot files>``;
- the official one, as ViStoryBench's ``bench_run.py`` and ``vistorybench/dataset_loader/read_outputs.py`` read it:
  ``<method>/<mode>/<language>/<timestamp>/<NN>/[shots/]shot_NN.png`` (also ``<method>/<language>/<mode>/...``, and
  the README's ``<timestamp>/shots/<NN>/``). The language comes from the path; the newest timestamp is read unless
  the card names one (``timestamp:``); a folder holding several modes or languages needs ``mode:`` / ``language:``.

Numbering: ViStoryBench's shots are 1-based. A set that holds a shot 0 is shifted by +1, as the official
``utils/normalize_shot_filenames.py`` renames it, with a warning. A set whose numbering cannot be known (shots
missing while another story of the generator starts at 0: this one lost its shot_00) or that cannot fit the story
(indices beyond it, two files for one shot) is refused with one error naming the story and the shots, never scored
as zero; shots missing from a set numbered one known way are scored around, listed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Optional

from bench_assets.core.generators import GeneratorError, read_generator

LANGUAGES = ("en", "ch")
TIMESTAMP = re.compile(r"^\d{8}[_-]\d{6}$")    # 20250429-235959 or 20250429_235959 (read_outputs.TIMESTAMP_PATTERN)
STORY_DIR = re.compile(r"^\d{1,3}$")            # '01', '1', '002' (utils/ensure_shots_subdir.py STORY_ID_RE)
SHOTS_SUBDIRS = ("shots", "shot")               # read_outputs looks for these names inside a story folder
NORMALIZER = "ViStoryBench's utils/normalize_shot_filenames.py"


class OutputError(ValueError):
    """One generator's outputs for one story cannot be aligned with the story's shots."""


class LayoutError(GeneratorError):
    """A generator folder whose layout cannot be read (no story folders, several runs and no choice in the card,
    a named mode / language / timestamp that is not there): one line naming the folder and what to do."""


@dataclass(frozen=True)
class Layout:
    root: Path                          # the folder holding the <NN>/ story folders
    official: bool
    language: Optional[str] = None      # from the path (official layout); None: the card says
    mode: Optional[str] = None
    timestamp: Optional[str] = None
    notes: tuple[str, ...] = field(default=())   # what was chosen and what was left aside

    def story_dir(self, story_id: str) -> Path:
        """The story's output folder: ``<root>/<story_id>``, else the one folder whose number equals it ('1' for
        '01'), else the path that does not exist (its story then reports it)."""
        exact = self.root / story_id
        if exact.is_dir() or not story_id.isdigit():
            return exact
        same = [p for p in _subdirs(self.root) if p.name.isdigit() and int(p.name) == int(story_id)]
        return same[0] if len(same) == 1 else exact

    def story_ids(self) -> list[str]:
        return sorted(p.name for p in _subdirs(self.root))

    def describe(self) -> str:
        if not self.official:
            return f"{self.root}"
        return (f"official layout {self.mode}/{self.language}/{self.timestamp} ({self.root})"
                + (f"; {'; '.join(self.notes)}" if self.notes else ""))


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def _runs(gdir: Path) -> list[tuple[str, str, Path]]:
    """(mode, language, folder) of every run under an official generator folder, both orders."""
    runs = []
    for child in _subdirs(gdir):
        if child.name in LANGUAGES:                            # <method>/<language>/<mode>/
            runs += [(m.name, child.name, m) for m in _subdirs(child)]
        else:                                                  # <method>/<mode>/<language>/
            runs += [(child.name, lang.name, lang) for lang in _subdirs(child) if lang.name in LANGUAGES]
    return runs


def _digits(value: Any) -> str:
    # YAML reads 20250429_235959 as the integer 20250429235959: compare timestamps by their digits alone
    return re.sub(r"\D", "", str(value))


def _story_root(ts_dir: Path) -> Optional[Path]:
    if any(STORY_DIR.match(p.name) for p in _subdirs(ts_dir)):
        return ts_dir
    for name in SHOTS_SUBDIRS:                                 # the README's <timestamp>/shots/<NN>/
        sub = ts_dir / name
        if sub.is_dir() and any(STORY_DIR.match(p.name) for p in _subdirs(sub)):
            return sub
    return None


def resolve(generator_dir: str | Path, card: Optional[Mapping[str, Any]] = None) -> Layout:
    """The layout of one generator folder. Story folders directly inside (``<NN>/``) or no official tree: the
    project's layout. Otherwise the official tree, narrowed by the card's ``mode``, ``language`` and ``timestamp``."""
    gdir = Path(generator_dir)
    card = dict(card or {})
    where = f"generator folder {gdir.name!r}"
    direct = [p for p in _subdirs(gdir) if STORY_DIR.match(p.name)]
    runs = _runs(gdir)
    if direct or not runs:
        return Layout(gdir, official=False)
    want_mode, want_lang = card.get("mode"), card.get("language")
    picked = [r for r in runs if (want_mode is None or r[0] == str(want_mode))
              and (want_lang is None or r[1] == str(want_lang))]
    have = ", ".join(f"{m}/{lang}" for m, lang, _ in runs)
    if not picked:
        asked = ", ".join(f"{k}: {card[k]}" for k in ("mode", "language") if card.get(k) is not None)
        raise LayoutError(f"{where}: generator.yaml names {asked}, but the official tree holds {have} "
                          f"(<mode>/<language>/<timestamp>/<story>/)")
    if len(picked) > 1:
        several = ", ".join(f"{m}/{lang}" for m, lang, _ in picked)
        raise LayoutError(f"{where}: the official tree holds several runs ({several}); name the one to score with "
                          f"'mode:' and 'language:' in generator.yaml")
    mode, lang, run_dir = picked[0]
    stamps = sorted((p.name for p in _subdirs(run_dir) if TIMESTAMP.match(p.name)), key=_digits)
    others = [p.name for p in _subdirs(run_dir) if not TIMESTAMP.match(p.name)]
    notes = []
    if card.get("timestamp") is not None:
        named = [s for s in stamps if _digits(s) == _digits(card["timestamp"])]
        if not named:
            raise LayoutError(f"{where}: generator.yaml names timestamp {card['timestamp']!r}, but {mode}/{lang}/ "
                              f"holds {stamps or 'no timestamp folder'}")
        ts = named[0]
        if len(stamps) > 1:
            notes.append(f"timestamp {ts} named in generator.yaml (of {len(stamps)}: {', '.join(stamps)})")
    elif not stamps:
        raise LayoutError(f"{where}: {mode}/{lang}/ holds no <timestamp>/ folder (YYYYMMDD-HHMMSS"
                          + (f"; found {others}" if others else "") + ")")
    else:
        ts = stamps[-1]
        if len(stamps) > 1:
            notes.append(f"newest timestamp {ts} read (of {len(stamps)}: {', '.join(stamps)}); "
                         f"name another with 'timestamp:' in generator.yaml")
    if others:
        notes.append(f"ignored in {mode}/{lang}/ (not a timestamp): {others}")
    root = _story_root(run_dir / ts)
    if root is None:
        raise LayoutError(f"{where}: {mode}/{lang}/{ts}/ holds no story folder (<NN>/ or shots/<NN>/)")
    return Layout(root, official=True, language=lang, mode=mode, timestamp=ts, notes=tuple(notes))


def shots_folder(story_dir: str | Path) -> Path:
    """Where a story folder's shot images are: its ``shots/`` (or ``shot/``) subfolder when there is one, as the
    official reader takes it, else the folder itself."""
    story_dir = Path(story_dir)
    for name in SHOTS_SUBDIRS:
        if (story_dir / name).is_dir():
            return story_dir / name
    return story_dir


@dataclass(frozen=True)
class Aligned:
    files: dict[int, str]               # 1-based story shot -> path
    missing: tuple[int, ...]            # story shots without an output
    renumbered: Optional[str] = None    # the warning of a 0-based set shifted to 1-based
    warning: Optional[str] = None       # an ambiguity worth showing (trailing shots missing, nothing to tell)


def align(found: Mapping[int, str], n_shots: int, where: str,
          zero_sibling: Optional[Callable[[], Optional[str]]] = None) -> Aligned:
    """The story shots of one output set: ``found`` maps the index read from each file name to its path.

    - a shot 0 present: every index + 1 (the official normalizer's rename), with a warning saying so;
    - an index beyond the story: refused;
    - shots missing from a set whose numbering is known: scored on those present, the missing ones listed (the
      board counts them as the generator's failures; the official evaluators skip them);
    - shots missing from a set without a shot 0 while another story of the generator has one
      (``zero_sibling``): this set is 0-based with shot_00 missing, every shot would be misaligned by one:
      refused, naming the story and its missing shots. With no sibling to tell and only the last shots missing,
      the ambiguity is the warning.
    """
    if not found:
        raise OutputError(f"{where}: the output folder holds no shot image or video")
    renumbered = None
    files = dict(found)
    if 0 in found:
        files = {i + 1: p for i, p in found.items()}
        renumbered = (f"{where}: outputs are numbered from 0 ({Path(found[0]).name} ... "
                      f"{Path(found[max(found)]).name}); read as shots 1..{max(files)} (+1), as {NORMALIZER} "
                      f"renames them")
    beyond = sorted(i for i in files if i > n_shots)
    if beyond:
        shifted = " after the +1 renumbering of a 0-based set" if renumbered else ""
        raise OutputError(f"{where}: outputs for shots {beyond}{shifted} but the story has {n_shots} shots")
    missing = tuple(i for i in range(1, n_shots + 1) if i not in files)
    warning = None
    if missing and not renumbered:
        sibling = zero_sibling() if zero_sibling is not None else None
        if sibling is not None:
            raise OutputError(f"{where}: outputs are numbered from 0 (story {sibling} of this generator has a shot "
                              f"0) and shot_00 is missing here (files for {sorted(found)}; story shots "
                              f"{list(missing)} have none as numbered), so every shot would be misaligned by one. "
                              f"Rename the generator's outputs to 1-based indices or deliver shot_00")
        if missing == tuple(range(n_shots - len(missing) + 1, n_shots + 1)):   # only the last shots are missing
            warning = (f"{where}: shots {list(missing)} are missing at the end; if these outputs are numbered from "
                       f"0 with shot_00 missing, every shot is misaligned by one (no other story of the generator "
                       f"tells)")
    return Aligned(files, missing, renumbered, warning)


def delivered(generator_dir: str | Path, items: list[str]) -> list[str]:
    """The stories a generator folder has an output folder for, in either layout (``bench evaluate --generator``
    checks this before anything runs); a layout that cannot be read is its LayoutError."""
    found = resolve(generator_dir, read_generator(generator_dir).card)
    return [i for i in items if found.story_dir(i).is_dir()]
