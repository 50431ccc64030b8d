"""ping, service/info, rpc.discover, $/cancelRequest - the process itself."""

from __future__ import annotations

import os
import time

from reos_memory import __version__
from reos_memory.interfaces.jsonrpc import types as t
from reos_memory.interfaces.jsonrpc.methods import REGISTRY
from reos_memory.interfaces.jsonrpc.server import RequestContext
from reos_memory.interfaces.openrpc import DocumentResult

method = REGISTRY.method


@method("ping", params=t.NoParams, result=t.PingResult, kind="inline")
def ping(ctx: RequestContext, p: t.NoParams) -> t.PingResult:
    """Answer at once; for liveness checks."""
    return t.PingResult(pong=True)


@method("service/info", params=t.NoParams, result=t.InfoResult, kind="inline")
def info(ctx: RequestContext, p: t.NoParams) -> t.InfoResult:
    """What this process is: version, pid, database, framing, limits and embedder state (no I/O)."""
    server = ctx.server
    return t.InfoResult(
        name="reos-memory",
        version=__version__,
        pid=os.getpid(),
        database=ctx.app.db.path,
        framing=server.reader.mode,
        max_message_bytes=server.reader.max_bytes,
        max_batch_items=server.max_batch_items,
        max_result_bytes=server.max_result_bytes,
        uptime_s=round(time.monotonic() - server.started, 3),
        requests_served=server.requests_served,
        embedder_backend=ctx.app.embeddings.backend,
        embedder_status=ctx.app.embeddings.state,
        catch_up_indexing=ctx.app.catch_up_state,
    )


@method("rpc.discover", params=t.NoParams, result=DocumentResult, kind="inline")
def discover(ctx: RequestContext, p: t.NoParams) -> DocumentResult:
    """The OpenRPC document describing every method (the same as rpc_schema/openrpc.json)."""
    from reos_memory.interfaces.jsonrpc.openrpc import discovered

    return discovered(REGISTRY)


@method("$/cancelRequest", params=t.CancelParams, result=type(None), kind="inline")
def cancel(ctx: RequestContext, p: t.CancelParams) -> None:
    """Ask the server to stop the request with this id; it answers -32008 and writes nothing."""
    ctx.server.cancel(p.id)
