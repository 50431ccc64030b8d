"""SIGKILL in the middle of `sqrl ingest`, again and again: each run resumes from its cursor, and
the database ends with exactly the events of a run that was never killed - no line skipped,
none repeated - and passes integrity_check."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest

from harness.agent_homes import ClaudeSession
from harness.rpc_client import ROOT

pytestmark = pytest.mark.e2e

SQRL = [
    sys.executable,
    "-c",
    "from reos_memory.cli import sqrl_main; raise SystemExit(sqrl_main())",
]


def big_session(project: Path) -> ClaudeSession:
    s = ClaudeSession(project, datetime.now(UTC) - timedelta(hours=3))
    for i in range(2500):
        s.user(f"task {i}: make test_{i % 17} pass in module_{i % 23}.py")
        s.bash(
            f"pytest tests/test_{i % 17}.py",
            f"FAILED test_{i % 17} - KeyError 'k{i}'\n" * 20,
            exit_code=1,
        )
        s.edit(f"module_{i % 23}.py", f"d['k{i}']", f"d.get('k{i}')")
        s.bash(f"pytest tests/test_{i % 17}.py", "3 passed in 0.1s")
    return s


def events_and_integrity(db: Path) -> tuple[int, int, str]:
    conn = apsw.Connection(str(db))
    try:
        stored = conn.execute(
            "SELECT coalesce(sum(json_array_length(events_json, '$.events')), 0) FROM episodes"
        ).fetchall()[0][0]
        pending = conn.execute("SELECT count(*) FROM squirrel_events").fetchall()[0][0]
        return int(stored), int(pending), conn.execute("PRAGMA integrity_check").fetchall()[0][0]
    finally:
        conn.close()


def test_killed_ingests_resume_exactly_once(tmp_path):
    project = tmp_path / "work" / "app"
    (project / ".git").mkdir(parents=True)
    log = big_session(project).write(tmp_path / "claude", age=timedelta(hours=2))
    env = {**os.environ, "REOS_MEMORY_EMBEDDER": "hash", "REOS_MEMORY_WRITER": "rules"}

    def ingest(db: Path) -> subprocess.Popen:
        return subprocess.Popen(
            [*SQRL, "ingest", str(log), "--db", str(db)],
            env=env,
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )

    clean = tmp_path / "clean.db"
    t0 = time.monotonic()
    assert ingest(clean).wait(timeout=300) == 0
    took = time.monotonic() - t0
    want = events_and_integrity(clean)
    assert want[0] + want[1] > 2000 and want[2] == "ok"

    killed = tmp_path / "killed.db"
    rng = random.Random(7)
    kills = 0
    for trial in range(4):
        proc = ingest(killed)
        # the first run is killed half-way; the later ones, which resume, at random points
        time.sleep((0.5 if trial == 0 else rng.uniform(0.2, 0.5)) * took)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            kills += 1
        proc.wait(timeout=60)
        stored, pending, integrity = events_and_integrity(killed)
        assert integrity == "ok" and stored + pending <= want[0] + want[1]
    assert ingest(killed).wait(timeout=300) == 0
    assert kills >= 1, took
    assert events_and_integrity(killed) == want
