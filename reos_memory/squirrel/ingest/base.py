"""The interface every agent adapter implements, and what they share.

An adapter reads one record at a time and returns the Squirrel events it stands for. Everything
it must remember between records (the session, its working directory, which call ids belong to
which tool, a half-read block) lives in `ParseState`, which is plain JSON and is stored with the
file's cursor, so that parsing resumes after a restart exactly where it stopped.

Where the records come from is the adapter's too (`Adapter.records`): by default the lines of a
JSONL log, each one JSON record, the cursor a byte offset. A log of another shape (Aider's
Markdown, a JSON document rewritten whole, a SQLite database holding many sessions) yields its
own records with its own positions: any whole number that grows as the log does and that the
adapter can resume from.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

import msgspec

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import reader

# (in a module of their own: the Cursor hook cuts outputs without loading this one)
from reos_memory.squirrel.ingest.cutting import MAX_TEXT as MAX_TEXT
from reos_memory.squirrel.ingest.cutting import cut as cut

# an agent's summary of its session is read whole (Claude Code's "Errors and fixes" sit midway)
SUMMARY_TEXT = 60_000
MAX_CALLS = 512  # call ids remembered for pairing results with their calls (inline sidechains
# of 1.0.x interleave many)


@dataclass
class ParseState:
    """What an adapter knows about a file after the records it has read."""

    session_id: str | None = None
    cwd: str | None = None
    calls: dict[str, str] = field(default_factory=dict)  # call id -> tool name
    counts: dict[str, int] = field(default_factory=dict)
    # the adapter's own (plain JSON): a block still being read, a replayed document's state...
    extra: dict[str, Any] = field(default_factory=dict)
    # sessions other than `session_id` that this log holds (a database, a history file of many
    # runs), with the time of their latest event: each ends once idle like a file would
    live: dict[str, str] = field(default_factory=dict)
    # sessions the log itself says are over (a new run started after them): ended once stored
    finished: list[str] = field(default_factory=list)
    # the database the records go to, set by the ingester for this read (never stored): an
    # adapter that reads a companion log of ours kept beside it finds it there
    db: str | None = None

    def count(self, what: str, n: int = 1) -> None:
        self.counts[what] = self.counts.get(what, 0) + n

    def remember_call(self, call_id: str, name: str) -> None:
        self.calls[call_id] = name
        if len(self.calls) > MAX_CALLS:
            for k in list(self.calls)[: len(self.calls) - MAX_CALLS]:
                del self.calls[k]

    def to_json(self) -> str:
        return json.dumps(
            {
                "session_id": self.session_id,
                "cwd": self.cwd,
                "calls": self.calls,
                "counts": self.counts,
                **({"extra": self.extra} if self.extra else {}),
                **({"live": self.live} if self.live else {}),
                **({"finished": self.finished} if self.finished else {}),
            },
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str | None) -> ParseState:
        d = json.loads(text) if text else {}
        return cls(
            session_id=d.get("session_id"),
            cwd=d.get("cwd"),
            calls=dict(d.get("calls") or {}),
            counts=dict(d.get("counts") or {}),
            extra=dict(d.get("extra") or {}),
            live=dict(d.get("live") or {}),
            finished=list(d.get("finished") or []),
        )


@dataclass
class Parsed:
    """The events of one record, for the session they belong to (and that session's working
    directory, when a log holds sessions of several projects)."""

    session_id: str
    event: EventIn
    cwd: str | None = None


@dataclass(frozen=True)
class Place:
    """The machine's conventions an agent's default locations follow: the OS (`sys.platform`:
    linux, darwin, win32), the home directory and the environment (XDG_*, APPDATA, LOCALAPPDATA,
    the agents' own *_HOME variables)."""

    platform: str
    home: str
    env: Mapping[str, str]

    @classmethod
    def here(cls) -> Place:
        return cls(sys.platform, os.path.expanduser("~"), dict(os.environ))

    def var(self, name: str) -> str | None:
        value = self.env.get(name)
        return value if value else None

    def config_dir(self) -> str:
        """Where desktop apps keep their settings: `~/.config` (XDG_CONFIG_HOME) on Linux,
        `~/Library/Application Support` on macOS, `%APPDATA%` on Windows."""
        if self.platform == "darwin":
            return os.path.join(self.home, "Library", "Application Support")
        if self.platform == "win32":
            return self.var("APPDATA") or os.path.join(self.home, "AppData", "Roaming")
        return self.var("XDG_CONFIG_HOME") or os.path.join(self.home, ".config")

    def data_dir(self) -> str:
        """Where apps keep their data: `~/.local/share` (XDG_DATA_HOME) on Linux, `~/Library/
        Application Support` on macOS, `%LOCALAPPDATA%` on Windows."""
        if self.platform == "darwin":
            return os.path.join(self.home, "Library", "Application Support")
        if self.platform == "win32":
            return self.var("LOCALAPPDATA") or os.path.join(self.home, "AppData", "Local")
        return self.var("XDG_DATA_HOME") or os.path.join(self.home, ".local", "share")

    def vscode_user_dirs(self, apps: tuple[str, ...] = ("Code", "Code - Insiders")) -> list[str]:
        """The `User` settings directories of VS Code-like editors (`Cursor`, `Windsurf` ...)."""
        return [os.path.join(self.config_dir(), app, "User") for app in apps]


@dataclass(slots=True)
class Record:
    """One record of a log as read: where the next one starts, and its content (None for a
    line that holds nothing to parse; `malformed` when that is because it could not be read)."""

    end: int
    data: dict[str, Any] | None
    malformed: bool = False


_decode = msgspec.json.Decoder().decode


def json_record(data: bytes | None) -> dict[str, Any] | None:
    """A JSON object from one line; None for anything else (never an error)."""
    if not data or not data.strip():
        return None
    try:
        rec = _decode(data)
    except Exception:  # not JSON, bad UTF-8, nested too deep: a malformed line, never fatal
        return None
    return rec if isinstance(rec, dict) else None


class Adapter:
    """One agent's session-log format. The defaults read a JSONL log: one JSON record a line,
    the cursor a byte offset; formats of another shape override `records` (and say how a log of
    theirs is recognised by its name in `claims`)."""

    name: ClassVar[str]
    # whether a log that got shorter was rewritten (true of append-only logs; a database or a
    # document rewritten whole shrinks as it is compacted or edited)
    shrink_means_rewritten: ClassVar[bool] = True

    def sniff(self, record: dict[str, Any]) -> bool:
        """Whether the first records of a JSONL file are in this format."""
        return False

    def claims(self, path: str) -> bool:
        """Whether a file that is not a `.jsonl` log is one of this format's, by its name and
        place (cheap: called for every file under the directories searched)."""
        return False

    def roots(self, place: Place) -> list[str]:
        """Where this agent keeps its logs on this machine by default (files or directories;
        ones that do not exist are left out by the caller)."""
        return []

    def in_project(self, root: str) -> list[str]:
        """Logs this agent keeps inside a project's directory rather than in a home of its own
        (found for the projects the database knows)."""
        return []

    def begin(self, path: str, state: ParseState) -> None:
        """Called once before a log's first record (also after it was rewritten)."""

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        """The records from `position` on, about `max_bytes` of them (at least one)."""
        for line in reader.lines(path, position, max_bytes):
            if line.data is None:
                yield Record(line.end, None, True)
            elif not line.data.strip() or self.bookkeeping(line.data):
                yield Record(line.end, None)
            else:
                rec = json_record(line.data)
                yield Record(line.end, rec, rec is None)

    def bookkeeping(self, line: bytes) -> bool:
        """A line known to hold nothing to learn from, recognised without parsing it."""
        return False

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        """What tells this log from another put under the same name: the hash of its first
        `size` bytes (a young log's identity grows with it up to HEAD_BYTES)."""
        return reader.head(path, size)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        """The events a record stands for (none for bookkeeping records); unknown record types
        are counted in `state.counts['skipped']`, never an error."""
        raise NotImplementedError

    def finish(self, state: ParseState) -> list[Parsed]:
        """Events held back until the session ends (a block whose end is the next block's
        start); called when the session is ended."""
        return []


def as_text(content: Any) -> str:
    """Text of a message or result body that is a string or a list of typed blocks."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                t = block.get("text")
                if isinstance(t, str):
                    parts.append(t)
        return "\n".join(parts)
    if isinstance(content, dict):
        t = content.get("text")
        return t if isinstance(t, str) else ""
    return str(content)


_EXIT = re.compile(r"^(?:Error: )?Exit code (-?\d+)\b")


def exit_code_in(text: str) -> int | None:
    """The exit code a tool result announces on its first line ("Exit code 2 ...")."""
    m = _EXIT.match(text.lstrip())
    return int(m.group(1)) if m else None


def iso_ms(ms: Any) -> str | None:
    """An ISO-8601 UTC time (milliseconds, `Z`) from epoch milliseconds, as the agents that
    keep times as numbers (VS Code, opencode) write them; None for anything else."""
    if not isinstance(ms, int | float) or isinstance(ms, bool) or ms <= 0:
        return None
    from datetime import UTC, datetime

    try:
        t = datetime.fromtimestamp(ms / 1000, UTC)
    except (OverflowError, OSError, ValueError):
        return None
    return t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


def first_line(text: str, limit: int = 200) -> str:
    line = text.strip().split("\n", 1)[0]
    return line[:limit]


def string(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def call_event(
    state: ParseState,
    ts: str | None,
    name: str,
    call_id: str | None,
    *,
    command: str | None = None,
    file: str | None = None,
    summary: str | None = None,
    detail: str | None = None,
) -> EventIn:
    """A tool call, counted and remembered (its result names the tool by the call id)."""
    state.count("tool_calls")
    state.count(f"tool:{name}")
    if call_id:
        state.remember_call(call_id, name)
    return EventIn(
        role="assistant",
        kind="tool_call",
        ts=ts,
        tool_name=name[:200],
        call_id=call_id,
        command=command,
        file=file,
        summary=summary,
        raw_snippet=detail,
    )


def compaction_event(ts: str | None, summary: str) -> EventIn:
    """The agent's own summary of the session so far: evidence, never a request."""
    return EventIn(
        role="system",
        kind="message",
        ts=ts,
        origin="compaction",
        summary="compaction summary",
        text=cut(summary, SUMMARY_TEXT),
    )


def first_added_line(old: str | None, new: str) -> str | None:
    """The first line of code an edit adds (not blank, not only a comment or a bracket), when
    the text it replaces is known."""
    if old is None:
        return None
    before = {line.strip() for line in old.splitlines()}
    for line in new.splitlines():
        s = line.strip()
        if s and s not in before and len(s) > 3 and not _NOT_CODE.match(s):
            return s[:120]
    return None


# a comment, or an import (a Go import block's bare `"bytes"`): not what an edit is about
_NOT_CODE = re.compile(r"(?://|#|/\*|\*|--)|(?:import|from|using|require|use)\b|\"[^\"]*\"$")


def args_call_event(
    state: ParseState,
    ts: str | None,
    name: str,
    call_id: str | None,
    args: dict[str, Any],
    *,
    command: str | None = None,
    file: str | None = None,
    written: str | None = None,
) -> EventIn:
    """A tool call told by its arguments: an edit by what it put in the file (`written`, not
    what it took out: the writer compares it with the failing attempts to see what changed),
    a command by itself, any other call by its arguments as JSON."""
    summary = string(args.get("description")) or string(args.get("pattern"))
    detail = None
    if written is not None:
        summary = f"{name} {os.path.basename(file)}" if file else name
        added = first_added_line(string(args.get("old_string")), written)
        if added:  # what the edit puts in, for a reader of the session (and of its rejection)
            summary = f"{summary}: + {added}"
        detail = written[:2000]
    elif command is None:
        detail = json.dumps(args, ensure_ascii=False)[:2000]
    return call_event(
        state,
        ts,
        name,
        call_id,
        command=command,
        file=file,
        summary=first_line(summary) if summary else None,
        detail=detail,
    )


def result_event(
    state: ParseState,
    ts: str | None,
    name: str | None,
    call_id: str | None,
    text: str | None,
    *,
    exit_code: int | None = None,
    is_error: bool | None = None,
    command: str | None = None,
    file: str | None = None,
    rejected: bool = False,
) -> EventIn:
    """A tool result; a failed one is counted in `errors`."""
    if is_error or exit_code not in (None, 0):
        state.count("errors")
    return EventIn(
        role="tool",
        kind="tool_result",
        ts=ts,
        tool_name=name,
        call_id=call_id,
        command=command,
        file=file,
        text=cut(text),
        exit_code=exit_code,
        is_error=is_error,
        rejected=rejected,
    )


def system_event(ts: str | None, summary: str) -> EventIn:
    """Something that happened to the session, said by no one (an interrupt, an API failure)."""
    return EventIn(role="system", kind="message", ts=ts, summary=summary)


def interrupt_event(state: ParseState, ts: str | None) -> EventIn:
    """The user stopping the assistant mid-turn, counted in `interrupts`."""
    state.count("interrupts")
    return system_event(ts, "the user interrupted the assistant")
