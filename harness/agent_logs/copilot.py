"""VS Code + GitHub Copilot Chat: the chat session store's mutation log,
`~/.config/Code/User/workspaceStorage/<workspace id>/chatSessions/<session>.jsonl`, beside the
workspace's `workspace.json` naming its folder (../shared/formats/vscode-copilot-chat/NOTES.md).

The log is written as VS Code writes it while a chat runs: the whole session first (`kind` 0,
no requests yet), then each prompt pushed onto `requests` (`kind` 2), each response part pushed
onto that request's `response` (a terminal command first pushed running, then set in place once
it completed, with its output and exit code: `kind` 1), and the request sealed by setting its
`result` and `modelState` (complete) when the next prompt comes or the session is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

_COMPLETE = 1  # ResponseModelState.Complete
_AUTO_APPROVED = 4  # ConfirmedReason {type: ToolConfirmKind.ConfirmationNotNeeded}


def user_dir(home: Path) -> Path:
    """`<Code User>` on Linux."""
    return home / ".config" / "Code" / "User"


def workspace_dir(code_user: Path, folder: Path, ws_id: str | None = None) -> Path:
    """`<Code User>/workspaceStorage/<id>/` of the workspace that opened `folder`, with its
    `workspace.json` (the id, VS Code's hash of the folder, is made up from the folder here)."""
    uri = folder.as_uri()
    ws = code_user / "workspaceStorage" / (ws_id or hashlib.md5(uri.encode()).hexdigest())
    ws.mkdir(parents=True, exist_ok=True)
    (ws / "workspace.json").write_text(json.dumps({"folder": uri}))
    return ws


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


class Session:
    agent = "copilot"

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.id = str(uuid.uuid4())
        self.cwd = Path(cwd)
        self.t = start
        self.lines: list[dict[str, Any]] = [
            {
                "kind": 0,
                "v": {
                    "version": 3,
                    "sessionId": self.id,
                    "creationDate": _ms(start),
                    "initialLocation": "panel",
                    "responderUsername": "GitHub Copilot",
                    "requests": [],
                    "pendingRequests": [],
                    "hasPendingEdits": False,
                    "inputState": {"inputText": "", "attachments": [], "mode": {"id": "agent"}},
                },
            }
        ]
        self.request = -1  # the index of the request open, -1 before the first
        self.parts = 0  # its response parts so far
        self.sealed = True
        self._calls = 0

    def _tick(self, seconds: int = 5) -> int:
        self.t += timedelta(seconds=seconds)
        return _ms(self.t)

    def _seal(self) -> list[dict[str, Any]]:
        """The lines that end the open request (its result, then its state: complete)."""
        if self.sealed:
            return []
        at = self._tick(1)
        k = ["requests", self.request]
        return [
            {"kind": 1, "k": [*k, "result"], "v": {"timings": {"totalElapsed": 1000}}},
            {"kind": 1, "k": [*k, "modelState"], "v": {"value": _COMPLETE, "completedAt": at}},
        ]

    def _open(self, text: str) -> None:
        self.lines += self._seal()
        self.request += 1
        self.parts = 0
        self.sealed = False
        rid = f"request_{uuid.uuid4()}"
        self.lines.append(
            {
                "kind": 2,
                "k": ["requests"],
                "v": [
                    {
                        "requestId": rid,
                        "timestamp": self._tick(),
                        "message": {"text": text, "parts": [{"kind": "text", "text": text}]},
                        "variableData": {"variables": []},
                        "agent": {"id": "github.copilot.editsAgent"},
                        "modelId": "copilot/gpt-5",
                        "modeInfo": {"kind": "agent"},
                        "response": [],
                        "responseId": f"response_{uuid.uuid4()}",
                        "modelState": {"value": 0},
                        "followups": [],
                        "contentReferences": [],
                        "codeCitations": [],
                    }
                ],
            }
        )

    def _push(self, *parts: dict[str, Any]) -> int:
        """Response parts pushed onto the open request; the index of the first."""
        if self.sealed:
            self._open("")
        self._tick()
        self.lines.append(
            {"kind": 2, "k": ["requests", self.request, "response"], "v": list(parts)}
        )
        self.parts += len(parts)
        return self.parts - len(parts)

    def _call_id(self) -> str:
        self._calls += 1
        return f"call_{uuid.uuid4().hex[:12]}{self._calls}"

    def user(self, text: str) -> Session:
        self._open(text)
        return self

    def say(self, text: str) -> Session:
        self._push({"value": text, "supportThemeIcons": False, "supportHtml": False})
        return self

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        terminal: dict[str, Any] = {
            "kind": "terminal",
            "commandLine": {"original": command},
            "cwd": {"$mid": 1, "scheme": "file", "path": self.cwd.as_posix()},
            "language": "sh",
        }
        part: dict[str, Any] = {
            "kind": "toolInvocationSerialized",
            "toolId": "run_in_terminal",
            "toolCallId": self._call_id(),
            "invocationMessage": {"value": f"Running `{command}`"},
            "isComplete": False,
            "isConfirmed": {"type": _AUTO_APPROVED},
            "source": {"type": "internal"},
            "toolSpecificData": terminal,
        }
        at = self._push(part)
        ended = self._tick(2)
        done = {
            **part,
            "isComplete": True,
            "pastTenseMessage": {"value": f"Ran `{command}`"},
            "toolSpecificData": {
                **terminal,
                "terminalCommandOutput": {"text": output, "lineCount": output.count("\n") + 1},
                "terminalCommandState": {
                    "exitCode": exit_code,
                    "timestamp": ended,
                    "duration": 2000,
                },
            },
        }
        self.lines.append({"kind": 1, "k": ["requests", self.request, "response", at], "v": done})
        return self

    def edit(self, path: str, old: str, new: str) -> Session:
        full = self.cwd / path
        uri = {"$mid": 1, "scheme": "file", "path": full.as_posix()}
        link = f"[]({full.as_uri()})"
        self._push(
            {
                "kind": "toolInvocationSerialized",
                "toolId": "copilot_replaceString",
                "toolCallId": self._call_id(),
                "invocationMessage": {"value": f"Editing {link}"},
                "pastTenseMessage": {"value": f"Edited {link}"},
                "isComplete": True,
                "isConfirmed": {"type": _AUTO_APPROVED},
                "source": {"type": "internal"},
                "toolSpecificData": {
                    "kind": "input",
                    "rawInput": {"filePath": str(full), "oldString": old, "newString": new},
                },
            },
            {
                "kind": "textEditGroup",
                "uri": uri,
                "edits": [
                    [
                        {
                            "range": {
                                "startLineNumber": 1,
                                "startColumn": 1,
                                "endLineNumber": old.count("\n") + 1,
                                "endColumn": len(old.rsplit("\n", 1)[-1]) + 1,
                            },
                            "text": new,
                        }
                    ]
                ],
                "done": True,
            },
            {"kind": "textEditGroup", "uri": uri, "edits": [[]], "done": True},
            {"kind": "undoStop", "id": str(uuid.uuid4())},
        )
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        ws = workspace_dir(user_dir(home), self.cwd)
        path = ws / "chatSessions" / f"{self.id}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        t = self.t
        lines = self.lines + self._seal()  # the last request ends as the session is written
        self.t = t
        with open(path, "w", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            for p in (path, ws / "workspace.json"):
                os.utime(p, (old, old))
        return path
