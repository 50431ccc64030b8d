"""opencode: `~/.local/share/opencode/opencode.db`, the SQLite database of every session of every
project (../shared/formats/opencode/NOTES.md, "Tables and JSON shapes"), created with opencode's
own tables when missing; a session is added to the database that is there.

A session is a `session` row (its `directory` the project), its `message` rows (a user message
per prompt, the assistant message answering it) and their `part` rows: the prompt's `text`, and
for the answer a `step-start`, a `tool` part per command (`bash`, completed, its exit code in
`state.metadata.exit`) or edit (`edit`), a `text` part per thing said and a `step-finish`.
Every row is written final, as opencode leaves it once the answer is done.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import string
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

# opencode's tables as drizzle creates them from packages/opencode/src/session/session.sql.ts
# (anomalyco/opencode @ 063e8306d9895af9bdd175306cfa4fa3291fd83a; `Timestamps` from
# storage/schema.sql.ts) and the `project` table they reference
DDL = """
CREATE TABLE `project` (
    `id` text PRIMARY KEY,
    `worktree` text NOT NULL,
    `vcs` text,
    `name` text,
    `time_created` integer NOT NULL,
    `time_updated` integer NOT NULL
);
CREATE TABLE `session` (
    `id` text PRIMARY KEY,
    `project_id` text NOT NULL,
    `workspace_id` text,
    `parent_id` text,
    `slug` text NOT NULL,
    `directory` text NOT NULL,
    `path` text,
    `title` text NOT NULL,
    `version` text NOT NULL,
    `share_url` text,
    `summary_additions` integer,
    `summary_deletions` integer,
    `summary_files` integer,
    `summary_diffs` text,
    `cost` real DEFAULT 0 NOT NULL,
    `tokens_input` integer DEFAULT 0 NOT NULL,
    `tokens_output` integer DEFAULT 0 NOT NULL,
    `tokens_reasoning` integer DEFAULT 0 NOT NULL,
    `tokens_cache_read` integer DEFAULT 0 NOT NULL,
    `tokens_cache_write` integer DEFAULT 0 NOT NULL,
    `revert` text,
    `permission` text,
    `goal` text,
    `agent` text,
    `model` text,
    `time_created` integer NOT NULL,
    `time_updated` integer NOT NULL,
    `time_compacting` integer,
    `time_archived` integer,
    CONSTRAINT `fk_session_project_id_project_id_fk` FOREIGN KEY (`project_id`) REFERENCES `project`(`id`) ON DELETE CASCADE
);
CREATE INDEX `session_project_idx` ON `session` (`project_id`);
CREATE INDEX `session_workspace_idx` ON `session` (`workspace_id`);
CREATE INDEX `session_parent_idx` ON `session` (`parent_id`);
CREATE TABLE `message` (
    `id` text PRIMARY KEY,
    `session_id` text NOT NULL,
    `time_created` integer NOT NULL,
    `time_updated` integer NOT NULL,
    `data` text NOT NULL,
    CONSTRAINT `fk_message_session_id_session_id_fk` FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON DELETE CASCADE
);
CREATE INDEX `message_session_time_created_id_idx` ON `message` (`session_id`,`time_created`,`id`);
CREATE TABLE `part` (
    `id` text PRIMARY KEY,
    `message_id` text NOT NULL,
    `session_id` text NOT NULL,
    `time_created` integer NOT NULL,
    `time_updated` integer NOT NULL,
    `data` text NOT NULL,
    CONSTRAINT `fk_part_message_id_message_id_fk` FOREIGN KEY (`message_id`) REFERENCES `message`(`id`) ON DELETE CASCADE
);
CREATE INDEX `part_message_id_id_idx` ON `part` (`message_id`,`id`);
CREATE INDEX `part_session_idx` ON `part` (`session_id`);
"""
VERSION = "1.2.10"
MODEL = {"providerID": "anthropic", "modelID": "claude-sonnet-4-5"}
TOKENS = {"input": 900, "output": 120, "reasoning": 0, "cache": {"read": 0, "write": 0}}


def database(path: Path) -> sqlite3.Connection:
    """The opencode database at `path`, created with opencode's tables (in WAL mode, as
    opencode keeps it) when it is not there."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fresh = not path.exists()
    conn = sqlite3.connect(path)
    if fresh:
        conn.execute("PRAGMA journal_mode = WAL")
        conn.executescript(DDL)
    return conn


