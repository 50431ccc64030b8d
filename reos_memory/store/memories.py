"""SQL for Squirrel memories, their evidence and metrics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec

from reos_memory.models import Evidence, Injection, Memory, MemoryLink, MemoryMetrics
from reos_memory.store.connection import fetch, scalar
from reos_memory.store.keywords import fts_match, like_escape

_encoder = msgspec.json.Encoder()

COLUMNS = (
    "id, project_id, scope, owner_type, owner_id, kind, tier, key, text, status, confidence,"
    " expires_at, created_at, updated_at, polarity, path_prefix"
)


def _json(values: Sequence[Any]) -> str:
    return _encoder.encode(list(values)).decode()


def _memory(row: Any) -> Memory:
    return Memory(
        id=row[0],
        project_id=row[1],
        scope=row[2],
        owner_type=row[3],
        owner_id=row[4],
        kind=row[5],
        tier=row[6],
        key=row[7],
        text=row[8],
        status=row[9],
        confidence=row[10],
        expires_at=row[11],
        created_at=row[12],
        updated_at=row[13],
        polarity=int(row[14]),
        path_prefix=row[15],
    )


# -- memories ---------------------------------------------------------------------------------


def insert_memory(conn: apsw.Connection, m: Memory, embedding: bytes | None) -> None:
    conn.execute(
        f"INSERT INTO memories({COLUMNS}, embedding) VALUES"
        " (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            m.id,
            m.project_id,
            m.scope,
            m.owner_type,
            m.owner_id,
            m.kind,
            m.tier,
            m.key,
            m.text,
            m.status,
            m.confidence,
            m.expires_at,
            m.created_at,
            m.updated_at,
            m.polarity,
            m.path_prefix,
            embedding,
        ),
    )
    conn.execute("INSERT INTO memory_metrics(memory_id) VALUES (?)", (m.id,))


def get_memory(conn: apsw.Connection, memory_id: str) -> Memory | None:
    rows = fetch(conn, f"SELECT {COLUMNS} FROM memories WHERE id = ?", (memory_id,))
    return _memory(rows[0]) if rows else None


def get_memories(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, Memory]:
    rows = fetch(
        conn,
        f"SELECT {COLUMNS} FROM memories WHERE id IN (SELECT value FROM json_each(?))",
        (_json(ids),),
    )
    return {r[0]: _memory(r) for r in rows}


def live_by_key(
    conn: apsw.Connection,
    key: str,
    project_id: str | None,
    scope: str,
    owner_type: str,
    owner_id: str,
) -> list[Memory]:
    """Provisional or active memories holding `key` for this project, scope and owner (an
    expired one included: a new value for the key must replace it)."""
    rows = fetch(
        conn,
        f"SELECT {COLUMNS} FROM memories WHERE key = ? AND project_id IS ? AND scope = ?"
        " AND owner_type = ? AND owner_id = ? AND status != 'deprecated' ORDER BY created_at",
        (key, project_id, scope, owner_type, owner_id),
    )
    return [_memory(r) for r in rows]


def keyed_ids(conn: apsw.Connection, project_id: str, owner: tuple[str, str] | None) -> set[str]:
    """Live memories found by key lookup: `project.*` keys of the project, `user.*` keys of the
    owner (two range scans of the key index)."""
    owner_sql, args = "", []
    if owner is not None:
        owner_sql, args = " AND owner_type = ? AND owner_id = ?", list(owner)
    live = " AND status IN ('provisional', 'active')"
    rows = fetch(
        conn,
        # INDEXED BY: without statistics the planner prefers the owner index, which on a
        # one-user database scans every memory (measured: 9.6 ms vs 0.01 ms at 10K)
        "SELECT id FROM memories INDEXED BY idx_memories_key WHERE key IS NOT NULL"
        " AND key >= 'project.' AND key < 'project/' AND project_id = ?" + live + owner_sql,
        (project_id, *args),
    )
    rows += fetch(
        conn,
        "SELECT id FROM memories INDEXED BY idx_memories_key WHERE key IS NOT NULL"
        " AND key >= 'user.' AND key < 'user/'" + live + owner_sql,
        args,
    )
    return {r[0] for r in rows}


def emergency_guard_ids(
    conn: apsw.Connection, project_id: str, owner: tuple[str, str] | None
) -> set[str]:
    """Live emergency guards (polarity -1) of the project and global ones."""
    owner_sql, args = "", []
    if owner is not None:
        owner_sql, args = " AND owner_type = ? AND owner_id = ?", list(owner)
    sql = (
        "SELECT id FROM memories INDEXED BY idx_memories_kind WHERE project_id {}"
        " AND kind = 'guard' AND tier = 'emergency'"
        " AND status IN ('provisional', 'active') AND polarity < 0" + owner_sql
    )
    rows = fetch(conn, sql.format("= ?"), (project_id, *args))
    rows += fetch(conn, sql.format("IS NULL"), args)
    return {r[0] for r in rows}


def important_ids(
    conn: apsw.Connection, project_id: str, owner: tuple[str, str] | None, limit: int
) -> list[str]:
    """The live memories of a project (and global ones) that matter most without a task:
    active before provisional, then tier, then how often they were used."""
    owner_sql, args = "", []
    if owner is not None:
        owner_sql, args = " AND m.owner_type = ? AND m.owner_id = ?", list(owner)
    rows = fetch(
        conn,
        "SELECT m.id FROM memories m LEFT JOIN memory_metrics x ON x.memory_id = m.id"
        " WHERE (m.project_id = ? OR m.project_id IS NULL)"
        " AND m.status IN ('provisional', 'active')" + owner_sql + " ORDER BY"
        " m.status = 'active' DESC,"
        " CASE m.tier WHEN 'emergency' THEN 0 WHEN 'long_term' THEN 1 ELSE 2 END,"
        " coalesce(x.use_count, 0) DESC, m.updated_at DESC, m.id LIMIT ?",
        (project_id, *args, limit),
    )
    return [r[0] for r in rows]


def same_text(
    conn: apsw.Connection,
    project_id: str | None,
    scope: str,
    owner_type: str,
    owner_id: str,
    kind: str,
    text: str,
    now: str,
    protected: Sequence[str] = (),
) -> str | None:
    """A live, unexpired memory of this slot whose text is the same, ignoring case and outer
    spaces (protected kinds do not expire)."""
    return scalar(
        conn,
        "SELECT id FROM memories WHERE project_id IS ? AND kind = ?"
        " AND lower(trim(text)) = lower(trim(?)) AND scope = ? AND owner_type = ?"
        " AND owner_id = ? AND status != 'deprecated'"
        " AND (expires_at IS NULL OR expires_at > ? OR kind IN (SELECT value FROM json_each(?)))"
        " LIMIT 1",
        (project_id, kind, text, scope, owner_type, owner_id, now, _json(protected)),
    )


def update_memory(conn: apsw.Connection, memory_id: str, now: str, **fields: Any) -> None:
    """Set the given columns (and updated_at); `embedding` may be among them."""
    if not fields:
        return
    names = ", ".join(f"{k} = ?" for k in fields)
    conn.execute(
        f"UPDATE memories SET {names}, updated_at = ? WHERE id = ?",
        (*fields.values(), now, memory_id),
    )


def raise_confidence(conn: apsw.Connection, memory_id: str, confidence: float) -> None:
    """Lift a memory's confidence to at least `confidence` (it never goes down here)."""
    conn.execute(
        "UPDATE memories SET confidence = max(coalesce(confidence, 0), ?) WHERE id = ?",
        (confidence, memory_id),
    )


