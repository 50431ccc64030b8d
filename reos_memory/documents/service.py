"""documents/insert, list and delete: files become document_chunk blocks, embedded and searchable.

Parsing and embedding happen first; everything is then written in one transaction (the old
chunks of a re-inserted file go in the same transaction), so a failed or cancelled insert
leaves the store exactly as it was.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import apsw

from reos_memory.documents.chunking import Chunk, chunk_sections
from reos_memory.documents.extract import extract
from reos_memory.embeddings.base import to_blob
from reos_memory.embeddings.service import BULK, EmbeddingService
from reos_memory.errors import Cancelled, InvalidInput, NotFound, PayloadTooLarge
from reos_memory.models import Block, RichTextSpan, content_hash, new_id, now_iso
from reos_memory.store import Database, fetch, scalar
from reos_memory.store import blocks as block_sql
from reos_memory.store import vectors as vec_sql

EMBED_CHUNK = 16

_DOC_COLS = (
    "id, act_id, filename, format, size_bytes, sha256, pages, chunk_count, source_path,"
    " created_at, updated_at"
)
_KEYS = [c.strip() for c in _DOC_COLS.split(",")]


@dataclass
class InsertOutcome:
    document: dict[str, Any]
    chunks: int
    indexed: int
    replaced: bool
    unchanged: bool


MAX_FILE_BYTES = 256 * 1024 * 1024


def read_input(
    path: str | None, data: str | None, filename: str | None, follow_symlinks: bool = False
) -> tuple[bytes, str, str | None]:
    """(bytes, filename, source path) from a file path or base64 data plus a filename.

    A path must name a regular file: a device, pipe or socket is refused (reading one can block
    or never end), and so is a symbolic link unless `follow_symlinks` (config
    `documents_follow_symlinks`): a client cannot make the service read through a link it
    planted. The file is opened without following a link, then checked, so it cannot be swapped
    between the check and the read.
    """
    if (path is None) == (data is None):
        raise InvalidInput("path", "give either path or data (base64) with filename")
    if data is not None:
        if not filename:
            raise InvalidInput("filename", "is required with data")
        try:
            return base64.b64decode(data, validate=True), filename, None
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput("data", "must be standard base64") from exc
    assert path is not None
    p = Path(path).expanduser()
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(p, flags)
    except FileNotFoundError:
        raise NotFound("file", str(p), field="path") from None
    except OSError as exc:
        if p.is_symlink() and not follow_symlinks:
            raise InvalidInput(
                "path", "is a symbolic link (set documents_follow_symlinks = true to allow links)"
            ) from None
        raise NotFound("file", f"{p} ({exc.strerror})", field="path") from None
    try:
        st = os.fstat(fd)  # the opened file itself: it cannot be swapped after this check
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a device, pipe or socket"
            raise InvalidInput("path", f"must be a regular file, not {kind}")
        if st.st_size > MAX_FILE_BYTES:
            raise PayloadTooLarge(
                f"{p} is {st.st_size} bytes; the limit is {MAX_FILE_BYTES}", field="$.path"
            )
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        content = f.read(MAX_FILE_BYTES + 1)
    return content, filename or p.name, str(p.resolve())


def _document(conn: apsw.Connection, where: str, args: tuple[Any, ...]) -> dict[str, Any] | None:
    rows = fetch(conn, f"SELECT {_DOC_COLS} FROM documents WHERE {where}", args)
    return dict(zip(_KEYS, rows[0], strict=True)) if rows else None


def chunk_ids(conn: apsw.Connection, document_id: str) -> list[str]:
    return [
        r[0]
        for r in fetch(
            conn,
            "SELECT id FROM blocks WHERE type = 'document_chunk'"
            " AND json_extract(properties, '$.source_document_id') = ?",
            (document_id,),
        )
    ]


def insert_document(
    db: Database,
    embeddings: EmbeddingService,
    *,
    data: bytes,
    filename: str,
    act_id: str,
    source_path: str | None = None,
    chunk_tokens: int = 500,
    overlap_tokens: int = 50,
    progress: Callable[[int, int | None, str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> InsertOutcome:
    """Parse, chunk, embed and store a file; the same (act, filename) again replaces it."""
    sha = hashlib.sha256(data).hexdigest()
    same = ("act_id = ? AND filename = ?", (act_id, filename))
    existing = db.read(lambda c: _document(c, *same))
    if (
        existing is not None
        and existing["sha256"] == sha
        and (
            existing["chunk_count"] == 0
            or db.read(lambda c: _chunking(c, existing["id"])) == (chunk_tokens, overlap_tokens)
        )
    ):
        return InsertOutcome(existing, existing["chunk_count"], 0, replaced=False, unchanged=True)

    def parsing(done: int, total: int | None) -> None:
        if progress:
            progress(done, total, "reading pages")

    doc = extract(data, filename, parsing)
    chunks = chunk_sections(doc.sections, chunk_tokens, overlap_tokens)
    vectors: list[bytes | None] = [None] * len(chunks)
    model_id = None
    if embeddings.state not in ("disabled", "failed") and embeddings.wait_ready() is not None:
        model_id = embeddings.model_id
        for start in range(0, len(chunks), EMBED_CHUNK):
            if cancelled and cancelled():
                raise Cancelled("document insert was cancelled; nothing was written")
            batch = chunks[start : start + EMBED_CHUNK]
            for i, vec in enumerate(embeddings.embed([c.text for c in batch], priority=BULK)):
                vectors[start + i] = to_blob(vec)
            if progress:
                progress(start + len(batch), len(chunks), "embedding chunks")

    def tx(conn: apsw.Connection) -> tuple[dict[str, Any], int, bool]:
        if cancelled and cancelled():
            raise Cancelled("document insert was cancelled; nothing was written")
        now = now_iso()
        # read again under the write lock: an insert of the same file that committed meanwhile
        # is replaced, not collided with
        current = _document(conn, *same)
        doc_id = current["id"] if current else new_id("doc")
        old = chunk_ids(conn, doc_id)
        block_sql.delete_blocks(conn, old)
        indexed = 0
        chunking = {"chunk_tokens": chunk_tokens, "overlap_tokens": overlap_tokens}
        for chunk, blob in zip(chunks, vectors, strict=True):
            block = _chunk_block(chunk, doc_id, filename, act_id, len(chunks), now, chunking)
            block_sql.insert_block(conn, block)
            if blob is not None and model_id is not None:
                indexed += vec_sql.store_if_model(
                    conn, block.id, blob, model_id, content_hash(block.content), now
                )
        conn.execute(
            f"INSERT INTO documents ({_DOC_COLS}) VALUES (?,?,?,?,?,?,?,?,?,?,?)"
            " ON CONFLICT(id) DO UPDATE SET format = excluded.format, size_bytes = excluded.size_bytes,"
            " sha256 = excluded.sha256, pages = excluded.pages, chunk_count = excluded.chunk_count,"
            " source_path = excluded.source_path, updated_at = excluded.updated_at",
            (
                doc_id,
                act_id,
                filename,
                doc.format,
                len(data),
                sha,
                doc.pages,
                len(chunks),
                source_path,
                current["created_at"] if current else now,
                now,
            ),
        )
        row = _document(conn, "id = ?", (doc_id,))
        assert row is not None
        return row, indexed, current is not None

    row, indexed, replaced = db.write(tx)
    return InsertOutcome(row, len(chunks), indexed, replaced=replaced, unchanged=False)


def _chunking(conn: apsw.Connection, document_id: str) -> tuple[Any, Any]:
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


def _chunk_block(
    chunk: Chunk,
    doc_id: str,
    filename: str,
    act_id: str,
    total: int,
    now: str,
    chunking: dict[str, int],
) -> Block:
    return Block(
        id=f"{doc_id}.{chunk.index:05d}",
        type="document_chunk",
        act_id=act_id,
        parent_id=None,
        page_id=None,
        position=chunk.index,
        content=chunk.text,
        rich_text=[RichTextSpan(content=chunk.text)],
        properties={
            "source_document_id": doc_id,
            "source_document_name": filename,
            "chunk_index": chunk.index,
            "page_number": chunk.page,
            "section_title": chunk.heading,
            "total_chunks": total,
            **chunking,
        },
        version=1,
        created_at=now,
        updated_at=now,
    )


def list_documents(db: Database, *, act_id: str | None = None) -> list[dict[str, Any]]:
    """Every document (of one act, if given), newest first."""
    where, args = ("act_id = ?", (act_id,)) if act_id else ("1", ())
    return db.read(
        lambda c: [
            dict(zip(_KEYS, r, strict=True))
            for r in fetch(
                c,
                f"SELECT {_DOC_COLS} FROM documents WHERE {where} ORDER BY updated_at DESC, id",
                args,
            )
        ]
    )


def delete_document(db: Database, *, document_id: str) -> dict[str, Any]:
    """Remove a document with its chunks, their edges and vectors; deleted=false if absent."""

    def tx(conn: apsw.Connection) -> dict[str, Any]:
        if not scalar(conn, "SELECT 1 FROM documents WHERE id = ?", (document_id,)):
            return {"deleted": False, "document_id": document_id, "chunks_removed": 0}
        removed = block_sql.delete_blocks(conn, chunk_ids(conn, document_id))
        conn.execute("DELETE FROM documents WHERE id = ?", (document_id,))
        return {"deleted": True, "document_id": document_id, "chunks_removed": removed}

    return db.write(tx)
