"""SQL for the local cache of a team server (migration 0010): the pull cursor per server and org,
the marker rows saying which `memories` rows mirror the server, and the outbox of team writes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import msgspec

from reos_memory.models import Memory
from reos_memory.store import memories as memory_sql
from reos_memory.store.connection import fetch, scalar


@dataclass(frozen=True)
class SyncState:
    """Where this machine stands with one org of one server."""

    server: str
    org_id: str
    key_id: str
    team_id: str | None
    role: str
    last_seq: int
    last_mark: str | None  # what identifies the change at last_seq on the server
    last_pull_at: str | None
    last_attempt_at: str | None
    last_error: str | None


@dataclass(frozen=True)
class OutboxItem:
    id: int
    idempotency_key: str
    method: str
    params: str  # JSON
    local_memory_id: str | None
    created_at: str
    attempts: int
    last_error: str | None
    state: str
    result: str | None  # JSON: the server's reply to a done item


@dataclass(frozen=True)
class Owed:
    """Local counts of a cached memory not yet reported to the server (deltas)."""

    memory_id: str
    receipt: str  # the server's proof it delivered the memory to this key (the report names it)
    opportunities: int
    uses: int
    regret_hits: int
    regret_saved: float
    last_used_at: str | None


# -- the cursor ---------------------------------------------------------------------------------

_SYNC_COLS = (
    "server, org_id, key_id, team_id, role, last_seq, last_mark, last_pull_at, last_attempt_at,"
    " last_error"
)


def sync_state(conn: apsw.Connection, server: str, key_id: str) -> SyncState | None:
    """What this machine knows of the org a key belongs to (None: that key never pulled)."""
    rows = fetch(
        conn,
        f"SELECT {_SYNC_COLS} FROM team_sync WHERE server = ? AND key_id = ?",
        (server, key_id),
    )
    return SyncState(*rows[0]) if rows else None


def remember_key(
    conn: apsw.Connection, server: str, org_id: str, key_id: str, team_id: str | None, role: str
) -> None:
    """The org (and team, role) a key belongs to, as the server said; the cursor is kept for
    the same key. Another key's (a key replaced) cannot use this one's receipts: they are
    dropped and the cursor goes back to the start, so the next pull brings the new key's."""
    had = scalar(
        conn, "SELECT key_id FROM team_sync WHERE server = ? AND org_id = ?", (server, org_id)
    )
    if had is not None and had != key_id:
        forget_receipts(conn, server, org_id)
    conn.execute(
        "INSERT INTO team_sync(server, org_id, key_id, team_id, role) VALUES (?, ?, ?, ?, ?)"
        " ON CONFLICT(server, org_id) DO UPDATE SET key_id = excluded.key_id,"
        " team_id = excluded.team_id, role = excluded.role",
        (server, org_id, key_id, team_id, role),
    )


def forget_receipts(
    conn: apsw.Connection, server: str, org_id: str, memory_ids: Sequence[str] | None = None
) -> None:
    """Drop the receipts of cached memories (all of the org's, or these) and move the cursor
    back to the start, so the next pull brings each memory again with a receipt (their counts
    wait for it; a pull from the start sweeps nothing)."""
    if memory_ids is None:
        conn.execute(
            "UPDATE team_memories SET receipt = NULL WHERE server = ? AND org_id = ?",
            (server, org_id),
        )
    else:
        conn.executemany(
            "UPDATE team_memories SET receipt = NULL WHERE memory_id = ? AND server = ?"
            " AND org_id = ?",
            [(m, server, org_id) for m in memory_ids],
        )
    conn.execute(
        "UPDATE team_sync SET last_seq = 0, last_mark = NULL WHERE server = ? AND org_id = ?",
        (server, org_id),
    )


def unreport(conn: apsw.Connection, server: str, owed: Sequence[Owed]) -> None:
    """These deltas did not count on the server (their receipts were not received): owed again."""
    conn.executemany(
        "UPDATE team_memories SET reported_opportunities = max(0, reported_opportunities - ?),"
        " reported_uses = max(0, reported_uses - ?),"
        " reported_regret_hits = max(0, reported_regret_hits - ?),"
        " reported_regret_saved = max(0.0, reported_regret_saved - ?)"
        " WHERE memory_id = ? AND server = ?",
        [
            (o.opportunities, o.uses, o.regret_hits, o.regret_saved, o.memory_id, server)
            for o in owed
        ],
    )


