"""EntityBench episodes: read and validate the canonical episode JSON; derive the paper's statistics.

Pure code: no Dagster. Every problem raises ``EpisodeError`` naming the episode and what is wrong.
"""
from __future__ import annotations

import json
import os
import re
import warnings
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bench_assets.core.names import BadName, validate_key
from bench_resources.paths import OutsideRoot, inside_root

ENTITY_TYPES = ("character", "object", "location")
TIERS = ("easy", "medium", "hard")


class EpisodeError(ValueError):
    pass


@dataclass(frozen=True)
class Entity:
    id: str
    type: str
    name: str
    description: str


@dataclass(frozen=True)
class Shot:
    index: int
    cut: bool
    entities: tuple[str, ...]
    action: str
    # the text a generator was given for this shot, where the source says it (the official release's
    # `video_prompts`, which does not always follow the schedule's first appearances); None: derived (shot_prompt)
    prompt: str | None = None
    # the official release's (scene_num, shot in scene): its output files are `<scene:03d>_<shot:03d>.mp4`;
    # None: derived from the cuts (official_keys)
    scene: int | None = None
    scene_shot: int | None = None

    def to_json(self) -> dict[str, Any]:
        out = {"index": self.index, "cut": self.cut, "entities": list(self.entities), "action": self.action}
        # optional fields only when set, so an episode without them serialises (and hashes) as before
        if self.prompt is not None:
            out["prompt"] = self.prompt
        if self.scene is not None:
            out.update(scene=self.scene, shot_in_scene=self.scene_shot)
        return out


@dataclass(frozen=True)
class Episode:
    episode_id: str
    tier: str
    title: str
    summary: str
    entities: tuple[Entity, ...]
    shots: tuple[Shot, ...]
    warnings: tuple[str, ...] = field(default=())

    @property
    def registry(self) -> dict[str, Entity]:
        return {e.id: e for e in self.entities}

    def appearances(self, entity_id: str) -> list[int]:
        return [s.index for s in self.shots if entity_id in s.entities]

    def to_json(self) -> dict[str, Any]:
        return {
            "episode_id": self.episode_id, "tier": self.tier, "title": self.title, "summary": self.summary,
            "entities": [e.__dict__ for e in self.entities],
            "shots": [s.to_json() for s in self.shots],
        }


def tier_for(n_shots: int) -> str:
    return "easy" if n_shots <= 14 else ("medium" if n_shots <= 30 else "hard")


# Cost bounds checked before any work (issue 39): every registry entity is looked for in every shot, so an episode
# declaring 10,000 entities it never schedules held presence_consistency for 20 minutes. The registry may exceed
# what its shots schedule by this allowance (the official release: at most 7 in an episode, 194 in 140 episodes);
# one shot may schedule this many entities (the release: at most 12). Environment variables override both.
UNSCHEDULED_ENTITY_ALLOWANCE = 32
MAX_ENTITIES_PER_SHOT = 64
UNSCHEDULED_ENV, PER_SHOT_ENV = "BENCH_MAX_UNSCHEDULED_ENTITIES", "BENCH_MAX_ENTITIES_PER_SHOT"


