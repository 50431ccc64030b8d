"""blocks/* over real stdio."""

from __future__ import annotations

import pytest

from tests.conftest import make_block

pytestmark = pytest.mark.e2e


def test_create_get_with_rich_text_and_children(server):
    page = server.call(
        "blocks/create", {"type": "page", "act_id": "act-1", "properties": {"icon": "x"}}
    )["block"]
    assert page["content"] == "" and page["version"] == 1 and page["position"] == 0
    a = server.call(
        "blocks/create",
        {
            "type": "to_do",
            "act_id": "act-1",
            "parent_id": page["id"],
            "rich_text": [{"content": "Hello "}, {"content": "world", "bold": True}],
            "properties": {"checked": False},
        },
    )["block"]
    assert a["content"] == "Hello world" and a["rich_text"][1]["bold"] is True
    b = make_block(server, "second", parent_id=page["id"])
    got = server.call("blocks/get", {"block_id": page["id"], "include_children": True})["block"]
    assert [c["id"] for c in got["children"]] == [a["id"], b]
    assert [c["position"] for c in got["children"]] == [0, 1]
    assert "children" not in server.call("blocks/get", {"block_id": page["id"]})["block"]


def test_client_chosen_id_is_never_overwritten(server):
    bid = make_block(server, "original", id="note-1")
    assert bid == "note-1"
    err = server.error(
        "blocks/create",
        {"type": "paragraph", "act_id": "act-1", "content": "clobber", "id": "note-1"},
    )
    assert err.code == -32009
    assert server.call("blocks/get", {"block_id": "note-1"})["block"]["content"] == "original"


def test_content_and_rich_text_are_exclusive(server):
    err = server.error(
        "blocks/create",
        {"type": "paragraph", "act_id": "a", "content": "x", "rich_text": [{"content": "y"}]},
    )
    assert err.code == -32602 and err.data["field"] == "$.rich_text"


def test_parent_rules(server):
    err = server.error(
        "blocks/create", {"type": "paragraph", "act_id": "a", "parent_id": "missing"}
    )
    assert err.code == -32004 and err.data["field"] == "$.parent_id"
    p = make_block(server, act_id="act-A")
    err = server.error("blocks/create", {"type": "paragraph", "act_id": "act-B", "parent_id": p})
    assert err.code == -32602 and err.data["field"] == "$.parent_id"
    child = make_block(server, act_id="act-A", parent_id=p)
    err = server.error("blocks/update", {"block_id": p, "parent_id": child})
    assert err.code == -32602  # no cycles


def test_update_merges_properties_and_bumps_version(server):
    bid = server.call(
        "blocks/create",
        {
            "type": "to_do",
            "act_id": "a",
            "content": "x",
            "properties": {"checked": False, "color": "red"},
        },
    )["block"]["id"]
    b = server.call(
        "blocks/update", {"block_id": bid, "properties": {"checked": True, "color": None}}
    )["block"]
    assert b["properties"] == {"checked": True} and b["version"] == 2
    b = server.call(
        "blocks/update", {"block_id": bid, "properties": {"k": 1}, "replace_properties": True}
    )["block"]
    assert b["properties"] == {"k": 1}
    b = server.call("blocks/update", {"block_id": bid, "content": "new text"})["block"]
    assert (
        b["content"] == "new text"
        and b["rich_text"] == [{"content": "new text"}]
        and b["version"] == 4
    )


def test_stale_writer_gets_conflict_not_silent_overwrite(server):
    bid = make_block(server, "v1")
    v = server.call("blocks/get", {"block_id": bid})["block"]["version"]
    server.call(
        "blocks/update", {"block_id": bid, "content": "a day of notes", "expected_version": v}
    )
    err = server.error(
        "blocks/update", {"block_id": bid, "content": "stale copy", "expected_version": v}
    )
    assert err.code == -32009 and err.data["current_version"] == v + 1
    assert server.call("blocks/get", {"block_id": bid})["block"]["content"] == "a day of notes"


