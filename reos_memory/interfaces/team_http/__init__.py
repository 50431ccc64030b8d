"""The team server over HTTP (issue 21): JSON-RPC 2.0 at `POST /rpc`, MCP at `/mcp`, `GET
/health`; every method registered once in `registry.py`."""

from reos_memory.interfaces.team_http import (  # noqa: F401  (they register the methods)
    memory_methods,
    team_methods,
)
from reos_memory.interfaces.team_http.server import TeamHttp, openrpc_document, serve

__all__ = ["TeamHttp", "openrpc_document", "serve"]
