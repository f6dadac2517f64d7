"""EntityBench's official release (GitHub ``Catherine-R-He/EntityBench``, 3776439) -> the canonical episode format.

``convert_episode`` is pure: one official ``data/scripts/<episode_id>.json`` object in, the canonical episode JSON
(``dataset.parse_episode`` reads it) and every quirk met out. ``import_release`` reads a release checkout, writes
``<out>/entitybench/episodes/<episode_id>.json``, ``tiers.json`` and ``import_report.json``; ``bench import
entitybench PATH`` calls ``cli_import``. ``table3`` computes the paper's Table 3 from imported episodes.

The release's quirks and how each is resolved (``RESOLUTIONS``); where the authors' evaluator
(``eval/evaluate_benchmark.py``) settles a case, we follow it, so an imported episode means what it meant to them:
the schedule names entities by NAME and declares their type (characters / places / objects); descriptions come from
``entity_descriptions`` looked up by name.
"""
from __future__ import annotations

import json
import os
import warnings
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from bench_assets.core.names import BadName, validate_key
from bench_assets.entitybench import dataset

SCHEDULE_TYPES = {"characters": "character", "places": "location", "objects": "object"}
LABEL_TYPES = {"Character": "character", "Location": "location", "Object": "object"}
ID_PREFIX = {"character": "c", "location": "l", "object": "o"}
SPLIT_FILE = "final_split_validated_ids.json"   # the authors' README runs every evaluation with this split

RESOLUTIONS = {
    "undescribed_name": "registry entity added with the schedule's type; its description is its name, the text the "
                        "authors' evaluator queries the detector with (name_to_desc.get(name, (name, ...)))",
    "duplicate_name": "one entity per scheduled name (the schedule cannot tell the labels apart); the description of "
                      "the last label, which the authors' grounding pass keeps; the other labels are listed",
    "unprefixed_label": "type from the schedule key it is scheduled under, as the authors' grounding trusts the "
                        "schedule's declared type",
    "type_conflict": "type from the schedule key, as the authors' grounding does (the label's prefix is ignored)",
    "name_in_several_types": "one entity per type (the authors ground each (name, type) target separately)",
    "never_scheduled": "kept in the registry with the label's type (the canonical loader warns: never scheduled)",
    "never_scheduled_untyped": "left out: never scheduled and its label carries no type, so no type can be given",
    "name_map_only": "not imported: a _name_map label with no description whose name no shot schedules",
    "duplicate_in_shot": "scheduled once in that shot",
    "scene_start_not_cut": "cut set true: the authors' evaluator never treats a scene's first shot as a continuation",
    "schedule_key_without_shot": "ignored: no scene/shot of the episode has this key",
    "shot_without_schedule": "no entities scheduled in that shot (the authors' evaluator reads it as empty)",
    "story_name_differs": "the file name is the episode id (the split lists file names)",
    "count_field_differs": "the scenes as listed are imported; _num_scenes / _num_shots are not used",
    "prompt_differs_from_first_appearances": "the official prompt is kept as the shot's `prompt` (what generators "
                                             "were given); the schedule is imported as it is",
    "not_in_split": "tier from the shot count (easy <= 14, medium <= 30, hard above)",
    "split_id_without_script": "nothing to import: the split names an episode the release has no script for",
    "split_id_in_several_tiers": "the first tier listing it (easy, medium, hard order) is used",
    "tier_differs_from_shot_count": "the split's tier is kept (the canonical loader warns)",
}


class OfficialError(ValueError):
    """An official episode (or release folder) that cannot be imported; the message names it and the problem."""


def _quirk(kind: str, episode_id: str, subject: str, mentions: int = 1, **detail) -> dict[str, Any]:
    return {"quirk": kind, "episode_id": episode_id, "subject": subject, "mentions": mentions,
            "resolution": RESOLUTIONS[kind], **detail}


def _label_type(label: str) -> str | None:
    head = label.split(" ", 1)[0]
    return LABEL_TYPES.get(head) if label[len(head):].strip().isdigit() else None


