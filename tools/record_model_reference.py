"""Record the sentence-transformers embeddings of the fixed verification sentences, which
`reos-memory model prepare` compares its ONNX export with where sentence-transformers (and torch)
is not installed. Run again after changing FIXED_SENTENCES; tests/test_model.py fails until then.

Usage: python tools/record_model_reference.py   (needs torch and sentence-transformers)
"""

from __future__ import annotations

import numpy as np

from reos_memory.embeddings.locate import locate_model
from reos_memory.embeddings.prepare import FIXED_SENTENCES, RECORDED_REFERENCE
from reos_memory.embeddings.sentence_transformers import SentenceTransformerEmbedder


def main() -> int:
    vectors = SentenceTransformerEmbedder(locate_model()).embed(FIXED_SENTENCES)
    np.save(RECORDED_REFERENCE, vectors.astype(np.float32))
    print(f"wrote {RECORDED_REFERENCE}: {vectors.shape[0]} sentences x {vectors.shape[1]} dims")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
