"""EntityMem's three stages over one episode (paper Section 4): the bank (classification, portraits with
selection and verification, location panoramas, textual memory), the keyframes (layouts and compositing), and the
shots (the backbone with ordered references and, for continuations, the previous shot's last frame), plus the
storymem-style control's shots from the same backbone.

Incremental by content: every expensive step is keyed by what it reads (the entity's own name, description,
first-appearance context and attached items; the backend fingerprints; the prompt versions) and its result is kept
in the store (``Memo``). Re-running after one entity's description changed regenerates that entity's references,
the keyframes that show it and the shots that use them (and continuations of those, whose first frame changed),
and nothing else; a killed run resumes from what it had finished. Artifacts are content-addressed PNG / MP4 in
the store (``store.put_bytes``), so every row of every table names the exact image it used.
"""
from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
from PIL import Image

from bench_assets.entitybench.dataset import Episode, shot_prompt
from bench_assets.entitymem import bank as B
from bench_assets.entitymem import compositor
from bench_assets.entitymem.agents import PROMPTS, Agents
from bench_assets.entitymem.configs import EntityMemConfig
from bench_assets.entitymem.layout import prev_state
from bench_resources.generation import ImageGenerator, Segmenter, VideoBackbone
from bench_resources.generation.segmentation import cutout_stats
from bench_resources.generation.video import encode_mp4
from bench_resources.store import Store

PIPELINE_VERSION = "2"   # 2: the platform writes the key into every attempt's prompt; unverified references marked
# the assets' code version (the memo's keys keep PIPELINE_VERSION: a step whose inputs did not change is reused);
# 2.1: keyframe rows carry the layout's pan, the backbone's prompt the camera direction
CODE_VERSION = "2.1"


def png(img: np.ndarray) -> bytes:
    buf = io.BytesIO()
    mode = "RGBA" if img.ndim == 3 and img.shape[2] == 4 else "RGB"
    Image.fromarray(np.ascontiguousarray(img), mode=mode).save(buf, format="PNG", compress_level=6)
    return buf.getvalue()


def canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)


class Memo:
    """Step results keyed by the sha256 of what the step read, kept under ``<store>/entitymem_memo``; counts hits
    and misses per step kind (the audit and the incremental test read them)."""

    def __init__(self, store: Store):
        self.store = store
        self.hits: dict[str, int] = {}
        self.misses: dict[str, int] = {}
        self.computed: list[tuple[str, str]] = []   # (kind, what) of every recomputed step

    def _path(self, key: str) -> str:
        return self.store._join("entitymem_memo", key[:2], f"{key}.json")

    def get_or_compute(self, kind: str, what: str, inputs: dict, fn: Callable[[], dict]) -> dict:
        key = hashlib.sha256(canonical({"kind": kind, "v": PIPELINE_VERSION, **inputs}).encode()).hexdigest()
        path = self._path(key)
        if self.store.exists(path):
            fs, _ = self.store._fs()
            with fs.open(path, "rb") as f:
                self.hits[kind] = self.hits.get(kind, 0) + 1
                return json.loads(f.read())
        value = fn()
        self.store._atomic_write(path, lambda f: f.write(canonical(value).encode()))
        self.misses[kind] = self.misses.get(kind, 0) + 1
        self.computed.append((kind, what))
        return value


@dataclass
class Backends:
    agents: Agents
    image: ImageGenerator
    segmenter: Segmenter
    video: VideoBackbone

    @classmethod
    def from_config(cls, cfg: EntityMemConfig, judge=None) -> "Backends":
        return cls(Agents.from_config(cfg.agents, judge), ImageGenerator(**cfg.image), Segmenter(**cfg.segmentation),
                   VideoBackbone(**cfg.video))

    def fingerprint(self) -> dict:
        return {"agents": self.agents.fingerprint(), "image": self.image.fingerprint(),
                "segmentation": self.segmenter.fingerprint(), "video": self.video.fingerprint(),
                "prompts": PROMPTS}


@dataclass
class Run:
    """One (configuration, episode): the store, the memo and the backends every stage uses."""
    ep: Episode
    cfg: EntityMemConfig
    backends: Backends
    store: Store
    memo: Memo = None
    log: list = field(default_factory=list)
    input_sha: Optional[str] = None      # digest of the files read (the episode, a configuration file)

    def __post_init__(self):
        if self.memo is None:
            self.memo = Memo(self.store)

    def put(self, img: np.ndarray) -> str:
        return self.store.put_bytes(png(img), "png")

    def get(self, sha: str) -> np.ndarray:
        return np.asarray(Image.open(io.BytesIO(self.store.get_bytes(sha, "png"))))


