"""SQL for the `blocks` table."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec

from reos_memory.models import Block, RichTextSpan, content_hash

_COLS = (
    "id, type, act_id, parent_id, page_id, position, content, rich_text, properties,"
    " version, created_at, updated_at, content_hash"
)
_spans_decoder = msgspec.json.Decoder(list[RichTextSpan])
_props_decoder = msgspec.json.Decoder(dict[str, Any])
_encoder = msgspec.json.Encoder()


def _row_to_block(row: Sequence[Any]) -> Block:
    return Block(
        id=row[0],
        type=row[1],
        act_id=row[2],
        parent_id=row[3],
        page_id=row[4],
        position=row[5],
        content=row[6],
        rich_text=_spans_decoder.decode(row[7]),
        properties=_props_decoder.decode(row[8]),
        version=row[9],
        created_at=row[10],
        updated_at=row[11],
    )


def insert_block(conn: apsw.Connection, block: Block) -> None:
    """Insert a new block row."""
    conn.execute(
        f"INSERT INTO blocks ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
        (
            block.id,
            block.type,
            block.act_id,
            block.parent_id,
            block.page_id,
            block.position,
            block.content,
            _encoder.encode(block.rich_text).decode(),
            _encoder.encode(block.properties).decode(),
            block.version,
            block.created_at,
            block.updated_at,
            content_hash(block.content),
        ),
    )


def replace_block(conn: apsw.Connection, block: Block) -> None:
    """Write every mutable column of an existing block."""
    conn.execute(
        "UPDATE blocks SET type=?, parent_id=?, page_id=?, position=?, content=?, rich_text=?,"
        " properties=?, version=?, updated_at=?, content_hash=? WHERE id=?",
        (
            block.type,
            block.parent_id,
            block.page_id,
            block.position,
            block.content,
            _encoder.encode(block.rich_text).decode(),
            _encoder.encode(block.properties).decode(),
            block.version,
            block.updated_at,
            content_hash(block.content),
            block.id,
        ),
    )


def get_block(conn: apsw.Connection, block_id: str) -> Block | None:
    """The block with this id, or None."""
    for row in conn.execute(f"SELECT {_COLS} FROM blocks WHERE id = ?", (block_id,)):
        return _row_to_block(row)
    return None


def block_exists(conn: apsw.Connection, block_id: str) -> bool:
    return bool(conn.execute("SELECT 1 FROM blocks WHERE id = ?", (block_id,)).fetchall())


def missing_blocks(conn: apsw.Connection, block_ids: Sequence[str]) -> list[str]:
    """Those of `block_ids` that do not exist, in the given order."""
    if not block_ids:
        return []
    found = {
        r[0]
        for r in conn.execute(
            "SELECT id FROM blocks WHERE id IN (SELECT value FROM json_each(?))",
            (_encoder.encode(list(block_ids)).decode(),),
        )
    }
    return [b for b in block_ids if b not in found]


def block_summaries(
    conn: apsw.Connection, block_ids: Sequence[str]
) -> dict[str, tuple[str, str, str, str]]:
    """block_id -> (type, updated_at, act_id, created_at) for those that exist, in one query."""
    rows = conn.execute(
        "SELECT id, type, updated_at, act_id, created_at FROM blocks"
        " WHERE id IN (SELECT value FROM json_each(?))",
        (_encoder.encode(list(block_ids)).decode(),),
    )
    return {r[0]: (r[1], r[2], r[3], r[4]) for r in rows}


def max_rowid(conn: apsw.Connection) -> int:
    """The largest block rowid: about the number of blocks, read in O(log n)."""
    for (r,) in conn.execute("SELECT max(rowid) FROM blocks"):
        return int(r or 0)
    return 0


def get_blocks(conn: apsw.Connection, block_ids: Sequence[str]) -> dict[str, Block]:
    """The existing blocks among `block_ids`, by id, in one query."""
    rows = conn.execute(
        f"SELECT {_COLS} FROM blocks WHERE id IN (SELECT value FROM json_each(?))",
        (_encoder.encode(list(block_ids)).decode(),),
    )
    return {r[0]: _row_to_block(r) for r in rows}


def children_of(conn: apsw.Connection, block_id: str) -> list[Block]:
    """Direct children ordered by position."""
    return [
        _row_to_block(r)
        for r in conn.execute(
            f"SELECT {_COLS} FROM blocks WHERE parent_id = ? ORDER BY position, created_at, id",
            (block_id,),
        )
    ]


def descendant_ids(conn: apsw.Connection, block_id: str) -> list[str]:
    """Every block below this one in the parent tree (not including it)."""
    rows = conn.execute(
        "WITH RECURSIVE d(id) AS (SELECT id FROM blocks WHERE parent_id = ?"
        " UNION SELECT b.id FROM blocks b JOIN d ON b.parent_id = d.id) SELECT id FROM d",
        (block_id,),
    )
    return [r[0] for r in rows]


def ancestor_ids(conn: apsw.Connection, block_id: str) -> list[str]:
    """The parent chain of a block, nearest first."""
    rows = conn.execute(
        "WITH RECURSIVE a(id, parent, n) AS ("
        " SELECT id, parent_id, 0 FROM blocks WHERE id = ?"
        " UNION ALL SELECT b.id, b.parent_id, a.n + 1 FROM blocks b JOIN a ON b.id = a.parent"
        " WHERE a.n < 10000) SELECT id FROM a WHERE n > 0 ORDER BY n",
        (block_id,),
    )
    return [r[0] for r in rows]


def list_blocks(
    conn: apsw.Connection,
    *,
    act_id: str | None,
    type: str | None,
    parent_id: str | None,
    roots_only: bool,
    page_id: str | None,
    after: int | None,
    limit: int,
) -> list[tuple[int, Block]]:
    """(rowid, block) of blocks matching every filter, in insertion order, after rowid `after`."""
    where: list[str] = []
    args: list[Any] = []
    for col, val in (
        ("act_id", act_id),
        ("type", type),
        ("parent_id", parent_id),
        ("page_id", page_id),
    ):
        if val is not None:
            where.append(f"{col} = ?")
            args.append(val)
    if roots_only:
        where.append("parent_id IS NULL")
    if after is not None:
        where.append("rowid > ?")
        args.append(after)
    sql = f"SELECT {_COLS}, rowid FROM blocks"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY rowid LIMIT ?"
    args.append(limit)
    return [(r[-1], _row_to_block(r)) for r in conn.execute(sql, args)]


def max_position(conn: apsw.Connection, *, parent_id: str | None, page_id: str | None) -> Any:
    """The highest position among a parent's children, or, without a parent, among a page's
    top-level blocks; None when there is none."""
    if parent_id is not None:
        rows = conn.execute(
            "SELECT max(position) FROM blocks WHERE parent_id = ?", (parent_id,)
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT max(position) FROM blocks WHERE page_id = ? AND parent_id IS NULL",
            (page_id,),
        ).fetchall()
    return rows[0][0]


def first_block_ids(conn: apsw.Connection, act_id: str | None, limit: int) -> list[str]:
    """The ids of the first `limit` blocks (of one act, if given) in insertion order."""
    where, args = ("WHERE act_id = ?", (act_id, limit)) if act_id else ("", (limit,))
    return [
        r[0] for r in conn.execute(f"SELECT id FROM blocks {where} ORDER BY rowid LIMIT ?", args)
    ]


def delete_blocks(conn: apsw.Connection, block_ids: Sequence[str]) -> int:
    """Delete these blocks (children before parents); edges and embeddings cascade."""
    n = 0
    for bid in block_ids:
        conn.execute("DELETE FROM blocks WHERE id = ?", (bid,))
        n += conn.changes()
    return n


def count_blocks(conn: apsw.Connection, act_id: str | None) -> dict[str, int]:
    """Number of blocks per type (optionally within one act)."""
    if act_id is None:
        rows = conn.execute("SELECT type, count(*) FROM blocks GROUP BY type")
    else:
        rows = conn.execute(
            "SELECT type, count(*) FROM blocks WHERE act_id = ? GROUP BY type", (act_id,)
        )
    return {r[0]: r[1] for r in rows}
