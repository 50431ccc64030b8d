"""SQL for embeddings: block_embeddings rows, the sqlite-vec vec0 index, model identity, BM25."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol

import apsw
import msgspec

from reos_memory.store.connection import fetch, scalar

VEC_TABLE = "block_vectors"  # BLOCKS.vec_table
_encoder = msgspec.json.Encoder()

# -- model identity ---------------------------------------------------------------------------


def get_meta(conn: apsw.Connection) -> dict[str, str]:
    return {k: v for k, v in fetch(conn, "SELECT key, value FROM embedding_meta")}


def set_meta(conn: apsw.Connection, **values: Any) -> None:
    for key, value in values.items():
        conn.execute(
            "INSERT INTO embedding_meta(key, value) VALUES (?, ?)"
            " ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            (key, str(value)),
        )


def recorded_model(conn: apsw.Connection) -> str | None:
    return scalar(conn, "SELECT value FROM embedding_meta WHERE key = 'model_id'")


# -- vector spaces ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Space:
    """One kind of vector (block or memory): where the rows live and how indexes follow them.

    Both kinds share the machinery: a change log written by triggers (so every process's memory
    index stays coherent), a vec0 table kept in step by triggers, and the numpy index.
    `rows` selects (id, part, embedding) of the live vectors; `part` is what searches filter on
    (a block's act, a memory's project, '' for global memories).
    """

    name: str
    vec_table: str
    id_col: str
    part_col: str
    changes_table: str
    changes_id: str
    rows: str  # with a {filter} placeholder for "AND <id> IN (...)"
    id_expr: str
    dims_meta: str
    triggers: tuple[str, ...]  # {vec} and {dims} placeholders


BLOCKS = Space(
    name="block",
    vec_table="block_vectors",
    id_col="block_id",
    part_col="act_id",
    changes_table="embedding_changes",
    changes_id="block_id",
    rows="SELECT e.block_id AS id, b.act_id AS part, e.embedding AS embedding"
    " FROM block_embeddings e JOIN blocks b ON b.id = e.block_id WHERE 1 {filter}",
    id_expr="e.block_id",
    dims_meta="vector_table_dimensions",
    triggers=(
        "CREATE TRIGGER block_vectors_insert AFTER INSERT ON block_embeddings BEGIN"
        " INSERT INTO {vec}(block_id, act_id, embedding) VALUES"
        " (new.block_id, (SELECT act_id FROM blocks WHERE id = new.block_id), new.embedding); END",
        "CREATE TRIGGER block_vectors_update AFTER UPDATE OF embedding ON block_embeddings BEGIN"
        " DELETE FROM {vec} WHERE block_id = old.block_id;"
        " INSERT INTO {vec}(block_id, act_id, embedding) VALUES"
        " (new.block_id, (SELECT act_id FROM blocks WHERE id = new.block_id), new.embedding); END",
        "CREATE TRIGGER block_vectors_delete AFTER DELETE ON block_embeddings BEGIN"
        " DELETE FROM {vec} WHERE block_id = old.block_id; END",
    ),
)

_LIVE_MEMORY = "embedding IS NOT NULL AND status != 'deprecated'"
MEMORIES = Space(
    name="memory",
    vec_table="memory_vectors",
    id_col="memory_id",
    part_col="project_id",
    changes_table="memory_embedding_changes",
    changes_id="memory_id",
    rows="SELECT id AS id, coalesce(project_id, '') AS part, embedding AS embedding"
    f" FROM memories WHERE {_LIVE_MEMORY} {{filter}}",
    id_expr="id",
    dims_meta="memory_vector_table_dimensions",
    triggers=(
        "CREATE TRIGGER memory_vectors_insert AFTER INSERT ON memories"
        " WHEN new.embedding IS NOT NULL AND new.status != 'deprecated'"
        " AND length(new.embedding) = 4 * {dims} BEGIN"
        " INSERT INTO {vec}(memory_id, project_id, embedding)"
        " VALUES (new.id, coalesce(new.project_id, ''), new.embedding); END",
        "CREATE TRIGGER memory_vectors_update AFTER UPDATE OF embedding, status, project_id"
        " ON memories BEGIN DELETE FROM {vec} WHERE memory_id = old.id;"
        " INSERT INTO {vec}(memory_id, project_id, embedding)"
        " SELECT new.id, coalesce(new.project_id, ''), new.embedding"
        " WHERE new.embedding IS NOT NULL AND new.status != 'deprecated'"
        " AND length(new.embedding) = 4 * {dims}; END",
        "CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN"
        " DELETE FROM {vec} WHERE memory_id = old.id; END",
    ),
)
SPACES = (BLOCKS, MEMORIES)

# -- the vec0 tables --------------------------------------------------------------------------


def ensure_vector_table(conn: apsw.Connection, dims: int, space: Space = BLOCKS) -> bool:
    """Create (or re-create for new dimensions) a space's vec0 index and its sync triggers.

    Returns True when the table was (re)built. Call inside a write transaction.
    """
    have = scalar(conn, "SELECT value FROM embedding_meta WHERE key = ?", (space.dims_meta,))
    exists = scalar(conn, "SELECT 1 FROM sqlite_master WHERE name = ?", (space.vec_table,))
    if exists and have == str(dims):
        return False
    for trig in space.triggers:
        conn.execute(f"DROP TRIGGER IF EXISTS {trig.split()[2]}")
    conn.execute(f"DROP TABLE IF EXISTS {space.vec_table}")
    conn.execute(
        f"CREATE VIRTUAL TABLE {space.vec_table} USING vec0("
        f"{space.id_col} TEXT PRIMARY KEY, {space.part_col} TEXT, embedding float[{int(dims)}])"
    )
    for trig in space.triggers:
        conn.execute(trig.format(vec=space.vec_table, dims=int(dims)))
    conn.execute(
        f"INSERT INTO {space.vec_table}({space.id_col}, {space.part_col}, embedding)"
        f" SELECT id, part, embedding FROM ({space.rows.format(filter='')})"
        f" WHERE length(embedding) = {4 * int(dims)}"
    )
    set_meta(conn, **{space.dims_meta: dims})
    return True


def knn_sqlite(
    conn: apsw.Connection,
    query_blob: bytes,
    k: int,
    part: str | None,
    space: Space = BLOCKS,
) -> list[tuple[str, float]]:
    """Top-k (id, L2 distance) from a space's vec0 index (brute force inside SQLite)."""
    sql = (
        f"SELECT {space.id_col}, distance FROM {space.vec_table} WHERE embedding MATCH ? AND k = ?"
    )
    if part is None:
        rows = fetch(conn, sql, (query_blob, k))
    else:
        rows = fetch(conn, sql + f" AND {space.part_col} = ?", (query_blob, k, part))
    return [(r[0], float(r[1])) for r in rows]