# ------------------------------------------------------------------------------------------------ stage 1

def classify(run: Run) -> list[dict]:
    """One row per entity: its reference kind (portrait / panorama / attached), owner, and textual memory."""
    ep, rows = run.ep, []
    mem = B.textual_memory(ep)
    for e in ep.entities:
        row = {"entity_id": e.id, "type": e.type, "name": e.name, "description": e.description,
               "first_shot": mem.get(e.id, {}).get("first_shot"), "context": B.first_context(ep, e.id),
               "owner": None, "reason": None}
        if e.type == "character":
            row.update(reference="portrait", reason="characters always receive portraits")
        elif e.type == "location":
            row.update(reference="panorama", reason="locations receive panoramas")
        else:
            ans = run.memo.get_or_compute(
                "classify", e.name, {"name": e.name, "description": e.description, "overview": ep.summary,
                                     "agents": run.backends.agents.fingerprint()},
                lambda e=e: run.backends.agents.classify(e.name, e.description, ep.summary))
            if ans["needs_reference"]:
                row.update(reference="portrait", reason=ans["reason"])
            else:
                kind = "character" if ans["attach_to"] == "character" else "location"
                owner = B.owners(ep, e.id, kind)
                row.update(reference="attached" if owner else "portrait", owner=owner,
                           reason=ans["reason"] if owner else f"{ans['reason']}; no {kind} shares a shot with it")
        rows.append(row)
    return rows


def _extras(rows: list[dict], entity_id: str) -> list[str]:
    return [f"{r['name']} ({r['description']})" for r in rows if r["owner"] == entity_id]


def portrait_attempt(run: Run, row: dict, attempt: int, chroma: str, prompt: str, w: int, h: int) -> dict:
    """One attempt on one chroma key: N candidates, their cut-outs, the selection grid, the Portrait Agent's choice
    and the Verification Agent's verdict (every artifact stored)."""
    cfg, bk = run.cfg, run.backends
    imgs = bk.image.generate(prompt, w, h, n=cfg.candidates, seed=cfg.seed + 1000 * attempt)
    cut = [bk.segmenter.segment(im, chroma, row["type"]) for im in imgs]
    stats = [cutout_stats(c, chroma) for c in cut]
    grid = B.candidate_grid(cut)
    grid_png = png(grid)
    sel = bk.agents.select(row["type"], row["name"], row["description"], grid_png, stats)
    best = int(sel["best"]) - 1
    shown = B.on_checker(cut[best])
    ver = bk.agents.verify(row["type"], row["name"], row["description"], chroma, png(shown), stats[best])
    return {"attempt": attempt + 1, "chroma": chroma, "prompt": prompt,
            "candidates": [run.put(im) for im in imgs],
            "cutouts": [run.store.put_bytes(png(c), "png") for c in cut], "stats": stats,
            "grid": run.store.put_bytes(grid_png, "png"), "selected": best + 1,
            "selection_reason": sel["reason"], "verdict": bool(ver["pass"]),
            "failure": ver["failure"], "verdict_reason": ver["reason"]}


