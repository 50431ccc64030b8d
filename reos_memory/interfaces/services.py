"""What every interface is given: the typed services of one database.

The composition root (`app.App`) satisfies this protocol; an interface (JSON-RPC, MCP, the agent
hooks, and next the HTTP team server) names only this, so a misspelled service or method, or a
parameter the service does not take, fails type checking instead of reaching a user.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # the types only: the hook's start-up path imports none of these modules
    from reos_memory.config import Config
    from reos_memory.embeddings.runtime import EmbeddingService
    from reos_memory.graph.api import EmbedderStatus
    from reos_memory.index.vectors import Indexer
    from reos_memory.llm import LLMClient
    from reos_memory.squirrel.facade import Squirrel
    from reos_memory.store import Database


class Services(Protocol):
    """The database, the block graph's machinery and Squirrel, as one process holds them."""

    config: Config
    db: Database
    indexer: Indexer
    embeddings: EmbeddingService
    catch_up_state: str

    @property
    def block_redact(self) -> Callable[[object], object] | None:
        """Redaction applied to block text before it is stored (`redact_blocks`), if on."""
        ...

    @property
    def squirrel(self) -> Squirrel:
        """The memory of a coding assistant, built on first use."""
        ...

    def llm(self) -> LLMClient | None:
        """The configured LLM client, or None when no provider is configured."""
        ...

    def embedder_status(self) -> EmbedderStatus:
        """The model's state, the database's recorded model and the vector index's."""
        ...

    def start(self) -> None:
        """Load the model in the background; requests that need it wait, others do not."""
        ...

    def close(self) -> None:
        """Stop background work, then close the database."""
        ...

    def close_when_written(self) -> None:
        """Let the background Memory Writer calls finish, then close."""
        ...