def _header_names(prompt: str) -> set[str]:
    """Names the official prompt describes in its header (``Name: description`` lines before the first blank
    line); an empty set for a prompt without one."""
    if "\n\n" not in prompt:
        return set()
    return {line.split(":", 1)[0].strip() for line in prompt.split("\n\n", 1)[0].splitlines() if ":" in line}


def _text_list(scene: dict, key: str, where: str, sn: Any, n: int | None = None) -> list:
    v = scene.get(key)
    if not isinstance(v, list):
        raise OfficialError(f"{where}: scene {sn!r} '{key}' must be a list, got {type(v).__name__}")
    if n is not None and len(v) != n:
        raise OfficialError(f"{where}: scene {sn!r} has {n} video_prompts but {len(v)} '{key}' entries")
    return v


def convert_episode(raw: Any, episode_id: str, tier: str | None = None) -> tuple[dict[str, Any], list[dict]]:
    """One official episode object -> (canonical episode JSON, quirks). Raises OfficialError naming the episode and
    what is wrong when it cannot be imported at all (a structural problem); every other oddity is a quirk record."""
    where = f"episode {episode_id!r}"
    if not isinstance(raw, dict):
        raise OfficialError(f"{where}: an official episode is a JSON object, got {type(raw).__name__}")
    quirks: list[dict] = []
    if raw.get("story_name") not in (None, episode_id):
        quirks.append(_quirk("story_name_differs", episode_id, str(raw.get("story_name"))))
    scenes = raw.get("scenes")
    if not isinstance(scenes, list) or not scenes:
        raise OfficialError(f"{where}: 'scenes' must be a non-empty list")
    schedule = raw.get("entity_schedule", {})
    descriptions = raw.get("entity_descriptions", {})
    if not isinstance(schedule, dict) or not isinstance(descriptions, dict):
        raise OfficialError(f"{where}: 'entity_schedule' and 'entity_descriptions' must be objects")

    # ---- shots in the release's order: scenes as listed, shots in a scene by position (the authors' keys S:K)
    shots: list[dict[str, Any]] = []
    seen_scenes: set[int] = set()
    for scene in scenes:
        sn = scene.get("scene_num") if isinstance(scene, dict) else None
        if type(sn) is not int or sn < 1:
            raise OfficialError(f"{where}: every scene needs a positive integer 'scene_num', got {sn!r}")
        if sn in seen_scenes:
            raise OfficialError(f"{where}: scene_num {sn} appears twice")
        seen_scenes.add(sn)
        prompts = _text_list(scene, "video_prompts", where, sn)
        if not prompts:
            raise OfficialError(f"{where}: scene {sn} has no video_prompts (no shots)")
        cuts = _text_list(scene, "cut", where, sn, len(prompts))
        actions = _text_list(scene, "action_descriptions", where, sn, len(prompts))
        for i, (prompt, cut, action) in enumerate(zip(prompts, cuts, actions)):
            if not isinstance(prompt, str) or not prompt.strip() or not isinstance(action, str):
                raise OfficialError(f"{where}: scene {sn} shot {i + 1}: the video prompt and action must be text "
                                    f"(the prompt non-empty)")
            if i == 0 and not cut:
                quirks.append(_quirk("scene_start_not_cut", episode_id, f"{sn}:1"))
            shots.append({"key": f"{sn}:{i + 1}", "scene": sn, "shot_in_scene": i + 1,
                          "cut": True if i == 0 else bool(cut), "action": action, "prompt": prompt})
    n_shots = len(shots)
    for field, n in (("_num_shots", n_shots), ("_num_scenes", len(scenes))):
        if field in raw and raw[field] != n:
            quirks.append(_quirk("count_field_differs", episode_id, field, stated=raw[field], found=n))

    # ---- the schedule, by name and declared type
    keys = {s["key"] for s in shots}
    for k in sorted(set(schedule) - keys):
        quirks.append(_quirk("schedule_key_without_shot", episode_id, k))
    scheduled: dict[tuple[str, str], list[int]] = {}   # (type, name) -> 1-based shot indices, first-seen order
    per_shot: list[list[tuple[str, str]]] = []
    for pos, s in enumerate(shots, start=1):
        entry = schedule.get(s["key"])
        if entry is None:
            quirks.append(_quirk("shot_without_schedule", episode_id, s["key"]))
            entry = {}
        if not isinstance(entry, dict):
            raise OfficialError(f"{where}: entity_schedule[{s['key']!r}] must be an object")
        here: list[tuple[str, str]] = []
        for skey, etype in SCHEDULE_TYPES.items():
            names = entry.get(skey, []) or []
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise OfficialError(f"{where}: entity_schedule[{s['key']!r}][{skey!r}] must be a list of names")
            for name, count in Counter(names).items():
                if count > 1:
                    quirks.append(_quirk("duplicate_in_shot", episode_id, name, count - 1, shot=s["key"]))
            for name in dict.fromkeys(names):
                here.append((etype, name))
                scheduled.setdefault((etype, name), []).append(pos)
        per_shot.append(here)

    # ---- the registry: descriptions by name
    by_name: dict[str, list[tuple[str, dict]]] = defaultdict(list)
    for label, info in descriptions.items():
        if not isinstance(info, dict) or not isinstance(info.get("name"), str) or not info["name"]:
            raise OfficialError(f"{where}: entity_descriptions[{label!r}] needs a non-empty 'name'")
        by_name[info["name"]].append((label, info))
    types_of_name: dict[str, list[str]] = defaultdict(list)
    for etype, name in scheduled:
        types_of_name[name].append(etype)
    for name, types in types_of_name.items():
        if len(types) > 1:
            quirks.append(_quirk("name_in_several_types", episode_id, name, types=sorted(types)))

    entities: list[dict[str, Any]] = []
    id_of: dict[tuple[str, str], str] = {}
    n_by_type: Counter = Counter()

    def add(etype: str, name: str, description: str, labels: list[str]) -> str:
        n_by_type[etype] += 1
        eid = f"{ID_PREFIX[etype]}{n_by_type[etype]}"
        entities.append({"id": eid, "type": etype, "name": name, "description": description,
                         "official_labels": labels})
        return eid

    # registry order first (the release's label order), then undescribed names in order of first appearance
    for name, entries in by_name.items():
        labels = [lbl for lbl, _ in entries]
        if len(entries) > 1:
            quirks.append(_quirk("duplicate_name", episode_id, name, len(entries), labels=labels))
        label, info = entries[-1]
        desc = info.get("description") if isinstance(info.get("description"), str) else ""
        desc = desc.strip() or name
        for lbl, _ in entries:
            if _label_type(lbl) is None:
                quirks.append(_quirk("unprefixed_label", episode_id, lbl))
        types = types_of_name.get(name, [])
        for etype in types:
            lt = {_label_type(lbl) for lbl in labels} - {None}
            if lt and etype not in lt:
                quirks.append(_quirk("type_conflict", episode_id, name, labels=labels, scheduled_as=etype))
            id_of[(etype, name)] = add(etype, name, desc, labels)
        if not types:
            lt = [t for t in (_label_type(lbl) for lbl in labels) if t]
            if lt:
                quirks.append(_quirk("never_scheduled", episode_id, name, labels=labels))
                add(lt[0], name, desc, labels)
            else:
                quirks.append(_quirk("never_scheduled_untyped", episode_id, name, labels=labels))
    for (etype, name), apps in scheduled.items():
        if (etype, name) not in id_of:
            quirks.append(_quirk("undescribed_name", episode_id, name, len(apps), type=etype))
            id_of[(etype, name)] = add(etype, name, name, [])
    name_map = raw.get("_name_map", {})
    if isinstance(name_map, dict):
        for label, name in name_map.items():
            if (label not in descriptions and isinstance(name, str) and name not in types_of_name
                    and name not in by_name):
                quirks.append(_quirk("name_map_only", episode_id, label, name=name))

    # ---- canonical shots, and where the official prompt does not describe the shot's first appearances
    seen: set[str] = set()
    known = set(by_name) | {n for _, n in scheduled}
    out_shots = []
    for pos, (s, here) in enumerate(zip(shots, per_shot), start=1):
        ids = [id_of[k] for k in here]
        first = {name for (_, name), i in zip(here, ids) if i not in seen}
        described = _header_names(s["prompt"]) & known
        if described != first:
            quirks.append(_quirk("prompt_differs_from_first_appearances", episode_id, s["key"],
                                 described_not_first=sorted(described - first),
                                 first_not_described=sorted(first - described)))
        seen.update(ids)
        out_shots.append({"index": pos, "cut": s["cut"], "entities": ids, "action": s["action"],
                          "prompt": s["prompt"], "scene": s["scene"], "shot_in_scene": s["shot_in_scene"]})
    if not entities:
        raise OfficialError(f"{where}: no entity is described or scheduled")
    canonical = {"episode_id": episode_id, "tier": tier or dataset.tier_for(n_shots),
                 "title": str(raw.get("story_name") or episode_id), "summary": str(raw.get("story_overview", "")),
                 "entities": entities, "shots": out_shots,
                 "source": {"release": "Catherine-R-He/EntityBench", "file": f"data/scripts/{episode_id}.json"}}
    return canonical, quirks


