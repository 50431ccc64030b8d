"""documents/* - files as searchable document_chunk blocks."""

from __future__ import annotations

from reos_memory.documents import api as t
from reos_memory.documents import ingestion as svc
from reos_memory.errors import Cancelled, DocumentUnreadable, NotFound, PayloadTooLarge
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext

method = REGISTRY.method


@method(
    "documents/insert",
    params=t.DocumentInsertParams,
    result=t.DocumentInsertResult,
    kind="heavy",
    errors=[PayloadTooLarge, NotFound, Cancelled, DocumentUnreadable],
)
def insert(ctx: RequestContext, p: t.DocumentInsertParams) -> t.DocumentInsertResult:
    """Insert a PDF, DOCX, TXT, MD, CSV or XLSX file given by `path`, or as base64 `data` + `filename`.

    The text is cut into chunks of about `chunk_tokens` tokens (overlap `overlap_tokens`) that keep
    paragraphs and never cross a heading; each chunk becomes a `document_chunk` block with
    `source_document_id`, `source_document_name`, `chunk_index`, `page_number`, `section_title` and
    `total_chunks`, embedded for search. The same filename in the same act replaces the earlier
    insert (an identical file cut the same way is left as it is: `unchanged`). A `path` must be
    a regular file (a symbolic link only with config `documents_follow_symlinks`). Unsupported,
    corrupt, encrypted or empty files answer -32012 with `data.kind` and store nothing. A file
    over config `max_document_bytes`, `max_document_pages` (PDF pages, XLSX worksheets) or
    `max_document_chunks` answers -32001 naming `$.path` (or `$.data`) and stores nothing.
    `$/progress` with `progress_token`; `$/cancelRequest` stops it with nothing written.
    """
    cfg = ctx.app.config
    limits = svc.Limits(
        max_bytes=cfg.max_document_bytes,
        max_pages=cfg.max_document_pages,
        max_chunks=cfg.max_document_chunks,
        follow_symlinks=cfg.documents_follow_symlinks,
    )
    return svc.insert_document(
        ctx.app.db,
        ctx.app.embeddings,
        p,
        limits,
        progress=lambda done, total, message: ctx.progress(done, total, message),
        cancelled=ctx.cancelled.is_set,
    )


@method("documents/list", params=t.DocumentListParams, result=t.DocumentListResult)
def list_(ctx: RequestContext, p: t.DocumentListParams) -> t.DocumentListResult:
    """List inserted documents (of one act, if given), most recently changed first."""
    return svc.list_documents(ctx.app.db, p)


@method(
    "documents/delete", params=t.DocumentDeleteParams, result=t.DocumentDeleteResult, kind="write"
)
def delete(ctx: RequestContext, p: t.DocumentDeleteParams) -> t.DocumentDeleteResult:
    """Delete a document with its chunks and their relationships and vectors."""
    return svc.delete_document(ctx.app.db, p)
