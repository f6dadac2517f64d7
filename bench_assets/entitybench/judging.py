"""EntityBench judge prompts, their JSON schemas, and the pure functions that turn crops / frames into requests
and answers into values.

Two prompt sets (``judge_prompts``, environment ``BENCH_ENTITYBENCH_JUDGE_PROMPTS``):
- ``paper`` (default): ours, written from the paper's appendix B;
- ``authors``: the texts of the authors' evaluator (``eval/evaluate_benchmark.py`` of Catherine-R-He/EntityBench),
  read at run time from a local clone whose path the user gives (``BENCH_ENTITYBENCH_AUTHORS_CODE``): the prompt
  f-strings and the criteria dicts are parsed with ``ast`` and rendered with the values the authors' code binds
  (nothing of theirs is stored in this project). Their answers carry their field names (``fidelity``,
  ``similarity`` / ``is_same``, ``consistency`` / ``all_consistent``, ``overall`` / ``action_depicted``).
Under ``authors`` the requests also go on the authors' wire (``AUTHORS_WIRE``: their message layout, JPEG images,
max_tokens, no response_format, their answer reading), through the judge's openai backend only.
``prompt_set_id()`` names the set in force (``authors@<sha256 of the parsed texts>/<wire id>``); it enters the
protocol digest, the manifest and the prompt version of every request, and core/automation.prompt_sets reads
``prompt_set_digest()``, so a change re-runs exactly the judge-using assets and answers of different sets (or
wires) are never comparable.

Versioned: changing a prompt's wording bumps its version, which changes every cache key that used it.
Criteria are scored 1-10 and divided by 10 (spec: "criteria 1-10 -> /10").
"""
from __future__ import annotations

import ast
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Sequence

import cv2
import numpy as np

from bench_resources.judge import JudgeRequest, Wire, jpeg_bytes, png_bytes

CRITERIA = {
    "character": ("face", "hair", "clothing", "build"),
    "object": ("shape", "color_texture", "proportions", "details"),
    "location": ("layout", "color_mood", "landmarks", "perspective"),
}
TYPE_PREFIX = {"character": "face", "object": "object", "location": "location"}   # intra_<prefix>_fidelity
LLM_PREFIX = {"character": "face", "object": "object", "location": "scene"}       # llm_<prefix>_*
ACTION_FIELDS = ("overall", "depicted", "subject_identity", "subject_action", "object_interaction", "motion_quality")

PROMPTS_ENV, AUTHORS_CODE_ENV = "BENCH_ENTITYBENCH_JUDGE_PROMPTS", "BENCH_ENTITYBENCH_AUTHORS_CODE"
PROMPT_SETS = ("paper", "authors")
AUTHORS_FILE = Path("eval") / "evaluate_benchmark.py"
AUTHORS_COMMIT = "3776439"   # the release the parser is written against (its shape, never its text)


class PromptSetError(ValueError):
    """The ``authors`` prompt set cannot be read: no clone at the given path, or a prompt the parser needs is not
    in its evaluate_benchmark.py (the message names which and where)."""


# (function in evaluate_benchmark.py, a name only that prompt's expression reads) for each template; the criteria
# dicts are module-level literals
_AUTHORS_TEMPLATES = {"identity": ("vlm_judge_entity", "entity_type"),
                      "location_set": ("vlm_judge_scene_set", "location_name"),
                      "fidelity": ("evaluate_intra_shot_alignment", "etype"),
                      "action": ("evaluate_intra_shot_alignment", "action_description")}
_AUTHORS_DICTS = ("_CROSS_SHOT_CRITERIA", "_INTRA_FIDELITY_CRITERIA", "_INTRA_ACTION_CRITERIA")
# what a template may contain: string pieces, names the caller binds, conditionals, len(...) and str.join
_SAFE = (ast.Expression, ast.JoinedStr, ast.FormattedValue, ast.Constant, ast.BinOp, ast.Add, ast.IfExp,
         ast.Compare, ast.Lt, ast.Gt, ast.LtE, ast.GtE, ast.Eq, ast.NotEq, ast.Name, ast.Load, ast.Call,
         ast.Attribute, ast.Subscript, ast.Sub)