def update_many_if_status(
    conn: apsw.Connection, columns: Sequence[str], rows: Sequence[Sequence[Any]]
) -> None:
    """Set `columns` and updated_at of many memories, each row being (*values, updated_at, id,
    expected status): a memory whose status changed meanwhile is left alone."""
    sets = ", ".join(f"{k} = ?" for k in columns)
    conn.executemany(
        f"UPDATE memories SET {sets}, updated_at = ? WHERE id = ? AND status = ?",
        rows,
    )


def delete_memory(conn: apsw.Connection, memory_id: str) -> dict[str, int]:
    """Erase a memory with its evidence, metrics and injections; counts of rows removed."""
    out = {}
    for table, col in (
        ("evidence", "memory_id"),
        ("memory_metrics", "memory_id"),
        ("memory_injections", "memory_id"),
        ("memories", "id"),
    ):
        conn.execute(f"DELETE FROM {table} WHERE {col} = ?", (memory_id,))
        out[table] = conn.changes()
    return out


# list orders other than creation: the ORDER BY, most first (metrics of a memory never used are 0)
_SORTS = {
    "newest": "m.rowid DESC",
    "updated": "m.updated_at DESC, m.rowid DESC",
    "uses": "coalesce(x.use_count, 0) DESC, m.rowid DESC",
    "opportunities": "coalesce(x.opportunities, 0) DESC, m.rowid DESC",
    "regret_saved": "coalesce(x.estimated_regret_saved, 0) DESC, m.rowid DESC",
}


