"""SQL of team and org memories: rows, versions, metrics, the change log, idempotency and the
retrieval queries (HNSW with iterative scans, full text). Functions take a connection already
inside the caller's tenant transaction; every query also names the org itself (row-level
security is the second lock, not the only one)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from reos_memory.store.keywords import like_escape

COLUMNS = (
    "org_id, team_id, id, project_id, scope, owner_type, kind, tier, key, text, status,"
    " confidence, expires_at, polarity, path_prefix, created_at, updated_at, version, seq,"
    " created_by, updated_by, origin"
)
# what a new version may change (the rest is fixed at creation: owner, project, scope)
EDITABLE = ("text", "kind", "tier", "key", "status", "confidence", "expires_at", "polarity")
# HNSW candidates read before the filter gives up (pgvector's iterative scan): enough for a
# tenant of 1K among 200K to get its exact top 10 (tests/test_team_retrieval.py measures it)
MAX_SCAN_TUPLES = 40_000
EF_SEARCH = 100
# a reach with at most this many live memories is searched exactly (no vector index)
EXACT_BELOW = 5_000


@dataclass(frozen=True)
class Reach:
    """The memories a key reaches: its org's org-wide ones, and those of `team_ids` (None: of
    every team of the org)."""

    org_id: str
    team_ids: tuple[str, ...] | None

    def sql(self, alias: str = "") -> tuple[str, list[Any]]:
        a = f"{alias}." if alias else ""
        if self.team_ids is None:
            return f"{a}org_id = %s", [self.org_id]
        return (
            f"{a}org_id = %s AND ({a}team_id IS NULL OR {a}team_id = ANY(%s))",
            [self.org_id, list(self.team_ids)],
        )


@dataclass(frozen=True)
class Filters:
    """Which memories of a reach a query considers."""

    project_id: str | None = None  # with include_global: that project's and global ones
    include_global: bool = True
    statuses: tuple[str, ...] = ("provisional", "active")
    kinds: tuple[str, ...] | None = None
    tiers: tuple[str, ...] | None = None
    scope: str | None = None
    owner: tuple[str, str] | None = None  # (owner_type, team or org id)
    key_prefix: str | None = None
    text: str | None = None  # memories whose text holds this, case-insensitive

    def sql(self, alias: str = "") -> tuple[str, list[Any]]:
        a = f"{alias}." if alias else ""
        parts = [f"{a}status = ANY(%s)"]
        args: list[Any] = [list(self.statuses)]
        if self.project_id is not None:
            if self.include_global:
                parts.append(f"({a}project_id = %s OR {a}project_id IS NULL)")
            else:
                parts.append(f"{a}project_id = %s")
            args.append(self.project_id)
        elif not self.include_global:
            parts.append(f"{a}project_id IS NOT NULL")
        if self.kinds is not None:
            parts.append(f"{a}kind = ANY(%s)")
            args.append(list(self.kinds))
        if self.tiers is not None:
            parts.append(f"{a}tier = ANY(%s)")
            args.append(list(self.tiers))
        if self.scope is not None:
            parts.append(f"{a}scope = %s")
            args.append(self.scope)
        if self.owner is not None:
            kind, ident = self.owner
            if kind == "team":
                parts.append(f"{a}team_id = %s")
                args.append(ident)
            else:
                parts.append(f"{a}team_id IS NULL")
        if self.key_prefix is not None:
            parts.append(f"{a}key LIKE %s")
            args.append(like_escape(self.key_prefix) + "%")
        if self.text is not None:
            parts.append(f"{a}text ILIKE %s")
            args.append("%" + like_escape(self.text) + "%")
        return " AND ".join(parts), args


def where(reach: Reach, filters: Filters | None = None, alias: str = "") -> tuple[str, list[Any]]:
    """The WHERE clause (without the keyword) of a reach and its filters."""
    sql, args = reach.sql(alias)
    if filters is not None:
        fsql, fargs = filters.sql(alias)
        sql, args = f"{sql} AND {fsql}", [*args, *fargs]
    return sql, args


def insert(conn: psycopg.Connection, fields: dict[str, Any]) -> dict[str, Any]:
    """A new memory (its embedding included); the stored row."""
    names = list(fields)
    marks = ["%s::vector" if n == "embedding" else "%s" for n in names]
    cur = conn.cursor(row_factory=dict_row).execute(
        f"INSERT INTO memories ({', '.join(names)}) VALUES ({', '.join(marks)})"
        f" RETURNING {COLUMNS}",
        [fields[n] for n in names],
    )
    row = cur.fetchone()
    assert row is not None
    return row


def row_in_reach(
    conn: psycopg.Connection,
    table: str,
    columns: str,
    reach: Reach,
    ident: str,
    *,
    lock: bool = False,
) -> dict[str, Any] | None:
    """The row `ident` of an org-owned table if the reach holds it (FOR UPDATE with `lock`)."""
    sql, args = where(reach)
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {columns} FROM {table} WHERE {sql} AND id = %s" + (" FOR UPDATE" if lock else ""),
        [*args, ident],
    )
    return cur.fetchone()


def get(
    conn: psycopg.Connection, reach: Reach, memory_id: str, *, lock: bool = False
) -> dict[str, Any] | None:
    """The memory `memory_id` if the reach holds it (FOR UPDATE with `lock`: the writer that
    locks it first is ordered first)."""
    return row_in_reach(conn, "memories", COLUMNS, reach, memory_id, lock=lock)


def get_many(
    conn: psycopg.Connection, reach: Reach, ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    sql, args = where(reach)
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {COLUMNS} FROM memories WHERE {sql} AND id = ANY(%s)", [*args, list(ids)]
    )
    return {r["id"]: r for r in cur.fetchall()}


def keyed(conn: psycopg.Connection, reach: Reach, filters: Filters) -> list[dict[str, Any]]:
    """The memories of the filtered reach that hold a key (by the key index), by key."""
    sql, args = where(reach, filters)
    cur = conn.cursor(row_factory=dict_row)
    cur.execute(
        f"SELECT {COLUMNS} FROM memories WHERE {sql} AND key IS NOT NULL ORDER BY key, id", args
    )
    return cur.fetchall()


def live_key_holder(
    conn: psycopg.Connection, org_id: str, team_id: str | None, project_id: str | None, key: str
) -> str | None:
    """The id of the live memory holding `key` in that owner and project, if any."""
    row = conn.execute(
        "SELECT id FROM memories WHERE org_id = %s AND coalesce(team_id, '') = %s"
        " AND coalesce(project_id, '') = %s AND key = %s AND status <> 'deprecated'",
        (org_id, team_id or "", project_id or "", key),
    ).fetchone()
    return str(row[0]) if row else None


def same_text(
    conn: psycopg.Connection,
    org_id: str,
    team_id: str | None,
    project_id: str | None,
    text: str,
) -> str | None:
    """The id of a live memory of that owner and project with exactly this text."""
    row = conn.execute(
        "SELECT id FROM memories WHERE org_id = %s AND coalesce(team_id, '') = %s"
        " AND coalesce(project_id, '') = %s AND text = %s AND status <> 'deprecated' LIMIT 1",
        (org_id, team_id or "", project_id or "", text),
    ).fetchone()
    return str(row[0]) if row else None


def new_version(
    conn: psycopg.Connection,
    old: dict[str, Any],
    changes: dict[str, Any],
    *,
    by: str | None,
    seq: int,
    embedding: Any = None,
) -> dict[str, Any]:
    """Keep `old` (locked by the caller) in the history and write its next version."""
    conn.execute(
        "INSERT INTO memory_history (org_id, memory_id, version, text, kind, tier, status, key,"
        " polarity, confidence, expires_at, written_by, replaced_by)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
        (
            old["org_id"], old["id"], old["version"], old["text"], old["kind"], old["tier"],
            old["status"], old["key"], old["polarity"], old["confidence"], old["expires_at"],
            old["updated_by"] or old["created_by"], by,
        ),
    )  # fmt: skip
    sets = [f"{name} = %s" for name in changes]
    args = list(changes.values())
    if embedding is not None:
        sets.append("embedding = %s::vector")
        args.append(embedding)
    cur = conn.cursor(row_factory=dict_row).execute(
        f"UPDATE memories SET {', '.join([*sets, 'version = version + 1', 'seq = %s'])},"
        " updated_by = %s, updated_at = now() WHERE org_id = %s AND id = %s"
        f" RETURNING {COLUMNS}",
        [*args, seq, by, old["org_id"], old["id"]],
    )
    row = cur.fetchone()
    assert row is not None
    return row


def history(conn: psycopg.Connection, org_id: str, memory_id: str) -> list[dict[str, Any]]:
    """Earlier versions of a memory, newest first."""
    cur = conn.cursor(row_factory=dict_row).execute(
        "SELECT version, text, kind, tier, status, key, polarity, confidence, expires_at,"
        " written_by, replaced_by, replaced_at FROM memory_history"
        " WHERE org_id = %s AND memory_id = %s ORDER BY version DESC",
        (org_id, memory_id),
    )
    return [r for r in cur.fetchall()]


def delete(conn: psycopg.Connection, org_id: str, memory_id: str) -> None:
    conn.execute("DELETE FROM memories WHERE org_id = %s AND id = %s", (org_id, memory_id))


def set_seq(conn: psycopg.Connection, org_id: str, memory_id: str, seq: int) -> None:
    conn.execute(
        "UPDATE memories SET seq = %s WHERE org_id = %s AND id = %s", (seq, org_id, memory_id)
    )


def next_seq(conn: psycopg.Connection, org_id: str) -> int:
    """The org's next change number; its counter row stays locked until the transaction ends,
    so numbers commit in the order they were taken."""
    row = conn.execute(
        "INSERT INTO change_counters (org_id, seq) VALUES (%s, 1) ON CONFLICT (org_id)"
        " DO UPDATE SET seq = change_counters.seq + 1 RETURNING seq",
        (org_id,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def record_change(
    conn: psycopg.Connection, org_id: str, seq: int, memory_id: str, team_id: str | None, op: str
) -> None:
    conn.execute(
        "INSERT INTO changes (org_id, seq, memory_id, team_id, op) VALUES (%s, %s, %s, %s, %s)",
        (org_id, seq, memory_id, team_id, op),
    )


def last_seq(conn: psycopg.Connection, org_id: str) -> int:
    row = conn.execute("SELECT seq FROM change_counters WHERE org_id = %s", (org_id,)).fetchone()
    return int(row[0]) if row else 0


def mark_of(conn: psycopg.Connection, org_id: str, seq: int) -> str | None:
    """What identifies the org's change `seq` (None for 0 or a number the log does not hold):
    the same number in another history (a restored database written to since) differs."""
    if seq == 0:
        return None
    row = conn.execute(
        "SELECT md5(memory_id || ':' || op || ':' || extract(epoch FROM at)::text) FROM changes"
        " WHERE org_id = %s AND seq = %s",
        (org_id, seq),
    ).fetchone()
    return str(row[0]) if row else None


def changes_after(
    conn: psycopg.Connection, reach: Reach, after_seq: int, limit: int
) -> tuple[list[tuple[int, str, str, dict[str, Any] | None]], bool]:
    """(seq, op, memory_id, current row or None) of the reach's first `limit` changes after
    `after_seq`, in order, and whether more follow. A memory changed twice in the page appears
    once, at its last change, so the page's last change (the next cursor) is always in it; more
    is decided before that, or a page of repeats would look like the end of the log."""
    sql, args = where(reach, alias="c")
    cur = conn.execute(
        "SELECT c.seq, c.op, c.memory_id FROM changes c WHERE "
        + sql
        + " AND c.seq > %s ORDER BY c.seq LIMIT %s",
        [*args, after_seq, limit + 1],
    )
    rows = cur.fetchall()
    more = len(rows) > limit
    rows = rows[:limit]
    current = get_many(conn, reach, list({r[2] for r in rows if r[1] == "upsert"}))
    last = {r[2]: r[0] for r in rows}
    return [
        (int(s), str(op), str(mid), current.get(mid) if op == "upsert" else None)
        for s, op, mid in rows
        if last[mid] == s
    ], more


# list orders other than the newest change first, most first (a memory never used counts 0)
SORTS = {
    "created": "m.created_at, m.id",
    "newest": "m.created_at DESC, m.id DESC",
    "uses": "coalesce(x.use_count, 0) DESC, m.id",
    "opportunities": "coalesce(x.opportunities, 0) DESC, m.id",
    "regret_saved": "coalesce(x.estimated_regret_saved, 0) DESC, m.id",
}


def list_page(
    conn: psycopg.Connection,
    reach: Reach,
    filters: Filters,
    after: tuple[datetime, str] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Memories newest change first (updated_at, id), after the cursor."""
    sql, args = where(reach, filters)
    if after is not None:
        sql += " AND (updated_at, id) < (%s, %s)"
        args += list(after)
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {COLUMNS} FROM memories WHERE {sql} ORDER BY updated_at DESC, id DESC LIMIT %s",
        [*args, limit],
    )
    return [r for r in cur.fetchall()]