def _check_template(node: ast.AST, where: str) -> None:
    for n in ast.walk(node):
        if not isinstance(n, _SAFE):
            raise PromptSetError(f"{where}: the prompt expression holds a {type(n).__name__}; only f-strings, "
                                 f"names, conditionals, len() and str.join are rendered")
        if isinstance(n, ast.Call) and not (
                (isinstance(n.func, ast.Name) and n.func.id == "len")
                or (isinstance(n.func, ast.Attribute) and n.func.attr == "join"
                    and isinstance(n.func.value, ast.Constant) and isinstance(n.func.value.value, str))):
            raise PromptSetError(f"{where}: the prompt expression calls {ast.unparse(n.func)}; only len() and "
                                 f"'<sep>'.join are rendered")
        if isinstance(n, ast.Attribute) and n.attr != "join":
            raise PromptSetError(f"{where}: the prompt expression reads the attribute {n.attr!r}")


@dataclass(frozen=True)
class AuthorsPrompts:
    """The authors' prompt templates (parsed expressions) and criteria dicts, from one evaluate_benchmark.py."""
    path: str
    digest: str
    templates: dict
    criteria: dict   # _CROSS_SHOT_CRITERIA, _INTRA_FIDELITY_CRITERIA, _INTRA_ACTION_CRITERIA

    @classmethod
    def load(cls, root: str | os.PathLike) -> "AuthorsPrompts":
        """Parse ``<root>/eval/evaluate_benchmark.py`` (``root`` may also be that file). One PromptSetError naming
        the path and every missing piece when something is not there."""
        base = Path(root).expanduser()
        path = base if base.is_file() else base / AUTHORS_FILE
        if not path.is_file():
            raise PromptSetError(f"judge_prompts=authors: {path} does not exist; set {AUTHORS_CODE_ENV} to a local "
                                 f"clone of github.com/Catherine-R-He/EntityBench (written against {AUTHORS_COMMIT})")
        source = path.read_text(encoding="utf-8")
        try:
            tree = ast.parse(source, filename=str(path))
        except SyntaxError as e:
            raise PromptSetError(f"judge_prompts=authors: {path} is not Python ({e.msg}, line {e.lineno})") from None
        dicts, funcs = {}, {}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                    and node.targets[0].id in _AUTHORS_DICTS:
                try:
                    dicts[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
            elif isinstance(node, ast.FunctionDef):
                funcs[node.name] = node
        templates, missing = {}, [d for d in _AUTHORS_DICTS if d not in dicts]
        for key, (fn, marker) in _AUTHORS_TEMPLATES.items():
            found = None
            for n in ast.walk(funcs[fn]) if fn in funcs else ():
                if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "prompt" for t in n.targets) \
                        and any(isinstance(x, ast.Name) and x.id == marker for x in ast.walk(n.value)):
                    found = n.value
                    break
            if found is None:
                missing.append(f"the {key} prompt (an assignment to 'prompt' reading '{marker}' in {fn}())")
                continue
            _check_template(found, f"{path}:{found.lineno} ({key})")
            templates[key] = ast.Expression(found)
        if missing:
            raise PromptSetError(f"judge_prompts=authors: {path} lacks " + "; ".join(missing))
        text = "\n".join([ast.unparse(templates[k]) for k in sorted(templates)]
                         + [repr(sorted((k, sorted(v.items())) for k, v in dicts.items()))])
        return cls(str(path), hashlib.sha256(text.encode()).hexdigest()[:12], templates, dicts)

    def render(self, key: str, **names: Any) -> str:
        code = compile(self.templates[key], f"<authors' {key} prompt>", "eval")
        try:
            return eval(code, {"__builtins__": {}, "len": len}, names)   # noqa: S307 - checked: f-strings only
        except NameError as e:
            raise PromptSetError(f"{self.path}: the {key} prompt reads a name this project does not bind ({e})") \
                from None


_LOADED: dict[tuple, AuthorsPrompts] = {}


def prompt_set_name() -> str:
    """The ``judge_prompts`` setting: paper (default) or authors."""
    name = os.environ.get(PROMPTS_ENV, "").strip() or "paper"
    if name not in PROMPT_SETS:
        raise PromptSetError(f"{PROMPTS_ENV}={name!r}: use one of {', '.join(PROMPT_SETS)}")
    return name


