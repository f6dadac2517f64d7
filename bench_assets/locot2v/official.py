"""LoCoT2V-Bench's released prompt files -> the project's one-JSON-per-sample format (``bench import locot2v``).

The authors' repository (XqZeppelinhead0702/LoCoT2V-Bench) holds two releases, each one nested
``{theme: {sample_id: {...}}}`` file (../shared/spec/locot2v.md names the fields):
- the review-version draft ``locot2v_prompt_suite.json``, the paper we implement: imported in full (prompt, the
  source description as ``prompt_base``, the 7 HERD texts, the polarised HERD questions, the events, the human
  actions); its HERD dimension names are the paper's long ones ("Narrative Structure and Pacing", ...);
- the final ICML ``data/prompt.json``: imported as far as its fields map. Its 6 ``herd_expectations`` become
  ``herd_info`` (it has no Interpretive Depth), its ``scene_infos`` become events; its HERD questions carry no
  polarity, so the project's polarised questions are left to the judge (derived from ``herd_info``), and
  ``human_actions`` too. What has no place in the canonical format is kept under ``release`` in each sample file
  and named in the report, never dropped in silence.

Pure: dicts in, dicts and a report out; ``import_file`` writes the files. Every sample goes through the project's
own reader (``dataset.parse_sample``) before it is written; a sample that cannot be converted is one error naming
it and its theme, and every other sample is still written.
"""
from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from bench_assets.locot2v.constants import EVENT_FIELDS, HERD_DIMENSIONS, HERD_QUESTIONS_PER_DIMENSION
from bench_assets.locot2v.dataset import SampleError, parse_sample

DRAFT, FINAL = "draft", "final"
# the draft's HERD dimension names -> the paper's (and the project's) seven
DRAFT_HERD = {"Emotional Response": "Emotional Response", "Narrative Structure and Pacing": "Narrative Flow",
              "Characterization and Relationships": "Character Development", "Visual Style": "Visual Style",
              "Themes and Messages": "Themes", "Openness and Interpretive Depth": "Interpretive Depth",
              "Overall Evaluation": "Overall Impression"}
# the final release's six herd_expectations keys -> the project's names (no Interpretive Depth in the final)
FINAL_HERD = {"Emotional Response": "Emotional Response", "Narrative Flow": "Narrative Flow",
              "Character Development": "Character Development", "Visual Style": "Visual Style",
              "Themes Expression": "Themes", "Overall Impression": "Overall Impression"}
DRAFT_MAPPED = {"prompt": "prompt", "main_content": "prompt_base", "evaluation": "herd_info (7 dimensions renamed)",
                "herd_questions": "herd_questions (dimension renamed, q_pos -> polarity)",
                "events_info": "events (event, subject, setting, action, camera motion; the event's prompt kept)",
                "human_actions": "human_actions"}
DRAFT_KEPT = {"summary": "a shorter retelling of the source description; no metric of the paper reads it",
              "frame_num_ref": "frames of the source video", "duration_ref": "seconds of the source video"}
FINAL_MAPPED = {"prompt": "prompt", "source_description": "prompt_base",
                "herd_expectations": "herd_info (6 of the 7 dimensions: the final has no Interpretive Depth)",
                "scene_infos": "events (event = summary, subject = the scene's characters or else its background's "
                               "visual anchors, setting = background type, action = the characters' actions or "
                               "else the summary, camera motion = camera_movement; the scene's prompt kept)",
                "background_infos": "the events' setting and subject (through scene_infos.background_mapping)",
                "character_infos": "the events' subject ('<name> (<concept>)')"}
FINAL_KEPT = {"herd_questions": "questions without polarity: the polarised HERD questions are left to the judge "
                                "(derived from herd_info, then labelled positive/negative)",
              "purified_prompt": "the final suite's prompt for MLLM overall alignment; ours compares the "
                                 "description with prompt_base",
              "fga_questions": "the final suite's fine-grained alignment VQA, a metric the review-version paper "
                               "does not define",
              "character_infos": "attributes and SAM prompts of the final suite's character consistency",
              "frame_num_ref": "frames of the source video", "duration_ref": "seconds of the source video"}
FINAL_LEFT_TO_JUDGE = {"herd_questions": "no polarity in the release (HERD polarity left to the judge)",
                       "human_actions": "not in the release (scene character actions include non-human "
                                        "characters); derived from the prompt by the judge",
                       "herd_info['Interpretive Depth']": "not in the release's herd_expectations; no question of "
                                                           "that dimension unless the judge derives one"}