def list_sorted(
    conn: psycopg.Connection, reach: Reach, filters: Filters, sort: str, offset: int, limit: int
) -> list[dict[str, Any]]:
    """Memories in one of SORTS, from the `offset`-th."""
    sql, args = where(reach, filters, "m")
    cols = ", ".join(f"m.{c.strip()}" for c in COLUMNS.split(","))
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {cols} FROM memories m LEFT JOIN memory_metrics x"
        f" ON x.org_id = m.org_id AND x.memory_id = m.id WHERE {sql}"
        f" ORDER BY {SORTS[sort]} LIMIT %s OFFSET %s",
        [*args, limit, offset],
    )
    return [r for r in cur.fetchall()]


# -- metrics -----------------------------------------------------------------------------------

METRIC_COLUMNS = (
    "memory_id, use_count, opportunities, suspected_regret_hits, estimated_regret_saved,"
    " last_used_at, last_evaluated_at"
)


def metrics_of(
    conn: psycopg.Connection, org_id: str, ids: Sequence[str]
) -> dict[str, dict[str, Any]]:
    if not ids:
        return {}
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {METRIC_COLUMNS} FROM memory_metrics WHERE org_id = %s AND memory_id = ANY(%s)",
        (org_id, list(ids)),
    )
    return {r["memory_id"]: r for r in cur.fetchall()}


