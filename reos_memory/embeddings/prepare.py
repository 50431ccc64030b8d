"""`reos-memory model prepare`: export all-MiniLM-L6-v2 to ONNX once and verify it.

The graph (`export.py`, built from the weights without torch) ends in mean pooling and L2
normalisation, so the ONNX output is the sentence embedding itself. Verification compares it with
the sentence-transformers reference (cosine >= 0.999 on a fixed sentence set: computed live where
sentence-transformers is installed, else its recorded embeddings) and, when the STS-B test file is
at hand, checks the Spearman correlation of cosine scores with human judgements (>= 0.82; the
reference is 0.8203).
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from reos_memory.embeddings.base import MAX_TOKENS, MINILM_DIMS, MINILM_ID
from reos_memory.embeddings.onnx import MANIFEST

MIN_COSINE = 0.999
RECORDED_REFERENCE = Path(__file__).with_name("reference_minilm.npy")
MIN_STS_SPEARMAN = 0.82

FIXED_SENTENCES = [
    "",
    "x",
    "The cat sits on the mat.",
    "How do I configure authentication?",
    "Authentication uses JWT tokens stored in an HttpOnly cookie.",
    "The user prefers concise responses without excessive explanation.",
    "Because the cache was cold, therefore the first request took four seconds.",
    "In this project, requests often hits SSL certificate errors; use httpx instead.",
    "Senior Python developer with 5 years experience building Django applications.",
    "Héllo wörld — naïve café, 日本語のテキスト, emoji 🚀 and math ∑x².",
    "def add(a, b):\n    return a + b  # simple function",
    "SELECT id, content FROM blocks WHERE act_id = ? ORDER BY created_at DESC LIMIT 10;",
    "A very long paragraph about memory systems. " * 60,  # beyond 256 tokens: truncated alike
    "Microstructural development of human newborn cerebral white matter assessed in vivo.",
    "0-dimensional biomaterials show inductive properties.",
    "Do not keep retrying requests with SSL in this project; switch to httpx after the first error.",
]


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman rank correlation with average ranks for ties."""

    def ranks(x: np.ndarray) -> np.ndarray:
        order = np.argsort(x, kind="mergesort")
        r = np.empty(len(x), dtype=np.float64)
        r[order] = np.arange(len(x), dtype=np.float64)
        xs = x[order]
        i = 0
        while i < len(x):
            j = i
            while j + 1 < len(x) and xs[j + 1] == xs[i]:
                j += 1
            if j > i:
                r[order[i : j + 1]] = (i + j) / 2.0
            i = j + 1
        return r

    ra, rb = ranks(np.asarray(a, dtype=np.float64)), ranks(np.asarray(b, dtype=np.float64))
    ra -= ra.mean()
    rb -= rb.mean()
    return float((ra * rb).sum() / np.sqrt((ra * ra).sum() * (rb * rb).sum()))


