"""One scripted coding session, written as each agent writes its logs.

Every agent has a module here (named after it, as in `reos_memory.squirrel.ingest.AGENT_NAMES`)
whose `Session(cwd, start)` records what happens in a session - the user asks, the agent
answers, runs commands (with their output and exit code), edits files - and `write(home)` puts
the log where that agent keeps it on Linux, under a fake home directory (`~/.claude/projects`,
`~/.config/Cursor/User/...`, a project's `.aider.chat.history.md` ...). Tests and benchmarks
script a session once and get it in every agent's format.
"""

from __future__ import annotations

import importlib
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol, Self


class Session(Protocol):
    """A session being scripted, in one agent's format."""

    agent: str

    def user(self, text: str) -> Self: ...

    def say(self, text: str) -> Self: ...

    def run(self, command: str, output: str, exit_code: int = 0) -> Self: ...

    def edit(self, path: str, old: str, new: str) -> Self: ...

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        """Write the log under the fake home `home` (a database or a project file where the
        agent keeps one there); with `age`, the files look that long untouched. Returns the
        file `sqrl ingest` reads."""
        ...


def session(agent: str, cwd: Path, start: datetime) -> Session:
    """A new session of `agent` in the project directory `cwd`, starting at `start`."""
    module = importlib.import_module(f"{__name__}.{agent.replace('-', '_')}")
    s: Session = module.Session(cwd, start)
    return s