def list_memories(
    conn: apsw.Connection,
    *,
    project_ids: Sequence[str | None] | None,
    statuses: Sequence[str],
    kinds: Sequence[str] | None = None,
    tiers: Sequence[str] | None = None,
    scope: str | None = None,
    owner: tuple[str, str] | None = None,
    key_prefix: str | None = None,
    text: str | None = None,
    sort: str = "created",
    after: int = 0,
    limit: int = 100,
) -> list[tuple[int, Memory]]:
    """(position, memory), filtered; project None in project_ids means global. In creation order
    the position is the rowid and `after` the last one seen; in another `sort` (see _SORTS) it
    is the row's place in that order and `after` the number of rows seen."""
    where = ["m.status IN (SELECT value FROM json_each(?))"]
    args: list[Any] = [_json(statuses)]
    if sort == "created":
        where.append("m.rowid > ?")
        args.append(after)
    if project_ids is not None:
        named = [p for p in project_ids if p is not None]
        parts = ["m.project_id IN (SELECT value FROM json_each(?))"]
        args.append(_json(named))
        if None in project_ids:
            parts.append("m.project_id IS NULL")
        where.append("(" + " OR ".join(parts) + ")")
    if kinds:
        where.append("m.kind IN (SELECT value FROM json_each(?))")
        args.append(_json(kinds))
    if tiers:
        where.append("m.tier IN (SELECT value FROM json_each(?))")
        args.append(_json(tiers))
    if scope is not None:
        where.append("m.scope = ?")
        args.append(scope)
    if owner is not None and owner[1]:
        where.append("m.owner_type = ? AND m.owner_id = ?")
        args.extend(owner)
    elif owner is not None:  # every owner of that type (the team's and the org's cached ones)
        where.append("m.owner_type = ?")
        args.append(owner[0])
    if key_prefix is not None:
        where.append("m.key >= ? AND m.key < ?")
        args.extend([key_prefix, key_prefix + "\uffff"])
    if text is not None:
        where.append("m.text LIKE ? ESCAPE '\\'")
        args.append("%" + like_escape(text) + "%")
    cols = ", ".join("m." + c.strip() for c in COLUMNS.split(","))
    sql = f"SELECT m.rowid, {cols} FROM memories m"
    if sort == "created":
        rows = fetch(
            conn, f"{sql} WHERE {' AND '.join(where)} ORDER BY m.rowid LIMIT ?", (*args, limit)
        )
        return [(int(r[0]), _memory(r[1:])) for r in rows]
    rows = fetch(
        conn,
        f"{sql} LEFT JOIN memory_metrics x ON x.memory_id = m.id WHERE {' AND '.join(where)}"
        f" ORDER BY {_SORTS[sort]} LIMIT ? OFFSET ?",
        (*args, limit, after),
    )
    return [(after + i + 1, _memory(r[1:])) for i, r in enumerate(rows)]