NOT_IN_EITHER = {"category": "the files give the theme only (the paper's Fig. 2 groups the 18 themes into 3 "
                             "categories without a table): left empty"}


class ReleaseError(ValueError):
    """The file as a whole is not a LoCoT2V release: one line naming the file and what is wrong."""


@dataclass
class ImportReport:
    source: str
    release: str
    themes: int = 0
    samples: int = 0
    written: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    quirks: dict[str, list[str]] = field(default_factory=dict)   # what was met -> the samples it was met in
    counts: Counter = field(default_factory=Counter)
    mapped: dict[str, str] = field(default_factory=dict)
    kept: dict[str, str] = field(default_factory=dict)            # release fields under ``release.fields``
    left_to_judge: dict[str, str] = field(default_factory=dict)
    out_dir: Optional[str] = None
    others_in_out_dir: list[str] = field(default_factory=list)
    pending: list[tuple[str, str]] = field(default_factory=list)  # the quirks of the sample being converted

    def quirk(self, what: str, sample: str) -> None:
        self.pending.append((what, sample))

    def keep_quirks(self, keep: bool) -> None:
        """A written sample's quirks count; a refused one's are dropped (its error says what stopped it)."""
        for what, sample in self.pending if keep else []:
            self.quirks.setdefault(what, []).append(sample)
        self.pending.clear()

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "release": self.release, "themes": self.themes, "samples": self.samples,
                "written": len(self.written), "refused": len(self.errors), "errors": self.errors,
                "quirks": {k: {"count": len(v), "samples": v} for k, v in sorted(self.quirks.items())},
                "counts": dict(sorted(self.counts.items())), "mapped": self.mapped, "kept_under_release": self.kept,
                "left_to_judge": self.left_to_judge, "not_in_the_release": NOT_IN_EITHER,
                "out_dir": self.out_dir, "other_samples_in_out_dir": self.others_in_out_dir}

    def lines(self) -> list[str]:
        c = self.counts
        out = [f"locot2v import of {self.source} ({self.release} release): {self.themes} themes, {self.samples} "
               f"samples, {len(self.written)} written" + (f" to {self.out_dir}" if self.out_dir else "")
               + f", {len(self.errors)} refused",
               f"  events {c['events']}, herd_info texts {c['herd_info']}, herd questions {c['herd_questions']} "
               f"(positive {c['polarity.positive']}, negative {c['polarity.negative']}), human actions "
               f"{c['human_actions']}" + (f", release HERD questions without polarity {c['unlabelled_questions']}"
                                          if c["unlabelled_questions"] else "")]
        for k, v in self.mapped.items():
            out.append(f"  mapped: {k} -> {v}")
        for k, v in self.kept.items():
            out.append(f"  kept under 'release' (not read by a metric): {k}: {v}")
        for k, v in self.left_to_judge.items():
            out.append(f"  left to the judge: {k}: {v}")
        for k, v in NOT_IN_EITHER.items():
            out.append(f"  not in the release: {k}: {v}")
        for k, v in sorted(self.quirks.items()):
            out.append(f"  quirk: {k}: {len(v)} sample{'s' if len(v) != 1 else ''} (e.g. {', '.join(v[:3])})")
        if self.others_in_out_dir:
            out.append(f"  note: {len(self.others_in_out_dir)} other samples already in {self.out_dir} (e.g. "
                       f"{', '.join(self.others_in_out_dir[:3])}) are evaluated beside the imported ones")
        out += [f"  error: {e}" for e in self.errors]
        return out


def release_kind(data: Any, source: str = "file") -> str:
    """'draft' or 'final' from the first sample's fields; ReleaseError when the file is neither."""
    if not isinstance(data, dict) or not data:
        raise ReleaseError(f"{source}: a LoCoT2V release is one {{theme: {{sample_id: {{...}}}}}} object")
    for theme, samples in data.items():
        if not isinstance(samples, dict):
            raise ReleaseError(f"{source}: theme {theme!r} must map sample ids to samples, got "
                               f"{type(samples).__name__}")
        for raw in samples.values():
            if isinstance(raw, dict):
                if {"events_info", "evaluation", "main_content"} & set(raw):
                    return DRAFT
                if {"scene_infos", "herd_expectations", "source_description"} & set(raw):
                    return FINAL
    raise ReleaseError(f"{source}: no sample has the draft's fields (main_content, evaluation, events_info) or the "
                       f"final's (source_description, herd_expectations, scene_infos)")


