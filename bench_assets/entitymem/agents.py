"""EntityMem's four agents (paper Section 4, Appendix C.2; prompts after Appendix E's descriptions, whose figures
the text version of the paper does not carry, so the wording here is ours and versioned in PROMPTS).

Each agent call is a JudgeRequest (bench_resources/judge.py: structured JSON answers, cached like judge answers,
any backend the judge speaks). ``Agents(backend="rules")`` answers the same questions with rules (the offline
stand-in): the rules read the same inputs plus, where the model would look at a picture, the mask statistics a
picture shows (foreground share, pieces). Every call, its answer and who answered are kept in ``calls``.
An agent the judge cannot answer is an error naming the agent, the entity or shot and the reason; nothing falls
back to the rules silently.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Optional

from bench_assets.entitymem import layout as L
from bench_resources.generation.offline import first_keyword
from bench_resources.judge import Judge, JudgeRequest

PROMPTS = {  # prompt id -> version: recorded in the manifest; bump when a prompt's text changes
    "entitymem_classify": "1", "entitymem_portrait_character": "1", "entitymem_portrait_object": "1",
    "entitymem_portrait_location": "1", "entitymem_select": "1", "entitymem_verify": "2", "entitymem_layout": "1"}
RULES_VERSION = "1"

SYSTEM = ("You are one agent of EntityMem, a pipeline that builds a memory bank of per-entity visual references "
          "before a multi-shot video is generated. Answer only with the JSON object the schema asks for.")

WEARABLE = ("jacket", "coat", "shirt", "t-shirt", "dress", "hat", "cap", "scarf", "glasses", "shoes", "boots",
            "uniform", "suit", "helmet", "necklace", "ring", "watch", "tie", "gloves", "backpack", "belt")
FIXTURE = ("table", "pew", "chair", "bench", "wall", "window", "door", "sign", "tree", "desk", "bed", "sofa",
           "shelf", "counter", "fountain", "statue", "altar", "map", "painting", "lamp", "fireplace")
STYLES = (("anime", "anime"), ("cartoon", "cartoon"), ("animated", "3D animated"), ("pixar", "3D animated"),
          ("pokemon", "anime"), ("comic", "comic book"), ("black-and-white", "black-and-white photograph"))


class AgentError(RuntimeError):
    pass


def infer_style(overview: str) -> str:
    return first_keyword(overview, STYLES, "photorealistic")


CLASSIFY_SCHEMA = {"type": "object", "required": ["needs_reference", "attach_to", "reason"], "properties": {
    "needs_reference": {"type": "boolean"}, "attach_to": {"type": "string", "enum": ["none", "character", "location"]},
    "reason": {"type": "string"}}}
PROMPT_SCHEMA = {"type": "object", "required": ["style", "prompt"], "properties": {
    "style": {"type": "string"}, "prompt": {"type": "string"}}}
SELECT_SCHEMA = {"type": "object", "required": ["best", "reason"], "properties": {
    "best": {"type": "integer"}, "reason": {"type": "string"}}}
VERIFY_SCHEMA = {"type": "object", "required": ["pass", "failure", "reason"], "properties": {
    "pass": {"type": "boolean"}, "failure": {"type": "string", "enum": [
        "none", "wrong_characteristics", "missing_body_region", "transparent_clothing", "background_left"]},
    "reason": {"type": "string"}}}
LAYOUT_SCHEMA = {"type": "object", "required": ["camera_angle", "pan", "keyframes"], "properties": {
    "camera_angle": {"type": "string", "enum": list(L.ANGLES)},
    "pan": {"type": "string", "enum": ["none", "left", "right"]},
    "reasoning": {"type": "string"},
    "keyframes": {"type": "array", "items": {"type": "object", "required": ["description", "entities"], "properties": {
        "description": {"type": "string"},
        "entities": {"type": "array", "items": {"type": "object", "required": ["name", "position"], "properties": {
            "name": {"type": "string"}, "position": {"type": "string", "enum": list(L.GRID)}}}}}}}}}


def classify_request(name: str, description: str, overview: str) -> JudgeRequest:
    text = (f"Story overview: {overview}\n\nObject: {name}\nDescription: {description}\n\n"
            "Decide whether this object needs its own pre-generated visual reference in the memory bank. Mobile "
            "props that must look the same across shots (creatures, vehicles, artifacts carried around) do. "
            "Wearable items (clothes, hats, glasses, bags) are drawn as part of the character who wears them: "
            "attach_to 'character'. Scene fixtures (furniture, walls, trees, signs) are part of the location's "
            "background: attach_to 'location'. A standalone reference has attach_to 'none'.")
    return JudgeRequest("entitymem_classify", PROMPTS["entitymem_classify"], SYSTEM, text, CLASSIFY_SCHEMA,
                        params={"name": name, "description": description})


def portrait_request(etype: str, name: str, description: str, context: str, overview: str,
                     extras: list[str]) -> JudgeRequest:
    parts = (f"Story overview (infer the visual style from it): {overview}\n\nEntity: {name}\nDescription: "
             f"{description}\nFirst appearance: {context}\n")
    if extras:
        parts += "Also drawn on it (parts of this entity's reference): " + "; ".join(extras) + "\n"
    if etype == "character":
        task = ("Write one text-to-image prompt for a full-body portrait of this single character, front view, "
                "standing, whole body in frame, keeping every visual cue of the description, on a plain solid green "
                "chroma-key background (no floor, no shadow, no other object), so a segmentation model can cut it "
                "out. Say 'green chroma-key background' literally.")
    elif etype == "object":
        task = ("Write one text-to-image prompt for a square image of this single object alone, whole object in "
                "frame, keeping every visual cue of the description, on a plain solid green chroma-key background. "
                "Say 'green chroma-key background' literally.")
    else:
        task = ("Write one text-to-image prompt for an ultra-wide 3:1 panorama (a wide establishing shot) of this "
                "location with no people in it; it will be cropped into left, centre and right views, so the "
                "scene must continue across its whole width.")
    pid = f"entitymem_portrait_{etype}"
    return JudgeRequest(pid, PROMPTS[pid], SYSTEM, parts + "\n" + task, PROMPT_SCHEMA,
                        params={"name": name, "description": description, "context": context, "extras": extras})


def select_request(etype: str, name: str, description: str, n: int, grid_png: bytes) -> JudgeRequest:
    text = (f"The image shows {n} segmented candidates for the {etype.upper()} PORTRAIT of {name} ({description}), "
            f"side by side, numbered 1 to {n} from left to right, on a checkered background that makes mask errors "
            "visible. Pick the best one for segmentation quality (no holes, no leftover background, nothing cut "
            "off), composition and body proportions. 'best' is its number.")
    return JudgeRequest("entitymem_select", PROMPTS["entitymem_select"], SYSTEM, text, SELECT_SCHEMA,
                        images=[grid_png], params={"name": name, "n": n})


def measured(stats: dict) -> str:
    """The mask measurements the Verification Agent is told (the checkered picture hides a key-coloured rim)."""
    bk = stats["border_key"]
    return (f"Measured on the mask: {stats['foreground']:.0%} of the image is foreground, in {stats['components']} "
            f"piece(s), the largest holding {stats['largest_component']:.0%} of it; "
            + (f"{bk:.0%} of the cut-out's outline still has the key colour; " if bk is not None else "")
            + f"{stats['frame_opaque']:.0%} of the image frame is opaque"
            + ("" if stats["key_found"] else f"; no {stats['key']['requested']} key was found in the "
               "image's border") + ".")


def verify_request(etype: str, name: str, description: str, chroma: str, png: bytes,
                   stats: Optional[dict] = None) -> JudgeRequest:
    text = (f"This is the segmented {etype} reference of {name} ({description}), cut out from a {chroma} "
            "chroma-key background and shown on a checkered background. Check it before it enters the memory "
            "bank: are the described characteristics present and correct; is any body region missing; is clothing "
            "see-through where the key colour was removed; is background left around it? pass is false for any of "
            "these, with the failure kind.")
    if stats is not None:
        text += "\n" + measured(stats)
    return JudgeRequest("entitymem_verify", PROMPTS["entitymem_verify"], SYSTEM, text, VERIFY_SCHEMA,
                        images=[png], params={"name": name, "chroma": chroma})


def layout_request(shot: int, action: str, characters: list[str], objects: list[str], location: Optional[str],
                   prev: Optional[dict], tr: dict) -> JudgeRequest:
    prev_block = ""
    if prev is not None:
        prev_block = (f"\nPrevious shot (this shot continues it): camera angle {prev['camera_angle']}; characters at "
                      + ", ".join(f"{n} {p}" for n, p in prev["positions"].items())
                      + f"; last keyframe: {prev['description']}\nRetained: {tr['retained']}; entering: "
                      f"{tr['entering']}; leaving: {tr['leaving']}\n")
    text = (f"Shot {shot} action: {action}\nScheduled characters: {characters}\nScheduled objects: {objects}\n"
            f"Location: {location}\n{prev_block}\n"
            f"Plan one or more keyframes. Positions are cells of a 7-cell horizontal grid: {', '.join(L.GRID)}. "
            "Use one keyframe for a static shot; when the action changes who is where (someone enters or leaves), "
            "give the keyframes in order. For a continuation, keep retained characters where they were unless the "
            "camera pans: if the camera pans right to make room, retained characters shift left (and the other way "
            "round); choose the camera angle (left / center / right crop of the location panorama) the pan leads "
            "to. For a hard cut, start from the center angle and place characters so they do not overlap. Every "
            "scheduled character appears in the last keyframe.")
    return JudgeRequest("entitymem_layout", PROMPTS["entitymem_layout"], SYSTEM, text, LAYOUT_SCHEMA,
                        params={"shot": shot, "characters": characters, "objects": objects, "prev": prev})


# ------------------------------------------------------------------------------------------------ rules

def rule_classify(name: str, description: str) -> dict:
    words = set(re.findall(r"[a-z-]+", f"{name} {description}".lower()))
    if words & set(WEARABLE):
        return {"needs_reference": False, "attach_to": "character", "reason": "wearable: part of its wearer"}
    head = re.findall(r"[a-z-]+", name.lower())
    if (words & set(FIXTURE)) and (set(head) & set(FIXTURE) or not head):
        return {"needs_reference": False, "attach_to": "location", "reason": "fixture: part of the location"}
    return {"needs_reference": True, "attach_to": "none", "reason": "mobile prop: standalone reference"}


def rule_portrait(etype: str, name: str, description: str, style: str, extras: list[str]) -> dict:
    extra = (" with " + ", ".join(extras)) if extras else ""
    if etype == "character":
        prompt = (f"{style} full-body portrait of {name}: {description}{extra}. Single character, front view, "
                  f"standing, whole body visible, green chroma-key background")
    elif etype == "object":
        prompt = f"{style} square object portrait of {description}{extra}, alone, whole object, green chroma-key background"
    else:
        prompt = f"{style} ultra-wide panorama, establishing shot of {description}{extra}, no people"
    return {"style": style, "prompt": prompt}


def rule_select(stats: list[dict]) -> dict:
    """The candidate whose mask is one piece and neither tiny nor the whole image, with the least backdrop left on
    its outline and frame (1-based)."""
    def score(s: dict) -> float:
        fg = s["foreground"]
        # border_key is None only without an outline (an empty mask), which largest_component 0 already sinks
        kept = max(s["border_key"] if s["border_key"] is not None else 0.0, s["frame_opaque"])
        return (s["largest_component"] * (1.0 if 0.05 <= fg <= 0.8 else 0.5) * (1.0 - kept)
                - 0.01 * max(0, s["components"] - 1))
    best = max(range(len(stats)), key=lambda i: (score(stats[i]), -i))
    return {"best": best + 1, "reason": f"mask score {score(stats[best]):.3f} (largest piece "
                                        f"{stats[best]['largest_component']:.2f}, foreground "
                                        f"{stats[best]['foreground']:.2f})"}


# the border check: a clean cut-out's outline is the subject's colours and its frame is transparent (a portrait
# cropped at the feet leaves a sliver); a cut-out that kept half its background has about half of both
BORDER_KEY_MAX = 0.25
FRAME_OPAQUE_MAX = 0.3


def rule_verify(stats: dict) -> dict:
    """The offline Verification Agent on ``segmentation.cutout_stats`` (the picture's measurements)."""
    if not stats["key_found"]:
        return {"pass": False, "failure": "background_left",
                "reason": f"no {stats['key']['requested']} key in the image's border "
                          f"({stats['key']['ring_share']:.0%} of it): nothing was keyed"}
    if stats["foreground"] < 0.03:
        return {"pass": False, "failure": "missing_body_region", "reason": "almost nothing left after keying"}
    if stats["foreground"] > 0.9:
        return {"pass": False, "failure": "background_left", "reason": "the key did not remove the background"}
    if stats["border_key"] is not None and stats["border_key"] > BORDER_KEY_MAX:
        return {"pass": False, "failure": "background_left",
                "reason": f"{stats['border_key']:.0%} of the cut-out's outline has the key colour: background kept"}
    if stats["frame_opaque"] > FRAME_OPAQUE_MAX:
        return {"pass": False, "failure": "background_left",
                "reason": f"{stats['frame_opaque']:.0%} of the image frame is opaque: background kept"}
    if stats["largest_component"] < 0.9:
        return {"pass": False, "failure": "missing_body_region",
                "reason": f"the cut-out falls apart ({stats['components']} pieces; largest "
                          f"{stats['largest_component']:.2f} of it): part of the subject matched the key colour"}
    return {"pass": True, "failure": "none", "reason": "one piece, background removed"}


# ------------------------------------------------------------------------------------------------ agents

@dataclass
class Agents:
    backend: str = "rules"               # rules | judge
    judge: Optional[Judge] = None
    calls: list = field(default_factory=list)

    @classmethod
    def from_config(cls, spec: dict, judge: Optional[Judge]) -> "Agents":
        if spec.get("backend") == "rules":
            return cls("rules")
        if spec.get("backend") != "judge":
            raise AgentError(f"agents backend {spec.get('backend')!r}: use rules or judge")
        if judge is None:
            raise AgentError("agents backend judge: no judge resource")
        settings = {k: v for k, v in spec.items() if k not in ("backend", "judge_backend", "model", "base_url",
                                                                "api_key_env")}
        j = judge.for_endpoint(model=spec.get("model", judge.model), backend=spec.get("judge_backend"),
                               base_url=spec.get("base_url"), api_key_env=spec.get("api_key_env"), **settings)
        return cls("judge", j)

    def fingerprint(self) -> dict:
        if self.backend == "rules":
            return {"backend": "rules", "rules_version": RULES_VERSION}
        return {"backend": "judge", **self.judge.fingerprint()}

    def _ask(self, req: JudgeRequest, rule: Any, what: str) -> dict:
        if self.backend == "rules":
            answer = rule()
            self.calls.append({"agent": req.prompt_id, "version": req.prompt_version, "what": what,
                               "answered_by": "rules", "answer": answer})
            return answer
        res = self.judge.ask(req)
        self.calls.append({"agent": req.prompt_id, "version": req.prompt_version, "what": what,
                           "answered_by": self.judge.model, "answer": res.answer, "status": res.status,
                           "cache_key": res.cache_key, "reason": res.reason})
        if res.status != "ok":
            raise AgentError(f"{req.prompt_id} for {what}: the agent did not answer ({res.status}: {res.reason})")
        return res.answer

    def classify(self, name: str, description: str, overview: str) -> dict:
        return self._ask(classify_request(name, description, overview), lambda: rule_classify(name, description),
                         name)

    def portrait_prompt(self, etype: str, name: str, description: str, context: str, overview: str,
                        extras: list[str]) -> dict:
        req = portrait_request(etype, name, description, context, overview, extras)
        return self._ask(req, lambda: rule_portrait(etype, name, description, infer_style(overview), extras), name)

    def select(self, etype: str, name: str, description: str, grid_png: bytes, stats: list[dict]) -> dict:
        ans = self._ask(select_request(etype, name, description, len(stats), grid_png), lambda: rule_select(stats),
                        name)
        if not 1 <= int(ans["best"]) <= len(stats):
            raise AgentError(f"entitymem_select for {name}: candidate {ans['best']} of {len(stats)}")
        return ans

    def verify(self, etype: str, name: str, description: str, chroma: str, png: bytes, stats: dict) -> dict:
        return self._ask(verify_request(etype, name, description, chroma, png, stats), lambda: rule_verify(stats),
                         name)

    def layout(self, shot: int, action: str, characters: list[str], objects: list[str], location: Optional[str],
               prev: Optional[dict]) -> tuple[dict, list[str]]:
        tr = L.transitions(characters, prev)
        req = layout_request(shot, action, characters, objects, location, prev, tr)
        if self.backend == "rules":
            return self._ask(req, lambda: L.rule_layout(characters, objects, action, prev), f"shot {shot}"), []
        ans = self._ask(req, lambda: None, f"shot {shot}")
        return L.repair(ans, characters, objects, prev)
