"""Detectors: SSD-MobileNetV2 COCO (offline), GroundingDINO / YOLO-World (paper), YOLO persons (paper)."""
from __future__ import annotations

import hashlib
import re
from collections import OrderedDict
from typing import Optional, Sequence

import cv2
import numpy as np
import supervision as sv

from bench_resources.models.base import counted

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
# How each label is phrased for matching free-text descriptions (people are described by role, not "person").
ANIMATE = {"person", "bird", "cat", "dog", "horse", "sheep", "cow", "elephant", "bear", "zebra", "giraffe"}
LABEL_TEXT = {"person": "a person: a man, a woman, a boy, a girl, an astronaut, a photographer, a player",
              "cup": "a cup or mug of coffee or tea", "cat": "a cat, a kitten"}
# Words that name a COCO class in a description (the label itself, its last word and plurals always count).
# A class is a defensible match for a description only if the description names it: MiniLM similarity alone
# maps "a silver pocket watch" to handbag (.48) above "a cup of coffee" to cup (.53) - no floor separates them.
LABEL_WORDS = {
    "person": ("person", "people", "man", "men", "woman", "women", "boy", "girl", "child", "children", "kid", "lady",
               "guy", "baby", "astronaut", "photographer", "player", "pedestrian", "cyclist", "rider", "soldier",
               "officer", "doctor", "worker", "dancer", "teenager", "student", "detective", "chef", "admiral",
               "commander", "captain", "king", "queen", "prince", "princess", "knight", "farmer", "girlfriend"),
    "bicycle": ("bicycle", "bike"), "motorcycle": ("motorcycle", "motorbike", "scooter"),
    "airplane": ("airplane", "aeroplane", "plane", "jet", "aircraft"), "boat": ("boat", "ship", "canoe", "yacht"),
    "cell phone": ("phone", "smartphone", "cellphone", "mobile"), "couch": ("couch", "sofa"),
    "tv": ("tv", "television", "monitor"), "cup": ("cup", "mug"), "cat": ("cat", "kitten"),
    "dog": ("dog", "puppy"), "dining table": ("table",), "potted plant": ("plant", "houseplant"),
    "refrigerator": ("refrigerator", "fridge"), "sports ball": ("ball", "football", "basketball", "soccer"),
    "teddy bear": ("teddy",), "handbag": ("handbag", "purse"), "laptop": ("laptop", "notebook computer"),
    "donut": ("donut", "doughnut"), "wine glass": ("wine glass",), "hair drier": ("hair drier", "hair dryer"),
    "car": ("car", "taxi", "sedan", "jeep"), "truck": ("truck", "lorry"), "bench": ("bench",),
    "traffic light": ("traffic light",), "stop sign": ("stop sign",), "clock": ("clock",),
}
SEMANTIC_ONLY_SIM = 0.6  # without a named class, MiniLM alone must be this sure (never the case for the bad matches)


def names_label(text: str, label: str) -> bool:
    """Whether ``text`` names the COCO ``label``: the label, its last word, or a listed synonym, as whole
    words (a plural 's' / 'es' allowed)."""
    low = text.lower()
    words = {label, label.split()[-1], *LABEL_WORDS.get(label, ())}
    return any(re.search(rf"\b{re.escape(w)}(s|es)?\b", low) for w in words)


def _empty() -> sv.Detections:
    return sv.Detections(xyxy=np.zeros((0, 4), np.float32), confidence=np.zeros(0, np.float32),
                         class_id=np.zeros(0, int), data={"label": np.array([], dtype=object)})


