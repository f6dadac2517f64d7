"""Detectors: SSD-MobileNetV2 COCO (offline), GroundingDINO / YOLO-World (paper), YOLO persons (paper)."""
from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import Optional, Sequence

import cv2
import numpy as np
import supervision as sv

from bench_resources.models.base import batches, counted, runtime

# TF Object Detection API COCO label map (ids 1..90 with gaps), as the SSD graph outputs them.
COCO_TF = {1: "person", 2: "bicycle", 3: "car", 4: "motorcycle", 5: "airplane", 6: "bus", 7: "train", 8: "truck",
           9: "boat", 10: "traffic light", 11: "fire hydrant", 13: "stop sign", 14: "parking meter", 15: "bench",
           16: "bird", 17: "cat", 18: "dog", 19: "horse", 20: "sheep", 21: "cow", 22: "elephant", 23: "bear",
           24: "zebra", 25: "giraffe", 27: "backpack", 28: "umbrella", 31: "handbag", 32: "tie", 33: "suitcase",
           34: "frisbee", 35: "skis", 36: "snowboard", 37: "sports ball", 38: "kite", 39: "baseball bat",
           40: "baseball glove", 41: "skateboard", 42: "surfboard", 43: "tennis racket", 44: "bottle",
           46: "wine glass", 47: "cup", 48: "fork", 49: "knife", 50: "spoon", 51: "bowl", 52: "banana", 53: "apple",
           54: "sandwich", 55: "orange", 56: "broccoli", 57: "carrot", 58: "hot dog", 59: "pizza", 60: "donut",
           61: "cake", 62: "chair", 63: "couch", 64: "potted plant", 65: "bed", 67: "dining table", 70: "toilet",
           72: "tv", 73: "laptop", 74: "mouse", 75: "remote", 76: "keyboard", 77: "cell phone", 78: "microwave",
           79: "oven", 80: "toaster", 81: "sink", 82: "refrigerator", 84: "book", 85: "clock", 86: "vase",
           87: "scissors", 88: "teddy bear", 89: "hair drier", 90: "toothbrush"}