def authors_prompts() -> Optional[AuthorsPrompts]:
    """The authors' parsed prompts when ``judge_prompts`` is authors (parsed once per file version), else None."""
    if prompt_set_name() != "authors":
        return None
    root = os.environ.get(AUTHORS_CODE_ENV, "").strip()
    if not root:
        raise PromptSetError(f"{PROMPTS_ENV}=authors needs {AUTHORS_CODE_ENV}: the path of a local clone of "
                             f"github.com/Catherine-R-He/EntityBench")
    base = Path(root).expanduser()
    path = base if base.is_file() else base / AUTHORS_FILE
    key = (str(path), path.stat().st_mtime_ns if path.is_file() else None)
    if key not in _LOADED:
        _LOADED[key] = AuthorsPrompts.load(root)
    return _LOADED[key]


def prompt_set_id() -> str:
    """'paper' or 'authors@<digest of their parsed texts>/<their wire: name.digest>' (the protocol digest and the
    manifest record it): answers to the same texts sent on another wire are another protocol."""
    a = authors_prompts()
    return "paper" if a is None else f"authors@{a.digest}/{wire_id()}"


def wire_id() -> str:
    """The authors' wire by name and a digest of every field (a changed field is another protocol even unrenamed)."""
    fields = json.dumps(AUTHORS_WIRE.describe(), sort_keys=True)
    return f"{AUTHORS_WIRE.name}.{hashlib.sha256(fields.encode()).hexdigest()[:8]}"


def prompt_set_digest() -> str:
    """core/automation.prompt_sets reads this: this file's digest, plus the authors' texts when they are in force
    (a judge-using asset whose recorded value differs re-runs)."""
    own = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]
    a = authors_prompts()
    return own if a is None else f"{own}+authors@{a.digest}"


def _version(paper_version: str) -> str:
    return paper_version if authors_prompts() is None else prompt_set_id()


# The authors' judge client on the wire (evaluate_benchmark.py 3776439: _vlm_api_call, _encode_crop,
# _RotatingLLMClient.call through openai.AzureOpenAI; tests/parity/test_entitybench_wire.py compares the requests
# byte for byte): one user message, no system message, the prompt text first and then each image as a JPEG
# (PIL, quality 90) data URL, max_tokens = BENCHMARK_CONFIG["vlm_max_tokens"], no sampling parameters and no
# response_format; the answer is the first {...} in the reply's content (their regex), never re-asked. Sent only
# by the judge's openai backend (with azure_api_version for their Azure endpoint); the anthropic backend fails
# each question saying so. Its name is part of prompt_set_id, so the protocol digest changes with the wire.
AUTHORS_JPEG_QUALITY, AUTHORS_MAX_TOKENS = 90, 50000
AUTHORS_WIRE = Wire("entitybench-authors-v1", text_first=True, system_message=False, schema_in_text=False,
                    response_format=False, max_tokens=AUTHORS_MAX_TOKENS, sampling=False, image_mime="image/jpeg",
                    reader="first_object", reask=False)


def _request(prompt_id: str, paper_version: str, system: str, text: str, schema: dict,
             images: Sequence[np.ndarray]) -> JudgeRequest:
    """One request in the set in force: ours (PNG, the judge's own wire) or the authors' (JPEG q90, their wire)."""
    if authors_prompts() is None:
        return JudgeRequest(prompt_id, paper_version, system, text, schema, tuple(png_bytes(i) for i in images))
    return JudgeRequest(prompt_id, _version(paper_version), "", text, schema,
                        tuple(jpeg_bytes(i, AUTHORS_JPEG_QUALITY) for i in images), wire=AUTHORS_WIRE)


SYSTEM = ("You are a meticulous visual evaluator for a video-generation benchmark. Judge only what is visible. "
          "Answer by calling the record_answer tool with every required field.")
_SCORE = {"type": "integer", "minimum": 1, "maximum": 10}


def _schema(props: dict, required: Sequence[str]) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


def _criteria_text(criteria: dict, bullet: str = "- ") -> tuple[str, str]:
    """The authors' ``criteria_list`` and ``criteria_json`` from one of their criteria dicts."""
    return ("\n".join(f"{bullet}{k}: {v}" for k, v in criteria.items()),
            ", ".join(f'"{k}": N' for k in criteria.keys()))


