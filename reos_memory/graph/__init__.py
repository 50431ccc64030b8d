"""The block memory graph: blocks, typed relationships, walks and (later) retrieval."""
