"""Gemini CLI (JSONL chat recordings, since 2026-04):
`~/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id[:8]>.jsonl`.

As ../shared/formats/gemini-cli/NOTES.md describes them (`chatRecordingTypes.ts`,
`chatRecordingService.ts`): a metadata line, then message records (`user`, `gemini`) and
`{"$set": {"lastUpdated": ...}}` updates. A `gemini` message is appended again, whole, each time
it changes: a tool call is written while it runs (`executing`, no result) and again once done
(`success` with the `functionResponse` the model got; a shell run's text ends with
`Exit Code: N` when it exited non-zero). The project directory `<project>` is a slug the CLI
registers in `~/.gemini/projects.json`, and it writes the project's path into
`tmp/<project>/.project_root`: both are written here, which is how the adapter finds the
project.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness.agent_homes import _dump, _ts

_TOKENS = {"input": 5120, "output": 96, "cached": 0, "thoughts": 32, "tool": 0, "total": 5248}
_MODEL = "gemini-2.5-pro"


class Session:
    agent = "gemini"

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.id = str(uuid.uuid4())
        self.cwd = str(cwd)
        self.start = start
        self.t = start
        self.lines: list[dict[str, Any]] = [
            {
                "sessionId": self.id,
                "projectHash": hashlib.sha256(self.cwd.encode()).hexdigest(),
                "startTime": _ts(start),
                "lastUpdated": _ts(start),
                "kind": "main",
            }
        ]
        self._pgid = 40000

    def _tick(self) -> str:
        self.t += timedelta(seconds=6)
        return _ts(self.t)

    def _touch(self) -> None:
        self.lines.append({"$set": {"lastUpdated": _ts(self.t)}})

    def _gemini(self, mid: str, ts: str, text: str, calls: list[dict[str, Any]] | None) -> None:
        msg: dict[str, Any] = {
            "id": mid,
            "timestamp": ts,
            "type": "gemini",
            "content": [{"text": text}] if text else "",
            "thoughts": [],
            "tokens": None if calls and calls[0]["status"] == "executing" else _TOKENS,
            "model": _MODEL,
        }
        if calls is not None:
            msg["toolCalls"] = calls
        self.lines.append(msg)

    def _tool(
        self,
        name: str,
        args: dict[str, Any],
        output: str,
        shown: Any,
        display: str,
        status: str = "success",
    ) -> None:
        mid, ts = str(uuid.uuid4()), self._tick()
        call = {
            "id": f"{name}-{int(self.t.timestamp() * 1000)}-{uuid.uuid4().hex[:12]}",
            "name": name,
            "args": args,
            "status": "executing",
            "timestamp": self._tick(),
            "displayName": display,
            "description": "",
            "renderOutputAsMarkdown": False,
        }
        self._gemini(mid, ts, "", [call])  # written while the tool runs
        response = {"id": call["id"], "name": name, "response": {"output": output}}
        done = {
            **call,
            "status": status,
            "result": [{"functionResponse": response}],
            "resultDisplay": shown,
        }
        self.t += timedelta(seconds=2)
        self._gemini(mid, ts, "", [done])  # and again once it is done
        self._touch()

    def user(self, text: str) -> Session:
        ts = self._tick()
        self.lines.append(
            {"id": str(uuid.uuid4()), "timestamp": ts, "type": "user", "content": [{"text": text}]}
        )
        self._touch()
        return self

    def say(self, text: str) -> Session:
        self._gemini(str(uuid.uuid4()), self._tick(), text, None)
        self._touch()
        return self

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        self._pgid += 7
        # what `shell.ts` tells the model: the output, an exit code only when not 0
        text = f"Output: {output or '(empty)'}"
        if exit_code:
            text += f"\nExit Code: {exit_code}"
        text += f"\nProcess Group PGID: {self._pgid}"
        args = {"command": command, "description": f"Run {command.split()[0]}"}
        self._tool("run_shell_command", args, text, output, "Shell")
        return self

    def edit(self, path: str, old: str, new: str) -> Session:
        full = os.path.join(self.cwd, path)
        diff = "".join(f"-{line}\n" for line in old.splitlines())
        diff += "".join(f"+{line}\n" for line in new.splitlines())
        self._tool(
            "replace",
            {"file_path": full, "old_string": old, "new_string": new, "instruction": "Edit"},
            f"Successfully modified file: {full} (1 replacements).",
            {"fileDiff": diff, "fileName": os.path.basename(path), "newContent": new},
            "Edit",
        )
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        gemini = home / ".gemini"
        slug = _register(gemini, self.cwd)
        project = gemini / "tmp" / slug
        project.mkdir(parents=True, exist_ok=True)
        (project / ".project_root").write_text(self.cwd)
        name = f"session-{self.start.astimezone(UTC):%Y-%m-%dT%H-%M}-{self.id[:8]}.jsonl"
        path = project / "chats" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        _dump(path, self.lines)
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            os.utime(path, (old, old))
        return path


def _register(gemini: Path, root: str) -> str:
    """The project's slug in `~/.gemini/projects.json` (its folder's name, made unique)."""
    registry = gemini / "projects.json"
    try:
        projects: dict[str, str] = json.loads(registry.read_text())["projects"]
    except (OSError, ValueError, KeyError):
        projects = {}
    if root not in projects:
        base = re.sub(r"[^a-z0-9]+", "-", os.path.basename(root).lower()).strip("-") or "project"
        slug, n = base, 0
        while slug in projects.values():
            n += 1
            slug = f"{base}-{n}"
        projects[root] = slug
        registry.parent.mkdir(parents=True, exist_ok=True)
        registry.write_text(json.dumps({"projects": projects}, indent=2))
    return projects[root]
