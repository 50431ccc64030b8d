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
import msgspec

from reos_memory.documents import api
from reos_memory.documents.chunking import Chunk, chunk_sections
from reos_memory.documents.extract import extract
from reos_memory.embeddings.base import to_blob
from reos_memory.embeddings.runtime import BULK, EmbeddingService
from reos_memory.errors import Cancelled, InvalidInput, NotFound, PayloadTooLarge
from reos_memory.models import Block, RichTextSpan, content_hash, new_id, now_iso
from reos_memory.store import Database
from reos_memory.store import blocks as block_sql
from reos_memory.store import documents as doc_sql
from reos_memory.store import vectors as vec_sql

EMBED_CHUNK = 16


@dataclass(frozen=True)
class Limits:
    """What a documents/insert may read and store: config `max_document_bytes`,
    `max_document_pages` (PDF pages, XLSX worksheets), `max_document_chunks` and
    `documents_follow_symlinks`."""

    max_bytes: int
    max_pages: int | None = None
    max_chunks: int | None = None
    follow_symlinks: bool = False


@dataclass(frozen=True)
class _File:
    """A file to insert, read and checked: its bytes, its name, where it was read from (None for
    base64 data) and the request field that gave it (named by a limit's error)."""

    data: bytes
    filename: str
    source_path: str | None
    field: str


def read_input(p: api.DocumentInsertParams, limits: Limits) -> _File:
    """The file given by `p.path`, or by base64 `p.data` plus `p.filename`.

    A file (or decoded `data`) over `limits.max_bytes` is refused with PayloadTooLarge before
    it is parsed; a file is measured before it is read.

    A path must name a regular file: a device, pipe or socket is refused (reading one can block
    or never end), and so is a symbolic link unless `limits.follow_symlinks`: a client cannot
    make the service read through a link it planted. The file is opened without following a
    link, then checked, so it cannot be swapped between the check and the read.
    """
    path, data, filename = p.path, p.data, p.filename
    follow_symlinks, max_bytes = limits.follow_symlinks, limits.max_bytes
    if (path is None) == (data is None):
        raise InvalidInput("path", "give either path or data (base64) with filename")
    if data is not None:
        if not filename:
            raise InvalidInput("filename", "is required with data")
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidInput("data", "must be standard base64") from exc
        if len(raw) > max_bytes:
            raise _too_big(filename, len(raw), max_bytes, "$.data")
        return _File(raw, filename, None, "$.data")
    assert path is not None
    fp = Path(path).expanduser()
    flags = os.O_RDONLY | os.O_NONBLOCK | (0 if follow_symlinks else getattr(os, "O_NOFOLLOW", 0))
    try:
        fd = os.open(fp, flags)
    except FileNotFoundError:
        raise NotFound("file", str(fp), field="path") from None
    except OSError as exc:
        if fp.is_symlink() and not follow_symlinks:
            raise InvalidInput(
                "path", "is a symbolic link (set documents_follow_symlinks = true to allow links)"
            ) from None
        raise NotFound("file", f"{fp} ({exc.strerror})", field="path") from None
    try:
        st = os.fstat(fd)  # the opened file itself: it cannot be swapped after this check
        if not stat.S_ISREG(st.st_mode):
            kind = "a directory" if stat.S_ISDIR(st.st_mode) else "a device, pipe or socket"
            raise InvalidInput("path", f"must be a regular file, not {kind}")
        if st.st_size > max_bytes:
            raise _too_big(str(fp), st.st_size, max_bytes, "$.path")
        os.set_blocking(fd, True)
        f = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with f:
        content = f.read(max_bytes + 1)
    if len(content) > max_bytes:  # it grew after it was measured
        raise _too_big(str(fp), len(content), max_bytes, "$.path")
    return _File(content, filename or fp.name, str(fp.resolve()), "$.path")


def _too_big(name: str, size: int, limit: int, field: str) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"{name} is {size} bytes, over the limit of {limit} bytes (max_document_bytes)"
        f" - at `{field}`",
        field=field,
        limit="max_document_bytes",
        limit_bytes=limit,
        size_bytes=size,
    )