def advance(
    conn: apsw.Connection,
    server: str,
    org_id: str,
    after: int,
    to: int,
    mark: str | None,
    done_at: str | None,
) -> bool:
    """Move the cursor from `after` to `to` (with the server's mark of that change, and noting
    a pull that reached the end); False when the cursor is no longer at `after` (another
    process applied the page first)."""
    conn.execute(
        "UPDATE team_sync SET last_seq = ?, last_mark = ?, last_pull_at = coalesce(?,"
        " last_pull_at), last_error = NULL WHERE server = ? AND org_id = ? AND last_seq = ?",
        (to, mark, done_at, server, org_id, after),
    )
    return conn.changes() == 1


def restart(conn: apsw.Connection, server: str, org_id: str, after: int, now: str) -> bool:
    """Put the cursor back to the start (the server's log no longer holds it), noting when:
    `sweep` drops the cached memories the pull from the start does not bring again. False when
    the cursor is no longer at `after` (another process moved it first)."""
    conn.execute(
        "UPDATE team_sync SET last_seq = 0, last_mark = NULL, restarted_at = ?"
        " WHERE server = ? AND org_id = ? AND last_seq = ?",
        (now, server, org_id, after),
    )
    return conn.changes() == 1


def sweep(conn: apsw.Connection, server: str, org_id: str) -> int:
    """At the end of a pull after a restart: drop the cached memories of the server's org not
    pulled since (the server no longer has them); how many."""
    since = scalar(
        conn,
        "SELECT restarted_at FROM team_sync WHERE server = ? AND org_id = ?",
        (server, org_id),
    )
    if since is None:
        return 0
    gone = [
        r[0]
        for r in fetch(
            conn,
            "SELECT memory_id FROM team_memories WHERE server = ? AND org_id = ? AND pulled_at < ?",
            (server, org_id, since),
        )
    ]
    for mid in gone:
        memory_sql.delete_memory(conn, mid)  # the marker row goes with it (ON DELETE CASCADE)
    conn.execute(
        "UPDATE team_sync SET restarted_at = NULL WHERE server = ? AND org_id = ?",
        (server, org_id),
    )
    return len(gone)


def record_attempt(
    conn: apsw.Connection, server: str, key_id: str, at: str, error: str | None
) -> None:
    """When this machine last tried the server with this key, and how it went."""
    conn.execute(
        "UPDATE team_sync SET last_attempt_at = ?, last_error = ? WHERE server = ? AND key_id = ?",
        (at, error, server, key_id),
    )


# -- the cached memories ------------------------------------------------------------------------


def cached_version(conn: apsw.Connection, memory_id: str) -> tuple[str, str, int] | None:
    """(server, org_id, version) of a cached team memory; None for any other memory."""
    rows = fetch(
        conn,
        "SELECT server, org_id, version FROM team_memories WHERE memory_id = ?",
        (memory_id,),
    )
    return (rows[0][0], rows[0][1], int(rows[0][2])) if rows else None


def cached_texts(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, tuple[str, bool]]:
    """memory id -> (text, has a vector) of the cached ones among `ids`."""
    rows = fetch(
        conn,
        "SELECT m.id, m.text, m.embedding IS NOT NULL FROM memories m"
        " JOIN team_memories t ON t.memory_id = m.id"
        " WHERE m.id IN (SELECT value FROM json_each(?))",
        (msgspec.json.encode(list(ids)).decode(),),
    )
    return {r[0]: (r[1], bool(r[2])) for r in rows}


