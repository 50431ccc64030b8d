"""The local service's OpenRPC document (rpc_schema/openrpc.json), by the shared generator."""

from __future__ import annotations

from functools import cache

import msgspec

from reos_memory import __version__
from reos_memory.errors import PayloadTooLarge
from reos_memory.interfaces.openrpc import as_text, build_document, encoded, plain
from reos_memory.interfaces.registry import MethodTable
from reos_memory.interfaces.rpc import ERROR_TABLE
from reos_memory.json_types import JSONObject


def render(registry: MethodTable) -> str:
    """The document as the text committed at rpc_schema/openrpc.json."""
    return as_text(openrpc_document(registry))


@cache
def openrpc_document(registry: MethodTable) -> JSONObject:
    """The document, built once per registry; any read may answer PayloadTooLarge when its
    result is over max_result_bytes."""
    info: JSONObject = {
        "title": "reos-memory",
        "version": __version__,
        "description": (
            "Local-first memory service for AI agents over stdio JSON-RPC 2.0. "
            "Application errors: " + "; ".join(f"{e['code']} {e['reason']}" for e in ERROR_TABLE)
        ),
    }
    meanings = {e["code"]: e["meaning"] for e in ERROR_TABLE}
    return plain(
        build_document(registry, info=info, meanings=meanings, read_errors=[PayloadTooLarge])
    )


@cache
def discovered(registry: MethodTable) -> msgspec.Raw:
    """The document as `rpc.discover` answers it, encoded once."""
    return encoded(openrpc_document(registry))
