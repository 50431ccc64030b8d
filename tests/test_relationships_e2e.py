"""memory/relationships/* over real stdio."""

from __future__ import annotations

import pytest

from reos_memory.models import REL_SOURCES, REL_TYPES
from tests.conftest import make_block

pytestmark = pytest.mark.e2e


def test_create_list_update_delete(server):
    a, b = make_block(server, "a"), make_block(server, "b")
    rel = server.call(
        "memory/relationships/create",
        {"source_id": a, "target_id": b, "rel_type": "references", "confidence": 0.9},
    )["relationship"]
    assert (
        rel["id"].startswith("rel-")
        and rel["confidence"] == 0.9
        and rel["weight"] == 1.0
        and rel["source"] == "user"
    )
    assert rel["created_at"].endswith("Z")
    out = server.call("memory/relationships/list", {"block_id": a, "direction": "outgoing"})
    assert [r["id"] for r in out["relationships"]] == [rel["id"]]
    assert (
        server.call("memory/relationships/list", {"block_id": a, "direction": "incoming"})[
            "relationships"
        ]
        == []
    )
    assert server.call("memory/relationships/list", {"block_id": b})["count"] == 1
    assert (
        server.call("memory/relationships/list", {"block_id": b, "rel_types": ["supports"]})[
            "count"
        ]
        == 0
    )
    up = server.call(
        "memory/relationships/update",
        {"relationship_id": rel["id"], "confidence": 0.5, "weight": 2.5},
    )["relationship"]
    assert up["confidence"] == 0.5 and up["weight"] == 2.5
    assert (
        server.error("memory/relationships/update", {"relationship_id": rel["id"]}).code == -32602
    )
    assert server.call("memory/relationships/delete", {"relationship_id": rel["id"]}) == {
        "deleted": True,
        "relationship_id": rel["id"],
    }
    assert (
        server.call("memory/relationships/delete", {"relationship_id": rel["id"]})["deleted"]
        is False
    )
    assert (
        server.error(
            "memory/relationships/update", {"relationship_id": rel["id"], "weight": 1}
        ).code
        == -32004
    )


def test_all_types_and_sources(server):
    a, b = make_block(server, "a"), make_block(server, "b")
    for i, t in enumerate(REL_TYPES):
        server.call(
            "memory/relationships/create",
            {"source_id": a, "target_id": b, "rel_type": t, "source": REL_SOURCES[i % 5]},
        )
    stats = server.call("memory/stats")
    assert stats["total_relationships"] == 14
    assert set(stats["relationships_by_type"]) == set(REL_TYPES)
    assert set(stats["relationships_by_source"]) == set(REL_SOURCES)


def test_edge_rules(server):
    a, b = make_block(server, "a"), make_block(server, "b")
    rel = server.call(
        "memory/relationships/create", {"source_id": a, "target_id": b, "rel_type": "supports"}
    )["relationship"]
    dup = server.error(
        "memory/relationships/create",
        {"source_id": a, "target_id": b, "rel_type": "supports", "confidence": 0.2},
    )
    assert (
        dup.code == -32009
        and dup.data["existing_id"] == rel["id"]
        and rel["id"] in dup.error["message"]
    )
    # the reverse direction and another type are different edges
    server.call(
        "memory/relationships/create", {"source_id": b, "target_id": a, "rel_type": "supports"}
    )
    server.call(
        "memory/relationships/create", {"source_id": a, "target_id": b, "rel_type": "causes"}
    )
    loop = server.error(
        "memory/relationships/create", {"source_id": a, "target_id": a, "rel_type": "supports"}
    )
    assert loop.code == -32602 and loop.data["field"] == "$.target_id"
    missing = server.error(
        "memory/relationships/create",
        {"source_id": a, "target_id": "ghost", "rel_type": "supports"},
    )
    assert missing.code == -32004 and missing.data["field"] == "$.target_id"
    bad_type = server.error(
        "memory/relationships/create", {"source_id": a, "target_id": b, "rel_type": "likes"}
    )
    assert bad_type.code == -32602 and "similar_to" in bad_type.error["message"]
    bad_source = server.error(
        "memory/relationships/create",
        {"source_id": a, "target_id": b, "rel_type": "elaborates", "source": "robot"},
    )
    assert bad_source.code == -32602 and "embedding" in bad_source.error["message"]
    for conf in (-0.1, 1.01):
        err = server.error(
            "memory/relationships/create",
            {"source_id": a, "target_id": b, "rel_type": "elaborates", "confidence": conf},
        )
        assert err.code == -32602 and err.data["field"] == "$.confidence"
    assert server.call("memory/stats")["total_relationships"] == 3