def insert_document(
    db: Database,
    embeddings: EmbeddingService,
    p: api.DocumentInsertParams,
    limits: Limits,
    *,
    progress: Callable[[int, int | None, str], None] | None = None,
    cancelled: Callable[[], bool] | None = None,
) -> api.DocumentInsertResult:
    """Read, parse, chunk, embed and store a file; the same (act, filename) again replaces it.

    A file over `limits` (bytes; pages: PDF pages, XLSX worksheets; chunks) is refused with
    PayloadTooLarge naming `$.path` or `$.data`, before anything is embedded or stored.
    `progress(done, total, message)` hears how far it got; `cancelled()` true stops it with
    nothing written.
    """
    file = read_input(p, limits)
    sha = hashlib.sha256(file.data).hexdigest()
    existing = db.read(lambda c: doc_sql.document_named(c, p.act_id, file.filename))
    if (
        existing is not None
        and existing["sha256"] == sha
        and (
            existing["chunk_count"] == 0
            or db.read(lambda c: doc_sql.chunking_of(c, existing["id"]))
            == (p.chunk_tokens, p.overlap_tokens)
        )
    ):
        return _result(existing, existing["chunk_count"], 0, replaced=False, unchanged=True)

    def parsing(done: int, total: int | None) -> None:
        if progress:
            progress(done, total, "reading pages")

    doc = extract(file.data, file.filename, parsing, max_pages=limits.max_pages, field=file.field)
    chunks = chunk_sections(doc.sections, p.chunk_tokens, p.overlap_tokens)
    if limits.max_chunks is not None and len(chunks) > limits.max_chunks:
        raise PayloadTooLarge(
            f"{file.filename!r} makes {len(chunks)} chunks of about {p.chunk_tokens} tokens,"
            f" over the limit of {limits.max_chunks} (max_document_chunks); use a larger"
            f" `chunk_tokens` or split the file - at `{file.field}`",
            field=file.field,
            limit="max_document_chunks",
            limit_chunks=limits.max_chunks,
            chunks=len(chunks),
        )
    model_id, vectors = _embed(embeddings, chunks, progress, cancelled)

    def tx(conn: apsw.Connection) -> tuple[dict[str, Any], int, bool]:
        if cancelled and cancelled():
            raise Cancelled("document insert was cancelled; nothing was written")
        now = now_iso()
        # read again under the write lock: an insert of the same file that committed meanwhile
        # is replaced, not collided with
        current = doc_sql.document_named(conn, p.act_id, file.filename)
        doc_id = current["id"] if current else new_id("doc")
        old = doc_sql.chunk_ids(conn, doc_id)
        block_sql.delete_blocks(conn, old)
        indexed = 0
        chunking = {"chunk_tokens": p.chunk_tokens, "overlap_tokens": p.overlap_tokens}
        for chunk, blob in zip(chunks, vectors, strict=True):
            block = _chunk_block(chunk, doc_id, file.filename, p.act_id, len(chunks), now, chunking)
            block_sql.insert_block(conn, block)
            if blob is not None and model_id is not None:
                indexed += vec_sql.store_if_model(
                    conn, block.id, blob, model_id, content_hash(block.content), now
                )
        doc_sql.put_document(
            conn,
            id=doc_id,
            act_id=p.act_id,
            filename=file.filename,
            format=doc.format,
            size_bytes=len(file.data),
            sha256=sha,
            pages=doc.pages,
            chunk_count=len(chunks),
            source_path=file.source_path,
            created_at=current["created_at"] if current else now,
            updated_at=now,
        )
        row = doc_sql.get_document(conn, doc_id)
        assert row is not None
        return row, indexed, current is not None

    row, indexed, replaced = db.write(tx)
    return _result(row, len(chunks), indexed, replaced=replaced, unchanged=False)


def _embed(
    embeddings: EmbeddingService,
    chunks: list[Chunk],
    progress: Callable[[int, int | None, str], None] | None,
    cancelled: Callable[[], bool] | None,
) -> tuple[str | None, list[bytes | None]]:
    """The embedding model's id and each chunk's vector (None, None... without a model)."""
    vectors: list[bytes | None] = [None] * len(chunks)
    if embeddings.state in ("disabled", "failed") or embeddings.wait_ready() is None:
        return None, vectors
    for start in range(0, len(chunks), EMBED_CHUNK):
        if cancelled and cancelled():
            raise Cancelled("document insert was cancelled; nothing was written")
        batch = chunks[start : start + EMBED_CHUNK]
        for i, vec in enumerate(embeddings.embed([c.text for c in batch], priority=BULK)):
            vectors[start + i] = to_blob(vec)
        if progress:
            progress(start + len(batch), len(chunks), "embedding chunks")
    return embeddings.model_id, vectors


def _result(
    row: dict[str, Any], chunks: int, indexed: int, *, replaced: bool, unchanged: bool
) -> api.DocumentInsertResult:
    return api.DocumentInsertResult(
        document=msgspec.convert(row, api.DocumentInfo),
        chunks=chunks,
        indexed=indexed,
        replaced=replaced,
        unchanged=unchanged,
    )


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


def list_documents(db: Database, p: api.DocumentListParams) -> api.DocumentListResult:
    """Every document (of one act, if given), newest first."""
    rows = db.read(lambda c: doc_sql.list_documents(c, p.act_id))
    docs = msgspec.convert(rows, list[api.DocumentInfo])
    return api.DocumentListResult(documents=docs, count=len(docs))


def delete_document(db: Database, p: api.DocumentDeleteParams) -> api.DocumentDeleteResult:
    """Remove a document with its chunks, their edges and vectors; deleted=false if absent."""
    document_id = p.document_id

    def tx(conn: apsw.Connection) -> api.DocumentDeleteResult:
        if not doc_sql.document_exists(conn, document_id):
            return api.DocumentDeleteResult(
                deleted=False, document_id=document_id, chunks_removed=0
            )
        removed = block_sql.delete_blocks(conn, doc_sql.chunk_ids(conn, document_id))
        doc_sql.delete_document(conn, document_id)
        return api.DocumentDeleteResult(
            deleted=True, document_id=document_id, chunks_removed=removed
        )

    return db.write(tx)