def put_cached(
    conn: apsw.Connection,
    server: str,
    org_id: str,
    m: Memory,
    version: int,
    seq: int,
    now: str,
    embedding: bytes | None,
    receipt: str | None = None,
) -> str:
    """Insert or update a cached team memory: 'added', 'updated', or 'refused' when the id is
    held by a memory that is not this server's cache (a user's own is never overwritten).
    `receipt`: the server's proof that it delivered the memory to this machine's key."""
    mine = cached_version(conn, m.id)
    if mine is None and memory_sql.get_memory(conn, m.id) is not None:
        return "refused"
    if mine is not None and (mine[0], mine[1]) != (server, org_id):
        return "refused"
    if mine is None:
        memory_sql.insert_memory(conn, m, embedding)
    else:
        fields: dict[str, Any] = {
            k: getattr(m, k)
            for k in (
                "project_id", "scope", "owner_type", "owner_id", "kind", "tier", "key", "text",
                "status", "confidence", "expires_at", "polarity", "path_prefix",
            )
        }  # fmt: skip
        if embedding is not None:
            fields["embedding"] = embedding
        elif scalar(conn, "SELECT text FROM memories WHERE id = ?", (m.id,)) != m.text:
            fields["embedding"] = None  # the old vector is of the old text
        memory_sql.update_memory(conn, m.id, m.updated_at, **fields)
    conn.execute(
        "INSERT INTO team_memories(memory_id, server, org_id, version, seq, pulled_at,"
        " receipt) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(memory_id) DO UPDATE SET"
        " version = excluded.version, seq = excluded.seq, pulled_at = excluded.pulled_at,"
        " receipt = excluded.receipt",
        (m.id, server, org_id, version, seq, now, receipt),
    )
    return "added" if mine is None else "updated"


def drop_cached(conn: apsw.Connection, server: str, org_id: str, memory_id: str) -> bool:
    """Erase a cached team memory of this server and org (nothing else is ever erased here)."""
    mine = fetch(
        conn,
        "SELECT 1 FROM team_memories WHERE memory_id = ? AND server = ? AND org_id = ?",
        (memory_id, server, org_id),
    )
    if not mine:
        return False
    memory_sql.delete_memory(conn, memory_id)  # the marker row goes with it (ON DELETE CASCADE)
    return True


def cached_count(conn: apsw.Connection, server: str, org_id: str) -> dict[str, int]:
    """Cached memories of a server's org by owner type."""
    rows = fetch(
        conn,
        "SELECT m.owner_type, count(*) FROM team_memories t JOIN memories m ON m.id = t.memory_id"
        " WHERE t.server = ? AND t.org_id = ? GROUP BY m.owner_type",
        (server, org_id),
    )
    return {r[0]: int(r[1]) for r in rows}


def cached_owners(conn: apsw.Connection, server: str, org_id: str) -> list[tuple[str, str]]:
    """The (owner_type, owner_id) pairs of a server's org that the cache holds memories of."""
    rows = fetch(
        conn,
        "SELECT DISTINCT m.owner_type, m.owner_id FROM team_memories t"
        " JOIN memories m ON m.id = t.memory_id WHERE t.server = ? AND t.org_id = ?"
        " ORDER BY 1, 2",
        (server, org_id),
    )
    return [(r[0], r[1]) for r in rows]


# -- usage owed to the server ---------------------------------------------------------------


def owed_usage(conn: apsw.Connection, server: str, org_id: str, limit: int) -> list[Owed]:
    """Cached memories whose local counts grew since they were last reported (those with no
    receipt yet wait for the pull that brings them again: the server counts a use only by the
    receipt of the delivery that brought the memory)."""
    rows = fetch(
        conn,
        "SELECT t.memory_id, t.receipt,"
        " coalesce(x.opportunities, 0) - t.reported_opportunities,"
        " coalesce(x.use_count, 0) - t.reported_uses,"
        " coalesce(x.suspected_regret_hits, 0) - t.reported_regret_hits,"
        " coalesce(x.estimated_regret_saved, 0) - t.reported_regret_saved, x.last_used_at"
        " FROM team_memories t JOIN memory_metrics x ON x.memory_id = t.memory_id"
        " WHERE t.server = ? AND t.org_id = ? AND t.receipt IS NOT NULL"
        " AND (x.opportunities > t.reported_opportunities"
        " OR x.use_count > t.reported_uses OR x.suspected_regret_hits > t.reported_regret_hits"
        " OR x.estimated_regret_saved > t.reported_regret_saved + 1e-9)"
        " ORDER BY t.memory_id LIMIT ?",
        (server, org_id, limit),
    )
    return [
        Owed(
            r[0],
            r[1],
            max(0, int(r[2])),
            max(0, int(r[3])),
            max(0, int(r[4])),
            max(0.0, r[5]),
            r[6],
        )
        for r in rows
    ]