def put_session(
    conn: sqlite3.Connection,
    sid: str,
    project_id: str,
    directory: str,
    created: int,
    updated: int,
    *,
    parent_id: str | None = None,
    slug: str = "session",
    title: str = "New session",
    version: str = VERSION,
) -> None:
    """A `session` row (and its project's, if new); a session already there is replaced."""
    conn.execute(
        "INSERT OR IGNORE INTO project (id, worktree, time_created, time_updated)"
        " VALUES (?, ?, ?, ?)",
        (project_id, directory, created, created),
    )
    conn.execute(
        "INSERT OR REPLACE INTO session (id, project_id, parent_id, slug, directory, title,"
        " version, time_created, time_updated) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (sid, project_id, parent_id, slug, directory, title, version, created, updated),
    )


def put_message(
    conn: sqlite3.Connection, mid: str, sid: str, created: int, updated: int, data: dict[str, Any]
) -> None:
    """A `message` row (`data`: its info without the ids); one already there is updated."""
    _upsert(
        conn,
        "message",
        id=mid,
        session_id=sid,
        time_created=created,
        time_updated=updated,
        data=json.dumps(data),
    )


def put_part(
    conn: sqlite3.Connection,
    pid: str,
    mid: str,
    sid: str,
    created: int,
    updated: int,
    data: dict[str, Any],
) -> None:
    """A `part` row (`data`: the part without the ids); one already there is updated."""
    _upsert(
        conn,
        "part",
        id=pid,
        message_id=mid,
        session_id=sid,
        time_created=created,
        time_updated=updated,
        data=json.dumps(data),
    )


def _upsert(conn: sqlite3.Connection, table: str, **row: Any) -> None:
    """A row put in, or its times and data updated as opencode updates a row in place."""
    conn.execute(
        f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})"
        " ON CONFLICT(id) DO UPDATE SET time_updated = excluded.time_updated,"
        " data = excluded.data",
        tuple(row.values()),
    )


_ALNUM = string.ascii_letters + string.digits


def _ms(t: datetime) -> int:
    return int(t.timestamp() * 1000)


def _shifted(value: Any, by: int, timed: bool = False) -> Any:
    """`value` with every time (an int under a `time` key) moved by `by` ms."""
    if isinstance(value, dict):
        return {k: _shifted(v, by, timed or k == "time") for k, v in value.items()}
    if isinstance(value, list):
        return [_shifted(v, by, timed) for v in value]
    if timed and isinstance(value, int) and not isinstance(value, bool):
        return value + by
    return value


