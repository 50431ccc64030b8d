"""Params and results of the service's own methods (ping, info, cancel); the OpenRPC document is
made from them."""

from __future__ import annotations

from typing import Annotated

from msgspec import Meta, Struct

from reos_memory.models import (
    MAX_CONTENT_CHARS,
    Params,
)

Content = Annotated[str, Meta(max_length=MAX_CONTENT_CHARS)]
Position = Annotated[int, Meta(ge=0, le=2**31)]

# -- service -----------------------------------------------------------------------------------


class NoParams(Params):
    pass


class PingResult(Struct, kw_only=True):
    pong: bool


class InfoResult(Struct, kw_only=True):
    name: str
    version: str
    pid: int
    database: str
    framing: str | None
    max_message_bytes: int
    max_batch_items: int
    max_result_bytes: int
    uptime_s: float
    requests_served: int
    embedder_backend: str
    embedder_status: str
    catch_up_indexing: str


class CancelParams(Params):
    id: str | int
