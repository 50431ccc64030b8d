"""Method handlers. Each module registers its family on the shared registry when imported."""

from reos_memory.interfaces.registry import Registry

REGISTRY = Registry()


def load_all() -> Registry:
    """Import every handler module (registering its methods) and return the registry."""
    from reos_memory.interfaces.jsonrpc.methods import (  # noqa: F401
        blocks,
        documents,
        graph,
        learning,
        relationships,
        search,
        service,
        squirrel,
    )

    return REGISTRY
