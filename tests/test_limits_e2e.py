"""Resource bounds over real stdio: each one, exceeded, answers a clear error naming the limit,
stores nothing and leaves the server serving; just under it, the same request succeeds."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import apsw
import pytest

from harness.documents_fixtures import make_pdf, make_xlsx
from harness.rpc_client import Server
from tests.fake_llm import FakeProvider, provider_env, settle
from tests.test_squirrel_llm_e2e import ingest_failing_sessions

pytestmark = pytest.mark.e2e


def count(db_path: Path, sql: str) -> int:
    conn = apsw.Connection(str(db_path), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return conn.execute(sql).fetchall()[0][0]
    finally:
        conn.close()


def create(i: int, content: str) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "blocks/create",
        "params": {"type": "paragraph", "act_id": "a", "content": content},
    }


# -- JSON-RPC: batch size and result size ------------------------------------------------------


def test_a_batch_over_max_batch_items_is_refused_whole(db_path):
    with Server(db_path, env={"REOS_MEMORY_MAX_BATCH_ITEMS": "3"}) as srv:
        assert srv.call("service/info")["max_batch_items"] == 3
        srv.send_bytes(json.dumps([create(i, f"item {i}") for i in range(1, 5)]).encode())
        resp = srv.response(None)  # one reply for the whole batch, id null
        err = resp["error"]
        assert err["code"] == -32600 and err["data"]["reason"] == "payload_too_large"
        assert err["data"]["limit"] == "max_batch_items"
        assert err["data"]["limit_items"] == 3 and err["data"]["items"] == 4
        assert "4 items exceeds the limit of 3 items (max_batch_items)" in err["message"]
        assert srv.batches.empty()  # no per-item replies: nothing of it ran
        assert srv.call("ping") == {"pong": True}
        assert srv.call("memory/stats")["total_blocks"] == 0
        # at the limit, a batch runs as usual
        replies = srv.batch([create(i, f"item {i}") for i in range(11, 14)])
        assert sorted(r["id"] for r in replies) == [11, 12, 13]
        assert all("result" in r for r in replies)
        assert srv.call("memory/stats")["total_blocks"] == 3
    assert count(db_path, "SELECT count(*) FROM blocks") == 3


def test_a_read_result_over_max_result_bytes_asks_for_less(db_path):
    with Server(db_path, env={"REOS_MEMORY_MAX_RESULT_BYTES": "8192"}) as srv:
        assert srv.call("service/info")["max_result_bytes"] == 8192
        for i in range(5):
            srv.call(
                "blocks/create",
                {"type": "paragraph", "act_id": "a", "content": f"{i} " + "y" * 1500},
            )
        err = srv.error("blocks/list", {"act_id": "a", "limit": 10})
        assert err.code == -32001 and err.data["reason"] == "payload_too_large"
        assert err.data["method"] == "blocks/list" and err.data["limit"] == "max_result_bytes"
        assert err.data["limit_bytes"] == 8192 and err.data["size_bytes"] > 8192
        assert err.data["narrow_with"] == ["limit", "cursor", "act_id"]
        assert "the result of blocks/list is" in err.error["message"]
        assert "over the limit of 8192 bytes (max_result_bytes)" in err.error["message"]
        assert "a smaller `limit`" in err.error["message"] and "`cursor`" in err.error["message"]
        # the server is fine, and paging gets everything
        assert srv.call("ping") == {"pong": True}
        seen, cursor = [], None
        while True:
            page = srv.call("blocks/list", {"act_id": "a", "limit": 2, "cursor": cursor})
            seen += page["blocks"]
            cursor = page.get("next_cursor")
            if not cursor:
                break
        assert len(seen) == 5
        # in a batch, only the item whose result is too large fails
        replies = srv.batch(
            [
                {"jsonrpc": "2.0", "id": "big", "method": "blocks/list", "params": {"limit": 10}},
                {"jsonrpc": "2.0", "id": "small", "method": "memory/stats"},
            ]
        )
        by_id = {r["id"]: r for r in replies}
        assert by_id["big"]["error"]["code"] == -32001
        assert by_id["small"]["result"]["total_blocks"] == 5


def test_a_write_whose_result_is_over_max_result_bytes_is_done_and_answered(db_path):
    """A write is never half done: its result (it echoes the block) is sent even over the limit,
    since the write is committed; only reads are refused."""
    with Server(db_path, env={"REOS_MEMORY_MAX_RESULT_BYTES": "4096"}) as srv:
        block = srv.call(
            "blocks/create", {"type": "paragraph", "act_id": "a", "content": "z" * 5000}
        )
        assert block["block"]["content"] == "z" * 5000
        assert srv.call("memory/stats")["total_blocks"] == 1
        err = srv.error("blocks/get", {"block_id": block["block"]["id"]})
        assert err.code == -32001 and err.data["method"] == "blocks/get"
        assert srv.call("ping") == {"pong": True}
    assert '"large_result"' in srv.stderr()
    assert count(db_path, "SELECT count(*) FROM blocks") == 1


# -- documents: bytes, pages, chunks -----------------------------------------------------------


def nothing_stored(srv: Server, db_path: Path, documents: int = 0, blocks: int = 0) -> None:
    assert srv.call("documents/list")["count"] == documents
    assert srv.call("ping") == {"pong": True}
    assert count(db_path, "SELECT count(*) FROM documents") == documents
    assert count(db_path, "SELECT count(*) FROM blocks") == blocks


def test_a_document_over_max_document_bytes_is_refused(db_path, tmp_path):
    big = tmp_path / "big.txt"
    big.write_text("The release train leaves on Thursdays. " * 30)  # 1170 bytes
    small = tmp_path / "small.txt"
    small.write_text("The release train leaves on Thursdays.")
    with Server(db_path, env={"REOS_MEMORY_MAX_DOCUMENT_BYTES": "1000"}) as srv:
        err = srv.error("documents/insert", {"path": str(big), "act_id": "a"})
        assert err.code == -32001 and err.data["field"] == "$.path"
        assert err.data["limit"] == "max_document_bytes" and err.data["limit_bytes"] == 1000
        assert err.data["size_bytes"] == 1170
        assert (
            "1170 bytes, over the limit of 1000 bytes (max_document_bytes)" in err.error["message"]
        )
        data = base64.b64encode(big.read_bytes()).decode()
        err = srv.error("documents/insert", {"data": data, "filename": "big.txt", "act_id": "a"})
        assert err.code == -32001 and err.data["field"] == "$.data"
        assert err.data["limit"] == "max_document_bytes"
        nothing_stored(srv, db_path)
        assert srv.call("documents/insert", {"path": str(small), "act_id": "a"})["chunks"] == 1


def test_a_pdf_over_max_document_pages_is_refused_before_its_pages_are_read(db_path, tmp_path):
    four = make_pdf(tmp_path / "four.pdf", [f"Page {i} of the staff handbook." for i in range(4)])
    three = make_pdf(tmp_path / "three.pdf", [f"Page {i} of the staff handbook." for i in range(3)])
    with Server(db_path, env={"REOS_MEMORY_MAX_DOCUMENT_PAGES": "3"}) as srv:
        rid = srv.request(
            "documents/insert", {"path": str(four), "act_id": "a", "progress_token": "p"}
        )
        err = srv.response(rid)["error"]
        assert err["code"] == -32001 and err["data"]["field"] == "$.path"
        assert err["data"]["limit"] == "max_document_pages"
        assert err["data"]["limit_pages"] == 3 and err["data"]["pages"] == 4
        assert "has 4 pages, over the limit of 3 (max_document_pages)" in err["message"]
        # refused from the page count: not one page was read (that would report progress)
        assert not [n for n in srv.notifications if n["method"] == "$/progress"]
        nothing_stored(srv, db_path)
        ok = srv.call("documents/insert", {"path": str(three), "act_id": "a"})
        assert ok["document"]["pages"] == 3


def test_an_xlsx_over_max_document_pages_counts_worksheets(db_path, tmp_path):
    book = make_xlsx(tmp_path / "office.xlsx")  # two worksheets
    with Server(db_path, env={"REOS_MEMORY_MAX_DOCUMENT_PAGES": "1"}) as srv:
        data = base64.b64encode(book.read_bytes()).decode()
        err = srv.error(
            "documents/insert", {"data": data, "filename": "office.xlsx", "act_id": "a"}
        )
        assert err.code == -32001 and err.data["field"] == "$.data"
        assert err.data["pages"] == 2 and "2 worksheets" in err.error["message"]
        nothing_stored(srv, db_path)


def test_a_document_over_max_document_chunks_leaves_the_earlier_version(db_path, tmp_path):
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nDeploys happen on Tuesdays.\n")
    with Server(db_path, env={"REOS_MEMORY_MAX_DOCUMENT_CHUNKS": "2"}) as srv:
        first = srv.call("documents/insert", {"path": str(notes), "act_id": "a"})
        assert first["chunks"] == 1
        paragraphs = [
            f"Paragraph {i}: the on-call engineer checks the dashboards, the queues and the"
            " error budget, then writes down what changed since the last shift." * 3
            for i in range(12)
        ]
        notes.write_text("# Notes\n\n" + "\n\n".join(paragraphs) + "\n")
        err = srv.error("documents/insert", {"path": str(notes), "act_id": "a", "chunk_tokens": 50})
        assert err.code == -32001 and err.data["field"] == "$.path"
        assert err.data["limit"] == "max_document_chunks" and err.data["limit_chunks"] == 2
        assert err.data["chunks"] > 2
        assert "over the limit of 2 (max_document_chunks)" in err.error["message"]
        assert "`chunk_tokens`" in err.error["message"]
        # the version stored before is untouched: same document, same single chunk
        docs = srv.call("documents/list")["documents"]
        assert [d["id"] for d in docs] == [first["document"]["id"]]
        assert docs[0]["chunk_count"] == 1 and docs[0]["sha256"] == first["document"]["sha256"]
        nothing_stored(srv, db_path, documents=1, blocks=1)


# -- Squirrel: events per call, episode size, LLM output and concurrency -----------------------


def repo(tmp_path: Path) -> Path:
    p = tmp_path / "repo"
    (p / ".git").mkdir(parents=True)
    return p


def tool_events(n: int, tag: str = "") -> list[dict]:
    """`n` events of quiet work: a request, then tool calls and their (successful) results."""
    out: list[dict] = [{"role": "user", "kind": "message", "text": f"build the parser {tag}"}]
    i = 0
    while len(out) < n:
        out.append(
            {
                "role": "assistant",
                "kind": "tool_call",
                "tool_name": "Bash",
                "command": f"make step{i}",
                "call_id": f"c{i}",
            }
        )
        out.append(
            {
                "role": "tool",
                "kind": "tool_result",
                "call_id": f"c{i}",
                "exit_code": 0,
                "text": "ok",
            }
        )
        i += 1
    return out[:n]


def test_an_ingest_over_max_events_per_ingest_stores_nothing(db_path, tmp_path):
    root = repo(tmp_path)
    with Server(db_path, env={"REOS_MEMORY_MAX_EVENTS_PER_INGEST": "5"}) as srv:
        params = {"project_root": str(root), "session_id": "s"}
        err = srv.error("squirrel/ingest", {**params, "events": tool_events(6)})
        assert err.code == -32602 and err.data["field"] == "$.events"
        assert "at most 5 events per call (setting max_events_per_ingest)" in err.error["message"]
        assert srv.call("ping") == {"pong": True}
        assert count(db_path, "SELECT count(*) FROM squirrel_events") == 0
        ok = srv.call("squirrel/ingest", {**params, "events": tool_events(5)})
        assert ok["accepted"] == 5
    assert count(db_path, "SELECT count(*) FROM squirrel_events") == 5


def test_an_episode_is_cut_at_max_episode_events(db_path, tmp_path):
    root = repo(tmp_path)
    with Server(db_path, env={"REOS_MEMORY_MAX_EPISODE_EVENTS": "10"}) as srv:
        r = srv.call(
            "squirrel/ingest",
            {"project_root": str(root), "session_id": "s", "events": tool_events(25)},
        )
        assert r["accepted"] == 25
        assert [(e["cut_reason"], e["events"]) for e in r["episodes"]] == [
            ("size_cap", 10),
            ("size_cap", 10),
        ]
        assert r["pending_events"] == 5


@pytest.mark.parametrize("calls", [1, 2])
def test_llm_writer_calls_respect_max_concurrent_calls_and_output_cap(
    tmp_path, db_path, provider: FakeProvider, calls: int
):
    root = repo(tmp_path)
    ops = {"ops": [{"op": "ADD", "kind": "pattern", "text": "Run migrations before the tests."}]}
    provider.replies = [provider.reply("openai", json.dumps(ops))] * 4
    provider.delay = 0.4  # long enough for calls to overlap when they may
    env = provider_env(
        provider,
        "openai",
        REOS_MEMORY_WRITER_MAX_CONCURRENT_CALLS=str(calls),
        REOS_MEMORY_WRITER_MAX_OUTPUT_TOKENS="321",
    )
    with Server(db_path, env=env) as srv:
        srv.wait_ready()
        ingest_failing_sessions(srv, root, 4)
        eps = settle(srv, str(root))
        assert [e["outcome"] for e in eps] == ["written"] * 4
    assert len(provider.requests) == 4
    assert provider.peak == calls  # never more at once; and the limit is not a lower one
    assert all(r["body"]["max_tokens"] == 321 for r in provider.requests)
