"""SQL of shares: members' personal memories proposed to a team or the org, until decided."""

from __future__ import annotations

from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from reos_memory.store.team.memories import Reach, row_in_reach, where

COLUMNS = (
    "id, team_id, proposed_by, local_memory_id, memory, status, decided_by, decided_at,"
    " reason, memory_id, created_at"
)


def insert(
    conn: psycopg.Connection,
    org_id: str,
    share_id: str,
    team_id: str | None,
    proposed_by: str,
    local_memory_id: str | None,
    memory: dict[str, Any],
) -> dict[str, Any]:
    cur = conn.cursor(row_factory=dict_row).execute(
        "INSERT INTO shares (org_id, id, team_id, proposed_by, local_memory_id, memory)"
        f" VALUES (%s, %s, %s, %s, %s, %s) RETURNING {COLUMNS}",
        (org_id, share_id, team_id, proposed_by, local_memory_id, Jsonb(memory)),
    )
    row = cur.fetchone()
    assert row is not None
    return row


def get(
    conn: psycopg.Connection, reach: Reach, share_id: str, *, lock: bool = False
) -> dict[str, Any] | None:
    return row_in_reach(conn, "shares", COLUMNS, reach, share_id, lock=lock)


def listed(
    conn: psycopg.Connection,
    reach: Reach,
    status: str | None,
    proposed_by: str | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Shares of the reach, oldest first (the review queue's order)."""
    sql, args = where(reach)
    if status is not None:
        sql += " AND status = %s"
        args.append(status)
    if proposed_by is not None:
        sql += " AND proposed_by = %s"
        args.append(proposed_by)
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {COLUMNS} FROM shares WHERE {sql} ORDER BY created_at, id LIMIT %s",
        [*args, limit],
    )
    return [r for r in cur.fetchall()]


def decide(
    conn: psycopg.Connection,
    org_id: str,
    share_id: str,
    status: str,
    decided_by: str,
    reason: str | None,
    memory_id: str | None,
) -> dict[str, Any]:
    cur = conn.cursor(row_factory=dict_row).execute(
        "UPDATE shares SET status = %s, decided_by = %s, decided_at = now(), reason = %s,"
        f" memory_id = %s WHERE org_id = %s AND id = %s RETURNING {COLUMNS}",
        (status, decided_by, reason, memory_id, org_id, share_id),
    )
    row = cur.fetchone()
    assert row is not None
    return row


def pending_count(conn: psycopg.Connection, reach: Reach) -> int:
    sql, args = where(reach)
    row = conn.execute(
        f"SELECT count(*) FROM shares WHERE {sql} AND status = 'pending'", args
    ).fetchone()
    return int(row[0]) if row else 0
