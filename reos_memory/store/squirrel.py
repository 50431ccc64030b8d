"""SQL for Squirrel's bookkeeping: projects, open sessions, episodes, context requests,
project baselines and Memory Writer calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec

from reos_memory.models import Episode, EpisodeStats
from reos_memory.store.connection import fetch, scalar

_enc = msgspec.json.Encoder()
_dec = msgspec.json.Decoder()


def _json(v: Any) -> str:
    return _enc.encode(v).decode()


# -- projects ---------------------------------------------------------------------------------


def touch_project(
    conn: apsw.Connection, project_id: str, root: str | None, now: str, identity: str | None = None
) -> None:
    name = (root or project_id).rstrip("/").rsplit("/", 1)[-1] or project_id
    conn.execute(
        "INSERT INTO projects(id, root, name, created_at, last_seen_at, identity)"
        " VALUES (?, ?, ?, ?, ?, ?)"
        " ON CONFLICT(id) DO UPDATE SET last_seen_at = excluded.last_seen_at,"
        " root = coalesce(excluded.root, projects.root),"
        " identity = coalesce(excluded.identity, projects.identity)",
        (project_id, root, name, now, now, identity),
    )


def project_root(conn: apsw.Connection, project_id: str) -> str | None:
    return scalar(conn, "SELECT root FROM projects WHERE id = ?", (project_id,))


def project_ids(conn: apsw.Connection) -> list[str]:
    """The live projects (not the ids merged into another)."""
    sql = "SELECT id FROM projects WHERE merged_into IS NULL ORDER BY id"
    return [r[0] for r in fetch(conn, sql)]


def project_roots(conn: apsw.Connection) -> list[str]:
    """The directories of the live projects that have one."""
    sql = "SELECT root FROM projects WHERE merged_into IS NULL AND root IS NOT NULL ORDER BY root"
    return [r[0] for r in fetch(conn, sql)]


# -- open sessions ----------------------------------------------------------------------------


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


# -- episodes ---------------------------------------------------------------------------------

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


# -- context requests -------------------------------------------------------------------------


def insert_context(
    conn: apsw.Connection, row: dict[str, Any], injected: Sequence[tuple[str, float]]
) -> None:
    conn.execute(
        "INSERT INTO context_requests(context_id, project_id, owner_type, owner_id, session_id,"
        " task, path, created_at, budget_tokens, tokens) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["context_id"],
            row["project_id"],
            row["owner_type"],
            row["owner_id"],
            row["session_id"],
            row["task"],
            row["path"],
            row["created_at"],
            row["budget_tokens"],
            row["tokens"],
        ),
    )
    conn.executemany(
        "INSERT INTO memory_injections(context_id, memory_id, rank, score) VALUES (?, ?, ?, ?)",
        [(row["context_id"], mid, i, score) for i, (mid, score) in enumerate(injected, 1)],
    )


def get_context(conn: apsw.Connection, context_id: str) -> dict[str, Any] | None:
    rows = fetch(
        conn,
        "SELECT context_id, project_id, session_id, created_at, feedback_at FROM context_requests"
        " WHERE context_id = ?",
        (context_id,),
    )
    if not rows:
        return None
    r = rows[0]
    return {
        "context_id": r[0],
        "project_id": r[1],
        "session_id": r[2],
        "created_at": r[3],
        "feedback_at": r[4],
    }


def injected_memories(conn: apsw.Connection, context_id: str) -> list[str]:
    return [
        r[0]
        for r in fetch(
            conn,
            "SELECT memory_id FROM memory_injections WHERE context_id = ? ORDER BY rank",
            (context_id,),
        )
    ]


def contexts_awaiting_feedback(conn: apsw.Connection, session_id: str, until: str) -> list[str]:
    """Contexts served to a session (not yet judged) up to a time: the episode ending now judges them."""
    return [
        r[0]
        for r in fetch(
            conn,
            "SELECT context_id FROM context_requests WHERE session_id = ? AND feedback_at IS NULL"
            " AND created_at <= ? ORDER BY created_at",
            (session_id, until),
        )
    ]


def set_feedback(
    conn: apsw.Connection, context_id: str, now: str, source: str, outcome: dict[str, Any]
) -> bool:
    """Record a context's outcome once; False when it already had one."""
    conn.execute(
        "UPDATE context_requests SET feedback_at = ?, feedback_source = ?, errors = ?, retries = ?,"
        " tests_final_status = ?, user_frustration = ? WHERE context_id = ? AND feedback_at IS NULL",
        (
            now,
            source,
            outcome["errors"],
            outcome["retries"],
            outcome.get("tests_final_status"),
            outcome.get("user_frustration"),
            context_id,
        ),
    )
    return conn.changes() > 0


def injected_in_session(conn: apsw.Connection, session_id: str) -> set[str]:
    return {
        r[0]
        for r in fetch(
            conn,
            "SELECT DISTINCT i.memory_id FROM memory_injections i JOIN context_requests c"
            " USING (context_id) WHERE c.session_id = ?",
            (session_id,),
        )
    }


# -- baselines --------------------------------------------------------------------------------


def baseline(conn: apsw.Connection, project_id: str) -> tuple[int, float, float]:
    """(outcomes seen, average errors, average retries) of a project's tasks."""
    rows = fetch(
        conn,
        "SELECT outcomes, avg_errors, avg_retries FROM project_baselines WHERE project_id = ?",
        (project_id,),
    )
    return (int(rows[0][0]), float(rows[0][1]), float(rows[0][2])) if rows else (0, 0.0, 0.0)