class SsdCocoDetector:
    """SSD-MobileNetV2 COCO (TensorFlow graph run by OpenCV's dnn module)."""

    def __init__(self, pb_path, pbtxt_path, min_score: float = 0.3, cache_frames: int = 256):
        self.net = cv2.dnn.readNetFromTensorflow(str(pb_path), str(pbtxt_path))
        self.min_score = min_score
        # Several entities are queried on the same frames: detect each frame once (closed vocabulary).
        self._cache: "OrderedDict[bytes, sv.Detections]" = OrderedDict()
        self._cache_frames = cache_frames

    def detect_all(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        out = []
        for im in images:
            key = hashlib.blake2b(np.ascontiguousarray(im).tobytes(), digest_size=16).digest() + str(im.shape).encode()
            if key in self._cache:
                self._cache.move_to_end(key)
                out.append(self._cache[key])
                continue
            out.append(self._detect_one(im))
            self._cache[key] = out[-1]
            if len(self._cache) > self._cache_frames:
                self._cache.popitem(last=False)
        return out

    def _detect_one(self, im: np.ndarray) -> sv.Detections:
        h, w = im.shape[:2]
        blob = cv2.dnn.blobFromImage(im, size=(300, 300), swapRB=False)  # input is already RGB
        with counted(1):
            self.net.setInput(blob)
            raw = self.net.forward()[0, 0]
        raw = raw[raw[:, 2] >= self.min_score]
        if len(raw) == 0:
            return _empty()
        xyxy = np.clip(raw[:, 3:7] * [w, h, w, h], 0, [w, h, w, h]).astype(np.float32)
        ids = raw[:, 1].astype(int)
        return sv.Detections(xyxy=xyxy, confidence=raw[:, 2].astype(np.float32), class_id=ids,
                             data={"label": np.array([COCO_TF.get(i, "?") for i in ids], dtype=object)})

    def detect_label(self, images: Sequence[np.ndarray], label: str) -> list[sv.Detections]:
        return [d[d.data["label"] == label] if len(d) else d for d in self.detect_all(images)]


class SsdTextQueryDetector:
    """Offline stand-in for an open-vocabulary detector: the query is mapped to the nearest COCO label
    by MiniLM sentence similarity, then SSD's boxes of that label are returned.

    Closed vocabulary: a query with no COCO label above ``min_label_sim`` (a location, say) returns no
    boxes and sets ``last_reason``, so callers record 'unavailable' instead of 'absent'.
    """

    closed_vocabulary = True  # entities of one class cannot be told apart by their descriptions

    def __init__(self, ssd: SsdCocoDetector, text_embedder, min_label_sim: float = 0.3):
        self.ssd, self.text, self.min_label_sim = ssd, text_embedder, min_label_sim
        self.labels = sorted(set(COCO_TF.values()))
        self.label_emb = text_embedder.embed([LABEL_TEXT.get(l, f"a {l}") for l in self.labels])
        self._cache: dict[str, tuple[Optional[str], float]] = {}
        self.last_reason: Optional[str] = None
        self.last_label: Optional[str] = None

    def match_label(self, query: str, kind: Optional[str] = None) -> tuple[Optional[str], float]:
        """Nearest COCO label by MiniLM similarity. The registry's entity type narrows the vocabulary:
        a character is a person unless its description names an animal class (MiniLM alone matches
        "a man in a suit and tie" to 'tie'); an object is never a person."""
        key = (query, kind)
        if key not in self._cache:
            if kind == "character":
                words = set(re.findall(r"[a-z]+", query.lower()))
                animals = sorted(l for l in ANIMATE - {"person"} if l in words)
                self._cache[key] = (animals[0] if animals else "person", 1.0)
            else:
                allowed = np.array([l != "person" or kind != "object" for l in self.labels])
                sims = np.where(allowed, self.label_emb @ self.text.embed([query])[0], -np.inf)
                named = np.array([a and names_label(query, l) for a, l in zip(allowed, self.labels)])
                if named.any():  # the description names a class: MiniLM only chooses among the named ones
                    i = int(np.argmax(np.where(named, sims, -np.inf)))
                    self._cache[key] = (self.labels[i], float(sims[i]))
                else:
                    i = int(np.argmax(sims))
                    ok = sims[i] >= max(self.min_label_sim, SEMANTIC_ONLY_SIM)
                    self._cache[key] = (self.labels[i] if ok else None, float(sims[i]))
        return self._cache[key]

    def detect(self, images: Sequence[np.ndarray], query: str, kind: Optional[str] = None) -> list[sv.Detections]:
        if kind == "location":
            self.last_reason = "offline detector (SSD-MobileNetV2 COCO) cannot ground locations: no scene classes"
            return [_empty() for _ in images]
        label, sim = self.match_label(query, kind)
        self.last_label = label
        if label is None:
            self.last_reason = (f"offline detector (SSD-MobileNetV2 COCO) has no class for the query: the "
                                f"description names no COCO class and the nearest by MiniLM is only "
                                f"{sim:.2f} (< {max(self.min_label_sim, SEMANTIC_ONLY_SIM)})")
            return [_empty() for _ in images]
        self.last_reason = None
        return self.ssd.detect_label(images, label)


class SsdPersonDetector:
    def __init__(self, ssd: SsdCocoDetector):
        self.ssd = ssd

    def detect(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        return self.ssd.detect_label(images, "person")


class GroundingDinoDetector:
    """GroundingDINO through Hugging Face transformers (no compiled extension)."""

    def __init__(self, model, processor, device, box_threshold: float = 0.25, text_threshold: float = 0.20):
        self.model, self.processor, self.device = model.eval().to(device), processor, device
        self.box_threshold, self.text_threshold = box_threshold, text_threshold
        self.last_reason = None

    @classmethod
    def load(cls, source: str, device):
        from transformers import AutoModelForZeroShotObjectDetection, AutoProcessor
        return cls(AutoModelForZeroShotObjectDetection.from_pretrained(source), AutoProcessor.from_pretrained(source),
                   device)

    def detect(self, images: Sequence[np.ndarray], query: str, kind: Optional[str] = None) -> list[sv.Detections]:
        import torch
        text = query.lower().strip().rstrip(".") + "."  # GroundingDINO expects lower-case, period-terminated
        out = []
        for im in images:
            inputs = self.processor(images=im, text=text, return_tensors="pt").to(self.device)
            with torch.inference_mode(), counted(1):
                res = self.model(**inputs)
            r = self.processor.post_process_grounded_object_detection(
                res, inputs.input_ids, threshold=self.box_threshold, text_threshold=self.text_threshold,
                target_sizes=[im.shape[:2]])[0]
            if len(r["boxes"]) == 0:
                out.append(_empty())
                continue
            out.append(sv.Detections(xyxy=r["boxes"].cpu().numpy().astype(np.float32),
                                     confidence=r["scores"].cpu().numpy().astype(np.float32),
                                     class_id=np.zeros(len(r["boxes"]), int),
                                     data={"label": np.array([query] * len(r["boxes"]), dtype=object)}))
        return out


class UltralyticsDetector:
    """YOLO-World (open vocabulary: set_classes([query])) or plain YOLO (person class) via ultralytics."""

    def __init__(self, model, device, open_vocab: bool, min_score: float = 0.25):
        self.model, self.device, self.open_vocab, self.min_score = model, device, open_vocab, min_score
        self.last_reason = None
        self._classes: Optional[str] = None

    def _run(self, images) -> list[sv.Detections]:
        out = []
        for im in images:
            with counted(1):
                r = self.model.predict(im[..., ::-1], device=str(self.device), conf=self.min_score, verbose=False)[0]
            out.append(sv.Detections.from_ultralytics(r))
        return out

    def detect(self, images: Sequence[np.ndarray], query: Optional[str] = None,
               kind: Optional[str] = None) -> list[sv.Detections]:
        if self.open_vocab:
            if query is None:
                raise ValueError("open-vocabulary detection needs a query")
            if self._classes != query:  # YOLO-World's CLIP text encoder truncates at 77 tokens
                self.model.set_classes([query])
                self._classes = query
            return self._run(images)
        dets = self._run(images)
        return [d[d.data["class_name"] == "person"] if len(d) else d for d in dets]