def _text(v: Any) -> str:
    return "" if v is None else str(v)


def _herd_info(raw: Any, names: dict[str, str], sid: str, report: ImportReport, field_name: str) -> dict[str, str]:
    if not isinstance(raw, dict):
        raise SampleError(f"'{field_name}' must be an object of HERD texts, got {type(raw).__name__}")
    out = {}
    for k, v in raw.items():
        dim = names.get(k) or (k if k in HERD_DIMENSIONS else None)
        if dim is None:
            raise SampleError(f"'{field_name}' has the unknown HERD dimension {k!r} (known: {sorted(names)})")
        if dim in out:
            raise SampleError(f"'{field_name}' names HERD dimension {dim!r} twice")
        out[dim] = _text(v)
    for d in HERD_DIMENSIONS:
        if d not in out:
            report.quirk(f"'{field_name}' lacks {d!r}", sid)
    return out


def _draft_questions(raw: Any, sid: str, report: ImportReport) -> list[dict]:
    if not isinstance(raw, dict):
        raise SampleError(f"'herd_questions' must map dimensions to question lists, got {type(raw).__name__}")
    out = []
    for k, qs in raw.items():
        dim = DRAFT_HERD.get(k) or (k if k in HERD_DIMENSIONS else None)
        if dim is None:
            raise SampleError(f"'herd_questions' has the unknown HERD dimension {k!r}")
        if not isinstance(qs, list):
            raise SampleError(f"'herd_questions' of {k!r} must be a list")
        if len(qs) != HERD_QUESTIONS_PER_DIMENSION:
            report.quirk(f"a HERD dimension with other than {HERD_QUESTIONS_PER_DIMENSION} questions", sid)
        for i, q in enumerate(qs, start=1):
            pol = q.get("q_pos") if isinstance(q, dict) else None
            if pol not in ("positive", "negative") or not str(q.get("question", "")).strip():
                raise SampleError(f"HERD question {i} of {k!r} needs a question and q_pos positive|negative, got "
                                  f"{q!r}"[:300])
            out.append({"dimension": dim, "question": str(q["question"]), "polarity": pol})
    if not any(q["polarity"] == "negative" for q in out) and out:
        report.quirk("every HERD question positive", sid)
    missing = [d for d in HERD_DIMENSIONS if not any(q["dimension"] == d for q in out)]
    if missing:
        report.quirk(f"HERD questions lack dimension(s) {missing}", sid)
    return out


def _draft_events(raw: Any, sid: str, report: ImportReport) -> list[dict]:
    if not isinstance(raw, list):
        raise SampleError(f"'events_info' must be a list, got {type(raw).__name__}")
    out = []
    for i, e in enumerate(raw, start=1):
        if not isinstance(e, dict):
            raise SampleError(f"event {i} must be an object")
        lacking = [f for f in ("event", *EVENT_FIELDS) if f not in e]
        if lacking:
            raise SampleError(f"event {i} lacks {lacking}")
        ev = {f: _text(e[f]) for f in ("event", *EVENT_FIELDS)}
        ev.update({k: v for k, v in e.items() if k not in ev})     # the event's prompt (and anything else) kept
        extra = sorted(set(e) - {"event", "prompt", *EVENT_FIELDS})
        if extra:
            report.quirk(f"event fields the import does not know, kept in the event: {extra}", sid)
        for f in EVENT_FIELDS:
            if not ev[f].strip():
                report.quirk(f"an event with an empty {f!r}", sid)
        out.append(ev)
    if not out:
        report.quirk("no event", sid)
    return out


def _actions(raw: Any, sid: str, report: ImportReport) -> list[dict]:
    if not isinstance(raw, list) or any(not isinstance(a, dict) or "subject" not in a or "action" not in a
                                        for a in raw):
        raise SampleError("'human_actions' must be a list of {subject, action} objects")
    if not raw:
        report.quirk("no human action (the human action metric is None for it)", sid)
    return [{"subject": _text(a["subject"]), "action": _text(a["action"])} for a in raw]


