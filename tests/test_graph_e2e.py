"""memory/related, memory/path and memory/stats over real stdio."""

from __future__ import annotations

import pytest

from tests.conftest import link, make_block

pytestmark = pytest.mark.e2e


@pytest.fixture
def chain(server):
    # a -> b -> c -> d, a -> e (supports), f -> a (follows_from)
    ids = {k: make_block(server, k) for k in "abcdef"}
    link(server, ids["a"], ids["b"])
    link(server, ids["b"], ids["c"])
    link(server, ids["c"], ids["d"])
    link(server, ids["a"], ids["e"], "supports")
    link(server, ids["f"], ids["a"], "follows_from")
    return ids


def test_related_depths_and_directions(server, chain):
    a = chain["a"]
    r = server.call("memory/related", {"block_id": a, "depth": 2})
    assert r["start_block_id"] == a and r["blocks_by_depth"]["0"] == [a]
    assert set(r["blocks_by_depth"]["1"]) == {chain["b"], chain["e"], chain["f"]}
    assert r["blocks_by_depth"]["2"] == [chain["c"]]
    assert set(r["visited_blocks"]) == {chain[k] for k in "abcef"}
    assert len(r["edges"]) == 4 and r["truncated"] is False
    assert set(r["edges"][0]) >= {
        "id",
        "source_block_id",
        "target_block_id",
        "relationship_type",
        "confidence",
    }
    out = server.call("memory/related", {"block_id": a, "depth": 3, "direction": "outgoing"})
    assert set(out["visited_blocks"]) == {chain[k] for k in "abcde"}
    inc = server.call("memory/related", {"block_id": a, "direction": "incoming"})
    assert inc["visited_blocks"] == [a, chain["f"]]
    typed = server.call("memory/related", {"block_id": a, "depth": 5, "rel_types": ["references"]})
    assert set(typed["visited_blocks"]) == {chain[k] for k in "abcd"}
    capped = server.call("memory/related", {"block_id": a, "depth": 5, "max_nodes": 3})
    assert len(capped["visited_blocks"]) == 3 and capped["truncated"] is True
    assert server.call("memory/related", {"block_id": a, "depth": 0})["visited_blocks"] == [a]
    assert server.error("memory/related", {"block_id": "nope"}).code == -32004


def test_related_prefers_confident_edges_when_truncated(server):
    hub = make_block(server, "hub")
    weak, strong = make_block(server, "weak"), make_block(server, "strong")
    link(server, hub, weak, conf=0.2)
    link(server, hub, strong, conf=0.95)
    r = server.call("memory/related", {"block_id": hub, "max_nodes": 2})
    assert r["visited_blocks"] == [hub, strong]


def test_path_shortest_and_limits(server, chain):
    p = server.call("memory/path", {"start_id": chain["f"], "end_id": chain["d"]})
    assert p["found"] and p["length"] == 4
    assert p["nodes"] == [chain[k] for k in "fabcd"]
    assert [e["source_block_id"] for e in p["path"]] == [chain[k] for k in "fabc"]
    # undirected by default: d back to f works; outgoing only does not
    assert server.call("memory/path", {"start_id": chain["d"], "end_id": chain["f"]})["length"] == 4
    none = server.call(
        "memory/path", {"start_id": chain["d"], "end_id": chain["f"], "direction": "outgoing"}
    )
    assert none == {"path": None, "found": False, "length": 0, "nodes": None, "confidence": None}
    assert (
        server.call("memory/path", {"start_id": chain["f"], "end_id": chain["d"], "max_depth": 3})[
            "found"
        ]
        is False
    )
    assert (
        server.call(
            "memory/path",
            {"start_id": chain["e"], "end_id": chain["d"], "rel_types": ["references"]},
        )["found"]
        is False
    )
    same = server.call("memory/path", {"start_id": chain["a"], "end_id": chain["a"]})
    assert same["found"] and same["length"] == 0 and same["path"] == []
    lonely = make_block(server, "lonely")
    assert server.call("memory/path", {"start_id": chain["a"], "end_id": lonely})["found"] is False
    assert (
        server.error("memory/path", {"start_id": chain["a"], "end_id": "ghost"}).data["field"]
        == "$.end_id"
    )


def test_weighted_path_picks_most_confident(server):
    s, x, y1, y2, t = (make_block(server, n) for n in ["s", "x", "y1", "y2", "t"])
    link(server, s, x, conf=0.3)  # short but weak: 0.3 * 0.3 = 0.09
    link(server, x, t, conf=0.3)
    link(server, s, y1, conf=0.9)  # longer but confident: 0.9^3 = 0.729
    link(server, y1, y2, conf=0.9)
    link(server, y2, t, conf=0.9)
    short = server.call("memory/path", {"start_id": s, "end_id": t})
    assert short["length"] == 2 and short["nodes"] == [s, x, t]
    best = server.call("memory/path", {"start_id": s, "end_id": t, "weighted": True})
    assert best["nodes"] == [s, y1, y2, t] and abs(best["confidence"] - 0.729) < 1e-9
    # the hop limit still applies to the weighted search
    limited = server.call(
        "memory/path", {"start_id": s, "end_id": t, "weighted": True, "max_depth": 2}
    )
    assert limited["nodes"] == [s, x, t]


def test_stats_counts_by_act(server):
    a1 = make_block(server, "x", act_id="act-1")
    a2 = make_block(server, "y", act_id="act-1")
    b1 = make_block(server, "z", act_id="act-2")
    server.call("blocks/create", {"type": "knowledge_fact", "act_id": "act-2", "content": "fact"})
    link(server, a1, a2)
    link(server, b1, a1, "supports")
    all_ = server.call("memory/stats")
    assert all_["total_blocks"] == 4 and all_["blocks_by_type"] == {
        "paragraph": 3,
        "knowledge_fact": 1,
    }
    assert all_["relationships_by_type"] == {"references": 1, "supports": 1}
    assert all_["relationships_by_source"] == {"user": 2}
    assert all_["embedder"]["status"] in {"disabled", "ready", "loading", "unavailable"}
    one = server.call("memory/stats", {"act_id": "act-1"})
    assert one["total_blocks"] == 2 and one["total_relationships"] == 1 and one["act_id"] == "act-1"
