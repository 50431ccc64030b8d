"""One connection's order is causal: pipelined requests see the writes sent before them."""

from __future__ import annotations

import json

import pytest

from harness.rpc_client import Server

pytestmark = pytest.mark.e2e


def _frame(msg: dict, framing: str) -> bytes:
    body = json.dumps(msg).encode()
    if framing == "lsp":
        return b"Content-Length: %d\r\n\r\n%s" % (len(body), body)
    return body + b"\n"


def _pipe(srv: Server, messages: list[dict], framing: str) -> None:
    """Write every message in one go, before reading any reply (what a shell pipe does)."""
    assert srv.proc.stdin is not None
    srv.proc.stdin.write(b"".join(_frame(m, framing) for m in messages))
    srv.proc.stdin.flush()


def _req(rid: int, method: str, params: dict | None = None) -> dict:
    msg = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        msg["params"] = params
    return msg


@pytest.mark.parametrize("framing", ["ndjson", "lsp"])
def test_pipelined_create_then_read(db_path, framing):
    with Server(db_path, framing=framing) as srv:
        msgs = [
            _req(
                1,
                "blocks/create",
                {
                    "type": "paragraph",
                    "act_id": "a",
                    "id": "b1",
                    "content": "The deploy key lives in the ops vault",
                },
            ),
            _req(2, "memory/search", {"query": "where is the deploy key", "act_id": "a"}),
            _req(3, "memory/stats", {}),
            _req(
                4,
                "blocks/create",
                {
                    "type": "paragraph",
                    "act_id": "a",
                    "id": "b2",
                    "content": "Rotate it every quarter",
                },
            ),
            _req(
                5,
                "memory/relationships/create",
                {"source_id": "b2", "target_id": "b1", "rel_type": "follows_from"},
            ),
            _req(6, "memory/related", {"block_id": "b1", "depth": 1}),
            _req(7, "blocks/update", {"block_id": "b1", "content": "The deploy key moved"}),
            _req(8, "blocks/get", {"block_id": "b1"}),
            _req(9, "blocks/delete", {"block_id": "b2"}),
            _req(10, "memory/stats", {}),
        ]
        _pipe(srv, msgs, framing)
        replies = {i: srv.response(i) for i in range(1, 11)}
        for i, r in replies.items():
            assert "result" in r, (i, r)
        assert [m["block_id"] for m in replies[2]["result"]["matches"]][:1] == ["b1"]
        assert replies[3]["result"]["total_blocks"] >= 1  # may also see the later write
        assert "b2" in replies[6]["result"]["visited_blocks"]
        assert replies[8]["result"]["block"]["content"] == "The deploy key moved"
        assert replies[10]["result"]["total_blocks"] == 1
        assert replies[10]["result"]["total_relationships"] == 0


def test_pipelined_reads_in_a_batch_see_earlier_writes(db_path):
    with Server(db_path) as srv:
        out = srv.batch(
            [
                _req(1, "blocks/create", {"type": "paragraph", "act_id": "a", "content": "x"}),
                _req(2, "memory/stats", {}),
            ]
        )
        by_id = {r["id"]: r for r in out}
        assert by_id[2]["result"]["total_blocks"] == 1


def test_many_pipelined_pairs_never_miss_their_write(db_path):
    with Server(db_path) as srv:
        msgs = []
        for i in range(50):
            msgs.append(
                _req(
                    2 * i + 1,
                    "blocks/create",
                    {"type": "paragraph", "act_id": "a", "id": f"n{i}", "content": f"n {i}"},
                )
            )
            msgs.append(_req(2 * i + 2, "blocks/get", {"block_id": f"n{i}"}))
        _pipe(srv, msgs, "ndjson")
        for i in range(50):
            got = srv.response(2 * i + 2)
            assert got["result"]["block"]["id"] == f"n{i}", got