def fidelity_request(entity_type: str, name: str, description: str, crop: np.ndarray) -> JudgeRequest:
    crit = CRITERIA[entity_type]
    a = authors_prompts()
    if a is not None:   # evaluate_intra_shot_alignment's fidelity prompt, its answer fields
        clist, cjson = _criteria_text(a.criteria["_INTRA_FIDELITY_CRITERIA"][entity_type])
        text = a.render("fidelity", etype=entity_type, ent_name=name, info={"description": description},
                        criteria_list=clist, criteria_json=cjson)
        props = {**{c: _SCORE for c in crit}, "fidelity": _SCORE, "reason": {"type": "string"}}
        return _request(f"entitybench.fidelity.{entity_type}", "v1", "", text, _schema(props, [*crit, "fidelity"]),
                        (crop,))
    what = {"character": "character", "object": "object", "location": "place"}[entity_type]
    text = (f"The image is a crop from a generated video that should show the {what} \"{name}\", described as:\n"
            f"\"{description}\"\n\nScore from 1 (contradicts the description) to 10 (matches it exactly) how well "
            f"the crop matches the description on each criterion: {', '.join(crit)}; then an overall score. "
            f"Do not reward image quality, only agreement with the description.")
    props = {"overall": _SCORE, **{c: _SCORE for c in crit}, "rationale": {"type": "string"}}
    return JudgeRequest(f"entitybench.fidelity.{entity_type}", "v1", SYSTEM, text,
                        _schema(props, ["overall", *crit]), (png_bytes(crop),))


def fidelity_values(answer: dict, entity_type: str) -> dict[str, float]:
    """{'overall': x, '<criterion>': y, ...} in [0.1, 1] (the authors' set answers 'fidelity' for 'overall')."""
    overall = answer["fidelity"] if "fidelity" in answer and "overall" not in answer else answer["overall"]
    return {"overall": overall / 10.0, **{k: answer[k] / 10.0 for k in CRITERIA[entity_type]}}


def action_grid(frames: Sequence[np.ndarray], boxes: Sequence[dict[str, tuple]], names: dict[str, str],
                rows: int = 2, cols: int = 3) -> np.ndarray:
    """Tile 6 frames 2x3 with each scheduled entity's box drawn in its own colour and labelled by name."""
    import supervision as sv  # here, not at module level: it costs ~1.8 s of every definitions import
    ids = sorted(names)
    palette = sv.ColorPalette.DEFAULT
    box_ann = sv.BoxAnnotator(color=palette, thickness=2, color_lookup=sv.ColorLookup.CLASS)
    label_ann = sv.LabelAnnotator(color=palette, text_scale=0.4, text_padding=2, color_lookup=sv.ColorLookup.CLASS)
    tiles = []
    for frame, fb in zip(frames, boxes):
        img = np.ascontiguousarray(frame[..., ::-1])  # supervision draws on BGR
        present = [e for e in ids if e in fb]
        if present:
            det = sv.Detections(xyxy=np.array([fb[e] for e in present], np.float32),
                                class_id=np.array([ids.index(e) for e in present]))
            img = box_ann.annotate(img, det)
            img = label_ann.annotate(img, det, labels=[names[e] for e in present])
        tiles.append(img[..., ::-1])
    while len(tiles) < rows * cols:
        tiles.append(np.zeros_like(tiles[0]))
    grid = np.concatenate([np.concatenate(tiles[r * cols:(r + 1) * cols], 1) for r in range(rows)], 0)
    return np.ascontiguousarray(grid)


# The authors' action grid (eval/evaluate_benchmark.py 3776439: _ENTITY_COLORS, _draw_labeled_bbox,
# _build_action_grid): every detection of each scheduled character / object drawn on the shot's grounding frames,
# a colour per entity in schedule order (characters, then objects), the frames tiled 3 per row in 360 x 240 cells
# on a grey canvas. The numbers are theirs; the drawing calls are PIL's, as theirs.
AUTHORS_COLOURS = ((255, 64, 64), (64, 192, 255), (64, 255, 96), (255, 192, 0), (224, 64, 224), (255, 128, 0),
                   (128, 255, 255), (255, 96, 160))


