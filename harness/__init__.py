"""What tests/ and tools/ share: the stdio JSON-RPC client of the real server, builders of
documents and of agent homes (Claude Code and Codex logs), and the corpus of fake secrets.
Tools import from here, never from tests/."""
