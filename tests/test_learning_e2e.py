"""memory/learn and memory/auto_link over real stdio."""

from __future__ import annotations

import pytest

from harness.rpc_client import Server
from tests.conftest import NO_CATCH_UP, cancel_at_commit, link, make_block

pytestmark = pytest.mark.e2e


def order(srv, query):
    return [
        m["block_id"]
        for m in srv.call("memory/search", {"query": query, "max_results": 20})["matches"]
    ]


def test_ratings_move_confidence_as_the_seed_says(server):
    chain = make_block(server, "because the cache was cold the first request was slow")
    a, b, c = (
        make_block(server, t)
        for t in ("warm the cache at start", "first request slow", "cold cache")
    )
    r1 = link(server, chain, a, conf=0.95)["id"]
    r2 = link(server, chain, b, "supports", conf=0.5)["id"]
    link(server, c, chain, conf=0.5)  # incoming: never touched
    up = server.call("memory/learn", {"chain_block_id": chain, "rating": 5})
    assert up["count"] == 2 and up["correction"] is None
    by = {ch["relationship_id"]: ch for ch in up["changes"]}
    assert by[r1]["before"] == 0.95 and by[r1]["after"] == 1.0
    assert by[r2]["before"] == 0.5 and by[r2]["after"] == 0.6
    again = server.call("memory/learn", {"chain_block_id": chain, "rating": 4})
    assert [ch["relationship_id"] for ch in again["changes"]] == [r2]  # r1 is capped
    assert server.call("memory/learn", {"chain_block_id": chain, "rating": 3})["count"] == 0
    down = server.call("memory/learn", {"chain_block_id": chain, "rating": 2})
    assert {ch["relationship_id"]: ch["after"] for ch in down["changes"]} == {r1: 0.8, r2: 0.5}
    for _ in range(5):
        server.call("memory/learn", {"chain_block_id": chain, "rating": 1})
    rels = server.call("memory/relationships/list", {"block_id": chain, "direction": "outgoing"})[
        "relationships"
    ]
    assert {r["confidence"] for r in rels} == {0.1}  # floor
    incoming = server.call(
        "memory/relationships/list", {"block_id": chain, "direction": "incoming"}
    )["relationships"]
    assert incoming[0]["confidence"] == 0.5


def test_a_low_rating_never_raises_an_edge_below_the_floor(server):
    chain = make_block(server, "a weak guess")
    low = link(server, chain, make_block(server, "barely related"), conf=0.05)["id"]
    down = server.call("memory/learn", {"chain_block_id": chain, "rating": 1})
    assert down["count"] == 0 and down["changes"] == []
    rel = server.call("memory/relationships/list", {"block_id": chain, "direction": "outgoing"})
    assert [(r["id"], r["confidence"]) for r in rel["relationships"]] == [(low, 0.05)]


def test_negative_rating_with_correction(server):
    chain = make_block(server, "the API limit is 100 requests per minute")
    fixed = make_block(server, "the API limit is 1000 requests per minute since March")
    res = server.call(
        "memory/learn", {"chain_block_id": chain, "rating": 1, "corrected_block_id": fixed}
    )
    corr = res["correction"]
    assert corr["source_block_id"] == fixed and corr["target_block_id"] == chain
    assert corr["relationship_type"] == "corrects" and corr["source"] == "feedback"
    again = server.call(
        "memory/learn", {"chain_block_id": chain, "rating": 2, "corrected_block_id": fixed}
    )
    assert again["correction"]["id"] == corr["id"]  # no duplicate edge
    assert server.call("memory/stats")["relationships_by_source"] == {"feedback": 1}
    hits = order(server, "API limit requests per minute")
    assert hits.index(fixed) < hits.index(chain)
    err = server.error(
        "memory/learn", {"chain_block_id": chain, "rating": 1, "corrected_block_id": "ghost"}
    )
    assert err.code == -32004 and err.data["field"] == "$.corrected_block_id"
    err = server.error("memory/learn", {"chain_block_id": chain, "rating": 6})
    assert err.code == -32602 and err.data["field"] == "$.rating"
    err = server.error(
        "memory/learn", {"chain_block_id": chain, "rating": 5, "corrected_block_id": fixed}
    )
    assert err.code == -32602 and err.data["field"] == "$.corrected_block_id"
    assert server.error("memory/learn", {"chain_block_id": "ghost", "rating": 5}).code == -32004