def build_reference(run: Run, row: dict, extras: list[str]) -> dict:
    """Portrait (N candidates per chroma key, segmented, selected, verified, retried) or panorama and its crops."""
    cfg, bk, ep = run.cfg, run.backends, run.ep
    inputs = {"type": row["type"], "name": row["name"], "description": row["description"], "context": row["context"],
              "extras": extras, "overview": ep.summary, "n": cfg.candidates, "prompts": PROMPTS,
              "agents": bk.agents.fingerprint(), "image": bk.image.fingerprint(),
              "segmentation": bk.segmenter.fingerprint(),
              "retries": cfg.max_retries, "seed": cfg.seed}

    def compute() -> dict:
        p = bk.agents.portrait_prompt(row["type"], row["name"], row["description"], row["context"], ep.summary,
                                      extras)
        if row["reference"] == "panorama":
            w, h = B.PANORAMA_SIZE
            pano = bk.image.generate(p["prompt"], w, h, n=1, seed=cfg.seed)[0]
            ids = {a: run.put(c) for a, c in B.crops(pano).items()}
            return {"style": p["style"], "prompt": p["prompt"], "panorama": run.put(pano), "crops": ids,
                    "attempts": [], "verified": None}
        w, h = B.PORTRAIT_SIZE[row["type"]]
        attempts = []
        for attempt, chroma in enumerate(B.CHROMA_ORDER[:1 + cfg.max_retries]):
            prompt = B.rekey(p["prompt"], chroma)
            # each attempt is its own step: a run stopped mid-entity (an image server gone) resumes at the attempt
            # it stopped in, without asking again for the candidates of the attempts it had finished
            step = {k: v for k, v in inputs.items() if k != "retries"}
            attempts.append(run.memo.get_or_compute(
                "attempt", f"{row['name']} attempt {attempt + 1}",
                {**step, "attempt": attempt, "chroma": chroma, "prompt": prompt},
                lambda attempt=attempt, chroma=chroma, prompt=prompt: portrait_attempt(run, row, attempt, chroma,
                                                                                       prompt, w, h)))
            if attempts[-1]["verdict"]:
                break
        last = attempts[-1]
        chosen = run.get(last["cutouts"][last["selected"] - 1])
        # the paper's pipeline goes on after the last retry: the last selected cut-out is used, and everything
        # that uses it says so (``unverified`` on keyframes, shots, the audit page and the generator card)
        out = {"style": p["style"], "prompt": p["prompt"], "attempts": attempts,
               "verified": attempts[-1]["verdict"], "cutout": run.store.put_bytes(png(chosen), "png")}
        if not out["verified"]:
            out["unverified_reason"] = (f"failed verification on every key ({', '.join(a['chroma'] for a in attempts)}"
                                        f"); last: {attempts[-1]['failure']}: {attempts[-1]['verdict_reason']}")
        if row["type"] == "character":
            out["labelled"] = run.put(B.labelled(chosen, row["name"]))
        return out

    return run.memo.get_or_compute("reference", row["name"], inputs, compute)


def build_bank(run: Run) -> tuple[list[dict], dict[str, dict]]:
    """(classification rows, entity id -> reference) for every entity that gets one."""
    rows = classify(run)
    refs = {}
    for r in rows:
        if r["reference"] in ("portrait", "panorama"):
            refs[r["entity_id"]] = build_reference(run, r, _extras(rows, r["entity_id"]))
            run.log.append(f"reference {r['name']}: {len(refs[r['entity_id']]['attempts'])} attempt(s)")
    return rows, refs


# ------------------------------------------------------------------------------------------------ stage 2

def plan_layouts(run: Run) -> list[dict]:
    """Per shot: the Layout Agent's plan (keyframes on the grid, camera angle) with the previous state for
    continuations, and any repairs made to a model's answer."""
    ep, out, prev = run.ep, [], None
    reg = ep.registry
    for s in ep.shots:
        chars = [reg[e].name for e in s.entities if reg[e].type == "character"]
        objs = [reg[e].name for e in s.entities if reg[e].type == "object"]
        loc = next((reg[e].name for e in s.entities if reg[e].type == "location"), None)
        p = None if s.cut else prev
        inputs = {"shot": s.index, "action": s.action, "chars": chars, "objs": objs, "loc": loc, "prev": p,
                  "agents": run.backends.agents.fingerprint()}
        res = run.memo.get_or_compute(
            "layout", f"shot {s.index}", inputs,
            lambda s=s, chars=chars, objs=objs, loc=loc, p=p: dict(zip(
                ("plan", "repairs"), run.backends.agents.layout(s.index, s.action, chars, objs, loc, p))))
        out.append({"shot": s.index, "cut": s.cut, "location": loc, "prev": p, **res})
        prev = prev_state(res["plan"])
    return out


def unverified_names(refs: dict[str, dict], by_name: dict[str, str], names) -> list[str]:
    """The names among ``names`` whose reference failed its last verification (sorted)."""
    return sorted(n for n in names if refs.get(by_name.get(n), {}).get("verified") is False)