def count_given(
    conn: psycopg.Connection, org_id: str, eligible: Sequence[str], chosen: Sequence[str]
) -> None:
    """An opportunity for every eligible memory and a use for every chosen one, in one
    statement that locks the rows in id order (two contexts never wait on each other in a
    cycle)."""
    ids = sorted(set(eligible))
    if not ids:
        return
    given = set(chosen)
    conn.execute(
        "INSERT INTO memory_metrics AS m (org_id, memory_id, opportunities, use_count,"
        " last_used_at) SELECT %s, id, 1, used, CASE WHEN used = 1 THEN now() END"
        " FROM unnest(%s::text[], %s::int[]) AS u(id, used) ORDER BY id"
        " ON CONFLICT (org_id, memory_id) DO UPDATE SET"
        " opportunities = m.opportunities + 1, use_count = m.use_count + EXCLUDED.use_count,"
        " last_used_at = coalesce(EXCLUDED.last_used_at, m.last_used_at)",
        (org_id, ids, [int(i in given) for i in ids]),
    )


def note_reporter(
    conn: psycopg.Connection, org_id: str, key_id: str, memory_ids: Sequence[str]
) -> None:
    """Record that key `key_id` gave evidence of these memories' use (team CR-Memory counts the
    keys, `live_with_metrics` reporters)."""
    ids = sorted(set(memory_ids))
    if ids:
        conn.execute(
            "INSERT INTO usage_reporters (org_id, memory_id, key_id)"
            " SELECT %s, unnest(%s::text[]), %s ON CONFLICT DO NOTHING",
            (org_id, ids, key_id),
        )


