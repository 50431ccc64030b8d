"""Text embedders behind one protocol: onnx (default), sentence-transformers, hash, none."""

from reos_memory.embeddings.base import Embedder, EmbedderUnavailableError, to_blob

__all__ = ["Embedder", "EmbedderUnavailableError", "to_blob"]