def compose_keyframes(run: Run, rows: list[dict], refs: dict[str, dict], layouts: list[dict]) -> list[dict]:
    """Per shot and keyframe: the composited image (location crop for the camera angle + cut-outs)."""
    by_name = {r["name"]: r["entity_id"] for r in rows}
    w, h = run.cfg.frame
    out = []
    for lay in layouts:
        loc_id = by_name.get(lay["location"]) if lay["location"] else None
        angle = lay["plan"]["camera_angle"]
        bg = refs[loc_id]["crops"][angle] if loc_id in refs else None
        for k, kf in enumerate(lay["plan"]["keyframes"], start=1):
            cut = {e["name"]: refs[by_name[e["name"]]]["cutout"] for e in kf["entities"]
                   if by_name.get(e["name"]) in refs and "cutout" in refs[by_name[e["name"]]]}
            inputs = {"keyframe": kf, "background": bg, "cutouts": cut, "size": [w, h]}

            def compute(kf=kf, bg=bg, cut=cut) -> dict:
                img = compositor.compose(kf, run.get(bg) if bg else None,
                                         {n: run.get(c) for n, c in cut.items()}, w, h)
                return {"image": run.put(img)}
            res = run.memo.get_or_compute("keyframe", f"shot {lay['shot']} keyframe {k}", inputs, compute)
            out.append({"shot": lay["shot"], "keyframe": k, "camera_angle": angle,
                        "pan": lay["plan"].get("pan", "none"), "background": bg,
                        "entities": [e["name"] for e in kf["entities"]], "drawn": sorted(cut),
                        "unverified": unverified_names(refs, by_name, cut), "image": res["image"]})
    return out


# ------------------------------------------------------------------------------------------------ stage 3

