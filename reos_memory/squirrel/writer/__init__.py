"""The Memory Writer: one call per episode, by the offline rules (`rules`), an LLM provider
(`llm`) or the agent's own CLI (`agent_cli`), all giving `schema.WriterOutput`. `runner` says
where episodes are learned (inline, background threads, a catch-up, the helper process) and
holds the claims and the token budget."""
