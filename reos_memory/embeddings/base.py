"""The embedder protocol: one batch method returning L2-normalised float32 rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

MINILM_ID = "sentence-transformers/all-MiniLM-L6-v2"
MINILM_DIMS = 384
MAX_TOKENS = 256


class EmbedderUnavailableError(Exception):
    """The backend cannot run here (missing file or package); the message says how to fix it."""


class Embedder(Protocol):
    """Turns texts into unit-length vectors; two backends with the same `model_id` agree."""

    model_id: str
    dimensions: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One float32 row of length `dimensions` per text, each of L2 norm 1 (or all zero)."""
        ...


def to_blob(vector: np.ndarray) -> bytes:
    """The little-endian float32 bytes stored in block_embeddings.embedding."""
    import numpy as np

    return np.ascontiguousarray(vector, dtype="<f4").tobytes()


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (matrix / norms).astype(np.float32, copy=False)