def count_by(conn: apsw.Connection, column: str, project_id: str | None = None) -> dict[str, int]:
    """Memories per value of `column` (status, kind, tier), optionally of one project."""
    assert column in ("status", "kind", "tier", "scope")
    if project_id is None:
        rows = fetch(conn, f"SELECT {column}, count(*) FROM memories GROUP BY 1")
    else:
        rows = fetch(
            conn,
            f"SELECT {column}, count(*) FROM memories WHERE project_id = ? GROUP BY 1",
            (project_id,),
        )
    return {r[0]: int(r[1]) for r in rows}


# -- embeddings -------------------------------------------------------------------------------


def drop_all_embeddings(conn: apsw.Connection) -> int:
    """Forget every memory vector (the model changed); catch-up embeds them again."""
    conn.execute("UPDATE memories SET embedding = NULL WHERE embedding IS NOT NULL")
    return conn.changes()


def count_unembedded(conn: apsw.Connection) -> int:
    return int(
        scalar(
            conn,
            "SELECT count(*) FROM memories WHERE embedding IS NULL AND status != 'deprecated'",
        )
        or 0
    )


def unembedded(conn: apsw.Connection, limit: int) -> list[tuple[str, str]]:
    """(id, text) of live memories without a vector."""
    return [
        (r[0], r[1])
        for r in fetch(
            conn,
            "SELECT id, text FROM memories WHERE embedding IS NULL AND status != 'deprecated'"
            " ORDER BY rowid LIMIT ?",
            (limit,),
        )
    ]


def set_embedding(conn: apsw.Connection, memory_id: str, text: str, blob: bytes) -> bool:
    """Store a vector computed from `text`, unless the memory's text changed meanwhile."""
    conn.execute(
        "UPDATE memories SET embedding = ? WHERE id = ? AND text = ?", (blob, memory_id, text)
    )
    return conn.changes() > 0


def embedding_of(conn: apsw.Connection, memory_id: str) -> bytes | None:
    return scalar(conn, "SELECT embedding FROM memories WHERE id = ?", (memory_id,))


# -- keyword search ---------------------------------------------------------------------------


def keyword_search(
    conn: apsw.Connection,
    words: Sequence[str],
    k: int,
    project_ids: Sequence[str | None] | None,
    statuses: Sequence[str] = ("provisional", "active"),
) -> list[tuple[str, float]]:
    """Top-k (memory_id, BM25; higher is better) of memories of these statuses that match any of
    the words, in the given projects (None in the list: global ones; None: every project)."""
    if not words:
        return []
    where = ""
    args: list[Any] = []
    if project_ids is not None:
        glob = " OR m.project_id IS NULL" if None in project_ids else ""
        where = f" AND (m.project_id IN (SELECT value FROM json_each(?)){glob})"
        args.append(_json([p for p in project_ids if p is not None]))
    rows = fetch(
        conn,
        "WITH f AS MATERIALIZED (SELECT rowid AS r, -bm25(memories_fts) AS s FROM memories_fts"
        " WHERE memories_fts MATCH ?)"
        # CROSS JOIN keeps the order: the few keyword hits first, not every memory of the project
        " SELECT m.id, f.s FROM f CROSS JOIN memories m ON m.rowid = f.r"
        " WHERE m.status IN (SELECT value FROM json_each(?))"
        + where
        + " ORDER BY f.s DESC, m.id LIMIT ?",
        (fts_match(words), _json(statuses), *args, k),
    )
    return [(r[0], float(r[1])) for r in rows]


def count_all(conn: apsw.Connection) -> int:
    """How many memories the database holds (every project and status: the keyword index's
    documents)."""
    return int(scalar(conn, "SELECT count(*) FROM memories") or 0)


def words_held(
    conn: apsw.Connection, words: Sequence[str], ids: Sequence[str]
) -> dict[str, list[str]]:
    """Which of the words (matched as the keyword index stems them) each of these memories
    holds; memories holding none are left out."""
    out: dict[str, list[str]] = {}
    for w in words:
        rows = fetch(
            conn,
            "SELECT m.id FROM memories_fts JOIN memories m ON m.rowid = memories_fts.rowid"
            " WHERE memories_fts MATCH ? AND m.id IN (SELECT value FROM json_each(?))",
            (fts_match([w]), _json(list(ids))),
        )
        for r in rows:
            out.setdefault(r[0], []).append(w)
    return out