def add_metrics(
    conn: psycopg.Connection,
    org_id: str,
    memory_id: str,
    *,
    opportunities: int = 0,
    uses: int = 0,
    regret_hits: int = 0,
    regret_saved: float = 0.0,
    last_used_at: datetime | None = None,
) -> None:
    """Add counts to a memory's metrics (its row is made on first use)."""
    conn.execute(
        "INSERT INTO memory_metrics (org_id, memory_id, opportunities, use_count,"
        " suspected_regret_hits, estimated_regret_saved, last_used_at)"
        " VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (org_id, memory_id) DO UPDATE SET"
        " opportunities = memory_metrics.opportunities + EXCLUDED.opportunities,"
        " use_count = memory_metrics.use_count + EXCLUDED.use_count,"
        " suspected_regret_hits = memory_metrics.suspected_regret_hits"
        " + EXCLUDED.suspected_regret_hits,"
        " estimated_regret_saved = memory_metrics.estimated_regret_saved"
        " + EXCLUDED.estimated_regret_saved,"
        " last_used_at = greatest(memory_metrics.last_used_at, EXCLUDED.last_used_at)",
        (org_id, memory_id, opportunities, uses, regret_hits, regret_saved, last_used_at),
    )


def claim_usage(
    conn: psycopg.Connection,
    org_id: str,
    key_id: str,
    memory_id: str,
    wanted: tuple[int, int, int],
    bound: int,
) -> tuple[int, int, int]:
    """Of the (opportunities, uses, regret hits) key `key_id` reports for a memory, what fits
    under today's `bound` for that key and memory (uses never above opportunities, hits never
    above uses, all the day's reports counted); recorded, and returned."""
    row = conn.execute(
        "SELECT opportunities, uses, regret_hits FROM usage_daily WHERE org_id = %s"
        " AND key_id = %s AND memory_id = %s AND day = current_date FOR UPDATE",
        (org_id, key_id, memory_id),
    ).fetchone()
    had = (int(row[0]), int(row[1]), int(row[2])) if row else (0, 0, 0)
    opp = max(0, min(wanted[0], bound - had[0]))
    uses = max(0, min(wanted[1], had[0] + opp - had[1], bound - had[1]))
    hits = max(0, min(wanted[2], had[1] + uses - had[2]))
    conn.execute(
        "INSERT INTO usage_daily (org_id, key_id, memory_id, day, opportunities, uses,"
        " regret_hits) VALUES (%s, %s, %s, current_date, %s, %s, %s)"
        " ON CONFLICT (org_id, key_id, memory_id, day) DO UPDATE SET"
        " opportunities = usage_daily.opportunities + EXCLUDED.opportunities,"
        " uses = usage_daily.uses + EXCLUDED.uses,"
        " regret_hits = usage_daily.regret_hits + EXCLUDED.regret_hits",
        (org_id, key_id, memory_id, opp, uses, hits),
    )
    return opp, uses, hits


def server_secret(conn: psycopg.Connection, name: str) -> str:
    """A secret the database keeps for the server (made at random by its migration)."""
    row = conn.execute("SELECT value FROM server_secrets WHERE name = %s", (name,)).fetchone()
    if row is None:
        raise RuntimeError(f"the team database holds no {name!r} secret: migrate it")
    return str(row[0])