def test_learning_visibly_changes_search_ranking(server):
    c1 = make_block(server, "payments deploy checklist", id="c1")
    c2 = make_block(server, "payments deploy notes", id="c2")
    a = make_block(server, "page the on-call engineer", id="a")
    b = make_block(server, "freeze the release branch", id="b")
    link(server, c1, a, conf=0.5)
    link(server, c2, b, conf=0.5)
    before = order(server, "payments deploy checklist")
    assert before.index(c1) < before.index(c2)
    assert before.index(a) < before.index(b)  # reached from the better chain
    server.call("memory/learn", {"chain_block_id": c1, "rating": 1})  # c1's reasoning was bad
    server.call("memory/learn", {"chain_block_id": c2, "rating": 5})  # c2's was good
    after = order(server, "payments deploy checklist")
    assert after.index(b) < after.index(a)


def test_auto_link_rules(server):
    texts = [
        "kafka consumer offsets commit",
        "kafka consumer offsets commit policy",
        "kafka consumer offsets commit retries",
        "postgres vacuum schedule",
        "postgres vacuum schedule nightly",
    ]
    ids = [make_block(server, t, act_id="act-1") for t in texts]
    other = make_block(server, "kafka consumer offsets commit", act_id="act-2")
    res = server.call("memory/auto_link", {"act_id": "act-1", "threshold": 0.6, "max_links": 1})
    assert res["blocks_examined"] == 5 and res["relationships_created"] == 2  # 2 disjoint pairs
    rels = [
        r
        for b in ids
        for r in server.call("memory/relationships/list", {"block_id": b, "direction": "outgoing"})[
            "relationships"
        ]
    ]
    assert all(r["relationship_type"] == "similar_to" and r["source"] == "embedding" for r in rels)
    assert all(0.6 <= r["confidence"] <= 1.0 for r in rels)
    assert all(r["source_block_id"] != r["target_block_id"] for r in rels)
    degree = {b: sum(b in (r["source_block_id"], r["target_block_id"]) for r in rels) for b in ids}
    assert max(degree.values()) == 1  # max_links bounds every block's similar_to edges
    assert other not in {r["target_block_id"] for r in rels}  # act filter
    pairs = {frozenset((r["source_block_id"], r["target_block_id"])) for r in rels}
    assert len(pairs) == len(rels)  # never both directions
    again = server.call("memory/auto_link", {"act_id": "act-1", "threshold": 0.6, "max_links": 1})
    assert again["relationships_created"] == 0  # idempotent
    assert (
        server.call("memory/auto_link", {"threshold": 0.999})["relationships_created"] >= 1
    )  # the exact twin in act-2
    err = server.error("memory/auto_link", {"threshold": 2})
    assert err.code == -32602 and err.data["field"] == "$.threshold"


def test_auto_link_progress_and_cancel_write_nothing(db_path):
    with Server(db_path) as srv:
        made = [
            make_block(srv, f"ticket {i} about the login page", index=False) for i in range(200)
        ]
        srv.call("memory/index/batch", {"block_ids": made})
        resp, prog = cancel_at_commit(
            srv,
            db_path,
            "memory/auto_link",
            {"threshold": 0.5, "progress_token": 7},
            lambda p: p["done"] == p["total"] == 200,
        )
        assert prog and prog[-1]["token"] == 7
        assert resp["error"]["code"] == -32008
        assert srv.call("memory/stats")["total_relationships"] == 0
        done = srv.call("memory/auto_link", {"threshold": 0.5})
        assert done["relationships_created"] > 0


def test_index_batch_cancel_writes_nothing(db_path):
    with Server(db_path, env=NO_CATCH_UP) as srv:
        made = [make_block(srv, f"unindexed {i}", index=False) for i in range(100)]
        resp, _ = cancel_at_commit(
            srv,
            db_path,
            "memory/index/batch",
            {"block_ids": made, "progress_token": "p"},
            lambda p: p["done"] == 100,
        )
        assert resp["error"]["code"] == -32008
        assert srv.call("memory/stats")["total_embeddings"] == 0