# -- what a memory went through -----------------------------------------------------------------


def injections_of(conn: apsw.Connection, memory_id: str, limit: int = 50) -> list[Injection]:
    """The contexts a memory was given in, newest first: the task, its rank and score there,
    and the outcome feedback when one came."""
    rows = fetch(
        conn,
        "SELECT c.context_id, c.created_at, c.session_id, c.task, i.rank, i.score,"
        " c.feedback_at, c.errors, c.retries, c.tests_final_status, c.user_frustration"
        " FROM memory_injections i JOIN context_requests c ON c.context_id = i.context_id"
        " WHERE i.memory_id = ? ORDER BY c.created_at DESC, c.context_id LIMIT ?",
        (memory_id, limit),
    )
    return [
        Injection(
            context_id=cid,
            created_at=created,
            session_id=sid,
            task=task,
            rank=rank,
            score=score,
            feedback_at=feedback_at,
            errors=errors,
            retries=retries,
            tests_final_status=tests,
            user_frustration=frustration,
        )
        for (
            cid,
            created,
            sid,
            task,
            rank,
            score,
            feedback_at,
            errors,
            retries,
            tests,
            frustration,
        ) in rows
    ]


def record_replacements(
    conn: apsw.Connection, memory_id: str, replaced: Sequence[str], episode_id: str, at: str
) -> None:
    """`memory_id` replaced (deprecated) the `replaced` memories, written by `episode_id`."""
    conn.executemany(
        "INSERT OR IGNORE INTO memory_replacements(memory_id, replaced_id, episode_id, at)"
        " VALUES (?, ?, ?, ?)",
        [(memory_id, r, episode_id, at) for r in replaced],
    )


def history_of(conn: apsw.Connection, memory_id: str) -> list[MemoryLink]:
    """The replacement chain around a memory, oldest first: the memories it replaced, and
    those that replaced it, each with the episode that did it."""
    rows = fetch(
        conn,
        "SELECT 'replaced', replaced_id, episode_id, at FROM memory_replacements"
        " WHERE memory_id = ?1"
        " UNION ALL SELECT 'replaced_by', memory_id, episode_id, at FROM memory_replacements"
        " WHERE replaced_id = ?1 ORDER BY 4, 2",
        (memory_id,),
    )
    known = get_memories(conn, [r[1] for r in rows])
    return [
        MemoryLink(
            relation=rel,
            memory_id=mid,
            episode_id=ep,
            at=at,
            text=known[mid].text if mid in known else None,
            status=known[mid].status if mid in known else None,
        )
        for rel, mid, ep, at in rows
    ]


# -- evidence ---------------------------------------------------------------------------------


def insert_evidence(conn: apsw.Connection, e: Evidence) -> None:
    conn.execute(
        "INSERT INTO evidence(id, memory_id, episode_id, source, frustration, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (e.id, e.memory_id, e.episode_id, e.source, e.frustration, e.created_at),
    )


def evidence_of(conn: apsw.Connection, memory_id: str) -> list[Evidence]:
    rows = fetch(
        conn,
        "SELECT id, memory_id, episode_id, source, frustration, created_at FROM evidence"
        " WHERE memory_id = ? ORDER BY created_at, id",
        (memory_id,),
    )
    return [
        Evidence(
            id=r[0],
            memory_id=r[1],
            episode_id=r[2],
            source=r[3],
            frustration=r[4],
            created_at=r[5],
        )
        for r in rows
    ]


def session_memory_ids(conn: apsw.Connection, session_id: str, but_episode: str) -> list[str]:
    """The memories earlier episodes of one session gave evidence for (not `but_episode`)."""
    rows = fetch(
        conn,
        "SELECT DISTINCT ev.memory_id FROM evidence ev JOIN episodes ep ON ep.id = ev.episode_id"
        " WHERE ep.session_id = ? AND ep.id != ? ORDER BY ev.memory_id",
        (session_id, but_episode),
    )
    return [r[0] for r in rows]


