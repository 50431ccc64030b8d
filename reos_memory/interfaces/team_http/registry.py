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
TeamContext = tuple[TeamService, Caller]  # what a team handler runs with, besides its params


class TeamRegistry(MethodTable[TeamContext]):
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
            def on_context(ctx: TeamContext, p: P) -> R:
                return fn(ctx[0], ctx[1], p)

            self.add(
                name,
                on_context,
                params=params,
                result=result,
                kind=kind,
                errors=errors,
                doc=fn.__doc__,
            )
            return fn

        return register


registry = TeamRegistry()


class NoParams(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    pass