# -- block_embeddings -------------------------------------------------------------------------


def upsert_embedding(
    conn: apsw.Connection, block_id: str, blob: bytes, model_id: str, content_hash: str, now: str
) -> None:
    conn.execute(
        "INSERT INTO block_embeddings(block_id, embedding, embedding_model, content_hash, created_at)"
        " VALUES (?, ?, ?, ?, ?) ON CONFLICT(block_id) DO UPDATE SET embedding = excluded.embedding,"
        " embedding_model = excluded.embedding_model, content_hash = excluded.content_hash,"
        " created_at = excluded.created_at",
        (block_id, blob, model_id, content_hash, now),
    )


def store_if_model(
    conn: apsw.Connection, block_id: str, blob: bytes, model_id: str, content_hash: str, now: str
) -> bool:
    """Store a vector only if the database records its model: two models are never mixed."""
    if recorded_model(conn) != model_id:
        return False
    upsert_embedding(conn, block_id, blob, model_id, content_hash, now)
    return True


def delete_embedding(conn: apsw.Connection, block_id: str) -> bool:
    conn.execute("DELETE FROM block_embeddings WHERE block_id = ?", (block_id,))
    return conn.changes() > 0


def delete_all_embeddings(conn: apsw.Connection) -> int:
    conn.execute("DELETE FROM block_embeddings")
    return conn.changes()


def count_embeddings(conn: apsw.Connection, act_id: str | None = None) -> int:
    """Block vectors stored (of the blocks of one act, if given), stale ones included."""
    act_filter = "" if act_id is None else " WHERE b.act_id = ?"
    args = () if act_id is None else (act_id,)
    return fetch(
        conn,
        "SELECT count(*) FROM block_embeddings e JOIN blocks b ON b.id = e.block_id" + act_filter,
        args,
    )[0][0]


def count_embeddings_of(conn: apsw.Connection, block_ids: Sequence[str]) -> int:
    """How many of these blocks have a vector."""
    return fetch(
        conn,
        "SELECT count(*) FROM block_embeddings WHERE block_id IN (SELECT value FROM json_each(?))",
        (_encoder.encode(list(block_ids)).decode(),),
    )[0][0]


# The one rule of which blocks get a vector: those whose text is more than blanks. The same
# characters in SQL and in Python.
BLANKS = " \t\n\r"
_HAS_TEXT = "trim(b.content, ' ' || char(9, 10, 13)) != ''"
_NEEDS_VECTOR = f"{_HAS_TEXT} AND (e.block_id IS NULL OR e.content_hash != b.content_hash)"
_BLOCKS_AND_VECTORS = "FROM blocks b LEFT JOIN block_embeddings e ON e.block_id = b.id"


