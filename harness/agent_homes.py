"""Session logs in the shapes Claude Code 2.1.x and Codex 0.125 write them (field notes in
../shared/formats/README.md), for building realistic agent homes in tests and benchmarks."""

from __future__ import annotations

import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any


def _ts(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class ClaudeSession:
    """One Claude Code session file (and its subagent files), record by record."""

    def __init__(self, cwd: Path, start: datetime, version: str = "2.1.39") -> None:
        self.id = str(uuid.uuid4())
        self.cwd = str(cwd)
        self.t = start
        self.version = version
        self.records: list[dict[str, Any]] = []
        self.subagents: dict[str, list[dict[str, Any]]] = {}
        self._parent: str | None = None
        self._n = 0

    def _tick(self) -> str:
        self.t += timedelta(seconds=7)
        return _ts(self.t)

    def _env(self, kind: str, sidechain: bool = False, **kw: Any) -> dict[str, Any]:
        u = str(uuid.uuid4())
        rec = {
            "parentUuid": self._parent,
            "isSidechain": sidechain,
            "userType": "external",
            "cwd": self.cwd,
            "sessionId": self.id,
            "version": self.version,
            "gitBranch": "main",
            "type": kind,
            "uuid": u,
            "timestamp": self._tick(),
            **kw,
        }
        self._parent = u
        return rec

    def _progress(self) -> None:
        self.records.append(
            self._env("progress", data={"type": "hook_progress", "hookEvent": "PostToolUse"})
        )

    def user(self, text: str) -> ClaudeSession:
        self.records.append(self._env("user", message={"role": "user", "content": text}))
        return self

    def say(self, text: str) -> ClaudeSession:
        self._n += 1
        self.records.append(
            self._env(
                "assistant",
                message={
                    "id": f"msg_{self._n}",
                    "role": "assistant",
                    "model": "claude-sonnet-4",
                    "content": [{"type": "text", "text": text}],
                },
                requestId=f"req_{self._n}",
            )
        )
        return self

    def tool(
        self,
        name: str,
        inp: dict[str, Any],
        output: str,
        *,
        exit_code: int | None = None,
        error: bool = False,
        rejected: bool = False,
        records: list[dict[str, Any]] | None = None,
        sidechain: bool = False,
        result: dict[str, Any] | None = None,
    ) -> ClaudeSession:
        out = self.records if records is None else records
        self._n += 1
        tid = f"toolu_{uuid.uuid4().hex[:20]}"
        out.append(
            self._env(
                "assistant",
                sidechain,
                message={
                    "id": f"msg_{self._n}",
                    "role": "assistant",
                    "model": "claude-sonnet-4",
                    "content": [{"type": "tool_use", "id": tid, "name": name, "input": inp}],
                },
            )
        )
        failed = error or rejected or (exit_code not in (None, 0))
        if rejected:
            content = (
                "The user doesn't want to proceed with this tool use. The tool use was rejected"
                " (eg. if it was a file edit, the new_string was NOT written to the file)."
                " STOP what you are doing and wait for the user to tell you how to proceed."
            )
            tur: Any = "User rejected tool use"
        elif failed and exit_code is not None:
            content = f"Exit code {exit_code}\n{output}"
            tur = f"Error: Exit code {exit_code}\n{output}"
        elif failed:
            content = f"<tool_use_error>{output}</tool_use_error>"
            tur = f"Error: {output}"
        else:
            content = output
            tur = result or {"stdout": output, "stderr": "", "interrupted": False, "isImage": False}
        block: dict[str, Any] = {"tool_use_id": tid, "type": "tool_result", "content": content}
        if failed:
            block["is_error"] = True
        elif name == "Bash":
            block["is_error"] = False
        out.append(
            self._env(
                "user",
                sidechain,
                message={"role": "user", "content": [block]},
                toolUseResult=tur,
            )
        )
        if records is None:
            self._progress()
        return self

    def bash(self, command: str, output: str, exit_code: int = 0, **kw: Any) -> ClaudeSession:
        return self.tool("Bash", {"command": command}, output, exit_code=exit_code, **kw)

    def edit(self, path: str, old: str, new: str) -> ClaudeSession:
        full = os.path.join(self.cwd, path)
        return self.tool(
            "Edit",
            {"file_path": full, "old_string": old, "new_string": new},
            f"The file {full} has been updated.",
        )

    def subagent(self, prompt: str, calls: list[tuple[str, dict[str, Any], str]]) -> ClaudeSession:
        """A Task call whose subagent writes its own file (2.1.x layout)."""
        agent = uuid.uuid4().hex[:7]
        recs: list[dict[str, Any]] = []
        saved = self._parent
        self._parent = None
        recs.append(
            self._env("user", True, message={"role": "user", "content": prompt}, agentId=agent)
        )
        for name, inp, out in calls:
            self.tool(name, inp, out, records=recs, sidechain=True)
        for r in recs:
            r["agentId"] = agent
        self.subagents[agent] = recs
        self._parent = saved
        return self.tool(
            "Task",
            {"description": "research", "prompt": prompt, "subagent_type": "general-purpose"},
            "Done: " + prompt[:40],
        )

    def compact(self, summary: str) -> ClaudeSession:
        rec = self._env(
            "system",
            subtype="compact_boundary",
            content="Conversation compacted",
            compactMetadata={"trigger": "auto", "preTokens": 150000},
        )
        rec["logicalParentUuid"], rec["parentUuid"] = rec["parentUuid"], None
        self.records.append(rec)
        self.records.append(
            self._env(
                "user",
                message={"role": "user", "content": summary},
                isCompactSummary=True,
                isVisibleInTranscriptOnly=True,
            )
        )
        return self

    def path(self, claude_home: Path) -> Path:
        folder = claude_home / "projects" / self.cwd.replace("/", "-").replace(".", "-")
        return folder / f"{self.id}.jsonl"

    def write(self, claude_home: Path, age: timedelta | None = None) -> Path:
        """Write the session (and subagent files) under `<claude_home>/projects/<dir>/`; with
        `age`, the files look that long untouched."""
        path = self.path(claude_home)
        path.parent.mkdir(parents=True, exist_ok=True)
        head = [
            {
                "type": "file-history-snapshot",
                "messageId": "m0",
                "isSnapshotUpdate": False,
                "snapshot": {"timestamp": self.records[0]["timestamp"], "trackedFileBackups": {}},
            }
        ]
        _dump(path, head + self.records)
        files = [path]
        for agent, recs in self.subagents.items():
            sub = path.with_suffix("") / "subagents" / f"agent-{agent}.jsonl"
            sub.parent.mkdir(parents=True, exist_ok=True)
            _dump(sub, recs)
            files.append(sub)
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            for f in files:
                os.utime(f, (old, old))
        return path


class CodexSession:
    """One Codex 0.125 rollout."""

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.id = str(uuid.uuid4())
        self.cwd = str(cwd)
        self.start = start
        self.t = start
        self.lines: list[dict[str, Any]] = []
        self._line(
            "session_meta",
            {
                "id": self.id,
                "timestamp": _ts(start),
                "cwd": self.cwd,
                "originator": "codex-tui",
                "cli_version": "0.125.0",
                "source": "cli",
                "model_provider": "openai",
            },
        )
        self.turn = str(uuid.uuid4())

    def _line(self, kind: str, payload: dict[str, Any]) -> None:
        self.t += timedelta(seconds=5)
        self.lines.append({"timestamp": _ts(self.t), "type": kind, "payload": payload})

    def user(self, text: str) -> CodexSession:
        self.turn = str(uuid.uuid4())
        self._line("event_msg", {"type": "task_started", "turn_id": self.turn})
        self._line("turn_context", {"turn_id": self.turn, "cwd": self.cwd, "model": "gpt-5"})
        self._line(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": f"# AGENTS.md instructions for {self.cwd}"}
                ],
            },
        )
        self._line("event_msg", {"type": "user_message", "message": text, "images": []})
        return self

    def run(self, cmd: str, output: str, exit_code: int = 0) -> CodexSession:
        call = f"call_{uuid.uuid4().hex[:20]}"
        self._line(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "call_id": call,
                "arguments": json.dumps({"cmd": cmd, "workdir": self.cwd, "yield_time_ms": 1000}),
            },
        )
        self._line(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": call,
                "output": "Chunk ID: a1\nWall time: 1.0 seconds\nProcess running with session ID 7\n"
                "Output:\n",
            },
        )
        self._line(
            "event_msg",
            {
                "type": "exec_command_end",
                "call_id": call,
                "turn_id": self.turn,
                "command": ["/bin/zsh", "-lc", cmd],
                "cwd": self.cwd,
                "aggregated_output": output,
                "stdout": output,
                "stderr": "",
                "exit_code": exit_code,
                "status": "completed",
            },
        )
        self._line("event_msg", {"type": "token_count", "info": None})
        return self

    def patch(self, rel: str, body: str) -> CodexSession:
        call = f"call_{uuid.uuid4().hex[:20]}"
        self._line(
            "response_item",
            {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": call,
                "name": "apply_patch",
                "input": f"*** Begin Patch\n*** Update File: {rel}\n@@\n{body}\n*** End Patch\n",
            },
        )
        self._line(
            "event_msg",
            {
                "type": "patch_apply_end",
                "call_id": call,
                "turn_id": self.turn,
                "stdout": f"Success. Updated the following files:\nM {rel}\n",
                "stderr": "",
                "success": True,
                "changes": {os.path.join(self.cwd, rel): {"type": "update", "unified_diff": body}},
            },
        )
        self._line(
            "response_item",
            {
                "type": "custom_tool_call_output",
                "call_id": call,
                "output": json.dumps({"output": "Success.", "metadata": {"exit_code": 0}}),
            },
        )
        return self

    def say(self, text: str) -> CodexSession:
        self._line(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            },
        )
        self._line("event_msg", {"type": "task_complete", "turn_id": self.turn})
        return self

    def write(self, codex_home: Path, age: timedelta | None = None) -> Path:
        d = self.start
        folder = codex_home / "sessions" / f"{d:%Y}" / f"{d:%m}" / f"{d:%d}"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"rollout-{d:%Y-%m-%dT%H-%M-%S}-{self.id}.jsonl"
        _dump(path, self.lines)
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            os.utime(path, (old, old))
        return path


def _dump(path: Path, records: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")
