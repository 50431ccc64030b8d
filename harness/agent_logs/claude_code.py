"""Claude Code 2.1.x: `~/.claude/projects/<dir>/<session>.jsonl`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

from harness.agent_homes import ClaudeSession


class Session(ClaudeSession):
    agent = "claude-code"

    def run(self, command: str, output: str, exit_code: int = 0, **kw: Any) -> Session:
        self.bash(command, output, exit_code, **kw)
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        return super().write(home / ".claude", age)