def prune_usage_days(conn: psycopg.Connection, org_id: str) -> None:
    """Forget the org's daily usage records of days before yesterday."""
    conn.execute("DELETE FROM usage_daily WHERE org_id = %s AND day < current_date - 1", (org_id,))


# -- idempotency ------------------------------------------------------------------------------


def idempotent_reply(
    conn: psycopg.Connection, org_id: str, key_id: str, idem_key: str
) -> tuple[str, str, Any] | None:
    """(method, request hash, reply) stored for an idempotency key of API key `key_id`."""
    row = conn.execute(
        "SELECT method, request_hash, response FROM idempotency WHERE org_id = %s"
        " AND key_id = %s AND idem_key = %s",
        (org_id, key_id, idem_key),
    ).fetchone()
    return (str(row[0]), str(row[1]), row[2]) if row else None


def remember_reply(
    conn: psycopg.Connection,
    org_id: str,
    idem_key: str,
    key_id: str,
    method: str,
    request_hash: str,
    response: Any,
) -> None:
    conn.execute(
        "INSERT INTO idempotency (org_id, idem_key, key_id, method, request_hash, response)"
        " VALUES (%s, %s, %s, %s, %s, %s)",
        (org_id, idem_key, key_id, method, request_hash, Jsonb(response)),
    )


# -- retrieval -------------------------------------------------------------------------------


def reach_size(conn: psycopg.Connection, reach: Reach, filters: Filters, upto: int) -> int:
    """How many memories the filtered reach holds, counting no further than `upto`."""
    sql, args = where(reach, filters)
    row = conn.execute(
        f"SELECT count(*) FROM (SELECT 1 FROM memories WHERE {sql} LIMIT %s) t", [*args, upto]
    ).fetchone()
    assert row is not None
    return int(row[0])


def nearest(
    conn: psycopg.Connection, reach: Reach, filters: Filters, qvec: Any, k: int, *, exact: bool
) -> list[tuple[str, float]]:
    """(id, cosine) of the `k` memories nearest `qvec` among the filtered reach. `exact` reads
    the tenant's rows by their B-tree index and sorts them all (small reaches); otherwise HNSW
    with an iterative scan, which keeps reading the graph until `k` rows pass the filter (or
    MAX_SCAN_TUPLES were read), instead of filtering a fixed `ef_search` and losing rows."""
    sql, args = where(reach, filters)
    if exact:
        conn.execute("SET LOCAL enable_indexscan = off")  # no HNSW: an exact, filtered sort
    else:
        conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
        conn.execute(f"SET LOCAL hnsw.ef_search = {int(max(EF_SEARCH, k))}")
        conn.execute(f"SET LOCAL hnsw.max_scan_tuples = {int(MAX_SCAN_TUPLES)}")
    # relaxed_order may return rows slightly out of order: the outer sort puts them back
    rows = conn.execute(
        "SELECT id, d FROM (SELECT id, embedding <-> %s::vector AS d FROM memories WHERE "
        + sql
        + " AND embedding IS NOT NULL ORDER BY embedding <-> %s::vector LIMIT %s) t ORDER BY d, id",
        [qvec, *args, qvec, k],
    ).fetchall()
    if exact:
        conn.execute("SET LOCAL enable_indexscan = on")
    # normalized vectors: cos = 1 - d^2 / 2
    return [(str(i), 1.0 - float(d) ** 2 / 2.0) for i, d in rows]


def similarities(
    conn: psycopg.Connection, org_id: str, qvec: Any, ids: Sequence[str]
) -> dict[str, float]:
    if not ids:
        return {}
    rows = conn.execute(
        "SELECT id, embedding <-> %s::vector FROM memories WHERE org_id = %s AND id = ANY(%s)"
        " AND embedding IS NOT NULL",
        (qvec, org_id, list(ids)),
    ).fetchall()
    return {str(i): 1.0 - float(d) ** 2 / 2.0 for i, d in rows}


def tsquery_any(words: Sequence[str]) -> str:
    """A tsquery text matching any of `words` (each quoted: user text is never tsquery syntax)."""
    return " | ".join("'" + w.replace("'", "''").replace("\\", "") + "'" for w in words)


