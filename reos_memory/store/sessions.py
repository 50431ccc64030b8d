"""SQL for the agent sessions Squirrel has open and the events buffered for them until an
episode is cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec

from reos_memory.store.connection import fetch, scalar

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _json(v: Any) -> str:
    return _enc.encode(v).decode()


def get_session(conn: apsw.Connection, session_id: str) -> dict[str, Any] | None:
    rows = fetch(
        conn,
        "SELECT session_id, project_id, owner_type, owner_id, started_at, last_event_at,"
        " state_json, ended FROM squirrel_sessions WHERE session_id = ?",
        (session_id,),
    )
    if not rows:
        return None
    r = rows[0]
    return {
        "session_id": r[0],
        "project_id": r[1],
        "owner_type": r[2],
        "owner_id": r[3],
        "started_at": r[4],
        "last_event_at": r[5],
        "state": _dec.decode(r[6]),
        "ended": bool(r[7]),
    }


def put_session(conn: apsw.Connection, s: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO squirrel_sessions(session_id, project_id, owner_type, owner_id, started_at,"
        " last_event_at, state_json, ended) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(session_id) DO UPDATE SET last_event_at = excluded.last_event_at,"
        " state_json = excluded.state_json, ended = excluded.ended",
        (
            s["session_id"],
            s["project_id"],
            s["owner_type"],
            s["owner_id"],
            s["started_at"],
            s["last_event_at"],
            _json(s["state"]),
            int(s["ended"]),
        ),
    )


def end_session(conn: apsw.Connection, session_id: str) -> None:
    conn.execute("UPDATE squirrel_sessions SET ended = 1 WHERE session_id = ?", (session_id,))


def open_sessions(conn: apsw.Connection, project_id: str | None) -> list[str]:
    """Sessions holding events not yet in an episode."""
    sql = "SELECT DISTINCT s.session_id FROM squirrel_sessions s JOIN squirrel_events e USING (session_id)"
    if project_id is None:
        return [r[0] for r in fetch(conn, sql)]
    return [r[0] for r in fetch(conn, sql + " WHERE s.project_id = ?", (project_id,))]


def append_events(
    conn: apsw.Connection, session_id: str, first_seq: int, events: Sequence[bytes]
) -> None:
    conn.executemany(
        "INSERT INTO squirrel_events(session_id, seq, event_json) VALUES (?, ?, ?)",
        [(session_id, first_seq + i, e) for i, e in enumerate(events)],
    )


def take_events(conn: apsw.Connection, session_id: str, upto_seq: int) -> list[dict[str, Any]]:
    """Remove and return the session's pending events with seq <= upto_seq, in order."""
    rows = fetch(
        conn,
        "SELECT event_json FROM squirrel_events WHERE session_id = ? AND seq <= ? ORDER BY seq",
        (session_id, upto_seq),
    )
    conn.execute(
        "DELETE FROM squirrel_events WHERE session_id = ? AND seq <= ?", (session_id, upto_seq)
    )
    return [_dec.decode(r[0]) for r in rows]


def pending_event_count(conn: apsw.Connection) -> int:
    return int(scalar(conn, "SELECT count(*) FROM squirrel_events") or 0)


def pending_events_of(conn: apsw.Connection, session_ids: Sequence[str]) -> dict[str, int]:
    """How many events each of these sessions holds that are not yet in an episode (sessions
    holding none are left out)."""
    rows = fetch(
        conn,
        "SELECT session_id, count(*) FROM squirrel_events"
        " WHERE session_id IN (SELECT value FROM json_each(?)) GROUP BY session_id",
        (_json(list(session_ids)),),
    )
    return {r[0]: int(r[1]) for r in rows}