def convert_draft(theme: str, sid: str, raw: dict, report: ImportReport) -> dict:
    unknown = sorted(set(raw) - set(DRAFT_MAPPED) - set(DRAFT_KEPT))
    if unknown:
        report.quirk(f"fields the import does not know, kept under 'release': {unknown}", sid)
    if not _text(raw.get("main_content")).strip():
        report.quirk("no main_content: prompt_base is the prompt", sid)
    if "human_actions" not in raw:
        report.quirk("no human_actions: left to the judge", sid)
    sample = {"sample_id": sid, "theme": theme, "category": "", "prompt": _text(raw.get("prompt")),
              "prompt_base": _text(raw.get("main_content")) or _text(raw.get("prompt")),
              "herd_info": _herd_info(raw.get("evaluation", {}), DRAFT_HERD, sid, report, "evaluation"),
              "events": _draft_events(raw.get("events_info", []), sid, report),
              "human_actions": _actions(raw["human_actions"], sid, report) if "human_actions" in raw else None,
              "herd_questions": _draft_questions(raw.get("herd_questions", {}), sid, report)}
    sample["release"] = {"file": Path(report.source).name, "kind": DRAFT, "theme": theme,
                         "fields": {k: raw[k] for k in [*DRAFT_KEPT, *unknown] if k in raw}}
    return sample


def _final_events(raw: dict, sid: str, report: ImportReport) -> list[dict]:
    scenes = raw.get("scene_infos", [])
    if not isinstance(scenes, list):
        raise SampleError(f"'scene_infos' must be a list, got {type(scenes).__name__}")
    backgrounds = raw.get("background_infos") or {}
    chars = raw.get("character_infos") or {}
    if not isinstance(backgrounds, dict) or not isinstance(chars, dict):
        raise SampleError("'background_infos' and 'character_infos' must be objects")
    out = []
    for i, s in enumerate(scenes, start=1):
        if not isinstance(s, dict):
            raise SampleError(f"scene {i} must be an object")
        mapping = s.get("character_mapping") or {}
        if not isinstance(mapping, dict):
            raise SampleError(f"scene {i} 'character_mapping' must be an object")
        for name in mapping:
            if name not in chars:
                report.quirk("a scene character absent from character_infos", sid)
        bg_key = s.get("background_mapping")
        bg = backgrounds.get(bg_key) if isinstance(bg_key, str) else None
        if bg_key is not None and not isinstance(bg, dict):
            report.quirk("a scene background absent from background_infos (setting left empty)", sid)
        bg = bg if isinstance(bg, dict) else {}
        who = [f"{n} ({chars[n]['concept']})" if isinstance(chars.get(n), dict) and chars[n].get("concept") else n
               for n in mapping]
        acts = [_text(a) for n in mapping for a in (mapping[n] or [])]
        summary = _text(s.get("summary")) or _text(s.get("prompt"))
        anchors = ", ".join(_text(a) for a in bg.get("visual_anchors") or [])
        ev = {"event": summary, "subject": ", ".join(who) or anchors,
              "setting": _text(bg.get("type")), "action": "; ".join(acts) or summary,
              "camera motion": _text(s.get("camera_movement")), "prompt": _text(s.get("prompt"))}
        for f in EVENT_FIELDS:
            if not ev[f].strip():
                report.quirk(f"an event with an empty {f!r}", sid)
        out.append(ev)
    if not out:
        report.quirk("no scene_infos: events left to the judge", sid)
    return out


def _unlabelled(raw: Any) -> int:
    """How many questions a final-release herd_questions holds (lists, or character -> list for a dimension)."""
    if isinstance(raw, list):
        return len(raw)
    if isinstance(raw, dict):
        return sum(_unlabelled(v) for v in raw.values())
    return 0


def convert_final(theme: str, sid: str, raw: dict, report: ImportReport) -> dict:
    known = {*FINAL_MAPPED, *FINAL_KEPT}
    unknown = sorted(set(raw) - known)
    if unknown:
        report.quirk(f"fields the import does not know, kept under 'release': {unknown}", sid)
    if not _text(raw.get("source_description")).strip():
        report.quirk("no source_description: prompt_base is the prompt", sid)
    events = _final_events(raw, sid, report)
    sample = {"sample_id": sid, "theme": theme, "category": "", "prompt": _text(raw.get("prompt")),
              "prompt_base": _text(raw.get("source_description")) or _text(raw.get("prompt")),
              "herd_info": _herd_info(raw.get("herd_expectations", {}), FINAL_HERD, sid, report,
                                      "herd_expectations"),
              "events": events or None, "human_actions": None, "herd_questions": None}
    sample["release"] = {"file": Path(report.source).name, "kind": FINAL, "theme": theme,
                         "fields": {k: raw[k] for k in [*FINAL_KEPT, *unknown] if k in raw}}
    return sample


