"""SQL for context requests: which memories a `get_task_context` call injected, and the
feedback and outcome that came back for them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw

from reos_memory.store.connection import fetch


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