def keyword_hits(
    conn: psycopg.Connection,
    reach: Reach,
    filters: Filters,
    words: Sequence[str],
    k: int,
    *,
    scan: int,
    among: Sequence[str] = (),
) -> dict[str, float]:
    """id -> ts_rank_cd of the best `k` full-text matches of any of `words`, scored among at
    most `scan` of the matching rows and the matching ones of `among` (the request's other
    candidates, under the same filters). When the words' holders fit in `scan`, every one is
    scored. Through `memory_text_hits` (migration team/0004): under row-level security a
    full-text condition cannot use its index."""
    if not words:
        return {}
    if filters.key_prefix is not None or filters.text is not None or filters.tiers is not None:
        raise ValueError("full-text hits take no key prefix, text or tier filter")
    owner_team, org_owned = None, False
    if filters.owner is not None:
        owner_team = filters.owner[1] if filters.owner[0] == "team" else None
        org_owned = filters.owner[0] != "team"
    rows = conn.execute(
        "SELECT id, rank FROM memory_text_hits(to_tsquery('english', %s), %s, %s, %s, %s, %s,"
        " %s, %s, %s, %s, %s) ORDER BY rank DESC, id LIMIT %s",
        [
            tsquery_any(words),
            None if reach.team_ids is None else list(reach.team_ids),
            filters.project_id,
            filters.include_global,
            list(filters.statuses),
            None if filters.kinds is None else list(filters.kinds),
            filters.scope,
            owner_team,
            org_owned,
            scan,
            list(among),
            k,
        ],
    ).fetchall()
    return {str(i): float(r) for i, r in rows}


def document_frequencies(conn: psycopg.Connection, reach: Reach, words: Sequence[str]) -> list[int]:
    """How many live memories of the reach hold each word (its English stem), from the counts
    the `memories_words` trigger keeps."""
    if not words:
        return []
    teams = "" if reach.team_ids is None else " AND mw.team_key = ANY(%s)"
    args: list[Any] = [reach.org_id] + ([] if reach.team_ids is None else [["", *reach.team_ids]])
    rows = conn.execute(
        "SELECT q.i, (SELECT coalesce(sum(mw.n), 0) FROM memory_words mw WHERE mw.org_id = %s"
        + teams
        + " AND mw.word = ANY (tsvector_to_array(to_tsvector('english', q.w))))"
        " FROM unnest(%s::text[]) WITH ORDINALITY AS q(w, i)",
        [*args, list(words)],
    ).fetchall()
    counts = {int(i): int(n) for i, n in rows}
    return [counts[i + 1] for i in range(len(words))]


def words_held(
    conn: psycopg.Connection, org_id: str, words: Sequence[str], ids: Sequence[str]
) -> dict[str, list[str]]:
    """For each memory of `ids`, which of `words` it holds (by full text)."""
    out: dict[str, list[str]] = {}
    for w in words:
        rows = conn.execute(
            "SELECT id FROM memories WHERE org_id = %s AND id = ANY(%s)"
            " AND tsv @@ to_tsquery('english', %s)",
            (org_id, list(ids), tsquery_any([w])),
        ).fetchall()
        for (i,) in rows:
            out.setdefault(str(i), []).append(w)
    return out


def keyed_and_guards(
    conn: psycopg.Connection, reach: Reach, project_id: str
) -> tuple[set[str], set[str]]:
    """Live memories found by key (`project.*` keys of the project) and the live emergency
    guards (polarity -1) of the project and global ones."""
    sql, args = where(reach, Filters(project_id=project_id))
    keyed = conn.execute(
        f"SELECT id FROM memories WHERE {sql} AND project_id = %s AND key LIKE 'project.%%'",
        [*args, project_id],
    ).fetchall()
    guards = conn.execute(
        f"SELECT id FROM memories WHERE {sql} AND kind = 'guard' AND tier = 'emergency'"
        " AND polarity < 0",
        args,
    ).fetchall()
    return {str(r[0]) for r in keyed}, {str(r[0]) for r in guards}


def insert_context(conn: psycopg.Connection, row: dict[str, Any]) -> None:
    names = list(row)
    conn.execute(
        f"INSERT INTO context_requests ({', '.join(names)})"
        f" VALUES ({', '.join(['%s'] * len(names))})",
        [row[n] for n in names],
    )


def count_by(conn: psycopg.Connection, reach: Reach, column: str) -> dict[str, int]:
    """Memories of the reach counted by one of status, kind, tier."""
    assert column in ("status", "kind", "tier", "owner_type")
    sql, args = where(reach)
    rows = conn.execute(
        f"SELECT {column}, count(*) FROM memories WHERE {sql} GROUP BY {column}", args
    ).fetchall()
    return {str(k): int(n) for k, n in rows}


def episodes_by_outcome(conn: psycopg.Connection, reach: Reach) -> dict[str, int]:
    sql, args = where(reach)
    rows = conn.execute(
        f"SELECT outcome, count(*) FROM episodes WHERE {sql} GROUP BY outcome", args
    ).fetchall()
    return {str(k): int(n) for k, n in rows}


def given_in_session(
    conn: psycopg.Connection, org_id: str, key_id: str, session_id: str
) -> set[str]:
    """The memories already given to a session (of this key) by earlier contexts."""
    rows = conn.execute(
        "SELECT DISTINCT unnest(memory_ids) FROM context_requests WHERE org_id = %s"
        " AND key_id = %s AND session_id = %s",
        (org_id, key_id, session_id),
    ).fetchall()
    return {str(r[0]) for r in rows}


