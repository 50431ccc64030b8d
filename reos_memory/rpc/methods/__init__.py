"""Method handlers. Each module registers its family on the shared registry when imported."""

from reos_memory.rpc.registry import Registry

REGISTRY = Registry()


def load_all() -> Registry:
    """Import every handler module (registering its methods) and return the registry."""
    from reos_memory.rpc.methods import (  # noqa: F401
        blocks,
        documents,
        graph,
        index,
        learning,
        relationships,
        service,
        squirrel,
    )

    return REGISTRY