# ---------------------------------------------------------------- the release on disk

def find_release(path: str | Path) -> tuple[Path, Path | None]:
    """(scripts folder, split file or None) of a release checkout, its data/ folder or its scripts/ folder."""
    p = Path(path)
    for scripts in (p / "data" / "scripts", p / "scripts", p):
        if scripts.is_dir() and any(scripts.glob("*.json")):
            split = scripts.parent / "splits" / SPLIT_FILE
            return scripts, (split if split.is_file() else None)
    raise OfficialError(f"{p}: no EntityBench release here (expected data/scripts/<episode_id>.json under it; "
                        f"`fetch` or clone github.com/Catherine-R-He/EntityBench and pass its folder)")


def read_split(raw: Any, source: str = SPLIT_FILE) -> tuple[dict[str, str], list[dict]]:
    """Episode id -> tier from the authors' split object ({easy, medium, hard, all}: lists of ids)."""
    if not isinstance(raw, dict):
        raise OfficialError(f"{source}: a split is an object of tier -> list of episode ids")
    tiers: dict[str, str] = {}
    quirks: list[dict] = []
    for tier in dataset.TIERS:
        ids = raw.get(tier, [])
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise OfficialError(f"{source}: {tier!r} must be a list of episode ids")
        for eid in ids:
            if eid in tiers:
                quirks.append(_quirk("split_id_in_several_tiers", eid, eid, tiers=[tiers[eid], tier]))
            else:
                tiers[eid] = tier
    return tiers, quirks