def read_sts(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """STS-B rows (tab-separated: genre, file, year, id, score, sentence1, sentence2)."""
    s1, s2, scores = [], [], []
    with path.open(encoding="utf-8") as f:
        for row in csv.reader(f, delimiter="\t", quoting=csv.QUOTE_NONE):
            if len(row) < 7:
                continue
            scores.append(float(row[4]))
            s1.append(row[5])
            s2.append(row[6])
    return s1, s2, np.array(scores)


def sts_spearman(embed: Callable[[list[str]], np.ndarray], path: Path) -> float:
    s1, s2, gold = read_sts(path)
    a, b = embed(s1), embed(s2)
    return spearman((a * b).sum(axis=1), gold)


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _source_fingerprint(src: Path) -> str:
    weights = src / "model.safetensors"
    if not weights.exists():
        weights = src / "pytorch_model.bin"
    return _sha256(weights)


def recorded_reference() -> np.ndarray:
    """The sentence-transformers embeddings of FIXED_SENTENCES, recorded by
    `tools/record_model_reference.py` (tests/test_model.py checks them against the live reference
    wherever sentence-transformers is installed)."""
    vectors = np.load(RECORDED_REFERENCE)
    if vectors.shape != (len(FIXED_SENTENCES), MINILM_DIMS):
        raise RuntimeError(
            f"{RECORDED_REFERENCE} holds {vectors.shape}, not one vector per fixed sentence;"
            " run tools/record_model_reference.py"
        )
    return vectors.astype(np.float32)


def reference_vectors(src: Path) -> tuple[np.ndarray, str]:
    """The reference embeddings of FIXED_SENTENCES and where they came from: sentence-transformers
    itself when it is installed, else the recorded ones (so no torch is needed to prepare)."""
    from reos_memory.embeddings.base import EmbedderUnavailableError
    from reos_memory.embeddings.sentence_transformers import SentenceTransformerEmbedder

    try:
        reference = SentenceTransformerEmbedder(src)
    except EmbedderUnavailableError:
        return recorded_reference(), "the recorded sentence-transformers embeddings"
    return reference.embed(FIXED_SENTENCES), "sentence-transformers"


def prepared_ok(target: Path, src: Path) -> bool:
    m = target / MANIFEST
    if not m.is_file() or not (target / "model.onnx").is_file():
        return False
    manifest = json.loads(m.read_text())
    return bool(manifest.get("verified")) and manifest.get("source_sha256") == _source_fingerprint(
        src
    )


def prepare(
    src: Path,
    target: Path,
    *,
    sts_path: Path | None = None,
    force: bool = False,
    log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Export (unless already prepared from the same weights) and verify; returns the manifest."""
    if not force and prepared_ok(target, src):
        manifest: dict[str, Any] = json.loads((target / MANIFEST).read_text())
        log(
            f"model already prepared in {target} (verified, min cosine {manifest['min_cosine']:.6f})"
        )
        return manifest
    from reos_memory.embeddings.export import export
    from reos_memory.embeddings.onnx import OnnxEmbedder

    t0 = time.perf_counter()
    staging = target.with_name(target.name + ".staging")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    export(src, staging / "model.onnx")
    shutil.copy(src / "tokenizer.json", staging / "tokenizer.json")
    log(f"exported ONNX in {time.perf_counter() - t0:.1f}s")

    manifest = {
        "model_id": MINILM_ID,
        "dimensions": MINILM_DIMS,
        "max_tokens": MAX_TOKENS,
        "source": str(src),
        "source_sha256": _source_fingerprint(src),
        "onnx_sha256": _sha256(staging / "model.onnx"),
        "exporter": "reos_memory.embeddings.export",
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "verified": True,  # provisional, so the embedder will load for the check below
    }
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
    candidate = OnnxEmbedder(staging, threads=os.cpu_count())
    ref, against = reference_vectors(src)
    got = candidate.embed(FIXED_SENTENCES)
    cosines = (ref * got).sum(axis=1)
    manifest["min_cosine"] = float(cosines.min())
    manifest["reference"] = against
    log(f"cosine against {against} on {len(FIXED_SENTENCES)} sentences: min {cosines.min():.6f}")
    ok = manifest["min_cosine"] >= MIN_COSINE
    if sts_path is not None and sts_path.is_file():
        rho = sts_spearman(candidate.embed, sts_path)
        manifest["sts_spearman"] = round(rho, 4)
        manifest["sts_file"] = str(sts_path)
        log(f"STS-B Spearman ({sts_path.name}): {rho:.4f} (needs >= {MIN_STS_SPEARMAN})")
        ok = ok and rho >= MIN_STS_SPEARMAN
    manifest["verified"] = ok
    (staging / MANIFEST).write_text(json.dumps(manifest, indent=2))
    if not ok:
        raise RuntimeError(f"ONNX export failed verification: {manifest}")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    log(f"prepared {target}")
    return manifest
