"""all-MiniLM-L6-v2 exported to ONNX, run by onnxruntime + tokenizers (no torch on this path).

The exported graph includes mean pooling and L2 normalisation, so its output is the sentence
embedding. `reos-memory model prepare` writes the folder this backend reads.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reos_memory.embeddings.base import MAX_TOKENS, EmbedderUnavailableError

MANIFEST = "manifest.json"


class OnnxEmbedder:
    """Sentence embeddings from a prepared ONNX folder (model.onnx, tokenizer.json, manifest.json)."""

    def __init__(self, folder: Path, *, threads: int | None = None, batch_size: int = 32) -> None:
        manifest_path = folder / MANIFEST
        if not manifest_path.is_file():
            raise EmbedderUnavailableError(
                f"no prepared ONNX model in {folder}; run `reos-memory model prepare` once"
            )
        manifest: dict[str, Any] = json.loads(manifest_path.read_text())
        if not manifest.get("verified"):
            raise EmbedderUnavailableError(
                f"the ONNX model in {folder} failed verification; run `reos-memory model prepare --force`"
            )
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailableError(
                f"onnx backend needs onnxruntime and tokenizers: {exc}"
            ) from exc
        self.model_id: str = manifest["model_id"]
        self.dimensions: int = int(manifest["dimensions"])
        self.batch_size = batch_size
        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        # The shipped tokenizer truncates and pads to 128; the model takes 256 tokens.
        tok.no_padding()
        tok.no_truncation()
        tok.enable_truncation(max_length=MAX_TOKENS)
        tok.enable_padding(pad_id=0, pad_token="[PAD]")
        self._tok = tok
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = threads or min(2, os.cpu_count() or 1)
        opts.inter_op_num_threads = 1
        # The arena keeps its peak (~1 GB after a big batch) for the life of the process.
        opts.enable_cpu_mem_arena = False
        # Worker threads spin between the operators of a run (waking them for each one costs
        # ~0.5-0.9 ms of a 4.5 ms query embedding) but stop when the run ends: idle spinning
        # took the cores the next search needs (a search's vector step went from 0.2 ms to
        # 2.8 ms while ORT threads spun after their run).
        opts.add_session_config_entry("session.force_spinning_stop", "1")
        self._session = ort.InferenceSession(
            str(folder / "model.onnx"), opts, providers=["CPUExecutionProvider"]
        )

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        # Sorting by length keeps padding small inside each batch.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = self._tok.encode_batch([texts[i] for i in idx])
            feeds = {
                "input_ids": np.array([e.ids for e in enc], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in enc], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in enc], dtype=np.int64),
            }
            out[idx] = self._session.run(None, feeds)[0]
        return out