def _limit(env: str, default: int) -> int:
    raw = os.environ.get(env, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise EpisodeError(f"{env}={raw!r} is not a whole number") from None
    if value < 0:
        raise EpisodeError(f"{env}={raw!r} must be >= 0")
    return value


def check_counts(ents_raw: list, shots_raw: list, where: str) -> None:
    """EpisodeError naming the episode, the count and the limit when the registry holds more entities than its
    shots schedule plus the allowance, or one shot schedules more than the per-shot limit. Linear in the file's
    size, so a hostile episode is refused at once (the validation after it compares ids pairwise)."""
    per_shot = _limit(PER_SHOT_ENV, MAX_ENTITIES_PER_SHOT)
    scheduled: set = set()
    for pos, s in enumerate(shots_raw, start=1):
        sched = s.get("entities") if isinstance(s, dict) else None
        if not isinstance(sched, list):
            continue  # the shot's own check names this
        if len(sched) > per_shot:
            raise EpisodeError(f"{where}: shot {pos} schedules {len(sched)} entities; the limit is {per_shot} "
                               f"per shot ({PER_SHOT_ENV})")
        scheduled.update(x for x in sched if isinstance(x, str))
    allowance = _limit(UNSCHEDULED_ENV, UNSCHEDULED_ENTITY_ALLOWANCE)
    if len(ents_raw) > len(scheduled) + allowance:
        raise EpisodeError(f"{where}: the registry declares {len(ents_raw)} entities but the shots schedule "
                           f"{len(scheduled)}; the limit is {len(scheduled) + allowance} (scheduled + "
                           f"{allowance} unscheduled, {UNSCHEDULED_ENV})")


_NOTED: set[tuple[str, str]] = set()  # (episode id, note) already warned in this process


def parse_episode(raw: Any, source: str = "<memory>") -> Episode:
    """Validate one episode's JSON object; the error names the episode (or file) and the problem."""
    if not isinstance(raw, dict):
        raise EpisodeError(f"{source}: episode must be a JSON object")
    eid = raw.get("episode_id")
    where = f"episode {eid!r} ({source})" if eid else source
    try:
        validate_key(eid, "episode_id")
    except BadName as e:
        raise EpisodeError(f"{where}: {e}") from None
    ents_raw = raw.get("entities")
    shots_raw = raw.get("shots")
    if not isinstance(ents_raw, list) or not ents_raw:
        raise EpisodeError(f"{where}: 'entities' must be a non-empty list")
    if not isinstance(shots_raw, list) or not shots_raw:
        raise EpisodeError(f"{where}: 'shots' must be a non-empty list")
    check_counts(ents_raw, shots_raw, where)
    entities = []
    for i, e in enumerate(ents_raw):
        if not isinstance(e, dict) or not all(isinstance(e.get(k), str) and e.get(k) for k in
                                              ("id", "type", "name", "description")):
            raise EpisodeError(f"{where}: entity #{i} needs non-empty id, type, name, description")
        if e["type"] not in ENTITY_TYPES:
            raise EpisodeError(f"{where}: entity {e['id']!r} has unknown type {e['type']!r}")
        entities.append(Entity(e["id"], e["type"], e["name"], e["description"]))
    ids = [e.id for e in entities]
    counts = Counter(ids)  # not ids.count per id: quadratic in the registry
    dup = sorted(i for i, n in counts.items() if n > 1)
    if dup:
        raise EpisodeError(f"{where}: duplicate entity ids {dup}")
    shots = []
    for pos, s in enumerate(shots_raw, start=1):
        if not isinstance(s, dict):
            raise EpisodeError(f"{where}: shot #{pos} is not an object")
        idx = s.get("index")
        if idx != pos:
            raise EpisodeError(f"{where}: shot indices must be 1-based and contiguous; "
                               f"position {pos} has index {idx!r}")
        sched = s.get("entities", [])
        if not isinstance(sched, list):
            raise EpisodeError(f"{where}: shot {pos} 'entities' must be a list")
        unknown = [x for x in sched if not isinstance(x, str) or x not in counts]  # ids are text
        if unknown:
            raise EpisodeError(f"{where}: shot {pos} schedules unknown entity ids {unknown}")
        cut = bool(s.get("cut", pos == 1))
        if pos == 1 and not cut:
            raise EpisodeError(f"{where}: the first shot must be a cut")
        prompt = s.get("prompt")
        if prompt is not None and not (isinstance(prompt, str) and prompt.strip()):
            raise EpisodeError(f"{where}: shot {pos} 'prompt' must be non-empty text when given, got {prompt!r}")
        scene, scene_shot = s.get("scene"), s.get("shot_in_scene")
        if (scene is None) != (scene_shot is None) or not all(
                v is None or (type(v) is int and v >= 1) for v in (scene, scene_shot)):
            raise EpisodeError(f"{where}: shot {pos} needs both 'scene' and 'shot_in_scene' as positive integers "
                               f"or neither, got scene={scene!r}, shot_in_scene={scene_shot!r}")
        shots.append(Shot(pos, cut, tuple(sched), str(s.get("action", "")), prompt, scene, scene_shot))
    keyed = [(s.scene, s.scene_shot) for s in shots if s.scene is not None]
    if keyed and len(keyed) != len(shots):
        raise EpisodeError(f"{where}: 'scene' / 'shot_in_scene' are given for {len(keyed)} of {len(shots)} shots; "
                           f"give them for every shot or none")
    if len(set(keyed)) != len(keyed):
        dup = sorted({k for k in keyed if keyed.count(k) > 1})
        raise EpisodeError(f"{where}: (scene, shot_in_scene) repeated: {dup}")
    tier = raw.get("tier") or tier_for(len(shots))
    if tier not in TIERS:
        raise EpisodeError(f"{where}: unknown tier {tier!r}")
    notes = []
    expected = tier_for(len(shots))
    if tier != expected:
        notes.append(f"tier {tier!r} but {len(shots)} shots suggests {expected!r}")
    scheduled = {x for s in shots for x in s.entities}
    never = [i for i in ids if i not in scheduled]
    if never:
        notes.append(f"registry entities never scheduled: {never}")
    for n in notes:  # once per process: every asset re-parses the stored episode (900 repeats on the release)
        if (eid, n) not in _NOTED:
            _NOTED.add((eid, n))
            warnings.warn(f"{where}: {n}", stacklevel=2)
    return Episode(eid, tier, str(raw.get("title", "")), str(raw.get("summary", "")), tuple(entities),
                   tuple(shots), tuple(notes))


def load_episode(path: str | Path) -> Episode:
    p = Path(path)
    try:
        data = p.read_bytes()
        raw = json.loads(data.decode("utf-8-sig"))
    except UnicodeDecodeError as e:
        bom = ("UTF-16 (it starts with a UTF-16 byte-order mark)" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else
               "UTF-32" if data[:4] in (b"\xff\xfe\x00\x00", b"\x00\x00\xfe\xff") else "not UTF-8")
        raise EpisodeError(f"{p.name}: episode files must be UTF-8 text, this one is {bom}: byte "
                           f"{data[e.start:e.start + 1]!r} at offset {e.start} cannot be decoded; re-save it as "
                           f"UTF-8") from None
    except json.JSONDecodeError as e:
        raise EpisodeError(f"{p.name}: bad JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
    except OSError as e:
        raise EpisodeError(f"{p.name}: cannot read ({e.strerror})") from None
    ep = parse_episode(raw, p.name)
    if p.stem != ep.episode_id:
        raise EpisodeError(f"{p.name}: file name does not match episode_id {ep.episode_id!r}")
    return ep


def discover_episodes(root: str | Path) -> list[str]:
    """Episode ids from ``<root>/*.json`` (file stems), sorted; names are checked when loaded."""
    return sorted(p.stem for p in Path(root).glob("*.json"))


# ---------------------------------------------------------------- derived statistics (Tables 3 / 10)

def recurrence_gaps(appearances: list[int]) -> list[int]:
    """Intervening shots between consecutive appearances (consecutive shots = 0)."""
    return [b - a - 1 for a, b in zip(appearances, appearances[1:])]


def continuation_chains(episode: Episode) -> list[list[int]]:
    """Maximal runs of shots not separated by a hard cut."""
    chains: list[list[int]] = []
    for s in episode.shots:
        if s.cut or not chains:
            chains.append([s.index])
        else:
            chains[-1].append(s.index)
    return chains


def episode_statistics(episode: Episode) -> dict[str, Any]:
    reg = episode.registry
    stats: dict[str, Any] = {"episode_id": episode.episode_id, "tier": episode.tier,
                             "n_shots": len(episode.shots), "n_entities": len(reg)}
    seen: set[str] = set()
    slots = reappear = registry_shots = memory_only = 0
    slots_by_type = defaultdict(int)
    reappear_by_type = defaultdict(int)
    for s in episode.shots:
        first = [e for e in s.entities if e not in seen]
        slots += len(s.entities)
        reappear += len(s.entities) - len(first)
        for e in s.entities:
            slots_by_type[reg[e].type] += 1
            if e in seen:
                reappear_by_type[reg[e].type] += 1
        if first:
            registry_shots += 1
        elif s.entities:
            memory_only += 1
        seen.update(s.entities)
    max_gaps = []
    for etype in ENTITY_TYPES:
        ids = [e.id for e in episode.entities if e.type == etype]
        stats[f"cross_shot_{etype}s"] = sum(1 for i in ids if len(episode.appearances(i)) >= 2)
        stats[f"reappearance_rate_{etype}"] = (reappear_by_type[etype] / slots_by_type[etype]
                                               if slots_by_type[etype] else None)
    all_gaps = []
    for e in episode.entities:
        gaps = recurrence_gaps(episode.appearances(e.id))
        all_gaps += gaps
        if gaps:
            max_gaps.append(max(gaps))
    chains = continuation_chains(episode)
    n = len(episode.shots)
    chars_per_shot = [sum(1 for e in s.entities if reg[e].type == "character") for s in episode.shots]
    objs_per_shot = [sum(1 for e in s.entities if reg[e].type == "object") for s in episode.shots]
    scheduled = {e for s in episode.shots for e in s.entities}
    locs_per_shot = [sum(1 for e in s.entities if reg[e].type == "location") for s in episode.shots]
    for etype in ENTITY_TYPES:  # Tables 6 and 8: registry, appearances, first vs re-appearances per type
        stats[f"registry_{etype}s"] = sum(1 for e in episode.entities if e.type == etype)
        stats[f"appearances_{etype}"] = slots_by_type[etype]
        stats[f"reappearances_{etype}"] = reappear_by_type[etype]
        stats[f"first_appearances_{etype}"] = slots_by_type[etype] - reappear_by_type[etype]
    stats.update({
        "scenes": sum(1 for s in episode.shots if s.cut),
        "mean_objects_per_shot": float(np.mean(objs_per_shot)),
        "mean_locations_per_shot": float(np.mean(locs_per_shot)),
        "mean_entities_per_shot": float(np.mean([len(s.entities) for s in episode.shots])),
        "frac_shots_tritype": float(np.mean([c >= 1 and o >= 1 and l >= 1 for c, o, l in
                                             zip(chars_per_shot, objs_per_shot, locs_per_shot)])),
        "scheduled_entities": len(scheduled),
        "recurring_entity_rate": (sum(1 for e in scheduled if len(episode.appearances(e)) >= 2) / len(scheduled)
                                  if scheduled else None),
        "recurrence_gap_mean": float(np.mean(all_gaps)) if all_gaps else None,
        "recurrence_gap_max": max(all_gaps) if all_gaps else None,
        "mean_per_entity_max_gap": float(np.mean(max_gaps)) if max_gaps else None,
        "entity_slot_appearances": slots,
        "reappearances": reappear,
        "reappearance_rate": reappear / slots if slots else None,
        "cuts": sum(1 for s in episode.shots if s.cut),
        "cut_rate": sum(1 for s in episode.shots if s.cut) / n,
        "continuation_chains": len(chains),
        "max_chain_length": max(len(c) for c in chains),
        "registry_shots": registry_shots,
        "registry_shot_rate": registry_shots / n,
        "memory_only_shots": memory_only,
        "memory_only_rate": memory_only / n,
        "mean_characters_per_shot": float(np.mean(chars_per_shot)),
        "max_characters_per_shot": int(max(chars_per_shot)),
        "frac_shots_3plus_chars": float(np.mean([c >= 3 for c in chars_per_shot])),
        "frac_shots_2c1o": float(np.mean([c >= 2 and o >= 1 for c, o in zip(chars_per_shot, objs_per_shot)])),
        **{f"frac_shots_{k}_chars": float(np.mean([c == k for c in chars_per_shot])) for k in (0, 1, 2)},
        "recurring_entities": sum(1 for e in scheduled if len(episode.appearances(e)) >= 2),
        # raw lists so that Tables 3 / 10 can pool over entities and gaps, not average episode means
        "recurrence_gaps": [int(g) for g in all_gaps],
        "per_entity_max_gaps": [int(g) for g in max_gaps],
    })
    return stats


def shot_prompt(episode: Episode, shot_index: int) -> str:
    """Prompt for shot k: the shot's own ``prompt`` where the episode gives one (the official release's text);
    otherwise first appearances carry their description, re-appearances the name only."""
    shot = episode.shots[shot_index - 1]
    if shot.prompt is not None:
        return shot.prompt
    reg = episode.registry
    seen = {e for s in episode.shots if s.index < shot_index for e in s.entities}
    header = [f"[{reg[e].name}] {reg[e].description}" for e in shot.entities if e not in seen]
    body = shot.action
    return ("\n".join(header) + "\n" + body).strip() if header else body


# ---------------------------------------------------------------- generator outputs

# Any container PyAV reads; a still image renamed to one of these is rejected when probed (core.media).
VIDEO_EXTENSIONS = ("mp4", "mov", "mkv", "webm", "avi", "gif", "m4v", "mpg", "mpeg", "ts")
SHOT_FILE = re.compile(rf"^shot_(\d+)\.({'|'.join(VIDEO_EXTENSIONS)})$", re.IGNORECASE)
_ANY_SHOT = re.compile(r"^shot_(\d+)\.(\w+)$")
# the official release's layout (eval/evaluate_benchmark.py globs `{scene:03d}_{shot:03d}*.mp4`): scene number and
# 1-based shot within the scene
OFFICIAL_FILE = re.compile(rf"^(\d+)_(\d+)\.({'|'.join(VIDEO_EXTENSIONS)})$", re.IGNORECASE)
_ANY_OFFICIAL = re.compile(r"^(\d+)_(\d+)\.(\w+)$")


# Per-item cost bound: an episode may declare at most this many shots that its generator folder has no file for.
# Each declared shot costs rows in every metric table (Pillar 1 writes ~18 per shot); an episode that declares
# 10,000 shots with 2 files would write 180,000 rows and starve every other item of the run. The largest
# EntityBench episode (the official release, 3776439) has 50 shots, so a bound of 100 undelivered shots never
# touches a real one. BENCH_MAX_UNDELIVERED_SHOTS overrides it.
MAX_UNDELIVERED_SHOTS = 100
UNDELIVERED_ENV = "BENCH_MAX_UNDELIVERED_SHOTS"


@dataclass(frozen=True)
class ShotFile:
    index: int
    path: str | None
    error: str | None


def official_keys(episode: Episode) -> dict[int, tuple[int, int]]:
    """Shot index -> (scene, shot in scene) of the official output name ``<scene:03d>_<shot:03d>.mp4``: the episode's
    own scene numbering where it keeps one (imported from the release), else scenes counted from the cuts."""
    if all(s.scene is not None for s in episode.shots):
        return {s.index: (s.scene, s.scene_shot) for s in episode.shots}
    out, scene, k = {}, 0, 0
    for s in episode.shots:
        scene, k = (scene + 1, 1) if s.cut or not scene else (scene, k + 1)
        out[s.index] = (scene, k)
    return out


def _official_name(key: tuple[int, int]) -> str:
    return f"{key[0]:03d}_{key[1]:03d}.mp4"


def _official_index(episode: Episode, official: dict[tuple[int, int], list[Path]],
                    other: dict[tuple[int, int], list[str]], where: str):
    """The official layout's files re-keyed by shot index, or one error for the whole set when its names do not fit
    the episode's scene/shot order (a 0 or a key the episode does not have would shift every shot after it)."""
    keys = official_keys(episode)
    index_of = {v: k for k, v in keys.items()}
    stray = sorted(k for k in {*official, *other} if k not in index_of)
    if stray:
        names = [(official.get(k) or [Path(n) for n in other.get(k, [])])[0].name for k in stray]
        zero = any(0 in k for k in stray)
        scenes = defaultdict(int)
        for sc, _ in keys.values():
            scenes[sc] += 1
        order = ", ".join(f"{sc}:{n}" for sc, n in sorted(scenes.items()))
        return None, None, (f"{where}: {len(stray)} file(s) in the official <scene>_<shot> layout match no shot of "
                            f"the episode: {', '.join(names[:8])}{' ...' if len(names) > 8 else ''}"
                            f"{' (scenes and shots are 1-based: 001_001 is the first shot)' if zero else ''}; "
                            f"the episode's scenes:shots are {order}, so every shot of this set is rejected "
                            f"rather than misaligned")
    return ({index_of[k]: v for k, v in official.items()}, {index_of[k]: v for k, v in other.items()}, None)


def index_shot_files(episode: Episode, folder: str | Path, generator: str) -> list[ShotFile]:
    """Map the episode's shots to ``shot_<NN>.<ext>`` files, or to the official release's ``<SSS>_<KKK>.<ext>``
    (scene, shot in scene; read as they are, through the episode's scene/shot order); each problem is recorded for
    its shot.

    0-based numbering (a ``shot_00`` or ``000_001`` file), official names the episode has no shot for, or both layouts
    in one folder are an error for the whole set: it would silently misalign. Missing official files are listed, all
    of them, in each missing shot's error.
    """
    folder = Path(folder)
    where = f"generator {generator!r}, episode {episode.episode_id!r}"
    if not folder.is_dir():
        return [ShotFile(s.index, None, f"{where}: output folder {folder} is missing") for s in episode.shots]
    found: dict[int, list[Path]] = defaultdict(list)
    other: dict[int, list[str]] = defaultdict(list)
    official: dict[tuple[int, int], list[Path]] = defaultdict(list)
    official_other: dict[tuple[int, int], list[str]] = defaultdict(list)
    for p in sorted(folder.iterdir()):
        if (m := SHOT_FILE.match(p.name)):
            found[int(m.group(1))].append(p)
        elif (m := _ANY_SHOT.match(p.name)):
            other[int(m.group(1))].append(p.name)
        elif (m := OFFICIAL_FILE.match(p.name)):
            official[(int(m.group(1)), int(m.group(2)))].append(p)
        elif (m := _ANY_OFFICIAL.match(p.name)):
            official_other[(int(m.group(1)), int(m.group(2)))].append(p.name)
    keys: dict[int, tuple[int, int]] | None = None

    def name_of(k: int) -> str:
        return _official_name(keys[k]) if keys is not None else f"shot_{k:02d}.*"

    missing_note = ""
    if official or official_other:
        if found or other:
            msg = (f"{where}: the folder mixes shot_NN files ({sorted(p.name for v in found.values() for p in v)[:3]}"
                   f") and official <scene>_<shot> files ({sorted(p.name for v in official.values() for p in v)[:3]}"
                   f"); keep one layout, so every shot of this set is rejected rather than guessed")
            return [ShotFile(s.index, None, msg) for s in episode.shots]
        found, other, problem = _official_index(episode, official, official_other, where)
        if problem:
            return [ShotFile(s.index, None, problem) for s in episode.shots]
        keys = official_keys(episode)
        gaps = [name_of(s.index) for s in episode.shots if not found.get(s.index) and not other.get(s.index)]
        if gaps:  # one sentence naming the whole gap, so any one missing shot's error tells it all
            missing_note = (f"; the official-layout set has {len(gaps)} of {len(episode.shots)} files missing: "
                            f"{', '.join(gaps[:12])}{' ...' if len(gaps) > 12 else ''}")
    delivered = sum(1 for s in episode.shots if found.get(s.index))
    limit = _limit(UNDELIVERED_ENV, MAX_UNDELIVERED_SHOTS)
    if len(episode.shots) - delivered > limit:
        raise EpisodeError(f"{where}: the episode declares {len(episode.shots)} shots but the output folder holds "
                           f"files for {delivered}; more than {limit} undelivered shots per episode "
                           f"is refused (per-item cost bound, {UNDELIVERED_ENV}) rather than scored as "
                           f"{len(episode.shots)} rows per metric")
    if 0 in found:
        msg = (f"{where}: found {found[0][0].name}; shot files are 1-based (shot_01 is the first shot), "
               f"so every shot of this set is rejected rather than misaligned")
        return [ShotFile(s.index, None, msg) for s in episode.shots]
    out = []
    for s in episode.shots:
        files = found.get(s.index, [])
        if not files and other.get(s.index):
            out.append(ShotFile(s.index, None, f"{where}, shot {s.index}: {other[s.index][0]} is not a video "
                                               f"container we read (.{', .'.join(VIDEO_EXTENSIONS)})"))
        elif not files:
            out.append(ShotFile(s.index, None, f"{where}, shot {s.index}: no {name_of(s.index)} file{missing_note}"))
        elif len(files) > 1:
            out.append(ShotFile(s.index, None, f"{where}, shot {s.index}: several files {[f.name for f in files]}"))
        else:
            try:  # the generator folder is the root: a shot (or the episode folder) linked out of it is refused
                inside_root(files[0], folder.parent, f"{where}, shot {s.index}")
            except OutsideRoot as e:
                out.append(ShotFile(s.index, None, str(e)))
                continue
            out.append(ShotFile(s.index, str(files[0]), None))
    extra = sorted(k for k in found if k > len(episode.shots))
    if extra:
        warnings.warn(f"{where}: shot files beyond the episode's {len(episode.shots)} shots: {extra}")
    return out
