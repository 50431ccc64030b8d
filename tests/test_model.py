"""The real all-MiniLM-L6-v2 (marked `model`; CI runs these too, `./dev test` prepares the model)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from harness.rpc_client import Server
from reos_memory.config import load_config
from tests.conftest import make_block

pytestmark = pytest.mark.model

ROOT = Path(__file__).resolve().parents[1]
STS = ROOT.parent / "shared" / "datasets" / "stsbenchmark" / "sts-test.csv"


@pytest.fixture(scope="module")
def onnx_dir() -> Path:
    folder = Path(load_config().model_dir)
    if not (folder / "manifest.json").is_file():
        pytest.fail(
            f"model not prepared in {folder}: run `./dev setup` (reos-memory model prepare)"
        )
    return folder


def test_manifest_records_verification(onnx_dir):
    manifest = json.loads((onnx_dir / "manifest.json").read_text())
    assert manifest["verified"] is True
    assert (
        manifest["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
        and manifest["dimensions"] == 384
    )
    assert manifest["min_cosine"] >= 0.999


def _reference_backend():
    """sentence-transformers on torch, which `./dev setup` installs only where a CPU build of torch
    is at hand (CPython 3.11 here); elsewhere prepare verifies against the recorded vectors."""
    return pytest.importorskip(
        "sentence_transformers", reason="the reference backend (torch) is not installed"
    )


def test_onnx_matches_reference_and_sts(onnx_dir):
    _reference_backend()
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.onnx import OnnxEmbedder
    from reos_memory.embeddings.prepare import FIXED_SENTENCES, sts_spearman
    from reos_memory.embeddings.sentence_transformers import SentenceTransformerEmbedder

    onnx = OnnxEmbedder(onnx_dir)
    ref = SentenceTransformerEmbedder(locate_model())
    a, b = onnx.embed(FIXED_SENTENCES), ref.embed(FIXED_SENTENCES)
    assert a.shape == (len(FIXED_SENTENCES), 384) and a.dtype == np.float32
    assert np.allclose(np.linalg.norm(a[1:], axis=1), 1.0, atol=1e-5)
    assert float((a * b).sum(axis=1).min()) >= 0.999
    if not STS.is_file():
        pytest.fail(f"STS-B test file missing at {STS}")
    assert sts_spearman(onnx.embed, STS) >= 0.82


@pytest.mark.e2e
def test_semantic_search_with_the_real_model(tmp_path, onnx_dir):
    with Server(tmp_path / "m.db", embedder="onnx") as srv:
        # a request that needs no model is answered while the model may still be loading
        assert srv.call("memory/stats")["embedder"]["backend"] == "onnx"
        make_block(srv, "The user prefers short answers without long explanations.", id="pref")
        make_block(srv, "Our Postgres database is backed up every night at 2am.", id="backup")
        make_block(srv, "The office cat is called Miso.", id="cat")
        res = srv.call(
            "memory/search", {"query": "How verbose should replies be?", "mode": "vector"}
        )
        assert res["matches"][0]["block_id"] == "pref"  # no shared words: meaning alone
        res = srv.call("memory/search", {"query": "when do DB backups run", "max_results": 1})
        assert res["matches"][0]["block_id"] == "backup"
        stats = srv.call("memory/stats")
        assert stats["embedder"]["status"] == "ready"
        assert stats["embedder"]["model_id"] == "sentence-transformers/all-MiniLM-L6-v2"
        assert stats["total_embeddings"] == 3


def test_recorded_reference_is_what_sentence_transformers_gives():
    """The vectors prepare checks against without torch are the reference's own, for the current
    fixed sentences (change FIXED_SENTENCES and this fails until tools/record_model_reference.py)."""
    _reference_backend()
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.prepare import FIXED_SENTENCES, recorded_reference
    from reos_memory.embeddings.sentence_transformers import SentenceTransformerEmbedder

    live = SentenceTransformerEmbedder(locate_model()).embed(FIXED_SENTENCES)
    assert float((live * recorded_reference()).sum(axis=1).min()) >= 0.99999


def test_prepare_without_torch_exports_and_verifies(tmp_path, monkeypatch):
    """Without sentence-transformers (any interpreter without a CPU torch), prepare still builds
    the graph from the weights and verifies it against the recorded reference; an export that
    disagrees with the reference is refused and leaves no verified model behind."""
    from reos_memory.embeddings import prepare as prep
    from reos_memory.embeddings import sentence_transformers as st
    from reos_memory.embeddings.base import EmbedderUnavailableError
    from reos_memory.embeddings.locate import locate_model
    from reos_memory.embeddings.onnx import OnnxEmbedder

    def no_torch(*args, **kwargs):
        raise EmbedderUnavailableError("the sentence-transformers backend needs torch")

    monkeypatch.setattr(st, "SentenceTransformerEmbedder", no_torch)
    src = locate_model()
    target = tmp_path / "onnx"
    lines: list[str] = []
    manifest = prep.prepare(src, target, log=lines.append)
    assert manifest["verified"] is True and manifest["min_cosine"] >= 0.999
    assert manifest["reference"] == "the recorded sentence-transformers embeddings"
    assert any("recorded" in line for line in lines)
    vecs = OnnxEmbedder(target).embed(["The cat sits on the mat.", "A cat is on a mat."])
    assert float(vecs[0] @ vecs[1]) > 0.8
    assert prep.prepared_ok(target, src)

    flipped = prep.recorded_reference()[:, ::-1].copy()
    monkeypatch.setattr(prep, "recorded_reference", lambda: flipped)
    with pytest.raises(RuntimeError, match="failed verification"):
        prep.prepare(src, tmp_path / "bad", log=lines.append)
    assert not (tmp_path / "bad").exists()
    assert prep.prepared_ok(target, src)  # the good one is untouched


@pytest.mark.e2e
@pytest.mark.slow
def test_reference_backend_shares_the_model_identity(tmp_path, onnx_dir):
    _reference_backend()
    db = tmp_path / "m.db"
    with Server(db, embedder="onnx") as srv:
        make_block(srv, "Kafka consumers commit offsets after processing.", id="k")
        onnx_vec = srv.call("memory/search", {"query": "offset commits", "mode": "vector"})[
            "matches"
        ][0]
    with Server(db, embedder="sentence-transformers") as srv:
        res = srv.call("memory/search", {"query": "offset commits", "mode": "vector"}, timeout=120)
        st_vec = res["matches"][0]
        assert (
            srv.call("memory/stats")["embedder"]["database_model_id"]
            == "sentence-transformers/all-MiniLM-L6-v2"
        )
    assert st_vec["block_id"] == onnx_vec["block_id"] == "k"
    assert (
        abs(
            st_vec["score_breakdown"]["vector_similarity"]
            - onnx_vec["score_breakdown"]["vector_similarity"]
        )
        < 1e-3
    )