class Session:
    agent = "opencode"

    def __init__(self, cwd: Path, start: datetime) -> None:
        self.cwd = str(cwd)
        self.start = self.t = start
        self._n = 0
        self._rng = random.Random(f"{cwd}{start.isoformat()}")
        self.id = self._id("ses")
        # [message id, created ms, data, [(part id, ms, data)]]
        self.messages: list[tuple[str, int, dict[str, Any], list[tuple[str, int, dict[str, Any]]]]]
        self.messages = []
        self._user: str | None = None
        self._answer: dict[str, Any] | None = None  # the assistant message being written

    def _id(self, prefix: str) -> str:
        """An id as opencode makes them (`Identifier.ascending`): sorting by time."""
        self._n += 1
        n = (_ms(self.t) * 0x1000 + self._n) % (1 << 48)
        return f"{prefix}_{n:012x}" + "".join(self._rng.choice(_ALNUM) for _ in range(14))

    def _tick(self, seconds: int = 5) -> int:
        self.t += timedelta(seconds=seconds)
        return _ms(self.t)

    def _end_answer(self) -> None:
        if self._answer is None:
            return
        at = self._tick(1)
        self._answer["time"]["completed"] = at
        parts = self.messages[-1][3]
        parts.append(
            (
                self._id("prt"),
                at,
                {
                    "type": "step-finish",
                    "reason": "stop",
                    "cost": 0.01,
                    "tokens": dict(TOKENS),
                },
            )
        )
        self._answer = None

    def _part(self, data: dict[str, Any]) -> None:
        """A part of the assistant's answer (begun when there is none)."""
        if self._answer is None:
            at = self._tick(1)
            self._answer = {
                "role": "assistant",
                "parentID": self._user,
                "time": {"created": at},
                "modelID": MODEL["modelID"],
                "providerID": MODEL["providerID"],
                "mode": "build",
                "agent": "build",
                "path": {"cwd": self.cwd, "root": self.cwd},
                "cost": 0.01,
                "tokens": dict(TOKENS),
                "finish": "stop",
            }
            step = (self._id("prt"), at, {"type": "step-start"})
            self.messages.append((self._id("msg"), at, self._answer, [step]))
        self.messages[-1][3].append((self._id("prt"), _ms(self.t), data))

    def user(self, text: str) -> Session:
        self._end_answer()
        at = self._tick()
        data = {"role": "user", "time": {"created": at}, "agent": "build", "model": MODEL}
        self._user = self._id("msg")
        self.messages.append(
            (self._user, at, data, [(self._id("prt"), at, {"type": "text", "text": text})])
        )
        return self

    def say(self, text: str) -> Session:
        begun = self._tick()
        ended = self._tick(2)
        self._part({"type": "text", "text": text, "time": {"start": begun, "end": ended}})
        return self

    def _tool(
        self, tool: str, inp: dict[str, Any], output: str, title: str, metadata: dict[str, Any]
    ) -> None:
        begun = self._tick()
        ended = self._tick(2)
        self._part(
            {
                "type": "tool",
                "callID": f"toolu_{self._id('call')[5:]}",
                "tool": tool,
                "state": {
                    "status": "completed",
                    "input": inp,
                    "output": output,
                    "title": title,
                    "metadata": metadata,
                    "time": {"start": begun, "end": ended},
                },
            }
        )

    def run(self, command: str, output: str, exit_code: int = 0) -> Session:
        what = f"Run {command}"
        self._tool(
            "bash",
            {"command": command, "description": what},
            output,
            what,
            {"output": output, "exit": exit_code, "description": what},
        )
        return self

    def edit(self, path: str, old: str, new: str) -> Session:
        full = os.path.join(self.cwd, path)
        self._tool(
            "edit",
            {"filePath": full, "oldString": old, "newString": new},
            "",
            path,
            {"diagnostics": {}},
        )
        return self

    def write(self, home: Path, age: timedelta | None = None) -> Path:
        self._end_answer()
        path = home / ".local" / "share" / "opencode" / "opencode.db"
        first, last = _ms(self.start), _ms(self.t)
        by = 0
        if age is not None:  # every row that long ago at least: read (settled) and idle
            by = min(0, _ms(datetime.now(UTC) - age) - last)
        project = hashlib.sha1(self.cwd.encode()).hexdigest()
        title = next(
            (p[2]["text"] for m in self.messages for p in m[3] if m[2]["role"] == "user"),
            "New session",
        )
        conn = database(path)
        with conn:
            put_session(
                conn,
                self.id,
                project,
                self.cwd,
                first + by,
                last + by,
                slug=self.id[-8:].lower(),
                title=title[:60],
            )
            for mid, created, data, parts in self.messages:
                data = _shifted(data, by)
                t = data["time"]
                put_message(
                    conn, mid, self.id, created + by, t.get("completed", t["created"]), data
                )
                for pid, at, pdata in parts:
                    put_part(conn, pid, mid, self.id, at + by, at + by, _shifted(pdata, by))
        conn.close()
        if age is not None:
            old = (datetime.now(UTC) - age).timestamp()
            os.utime(path, (old, old))
        return path
