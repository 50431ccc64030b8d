"""SQL for episodes: the cut pieces of a session, their events and the Memory Writer's claim on
them (claim, finish, reopen)."""

from __future__ import annotations

from typing import Any

import apsw
import msgspec

from reos_memory.models import Episode, EpisodeStats
from reos_memory.store.connection import fetch

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _json(v: Any) -> str:
    return _enc.encode(v).decode()


_EP_COLS = (
    "id, project_id, session_id, owner_type, owner_id, start_ts, end_ts, processed, cut_reason,"
    " outcome, outcome_reason, attempts, prefilter, events_json, created_at, ops_json"
)


def insert_episode(conn: apsw.Connection, ep: Episode, events_json: str) -> None:
    conn.execute(
        "INSERT INTO episodes(id, project_id, start_ts, end_ts, events_json, processed,"
        " session_id, owner_type, owner_id, cut_reason, prefilter, outcome, outcome_reason,"
        " attempts, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            ep.id,
            ep.project_id,
            ep.start_ts,
            ep.end_ts,
            events_json,
            ep.processed,
            ep.session_id,
            ep.owner_type,
            ep.owner_id,
            ep.cut_reason,
            None if ep.prefilter is None else _json(ep.prefilter),
            ep.outcome,
            ep.outcome_reason,
            ep.attempts,
            ep.created_at,
        ),
    )


def _episode(r: Any, with_events: bool) -> Episode:
    body = _dec.decode(r[13])
    events = body.get("events", [])
    return Episode(
        id=r[0],
        project_id=r[1],
        session_id=r[2],
        owner_type=r[3],
        owner_id=r[4],
        start_ts=r[5],
        end_ts=r[6],
        processed=int(r[7] or 0),
        cut_reason=r[8],
        outcome=r[9],
        outcome_reason=r[10],
        attempts=int(r[11]),
        prefilter=None if r[12] is None else _dec.decode(r[12]),
        stats=msgspec.convert(body.get("stats", {}), EpisodeStats),
        event_count=len(events),
        created_at=r[14],
        events=events if with_events else None,
        ops=None if not with_events or r[15] is None else _dec.decode(r[15]),
    )


def get_episode(conn: apsw.Connection, episode_id: str, with_events: bool = True) -> Episode | None:
    rows = fetch(conn, f"SELECT {_EP_COLS} FROM episodes WHERE id = ?", (episode_id,))
    return _episode(rows[0], with_events) if rows else None


def list_episodes(
    conn: apsw.Connection,
    *,
    project_id: str | None,
    session_id: str | None,
    outcome: str | None,
    after_rowid: int,
    limit: int,
) -> list[tuple[int, Episode]]:
    where = ["rowid > ?"]
    args: list[Any] = [after_rowid]
    for col, val in (("project_id", project_id), ("session_id", session_id), ("outcome", outcome)):
        if val is not None:
            where.append(f"{col} = ?")
            args.append(val)
    rows = fetch(
        conn,
        f"SELECT rowid, {_EP_COLS} FROM episodes WHERE {' AND '.join(where)} ORDER BY rowid LIMIT ?",
        (*args, limit),
    )
    return [(int(r[0]), _episode(r[1:], False)) for r in rows]


def reopen_episode(conn: apsw.Connection, episode_id: str) -> None:
    """Mark a processed episode unprocessed and pending again, so the writer may run on it."""
    conn.execute(
        "UPDATE episodes SET processed = 0, outcome = 'pending' WHERE id = ?",
        (episode_id,),
    )


def claim_episode(
    conn: apsw.Connection,
    episode_id: str,
    claim: str,
    stale_before: str,
    abandoned: str | None = None,
) -> bool:
    """Mark an unprocessed episode as being written by this process (False if it is not free):
    free means never tried, failed, or running under a claim older than `stale_before` or equal
    to `abandoned` (one whose process is known to have died)."""
    conn.execute(
        "UPDATE episodes SET outcome = 'running', outcome_reason = ?, attempts = attempts + 1"
        " WHERE id = ? AND processed = 0 AND (outcome IN ('pending', 'failed')"
        " OR (outcome = 'running' AND (outcome_reason < ? OR outcome_reason = ?)))",
        (claim, episode_id, stale_before, abandoned),
    )
    return conn.changes() > 0


def finish_episode(
    conn: apsw.Connection,
    episode_id: str,
    *,
    processed: int,
    outcome: str,
    reason: str | None,
    ops: Any = None,
    claim: str | None = None,
) -> bool:
    """Record what the writer did; with `claim`, only while that claim still holds."""
    sql = (
        "UPDATE episodes SET processed = ?, outcome = ?, outcome_reason = ?, ops_json = ?"
        " WHERE id = ?"
    )
    args: list[Any] = [processed, outcome, reason, None if ops is None else _json(ops), episode_id]
    if claim is not None:
        sql += " AND outcome = 'running' AND outcome_reason = ?"
        args.append(claim)
    conn.execute(sql, args)
    return conn.changes() > 0


def unprocessed_episodes(
    conn: apsw.Connection, project_id: str | None, limit: int, *, only_pending: bool = False
) -> list[str]:
    """Episodes the writer has not processed (only those never tried or deferred, when
    `only_pending`), oldest first."""
    sql = "SELECT id FROM episodes WHERE processed = 0"
    if only_pending:
        sql += " AND outcome = 'pending'"
    args: list[Any] = []
    if project_id is not None:
        sql += " AND project_id = ?"
        args.append(project_id)
    return [r[0] for r in fetch(conn, sql + " ORDER BY rowid LIMIT ?", (*args, limit))]


def count_episodes(conn: apsw.Connection) -> dict[str, int]:
    return {
        r[0]: int(r[1]) for r in fetch(conn, "SELECT outcome, count(*) FROM episodes GROUP BY 1")
    }
