"""memory/extract over real stdio."""

from __future__ import annotations

import pytest

from harness.rpc_client import Server
from reos_memory.graph.extraction import clauses
from tests.conftest import make_block

pytestmark = pytest.mark.e2e

CHAIN = (
    "Because the cache was cold on startup, the first request took four seconds. "
    "Therefore we warm the cache at boot. However the warm-up slows every deploy."
)


def test_clause_splitting():
    assert clauses(CHAIN) == [
        ("follows_from", "the cache was cold on startup"),
        ("supports", "we warm the cache at boot"),
        ("contradicts", "the warm-up slows every deploy"),
    ]
    assert clauses("x as a result of heavy load, y") == [("causes", "heavy load")]
    assert clauses("It rained. As a result, the deploy failed.") == [
        ("causes", "the deploy failed")
    ]
    assert clauses("nothing to see here") == []


def test_connectors_references_and_idempotence(server):
    premise = make_block(server, "the cache was cold on startup", id="premise")
    conclusion = make_block(server, "we warm the cache at boot", id="conclusion")
    contrast = make_block(server, "the warm-up slows every deploy", id="contrast")
    make_block(server, "bananas are yellow", id="unrelated")
    spec = make_block(server, "deploy runbook", id="block-runbook1")
    chain = make_block(server, "chain", id="chain")
    text = CHAIN + " See [[block-runbook1]] and @premise; ignore [[no-such-block]]."
    res = server.call("memory/extract", {"block_id": chain, "content": text})
    got = {(r["target_block_id"], r["relationship_type"]): r for r in res["relationships_created"]}
    assert res["semantic"] is True and res["count"] == len(res["relationships_created"])
    assert ("premise", "follows_from") in got
    assert ("conclusion", "supports") in got
    assert ("contrast", "contradicts") in got
    assert got[(spec, "references")]["confidence"] == 0.95
    assert ("premise", "references") in got
    assert all(r["source"] == "inferred" and r["source_block_id"] == chain for r in got.values())
    assert all(0 < r["confidence"] <= 1 for r in got.values())
    assert not any(t == "unrelated" for t, _ in got)
    assert premise and conclusion and contrast
    again = server.call("memory/extract", {"block_id": chain, "content": text})
    assert again["count"] == 0 and again["relationships_created"] == []
    assert server.error("memory/extract", {"block_id": "ghost", "content": "x"}).code == -32004
    err = server.error("memory/extract", {"block_id": chain})
    assert err.code == -32602


def test_without_a_model_only_explicit_references(db_path):
    with Server(db_path, embedder="none") as srv:
        make_block(srv, "the cache was cold on startup", id="premise")
        chain = make_block(srv, "chain", id="chain")
        res = srv.call("memory/extract", {"block_id": chain, "content": CHAIN + " see @premise"})
        assert res["semantic"] is False
        assert [
            (r["target_block_id"], r["relationship_type"]) for r in res["relationships_created"]
        ] == [("premise", "references")]
