"""Cline in VS Code: `~/.config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks/<taskId>/`
with `ui_messages.json` (the `ClineMessage` list) and `api_conversation_history.json` (field
notes: ../shared/formats/cline-roo/NOTES.md). A call's result is in the next request's text."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


class Session:
    agent = "cline"

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.cwd = str(cwd)
        self.ms = int(start.timestamp() * 1000)
        self.id = str(self.ms)
        self.messages: list[dict[str, Any]] = []
        self.api: list[dict[str, Any]] = []

    def _add(self, kind: str, what: str, text: str) -> None:
        self.ms += 7000
        self.messages.append({"ts": self.ms, "type": kind, kind: what, "text": text})

    def _request(self, request: str) -> None:
        env = "<environment_details>\n# VSCode Visible Files\n</environment_details>"
        if not self.api:
            env = f"<environment_details>\n# Current Working Directory ({self.cwd}) Files\n"
            env += "</environment_details>"
        body = f"{request}\n\n{env}"
        self._add("say", "api_req_started", json.dumps({"request": body, "tokensIn": 900}))
        self.api.append({"role": "user", "content": [{"type": "text", "text": body}]})

    def user(self, text: str) -> Session:
        if not self.messages:
            self._add("say", "task", text)
            self._request(f"<task>\n{text}\n</task>")
        else:
            self._add("say", "user_feedback", text)
            self._request(f"<feedback>\n{text}\n</feedback>")
        return self

    def say(self, text: str) -> Session:
        self._add("say", "text", text)
        self.api.append({"role": "assistant", "content": [{"type": "text", "text": text}]})
        return self

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        self._add("ask", "command", command)
        self._add("say", "command_output", output)
        said = (
            "Command executed successfully (exit code 0)."
            if exit_code == 0
            else f"Command failed with exit code {exit_code}."
        )
        self._request(f"[execute_command for '{command}'] Result:\n{said}\nOutput:\n{output}")
        return self

    def edit(self, path: str, old: str, new: str) -> Session:
        diff = f"<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE"
        self._add(
            "say", "tool", json.dumps({"tool": "editedExistingFile", "path": path, "diff": diff})
        )
        self._request(
            f"[replace_in_file for '{path}'] Result:\nThe content was successfully saved to {path}."
        )
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        storage = home / ".config" / "Code" / "User" / "globalStorage" / "saoudrizwan.claude-dev"
        task = storage / "tasks" / self.id
        task.mkdir(parents=True, exist_ok=True)
        (task / "api_conversation_history.json").write_text(json.dumps(self.api))
        path = task / "ui_messages.json"
        path.write_text(json.dumps(self.messages))
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            for f in task.iterdir():
                os.utime(f, (old, old))
        return path