def add_outcome(
    conn: apsw.Connection, project_id: str, errors: int, retries: int, now: str
) -> None:
    """Fold one task's outcome into the project's running averages."""
    n, e, r = baseline(conn, project_id)
    n2 = n + 1
    conn.execute(
        "INSERT INTO project_baselines(project_id, outcomes, avg_errors, avg_retries, updated_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(project_id) DO UPDATE SET outcomes = excluded.outcomes,"
        " avg_errors = excluded.avg_errors, avg_retries = excluded.avg_retries,"
        " updated_at = excluded.updated_at",
        (project_id, n2, e + (errors - e) / n2, r + (retries - r) / n2, now),
    )


# -- writer calls -----------------------------------------------------------------------------


def record_call(conn: apsw.Connection, row: dict[str, Any]) -> None:
    conn.execute(
        "INSERT INTO writer_calls(id, episode_id, writer, model, started_at, duration_ms,"
        " input_tokens, output_tokens, ok, ops, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            row["id"],
            row["episode_id"],
            row["writer"],
            row.get("model"),
            row["started_at"],
            row["duration_ms"],
            row.get("input_tokens", 0),
            row.get("output_tokens", 0),
            int(row["ok"]),
            row.get("ops", 0),
            row.get("error"),
        ),
    )


def activity(conn: apsw.Connection, since: str, project_id: str | None) -> dict[str, Any]:
    """Per day from `since` (YYYY-MM-DD): memories created by kind, contexts and injections
    recorded (of one project, or all), writer calls and tokens (every project: the budget is
    the database's)."""
    proj = "" if project_id is None else " AND project_id = ?"
    args: tuple[Any, ...] = (since,) if project_id is None else (since, project_id)
    mems = fetch(
        conn,
        "SELECT substr(created_at, 1, 10), kind, count(*) FROM memories WHERE created_at >= ?"
        + proj
        + " GROUP BY 1, 2",
        args,
    )
    ctxs = fetch(
        conn,
        "SELECT substr(c.created_at, 1, 10), count(DISTINCT c.context_id), count(i.memory_id)"
        " FROM context_requests c LEFT JOIN memory_injections i ON i.context_id = c.context_id"
        " WHERE c.created_at >= ?" + proj.replace("project_id", "c.project_id") + " GROUP BY 1",
        args,
    )
    calls = fetch(
        conn,
        "SELECT substr(started_at, 1, 10), count(*), sum(input_tokens), sum(output_tokens)"
        " FROM writer_calls WHERE started_at >= ? GROUP BY 1",
        (since,),
    )
    live = fetch(
        conn,
        "SELECT kind, count(*) FROM memories WHERE status IN ('provisional', 'active')"
        + proj
        + " GROUP BY 1",
        () if project_id is None else (project_id,),
    )
    return {
        "memories": [(r[0], r[1], int(r[2])) for r in mems],
        "contexts": {r[0]: (int(r[1]), int(r[2])) for r in ctxs},
        "calls": {r[0]: (int(r[1]), int(r[2] or 0), int(r[3] or 0)) for r in calls},
        "live": {r[0]: int(r[1]) for r in live},
    }


def calls_by_day(conn: apsw.Connection, days: int = 7) -> list[dict[str, Any]]:
    rows = fetch(
        conn,
        "SELECT substr(started_at, 1, 10) AS day, writer, count(*), sum(ok),"
        " sum(input_tokens), sum(output_tokens), sum(duration_ms) FROM writer_calls"
        " WHERE started_at >= strftime('%Y-%m-%d', 'now', ?) GROUP BY 1, 2 ORDER BY 1 DESC, 2",
        (f"-{int(days)} days",),
    )
    return [
        {
            "day": r[0],
            "writer": r[1],
            "calls": int(r[2]),
            "ok": int(r[3] or 0),
            "input_tokens": int(r[4] or 0),
            "output_tokens": int(r[5] or 0),
            "seconds": round(float(r[6] or 0) / 1000, 3),
        }
        for r in rows
    ]


def prune_logs(conn: apsw.Connection, before: str) -> dict[str, int]:
    """Forget what is older than `before`: context requests (their injections go with them),
    writer calls, and sessions with no event since (their unflushed events go with them: a
    session silent that long has ended). Memories, metrics, evidence and episodes stay."""
    out = {}
    for name, sql in (
        ("context_requests", "DELETE FROM context_requests WHERE created_at < ?"),
        ("writer_calls", "DELETE FROM writer_calls WHERE started_at < ?"),
        ("sessions", "DELETE FROM squirrel_sessions WHERE last_event_at < ?"),
    ):
        conn.execute(sql, (before,))
        out[name] = conn.changes()
    return out


def tokens_today(conn: apsw.Connection, day: str) -> int:
    return int(
        scalar(
            conn,
            "SELECT coalesce(sum(input_tokens + output_tokens), 0) FROM writer_calls"
            " WHERE started_at >= ? AND writer != 'rules'",
            (day,),
        )
        or 0
    )


def writer_episodes_by_day(conn: apsw.Connection, since: str) -> dict[str, int]:
    """Episodes the pre-filter sent (or would send) to the writer, per day of their end."""
    rows = fetch(
        conn,
        "SELECT substr(end_ts, 1, 10), count(*) FROM episodes"
        " WHERE end_ts >= ? AND outcome != 'skipped' GROUP BY 1",
        (since,),
    )
    return {r[0]: int(r[1]) for r in rows}