def convert(data: Any, source: str = "file", kind: Optional[str] = None) -> tuple[list[dict], ImportReport]:
    """(canonical samples, report) of one release file's parsed JSON. A sample that cannot be converted (or that
    the project's reader refuses) is an error naming it and its theme; a sample id met twice keeps the first."""
    kind = kind or release_kind(data, source)
    report = ImportReport(source, kind)
    report.mapped = dict(DRAFT_MAPPED if kind == DRAFT else FINAL_MAPPED)
    report.kept = dict(DRAFT_KEPT if kind == DRAFT else FINAL_KEPT)
    report.left_to_judge = {} if kind == DRAFT else dict(FINAL_LEFT_TO_JUDGE)
    seen: dict[str, str] = {}
    out = []
    for theme, samples in data.items():
        if not isinstance(samples, dict):
            report.errors.append(f"theme {theme!r}: must map sample ids to samples, got {type(samples).__name__}")
            continue
        report.themes += 1
        for sid, raw in samples.items():
            report.samples += 1
            where = f"sample {sid} (theme {theme})"
            if sid in seen:
                report.errors.append(f"{where}: the id is also a sample of theme {seen[sid]}; the first is kept")
                continue
            seen[sid] = theme
            try:
                if not isinstance(raw, dict):
                    raise SampleError(f"must be an object, got {type(raw).__name__}")
                sample = (convert_draft if kind == DRAFT else convert_final)(theme, sid, raw, report)
                parse_sample(sample, sid)           # the project's own reader: what is written loads
            except SampleError as e:
                report.keep_quirks(False)
                msg = str(e)
                report.errors.append(msg if msg.startswith(f"sample {sid}") else f"{where}: {msg}")
                continue
            report.keep_quirks(True)
            c = report.counts
            if kind == FINAL:
                c["unlabelled_questions"] += _unlabelled(raw.get("herd_questions"))
            c["events"] += len(sample["events"] or [])
            c["herd_info"] += len(sample["herd_info"])
            c["human_actions"] += len(sample["human_actions"] or [])
            c["herd_questions"] += len(sample["herd_questions"] or [])
            for q in sample["herd_questions"] or []:
                c[f"polarity.{q['polarity']}"] += 1
            out.append(sample)
    return out, report


