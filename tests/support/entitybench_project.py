"""The project's side of EntityBench's golden parity: the project's row builders run on the fixtures of
tests/support/entitybench_golden.py (the same decoded shots, the same key-colour detections, the seeded DINOv2-base /
CLIP ViT-B/32 checkpoints run as the authors' code runs them), with any judge (``ask_many``): the content-keyed
fake of ``fixture_ask_many`` or a real ``Judge`` on 127.0.0.1. Used by tests/parity/test_entitybench_golden.py,
test_entitybench_wire.py and test_entitybench_golden_production.py (which passes its production models)."""
from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

import numpy as np
import pandas as pd

from tests.support import entitybench_golden as fx

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "parity" / "golden" / "entitybench"
PROCESSOR_BACKEND = "pil"   # scripts/parity_golden_entitybench.py pins the authors' loaders to the same


def golden() -> dict:
    """golden/entitybench/episodes.json, as the authors' code wrote it."""
    return json.loads((GOLDEN_DIR / "episodes.json").read_text())


class Store:
    """Crops stored as PNG under a key, as the project's asset store keeps them (lossless)."""

    def __init__(self):
        self.pngs: dict[str, bytes] = {}

    def put_png(self, img: np.ndarray) -> str:
        from PIL import Image
        buf = io.BytesIO()
        Image.fromarray(img).save(buf, format="PNG")
        key = f"crop{len(self.pngs)}"
        self.pngs[key] = buf.getvalue()
        return key

    def get_png(self, key: str) -> np.ndarray:
        from PIL import Image
        return np.asarray(Image.open(io.BytesIO(self.pngs[key])).convert("RGB"))


class Detector:
    """The fixtures' key-colour detector in the project's detector interface (per frame sv.Detections)."""
    closed_vocabulary = False
    last_reason = None

    def detect(self, frames, query, kind=None):
        import supervision as sv
        name = fx.entity_for_query(query)
        out = []
        for f in frames:
            found = fx.detect_boxes(np.asarray(f), name)
            out.append(sv.Detections(xyxy=np.array([b for b, _ in found], float).reshape(-1, 4),
                                     confidence=np.array([c for _, c in found], float)))
        return out


class Models:
    """The seeded checkpoints run as the authors' code runs them (one image per call, their processors)."""

    def __init__(self, ck: dict):
        import torch
        from transformers import AutoImageProcessor, AutoModel, CLIPModel, CLIPProcessor
        torch.set_num_threads(1)
        self.torch = torch
        # the PIL processors, as the golden script pins them for the authors' loaders (transformers 4's default)
        self.dino = AutoModel.from_pretrained(ck["dino"]).eval()
        self.dino_proc = AutoImageProcessor.from_pretrained(ck["dino"], backend=PROCESSOR_BACKEND)
        self.clip = CLIPModel.from_pretrained(ck["clip"]).eval()
        self.clip_proc = CLIPProcessor.from_pretrained(ck["clip"], backend=PROCESSOR_BACKEND)

    def embed(self, images) -> np.ndarray:
        from PIL import Image
        out = []
        for im in images:
            with self.torch.no_grad():
                e = self.dino(**self.dino_proc(images=Image.fromarray(np.asarray(im)), return_tensors="pt"))
                e = e.last_hidden_state[:, 0]
                out.append((e / e.norm(dim=-1, keepdim=True)).numpy().flatten())
        return np.stack(out)

    def similarity(self, images, texts) -> np.ndarray:
        from PIL import Image
        out = []
        for im in images:
            row = []
            for t in texts:
                inp = self.clip_proc(text=[t], images=[Image.fromarray(np.asarray(im))], return_tensors="pt",
                                     padding=True)
                with self.torch.no_grad():
                    row.append(float(self.clip(**inp).logits_per_image.item() / 100.0))
            out.append(row)
        return np.array(out)


def answer_for(key: str, schema: dict) -> dict:
    """The fixtures' judge values in the project's answer schema: 1-10 scores as they are, a 0-1 number as the
    same score / 10 (the authors divide their 1-10 'similarity' by 10), a 0/1 verdict from the same verdict bit."""
    out = {}
    for k, p in schema["properties"].items():
        if p.get("type") == "string":
            out[k] = "fixture"
        elif p.get("type") == "array":
            out[k] = []
        elif p.get("type") == "boolean":
            out[k] = bool(fx.judge_value(key, "is_same"))
        elif "enum" in p:
            out[k] = int(fx.judge_value(key, "is_same"))
        elif p.get("type") == "number" and p.get("maximum") == 1:
            out[k] = fx.judge_value(key, "similarity") / 10.0
        else:
            out[k] = fx.judge_value(key, k if k in fx.SCORE_KEYS else "overall")
    return out


def fixture_ask_many(reqs):
    """The fixtures' judge on the project's requests: the same content key as the HTTP judge the authors' code
    reached (names in the prompt; size and mean grey level of each image)."""
    from bench_resources.judge.common import JudgeResult
    out = []
    for r in reqs:
        key = fx.judge_key(r.text, [base64.b64encode(b).decode() for b in r.images])
        out.append(JudgeResult(status="ok", answer=answer_for(key, r.schema), reason=None, cache_key=key,
                               cached=False, model="fixture-judge", prompt_id=r.prompt_id,
                               prompt_version=r.prompt_version))
    return out


