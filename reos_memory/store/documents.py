"""SQL for the `documents` table and the document_chunk blocks that belong to a document."""

from __future__ import annotations

from typing import Any

import apsw

from reos_memory.store.connection import fetch, scalar

_COLS = (
    "id, act_id, filename, format, size_bytes, sha256, pages, chunk_count, source_path,"
    " created_at, updated_at"
)
_KEYS = [c.strip() for c in _COLS.split(",")]


def _document(conn: apsw.Connection, where: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
    rows = fetch(conn, f"SELECT {_COLS} FROM documents WHERE {where}", args)
    return dict(zip(_KEYS, rows[0], strict=True)) if rows else None


def get_document(conn: apsw.Connection, document_id: str) -> dict[str, Any] | None:
    """The document with this id as a column -> value dict, or None."""
    return _document(conn, "id = ?", (document_id,))


def document_named(conn: apsw.Connection, act_id: str, filename: str) -> dict[str, Any] | None:
    """The document of an act with this filename, or None."""
    return _document(conn, "act_id = ? AND filename = ?", (act_id, filename))


def document_exists(conn: apsw.Connection, document_id: str) -> bool:
    return bool(scalar(conn, "SELECT 1 FROM documents WHERE id = ?", (document_id,)))


def list_documents(conn: apsw.Connection, act_id: str | None) -> list[dict[str, Any]]:
    """Every document (of one act, if given), newest first."""
    where, args = ("act_id = ?", (act_id,)) if act_id else ("1", ())
    return [
        dict(zip(_KEYS, r, strict=True))
        for r in fetch(
            conn,
            f"SELECT {_COLS} FROM documents WHERE {where} ORDER BY updated_at DESC, id",
            args,
        )
    ]


def put_document(
    conn: apsw.Connection,
    *,
    id: str,
    act_id: str,
    filename: str,
    format: str,
    size_bytes: int,
    sha256: str,
    pages: int | None,
    chunk_count: int,
    source_path: str | None,
    created_at: str,
    updated_at: str,
) -> None:
    """Insert a document row, or update the one with this id (its act, name and creation stay)."""
    conn.execute(
        f"INSERT INTO documents ({_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT(id) DO UPDATE SET format = excluded.format, size_bytes = excluded.size_bytes,"
        " sha256 = excluded.sha256, pages = excluded.pages, chunk_count = excluded.chunk_count,"
        " source_path = excluded.source_path, updated_at = excluded.updated_at",
        (
            id,
            act_id,
            filename,
            format,
            size_bytes,
            sha256,
            pages,
            chunk_count,
            source_path,
            created_at,
            updated_at,
        ),
    )


def delete_document(conn: apsw.Connection, document_id: str) -> None:
    """Delete the document row (its chunk blocks are deleted separately)."""
    conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))


def chunk_ids(conn: apsw.Connection, document_id: str) -> list[str]:
    """The ids of a document's document_chunk blocks."""
    return [
        r[0]
        for r in fetch(
            conn,
            "SELECT id FROM blocks WHERE type = 'document_chunk'"
            " AND json_extract(properties, '$.source_document_id') = ?",
            (document_id,),
        )
    ]


def chunking_of(conn: apsw.Connection, document_id: str) -> tuple[Any, Any]:
    """(chunk_tokens, overlap_tokens) a document's chunks were cut with (None when unknown)."""
    rows = fetch(
        conn,
        "SELECT json_extract(properties, '$.chunk_tokens'),"
        " json_extract(properties, '$.overlap_tokens') FROM blocks"
        " WHERE type = 'document_chunk' AND json_extract(properties, '$.source_document_id') = ?"
        " LIMIT 1",
        (document_id,),
    )
    return (rows[0][0], rows[0][1]) if rows else (None, None)