def _write_json(path: Path, obj: Any) -> None:
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(json.dumps(obj, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def import_release(path: str | Path, out_root: str | Path) -> dict[str, Any]:
    """Convert every script of the release at ``path`` into ``<out_root>/entitybench/episodes/``; write tiers.json and
    import_report.json beside it. An episode that cannot be imported is one error in the report (named, with the
    problem); the others are written. Returns the report."""
    scripts, split_path = find_release(path)
    tiers: dict[str, str] = {}
    quirks: list[dict] = []
    if split_path is not None:
        try:
            split_raw = json.loads(split_path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
            raise OfficialError(f"{split_path}: cannot read the split ({e})") from None
        tiers, quirks = read_split(split_raw, str(split_path))
    files = sorted(scripts.glob("*.json"))
    have = {f.stem for f in files}
    for eid in tiers:
        if eid not in have:
            quirks.append(_quirk("split_id_without_script", eid, eid))
    out_dir = Path(out_root) / "entitybench"
    ep_dir = out_dir / "episodes"
    ep_dir.mkdir(parents=True, exist_ok=True)
    errors: list[str] = []
    imported: dict[str, str] = {}
    n_shots = 0
    episodes: list[dataset.Episode] = []
    for f in files:
        eid = f.stem
        try:
            validate_key(eid, "episode_id")
            raw = json.loads(f.read_text(encoding="utf-8-sig"))
            if tiers and eid not in tiers:
                quirks.append(_quirk("not_in_split", eid, eid))
            canonical, q = convert_episode(raw, eid, tiers.get(eid))
            with warnings.catch_warnings(record=True):  # its notes are read back from the episode below
                warnings.simplefilter("always")
                ep = dataset.parse_episode(canonical, f.name)   # what the platform will read, checked before writing
        except (OSError, UnicodeDecodeError, json.JSONDecodeError, OfficialError, dataset.EpisodeError,
                BadName) as e:
            errors.append(f"{f.name}: {e}")
            continue
        quirks += q
        if any(n.startswith("tier ") for n in ep.warnings):
            quirks.append(_quirk("tier_differs_from_shot_count", eid, ep.tier, n_shots=len(ep.shots)))
        _write_json(ep_dir / f.name, canonical)
        imported[eid] = ep.tier
        n_shots += len(ep.shots)
        episodes.append(ep)
    by_tier = {t: sorted(e for e, tt in imported.items() if tt == t) for t in dataset.TIERS}
    _write_json(out_dir / "tiers.json", {**by_tier, "source": str(split_path) if split_path else None})
    others = sorted({p.stem for p in ep_dir.glob("*.json")} - set(imported))
    report = {
        "release": str(Path(path)), "scripts": str(scripts), "split": str(split_path) if split_path else None,
        "out": str(ep_dir), "scripts_found": len(files), "episodes_imported": len(imported), "shots": n_shots,
        "tiers": {t: len(v) for t, v in by_tier.items()}, "errors": errors,
        "quirks": summarise_quirks(quirks), "quirk_records": quirks,
        "other_episodes_in_folder": others,
        "table3": table3(episodes), "table3_vs_paper": compare_table3(table3(episodes)) if episodes else [],
    }
    _write_json(out_dir / "import_report.json", report)
    return report


def summarise_quirks(quirks: list[dict]) -> dict[str, dict[str, Any]]:
    """Per quirk kind: records, mentions (shot mentions where that is what a record counts), episodes, resolution."""
    out: dict[str, dict[str, Any]] = {}
    for q in quirks:
        s = out.setdefault(q["quirk"], {"records": 0, "mentions": 0, "episodes": set(),
                                        "resolution": q["resolution"]})
        s["records"] += 1
        s["mentions"] += q["mentions"]
        s["episodes"].add(q["episode_id"])
    return {k: {**v, "episodes": len(v["episodes"])} for k, v in sorted(out.items())}


# ---------------------------------------------------------------- the paper's Table 3

# Table 3 of the paper (mean, sd) per tier, and the abstract's maxima ("up to 50 shots, 13 cross-shot characters,
# 8 cross-shot locations, 22 cross-shot objects, recurrence gaps up to 48"). The "recurrence gap" rows are SHOT
# DISTANCES (k_j - k_i), not intervening shots as the caption says: measured on the release (spec, Decisions).
PAPER_TABLE3 = {
    "easy": {"episodes": 80, "shots": 873, "cross_shot_characters": (5.1, 1.4), "cross_shot_locations": (2.4, 0.8),
             "cross_shot_objects": (3.9, 2.1), "shot_distance": (2.1, 1.8), "episode_max_shot_distance": (8.0, 2.0)},
    "medium": {"episodes": 40, "shots": 618, "cross_shot_characters": (6.0, 1.8), "cross_shot_locations": (2.5, 0.7),
               "cross_shot_objects": (6.1, 2.5), "shot_distance": (2.2, 2.0),
               "episode_max_shot_distance": (9.9, 2.2)},
    "hard": {"episodes": 20, "shots": 1000, "cross_shot_characters": (8.9, 2.1), "cross_shot_locations": (4.9, 1.7),
             "cross_shot_objects": (13.3, 4.5), "shot_distance": (3.4, 4.8), "episode_max_shot_distance": (33.5, 7.8)},
    "all": {"episodes": 140, "shots": 2491, "cross_shot_characters": (5.9, 2.1), "cross_shot_locations": (2.8, 1.3),
            "cross_shot_objects": (5.9, 4.2), "shot_distance": (2.7, 3.6), "episode_max_shot_distance": (12.2, 9.4),
            "scenes": 1146, "max_shots": 50, "max_cross_shot_characters": 13, "max_cross_shot_locations": 8,
            "max_cross_shot_objects": 22, "max_shot_distance": 48},
    # "62% of hard-tier shots are recurrence-only (no first-appearance description)"
    "hard_memory_only_percent": 62,
}


def _mean_sd(xs) -> tuple[float, float] | None:
    a = np.asarray(list(xs), dtype=float)
    return (float(a.mean()), float(a.std())) if a.size else None   # population sd, as dataset_stats


def table3(episodes: list[dataset.Episode]) -> list[dict[str, Any]]:
    """Table 3 per tier and overall from canonical episodes: cross-shot entities per type (scheduled in >= 2 shots)
    and shot distances k_j - k_i between consecutive appearances (pooled), the per-episode maximum, with the
    intervening count (distance - 1) beside them."""
    stats = [dataset.episode_statistics(e) for e in episodes]
    rows = []
    for tier in (*dataset.TIERS, "all"):
        part = [s for s in stats if tier == "all" or s["tier"] == tier]
        if not part:
            continue
        dist = [g + 1 for s in part for g in s["recurrence_gaps"]]
        ep_max = [max(s["recurrence_gaps"]) + 1 for s in part if s["recurrence_gaps"]]
        shots = sum(s["n_shots"] for s in part)
        row = {"tier": tier, "episodes": len(part), "shots": shots, "scenes": sum(s["scenes"] for s in part),
               "max_shots": max(s["n_shots"] for s in part),
               **{f"cross_shot_{t}s": _mean_sd(s[f"cross_shot_{t}s"] for s in part) for t in dataset.ENTITY_TYPES},
               **{f"max_cross_shot_{t}s": max(s[f"cross_shot_{t}s"] for s in part) for t in dataset.ENTITY_TYPES},
               "shot_distance": _mean_sd(dist), "episode_max_shot_distance": _mean_sd(ep_max),
               "max_shot_distance": max(dist) if dist else None,
               "recurrence_gap_intervening": _mean_sd(d - 1 for d in dist),
               "episode_max_recurrence_gap_intervening": _mean_sd(m - 1 for m in ep_max),
               "memory_only_rate": sum(s["memory_only_shots"] for s in part) / shots,
               # the paper's other reading of "memory-test shots": the given prompt describes no entity (no header)
               "prompt_without_descriptions_rate": (
                   sum(1 for e in episodes if tier in ("all", e.tier) for sh in e.shots
                       if sh.prompt is not None and not _header_names(sh.prompt)) / shots)}
        rows.append(row)
    return rows


def compare_table3(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ours beside the paper's, cell by cell; ``within_rounding``: equal at the paper's one decimal (|diff| <= .05),
    counts exactly, the memory-only share at whole percent."""
    out = []
    for row in rows:
        paper = PAPER_TABLE3.get(row["tier"], {})
        for key, ref in paper.items():
            ours = row.get(key)
            if isinstance(ref, tuple):
                if ours is None:
                    continue
                for part, r, o in (("mean", ref[0], ours[0]), ("sd", ref[1], ours[1])):
                    out.append({"tier": row["tier"], "statistic": f"{key}.{part}", "paper": r, "ours": round(o, 4),
                                "within_rounding": abs(o - r) <= 0.05 + 1e-9})
            else:
                out.append({"tier": row["tier"], "statistic": key, "paper": ref, "ours": ours,
                            "within_rounding": ours == ref})
        if row["tier"] == "hard":
            pct = 100 * row["memory_only_rate"]
            ref = PAPER_TABLE3["hard_memory_only_percent"]
            out.append({"tier": "hard", "statistic": "memory_only_percent", "paper": ref, "ours": round(pct, 2),
                        "within_rounding": abs(pct - ref) <= 0.5})
    return out


def report_lines(report: dict[str, Any]) -> list[str]:
    t = report["tiers"]
    lines = [f"imported {report['episodes_imported']} of {report['scripts_found']} episodes "
             f"({report['shots']:,} shots) into {report['out']}; tiers easy {t['easy']} / medium {t['medium']} / "
             f"hard {t['hard']}" + ("" if report["split"] else " (no split file: tiers from shot counts)")]
    for kind, q in report["quirks"].items():
        lines.append(f"quirk {kind}: {q['records']} records, {q['mentions']} mentions, {q['episodes']} episodes -> "
                     f"{q['resolution']}")
    misses = [c for c in report["table3_vs_paper"] if not c["within_rounding"]]
    cells = report["table3_vs_paper"]
    if cells:
        lines.append(f"Table 3: {len(cells) - len(misses)} of {len(cells)} cells equal the paper's within its "
                     f"rounding" + ("" if not misses else "; differing: " + ", ".join(
                         f"{c['tier']} {c['statistic']} {c['ours']} vs {c['paper']}" for c in misses)))
    if report["other_episodes_in_folder"]:
        lines.append(f"note: {len(report['other_episodes_in_folder'])} other episodes were already in "
                     f"{report['out']} and are left as they are")
    lines.append(f"report: {Path(report['out']).parent / 'import_report.json'}")
    return lines


def cli_import(path: str, out: str | None) -> int:
    """``bench import entitybench PATH [--out DATA_ROOT]``: 0 when every script imported, 1 when some failed (each
    named on stderr; the rest are written)."""
    import sys

    from bench_resources.paths import PROJECT_ROOT, default_data_root
    root = Path(out or default_data_root())
    if root.resolve() == (PROJECT_ROOT / "data").resolve():
        # the release has no licence: its files must never land in this repository's embedded data
        raise OfficialError(f"refusing to write the release into this repository's embedded data ({root}); pass "
                            f"--out DATA_ROOT or set BENCH_DATA_ROOT to your own data folder")
    report = import_release(path, root)
    for line in report_lines(report):
        print(line)
    for e in report["errors"]:
        print(f"error: {e}", file=sys.stderr)
    return 1 if report["errors"] else 0



# ------------------------------------------------------------------ official results in (bench import-results)
RESULTS_CODE = "Catherine-R-He/EntityBench eval/evaluate_benchmark.py"


def _rekey(name: str) -> str:
    # the authors' _episode_result_from_json: legacy vlm_* caches are their llm_* metrics
    return "llm_" + name[len("vlm_"):] if name.startswith("vlm_") else name


def _metric_value(v: Any) -> dict:
    """MetricValue.from_json restated: a bare number is a legacy value without provenance, None is no value."""
    if v is None:
        return {"value": None, "n_evaluated": None, "n_failed": None, "n_skipped": None}
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return {"value": float(v), "n_evaluated": None, "n_failed": None, "n_skipped": None}
    if not isinstance(v, dict):
        raise ValueError(f"not a MetricValue: {v!r}")
    return {"value": v.get("value"), "n_evaluated": v.get("n_evaluated", 0), "n_failed": v.get("n_failed", 0),
            "n_skipped": v.get("n_skipped", 0)}


def episode_result_rows(ep: dict, known: set[str]) -> list[dict]:
    """One authors' per-episode JSON (``_episode_result_to_json``) -> imported item rows; ``known``: our metric ids
    (EntityBench keeps the authors' ids, so a metric maps to itself when we have it)."""
    from bench_assets.core.imported_results import row
    eid = ep.get("episode_id")
    if not isinstance(eid, str) or not eid:
        raise ValueError("no episode_id")
    out = []
    for block in ("vbench_means", "metrics"):
        vals = ep.get(block) or {}
        if not isinstance(vals, dict):
            raise ValueError(f"{block} is not an object")
        for k, v in vals.items():
            k = _rekey(k)
            mv = _metric_value(v)
            out.append(row("item", k, mv["value"], item=eid, slice=ep.get("tier"),
                           metric_id=k if k in known else None, n_eval=mv["n_evaluated"], n_failed=mv["n_failed"],
                           n_skipped=mv["n_skipped"], note=None if mv["value"] is not None else
                           "null in the official file (MetricValue: could not be computed)"))
    return out


def report_result_rows(report: dict, known: set[str]) -> list[dict]:
    """``report_<method>.json`` (aggregate_results) -> overall rows per tier slice ("all", easy, medium, hard)."""
    from bench_assets.core.imported_results import row
    out = []
    for tier, block in report.items():
        if tier.startswith("_") or not isinstance(block, dict):
            continue
        metrics = {k: v for k, v in block.items() if isinstance(v, dict) and k != "vbench"}
        metrics.update(block.get("vbench") or {})
        for k, s in metrics.items():
            k = _rekey(k)
            n = s.get("n_episodes_evaluated")
            total = s.get("n_episodes_total")
            out.append(row("overall", k, s.get("mean", s.get("value")), slice=tier,
                           metric_id=k if k in known else None, n_eval=n,
                           n_skipped=None if n is None or total is None else total - n,
                           note=None if s.get("mean") is not None else "no episode had a value (official report)"))
    return out


def read_results(path: str | Path, known: set[str]) -> tuple[str, list[dict], list[str], dict]:
    """A method's eval folder as the authors' evaluator writes it (``<episode_id>.json`` per episode,
    ``report_<method>.json``, ``run_manifest.json``), or one of those files. Returns (method, rows, problems,
    manifest). Files are chosen as their compare_methods._load_episodes chooses them (report_*, run_manifest*,
    _* skipped); an episode file that does not parse is a problem naming it, the others are read. Without a
    report, the overall rows are the authors' aggregate_results of the episodes read (official_export.report_json
    restates it)."""
    from bench_assets.core.imported_results import read_json_files
    from bench_assets.entitybench.official_export import report_json
    p = Path(path)
    docs, problems = read_json_files(p)
    rows, eps, report, manifest, method = [], [], None, {}, None
    for f, doc in docs:
        if f.name.startswith("report_"):
            report, method = doc, f.stem[len("report_"):]
            manifest = doc.get("_manifest") or manifest
        elif f.name.startswith("run_manifest"):
            manifest = doc
        elif f.name.startswith("_"):
            continue
        else:
            try:
                rows += episode_result_rows(doc, known)
                eps.append(doc)
            except (ValueError, AttributeError, TypeError) as e:
                problems.append(f"{f.name}: not an EntityBench episode result ({e})")
    if report is None and eps:
        def counted(v: Any) -> dict:
            mv = _metric_value(v)
            return {k: (x if k == "value" else int(x or 0)) for k, x in mv.items()}
        norm = [{"tier": e.get("tier"), "num_shots": int(e.get("num_shots") or 0),
                 "vbench_means": {k: counted(v) for k, v in (e.get("vbench_means") or {}).items()},
                 "metrics": {_rekey(k): counted(v) for k, v in (e.get("metrics") or {}).items()}} for e in eps]
        report = report_json(norm, {})
    if report is not None:
        rows += report_result_rows(report, known)
    method = method or manifest.get("method_name") or (p.name if p.is_dir() else p.parent.name)
    if not rows:
        raise ValueError(f"{p}: no EntityBench episode result or report read" +
                         (f" ({'; '.join(problems[:3])})" if problems else ""))
    return method, rows, problems, manifest


def protocol_comparable(info: dict, resources) -> tuple[bool, str]:
    """The authors' rule for an imported run: comparable with ours iff their ``manifest_comparable`` accepts its
    run manifest against the one this project writes for its own runs (entitybench/manifest.py)."""
    from bench_assets.entitybench.manifest import manifest_comparable, run_manifest
    if not isinstance(info, dict) or "config" not in info:
        return False, "no run manifest with the results (the authors' rule compares run_manifest.json files)"
    ours = run_manifest("this platform", resources["models"], resources.get("judge"))
    ok, diffs = manifest_comparable(info, ours)
    if ok:
        return True, "run manifests match under the authors' manifest_comparable"
    more = f"; +{len(diffs) - 4} more" if len(diffs) > 4 else ""
    return False, "run manifests differ under the authors' manifest_comparable: " + "; ".join(diffs[:4]) + more
