"""The real service over stdio: framing, errors, concurrency, shutdown, parent death."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import apsw
import pytest

from harness.rpc_client import Server
from tests.conftest import make_block

pytestmark = pytest.mark.e2e


def test_ndjson_roundtrip_and_clean_stdout(server):
    assert server.call("ping") == {"pong": True}
    bid = make_block(server, "hello")
    assert server.call("blocks/get", {"block_id": bid})["block"]["content"] == "hello"
    info = server.call("service/info")
    assert info["framing"] == "ndjson" and info["pid"] == server.proc.pid
    assert server.close() == 0
    # stdout carried protocol only: every line is a JSON-RPC message
    for line in server.raw_lines:
        msg = json.loads(line)
        assert msg["jsonrpc"] == "2.0"
    # logs are JSON lines on stderr
    logs = [json.loads(x) for x in server.stderr().splitlines() if x.strip()]
    assert any(entry["event"] == "started" for entry in logs)


def test_content_length_framing(db_path):
    with Server(db_path, framing="lsp") as srv:
        assert srv.call("ping") == {"pong": True}
        assert srv.call("service/info")["framing"] == "lsp"
        bid = make_block(srv, "framed")
        assert srv.call("blocks/get", {"block_id": bid})["block"]["content"] == "framed"
        # a parse error inside a well-formed frame keeps the stream in sync
        srv.send_bytes(b"{not json")
        assert srv.call("ping") == {"pong": True}
        assert srv.close() == 0


def test_positional_params_on_real_methods(server):
    bid = make_block(server)
    assert server.call("blocks/get", [bid])["block"]["id"] == bid


def test_unknown_method_and_bad_envelope(server):
    assert server.error("memory/nope").code == -32601
    server.send_bytes(b'{"jsonrpc":"2.0","id":5,"method":"ping","params":"x"}')
    resp = server.response(5)
    assert resp["error"]["code"] == -32600 and resp["error"]["data"]["field"] == "$.params"


def test_invalid_utf8_and_lone_surrogates_name_the_field(server):
    before = server.call("memory/stats")["total_blocks"]
    server.send_bytes(
        b'{"jsonrpc":"2.0","id":1,"method":"blocks/create","params":{"type":"paragraph","act_id":"a","content":"bad \xff\xfe bytes"}}'
    )
    err = server.response(1)["error"]
    assert err["code"] == -32602 and err["data"]["field"] == "$.content"
    assert "Unicode" in err["message"]
    server.send_bytes(
        b'{"jsonrpc":"2.0","id":2,"method":"blocks/create","params":{"type":"paragraph","act_id":"a","content":"lone \\ud800 surrogate"}}'
    )
    err = server.response(2)["error"]
    assert err["code"] == -32602 and err["data"]["field"] == "$.content"
    # inside a batch only the bad item fails
    server.send_bytes(
        b'[{"jsonrpc":"2.0","id":3,"method":"blocks/create","params":{"type":"paragraph","act_id":"a","rich_text":[{"content":"x\\udc00"}]}},'
        b'{"jsonrpc":"2.0","id":4,"method":"ping"}]'
    )
    batch = server.batches.get(timeout=10)
    by_id = {r["id"]: r for r in batch}
    assert by_id[3]["error"]["data"]["field"] == "$.rich_text[0].content"
    assert by_id[4]["result"] == {"pong": True}
    # pure garbage is a parse error with id null; the process stays up
    server.send_bytes(b"\xff\xfe\x00garbage")
    assert server.call("ping") == {"pong": True}
    assert server.call("memory/stats")["total_blocks"] == before


def test_oversized_message_is_rejected_and_stream_continues(db_path):
    with Server(db_path, env={"REOS_MEMORY_MAX_MESSAGE_BYTES": "4096"}) as srv:
        big = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "blocks/create",
                "params": {"type": "paragraph", "act_id": "a", "content": "x" * 10_000},
            }
        )
        srv.send_bytes(big.encode())
        assert srv.call("ping") == {"pong": True}
        errs = [json.loads(x) for x in srv.raw_lines if b"payload_too_large" in x]
        assert errs and errs[0]["error"]["code"] == -32600 and errs[0]["id"] is None
        assert errs[0]["error"]["data"]["limit_bytes"] == 4096
        assert srv.call("memory/stats")["total_blocks"] == 0


def test_oversized_field_names_the_field(server):
    err = server.error(
        "blocks/create", {"type": "paragraph", "act_id": "a", "content": "x" * 1_000_001}
    )
    assert err.code == -32602 and err.data["field"] == "$.content"
    assert server.call("memory/stats")["total_blocks"] == 0


def _hold_write_lock(db_path):
    conn = apsw.Connection(str(db_path))
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("BEGIN IMMEDIATE")
    return conn


def test_slow_write_delays_only_what_came_after_it(server, db_path):
    make_block(server)  # the database exists and is migrated
    lock = _hold_write_lock(db_path)  # another process holds the write lock
    try:
        before = server.request("memory/stats")
        rid = server.request(
            "blocks/create", {"type": "paragraph", "act_id": "a", "content": "waits"}
        )
        after = server.request("memory/stats")
        time.sleep(0.3)
        assert not server.has_response(rid)
        t0 = time.monotonic()
        assert server.call("ping") == {"pong": True}
        assert server.call("service/info")["name"] == "reos-memory"
        assert time.monotonic() - t0 < 2.0
        # sent before the write: answered without waiting for it
        assert server.response(before, timeout=5)["result"]["total_blocks"] == 1
        # sent after it: waits, so that it sees the write
        assert not server.has_response(after)
    finally:
        lock.execute("COMMIT")
        lock.close()
    assert "result" in server.response(rid)
    assert server.response(after)["result"]["total_blocks"] == 2


def test_sigterm_finishes_inflight_write_and_exits_zero(server, db_path):
    make_block(server)
    lock = _hold_write_lock(db_path)
    rid = server.request(
        "blocks/create", {"type": "paragraph", "act_id": "a", "content": "in flight"}
    )
    time.sleep(0.3)
    server.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    lock.execute("COMMIT")
    lock.close()
    assert "result" in server.response(rid)
    assert server.proc.wait(20) == 0
    conn = apsw.Connection(str(db_path))
    assert (
        conn.execute("SELECT count(*) FROM blocks WHERE content = 'in flight'").fetchall()[0][0]
        == 1
    )


def test_end_of_input_exits_zero(server):
    make_block(server)
    assert server.close() == 0


def test_exits_when_parent_dies_even_if_stdin_stays_open(tmp_path):
    fifo = tmp_path / "stdin.fifo"
    os.mkfifo(fifo)
    pidfile = tmp_path / "pid"
    parent_code = textwrap.dedent(f"""
        import subprocess, sys, time
        p = subprocess.Popen([sys.executable, "-m", "reos_memory", "serve", "--db", {str(tmp_path / "m.db")!r}],
                             stdin=open({str(fifo)!r}, "rb"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        open({str(pidfile)!r}, "w").write(str(p.pid))
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code], cwd=os.getcwd())
    holder = os.open(fifo, os.O_WRONLY)  # keeps the server's stdin open: no EOF will come
    try:
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pidfile.read_text())
        time.sleep(1.0)
        assert _alive(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "server kept running after its parent died"
    finally:
        os.close(holder)
        parent.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped by init) counts as gone
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_terminal_banner_on_stderr(tmp_path):
    import pty

    master, slave = os.openpty()
    db = tmp_path / "tty.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "reos_memory", "serve", "--db", str(db)],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    try:
        os.write(master, b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        line = proc.stdout.readline()
        assert json.loads(line)["result"] == {"pong": True}
        os.write(master, b"\x04")  # Ctrl-D
        assert proc.wait(20) == 0
        err = proc.stderr.read().decode()
        assert "reos-memory" in err and str(db) in err and '"method"' in err
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
    del pty


def test_cancel_request_of_queued_write(server, db_path):
    make_block(server)
    lock = _hold_write_lock(db_path)
    try:
        first = server.request(
            "blocks/create", {"type": "paragraph", "act_id": "a", "content": "first"}
        )
        second = server.request(
            "blocks/create", {"type": "paragraph", "act_id": "a", "content": "second"}
        )
        time.sleep(0.2)
        server.notify("$/cancelRequest", {"id": second})
        time.sleep(0.2)
    finally:
        lock.execute("COMMIT")
        lock.close()
    assert "result" in server.response(first)
    resp = server.response(second)
    assert resp["error"]["code"] == -32008
    contents = [b["content"] for b in server.call("blocks/list", {})["blocks"]]
    assert "first" in contents and "second" not in contents