def test_list_filters_and_cursor_paging(server):
    ids = [make_block(server, f"b{i}", act_id="act-1") for i in range(7)]
    make_block(server, "other", act_id="act-2")
    seen, cursor = [], None
    while True:
        params = {"act_id": "act-1", "limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = server.call("blocks/list", params)
        seen += [b["id"] for b in page["blocks"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids
    assert len(server.call("blocks/list", {"act_id": "act-2"})["blocks"]) == 1
    err = server.error("blocks/list", {"cursor": "garbage!!"})
    assert err.code == -32602 and err.data["field"] == "$.cursor"
    parent = ids[0]
    kid = make_block(server, "kid", act_id="act-1", parent_id=parent)
    assert [b["id"] for b in server.call("blocks/list", {"parent_id": parent})["blocks"]] == [kid]
    roots = server.call("blocks/list", {"parent_id": None, "limit": 1000})["blocks"]
    assert kid not in [b["id"] for b in roots] and len(roots) == 8


def test_delete_removes_edges_and_embedding(server, db_path):
    a, b, c = (make_block(server, x) for x in "abc")
    server.call(
        "memory/relationships/create", {"source_id": a, "target_id": b, "rel_type": "supports"}
    )
    server.call(
        "memory/relationships/create", {"source_id": c, "target_id": a, "rel_type": "references"}
    )
    server.call(
        "memory/relationships/create", {"source_id": b, "target_id": c, "rel_type": "references"}
    )
    assert server.call("memory/stats")["total_embeddings"] == 3  # indexed on create
    res = server.call("blocks/delete", {"block_id": a})
    assert res["deleted"] and res["relationships_removed"] == 2 and res["embeddings_removed"] == 1
    stats = server.call("memory/stats")
    assert stats["total_relationships"] == 1 and stats["total_embeddings"] == 2
    assert server.call("blocks/delete", {"block_id": a})["deleted"] is False
    assert server.error("blocks/get", {"block_id": a}).code == -32004


def test_delete_with_children_needs_recursive(server):
    p = make_block(server, "parent")
    k = make_block(server, "kid", parent_id=p)
    g = make_block(server, "grandkid", parent_id=k)
    err = server.error("blocks/delete", {"block_id": p})
    assert err.code == -32009 and err.data["descendants"] == 2
    assert server.call("memory/stats")["total_blocks"] == 3
    res = server.call("blocks/delete", {"block_id": p, "recursive": True})
    assert set(res["deleted_block_ids"]) == {p, k, g}
    assert server.call("memory/stats")["total_blocks"] == 0


def test_created_at_dates_imported_history(server):
    b = server.call(
        "blocks/create",
        {
            "type": "paragraph",
            "act_id": "conv",
            "content": "Caroline: I went to a support group",
            "created_at": "2023-05-08T13:56:00+02:00",
        },
    )["block"]
    assert b["created_at"] == b["updated_at"] == "2023-05-08T11:56:00.000Z"
    naive = server.call(
        "blocks/create",
        {"type": "paragraph", "act_id": "conv", "content": "x", "created_at": "2023-05-08 13:56"},
    )["block"]
    assert naive["created_at"] == "2023-05-08T13:56:00.000Z"
    assert server.call("blocks/get", {"block_id": b["id"]})["block"]["created_at"].startswith(
        "2023"
    )
    stored = server.call(  # already in the stored form: kept as it is
        "blocks/create",
        {
            "type": "paragraph",
            "act_id": "conv",
            "content": "z",
            "created_at": "2023-05-08T13:56:00.250Z",
        },
    )["block"]
    assert stored["created_at"] == "2023-05-08T13:56:00.250Z"
    for bad in ("yesterday", "2023-13-01", " ", "8 May 2023", "2023-02-30T10:00:00.000Z"):
        err = server.error(
            "blocks/create",
            {"type": "paragraph", "act_id": "conv", "content": "x", "created_at": bad},
        )
        assert err.code == -32602 and "created_at" in str(err.data or err.message), bad
    fresh = server.call("blocks/create", {"type": "paragraph", "act_id": "conv", "content": "y"})
    assert fresh["block"]["created_at"] > "2026"
