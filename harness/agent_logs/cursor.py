"""Cursor: an agent transcript, `~/.cursor/projects/<slug>/agent-transcripts/<id>.jsonl` (the
file Cursor's hooks hand over as `transcript_path`; field notes in
../shared/formats/cursor/NOTES.md, section 3, and the adapter's docstring).

What Cursor writes there, line by line (no ids, no per-line times):

* the user's prompt: `{"role": "user", "message": {"content": [{"type": "text", "text":
  "<timestamp>Friday, Jul 31, 2026, 5:10 PM (UTC+0)</timestamp>\n<user_query>\n...\n
  </user_query>"}]}}` - the envelope's human-readable time is the only time in the file;
* the agent's answer and tool calls: `{"role": "assistant", ...}` with `text` blocks (a
  trailing `[REDACTED]` marks hidden thinking) and `tool_use` blocks named as Cursor names its
  tools (`Shell {command, description}`, `StrReplace {path, old_string, new_string}`);
* `{"type": "turn_ended", "status": "success"}` when the agent stops.

With `results=True` (the default) each call is followed by a user line holding its
`tool_result` (the output as the command printed it; Cursor gives no exit code), the
Anthropic-style block the notes list. Third-party readers of real transcripts (2026) report that
Cursor leaves tool results out of them (its older `.txt` transcripts write empty `[Tool result]`
markers); `results=False` writes that shape: the calls without their outcome. Each call's run
(`runs`: tool, input, output) is kept for what Cursor hands its post-tool hooks
(`harness.hook_payloads.cursor_tool_runs`).
"""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def slug(cwd: Path | str) -> str:
    """Cursor's folder name for a workspace: the path without its leading `/`, each `/` a `-`."""
    return str(cwd).strip("/").replace("/", "-")


def envelope_time(t: datetime) -> str:
    """The time as Cursor writes it in the `<timestamp>` envelope: "Friday, Jul 31, 2026,
    5:10 PM (UTC-5)"."""
    off = t.utcoffset() or timedelta(0)
    minutes = int(off.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    h, m = divmod(abs(minutes), 60)
    zone = f"UTC{sign}{h}" + (f":{m:02d}" if m else "")
    hour = t.hour % 12 or 12
    return (
        f"{t:%A}, {t:%b} {t.day}, {t.year}, {hour}:{t:%M} {'AM' if t.hour < 12 else 'PM'} ({zone})"
    )


def transcript_path(home: Path, cwd: Path | str, conversation: str, nested: bool) -> Path:
    """Where Cursor writes a conversation's transcript: the IDE nests it (`<id>/<id>.jsonl`),
    the CLI does not (`<id>.jsonl`)."""
    base = home / ".cursor" / "projects" / slug(cwd) / "agent-transcripts"
    return (
        base / conversation / f"{conversation}.jsonl" if nested else base / f"{conversation}.jsonl"
    )


def line(role: str, *blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": role, "message": {"content": list(blocks)}}


def prompt(text: str, at: datetime | None) -> dict[str, Any]:
    """A user prompt in Cursor's envelope (`at=None`: older builds, no `<timestamp>`)."""
    head = f"<timestamp>{envelope_time(at)}</timestamp>\n" if at is not None else ""
    return line("user", {"type": "text", "text": f"{head}<user_query>\n{text}\n</user_query>"})


class Session:
    agent = "cursor"

    def __init__(
        self,
        cwd: Path,
        start: datetime,
        *,
        conversation: str | None = None,
        results: bool = True,
        nested: bool = False,
    ) -> None:
        self.id = conversation or str(uuid.uuid4())
        self.cwd = Path(cwd)
        self.t = start
        self.results = results
        self.nested = nested  # the IDE's `<id>/<id>.jsonl`; the CLI's flat `<id>.jsonl`
        self.lines: list[dict[str, Any]] = []
        self.runs: list[dict[str, Any]] = []  # each tool call: name, input, output

    def _tick(self) -> datetime:
        self.t += timedelta(seconds=7)
        return self.t

    def user(self, text: str) -> Session:
        self.lines.append(prompt(text, self._tick()))
        return self

    def say(self, text: str) -> Session:
        self._tick()
        self.lines.append(line("assistant", {"type": "text", "text": f"{text}\n\n[REDACTED]"}))
        return self

    def tool(self, name: str, inp: dict[str, Any], output: str) -> Session:
        self._tick()
        self.runs.append({"name": name, "input": inp, "output": output})
        self.lines.append(
            line(
                "assistant",
                {"type": "text", "text": "[REDACTED]"},
                {"type": "tool_use", "name": name, "input": inp},
            )
        )
        if self.results:
            self._tick()
            self.lines.append(line("user", {"type": "tool_result", "content": output}))
        return self

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        """A `Shell` call; Cursor records no exit code (its outcome is in the output)."""
        inp = {"command": command, "description": f"Run {command.split()[0]}"}
        return self.tool("Shell", inp, output)

    def edit(self, path: str, old: str, new: str) -> Session:
        inp = {"path": str(self.cwd / path), "old_string": old, "new_string": new}
        return self.tool("StrReplace", inp, f"The file {path} has been updated.")

    def path(self, home: Path) -> Path:
        return transcript_path(home, self.cwd, self.id, self.nested)

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        path = self.path(home)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            for rec in [*self.lines, {"type": "turn_ended", "status": "success"}]:
                f.write(json.dumps(rec, ensure_ascii=False) + "\n")
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            os.utime(path, (old, old))
        return path