# -- feedback and CR-Memory -----------------------------------------------------------------


def context_for_feedback(
    conn: psycopg.Connection, reach: Reach, context_id: str
) -> dict[str, Any] | None:
    """A context the server gave, locked, if the reach holds it (a team key: its team's)."""
    sql = "org_id = %s"
    args: list[Any] = [reach.org_id]
    if reach.team_ids is not None:  # a team key judges its own team's contexts only
        sql, args = f"{sql} AND team_id = ANY(%s)", [*args, list(reach.team_ids)]
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT id, project_id, memory_ids, feedback FROM context_requests WHERE {sql}"
        " AND id = %s FOR UPDATE",
        [*args, context_id],
    )
    row = cur.fetchone()
    return row if row else None


def set_context_feedback(
    conn: psycopg.Connection, org_id: str, context_id: str, outcome: dict[str, Any]
) -> None:
    conn.execute(
        "UPDATE context_requests SET feedback = %s WHERE org_id = %s AND id = %s",
        (Jsonb(outcome), org_id, context_id),
    )


def baseline(conn: psycopg.Connection, org_id: str, project_id: str) -> tuple[int, float, float]:
    """(outcomes seen, average errors, average retries) of a project's tasks (locked)."""
    row = conn.execute(
        "SELECT outcomes, avg_errors, avg_retries FROM project_baselines"
        " WHERE org_id = %s AND project_id = %s FOR UPDATE",
        (org_id, project_id),
    ).fetchone()
    return (int(row[0]), float(row[1]), float(row[2])) if row else (0, 0.0, 0.0)


def add_outcome(
    conn: psycopg.Connection, org_id: str, project_id: str, errors: int, retries: int
) -> None:
    """Fold one task's outcome into the project's running averages."""
    conn.execute(
        "INSERT INTO project_baselines (org_id, project_id, outcomes, avg_errors, avg_retries)"
        " VALUES (%s, %s, 1, %s, %s) ON CONFLICT (org_id, project_id) DO UPDATE SET"
        " outcomes = project_baselines.outcomes + 1,"
        " avg_errors = project_baselines.avg_errors"
        " + (EXCLUDED.avg_errors - project_baselines.avg_errors) / (project_baselines.outcomes + 1),"
        " avg_retries = project_baselines.avg_retries"
        " + (EXCLUDED.avg_retries - project_baselines.avg_retries)"
        " / (project_baselines.outcomes + 1), updated_at = now()",
        (org_id, project_id, errors, retries),
    )


def live_with_metrics(
    conn: psycopg.Connection, reach: Reach, project_id: str | None
) -> list[dict[str, Any]]:
    """Every live memory of the reach (of one project, or all) with its metrics, as CR-Memory
    reads them."""
    live = Filters(project_id=project_id, include_global=project_id is None)
    sql, args = where(reach, live, alias="m")
    cur = conn.cursor(row_factory=dict_row).execute(
        "SELECT m.id, m.project_id, m.kind, m.tier, m.status, m.expires_at, m.created_at,"
        " coalesce(x.opportunities, 0) AS opportunities, coalesce(x.use_count, 0) AS use_count,"
        " coalesce(x.suspected_regret_hits, 0) AS hits,"
        " coalesce(x.estimated_regret_saved, 0) AS saved, x.last_used_at,"
        " (SELECT count(*) FROM usage_reporters r WHERE r.org_id = m.org_id"
        " AND r.memory_id = m.id) AS reporters"
        " FROM memories m LEFT JOIN memory_metrics x"
        " ON x.org_id = m.org_id AND x.memory_id = m.id WHERE " + sql + " ORDER BY m.id",
        args,
    )
    return [r for r in cur.fetchall()]


def mark_evaluated(conn: psycopg.Connection, org_id: str, ids: Sequence[str]) -> None:
    conn.execute(
        "INSERT INTO memory_metrics (org_id, memory_id, last_evaluated_at)"
        " SELECT %s, unnest(%s::text[]), now() ON CONFLICT (org_id, memory_id)"
        " DO UPDATE SET last_evaluated_at = now()",
        (org_id, list(ids)),
    )


def insert_episode(conn: psycopg.Connection, row: dict[str, Any]) -> None:
    """An episode a member sent, with the writer's ops and outcome (JSON columns as given)."""
    conn.execute(
        "INSERT INTO episodes (org_id, id, team_id, key_id, project_id, episode, outcome, reason,"
        " ops, processed_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, now())",
        (
            row["org_id"], row["id"], row["team_id"], row["key_id"], row["project_id"],
            Jsonb(row["episode"]), row["outcome"], row["reason"], Jsonb(row["ops"]),
        ),
    )  # fmt: skip


