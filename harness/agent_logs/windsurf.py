"""Windsurf (Cascade) hook transcripts: `~/.windsurf/transcripts/<trajectory_id>.jsonl`, written
when the `post_cascade_response_with_transcript` hook is configured.

One step a line, `{"type": T, "status": ..., T: {...}}`, per ../shared/formats/windsurf/NOTES.md:
`user_input` (`user_response`), `planner_response` (`response`) and `code_action` (`path`,
`new_content`) are documented. A command run is not: `run` writes the step the adapter assumes
for it (reos_memory/squirrel/ingest/windsurf.py): `run_command` with `command_line`, `cwd`,
`exit_code` and `combined_output.full`, Cascade's RUN_COMMAND step in the snake case the
documented steps use. Step times go in `metadata.created_at` (assumed likewise; status values
are not documented either: "done" is ours). The transcript names no directory of its own: the
adapter takes the project from the first path a step names (the command's `cwd`, a written
file).
"""

from __future__ import annotations

import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from harness.agent_homes import _dump, _ts


class Session:
    agent = "windsurf"

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.id = str(uuid.uuid4())  # the trajectory
        self.cwd = str(cwd)
        self.t = start
        self.steps: list[dict[str, Any]] = []

    def _step(self, kind: str, body: dict[str, Any], status: str = "done") -> Session:
        self.t += timedelta(seconds=6)
        self.steps.append(
            {"type": kind, "status": status, "metadata": {"created_at": _ts(self.t)}, kind: body}
        )
        return self

    def user(self, text: str) -> Session:
        return self._step("user_input", {"user_response": text})

    def say(self, text: str) -> Session:
        return self._step("planner_response", {"response": text})

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        return self._step(
            "run_command",
            {
                "command_line": command,
                "cwd": self.cwd,
                "exit_code": exit_code,
                "combined_output": {"full": output},
            },
        )

    def edit(self, path: str, old: str, new: str) -> Session:
        # the documented step carries the file's new content; the session knows the new lines
        return self._step(
            "code_action", {"path": os.path.join(self.cwd, path), "new_content": new + "\n"}
        )

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        path = home / ".windsurf" / "transcripts" / f"{self.id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        _dump(path, self.steps)
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            os.utime(path, (old, old))
        return path