def has_text(text: str) -> bool:
    """Whether a block with this text gets a vector."""
    return bool(text.strip(BLANKS))


def count_needing_index(conn: apsw.Connection, act_id: str | None = None) -> tuple[int, int]:
    """(blocks with text and no vector, blocks with text and a stale vector)."""
    sql = (
        "SELECT coalesce(sum(e.block_id IS NULL), 0),"
        f" coalesce(sum(e.block_id IS NOT NULL), 0) {_BLOCKS_AND_VECTORS} WHERE {_NEEDS_VECTOR}"
    )
    rows = fetch(conn, sql + " AND b.act_id = ?", (act_id,)) if act_id else fetch(conn, sql)
    return int(rows[0][0]), int(rows[0][1])


def blocks_needing_index(
    conn: apsw.Connection, act_id: str | None, limit: int, after_rowid: int = 0
) -> list[tuple[int, str]]:
    """(rowid, id) of blocks with text and no vector or a stale one, in rowid order."""
    sql = f"SELECT b.rowid, b.id {_BLOCKS_AND_VECTORS} WHERE b.rowid > ? AND {_NEEDS_VECTOR}"
    args: list[Any] = [after_rowid]
    if act_id is not None:
        sql += " AND b.act_id = ?"
        args.append(act_id)
    sql += " ORDER BY b.rowid LIMIT ?"
    args.append(limit)
    return [(r[0], r[1]) for r in fetch(conn, sql, args)]


def texts_for(conn: apsw.Connection, block_ids: Sequence[str]) -> dict[str, tuple[str, str]]:
    """block_id -> (content, content_hash) for those that exist."""
    rows = fetch(
        conn,
        "SELECT id, content, content_hash FROM blocks WHERE id IN (SELECT value FROM json_each(?))",
        (_encoder.encode(list(block_ids)).decode(),),
    )
    return {r[0]: (r[1], r[2]) for r in rows}


def embedding_rows(
    conn: apsw.Connection, ids: Iterable[str] | None = None, space: Space = BLOCKS
) -> list[tuple[str, str, bytes]]:
    """(id, part, embedding blob) of a space's live vectors: the given ids, or all."""
    if ids is None:
        return fetch(conn, space.rows.format(filter=""))
    return fetch(
        conn,
        space.rows.format(filter=f"AND {space.id_expr} IN (SELECT value FROM json_each(?))"),
        (_encoder.encode(list(ids)).decode(),),
    )


def embedding_chunks(
    conn: apsw.Connection, space: Space = BLOCKS, size: int = 10_000
) -> Iterator[list[tuple[str, str, bytes]]]:
    """Every live vector of a space as (id, part, blob), `size` rows at a time (no full list)."""
    cursor = conn.execute(space.rows.format(filter=""))
    while chunk := list(islice(cursor, size)):
        yield chunk


def count_vectors(conn: apsw.Connection, space: Space = BLOCKS) -> int:
    return int(scalar(conn, f"SELECT count(*) FROM ({space.rows.format(filter='')})") or 0)


class ChangeLog(Protocol):
    """A change log written by triggers: a vector space's, or the block text's (keyword_index)."""

    @property
    def changes_table(self) -> str: ...

    @property
    def changes_id(self) -> str: ...


def change_seq(conn: apsw.Connection, space: ChangeLog = BLOCKS) -> int:
    """The newest change number of a change log (0 when none was ever made)."""
    return int(
        scalar(conn, "SELECT seq FROM sqlite_sequence WHERE name = ?", (space.changes_table,)) or 0
    )


def changes_since(
    conn: apsw.Connection, seq: int, space: ChangeLog = BLOCKS
) -> tuple[int | None, list[Any]]:
    """(oldest seq still logged, distinct ids changed after `seq`)."""
    t, c = space.changes_table, space.changes_id
    oldest = scalar(conn, f"SELECT min(seq) FROM {t}")
    ids = [r[0] for r in fetch(conn, f"SELECT DISTINCT {c} FROM {t} WHERE seq > ?", (seq,))]
    return (int(oldest) if oldest is not None else None), ids


def change_at(conn: apsw.Connection, seq: int, space: Space = BLOCKS) -> str | None:
    """The id the change numbered `seq` was about (None once pruned, or never made)."""
    t, c = space.changes_table, space.changes_id
    found = scalar(conn, f"SELECT {c} FROM {t} WHERE seq = ?", (seq,))
    return None if found is None else str(found)


def prune_changes(conn: apsw.Connection, keep: int = 100_000, space: Space = BLOCKS) -> None:
    """Forget all but the newest `keep` changes (a reader that far behind reloads fully)."""
    t = space.changes_table
    conn.execute(f"DELETE FROM {t} WHERE seq <= (SELECT max(seq) FROM {t}) - ?", (keep,))