def schedule_colours(characters: Sequence[str], objects: Sequence[str]) -> dict[str, tuple]:
    """Each scheduled character, then object, its colour in schedule order (cycling after 8)."""
    names = [*characters, *objects]
    return {n: AUTHORS_COLOURS[i % len(AUTHORS_COLOURS)] for i, n in enumerate(names)}


def _labelled_box(frame: np.ndarray, box, label: str, colour: tuple, thickness: int = 3) -> np.ndarray:
    from PIL import Image, ImageDraw, ImageFont
    img = Image.fromarray(frame).convert("RGB")
    draw = ImageDraw.Draw(img)
    x1, y1, x2, y2 = [int(v) for v in box]
    for t in range(thickness):
        draw.rectangle([x1 - t, y1 - t, x2 + t, y2 + t], outline=colour)
    font = ImageFont.load_default()
    tw, th, pad = draw.textlength(label, font=font), 12, 2
    top = max(0, y1 - th - 2 * pad)
    draw.rectangle([x1, top, x1 + tw + 2 * pad, top + th + 2 * pad], fill=colour)
    draw.text((x1 + pad, top + pad), label, fill=(0, 0, 0), font=font)
    return np.array(img)


def authors_action_grid(frames: Sequence[np.ndarray], detections: Sequence[Sequence[tuple[str, tuple]]],
                        colours: dict[str, tuple], cols: int = 3, cell_w: int = 360, cell_h: int = 240,
                        gap: int = 8) -> np.ndarray:
    """``detections[i]``: (entity name, box) of every detection on frame i, drawn in order; the frames tiled."""
    from PIL import Image
    drawn = []
    for frame, dets in zip(frames, detections):
        out = np.ascontiguousarray(frame).copy()
        for name, box in dets:
            out = _labelled_box(out, box, name, colours[name])
        drawn.append(out)
    rows = (len(drawn) + cols - 1) // cols
    canvas = np.full((rows * cell_h + (rows + 1) * gap, cols * cell_w + (cols + 1) * gap, 3), 32, np.uint8)
    for i, fr in enumerate(drawn):
        r, c = divmod(i, cols)
        pil = Image.fromarray(fr).convert("RGB")
        pil.thumbnail((cell_w, cell_h), Image.LANCZOS)
        arr = np.array(pil)
        oy = gap + r * (cell_h + gap) + (cell_h - arr.shape[0]) // 2
        ox = gap + c * (cell_w + gap) + (cell_w - arr.shape[1]) // 2
        canvas[oy:oy + arr.shape[0], ox:ox + arr.shape[1]] = arr
    return canvas


def action_request(grid: np.ndarray, action: str, legend: dict[str, str], names_object: bool,
                   n_frames: int = 6) -> JudgeRequest:
    fields = [f for f in ACTION_FIELDS if names_object or f != "object_interaction"]
    a = authors_prompts()
    if a is not None:   # evaluate_intra_shot_alignment's action prompt, its answer fields
        crit = {k: v for k, v in a.criteria["_INTRA_ACTION_CRITERIA"].items()
                if names_object or k != "object_interaction"}
        text = a.render("action", annotated_frames=[None] * n_frames, action_description=action,
                        labels_used=", ".join(legend) or "(no entities labeled)",
                        criteria_lines=[f"- {k}: {v}" for k, v in crit.items()],
                        criteria_json=", ".join(f'"{k}": N' for k in crit))
        props = {**{k: _SCORE for k in crit}, "overall": _SCORE, "action_depicted": {"type": "boolean"},
                 "reason": {"type": "string"}}
        return _request("entitybench.action", "v1", "", text, _schema(props, [*crit, "overall", "action_depicted"]),
                        (grid,))
    legend_text = "; ".join(f"{name} = {desc}" for name, desc in legend.items()) or "no labelled entity"
    text = (f"The image tiles six frames of one generated video shot in time order (left to right, top to bottom). "
            f"Coloured boxes label the scheduled entities: {legend_text}.\n\nThe shot should show this action:\n"
            f"\"{action}\"\n\nScore 1-10: overall (does the shot depict the action correctly), subject_identity "
            f"(are the labelled boxes the right characters), subject_action (does the named subject perform the "
            f"verb), motion_quality (is the motion natural across frames)"
            + (", object_interaction (is the named object used as described)" if names_object else "")
            + "; and depicted: 1 if the action is depicted at all, else 0.")
    props = {f: _SCORE for f in fields if f != "depicted"}
    props["depicted"] = {"type": "integer", "enum": [0, 1]}
    props["rationale"] = {"type": "string"}
    return JudgeRequest("entitybench.action", "v1", SYSTEM, text, _schema(props, fields), (png_bytes(grid),))


