"""Cursor's tool results, kept by our hook beside the database, for its transcripts.

Cursor's agent transcripts hold the tool calls but never their results; its hooks are handed
them (cursor.com/docs/agent/hooks: `postToolUse` {tool_name, tool_input, tool_output,
tool_use_id, duration}, `postToolUseFailure` {error_message, failure_type
error|timeout|permission_denied, is_interrupt}, `afterShellExecution` {command, output,
duration}, all with conversation_id and generation_id). `reos-memory hook cursor` appends one
compact line per such call (`record`) to a private log of ours,
`<db>.hook-tools/cursor/<conversation_id>.jsonl` (folders 0700, files 0600; redacted before it
is written; at most MAX_FILE a file; files idle past MAX_AGE are removed by the hook's queue
worker, `prune`).

The transcript adapter (`cursor.py`) pairs them (`take`): when it reads a call of a
conversation, it takes the next entry of that conversation's log not taken yet that fits the
call (the same tool, and the same command or file), and emits its result right after the call:
one session's events stay in the transcript's order, and since a call is read once (the
transcript's cursor), its result is emitted once. What was taken is kept in the transcript's
parse state (an offset into the log and the few entries taken past it, bounded, with the
log's identity: a log removed as idle and written again when its conversation is resumed is
read from its start). A call whose
result is not in the log yet (a transcript read while the agent still works) goes without one.

Where the log is: the adapter has no configuration, so the ingester puts the database's path
in the parse state of each read (`ParseState.db`, never stored); the transcript's parse state
keeps the log's path from its first call on.

A shell command can be reported twice, by `postToolUse` (tool `Shell`) and by
`afterShellExecution`: two entries of the other kind for the same command in the same
generation within TWIN_SECONDS are one run (taken together, the output of the longer).
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import json
import os
import re
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reos_memory.private_files import private_dir
from reos_memory.squirrel.ingest.cutting import MAX_TEXT, cut

FOLDER = "cursor"  # under `<db>.hook-tools/`
SUFFIX = ".hook-tools"
EVENTS = frozenset({"postToolUse", "postToolUseFailure", "afterShellExecution"})
MAX_FILE = 8 << 20  # a conversation's log stops growing here
MAX_AGE = 7 * 86400.0  # seconds a log is kept after its last line
MAX_FIELD = 2000  # characters of a command, a path, an error message
MAX_OUTPUT = MAX_TEXT  # characters of an output kept (its head and tail), as adapters hand on
SEAM_MARGIN = 200  # characters dropped on both sides of where a long output was first cut
MAX_TAKEN = 256  # entries taken past the offset, remembered per transcript
MAX_BEHIND = 64  # entries passed over by later calls before they are given up
TWIN_SECONDS = 10.0
SHELL_TOOLS = frozenset({"Shell", "run_terminal_cmd", "Bash", "shell", "terminal"})
FILE_KEYS = ("file_path", "path", "target_file", "targetFile", "relative_workspace_path")
_SAFE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,199}")


def dot_dir(home: str, env: Mapping[str, str]) -> str:
    """Where Cursor keeps `projects/<slug>/agent-transcripts`: `~/.cursor`, or CURSOR_CONFIG_DIR
    (the CLI's, which moves it); here since the hook reads it too, loading no more than this."""
    return env.get("CURSOR_CONFIG_DIR") or os.path.join(home, ".cursor")


def folder_of(db: str) -> Path | None:
    """The folder of a database's Cursor tool logs (None for an in-memory database)."""
    if not db or db == ":memory:":
        return None
    path = Path(db).expanduser().resolve()
    return path.with_name(path.name + SUFFIX) / FOLDER


def log_path(folder: Path, conversation: str) -> Path | None:
    """The log of one conversation; None for an id that is not a plain file name."""
    if not _SAFE_ID.fullmatch(conversation):
        return None
    return folder / f"{conversation}.jsonl"


# -- the hook's side: one line per tool call ------------------------------------------------------


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _field(value: Any) -> str | None:
    from reos_memory.squirrel.redaction import redact

    text = _text(value)
    return redact(text.strip()[:MAX_FIELD]) if text else None


def _output(value: Any) -> str | None:
    """The output, redacted, cut to its head and tail. Cut to twice the size first (the
    redaction of megabytes would cost the agent time), each half redacted, then cut again. A
    secret split by the first cut is in pieces too short to be known for one: SEAM_MARGIN
    characters on both sides of that seam (and the rest of the lines there) are dropped, since
    a half shrunk by its redaction brings them into what the second cut keeps."""
    from reos_memory.squirrel.redaction import redact

    if value is None or value == "":
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    if len(text) <= 2 * MAX_OUTPUT:
        return cut(redact(text), MAX_OUTPUT)
    head, tail = redact(text[:MAX_OUTPUT]), redact(text[-MAX_OUTPUT:])
    head = head[: max(0, len(head) - SEAM_MARGIN)]
    nl = head.rfind("\n", max(0, len(head) - MAX_FIELD))
    head = head[: nl + 1] if nl >= 0 else head
    tail = tail[SEAM_MARGIN:]
    nl = tail.find("\n", 0, MAX_FIELD)
    tail = tail[nl + 1 :] if nl >= 0 else tail
    return cut(head + "\n[...]\n" + tail, MAX_OUTPUT)


def entry(payload: dict[str, Any]) -> dict[str, Any] | None:
    """The line kept for one hook call; None for an event of another kind or a payload
    without what a result needs."""
    event = payload.get("hook_event_name")
    conversation = _text(payload.get("conversation_id"))
    if event not in EVENTS or conversation is None or not _SAFE_ID.fullmatch(conversation):
        return None
    inp = payload.get("tool_input")
    if isinstance(inp, str):  # MCP tools: a JSON string
        with contextlib.suppress(ValueError):
            inp = json.loads(inp)
    inp = inp if isinstance(inp, dict) else {}
    tool: Any = "Shell"
    if event == "afterShellExecution":
        command, output = payload.get("command"), payload.get("output")
    else:
        tool, command = payload.get("tool_name"), inp.get("command")
        output = payload.get("tool_output") if event == "postToolUse" else None
    if not _text(tool) or (event == "afterShellExecution" and not _text(command)):
        return None
    out: dict[str, Any] = {
        "hook_event_name": event,
        "conversation_id": conversation,
        "generation_id": _text(payload.get("generation_id")),
        "tool_name": str(tool)[:200],
        "tool_use_id": _text(payload.get("tool_use_id")),
        "command": _field(command),
        "path": _field(next((inp[k] for k in FILE_KEYS if _text(inp.get(k))), None)),
        "output": _output(output),
    }
    if event == "postToolUseFailure":
        failure = payload.get("failure_type")
        out["failure_type"] = failure if failure in ("timeout", "permission_denied") else "error"
        out["error_message"] = _field(payload.get("error_message"))
        out["is_interrupt"] = payload.get("is_interrupt") is True
    duration = payload.get("duration")
    if isinstance(duration, int | float) and not isinstance(duration, bool):
        out["duration"] = duration
    t = datetime.now(UTC)
    out["ts"] = t.strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"
    return {k: v for k, v in out.items() if v is not None}


def record(root: Path, payload: dict[str, Any]) -> bool:
    """Append a hook call's line to its conversation's log under `root` (`<db>.hook-tools`);
    False when there is nothing to keep or the log is full."""
    line = entry(payload)
    if line is None:
        return False
    folder = root / FOLDER
    path = log_path(folder, line["conversation_id"])
    if path is None:
        return False
    if not (private_dir(root) and private_dir(folder)):
        return False  # (a folder another user made first: its links would take our writes)
    data = (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode(
        "utf-8", "surrogateescape"
    )
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        if os.fstat(fd).st_size + len(data) > MAX_FILE:
            return False
        os.write(fd, data)  # one write of an appended line: never interleaved with another's
    finally:
        os.close(fd)
    return True


def prune(folder: Path, max_age: float = MAX_AGE) -> int:
    """Remove the logs idle past `max_age` seconds; returns how many."""
    gone = 0
    now = time.time()
    with contextlib.suppress(OSError):
        for p in folder.glob("*.jsonl"):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > max_age:
                    p.unlink()
                    gone += 1
    return gone


# -- the adapter's side: pairing entries with a transcript's calls ---------------------------------

# path -> (identity of what was read, end offset, [(start, end, entry)]): a log read once per
# process, then only what was appended
_READ: dict[
    str, tuple[tuple[int, int, str | None], int, list[tuple[int, int, dict[str, Any]]]]
] = {}
_HEAD_LINE = 1 << 16  # bytes of a log's first line that tell it from another of the same name


def _head(path: str) -> str | None:
    """What tells a log from another put under the same name later (one removed as idle, its
    conversation resumed since): a hash of its first line; None before it has one."""
    try:
        with open(path, "rb") as f:
            line = f.readline(_HEAD_LINE)
    except OSError:
        return None
    if not line.endswith(b"\n") and len(line) < _HEAD_LINE:
        return None
    return hashlib.sha256(line).hexdigest()[:32]


def _entries(path: str) -> tuple[str | None, list[tuple[int, int, dict[str, Any]]]]:
    """A log's identity (`_head`) and its entries."""
    try:
        st = os.stat(path)
    except OSError:
        return None, []
    head = _head(path)
    ident = (st.st_dev, st.st_ino, head)
    got = _READ.get(path)
    if got is None or got[0] != ident or got[1] > st.st_size:
        got = (ident, 0, [])
    _ident, end, entries = got
    if st.st_size > end:
        with open(path, "rb") as f:
            f.seek(end)
            data = f.read(MAX_FILE)
        pos = end
        for raw in data.splitlines(keepends=True):
            if not raw.endswith(b"\n"):
                break  # a line still being written: read next time
            start, pos = pos, pos + len(raw)
            with contextlib.suppress(ValueError):
                rec = json.loads(raw)
                if isinstance(rec, dict):
                    entries.append((start, pos, rec))
        end = pos
    if len(_READ) >= 16 and path not in _READ:
        _READ.clear()
    _READ[path] = (ident, end, entries)
    return head, entries


def _same_path(a: str | None, b: str | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or a.endswith("/" + b.lstrip("./")) or b.endswith("/" + a.lstrip("./"))


def _fits(e: dict[str, Any], name: str, command: str | None, file: str | None) -> bool:
    if command is not None:
        shell = e.get("hook_event_name") == "afterShellExecution"
        return e.get("command") == command and (shell or e.get("tool_name") in (name, "Shell"))
    if e.get("hook_event_name") == "afterShellExecution" or e.get("tool_name") != name:
        return False
    return _same_path(e.get("path"), file)


def _epoch(ts: Any) -> float | None:
    try:
        return datetime.fromisoformat(str(ts).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _twins(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """One shell run told by both postToolUse(-Failure) and afterShellExecution."""
    shell_a = a.get("hook_event_name") == "afterShellExecution"
    shell_b = b.get("hook_event_name") == "afterShellExecution"
    if shell_a == shell_b or a.get("generation_id") != b.get("generation_id"):
        return False
    ta, tb = _epoch(a.get("ts")), _epoch(b.get("ts"))
    return ta is not None and tb is not None and abs(ta - tb) <= TWIN_SECONDS


def _merged(a: dict[str, Any], b: dict[str, Any] | None) -> dict[str, Any]:
    """A run's result out of its one or two entries: the generic event's fields (a failure,
    an interrupt), the longer output."""
    if b is None:
        return a
    post, shell = (b, a) if a.get("hook_event_name") == "afterShellExecution" else (a, b)
    out = dict(post)
    if len(shell.get("output") or "") > len(post.get("output") or ""):
        out["output"] = shell["output"]
    return out


def take(
    state: dict[str, Any], name: str, command: str | None, file: str | None
) -> dict[str, Any] | None:
    """The result for a call read from a transcript, taken from the log at `state["path"]`
    (None when no entry not taken yet fits). `state` (the transcript's, plain JSON) remembers
    what was taken: `off`, the offset before which every entry is done with, and `taken`, the
    starts of the entries taken past it."""
    from reos_memory.squirrel.redaction import redact

    off = int(state.get("off", 0))
    taken = set(state.get("taken") or [])
    head, entries = _entries(str(state["path"]))
    known = state.get("head", head)  # (none kept by an older version: its log, if it is long)
    if (off or taken) and (head != known or off > (entries[-1][1] if entries else 0)):
        # another log under the name (the one read removed as idle, the conversation resumed
        # since): what was taken of the old one says nothing of it
        off, taken = 0, set()
    state["head"] = head
    ahead = entries[bisect.bisect_left(entries, off, key=lambda p: p[0]) :]
    pending = [p for p in ahead if p[0] not in taken]
    key = redact(command.strip()[:MAX_FIELD]) if command else None
    where = redact(file.strip()[:MAX_FIELD]) if file else None
    at = next((i for i, p in enumerate(pending) if _fits(p[2], name, key, where)), None)
    if at is None:
        return None
    start, _end, got = pending[at]
    taken.add(start)
    twin = None
    if key is not None:
        nxt = next((p for p in pending[at + 1 :] if p[2].get("command") == key), None)
        if nxt is not None and _twins(got, nxt[2]):
            taken.add(nxt[0])
            twin = nxt[2]
    # move the offset past what is done: the taken entries at its head, the entries passed over
    # by more than MAX_BEHIND later ones (results of calls the transcript lacks), and the
    # oldest taken ones past MAX_TAKEN
    given_up = pending[at - MAX_BEHIND][1] if at > MAX_BEHIND else off
    if len(taken) > MAX_TAKEN:
        given_up = max(given_up, sorted(taken)[len(taken) - MAX_TAKEN])
    for s, e, _rec in ahead:
        if s < given_up or s in taken:
            off = e
            taken.discard(s)
        else:
            break
    state["off"] = off
    state["taken"] = sorted(taken)
    return _merged(got, twin)
