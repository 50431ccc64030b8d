"""reos-memory: a local-first memory service for AI agents."""

__version__ = "0.1.0"