def has_evidence(conn: apsw.Connection, memory_id: str, episode_id: str) -> bool:
    return bool(
        scalar(
            conn,
            "SELECT 1 FROM evidence WHERE memory_id = ? AND episode_id = ?",
            (memory_id, episode_id),
        )
    )


# -- metrics ----------------------------------------------------------------------------------

_METRIC_COLS = (
    "memory_id, use_count, opportunities, suspected_regret_hits, estimated_regret_saved,"
    " last_used_at, last_evaluated_at"
)


def _metrics(r: Any) -> MemoryMetrics:
    return MemoryMetrics(
        memory_id=r[0],
        use_count=int(r[1] or 0),
        opportunities=int(r[2] or 0),
        suspected_regret_hits=int(r[3] or 0),
        estimated_regret_saved=float(r[4] or 0.0),
        last_used_at=r[5],
        last_evaluated_at=r[6],
    )


_LIVE_WITH_METRICS = (
    "SELECT m.id, m.project_id, m.kind, m.tier, m.status, m.expires_at, m.created_at,"
    " coalesce(x.opportunities, 0), coalesce(x.use_count, 0),"
    " coalesce(x.suspected_regret_hits, 0), coalesce(x.estimated_regret_saved, 0),"
    " x.last_used_at FROM memories m LEFT JOIN memory_metrics x ON x.memory_id = m.id"
    " WHERE m.status IN ('provisional', 'active')"
    # a team server's cached memories are decided on by the server's CR-Memory, not here
    " AND m.id NOT IN (SELECT memory_id FROM team_memories)"
)


def live_with_metrics(conn: apsw.Connection, project_id: str | None) -> list[Any]:
    """(id, project_id, kind, tier, status, expires_at, created_at, opportunities, use_count,
    regret hits, regret saved, last_used_at) of every live memory (of one project, if given),
    in creation order."""
    sql = _LIVE_WITH_METRICS + (" AND m.project_id = ?" if project_id else "") + " ORDER BY m.rowid"
    return fetch(conn, sql, (project_id,) if project_id else ())


def mark_evaluated(conn: apsw.Connection, ids: Sequence[str], now: str) -> None:
    """Record when CR-Memory last looked at these memories."""
    conn.execute(
        "UPDATE memory_metrics SET last_evaluated_at = ? WHERE memory_id IN"
        " (SELECT value FROM json_each(?))",
        (now, _json(ids)),
    )


def metrics_of(conn: apsw.Connection, ids: Sequence[str]) -> dict[str, MemoryMetrics]:
    rows = fetch(
        conn,
        f"SELECT {_METRIC_COLS} FROM memory_metrics"
        " WHERE memory_id IN (SELECT value FROM json_each(?))",
        (_json(ids),),
    )
    return {r[0]: _metrics(r) for r in rows}


def count_opportunities(conn: apsw.Connection, ids: Sequence[str]) -> None:
    conn.execute(
        "UPDATE memory_metrics SET opportunities = coalesce(opportunities, 0) + 1"
        " WHERE memory_id IN (SELECT value FROM json_each(?))",
        (_json(ids),),
    )


def count_uses(conn: apsw.Connection, ids: Sequence[str], now: str) -> None:
    conn.execute(
        "UPDATE memory_metrics SET use_count = coalesce(use_count, 0) + 1, last_used_at = ?"
        " WHERE memory_id IN (SELECT value FROM json_each(?))",
        (now, _json(ids)),
    )


def add_regret(conn: apsw.Connection, ids: Sequence[str], saved: float) -> None:
    conn.execute(
        "UPDATE memory_metrics SET suspected_regret_hits = coalesce(suspected_regret_hits, 0) + 1,"
        " estimated_regret_saved = coalesce(estimated_regret_saved, 0) + ?"
        " WHERE memory_id IN (SELECT value FROM json_each(?))",
        (saved, _json(ids)),
    )
