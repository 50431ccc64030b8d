"""The one life of a stdio server, the same for `reos-memory serve` (JSON-RPC) and `mcp` (MCP):
a signal or the parent's death stops it cleanly, and a database it cannot open is one line on
stderr and exit 1, never a traceback."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import apsw
import pytest

from tests.test_service_e2e import _alive

pytestmark = pytest.mark.e2e

FIRST = {
    "serve": {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    "mcp": {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    },
}


def _spawn(command: str, db: Path, **kw: object) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "reos_memory", command, "--db", str(db), "--embedder", "none"]
    return subprocess.Popen(argv, **kw)  # type: ignore[call-overload,no-any-return]


def _events(stderr: bytes) -> list[dict]:
    out = []
    for line in stderr.decode().splitlines():
        if line.startswith("{"):
            out.append(json.loads(line))
    return out


@pytest.mark.parametrize("command", ["serve", "mcp"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_signal_stops_serving_and_exits_zero(tmp_path, command, signum):
    proc = _spawn(
        command,
        tmp_path / "m.db",
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(FIRST[command]).encode() + b"\n")
        proc.stdin.flush()
        assert json.loads(proc.stdout.readline())["id"] == 1  # serving, stdin still open
        proc.send_signal(signum)
        assert proc.wait(20) == 0
        assert proc.stdout.read() == b""  # nothing but replies on stdout
        events = _events(proc.stderr.read())  # type: ignore[union-attr]
        names = [e["event"] for e in events]
        assert "started" in names and names[-1] == "stopped", names
        assert {"event": "signal", "signal": signal.Signals(signum).name}.items() <= next(
            e for e in events if e["event"] == "signal"
        ).items()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_exits_when_the_parent_dies_with_stdin_left_open(tmp_path, command):
    fifo = tmp_path / "stdin.fifo"
    os.mkfifo(fifo)
    pidfile = tmp_path / "pid"
    parent_code = textwrap.dedent(f"""
        import subprocess, sys, time
        p = subprocess.Popen(
            [sys.executable, "-m", "reos_memory", {command!r}, "--db", {str(tmp_path / "m.db")!r},
             "--embedder", "none"],
            stdin=open({str(fifo)!r}, "rb"), stdout=subprocess.DEVNULL,
            stderr=open({str(tmp_path / "err")!r}, "wb"))
        open({str(pidfile)!r}, "w").write(str(p.pid))
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code], cwd=os.getcwd())
    holder = os.open(fifo, os.O_WRONLY)  # keeps the server's stdin open: no end of input
    try:
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        child = int(pidfile.read_text())
        while b'"started"' not in (tmp_path / "err").read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)  # serving
        assert _alive(child)
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(child), f"{command} kept running after its parent died"
    finally:
        os.close(holder)
        parent.kill()


@pytest.mark.parametrize("command", ["serve", "mcp"])
def test_a_database_it_cannot_open_is_one_line_and_exit_one(tmp_path, command):
    db = tmp_path / "m.db"
    conn = apsw.Connection(str(db))  # a database written by a newer version
    conn.execute(
        "CREATE TABLE schema_migrations(version INTEGER PRIMARY KEY, name TEXT, checksum TEXT,"
        " applied_at TEXT)"
    )
    conn.execute("INSERT INTO schema_migrations VALUES (9999, 'future', 'x', 'now')")
    conn.close()
    proc = _spawn(
        command, db, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = proc.communicate(b"", timeout=60)
    assert proc.returncode == 1
    assert out == b""
    lines = err.decode().splitlines()
    assert len(lines) == 1 and "Traceback" not in err.decode(), lines
    assert lines[0].startswith(f"reos-memory {command}: ") and "newer" in lines[0], lines
