"""Aider: `<project>/.aider.chat.history.md`, the line grammar its `io.py` writes (field notes:
../shared/formats/aider/NOTES.md). Aider logs no exit status: a run is its output alone."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path


class Session:
    agent = "aider"

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.cwd = cwd
        local = start.astimezone()  # the header is local time without a zone
        self.text = f"\n# aider chat started at {local:%Y-%m-%d %H:%M:%S}\n\n"
        self.text += self._out(f"{Path.home()}/.local/bin/aider") + self._out("Aider v0.75.1")
        self._n = 0

    @staticmethod
    def _out(message: str) -> str:
        """One `tool_output` message: `> ` on its first line, two spaces after its last."""
        return "> " + message.strip() + "  \n"

    def user(self, text: str) -> Session:
        self.text += "\n" + "".join(f"#### {line}  \n" for line in text.splitlines())
        return self

    def say(self, text: str) -> Session:
        self.text += "\n" + text.strip() + "\n\n"
        return self

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        self.user(f"/run {command}")
        self.text += self._out(output or "")
        self.text += self._out("Add the output to the chat? (y/n/instructions): y")
        return self

    def edit(self, path: str, old: str, new: str) -> Session:
        self._n += 1
        self.say(f"{path}\n```\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```")
        self.text += self._out("Tokens: 1,200 sent, 80 received.")
        self.text += self._out(f"Applied edit to {path}")
        self.text += self._out(f"Commit {self._n:07x} fix: edit {path}")
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        path = self.cwd / ".aider.chat.history.md"
        with path.open("a", encoding="utf-8") as f:
            f.write(self.text)
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            os.utime(path, (old, old))
        return path