def _shot(run: Run, arm: str, index: int, prompt: str, references: list[dict], first: Optional[str]) -> dict:
    cfg, video = run.cfg, run.backends.video
    w, h = cfg.frame
    inputs = {"arm": arm, "prompt": prompt, "refs": [(r["role"], r["label"], r["id"]) for r in references],
              "first": first, "video": video.fingerprint(), "size": [w, h], "frames": cfg.n_frames, "fps": cfg.fps,
              "seed": cfg.seed + index}

    def compute() -> dict:
        imgs = [{"role": r["role"], "label": r["label"], "image": run.get(r["id"])[..., :3]} for r in references]
        frames = video.generate(prompt, imgs, run.get(first)[..., :3] if first else None, width=w, height=h,
                                n_frames=cfg.n_frames, fps=cfg.fps, seed=cfg.seed + index)
        mid = frames[len(frames) // 2]
        return {"video": run.store.put_bytes(encode_mp4(frames, cfg.fps), "mp4"), "first_frame": run.put(frames[0]),
                "middle_frame": run.put(mid), "last_frame": run.put(frames[-1]), "n_frames": len(frames)}

    res = run.memo.get_or_compute("shot", f"{arm} shot {index}", inputs, compute)
    return {"arm": arm, "shot": index, "prompt": prompt, "references": [r["id"] for r in references],
            "reference_roles": [r["role"] for r in references], "reference_labels": [r["label"] for r in references],
            "first_frame_input": first, **res}


def generate_entitymem(run: Run, rows: list[dict], refs: dict[str, dict], keyframes: list[dict]) -> list[dict]:
    """The EntityMem arm: labelled portraits of the shot's characters, then its keyframes; the injected prompt;
    the previous shot's last frame as first frame for a continuation (never among the references)."""
    ep, out, last, tainted = run.ep, [], None, []
    by_name = {ep.registry[e].name: e for e in refs}
    for s in ep.shots:
        refs_in = [{"role": "portrait", "label": ep.registry[e].name, "id": refs[e]["labelled"]}
                   for e in s.entities if e in refs and "labelled" in refs[e]]
        kfs = [k for k in keyframes if k["shot"] == s.index]
        refs_in += [{"role": "keyframe", "label": f"keyframe {k['keyframe']}", "id": k["image"]} for k in kfs]
        pan = kfs[0].get("pan") if kfs else None
        camera = (B.camera_direction(kfs[0]["camera_angle"], pan if isinstance(pan, str) else "none", not s.cut,
                                     len(kfs)) if kfs else None)
        res = _shot(run, "entitymem", s.index, B.injected_prompt(ep, s.index, camera), refs_in,
                    None if s.cut else last)
        direct = set(unverified_names(refs, by_name, [r["label"] for r in refs_in if r["role"] == "portrait"]))
        direct |= {n for k in kfs for n in k["unverified"]}
        # a continuation opens on the previous shot's last frame: what that shot drew unverified comes along
        inherited = [] if s.cut else tainted
        res = {**res, "unverified_references": sorted(direct), "unverified_via_first_frame": sorted(inherited)}
        out.append(res)
        last, tainted = res["last_frame"], sorted(direct | set(inherited))
    return out


def unverified_summary(shots: list[dict]) -> dict:
    """An episode's marks for the generator card: the unverified references and the shots that used them (directly
    or through a continuation's first frame); empty when every reference passed."""
    used = {s["shot"]: sorted(set(s.get("unverified_references", [])) | set(s.get("unverified_via_first_frame", [])))
            for s in shots}
    used = {k: v for k, v in used.items() if v}
    if not used:
        return {}
    return {"references": sorted({n for v in used.values() for n in v}), "shots": sorted(used)}


def generate_control(run: Run) -> list[dict]:
    """The storymem-style control: the same backbone, the benchmark's own shot prompt, and as memory the whole
    middle frames of the latest earlier shots it generated (no per-entity bank, no composed keyframes); the
    previous shot's last frame for a continuation, as for EntityMem."""
    ep, out, last, memory = run.ep, [], None, []
    for s in ep.shots:
        refs_in = [{"role": "memory", "label": f"shot {i} keyframe", "id": m}
                   for i, m in memory[-run.cfg.memory_frames:]] if run.cfg.memory_frames else []
        res = _shot(run, "control", s.index, shot_prompt(ep, s.index), refs_in, None if s.cut else last)
        out.append(res)
        last = res["last_frame"]
        memory.append((s.index, res["middle_frame"]))
    return out


# ------------------------------------------------------------------------------------------------ output

def generator_card(cfg: EntityMemConfig, arm: str, backends: Backends,
                   unverified: Optional[dict] = None) -> dict:
    """generator.yaml of an arm's folder: names the configuration, and says 'offline stand-in' when it is one."""
    names = cfg.generator_names()
    what = ("EntityMem (per-entity memory bank)" if arm == "entitymem"
            else "storymem-style control (whole keyframes of earlier shots, no per-entity bank)")
    kind = "offline stand-in" if cfg.offline else f"configuration {cfg.name}"
    # the built-in description already opens with "offline stand-in:": say it once
    desc = cfg.description.strip()
    if desc.lower().startswith(kind.lower()):
        desc = desc[len(kind):].lstrip(" :;,-")
    return {"name": names[arm], "benchmark": "entitybench",
            "description": f"{what}; {kind}: {desc}".strip().rstrip(":").rstrip(),
            "entitymem": {"arm": arm, "configuration": cfg.to_dict(), "offline_stand_in": cfg.offline,
                          "pair": names["control" if arm == "entitymem" else "entitymem"],
                          "backends": backends.fingerprint(), "pipeline_version": PIPELINE_VERSION,
                          # episode -> {references, shots}: every shot that used a reference that failed its last
                          # verification (the paper's pipeline goes on with it)
                          "unverified_references": dict(sorted((unverified or {}).items()))}}


def write_outputs(store: Store, root, cfg: EntityMemConfig, arm: str, episode_id: str, shots: list[dict],
                  backends: Backends) -> list[str]:
    """Copy an arm's shots into ``<root>/<generator>/<episode>/shot_NN.mp4`` (EntityBench's layout) and write the
    folder's generator.yaml; a file already holding the same bytes is left alone (its mtime is the sensor's
    cursor). Returns the paths written."""
    import fcntl
    import os
    from pathlib import Path

    import yaml
    folder = Path(root) / cfg.generator_names()[arm]
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    y = folder / "generator.yaml"
    # the card lists every episode's unverified references: read, merge this episode's, write, under a lock
    # (episodes of one configuration may run in parallel step processes); the lock file sits beside the folder,
    # so the sensor's fingerprint of the folder sees only the card
    with open(folder.parent / f".{folder.name}.card-lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        old = yaml.safe_load(y.read_text()) if y.exists() else None
        marks = dict(((old or {}).get("entitymem") or {}).get("unverified_references") or {})
        marks.pop(episode_id, None)
        mine = unverified_summary(shots)
        if mine:
            marks[episode_id] = mine
        card = yaml.safe_dump(generator_card(cfg, arm, backends, marks), sort_keys=False)
        if not y.exists() or y.read_text() != card:
            tmp = folder / f".generator.yaml.tmp-{os.getpid()}"
            tmp.write_text(card)
            os.replace(tmp, y)
    for s in shots:
        data = store.get_bytes(s["video"], "mp4")
        p = folder / episode_id / f"shot_{s['shot']:02d}.mp4"
        if p.exists() and p.read_bytes() == data:
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
        tmp.write_bytes(data)
        os.replace(tmp, p)
        written.append(str(p))
    return written
