"""The real agents in and out: the Claude Code hook and the `sqrl ingest|watch|hooks` commands.

Above Squirrel and the App (it opens the App like any command), below the command line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from reos_memory.app import App
    from reos_memory.config import Config


def close_app(app: App, config: Config) -> None:
    """Let background Memory Writer calls finish (each is bounded by the LLM timeout and
    retries, or the agent CLI's timeout), then close the App."""
    if config.writer in ("claude-code", "codex"):
        app.squirrel.wait_idle(config.writer_cli_timeout_s + 60)
    else:
        app.squirrel.wait_idle(config.llm_timeout_s * (config.llm_max_retries + 1) + 30)
    app.close()