ANIMATE = {"person", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe"}
COCO_NAMES = sorted(set(COCO_TF.values()))  # the 80 class names


def empty_detections() -> sv.Detections:
    return sv.Detections(xyxy=np.zeros((0, 4), np.float32), confidence=np.zeros(0, np.float32),
                         class_id=np.zeros(0, int), data={"label": np.array([], dtype=object)})


_empty = empty_detections


class SsdCocoDetector:
    """SSD-MobileNetV2 COCO (TF Object Detection API frozen graph run by OpenCV dnn), 300x300 input,
    batched by batch_size. Each frame is detected once and remembered (closed vocabulary: several queries
    on the same frames reuse the boxes)."""

    def __init__(self, pb_path, pbtxt_path, min_score: float = 0.3, batch_size: int = 16, cache_frames: int = 256):
        self.net = cv2.dnn.readNetFromTensorflow(str(pb_path), str(pbtxt_path))
        self.min_score, self.batch_size = min_score, batch_size
        self._cache: "OrderedDict[bytes, sv.Detections]" = OrderedDict()
        self._cache_frames = cache_frames

    @staticmethod
    def _key(im: np.ndarray) -> bytes:
        return hashlib.blake2b(np.ascontiguousarray(im).tobytes(), digest_size=16).digest() + str(im.shape).encode()

    def detect_all(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        keys = [self._key(im) for im in images]
        todo = [i for i, k in enumerate(keys) if k not in self._cache]
        todo = list(OrderedDict((keys[i], i) for i in todo).values())  # a frame repeated in one call: once
        for i0 in range(0, len(todo), max(1, self.batch_size)):
            chunk = todo[i0:i0 + self.batch_size]
            for i, det in zip(chunk, self._forward([images[i] for i in chunk])):
                self._cache[keys[i]] = det
        out = []
        for k in keys:
            self._cache.move_to_end(k)
            out.append(self._cache[k])
        while len(self._cache) > self._cache_frames:
            self._cache.popitem(last=False)
        return out

    def _forward(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        # the graph normalises internally; input is RGB already (the TF model was trained on RGB)
        blob = cv2.dnn.blobFromImages([np.ascontiguousarray(im) for im in images], size=(300, 300), swapRB=False)
        with counted(len(images)):
            self.net.setInput(blob)
            raw = self.net.forward().reshape(-1, 7)  # [image_id, class_id, score, x1, y1, x2, y2] (relative)
        out = []
        for n, im in enumerate(images):
            h, w = im.shape[:2]
            r = raw[(raw[:, 0] == n) & (raw[:, 2] >= self.min_score)]
            if len(r) == 0:
                out.append(empty_detections())
                continue
            xyxy = np.clip(r[:, 3:7] * [w, h, w, h], 0, [w, h, w, h]).astype(np.float32)
            ids = r[:, 1].astype(int)
            out.append(sv.Detections(xyxy=xyxy, confidence=r[:, 2].astype(np.float32), class_id=ids,
                                     data={"label": np.array([COCO_TF.get(i, "?") for i in ids], dtype=object)}))
        return out

    def detect_label(self, images: Sequence[np.ndarray], label: str) -> list[sv.Detections]:
        return [d[d.data["label"] == label] if len(d) else d for d in self.detect_all(images)]


class SsdTextQueryDetector:
    """Offline stand-in for an open-vocabulary detector ("ssd_mobilenet_v2_coco+minilm_label_match"): the query
    is mapped to the COCO class name with the highest MiniLM cosine similarity, and SSD's boxes of that class
    are returned.

    Closed vocabulary: a query whose best label similarity is below ``min_label_sim`` returns no boxes and
    sets ``last_reason``, so callers record 'unavailable' instead of 'absent'. The entity type (``kind``)
    narrows the vocabulary: a character is a person unless its description names an animal class (MiniLM alone
    maps "a man in a suit and tie" to 'tie'); an object is never a person; a location cannot be grounded.
    """

    closed_vocabulary = True  # entities of one class cannot be told apart by their descriptions

    def __init__(self, ssd: SsdCocoDetector, text_embedder, min_label_sim: float = 0.3):
        self.ssd, self.text, self.min_label_sim = ssd, text_embedder, min_label_sim
        self.labels = COCO_NAMES
        self.label_emb = text_embedder.embed(self.labels)
        self._cache: dict[tuple, tuple[Optional[str], float]] = {}
        self.last_reason: Optional[str] = None
        self.last_label: Optional[str] = None

    def match_label(self, query: str, kind: Optional[str] = None) -> tuple[Optional[str], float]:
        """(COCO label or None, its MiniLM similarity)."""
        key = (query, kind)
        if key not in self._cache:
            if kind == "character":
                words = set(re.findall(r"[a-z]+", query.lower()))
                animals = sorted(l for l in ANIMATE - {"person"} if l in words)
                self._cache[key] = (animals[0] if animals else "person", 1.0)
            else:
                allowed = np.array([l != "person" or kind != "object" for l in self.labels])
                sims = np.where(allowed, self.label_emb @ self.text.embed([query])[0], -np.inf)
                i = int(np.argmax(sims))
                self._cache[key] = (self.labels[i] if sims[i] >= self.min_label_sim else None, float(sims[i]))
        return self._cache[key]

    def detect(self, images: Sequence[np.ndarray], query: str, kind: Optional[str] = None) -> list[sv.Detections]:
        if kind == "location":
            self.last_label = None
            self.last_reason = "offline detector (SSD-MobileNetV2 COCO) cannot ground locations: no scene classes"
            return [empty_detections() for _ in images]
        label, sim = self.match_label(query, kind)
        self.last_label = label
        if label is None:
            best = self.labels[int(np.argmax(self.label_emb @ self.text.embed([query])[0]))]
            self.last_reason = (f"offline detector (SSD-MobileNetV2 COCO) has no class for {query!r}: best MiniLM "
                                f"label similarity {sim:.2f} ({best!r}) < {self.min_label_sim}")
            return [empty_detections() for _ in images]
        self.last_reason = None
        return self.ssd.detect_label(images, label)


class SsdPersonDetector:
    """SSD-MobileNetV2 COCO, class 'person', score >= 0.3."""

    def __init__(self, ssd: SsdCocoDetector):
        self.ssd = ssd

    def detect(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        return self.ssd.detect_label(images, "person")


class GroundingDinoDetector:
    """GroundingDINO through Hugging Face transformers (no compiled extension); box 0.25 / text 0.20.

    The query is lower-cased and period-terminated as GroundingDINO expects. Images of a batch are padded by
    the processor (pixel_mask), so a batch may mix sizes. ``data["label"]`` is the query (the entity
    description), ``data["phrase"]`` the query words above the text threshold."""

    def __init__(self, model, processor, device=None, box_threshold: float = 0.25, text_threshold: float = 0.20):
        self.device, _, self.batch_size = runtime(device)
        self.model, self.processor = model.eval().to(self.device), processor
        self.box_threshold, self.text_threshold = box_threshold, text_threshold
        self.last_reason: Optional[str] = None

    @classmethod
    def from_module(cls, model, processor, device=None, **thresholds):
        return cls(model, processor, device, **thresholds)

    @classmethod
    def load(cls, source: str, device=None):
        """A local folder saved by save_pretrained (model + processor files) or a hub id."""
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        return cls(AutoModelForZeroShotObjectDetection.from_pretrained(source), AutoProcessor.from_pretrained(source),
                   device)

    def detect(self, images: Sequence[np.ndarray], query: str, kind: Optional[str] = None) -> list[sv.Detections]:
        import torch
        from PIL import Image
        text = query.lower().strip().rstrip(".") + "."
        out = []
        self.last_reason = None
        for chunk in batches(list(images), self.batch_size):
            pil = [Image.fromarray(np.ascontiguousarray(im)) for im in chunk]
            inputs = self.processor(images=pil, text=[text] * len(chunk), return_tensors="pt").to(self.device)
            with torch.inference_mode(), counted(len(chunk)):
                res = self.model(**inputs)
            results = self.processor.post_process_grounded_object_detection(
                res, inputs["input_ids"], threshold=self.box_threshold, text_threshold=self.text_threshold,
                target_sizes=[im.shape[:2] for im in chunk])
            for im, r in zip(chunk, results):
                n = len(r["boxes"])
                if n == 0:
                    out.append(empty_detections())
                    continue
                h, w = im.shape[:2]
                phrases = r.get("text_labels", r.get("labels"))
                out.append(sv.Detections(
                    xyxy=np.clip(r["boxes"].float().cpu().numpy(), 0, [w, h, w, h]).astype(np.float32),
                    confidence=r["scores"].float().cpu().numpy().astype(np.float32),
                    class_id=np.zeros(n, int),
                    data={"label": np.array([query] * n, dtype=object),
                          "phrase": np.array([str(p) for p in phrases], dtype=object)}))
        return out


class UltralyticsDetector:
    """YOLO-World (open vocabulary: set_classes([query])) or plain YOLOv8 (person class) via ultralytics.

    Ultralytics expects BGR arrays; batches of batch_size go to one predict call."""

    def __init__(self, model, device=None, open_vocab: bool = False, min_score: float = 0.25):
        self.device, _, self.batch_size = runtime(device)
        self.model, self.open_vocab, self.min_score = model, open_vocab, min_score
        self.last_reason: Optional[str] = None
        self._classes: Optional[str] = None

    @classmethod
    def from_module(cls, model, device=None, open_vocab: bool = False, **kw):
        return cls(model, device, open_vocab, **kw)

    def _run(self, images) -> list[sv.Detections]:
        out = []
        for chunk in batches(list(images), self.batch_size):
            bgr = [np.ascontiguousarray(im[..., ::-1]) for im in chunk]
            with counted(len(chunk)):
                results = self.model.predict(bgr, device=str(self.device), conf=self.min_score, verbose=False)
            for r in results:
                d = sv.Detections.from_ultralytics(r)
                d.data["label"] = np.asarray(d.data.get("class_name", np.array([], dtype=object)), dtype=object)
                out.append(d)
        return out

    def detect(self, images: Sequence[np.ndarray], query: Optional[str] = None,
               kind: Optional[str] = None) -> list[sv.Detections]:
        if self.open_vocab:
            if query is None:
                raise ValueError("open-vocabulary detection needs a query")
            if self._classes != query:  # YOLO-World's CLIP text encoder truncates at 77 tokens
                self.model.set_classes([query])
                self._classes = query
            dets = self._run(images)
            for d in dets:
                d.data["label"] = np.array([query] * len(d), dtype=object)
            return dets
        dets = self._run(images)
        return [d[d.data["label"] == "person"] if len(d) else d for d in dets]