def action_values(answer: dict) -> dict[str, Optional[float]]:
    out = {f: (answer[f] / 10.0 if answer.get(f) is not None else None) for f in ACTION_FIELDS if f != "depicted"}
    # the authors' set answers action_depicted (a boolean) where ours answers depicted (0/1)
    out["depicted"] = float(answer["depicted"] if "depicted" in answer else bool(answer["action_depicted"]))
    return out


def identity_request(entity_type: str, name: str, description: str, anchor: np.ndarray,
                     other: np.ndarray) -> JudgeRequest:
    crit = CRITERIA[entity_type]
    a = authors_prompts()
    if a is not None:   # vlm_judge_entity (the authors' pairwise judge of llm_face / llm_object), its answer fields
        cdict = a.criteria["_CROSS_SHOT_CRITERIA"]
        clist, cjson = _criteria_text(cdict.get(entity_type, cdict["object"]))
        text = a.render("identity", entity_type=entity_type, entity_name=name, description=description,
                        criteria_list=clist, criteria_json=cjson)
        props = {**{c: _SCORE for c in crit}, "similarity": _SCORE, "is_same": {"type": "boolean"},
                 "reason": {"type": "string"}}
        return _request(f"entitybench.identity.{entity_type}", "v1", "", text,
                        _schema(props, [*crit, "similarity", "is_same"]), (anchor, other))
    text = (f"Image 1 is the reference appearance of \"{name}\" ({description}) in a generated video; image 2 is "
            f"another shot's crop that should show the same {entity_type}. Ignore pose, lighting, background and "
            f"framing. Answer same = 1 if image 2 shows the same individual {entity_type} as image 1, else 0; sim = "
            f"how similar its identity is, from 0 to 1; and score 1-10 how consistent it is on {', '.join(crit)}.")
    props = {"same": {"type": "integer", "enum": [0, 1]}, "sim": {"type": "number", "minimum": 0, "maximum": 1},
             **{c: _SCORE for c in crit}, "rationale": {"type": "string"}}
    return JudgeRequest(f"entitybench.identity.{entity_type}", "v1", SYSTEM, text,
                        _schema(props, ["same", "sim", *crit]), (png_bytes(anchor), png_bytes(other)))


def evenly_sampled(n: int, k: int) -> list[int]:
    """The authors' ``_evenly_sampled_indices``: k indices spread over [0, n - 1], both ends kept; all when n <= k."""
    if k >= n:
        return list(range(n))
    if k <= 1:
        return [0]
    return [int(round(i * (n - 1) / (k - 1))) for i in range(k)]


LOCATION_SET_MAX_SHOTS, LOCATION_SET_FRAMES_PER_SHOT = 8, 2   # the authors' vlm_judge_scene_set defaults


