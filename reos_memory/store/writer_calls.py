"""SQL for the Memory Writer's call log: one row per call, tokens, and the activity and
spending read back from it."""

from __future__ import annotations

from typing import Any

import apsw

from reos_memory.store.connection import fetch, scalar


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