def project_rows(root: Path, ask_many: Callable = fixture_ask_many, clip: Any = None,
                 embed: Optional[Callable] = None, embed_id: str = "dinov2-seeded",
                 only: Optional[Sequence[str]] = None) -> dict[str, dict]:
    """The project's rows for every fixture episode (``only``: these), with what the comparisons need to map keys.
    ``clip``: the grounding CLIP (``.similarity(images, texts)``, optionally ``.tokenizer``); ``embed``: images ->
    L2-normalised rows; both default to the seeded transformers checkpoints built in ``root``."""
    from bench_assets.entitybench import consistency, dataset, frames, grounding, judged, official
    ck = fx.checkpoints(str(root / "checkpoints"))
    eps = fx.write_results(root / "results")
    if clip is None or embed is None:
        models = Models(ck)
        clip = models if clip is None else clip
        embed = models.embed if embed is None else embed
    g = golden()
    out = {}
    for eid, script in eps.items():
        if only is not None and eid not in only:
            continue
        canonical, _ = official.convert_episode(script, eid, g["episodes"][eid]["tier"])
        ep = dataset.parse_episode(canonical)
        keys = fx.shot_keys(script)
        shot_of = {k: i + 1 for i, k in enumerate(keys)}
        clips = {}
        for k in keys:
            sn, i = (int(v) for v in k.split(":"))
            clips[shot_of[k]] = frames.SHOTS.get(root / "results" / eid / f"{sn:03d}_{i:03d}.mp4")
        store = Store()
        rows = grounding.grounding_rows("fixture", eid, ep, clips, {}, Detector(), None, clip, store.put_png)
        gdf = pd.DataFrame(rows)
        # the gate the authors applied: their recorded fidelity per (shot, entity)
        name_to_id = {e.name: e.id for e in ep.entities}
        fid = {(shot_of[k], name_to_id[n]): f["overall"]
               for k, s in g["episodes"][eid]["intra"].items() for n, f in s["fidelity"].items()}
        presence = consistency.presence_rows("fixture", ep, gdf)
        cross, gated = consistency.cross_shot_rows("fixture", ep, gdf, embed, None, store, clips, fid, embed_id)
        fidelity = judged.fidelity_rows("fixture", ep, gdf, store.get_png, ask_many)
        llm = judged.llm_entity_rows("fixture", ep, gdf, fid, embed, None, store.get_png, ask_many)
        scene = judged.llm_location_rows("fixture", ep, gdf, clips, embed, None, ask_many, fidelity=fid)
        action = judged.action_rows("fixture", ep, clips, {}, grounding.action_detector(Detector(), ep.registry),
                                    None, ask_many)
        out[eid] = {"ep": ep, "keys": keys, "shot_of": shot_of, "grounding": gdf, "name_to_id": name_to_id,
                    "gated_out": gated,
                    "rows": pd.DataFrame(presence + cross + fidelity + llm + scene + action)}
    return out


# ---- requests on the wire: what the golden script records of the authors' judge client, and what the wire test
# ---- compares with the project's (tests/parity/test_entitybench_wire.py)

WIRE_HEADERS = ("content-type", "accept", "api-key", "authorization")   # what an endpoint reads; not the SDK's own


def _text_digest(text: str) -> dict:
    """A prompt text by digest: their texts are not stored in this project (the release has no licence)."""
    import hashlib
    return {"text_sha256": hashlib.sha256(text.encode()).hexdigest(), "chars": len(text)}


def _image_digest(url: str) -> dict:
    """A data URL by its media type, its bytes and its decoded pixels (sha256 each) and its size."""
    import hashlib

    from PIL import Image
    head, b64 = url.split(",", 1)
    raw = base64.b64decode(b64)
    img = Image.open(io.BytesIO(raw))
    pixels = np.asarray(img.convert("RGB"))
    return {"media": head, "bytes_sha256": hashlib.sha256(raw).hexdigest(), "format": img.format,
            "pixels_sha256": hashlib.sha256(pixels.tobytes()).hexdigest(), "size": [img.width, img.height]}


def wire_record(path: str, headers: dict, body: dict) -> dict:
    """One chat-completions request as it reached the server, with each text and image part replaced by digests:
    the rest of the body (roles, part order, parameters) as it was."""
    body = json.loads(json.dumps(body))
    for m in body.get("messages", []):
        if isinstance(m.get("content"), str):
            m["content"] = _text_digest(m["content"])
            continue
        for p in m.get("content") or []:
            if p.get("type") == "text":
                p["text"] = _text_digest(p["text"])
            elif p.get("type") == "image_url":
                p["image_url"]["url"] = _image_digest(p["image_url"]["url"])
    return {"path": path, "headers": {h: headers[h] for h in WIRE_HEADERS if h in headers}, "body": body}


def wire_records(bodies: list[dict]) -> list[dict]:
    """``JudgeServer.bodies`` as wire records, in a canonical order (the order of concurrent requests is not)."""
    recs = [wire_record(b["path"], b["headers"], b["body"]) for b in bodies]
    return sorted(recs, key=lambda r: json.dumps(r, sort_keys=True))
