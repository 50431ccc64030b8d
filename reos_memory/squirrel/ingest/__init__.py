"""Session logs that coding agents already write, turned into Squirrel events.

One adapter module per agent behind one interface (`base.Adapter`); `reader` follows a file from
a cursor, `ingest` stores what the adapters make of it, `episodes` cuts the events into
episodes, `watch` follows the agents' log directories, `locations` knows where each agent keeps
its logs.
"""

# every agent whose logs are read, by the name `agent` takes (`auto`: recognised from the log);
# light to import (the CLI's argument parser names them)
AGENT_NAMES = (
    "auto",
    "claude-code",
    "codex",
    "gemini",
    "cursor",
    "copilot",
    "windsurf",
    "opencode",
    "aider",
    "cline",
)