def location_set_request(name: str, description: str, shot_frames: Sequence[Sequence[np.ndarray]],
                         shot_labels: Sequence[str]) -> tuple[JudgeRequest, list[int]]:
    """One question over every shot of a location, as the authors' ``vlm_judge_scene_set``: at most 8 shots evenly
    sampled, at most 2 frames each, listed "Image i: from shot <label>". Returns the request and the indices of
    the shots it sent. Answer: consistency and the four criteria 1-10, all_consistent, outlier_indices."""
    if len(shot_frames) != len(shot_labels) or len(shot_frames) < 2:
        raise ValueError(f"location {name!r}: a set question needs >= 2 shots with one label each "
                         f"({len(shot_frames)} shots, {len(shot_labels)} labels)")
    keep = evenly_sampled(len(shot_frames), LOCATION_SET_MAX_SHOTS)
    images, lines = [], []
    for j in keep:
        for f in list(shot_frames[j])[:LOCATION_SET_FRAMES_PER_SHOT]:
            images.append(f)
            lines.append(f"  Image {len(images)}: from shot {shot_labels[j]}")
    crit = CRITERIA["location"]
    props = {**{c: _SCORE for c in crit}, "consistency": _SCORE, "all_consistent": {"type": "boolean"},
             "outlier_indices": {"type": "array", "items": {"type": "integer"}}, "reason": {"type": "string"}}
    required = [*crit, "consistency", "all_consistent"]
    a = authors_prompts()
    if a is not None:
        text = a.render("location_set", n_shots=len(shot_frames), n_sent=len(images), max_shots=LOCATION_SET_MAX_SHOTS,
                        sampled_shot_keys=[shot_labels[j] for j in keep], location_name=name,
                        description=description, image_listing="\n".join(lines))
        return _request("entitybench.location_set", "v1", "", text, _schema(props, required), images), keep
    text = (f"The images come from {len(keep)} shots of a generated video that should all show the location "
            f"\"{name}\" ({description}), in this order:\n" + "\n".join(lines) + "\n\nIgnore foreground people "
            f"and objects, and tolerate changes of camera angle, distance and zoom. Score 1-10 how consistent the "
            f"place is across the shots on {', '.join(crit)}, and overall (consistency); all_consistent = true if "
            f"every shot shows the same physical place; outlier_indices = the 1-based image numbers that differ.")
    return _request("entitybench.location_set", "v1", SYSTEM, text, _schema(props, required), images), keep


def location_set_values(answer: dict) -> dict[str, float]:
    """all_consistent (0/1), consistency and the criteria /10 (the authors' llm_scene_accuracy / mean_score /
    criteria per location)."""
    return {"all_consistent": float(bool(answer["all_consistent"])), "consistency": answer["consistency"] / 10.0,
            **{c: answer[c] / 10.0 for c in CRITERIA["location"]}}


def location_request(name: str, description: str, anchor_frames: Sequence[np.ndarray],
                     other_frames: Sequence[np.ndarray]) -> JudgeRequest:
    crit = CRITERIA["location"]
    text = (f"The first {len(anchor_frames)} image(s) come from one shot, the last {len(other_frames)} from another "
            f"shot of a generated video; both should show the location \"{name}\" ({description}). Ignore foreground "
            f"people and objects, and tolerate changes of camera angle, distance and zoom. First describe the place in "
            f"each shot (description_a, description_b), then judge: same = 1 if both show the same physical place, "
            f"sim = similarity from 0 to 1, and score 1-10 the consistency of {', '.join(crit)}.")
    props = {"description_a": {"type": "string"}, "description_b": {"type": "string"},
             "same": {"type": "integer", "enum": [0, 1]}, "sim": {"type": "number", "minimum": 0, "maximum": 1},
             **{c: _SCORE for c in crit}}
    return JudgeRequest("entitybench.location", "v1", SYSTEM, text,
                        _schema(props, ["description_a", "description_b", "same", "sim", *crit]),
                        tuple(png_bytes(f) for f in [*anchor_frames, *other_frames]))


def pair_values(answer: dict, entity_type: str) -> dict[str, float]:
    if "is_same" in answer and "same" not in answer:   # the authors' set: is_same (boolean), similarity 1-10
        return {"same": float(bool(answer["is_same"])), "sim": answer["similarity"] / 10.0,
                **{c: answer[c] / 10.0 for c in CRITERIA[entity_type]}}
    return {"same": float(answer["same"]), "sim": float(answer["sim"]),
            **{c: answer[c] / 10.0 for c in CRITERIA[entity_type]}}


def sharpest(frames: Sequence[np.ndarray], k: int = 2) -> list[int]:
    """Indices of the k sharpest frames (variance of the Laplacian), sharpest first."""
    lv = [cv2.Laplacian(cv2.cvtColor(f, cv2.COLOR_RGB2GRAY), cv2.CV_64F).var() for f in frames]
    return [int(i) for i in np.argsort(lv)[::-1][:k]]


GAP_BINS = ((1, 2), (3, 5), (6, 10), (11, 20), (21, 50))


def gap_bin(distance: int) -> Optional[str]:
    for lo, hi in GAP_BINS:
        if lo <= distance <= hi:
            return f"{lo}-{hi}"
    return None
