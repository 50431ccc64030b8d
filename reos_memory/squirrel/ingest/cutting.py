"""Long text reduced to its head and tail: what adapters hand on of a message or an output
(`base.cut`), and what the Cursor hook keeps of a tool's output (`cursor_sidecar`), in a module
that imports nothing, so that the hook loads no more than it needs."""

from __future__ import annotations

# characters of one message or tool output handed on: its head and its tail, where commands print
# what went wrong and test runners their summary (what is stored is much shorter still)
MAX_TEXT = 8_000


def cut(text: str | None, limit: int = MAX_TEXT) -> str | None:
    """Long text reduced to its head and tail (the end of a log holds the verdict)."""
    if text is None:
        return None
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n[...]\n" + text[-half:]
