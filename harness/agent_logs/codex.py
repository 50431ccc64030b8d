"""Codex 0.125: `~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from harness.agent_homes import CodexSession


class Session(CodexSession):
    agent = "codex"

    def edit(self, path: str, old: str, new: str) -> Session:
        body = "".join(f"-{line}\n" for line in old.splitlines())
        body += "".join(f"+{line}\n" for line in new.splitlines())
        self.patch(path, body.rstrip("\n"))
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        return super().write(home / ".codex", age)
