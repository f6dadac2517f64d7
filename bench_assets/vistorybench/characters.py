"""Character detection, embedding and matching for one story (no Dagster; models are passed in).

Two embedding spaces, chosen by the character's tag: ``face`` for ``realistic_human`` (face detector + identity
model on the crop's largest face) and ``features`` for every other tag (CLIP ViT-L/14 in the paper profile).
A crop with no face cannot be scored against a realistic human: that pair is NaN and never matched.
Each face crop keeps a quality record (size, blur, detector confidence: ``models.face``, as EntityBench's): a face
below the floors is still matched (who is who); scores.py counts it apart (``n_low_quality``, its reason) beside the
paper's CIDS, which reads every matched crop as defined, and gives the values over good-quality faces only in the
character row's detail, so a low-quality face can be told from another person (issue 23).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from bench_assets.vistorybench import metrics

SPACES = ("face", "features")


def space_of(tag: str) -> str:
    return "face" if tag == "realistic_human" else "features"


def crop_box(image: np.ndarray, box: Sequence[float]) -> Optional[np.ndarray]:
    h, w = image.shape[:2]
    x1, y1 = max(0, int(np.floor(box[0]))), max(0, int(np.floor(box[1])))
    x2, y2 = min(w, int(np.ceil(box[2]))), min(h, int(np.ceil(box[3])))
    if x2 - x1 < 2 or y2 - y1 < 2:
        return None
    return np.ascontiguousarray(image[y1:y2, x1:x2])


def top_box(detector, image: np.ndarray) -> tuple[Optional[tuple[float, ...]], Optional[float]]:
    """Reference side: the top-1 'character' box (None: use the whole image)."""
    d = detector.detect([image], "character")[0]
    if len(d) == 0:
        return None, None
    i = int(np.argmax(d.confidence))
    return tuple(float(v) for v in d.xyxy[i]), float(d.confidence[i])


def face_embedding(face_model, image: np.ndarray) -> Optional[np.ndarray]:
    """Identity vector of the image's largest face, or None when no face is found."""
    return largest_face(face_model, image)[0]


def largest_face(face_model, image: np.ndarray) -> tuple[Optional[np.ndarray], Optional[dict]]:
    """(identity vector, quality record) of the image's largest face; (None, None) when no face is found. The quality
    record (``models.face.FaceQuality.as_dict``: box size in the crop's pixels, Laplacian blur of the aligned crop,
    detector confidence, the floors it is below under ``low``) is the same one EntityBench keeps; None where the face
    model does not measure quality (a model without ``faces``)."""
    if hasattr(face_model, "faces"):
        faces = face_model.faces(image)
        if not faces:
            return None, None
        f = max(faces, key=lambda x: (x.box[2] - x.box[0]) * (x.box[3] - x.box[1]))
        return f.vector, f.quality.as_dict()
    d = face_model.detect([image])[0]
    if len(d) == 0:
        return None, None
    areas = (d.xyxy[:, 2] - d.xyxy[:, 0]) * (d.xyxy[:, 3] - d.xyxy[:, 1])
    i = int(np.argmax(areas))
    return face_model.embed_faces(image, d[i:i + 1])[0], None


def low_quality(quality: Any) -> list[str]:
    """Pure: the floors a crop's face quality record (a dict or its JSON) is below; [] for a good face or none."""
    if isinstance(quality, str):
        import json
        quality = json.loads(quality)
    return list(quality.get("low") or []) if isinstance(quality, dict) else []


@dataclass
class Encoders:
    """The two identity encoders, or the reason each is unavailable."""
    face: Any = None
    face_reason: Optional[str] = None
    features: Any = None
    features_reason: Optional[str] = None

    def reason(self, space: str) -> Optional[str]:
        return self.face_reason if space == "face" else self.features_reason

    def available(self, space: str) -> bool:
        return (self.face if space == "face" else self.features) is not None


def embed(encoders: Encoders, space: str, images: Sequence[np.ndarray], batched: bool = True) -> list[Optional[np.ndarray]]:
    """One vector (or None) per image in one space. ``batched=False`` runs the feature model one image at a time
    (the benchmark script compares both)."""
    if not images or not encoders.available(space):
        return [None] * len(images)
    if space == "face":
        return [face_embedding(encoders.face, im) for im in images]
    if batched:
        return list(encoders.features.embed(list(images)))
    return [encoders.features.embed([im])[0] for im in images]


def embed_faces(encoders: Encoders, images: Sequence[np.ndarray]) -> tuple[list, list]:
    """(identity vectors, quality records) of each image's largest face, one face detection per image."""
    if not images or not encoders.available("face"):
        return [None] * len(images), [None] * len(images)
    got = [largest_face(encoders.face, im) for im in images]
    return [v for v, _ in got], [q for _, q in got]


def match_shot(on_stage: Sequence[str], tags: dict[str, str], refs: dict[str, np.ndarray],
               crops: dict[str, list[Optional[np.ndarray]]]) -> list[tuple[str, int, float]]:
    """Hungarian assignment of on-stage characters to the shot's crops.

    ``refs``: character -> [k, d] reference vectors in its space; ``crops``: space -> one vector (or None) per crop.
    score(c, g) = max over c's references of the cosine; NaN where either side has no vector.
    """
    n = len(next(iter(crops.values()))) if crops else 0
    chars = [c for c in on_stage if c in refs and len(refs[c])]
    if not chars or n == 0:
        return []
    scores = np.full((len(chars), n), np.nan)
    for i, c in enumerate(chars):
        vecs = crops[space_of(tags[c])]
        have = [j for j, v in enumerate(vecs) if v is not None]
        if have:
            scores[i, have] = metrics.best_reference_scores(np.stack([vecs[j] for j in have]), refs[c])
    return [(chars[r], c, float(scores[r, c])) for r, c in metrics.hungarian_match(scores)]
