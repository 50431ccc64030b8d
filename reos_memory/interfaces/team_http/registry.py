"""The team server's method tables: its JSON-RPC methods (shared by its endpoint, its OpenRPC
document and the team UI) and its MCP tools. A handler takes (service, caller, params)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import msgspec

from reos_memory.errors import ReosError
from reos_memory.interfaces.registry import Kind, MethodTable
from reos_memory.team.team_service import Caller, TeamService

P = TypeVar("P", bound=msgspec.Struct)
R = TypeVar("R")
# a handler as the table holds it: its params are the Struct its spec names (`convert_params`)
Handler = Callable[[TeamService, Caller, msgspec.Struct], object]


class TeamRegistry(MethodTable):
    """Methods whose handlers take (service, caller, params); typed like `Registry.method`."""

    def method(
        self,
        name: str,
        *,
        params: type[P],
        result: type[R],
        kind: Kind = "read",
        errors: list[type[ReosError]] | None = None,
    ) -> Callable[[Callable[[TeamService, Caller, P], R]], Callable[[TeamService, Caller, P], R]]:
        def register(
            fn: Callable[[TeamService, Caller, P], R],
        ) -> Callable[[TeamService, Caller, P], R]:
            self.add(name, fn, params=params, result=result, kind=kind, errors=errors)
            return fn

        return register


registry = TeamRegistry()


class NoParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass
