"""The video backbone of EntityMem (paper: StoryMem's backbone), one resource with three backends:

* ``offline``: the keyframe animator of offline.py (camera pan / zoom and crossfades over the keyframes given;
  with none, a frame drawn from the prompt's text alone). The offline stand-in: not a model.
* ``http``: ``POST {base_url}/videos/generations`` with JSON ``{"model", "prompt", "references": [{"role",
  "label", "image": "data:image/png;base64,..."}], "first_frame": data URL or null, "num_frames", "fps",
  "width", "height", "seed"}``; the reply is ``video/mp4`` bytes or JSON ``{"data": [{"b64_mp4": ...}]}``.
  References keep their order (labelled portraits, then keyframes); the first frame travels apart from them.
* ``diffusers``: a local image-to-video pipeline loaded from ``weights_dir`` (``DiffusionPipeline
  .from_pretrained``, no hub access). Its conditioning image is the first frame when there is one, else the last
  reference (the shot's first keyframe); the prompt is passed when the pipeline's call takes one.

``generate(...)`` returns the frames (RGB uint8, exactly height x width); ``write_mp4`` / ``read_frames`` encode
and decode H.264 with PyAV.
"""
from __future__ import annotations

import base64
import inspect
import io
import json
import os
import re
import threading
from pathlib import Path
from typing import Any, Literal, Optional, Sequence

import numpy as np
from dagster import ConfigurableResource
from PIL import Image
from pydantic import PrivateAttr

from bench_resources.generation import offline
from bench_resources.generation.images import GenerationError, fit, post_json