EPISODE_COLUMNS = (
    "id, team_id, project_id, episode - 'events' AS meta,"
    " jsonb_array_length(coalesce(episode->'events', '[]'::jsonb)) AS event_count, outcome,"
    " reason, created_at, processed_at"
)


def episodes_page(
    conn: psycopg.Connection,
    reach: Reach,
    *,
    project_id: str | None,
    session_id: str | None,
    outcome: str | None,
    before: tuple[datetime, str] | None,
    limit: int,
) -> list[dict[str, Any]]:
    """Episodes members sent (without their events), newest first, before the cursor."""
    sql, args = reach.sql()
    for cond, value in (
        ("project_id = %s", project_id),
        ("episode->>'session_id' = %s", session_id),
        ("outcome = %s", outcome),
    ):
        if value is not None:
            sql += f" AND {cond}"
            args.append(value)
    if before is not None:
        sql += " AND (created_at, id) < (%s, %s)"
        args += list(before)
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {EPISODE_COLUMNS} FROM episodes WHERE {sql}"
        " ORDER BY created_at DESC, id DESC LIMIT %s",
        [*args, limit],
    )
    return cur.fetchall()


def episode(conn: psycopg.Connection, reach: Reach, episode_id: str) -> dict[str, Any] | None:
    """One episode of the reach with its events and ops."""
    sql, args = reach.sql()
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT {EPISODE_COLUMNS}, episode->'events' AS events, ops FROM episodes"
        f" WHERE {sql} AND id = %s",
        [*args, episode_id],
    )
    return cur.fetchone()


def activity(
    conn: psycopg.Connection, reach: Reach, since: str, project_id: str | None
) -> dict[str, Any]:
    """What squirrel/activity counts, per UTC day from `since`, for the reach (and project):
    memories created by kind, contexts given and memories in them, episodes sent to the writer
    (the offline writer: no tokens), and the live memories by kind."""
    day = "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')"
    sql, args = reach.sql()
    if project_id is not None:
        sql += " AND project_id = %s"
        args.append(project_id)
    since_sql, since_args = f"{sql} AND created_at >= %s::date", [*args, since]
    mems = conn.execute(
        f"SELECT {day}, kind, count(*) FROM memories WHERE {since_sql} GROUP BY 1, 2",
        since_args,
    ).fetchall()
    ctxs = conn.execute(
        f"SELECT {day}, count(*), coalesce(sum(cardinality(memory_ids)), 0)"
        f" FROM context_requests WHERE {since_sql} GROUP BY 1",
        since_args,
    ).fetchall()
    calls = conn.execute(
        f"SELECT {day}, count(*) FROM episodes WHERE {since_sql}"
        " AND coalesce((episode->'prefilter'->>'call_writer')::boolean, false) GROUP BY 1",
        since_args,
    ).fetchall()
    live = conn.execute(
        f"SELECT kind, count(*) FROM memories WHERE {sql} AND status <> 'deprecated' GROUP BY 1",
        args,
    ).fetchall()
    return {
        "memories": [(r[0], r[1], int(r[2])) for r in mems],
        "contexts": {r[0]: (int(r[1]), int(r[2])) for r in ctxs},
        "calls": {r[0]: (int(r[1]), 0, 0) for r in calls},
        "live": {r[0]: int(r[1]) for r in live},
    }


def episodes_of(
    conn: psycopg.Connection, reach: Reach, memory_id: str, limit: int = 10
) -> list[dict[str, Any]]:
    """The episodes of the reach whose writer ops name the memory, newest first."""
    sql, args = reach.sql()
    cur = conn.cursor(row_factory=dict_row).execute(
        f"SELECT id, created_at, project_id, outcome FROM episodes WHERE {sql}"
        " AND ops @> %s ORDER BY created_at DESC, id DESC LIMIT %s",
        [*args, Jsonb([{"memory_id": memory_id}]), limit],
    )
    return cur.fetchall()


def contexts_of(
    conn: psycopg.Connection, reach: Reach, memory_id: str, limit: int = 50
) -> list[dict[str, Any]]:
    """The contexts of the reach the memory was given in, newest first (another team's
    contexts stay out even for an org memory)."""
    sql, args = reach.sql()
    cur = conn.cursor(row_factory=dict_row).execute(
        "SELECT id, created_at, session_id, task, array_position(memory_ids, %s) AS rank,"
        f" feedback FROM context_requests WHERE {sql} AND memory_ids @> ARRAY[%s]"
        " ORDER BY created_at DESC, id DESC LIMIT %s",
        [memory_id, *args, memory_id, limit],
    )
    return cur.fetchall()


def live_total(conn: psycopg.Connection, reach: Reach) -> int:
    """How many live memories the reach holds."""
    sql, args = where(reach, Filters())
    row = conn.execute(f"SELECT count(*) FROM memories WHERE {sql}", args).fetchone()
    return int(row[0]) if row else 0
