"""The team server's method table (shared by its JSON-RPC endpoint, its OpenRPC document and
its MCP tools)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec

from reos_memory.interfaces.registry import Registry
from reos_memory.team.service import Caller, TeamService

registry = Registry()
Handler = Callable[[TeamService, Caller, Any], Any]


class NoParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass
