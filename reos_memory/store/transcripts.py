"""SQL for transcript cursors: how far each agent session log has been read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw

from reos_memory.store.connection import fetch

COLUMNS = (
    "path, agent, head_sha256, head_bytes, size_seen, offset, session_id, project_id,"
    " state_json, lines, events, malformed, rewrites, ended, first_read_at, updated_at"
)


@dataclass
class Cursor:
    path: str
    agent: str
    head_sha256: str
    head_bytes: int
    size_seen: int
    offset: int
    session_id: str | None
    project_id: str | None
    state_json: str
    lines: int
    events: int
    malformed: int
    rewrites: int
    ended: bool
    first_read_at: str
    updated_at: str

    def public(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "agent": self.agent,
            "offset": self.offset,
            "size_seen": self.size_seen,
            "session_id": self.session_id,
            "project_id": self.project_id,
            "lines": self.lines,
            "events": self.events,
            "malformed": self.malformed,
            "rewrites": self.rewrites,
            "ended": self.ended,
            "updated_at": self.updated_at,
        }


def _cursor(r: Any) -> Cursor:
    return Cursor(
        path=r[0],
        agent=r[1],
        head_sha256=r[2],
        head_bytes=r[3],
        size_seen=r[4],
        offset=r[5],
        session_id=r[6],
        project_id=r[7],
        state_json=r[8],
        lines=r[9],
        events=r[10],
        malformed=r[11],
        rewrites=r[12],
        ended=bool(r[13]),
        first_read_at=r[14],
        updated_at=r[15],
    )


def get(conn: apsw.Connection, path: str) -> Cursor | None:
    rows = fetch(conn, f"SELECT {COLUMNS} FROM transcript_cursors WHERE path = ?", (path,))
    return _cursor(rows[0]) if rows else None


def put(conn: apsw.Connection, c: Cursor) -> None:
    conn.execute(
        f"INSERT OR REPLACE INTO transcript_cursors({COLUMNS})"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            c.path,
            c.agent,
            c.head_sha256,
            c.head_bytes,
            c.size_seen,
            c.offset,
            c.session_id,
            c.project_id,
            c.state_json,
            c.lines,
            c.events,
            c.malformed,
            c.rewrites,
            int(c.ended),
            c.first_read_at,
            c.updated_at,
        ),
    )


def all_cursors(conn: apsw.Connection, limit: int = 1000) -> list[Cursor]:
    rows = fetch(
        conn,
        f"SELECT {COLUMNS} FROM transcript_cursors ORDER BY updated_at DESC LIMIT ?",
        (limit,),
    )
    return [_cursor(r) for r in rows]


def summary(conn: apsw.Connection) -> dict[str, Any]:
    rows = fetch(
        conn,
        "SELECT agent, count(*), sum(lines), sum(events), sum(malformed), sum(ended),"
        " max(updated_at) FROM transcript_cursors GROUP BY agent",
    )
    return {
        r[0]: {
            "files": r[1],
            "lines": r[2] or 0,
            "events": r[3] or 0,
            "malformed": r[4] or 0,
            "ended_sessions": r[5] or 0,
            "last_read_at": r[6],
        }
        for r in rows
    }


def open_sessions(conn: apsw.Connection) -> list[tuple[str, str, str | None]]:
    """(path, session id, project id) of files whose session was not flushed as ended."""
    return [
        (r[0], r[1], r[2])
        for r in fetch(
            conn,
            "SELECT path, session_id, project_id FROM transcript_cursors"
            " WHERE ended = 0 AND session_id IS NOT NULL",
        )
    ]


def with_live_sessions(conn: apsw.Connection) -> list[str]:
    """Paths of logs that hold sessions besides their own still open (a database of many)."""
    return [
        r[0]
        for r in fetch(
            conn, 'SELECT path FROM transcript_cursors WHERE state_json LIKE \'%"live":{"%\''
        )
    ]


def mark_ended(conn: apsw.Connection, session_id: str, now: str) -> None:
    conn.execute(
        "UPDATE transcript_cursors SET ended = 1, updated_at = ? WHERE session_id = ?",
        (now, session_id),
    )
