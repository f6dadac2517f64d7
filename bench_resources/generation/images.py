"""The text-to-image tool of EntityMem (paper: FLUX), one resource with three backends chosen by configuration:

* ``offline``: the deterministic renderer of offline.py (the offline stand-in; not a model);
* ``openai``: any OpenAI-compatible ``POST {base_url}/images/generations`` server (``base_url`` is the API root,
  e.g. ``http://gpu:8000/v1``): ``{"model", "prompt", "n", "size": "WxH", "response_format": "b64_json",
  "seed"}`` -> ``{"data": [{"b64_json": ...}, ...]}``;
* ``diffusers``: a local diffusers text-to-image pipeline loaded from ``weights_dir`` (``DiffusionPipeline
  .from_pretrained``, no hub access), run on ``device``.

``generate(prompt, width, height, n, seed)`` returns ``n`` RGB uint8 images of exactly (height, width): a server
or pipeline that returns another size is resized, and the fact is counted (``stats()["resized"]``).
"""
from __future__ import annotations

import base64
import io
import json
import os
import threading
import urllib.error
import urllib.request
from typing import Any, Literal, Optional

import numpy as np
from dagster import ConfigurableResource
from PIL import Image
from pydantic import PrivateAttr

from bench_resources.generation import offline


class GenerationError(RuntimeError):
    """A generation backend failed: the message names the backend, the endpoint or folder, and why."""


def decode_image(data: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(data)).convert("RGB"))


def fit(img: np.ndarray, width: int, height: int) -> np.ndarray:
    if img.shape[:2] == (height, width):
        return img
    return np.asarray(Image.fromarray(img).resize((width, height), Image.LANCZOS))


def post_json(url: str, body: dict, timeout_s: float, api_key_env: str = "") -> tuple[bytes, str]:
    """POST a JSON body; (response bytes, content type). An HTTP or connection error is a GenerationError with the
    status and the first line of the server's message (the key, read from ``api_key_env``, is never echoed)."""
    headers = {"Content-Type": "application/json"}
    key = os.environ.get(api_key_env) if api_key_env else None
    if key:
        headers["Authorization"] = f"Bearer {key}"
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as r:
            return r.read(), r.headers.get("Content-Type", "")
    except urllib.error.HTTPError as e:
        msg = e.read()[:300].decode("utf-8", "replace").strip().splitlines()
        text = (msg[0] if msg else "") if not key else (msg[0] if msg else "").replace(key, "***")
        raise GenerationError(f"{url}: HTTP {e.code} {text}") from None
    except (urllib.error.URLError, OSError) as e:
        raise GenerationError(f"{url}: {getattr(e, 'reason', e)}") from None


class ImageGenerator(ConfigurableResource):
    backend: Literal["offline", "openai", "diffusers"] = "offline"
    model: str = "offline-renderer"
    base_url: Optional[str] = None      # openai: the API root, e.g. http://127.0.0.1:8000/v1
    api_key_env: str = ""               # the *name* of the variable holding a key ("" = none)
    weights_dir: Optional[str] = None   # diffusers: a pipeline folder (model_index.json)
    device: str = "cpu"
    steps: int = 28
    guidance: Optional[float] = None
    timeout_s: float = 300.0

    _pipe: Any = PrivateAttr(default=None)
    _lock: Any = PrivateAttr(default_factory=threading.Lock)
    _calls: int = PrivateAttr(default=0)
    _images: int = PrivateAttr(default=0)
    _resized: int = PrivateAttr(default=0)
    _prompts: list = PrivateAttr(default_factory=list)

    def fingerprint(self) -> dict:
        """What shapes the images (the manifest's and the cache key's view): never a key."""
        fp = {"backend": self.backend, "model": self.model}
        if self.backend == "openai":
            fp["base_url"] = self.base_url
        if self.backend == "diffusers":
            fp.update(weights_dir=self.weights_dir, steps=self.steps, guidance=self.guidance)
        return fp

    def stats(self) -> dict:
        return {"calls": self._calls, "images": self._images, "resized": self._resized}

    @property
    def prompts(self) -> list[str]:
        """Every prompt this resource was asked to draw, in order (tests and the audit read it)."""
        return list(self._prompts)

    def generate(self, prompt: str, width: int, height: int, n: int = 1, seed: int = 0) -> list[np.ndarray]:
        with self._lock:
            self._calls += 1
            self._prompts.append(prompt)
        if self.backend == "offline":
            out = [offline.render(prompt, width, height, seed + i) for i in range(n)]
        elif self.backend == "openai":
            out = self._openai(prompt, width, height, n, seed)
        else:
            out = self._diffusers(prompt, width, height, n, seed)
        fixed = []
        for img in out:
            if img.shape[:2] != (height, width):
                with self._lock:
                    self._resized += 1
            fixed.append(fit(img, width, height))
        with self._lock:
            self._images += len(fixed)
        return fixed

    def _openai(self, prompt: str, width: int, height: int, n: int, seed: int) -> list[np.ndarray]:
        if not self.base_url:
            raise GenerationError("image generator (openai): base_url is not set")
        url = self.base_url.rstrip("/") + "/images/generations"
        body = {"model": self.model, "prompt": prompt, "n": n, "size": f"{width}x{height}",
                "response_format": "b64_json", "seed": seed}
        raw, _ = post_json(url, body, self.timeout_s, self.api_key_env)
        try:
            data = json.loads(raw)["data"]
            images = [decode_image(base64.b64decode(d["b64_json"])) for d in data]
        except (ValueError, KeyError, TypeError, OSError) as e:
            raise GenerationError(f"{url}: reply is not an images response ({type(e).__name__}: {e})") from None
        if len(images) != n:
            raise GenerationError(f"{url}: asked for {n} images, got {len(images)}")
        return images

    def _load(self):
        if self._pipe is None:
            if not self.weights_dir or not os.path.isdir(self.weights_dir):
                raise GenerationError(f"image generator (diffusers): weights folder {self.weights_dir!r} is missing")
            try:
                from diffusers import DiffusionPipeline
            except ImportError as e:
                raise GenerationError(f"image generator (diffusers): diffusers is not installed ({e})") from None
            pipe = DiffusionPipeline.from_pretrained(self.weights_dir, local_files_only=True)
            self._pipe = pipe.to(self.device)
        return self._pipe

    def _diffusers(self, prompt: str, width: int, height: int, n: int, seed: int) -> list[np.ndarray]:
        import torch
        pipe = self._load()
        kw: dict[str, Any] = {"num_inference_steps": self.steps, "output_type": "np"}
        if self.guidance is not None:
            kw["guidance_scale"] = self.guidance
        gen = torch.Generator(device="cpu").manual_seed(seed)
        res = pipe(prompt, width=width, height=height, num_images_per_prompt=n, generator=gen, **kw)
        return [(np.clip(np.asarray(im), 0, 1) * 255).round().astype(np.uint8) for im in res.images]
