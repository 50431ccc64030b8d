"""The Memory Writer: one call per episode, offline rules or an LLM provider."""
