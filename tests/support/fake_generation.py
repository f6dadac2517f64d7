"""Real HTTP servers on 127.0.0.1 speaking the generation protocols EntityMem's backends use
(bench_resources/generation/): OpenAI-compatible image generation (``POST /v1/images/generations``) and the video
backbone's ``POST /v1/videos/generations``; plus a chat-completions responder that plays EntityMem's four agents
(structured JSON answers), for tests/support/fake_openai.py's server.

Outputs vary with the input: an image's subject colour and position come from a hash of the prompt and the seed;
a video's frames from its first frame (when given), its last reference and a hash of the prompt. Every request is
recorded (``requests``), and the video server keeps the frames it sent (``sent``), so a test can check that a
continuation shot received the previous shot's last frame.
"""
from __future__ import annotations

import base64
import hashlib
import io
import json
import re
from typing import Any, Optional

import numpy as np
from PIL import Image

from bench_resources.generation.offline import CHROMA
from bench_resources.generation.video import encode_mp4, image_from_data_url
from tests.support.fake_anthropic import FakeServer, Step
from tests.support.fake_openai import chat_answer


def _h(text: str) -> int:
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")


def _png_b64(img: np.ndarray) -> str:
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="PNG")
    return base64.b64encode(buf.getvalue()).decode()


def paint(prompt: str, width: int, height: int, seed: int) -> np.ndarray:
    """The chroma colour the prompt names as background (grey if none), and a subject block whose colour comes
    from the prompt's text before the background clause; 'wearing green' puts a band of the key's own green
    across the subject (keying it out splits the subject in two)."""
    m = re.search(r"\b(green|magenta|blue|orange) chroma-key", prompt)
    img = np.empty((height, width, 3), np.uint8)
    img[:] = CHROMA[m.group(1)] if m else (128, 128, 128)
    subject = prompt[:m.start()] if m else prompt
    h = _h(subject)
    col = np.array([(h >> s) & 0xFF for s in (0, 8, 16)], np.uint8) // 2 + 64
    dx = int((seed % 5) - 2) * width // 40
    x0, x1 = width // 4 + dx, 3 * width // 4 + dx
    y0, y1 = height // 8, 7 * height // 8
    img[y0:y1, x0:x1] = col
    if "wearing green" in subject:
        img[(y0 + y1) // 2 - height // 10:(y0 + y1) // 2 + height // 10, x0:x1] = CHROMA["green"]
    return img


class FakeImages(FakeServer):
    PATH = "/v1/images/generations"
    NAME = "fake-images"

    def __init__(self):
        super().__init__(responder=self.answer)

    @staticmethod
    def answer(body: dict) -> Step:
        w, h = (int(v) for v in body["size"].split("x"))
        seed = int(body.get("seed", 0))
        return {"status": 200, "body": {"created": 0, "data": [
            {"b64_json": _png_b64(paint(body["prompt"], w, h, seed + i))} for i in range(int(body.get("n", 1)))]}}


class FakeVideo(FakeServer):
    PATH = "/v1/videos/generations"
    NAME = "fake-video"

    def __init__(self):
        self.sent: list[list[np.ndarray]] = []
        super().__init__(responder=self.answer)

    def answer(self, body: dict) -> Step:
        w, h, n = int(body["width"]), int(body["height"]), int(body["num_frames"])
        refs = [image_from_data_url(r["image"]) for r in body["references"]]
        tint = np.array([(_h(body["prompt"]) >> s) & 0xFF for s in (0, 8, 16)], np.float32)
        base = np.asarray(Image.fromarray(refs[-1]).resize((w, h))).astype(np.float32) if refs \
            else np.full((h, w, 3), 100, np.float32)
        start = image_from_data_url(body["first_frame"]).astype(np.float32) if body.get("first_frame") else None
        frames = []
        for i in range(n):
            t = i / max(n - 1, 1)
            f = 0.8 * base + 0.2 * tint * t
            if start is not None and i == 0:
                f = start
            frames.append(np.clip(f, 0, 255).astype(np.uint8))
        self.sent.append(frames)
        return {"status": 200, "body": {"data": [{"b64_mp4": base64.b64encode(encode_mp4(frames, 8)).decode()}]}}


def agent_answer(body: dict, fail_first_green: str = "Verdant") -> Step:
    """The four agents' answers, chosen from the question's text (the schema note the judge appends is ignored):
    a portrait prompt that keeps the description; the second candidate; a verification that fails any portrait
    of a name containing ``fail_first_green`` cut from the green key; a layout that places every scheduled
    character left to right."""
    text = next(p["text"] for p in body["messages"][1]["content"] if p.get("type") == "text")
    if "needs its own pre-generated visual reference" in text:
        wearable = re.search(r"Description: .*\b(jacket|hat|coat)\b", text)
        return chat_answer({"needs_reference": not wearable, "attach_to": "character" if wearable else "none",
                            "reason": "fake agent"})
    if "Write one text-to-image prompt" in text:
        name = re.search(r"Entity: (.+)", text).group(1)
        desc = re.search(r"Description: (.+)", text).group(1)
        if "panorama" in text.split("Write one", 1)[1]:
            return chat_answer({"style": "anime", "prompt": f"anime panorama of {name}, {desc}"})
        return chat_answer({"style": "anime", "prompt": f"anime portrait of {name}, {desc}, green chroma-key "
                                                        f"background"})
    if "segmented candidates" in text:
        return chat_answer({"best": 2, "reason": "fake agent: the second"})
    if "Check it before it enters the memory bank" in text:
        bad = fail_first_green in text and "from a green chroma-key" in text
        return chat_answer({"pass": not bad, "failure": "transparent_clothing" if bad else "none",
                            "reason": "fake agent"})
    if "Plan one or more keyframes" in text:
        chars = json.loads(re.search(r"Scheduled characters: (\[.*\])", text).group(1).replace("'", '"'))
        cells = ["left", "center", "right", "far-left", "far-right", "center-left", "center-right"]
        return chat_answer({"camera_angle": "center", "pan": "none", "reasoning": "fake", "keyframes": [
            {"description": "fake", "entities": [{"name": c, "position": cells[i % 7]} for i, c in enumerate(chars)]}]})
    return {"status": 400, "body": {"error": {"message": f"fake agent: unknown question {text[:60]!r}"}}}


def frames_close(a: np.ndarray, b: np.ndarray, tol: float = 6.0) -> bool:
    """Equal up to H.264's loss (mean absolute difference in 0-255)."""
    return a.shape == b.shape and float(np.abs(a.astype(float) - b.astype(float)).mean()) < tol


def first(items: list, pred) -> Optional[Any]:
    return next((x for x in items if pred(x)), None)