def import_file(path: str | Path, data_root: str | Path) -> ImportReport:
    """Convert one release file and write ``<data_root>/locot2v/samples/<sample_id>.json`` for every sample that
    converts, and the report beside them (``<data_root>/locot2v/import_report_<file stem>.json``)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8-sig"))
    except OSError as e:
        raise ReleaseError(f"{path}: cannot be read ({e.strerror or e})") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise ReleaseError(f"{path}: not valid UTF-8 JSON ({e})") from None
    samples, report = convert(data, str(path))
    out_dir = Path(data_root) / "locot2v" / "samples"
    out_dir.mkdir(parents=True, exist_ok=True)
    report.out_dir = str(out_dir)
    ids = {s["sample_id"] for s in samples}
    report.others_in_out_dir = sorted(p.stem for p in out_dir.glob("*.json") if p.stem not in ids)
    for s in samples:
        target = out_dir / f"{s['sample_id']}.json"
        tmp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        tmp.write_text(json.dumps(s, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        tmp.replace(target)              # a crash never leaves half a sample file where the reader looks
        report.written.append(s["sample_id"])
    (out_dir.parent / f"import_report_{path.stem}.json").write_text(
        json.dumps(report.to_json(), ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return report


DRAFT_FILE, FINAL_FILE = "locot2v_prompt_suite.json", "data/prompt.json"


def release_file(path: str | Path) -> tuple[Path, Optional[str]]:
    """(the file to import, a note): a file as given; a checkout of the repository -> its draft (the paper the
    project implements), the final when only it is there. Both write the same sample ids, so one at a time."""
    path = Path(path)
    if path.is_file():
        return path, None
    if not path.is_dir():
        raise ReleaseError(f"{path}: no such file or folder")
    draft, final = path / DRAFT_FILE, path / FINAL_FILE
    if draft.is_file():
        return draft, (f"read the draft {DRAFT_FILE}" + (f"; the final is imported with `bench import locot2v "
                                                         f"{final}` (it writes the same sample ids)"
                                                         if final.is_file() else ""))
    if final.is_file():
        return final, f"read the final {FINAL_FILE} (no {DRAFT_FILE} in {path})"
    raise ReleaseError(f"{path}: holds neither {DRAFT_FILE} nor {FINAL_FILE}")


def cli_import(path: str, out: Optional[str]) -> int:
    """``bench import locot2v PATH [--out DATA_ROOT]``: prints the report; 0 when every sample was written, 1 when
    some were refused (each named). A file that is no release raises ReleaseError (the CLI's one error line)."""
    if out is None:
        from bench_resources.paths import BenchPaths
        out = str(BenchPaths().data_dir)
    src, note = release_file(path)
    report = import_file(src, out)
    for line in report.lines():
        print(line)
    if note:
        print(f"  note: {note}")
    return 1 if report.errors else 0


# ------------------------------------------------------------------ official results out and in (issue 35)
# Per metric {"overall_score": x, "sample_scores": {sample_id: x}}, as the issue names LoCoT2V-Bench's result
# format. The official code (XqZeppelinhead0702/LoCoT2V-Bench) could not be fetched here, so the scale is not
# checked against it: values are written and read on the board's 0-100 scale, and an imported file's scale is
# taken as published (its rows are never comparable with ours in any case). One file per metric, <metric>.json,
# named by our metric id, which is the paper's dimension name (metric_specs.py).
RESULTS_CODE = "XqZeppelinhead0702/LoCoT2V-Bench (per-metric overall_score / sample_scores)"
RESULT_KEYS = ("overall_score", "sample_scores")


def export_results(records: "Any", generator: str, overall: dict[str, Any]) -> dict[str, dict]:
    """``{<metric>.json: {"overall_score", "sample_scores"}}`` for one generator. ``records``: item rows (generator,
    item = sample id, metric_id, value); ``overall``: metric id -> the board's value (slice 'all'). A sample
    without a value is null (never 0); a metric without an overall value has overall_score null."""
    import math
    sub = records[records["generator"] == generator]
    if sub.empty:
        raise ValueError(f"no LoCoT2V sample rows for generator {generator!r}")

    def num(v: Any) -> Optional[float]:
        try:
            f = float(v)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(f) else f

    out = {}
    for mid, part in sub.groupby("metric_id", sort=True):
        out[f"{mid}.json"] = {"overall_score": num(overall.get(mid)),
                              "sample_scores": {str(s): num(v) for s, v in sorted(zip(part["item"], part["value"]))}}
    return out


def read_results(path: str | Path, known: set[str]) -> tuple[str, list[dict], list[str], dict]:
    """A folder of ``<metric>.json`` files (or one of them; or one file mapping metric -> {overall_score,
    sample_scores}) -> (method = the folder's name, imported rows, problems, info)."""
    from bench_assets.core.imported_results import read_json_files, row
    p = Path(path)
    docs, problems = read_json_files(p)
    blocks: dict[str, Any] = {}
    for f, d in docs:
        if isinstance(d, dict) and set(RESULT_KEYS) & set(d):
            blocks[f.stem] = d
        elif isinstance(d, dict) and d and all(isinstance(v, dict) and set(RESULT_KEYS) & set(v) for v in d.values()):
            blocks.update(d)
        else:
            problems.append(f"{f.name}: no overall_score / sample_scores")
    rows = []
    for metric, d in sorted(blocks.items()):
        mid = metric if metric in known else None
        scores = d.get("sample_scores") or {}
        if isinstance(scores, list):     # a list of {sample_id|id, score}: read, not guessed further
            scores = {str(s.get("sample_id", s.get("id"))): s.get("score") for s in scores if isinstance(s, dict)}
        if not isinstance(scores, dict):
            problems.append(f"{metric}: sample_scores is neither an object nor a list")
            scores = {}
        for sid, v in scores.items():
            rows.append(row("item", metric, v, item=str(sid), slice="all", metric_id=mid,
                            note=None if isinstance(v, (int, float)) else "null in the official file"))
        rows.append(row("overall", metric, d.get("overall_score"), slice="all", metric_id=mid,
                        n_eval=sum(1 for v in scores.values() if isinstance(v, (int, float)) and not isinstance(v, bool)),
                        note="overall_score as published (scale as the file has it)"))
    if not rows:
        raise ValueError(f"{p}: no LoCoT2V result values" + (f" ({'; '.join(problems[:3])})" if problems else ""))
    method = p.name if p.is_dir() else p.parent.name
    return method, rows, problems, {}
