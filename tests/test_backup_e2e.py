"""Data at rest: the database, its WAL and backups are private to their owner, and
`reos-memory backup` copies a live database consistently while a server keeps writing."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import threading

import apsw
import pytest

from harness.rpc_client import ROOT, Server
from tests.conftest import make_block

pytestmark = pytest.mark.e2e


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def backup(db, target):
    cmd = [sys.executable, "-m", "reos_memory", "backup", "--db", str(db), str(target)]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_a_new_database_its_wal_and_its_directory_are_private(tmp_path):
    db = tmp_path / "fresh" / "memory.db"
    with Server(db) as srv:
        make_block(srv, "private")
        assert mode(db) == 0o600
        assert mode(str(db) + "-wal") == 0o600 and mode(str(db) + "-shm") == 0o600
        assert mode(db.parent) == 0o700


def test_online_backup_while_a_server_writes(tmp_path):
    db = tmp_path / "memory.db"
    with Server(db, embedder="none") as srv:
        for i in range(200):
            make_block(srv, f"written before the backup {i}", act_id="before", index=False)
        stop = threading.Event()
        written: list[str] = []

        def keep_writing():
            while not stop.is_set():
                written.append(make_block(srv, "written during", act_id="during", index=False))

        writer = threading.Thread(target=keep_writing)
        writer.start()
        try:
            done = backup(db, tmp_path / "copy.db")
        finally:
            stop.set()
            writer.join()
        assert done.returncode == 0, done.stderr
        assert "backed up" in done.stderr and written  # the server wrote all along
    copy = tmp_path / "copy.db"
    assert mode(copy) == 0o600
    conn = apsw.Connection(str(copy))
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    counts = dict(conn.execute("SELECT act_id, count(*) FROM blocks GROUP BY act_id").fetchall())
    assert counts["before"] == 200 and counts.get("during", 0) <= len(written)
    conn.close()
    again = backup(db, copy)  # never overwrites
    assert again.returncode == 1 and "never overwrites" in again.stderr
    missing = backup(tmp_path / "nowhere.db", tmp_path / "x.db")
    assert missing.returncode == 1 and not (tmp_path / "nowhere.db").exists()
