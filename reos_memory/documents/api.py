"""Params and results of the documents/* methods (msgspec Structs; the OpenRPC document is made
from them)."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

from reos_memory.models import (
    MAX_CONTENT_CHARS,
    Ident,
    Params,
    ProgressToken,
)

Content = Annotated[str, Meta(max_length=MAX_CONTENT_CHARS)]
Position = Annotated[int, Meta(ge=0, le=2**31)]

# -- documents ---------------------------------------------------------------------------------


class DocumentInsertParams(Params):
    act_id: Ident
    path: Annotated[str, Meta(min_length=1, max_length=4096)] | None = None
    data: str | None = None
    filename: Annotated[str, Meta(min_length=1, max_length=255)] | None = None
    chunk_tokens: Annotated[int, Meta(ge=50, le=4000)] = 500
    overlap_tokens: Annotated[int, Meta(ge=0, le=1000)] = 50
    progress_token: ProgressToken = None


class DocumentInfo(Struct, kw_only=True):
    id: str
    act_id: str
    filename: str
    format: str
    size_bytes: int
    sha256: str
    pages: int | None
    chunk_count: int
    source_path: str | None
    created_at: str
    updated_at: str


class DocumentInsertResult(Struct, kw_only=True):
    document: DocumentInfo
    chunks: int
    indexed: int
    replaced: bool
    unchanged: bool


class DocumentListParams(Params):
    act_id: Ident | None = None


class DocumentListResult(Struct, kw_only=True):
    documents: list[DocumentInfo]
    count: int


class DocumentDeleteParams(Params):
    document_id: Ident


class DocumentDeleteResult(Struct, kw_only=True):
    deleted: bool
    document_id: str
    chunks_removed: int
