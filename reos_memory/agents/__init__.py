"""The real agents in and out: the Claude Code hook and the `sqrl ingest|watch|hooks` commands.

Above Squirrel and the App (it opens the App like any command), below the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reos_memory.app import App
    from reos_memory.config import Config


def close_app(app: App, config: Config) -> None:
    """Let background Memory Writer calls finish, then close the App. Each call is bounded (the
    LLM timeout and retries, or the agent CLI's timeout); the wait goes on as long as calls
    keep finishing, so a long catch-up through a slow writer is not cut off halfway."""
    if config.writer in ("claude-code", "codex"):
        per_call = config.writer_cli_timeout_s + 60
    else:
        per_call = config.llm_timeout_s * (config.llm_max_retries + 1) + 30
    left = _unwritten(app)
    while not app.squirrel.wait_idle(per_call):
        now = _unwritten(app)
        if now >= left:  # not one call finished in a call's whole time: stop waiting
            break
        left = now
    app.close()


def _unwritten(app: App) -> int:
    """Episodes waiting for the writer or being written."""
    from reos_memory.store import squirrel as ssql

    counts = app.db.read(ssql.count_episodes)
    return counts.get("pending", 0) + counts.get("running", 0)