def png_data_url(img: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(np.ascontiguousarray(img)).save(buf, format="PNG", compress_level=6)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def image_from_data_url(url: str) -> np.ndarray:
    if not url.startswith("data:image/") or ";base64," not in url:
        raise ValueError("not a base64 image data URL")
    return np.asarray(Image.open(io.BytesIO(base64.b64decode(url.split(";base64,", 1)[1]))).convert("RGB"))


def encode_mp4(frames: Sequence[np.ndarray], fps: int) -> bytes:
    """H.264 (yuv420p) bytes of the frames; sizes are made even by cropping a pixel."""
    import av
    h, w = frames[0].shape[:2]
    h2, w2 = h - h % 2, w - w % 2
    buf = io.BytesIO()
    with av.open(buf, mode="w", format="mp4") as out:
        st = out.add_stream("libx264", rate=fps)
        st.width, st.height, st.pix_fmt = w2, h2, "yuv420p"
        st.options = {"crf": "18", "preset": "veryfast"}
        for f in frames:
            frame = av.VideoFrame.from_ndarray(np.ascontiguousarray(f[:h2, :w2, :3]), format="rgb24")
            for pkt in st.encode(frame):
                out.mux(pkt)
        for pkt in st.encode():
            out.mux(pkt)
    return buf.getvalue()


def write_mp4(frames: Sequence[np.ndarray], fps: int, path: str | Path) -> None:
    """Encode then publish atomically (a killed run never leaves half a shot file for the sensor)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_bytes(encode_mp4(frames, fps))
    os.replace(tmp, path)


def read_frames(data: bytes) -> list[np.ndarray]:
    import av
    with av.open(io.BytesIO(data)) as c:
        return [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]


_DESCRIBED = re.compile(r"^\[(.+?)\]\s*(.+)$")


def prompt_entities(prompt: str) -> list[tuple[str, str, str]]:
    """(type, name, text) of the entities a shot prompt mentions, for the stand-in's text-only frame: lines
    ``[Name] description`` describe; names in the action line after 'at' / 'in' are the location, after 'next
    to' / 'with the' objects... Undescribed names are drawn from the name alone (colours hashed from it)."""
    lines = [ln.strip() for ln in prompt.splitlines() if ln.strip()]
    described = {}
    action = ""
    for ln in lines:
        m = _DESCRIBED.match(ln)
        if m:
            described[m.group(1)] = m.group(2)
        else:
            action += " " + ln
    out: list[tuple[str, str, str]] = []
    names = set(described)
    loc = re.search(r"\b(?:at|in|inside)\s+(the [A-Z][\w' ]+?|[A-Z][\w' ]+?)[.,]", action)
    objs = re.findall(r"next to (the [A-Z][\w' ]+?|[A-Z][\w' ]+?)[.,]", action)
    if loc:
        n = loc.group(1).strip()
        out.append(("location", n, described.get(n, n)))
        names.discard(n)
    for n in objs:
        out.append(("object", n.strip(), described.get(n.strip(), n.strip())))
        names.discard(n.strip())
    for n, d in described.items():
        if n in names:
            out.append(("character", n, d))
    for n in re.findall(r"\b([A-Z][a-z]+(?: [A-Z][a-z]+)?)\b", action):
        if n not in described and not any(n in e[1] for e in out):
            out.append(("character", n, n))
    return out


class VideoBackbone(ConfigurableResource):
    backend: Literal["offline", "http", "diffusers"] = "offline"
    model: str = "offline-keyframe-animator"
    base_url: Optional[str] = None      # http: the API root, e.g. http://gpu:8000/v1
    api_key_env: str = ""
    weights_dir: Optional[str] = None   # diffusers: an image-to-video pipeline folder
    device: str = "cpu"
    steps: int = 25
    timeout_s: float = 1800.0

    _pipe: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _calls: int = PrivateAttr(default=0)
    _requests: list = PrivateAttr(default_factory=list)

    def fingerprint(self) -> dict:
        fp = {"backend": self.backend, "model": self.model}
        if self.backend == "http":
            fp["base_url"] = self.base_url
        if self.backend == "diffusers":
            fp.update(weights_dir=self.weights_dir, steps=self.steps)
        return fp

    def stats(self) -> dict:
        return {"calls": self._calls}

    @property
    def requests(self) -> list[dict]:
        """(prompt, reference roles, first frame given) of every call, in order (tests and the audit read it)."""
        return list(self._requests)

    def generate(self, prompt: str, references: Sequence[dict], first_frame: Optional[np.ndarray], *, width: int,
                 height: int, n_frames: int, fps: int, seed: int = 0) -> list[np.ndarray]:
        """``references``: ordered dicts {"role": "portrait" | "keyframe" | "memory", "label": str, "image": RGB}."""
        with self._lock:
            self._calls += 1
            self._requests.append({"prompt": prompt, "roles": [r["role"] for r in references],
                                   "labels": [r.get("label", "") for r in references],
                                   "first_frame": first_frame is not None})
        if self.backend == "offline":
            frames = self._offline(prompt, references, first_frame, width, height, n_frames, seed)
        elif self.backend == "http":
            frames = self._http(prompt, references, first_frame, width, height, n_frames, fps, seed)
        else:
            frames = self._diffusers(prompt, references, first_frame, width, height, n_frames, seed)
        if not frames:
            raise GenerationError(f"video backbone ({self.backend}): no frames returned")
        return [fit(f, width, height) for f in frames]

    @staticmethod
    def _offline(prompt, references, first_frame, width, height, n_frames, seed) -> list[np.ndarray]:
        keys = [fit(r["image"], width, height) for r in references if r["role"] == "keyframe"]
        if not keys:  # text only (the control): the prompt's entities drawn, over the latest memory frame
            scene = offline.render_scene(prompt_entities(prompt), width, height, seed)
            memory = [fit(r["image"], width, height) for r in references if r["role"] == "memory"]
            if memory:
                scene = (0.65 * scene.astype(np.float32) + 0.35 * memory[-1].astype(np.float32)).astype(np.uint8)
            keys = [scene]
        return offline.animate(keys, n_frames, first_frame)

    def _http(self, prompt, references, first_frame, width, height, n_frames, fps, seed) -> list[np.ndarray]:
        if not self.base_url:
            raise GenerationError("video backbone (http): base_url is not set")
        url = self.base_url.rstrip("/") + "/videos/generations"
        body = {"model": self.model, "prompt": prompt, "num_frames": n_frames, "fps": fps, "width": width,
                "height": height, "seed": seed,
                "references": [{"role": r["role"], "label": r.get("label", ""), "image": png_data_url(r["image"])}
                               for r in references],
                "first_frame": png_data_url(first_frame) if first_frame is not None else None}
        raw, ctype = post_json(url, body, self.timeout_s, self.api_key_env)
        try:
            if "json" in ctype:
                raw = base64.b64decode(json.loads(raw)["data"][0]["b64_mp4"])
            return read_frames(raw)
        except Exception as e:  # noqa: BLE001 - any undecodable reply is one line naming the endpoint
            raise GenerationError(f"{url}: reply is not a video ({type(e).__name__}: {e})") from None

    def _load(self):
        if self._pipe is None:
            if not self.weights_dir or not os.path.isdir(self.weights_dir):
                raise GenerationError(f"video backbone (diffusers): weights folder {self.weights_dir!r} is missing")
            try:
                from diffusers import DiffusionPipeline
            except ImportError as e:
                raise GenerationError(f"video backbone (diffusers): diffusers is not installed ({e})") from None
            self._pipe = DiffusionPipeline.from_pretrained(self.weights_dir, local_files_only=True).to(self.device)
        return self._pipe

    def _diffusers(self, prompt, references, first_frame, width, height, n_frames, seed) -> list[np.ndarray]:
        import torch
        pipe = self._load()
        cond = first_frame if first_frame is not None else (references[-1]["image"] if references else None)
        if cond is None:
            raise GenerationError("video backbone (diffusers): an image-to-video pipeline needs a first frame or a "
                                  "keyframe")
        params = inspect.signature(pipe.__call__).parameters
        kw: dict[str, Any] = {"height": height, "width": width, "num_frames": n_frames,
                              "num_inference_steps": self.steps, "output_type": "np",
                              "generator": torch.Generator(device="cpu").manual_seed(seed)}
        if "prompt" in params:
            kw["prompt"] = prompt
        res = pipe(image=Image.fromarray(fit(cond, width, height)), **kw)
        frames = res.frames[0]
        return [(np.clip(np.asarray(f), 0, 1) * 255).round().astype(np.uint8) for f in frames]
