"""The reference backend: sentence-transformers on torch (slow to start, used to verify ONNX)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from reos_memory.embeddings.base import MAX_TOKENS, MINILM_DIMS, MINILM_ID, EmbedderUnavailableError


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 through sentence-transformers, loaded from a local folder only."""

    def __init__(self, folder: Path, batch_size: int = 32) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # a hub lookup hangs ~77 s here, then fails
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                "the sentence-transformers backend needs `pip install torch==2.13.0 sentence-transformers`"
            ) from exc
        self.model = SentenceTransformer(str(folder), device="cpu")
        self.model.max_seq_length = MAX_TOKENS
        self.model_id = MINILM_ID
        self.dimensions = MINILM_DIMS
        self.batch_size = batch_size

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        vecs = self.model.encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
        )
        return np.asarray(vecs, dtype=np.float32)
