"""Method handlers. Each module registers its family on the shared registry when imported."""

from __future__ import annotations

from typing import TYPE_CHECKING

from reos_memory.interfaces.registry import Registry

if TYPE_CHECKING:
    from reos_memory.interfaces.jsonrpc.server import RequestContext

REGISTRY: Registry[RequestContext] = Registry()


def load_all() -> Registry[RequestContext]:
    """Import every handler module (registering its methods) and return the registry."""
    from reos_memory.interfaces.jsonrpc.methods import (  # noqa: F401
        blocks,
        documents,
        graph,
        learning,
        protocol,
        relationships,
        search,
        squirrel,
    )

    return REGISTRY
