"""Two server processes on one database file (two editor windows): no lock errors, no lost writes."""

from __future__ import annotations

import threading

import pytest

from harness.rpc_client import Server

pytestmark = pytest.mark.e2e

N = 250


def writer(srv: Server, tag: str, errors: list, ids: list) -> None:
    try:
        pending = [
            srv.request(
                "blocks/create", {"type": "paragraph", "act_id": "shared", "content": f"{tag}-{i}"}
            )
            for i in range(N)
        ]
        for rid in pending:  # pipelined: all sent before any reply is read
            resp = srv.response(rid, timeout=120)
            if "error" in resp:
                errors.append(resp["error"])
            else:
                ids.append(resp["result"]["block"]["id"])
        for i in range(1, len(ids)):
            srv.request("memory/stats")
            resp = srv.response(
                srv.request(
                    "memory/relationships/create",
                    {"source_id": ids[i - 1], "target_id": ids[i], "rel_type": "follows_from"},
                ),
                timeout=120,
            )
            if "error" in resp:
                errors.append(resp["error"])
    except Exception as exc:  # surfaced by the assertion below
        errors.append(repr(exc))


def increment(srv: Server, block_id: str, times: int, errors: list, conflicts: list) -> None:
    """Read-modify-write with expected_version, retrying on conflict, as a careful client does."""
    try:
        for _ in range(times):
            while True:
                b = srv.call("blocks/get", {"block_id": block_id})["block"]
                resp = srv.response(
                    srv.request(
                        "blocks/update",
                        {
                            "block_id": block_id,
                            "expected_version": b["version"],
                            "properties": {"count": b["properties"]["count"] + 1},
                        },
                    ),
                    timeout=120,
                )
                if "result" in resp:
                    break
                if resp["error"]["code"] != -32009:
                    errors.append(resp["error"])
                    return
                conflicts.append(1)
    except Exception as exc:
        errors.append(repr(exc))


def test_two_processes_share_one_file(tmp_path):
    db = tmp_path / "shared.db"
    with Server(db) as one, Server(db) as two:
        errors: list = []
        ids1: list = []
        ids2: list = []
        t1 = threading.Thread(target=writer, args=(one, "one", errors, ids1))
        t2 = threading.Thread(target=writer, args=(two, "two", errors, ids2))
        t1.start(), t2.start()
        t1.join(300), t2.join(300)
        assert errors == []
        assert len(ids1) == len(ids2) == N
        # each sees the other's writes, edges can cross processes
        for srv in (one, two):
            stats = srv.call("memory/stats")
            assert stats["total_blocks"] == 2 * N
            assert stats["total_relationships"] == 2 * (N - 1)
        one.call(
            "memory/relationships/create",
            {"source_id": ids1[0], "target_id": ids2[0], "rel_type": "related_to"},
        )
        path = two.call("memory/path", {"start_id": ids1[-1], "end_id": ids2[-1], "max_depth": 20})
        assert path["found"] is False  # chains of N blocks are far longer than 20 hops
        near = two.call("memory/path", {"start_id": ids1[1], "end_id": ids2[1]})
        assert near["found"] and near["length"] == 3

        counter = one.call(
            "blocks/create",
            {
                "type": "paragraph",
                "act_id": "shared",
                "content": "counter",
                "properties": {"count": 0},
            },
        )["block"]["id"]
        conflicts: list = []
        threads = [
            threading.Thread(target=increment, args=(srv, counter, 40, errors, conflicts))
            for srv in (one, two)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        assert errors == []
        final = two.call("blocks/get", {"block_id": counter})["block"]
        assert final["properties"]["count"] == 80, "an update was lost"
        assert final["version"] == 81
    for srv in (one, two):
        assert "database is locked" not in srv.stderr()
        assert srv.proc.returncode == 0
