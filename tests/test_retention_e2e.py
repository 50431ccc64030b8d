"""The Squirrel logs stay bounded: context requests (with the memories they injected), writer
calls and sessions silent for longer than `log_retention_days` are forgotten, while memories,
their metrics and evidence, and episodes stay."""

from __future__ import annotations

import apsw
import pytest

from harness.crash import session_events
from harness.rpc_client import Server

pytestmark = pytest.mark.e2e

RULES = {"REOS_MEMORY_WRITER": "rules", "REOS_MEMORY_LOG_RETENTION_DAYS": "30"}
LONG_AGO = "2020-01-01T00:00:00.000Z"


def counts(conn: apsw.Connection) -> dict[str, int]:
    tables = (
        "context_requests",
        "memory_injections",
        "writer_calls",
        "squirrel_sessions",
        "squirrel_events",
        "memories",
        "memory_metrics",
        "evidence",
        "episodes",
    )
    return {t: conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in tables}


def test_old_log_rows_are_forgotten_and_memories_stay(tmp_path, db_path):
    project = tmp_path / "repo"
    (project / ".git").mkdir(parents=True)
    where = {"project_root": str(project)}
    with Server(db_path, env=RULES) as srv:
        for s in ("old", "new"):
            srv.call("squirrel/ingest", {**where, "session_id": s, "events": session_events(1)})
            srv.call("squirrel/flush", {**where, "session_id": s})
            ctx = srv.call(
                "squirrel/get_task_context",
                {**where, "task": "run tool1 before pytest", "session_id": s},
            )
            assert ctx["memories"], ctx
        # a session that never ends: its events wait, unflushed
        srv.call(
            "squirrel/ingest", {**where, "session_id": "silent", "events": session_events(2)[:3]}
        )
    conn = apsw.Connection(str(db_path))
    before = counts(conn)
    assert before["squirrel_events"] == 3 and before["memory_injections"] >= 2
    with conn:  # the first session's log rows and the silent session grow old
        conn.execute(
            "UPDATE context_requests SET created_at = ? WHERE session_id = 'old'", (LONG_AGO,)
        )
        conn.execute("UPDATE writer_calls SET started_at = ?", (LONG_AGO,))
        conn.execute(
            "UPDATE squirrel_sessions SET last_event_at = ? WHERE session_id IN ('old', 'silent')",
            (LONG_AGO,),
        )
    old_injections = conn.execute(
        "SELECT count(*) FROM memory_injections i JOIN context_requests c USING (context_id)"
        " WHERE c.session_id = 'old'"
    ).fetchall()[0][0]
    with Server(db_path, env=RULES) as srv:  # a new process prunes on its first logged call
        srv.call("squirrel/get_task_context", {**where, "task": "pytest", "session_id": "new"})
    after = counts(conn)
    left = [r[0] for r in conn.execute("SELECT session_id FROM context_requests")]
    assert sorted(left) == ["new", "new"]  # the old request is gone; a new one came
    assert old_injections >= 1
    assert conn.execute(
        "SELECT count(*) FROM memory_injections WHERE context_id NOT IN"
        " (SELECT context_id FROM context_requests)"
    ).fetchall() == [(0,)]
    assert after["writer_calls"] == 0
    sessions = {r[0] for r in conn.execute("SELECT session_id FROM squirrel_sessions")}
    assert "silent" not in sessions and "old" not in sessions and "new" in sessions
    assert after["squirrel_events"] == 0
    for kept in ("memories", "memory_metrics", "evidence", "episodes"):
        assert after[kept] == before[kept], kept
    conn.close()
