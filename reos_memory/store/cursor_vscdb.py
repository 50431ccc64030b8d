"""Queries on Cursor's own `state.vscdb` databases (read by the `cursor` ingest adapter; never
ours, never written): the tables `ItemTable` and `cursorDiskKV`, both
`(key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)`, so a value written again is a new row with a
higher rowid.

Opened read-only through the standard library: a WAL database without its `-wal` file (nobody
has it open) as immutable, so that reading it leaves no `-wal`/`-shm` file behind.
"""

from __future__ import annotations

import os
import sqlite3
from urllib.parse import quote

Conn = sqlite3.Connection
Error = sqlite3.Error


def connect(path: str) -> Conn:
    """A read-only connection that writes nothing beside the database (raises OSError or
    `Error`)."""
    with open(path, "rb") as f:
        header = f.read(20)
    wal = len(header) == 20 and header[18] == 2
    flags = "mode=ro"
    if wal and not os.path.exists(path + "-wal"):
        flags += "&immutable=1"
    conn = sqlite3.connect(f"file:{quote(path)}?{flags}", uri=True, timeout=0.5)
    conn.text_factory = bytes
    return conn


def _text(v: bytes | str) -> str:
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def has_table(conn: Conn, name: str) -> bool:
    row = conn.execute("SELECT 1 FROM sqlite_master WHERE type='table' AND name=?", (name,))
    return row.fetchone() is not None


def has_composers(conn: Conn) -> bool:
    """Whether `cursorDiskKV` holds composers (the 2025+ global database)."""
    if not has_table(conn, "cursorDiskKV"):
        return False
    row = conn.execute(
        "SELECT 1 FROM cursorDiskKV WHERE key >= 'composerData:' AND key < 'composerData;' LIMIT 1"
    ).fetchone()
    return row is not None


def has_item_keys(conn: Conn, keys: tuple[str, ...]) -> bool:
    """Whether `ItemTable` holds any of `keys`."""
    marks = ",".join("?" * len(keys))
    row = conn.execute(f"SELECT 1 FROM ItemTable WHERE key IN ({marks}) LIMIT 1", keys)
    return row.fetchone() is not None


def item_top(conn: Conn) -> int:
    return int(conn.execute("SELECT max(rowid) FROM ItemTable").fetchone()[0] or 0)


def item_rows(
    conn: Conn, after: int, upto: int, keys: tuple[str, ...]
) -> list[tuple[int, str, bytes]]:
    """The rows of `keys` written after rowid `after` (up to `upto`), oldest first."""
    marks = ", ".join("?" * len(keys))
    rows = conn.execute(
        f"SELECT rowid, key, value FROM ItemTable WHERE rowid > ? AND rowid <= ?"
        f" AND key IN ({marks}) ORDER BY rowid",
        (after, upto, *keys),
    ).fetchall()
    return [(r, _text(k), v) for r, k, v in rows]


def item_value(conn: Conn, key: str) -> bytes | None:
    row = conn.execute("SELECT value FROM ItemTable WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def kv_top(conn: Conn) -> int:
    return int(conn.execute("SELECT max(rowid) FROM cursorDiskKV").fetchone()[0] or 0)


def kv_touched_composers(conn: Conn, after: int, upto: int) -> list[tuple[str, int]]:
    """The composers whose data or bubbles were written after rowid `after` (up to `upto`),
    each with the rowid of its first such row, in that order."""
    seen: dict[str, int] = {}
    for rowid, key in conn.execute(
        "SELECT rowid, key FROM cursorDiskKV WHERE rowid > ? AND rowid <= ?"
        " AND (key GLOB 'composerData:*' OR key GLOB 'bubbleId:*') ORDER BY rowid",
        (after, upto),
    ):
        parts = _text(key).split(":")
        if len(parts) >= 2 and parts[1]:
            seen.setdefault(parts[1], int(rowid))
    return list(seen.items())


def key_at(conn: Conn, table: str, rowid: int) -> str | None:
    """The key of the row `rowid` of `table` (ItemTable or cursorDiskKV); None when there is
    none."""
    assert table in ("ItemTable", "cursorDiskKV")
    row = conn.execute(f"SELECT key FROM {table} WHERE rowid = ?", (rowid,)).fetchone()
    return _text(row[0]) if row else None


def kv_value(conn: Conn, key: str) -> bytes | None:
    row = conn.execute("SELECT value FROM cursorDiskKV WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def kv_bubble_rows(conn: Conn, composer: str) -> list[tuple[int, str]]:
    """(rowid, bubble id) of a composer's bubbles."""
    rows = conn.execute(
        "SELECT rowid, key FROM cursorDiskKV WHERE key > ? AND key < ?",
        (f"bubbleId:{composer}:", f"bubbleId:{composer};"),
    ).fetchall()
    return [(r, _text(k).split(":", 2)[2]) for r, k in rows]


def kv_value_at(conn: Conn, rowid: int) -> bytes | None:
    row = conn.execute("SELECT value FROM cursorDiskKV WHERE rowid = ?", (rowid,)).fetchone()
    return row[0] if row else None