def mark_reported(conn: apsw.Connection, owed: Sequence[Owed]) -> None:
    """These deltas are on their way (in the outbox): count them as reported."""
    conn.executemany(
        "UPDATE team_memories SET reported_opportunities = reported_opportunities + ?,"
        " reported_uses = reported_uses + ?, reported_regret_hits = reported_regret_hits + ?,"
        " reported_regret_saved = reported_regret_saved + ? WHERE memory_id = ?",
        [(o.opportunities, o.uses, o.regret_hits, o.regret_saved, o.memory_id) for o in owed],
    )


# -- the outbox ------------------------------------------------------------------------------

_OUTBOX_COLS = (
    "id, idempotency_key, method, params, local_memory_id, created_at, attempts, last_error,"
    " state, result"
)


def enqueue(
    conn: apsw.Connection,
    server: str,
    idempotency_key: str,
    method: str,
    params: str,
    local_memory_id: str | None,
    now: str,
) -> OutboxItem:
    """Queue one write (a key already queued is the same write: the first item is returned)."""
    conn.execute(
        "INSERT INTO team_outbox(server, idempotency_key, method, params, local_memory_id,"
        " created_at) VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT(idempotency_key) DO NOTHING",
        (server, idempotency_key, method, params, local_memory_id, now),
    )
    item = outbox_item(conn, idempotency_key)
    assert item is not None
    return item


def outbox_item(conn: apsw.Connection, idempotency_key: str) -> OutboxItem | None:
    rows = fetch(
        conn,
        f"SELECT {_OUTBOX_COLS} FROM team_outbox WHERE idempotency_key = ?",
        (idempotency_key,),
    )
    return OutboxItem(*rows[0]) if rows else None


def pending(conn: apsw.Connection, server: str, limit: int) -> list[OutboxItem]:
    """The items still to send to a server, oldest first."""
    return items(conn, server, "pending", limit)


def items(
    conn: apsw.Connection, server: str, state: str, limit: int, newest_first: bool = False
) -> list[OutboxItem]:
    """A server's items in one state, in the order they were queued (or the newest first)."""
    rows = fetch(
        conn,
        f"SELECT {_OUTBOX_COLS} FROM team_outbox WHERE server = ? AND state = ?"
        f" ORDER BY id {'DESC' if newest_first else ''} LIMIT ?",
        (server, state, limit),
    )
    return [OutboxItem(*r) for r in rows]


def finish(
    conn: apsw.Connection, item_id: int, state: str, now: str, result: str | None, error: str | None
) -> None:
    """Close an attempt: 'done' with the server's reply, 'refused' with why, or 'pending' again
    with the error of this attempt."""
    conn.execute(
        "UPDATE team_outbox SET attempts = attempts + 1, last_attempt_at = ?, state = ?,"
        " result = coalesce(?, result), last_error = ?,"
        " done_at = CASE WHEN ? = 'pending' THEN NULL ELSE ? END WHERE id = ?",
        (now, state, result, error, state, now, item_id),
    )


def has_pending(conn: apsw.Connection, server: str, method: str) -> bool:
    """Whether an item of `method` still waits to be sent to a server."""
    return bool(
        scalar(
            conn,
            "SELECT 1 FROM team_outbox WHERE server = ? AND state = 'pending' AND method = ?",
            (server, method),
        )
    )


def outbox_summary(conn: apsw.Connection, server: str) -> dict[str, int]:
    """Items of a server by state."""
    rows = fetch(
        conn, "SELECT state, count(*) FROM team_outbox WHERE server = ? GROUP BY state", (server,)
    )
    return {r[0]: int(r[1]) for r in rows}
