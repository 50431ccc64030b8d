"""A deterministic lexical embedder: hashed words and character trigrams, no model needed.

For tests and for machines without the model. Texts sharing words land close together;
it knows nothing of meaning, so it is never mixed with a real model's vectors.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

from reos_memory.embeddings.base import normalize_rows

_WORD = re.compile(r"\w+", re.UNICODE)


class HashEmbedder:
    """Feature hashing of lower-cased words (weight 1) and their character trigrams (0.5)."""

    def __init__(self, dimensions: int = 384) -> None:
        self.dimensions = dimensions
        self.model_id = f"reos-hash-v1-{dimensions}"

    def _features(self, text: str) -> Counter[str]:
        feats: Counter[str] = Counter()
        for word in _WORD.findall(text.lower()):
            feats["w:" + word] += 2
            padded = f"#{word}#"
            for i in range(len(padded) - 2):
                feats["t:" + padded[i : i + 3]] += 1
        return feats

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for feat, count in self._features(text).items():
                h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
                sign = 1.0 if (h >> 63) & 1 else -1.0
                out[row, h % self.dimensions] += sign * (1.0 + math.log(count))
        return normalize_rows(out)
