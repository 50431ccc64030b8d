"""Bad input of every kind gets -32602 naming the field; nothing stored changes."""

from __future__ import annotations

import hashlib

import apsw
import pytest

from tests.conftest import make_block

pytestmark = pytest.mark.e2e


def snapshot(db_path) -> str:
    conn = apsw.Connection(str(db_path))
    h = hashlib.sha256()
    for table in ("blocks", "block_relationships", "block_embeddings"):
        for row in conn.execute(f"SELECT * FROM {table} ORDER BY rowid"):
            h.update(repr(row).encode())
    conn.close()
    return h.hexdigest()


CASES = [
    # (method, params, field)
    ("blocks/create", {"type": "paragraph"}, "$"),  # missing act_id
    ("blocks/create", {"type": 5, "act_id": "a"}, "$.type"),
    ("blocks/create", {"type": "Not A Type", "act_id": "a"}, "$.type"),
    ("blocks/create", {"type": "paragraph", "act_id": "a", "colour": "red"}, "$.colour"),
    ("blocks/create", {"type": "paragraph", "act_id": ""}, "$.act_id"),
    ("blocks/create", {"type": "paragraph", "act_id": "a", "position": -1}, "$.position"),
    (
        "blocks/create",
        {"type": "paragraph", "act_id": "a", "rich_text": [{"content": "x", "blink": True}]},
        "$.rich_text[0].blink",
    ),
    (
        "blocks/create",
        {"type": "paragraph", "act_id": "a", "properties": {"big": "x" * 300_000}},
        "$.properties",
    ),
    ("blocks/create", {"type": "paragraph", "act_id": "a", "id": "has space"}, "$.id"),
    ("blocks/get", {"block_id": 12}, "$.block_id"),
    ("blocks/get", {}, "$"),
    ("blocks/list", {"limit": 0}, "$.limit"),
    ("blocks/list", {"limit": 5000}, "$.limit"),
    ("blocks/update", {"block_id": "B", "expected_version": "1"}, "$.expected_version"),
    ("blocks/update", {"block_id": "B", "content": None}, "$.content"),
    ("blocks/delete", {"block_id": "B", "recursive": "yes"}, "$.recursive"),
    (
        "memory/relationships/create",
        {"source_id": "A", "target_id": "B", "rel_type": "likes"},
        "$.rel_type",
    ),
    (
        "memory/relationships/create",
        {"source_id": "A", "target_id": "B", "rel_type": "supports", "source": "x"},
        "$.source",
    ),
    (
        "memory/relationships/create",
        {"source_id": "A", "target_id": "B", "rel_type": "supports", "confidence": 2},
        "$.confidence",
    ),
    (
        "memory/relationships/create",
        {"source_id": "A", "target_id": "B", "rel_type": "supports", "confidence": "high"},
        "$.confidence",
    ),
    (
        "memory/relationships/create",
        {"source_id": "A", "target_id": "B", "rel_type": "supports", "weight": -1},
        "$.weight",
    ),
    (
        "memory/relationships/create",
        {"source_id": "A", "target_id": "A", "rel_type": "supports"},
        "$.target_id",
    ),
    ("memory/relationships/list", {"block_id": "A", "direction": "sideways"}, "$.direction"),
    (
        "memory/relationships/list",
        {"block_id": "A", "rel_types": ["supports", "nope"]},
        "$.rel_types[1]",
    ),
    ("memory/relationships/update", {"relationship_id": "r", "confidence": 1.5}, "$.confidence"),
    ("memory/related", {"block_id": "A", "depth": 11}, "$.depth"),
    ("memory/related", {"block_id": "A", "max_nodes": 0}, "$.max_nodes"),
    ("memory/related", {"block_id": "A", "depth": 1.5}, "$.depth"),
    ("memory/path", {"start_id": "A", "end_id": "B", "max_depth": 0}, "$.max_depth"),
    ("memory/path", {"start_id": "A", "end_id": "B", "weighted": 1}, "$.weighted"),
    ("memory/stats", {"act_id": ["x"]}, "$.act_id"),
]


def test_each_bad_input_names_field_and_changes_nothing(server, db_path):
    a, b = make_block(server, "a", id="A"), make_block(server, "b", id="B")
    server.call(
        "memory/relationships/create", {"source_id": a, "target_id": b, "rel_type": "supports"}
    )
    before = snapshot(db_path)
    for method, params, field in CASES:
        err = server.error(method, params)
        assert err.code == -32602, (method, params, err.error)
        assert err.data["field"] == field, (method, params, err.error)
        assert err.data["reason"] == "invalid_params"
        assert field in err.error["message"]
    assert server.call("ping") == {"pong": True}
    assert snapshot(db_path) == before


def test_enum_errors_list_valid_values(server):
    err = server.error("memory/related", {"block_id": "A", "direction": "up"})
    assert all(v in err.error["message"] for v in ("outgoing", "incoming", "both"))
    err = server.error("memory/relationships/list", {"block_id": "A", "rel_types": ["nope"]})
    assert "responds_to" in err.error["message"]


def test_internal_details_never_leak(server):
    # deep nesting is a parse problem for us, never a crash
    server.send_bytes(b"[" * 100_000 + b"]" * 100_000)
    assert server.call("ping") == {"pong": True}
    for line in server.raw_lines:
        assert b"Traceback" not in line
