"""Cursor: three generations of session logs behind one adapter (field notes:
/work/shared/formats/cursor/NOTES.md).

* Agent transcripts (current), `~/.cursor/projects/<slug>/agent-transcripts/<id>.jsonl` (CLI),
  `<id>/<id>.jsonl` (IDE) and `<parent>/subagents/<child>.jsonl`: one message a line,
  `{"role": "user"|"assistant", "message": {"content": [blocks]}}` with Anthropic-style `text`,
  `tool_use` and `tool_result` blocks; no ids or times on the lines, the user's words wrapped in
  `<user_query>` after a `<timestamp>` line (the only time in the file); `turn_ended` markers.
  The session is the file's id (a subagent's, its parent's); its folder is the `<slug>` (the
  path with each `/` turned into `-`), found again on disk.
* Hook payloads (Cursor's hooks docs), when a hook appends what it is handed to a JSONL file:
  `{hook_event_name, conversation_id, generation_id, workspace_roots, ...}`; the failures of
  `postToolUseFailure` (`failure_type` error/timeout/permission_denied, `is_interrupt`) and the
  end of a turn (`stop` aborted/error) become errors, rejections and interrupts.
* The SQLite databases (`state.vscdb`) of 2024 (`ItemTable`) and 2025 (`cursorDiskKV`):
  `cursor_db`.

No exit codes anywhere: a command's outcome is read from its output downstream (or from an
"exit code: N" line in it).

Real transcripts hold no tool results. Our Cursor hook keeps them, from `postToolUse`,
`postToolUseFailure` and `afterShellExecution`, in a log of ours beside the database
(`cursor_sidecar`); a transcript's call is followed by its result from there, paired in order
by tool and command or file (see that module). A transcript that has a call's result as well
gives it once (the one from the hook log, which came first).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import cursor_db, cursor_sidecar, reader
from reos_memory.squirrel.ingest.base import (
    Adapter,
    Parsed,
    ParseState,
    Place,
    Record,
    as_text,
    call_event,
    cut,
    exit_code_in,
    first_line,
    interrupt_event,
    iso_ms,
    result_event,
    string,
)

_TS = re.compile(r"<timestamp>\s*(.*?)\s*</timestamp>", re.S)
_QUERY = re.compile(r"<user_query>\s*(.*?)\s*</user_query>", re.S)
_TAGGED = re.compile(r"^\s*<([a-z_]+)>.*?</\1>\s*", re.S)
# hidden thinking: an assistant text block is, or ends with, this marker
_REDACTED = re.compile(r"\s*\[REDACTED\]\s*$")
_PATCHED = re.compile(r"(?m)^\*\*\* (?:Update|Add|Delete) File: (.+?)\s*$")
_EXIT = re.compile(r"(?im)^\s*exit code:?\s*(-?\d+)\b")
_FILE_KEYS = ("file_path", "path", "target_file", "targetFile", "relative_workspace_path")
_SHELL_TOOLS = frozenset({"Shell", "run_terminal_cmd", "Bash", "shell", "terminal"})
MAX_OPEN = 32  # calls awaiting their result (results name no call id: paired in order)
ROLES = frozenset({"user", "assistant"})


class Cursor(Adapter):
    name = "cursor"
    # a database shrinks when it is vacuumed; a transcript's start tells a replaced one
    shrink_means_rewritten = False

    def roots(self, place: Place) -> list[str]:
        # NOTES "Where the files live": the VS Code-style user dir (`%APPDATA%\Cursor\User`,
        # `~/Library/Application Support/Cursor/User`, `~/.config/Cursor/User`) and, on every
        # OS, `~/.cursor/projects/<slug>/agent-transcripts`; no *_HOME variable is documented
        out = []
        for user in place.vscode_user_dirs(("Cursor",)):
            out += [os.path.join(user, "workspaceStorage"), os.path.join(user, "globalStorage")]
        # the CLI's CURSOR_CONFIG_DIR moves `~/.cursor` (third-party readers of the CLI)
        out.append(os.path.join(cursor_sidecar.dot_dir(place.home, place.env), "projects"))
        return out

    def claims(self, path: str) -> bool:
        return is_database(path) or is_transcript(path)

    def sniff(self, record: dict[str, Any]) -> bool:
        if "hook_event_name" in record:
            return "cursor_version" in record or (
                "conversation_id" in record and "generation_id" in record
            )
        return (
            record.get("role") in ROLES
            and isinstance(record.get("message"), dict)
            and "type" not in record
            and "payload" not in record
        )

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        if _jsonl(path):
            yield from super().records(path, position, max_bytes)
        else:
            here = Place.here()
            yield from cursor_db.records(
                path, position, cursor_sidecar.dot_dir(here.home, here.env)
            )

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        if _jsonl(path):
            return reader.head(path, size)
        # a database is rewritten in place, never replaced: it is the one of its workspace
        where = os.path.join(*os.path.realpath(path).split(os.sep)[-2:])
        return reader.Head(hashlib.sha256(f"cursor:{where}".encode()).hexdigest(), size)

    def begin(self, path: str, state: ParseState) -> None:
        if not _jsonl(path):
            return
        # a transcript's session is named by the file (hook payloads name their own)
        sid, sub = transcript_session(path)
        state.extra["stem"] = sid
        if is_transcript(path):
            state.cwd = state.cwd or slug_folder(path)
        if sub:
            state.extra["sub"] = True

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        if "_cursor" in record:
            return cursor_db.parse(record, state)
        if "hook_event_name" in record:
            return _hook(record, state)
        role = record.get("role")
        if role not in ROLES:
            if record.get("type") == "turn_ended" or "turn_ended" in record:
                return _turn_ended(record, state)
            state.count("skipped")
            return []
        message = record.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        sid = state.session_id = state.session_id or string(state.extra.get("stem"))
        if sid is None or not isinstance(content, list):
            state.count("skipped")
            return []
        prompt = role == "user" and any(
            isinstance(b, dict) and b.get("type") == "text" for b in content
        )
        out: list[EventIn] = _owed_results(state, _results(state), prompt)
        ts = string(state.extra.get("ts"))
        for block in content:
            if not isinstance(block, dict):
                continue
            btype = block.get("type")
            if btype == "text" and isinstance(block.get("text"), str):
                if role == "user":
                    out.extend(_user_text(block["text"], state))
                    ts = string(state.extra.get("ts"))
                elif said := _REDACTED.sub("", block["text"]).strip():
                    out.append(EventIn(role="assistant", kind="message", ts=ts, text=cut(said)))
            elif btype == "tool_use":
                out.append(call := _call(block, ts, state))
                called = [call.tool_name, call.call_id, call.command, call.file]
                out.extend(_hooked_result(called, ts, state, _results(state)))
            elif btype == "tool_result":
                out.extend(_result(block, ts, state))
            elif btype not in ("thinking", "redacted_thinking", "image"):
                state.count("skipped")
        return [Parsed(sid, e) for e in out]


def _jsonl(path: str) -> bool:
    return path.endswith(reader.SUFFIXES)


def _parts(path: str) -> list[str]:
    return os.path.realpath(path).replace("\\", "/").split("/")


def is_database(path: str) -> bool:
    """A `state.vscdb` of Cursor's user dir (VS Code and its other forks write the same name):
    `<...>/Cursor*/User/{globalStorage,workspaceStorage/<id>}/state.vscdb`; one lying elsewhere
    (a copy) when it holds Cursor's chat keys."""
    if os.path.basename(path) != "state.vscdb":
        return False
    parts = _parts(path)
    if len(parts) >= 4 and parts[-2] == "globalStorage":
        user = len(parts) - 3
    elif len(parts) >= 5 and parts[-3] == "workspaceStorage":
        user = len(parts) - 4
    else:
        return cursor_db.holds_chats(path)
    return parts[user] == "User" and user > 0 and parts[user - 1].startswith("Cursor")


def is_transcript(path: str) -> bool:
    """A JSONL log under `.cursor/projects/<slug>/agent-transcripts/` (`.cursor` may be
    elsewhere under another name: CURSOR_CONFIG_DIR)."""
    if not _jsonl(path):
        return False
    parts = _parts(path)
    try:
        at = len(parts) - 1 - parts[::-1].index("agent-transcripts")
    except ValueError:
        return False
    return at >= 3 and parts[at - 2] == "projects"


def transcript_session(path: str) -> tuple[str, bool]:
    """The conversation a transcript belongs to (a subagent's: its parent's), and whether it is
    a subagent's."""
    parts = _parts(path)
    stem = parts[-1].removesuffix(".zst").removesuffix(".jsonl")
    if len(parts) >= 3 and parts[-2] == "subagents":
        return parts[-3], True
    return stem, False


def slug_folder(path: str) -> str | None:
    """The workspace folder a transcript's `<slug>` names, found on disk (a `-` in the slug is a
    `/` or a `-` of a name: the names that exist decide)."""
    parts = _parts(path)
    try:
        at = len(parts) - 1 - parts[::-1].index("agent-transcripts")
    except ValueError:
        return None
    slug = parts[at - 1] if at >= 1 else ""
    if not slug:
        return None
    found = _FOUND.get(slug)
    if found is None or not os.path.isdir(found):
        found = _resolve("/", slug, 0)
        if found is not None:
            if len(_FOUND) >= 256:
                _FOUND.clear()
            _FOUND[slug] = found
    return found


_FOUND: dict[str, str] = {}  # slug -> the folder found for it (the walk costs ms per file)


def _norm(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_]+", "-", name).strip("-")


def _resolve(folder: str, rest: str, depth: int) -> str | None:
    if depth > 40:
        return None
    try:
        names = sorted(
            (e.name for e in os.scandir(folder) if e.is_dir(follow_symlinks=True)),
            key=len,
            reverse=True,
        )
    except OSError:
        return None
    for name in names:
        n = _norm(name)
        if not n:
            continue
        if rest == n:
            return os.path.join(folder, name)
        if rest.startswith(n + "-"):
            found = _resolve(os.path.join(folder, name), rest[len(n) + 1 :], depth + 1)
            if found:
                return found
    return None


def _iso(text: str) -> str | None:
    """An ISO time, or the envelope's human-readable one ("Friday, Jul 31, 2026, 5:10 PM
    (UTC-5)"), as UTC ISO with milliseconds."""
    dt: datetime | None
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        dt = _spoken_time(text)
    if dt is None:
        return None
    if dt.tzinfo is None:
        dt = dt.astimezone()
    dt = dt.astimezone(UTC)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


_SPOKEN = re.compile(
    r"(?i)(?:[a-z]+,\s*)?([a-z]{3})[a-z]*\.?\s+(\d{1,2}),?\s+(\d{4}),?\s+(?:at\s+)?"
    r"(\d{1,2}):(\d{2})(?::(\d{2}))?\s*([ap]\.?m\.?)?"
    r"(?:\s*\(?\s*(?:utc|gmt)\s*(?:([+-])\s*(\d{1,2})(?::?(\d{2}))?)?\s*\)?)?"
)
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _spoken_time(text: str) -> datetime | None:
    """Cursor's envelope time, e.g. "Tuesday, Jul 21, 2026, 1:11 PM (UTC+3)" (third-party
    readers of real transcripts; no zone: the machine's)."""
    m = _SPOKEN.search(text)
    if m is None or m.group(1).lower() not in _MONTHS:
        return None
    mon, day, year, hour, minute, sec, half, sign, oh, om = m.groups()
    h = int(hour)
    if half:
        h = h % 12 + (12 if half.lower().startswith("p") else 0)
    zone = None
    if sign:
        off = timedelta(hours=int(oh), minutes=int(om or 0))
        zone = timezone(-off if sign == "-" else off)
    elif re.search(r"(?i)\b(?:utc|gmt)\b", m.group(0)):
        zone = UTC
    try:
        return datetime(
            int(year),
            _MONTHS.index(mon.lower()) + 1,
            int(day),
            h,
            int(minute),
            int(sec or 0),
            tzinfo=zone,
        )
    except ValueError:
        return None


def _user_text(text: str, state: ParseState) -> list[EventIn]:
    """What the user typed, out of Cursor's envelope (its time remembered for what follows)."""
    m = _TS.search(text)
    if m:
        state.extra["ts"] = _iso(m.group(1)) or state.extra.get("ts")
        text = text[: m.start()] + text[m.end() :]
    ts = string(state.extra.get("ts"))
    if state.extra.get("sub"):
        return []  # a subagent's prompt is its parent agent's words, not the user's
    queries = _QUERY.findall(text)
    if queries:
        said = "\n\n".join(q for q in queries if q.strip())
    else:
        said = text
        while (m := _TAGGED.match(said)) is not None:
            said = said[m.end() :]  # context blocks (<system_notification> ...) Cursor added
        said = said.strip()
    if not said.strip():
        return []
    state.count("user_messages")
    return [EventIn(role="user", kind="message", ts=ts, text=cut(said))]


def _open_calls(state: ParseState) -> list[list[Any]]:
    return state.extra.setdefault("open", [])  # type: ignore[no-any-return]


def _call(block: dict[str, Any], ts: str | None, state: ParseState) -> EventIn:
    name = string(block.get("name")) or "tool"
    inp = block.get("input")
    if isinstance(inp, str):  # ApplyPatch: the patch itself
        files = _PATCHED.findall(inp)
        inp = {"path": files[0], "patch": inp} if files else {"patch": inp}
    inp = inp if isinstance(inp, dict) else {}
    n = int(state.extra.get("n", 0)) + 1
    state.extra["n"] = n
    call_id = string(block.get("id")) or f"{state.session_id}:{n}"
    command = string(inp.get("command")) if name in _SHELL_TOOLS or "command" in inp else None
    file = next((inp[k] for k in _FILE_KEYS if string(inp.get(k))), None)
    written = string(inp.get("new_string")) or string(inp.get("contents"))
    written = written or string(inp.get("content")) or string(inp.get("patch"))
    summary = string(inp.get("description")) or string(inp.get("explanation"))
    detail: str | None
    if written and file:
        summary, detail = f"{name} {os.path.basename(file)}", written[:2000]
    else:
        detail = None if command else json.dumps(inp, ensure_ascii=False)[:2000]
    opened = _open_calls(state)
    opened.append([call_id, name, command, file])
    del opened[:-MAX_OPEN]
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


def _result(block: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
    """A tool's result: paired with its call by id, else with the oldest call still open;
    none when the call was given its result from the hook log already."""
    opened = _open_calls(state)
    want = string(block.get("tool_use_id"))
    at = next((i for i, c in enumerate(opened) if c[0] == want), None) if want else None
    if at is None and opened and not want:
        at = 0
    call_id, name, command, file, *given = (
        opened.pop(at) if at is not None else [want, None, None, None]
    )
    if given and given[0]:
        state.count("results_from_hooks_repeated")
        return []
    _settled(state, call_id, name, command, file)
    return _outcome(
        state,
        ts,
        (name, call_id, command, file),
        as_text(block.get("content")),
        error=block.get("is_error") is True,
    )


def _exit_code(body: str) -> int | None:
    """The exit code an output announces ("Exit code 2" first, or an "exit code: 2" line)."""
    if not body:
        return None
    code = exit_code_in(body)
    if code is None and (m := _EXIT.search(body[:500])):
        code = int(m.group(1))
    return code


def _outcome(
    state: ParseState,
    ts: str | None,
    call: tuple[str | None, str | None, str | None, str | None],
    body: str,
    *,
    error: bool = False,
    failure: str | None = None,
    interrupt: bool = False,
) -> list[EventIn]:
    """A call's result: its output (an exit code in it counts), or its failure (`failure`:
    Cursor's failure_type; permission_denied is the user's rejection), and an interrupt."""
    name, call_id, command, file = call
    code = None if failure else _exit_code(body)
    is_error = True if error or failure else None
    if code is not None:
        is_error = is_error or code != 0
    rejected = failure == "permission_denied"
    if rejected:
        state.count("rejections")
    out = [
        result_event(
            state,
            ts,
            name,
            call_id,
            body or (f"the tool call failed ({failure})" if failure else ""),
            exit_code=code,
            is_error=is_error,
            command=command,
            file=file,
            rejected=rejected,
        )
    ]
    if interrupt:
        out.append(interrupt_event(state, ts))
    return out


MAX_OWED = 16  # calls read before their result was in the hook log, still waited for


def _hooked_log(state: ParseState, folder: str | None) -> dict[str, Any] | None:
    """What this transcript took from our hook's log of its conversation (None: no log to
    look in; a subagent's calls are left alone, their conversation's log is the parent's)."""
    hooked = state.extra.get("hooked")
    if isinstance(hooked, dict):
        return hooked
    sid = state.session_id
    path = cursor_sidecar.log_path(Path(folder), sid) if folder and sid else None
    if path is None or state.extra.get("sub"):
        return None
    hooked = state.extra["hooked"] = {"path": str(path)}
    return hooked


Called = list[Any]  # [name, call_id, command, file]: a call as its result names it


def _hooked_result(
    call: Called, ts: str | None, state: ParseState, folder: str | None
) -> list[EventIn]:
    """The result of a transcript's call, from our hook's log; none when it is not there yet
    (the call is then waited for until the next prompt: a transcript read while the agent
    works has calls whose results come later)."""
    hooked = _hooked_log(state, folder)
    if hooked is None:
        return []
    name, call_id, command, file = call
    got = cursor_sidecar.take(hooked, name or "tool", command, file)
    if got is None:
        owed = hooked.setdefault("owed", [])
        cap = cursor_sidecar.MAX_FIELD  # as much as the log keeps of a command or path
        short = [t.strip()[:cap] if t else None for t in (command, file)]
        owed.append([name, call_id, *short])
        del owed[:-MAX_OWED]
        return []
    state.count("results_from_hooks")
    for c in _open_calls(state):
        if c[0] == call_id:
            c[4:] = [True]  # a result of it in the transcript is not given again
    failure = string(got.get("failure_type"))
    body = string(got.get("output")) or ""
    if failure:
        body = "\n".join(t for t in (string(got.get("error_message")), body) if t)
    return _outcome(
        state,
        ts,
        (name, call_id, command, file),
        body,
        failure=failure,
        interrupt=got.get("is_interrupt") is True,
    )


def _settled(
    state: ParseState, call_id: str | None, name: str | None, command: str | None, file: str | None
) -> None:
    """A call waited for got its result in the transcript: its entry in the hook log, when it
    comes, is not another call's."""
    hooked = state.extra.get("hooked")
    owed = hooked.get("owed") if isinstance(hooked, dict) else None
    if not owed or not any(c[1] == call_id for c in owed):
        return
    assert isinstance(hooked, dict)
    hooked["owed"] = [c for c in owed if c[1] != call_id]
    cursor_sidecar.take(hooked, name or "tool", command, file)


def _owed_results(state: ParseState, folder: str | None, prompt: bool) -> list[EventIn]:
    """Results that came since for the calls read without one (before anything else of the
    transcript, so a later call of the same command cannot take them); at a prompt, the ones
    still missing are given up (a new generation: their hooks did not run)."""
    hooked = state.extra.get("hooked")
    owed = hooked.pop("owed", None) if isinstance(hooked, dict) else None
    if not owed:
        return []
    ts = string(state.extra.get("ts"))
    out: list[EventIn] = []
    for call in owed:
        out.extend(_hooked_result(call, ts, state, folder))
    if prompt and isinstance(hooked, dict):
        hooked.pop("owed", None)
    return out


def _turn_ended(record: dict[str, Any], state: ParseState) -> list[Parsed]:
    state.count("turns")
    how = " ".join(
        str(record.get(k, "")) for k in ("status", "reason", "error", "turn_ended") if record.get(k)
    )
    sid, ts = state.session_id, string(state.extra.get("ts"))
    if sid and re.search(r"abort|interrupt|cancel", how, re.I):
        return [Parsed(sid, interrupt_event(state, ts))]
    if sid and record.get("status") == "error":  # {"status": "error", "error": "..."}
        state.count("errors")
        why = string(record.get("error"))
        text = f"the agent's turn failed: {first_line(why)}" if why else "the agent's turn failed"
        return [Parsed(sid, EventIn(role="system", kind="message", ts=ts, summary=text))]
    return []


# -- hook payloads ------------------------------------------------------------------------------

_HOOK_SKIPPED = frozenset(
    {
        "sessionStart",
        "beforeReadFile",
        "afterAgentThought",
        "subagentStart",
        "beforeTabFileRead",
        "afterTabFileEdit",
        "beforeShellExecution",
        "beforeMCPExecution",
        "workspaceOpen",
    }
)


def _hook(p: dict[str, Any], state: ParseState) -> list[Parsed]:
    """One hook payload as Cursor hands it over (NOTES "Hooks")."""
    event = string(p.get("hook_event_name")) or ""
    sid = string(p.get("conversation_id")) or string(p.get("session_id"))
    if sid is None:
        state.count("skipped")
        return []
    roots = p.get("workspace_roots")
    cwd = string(p.get("cwd")) or (string(roots[0]) if isinstance(roots, list) and roots else None)
    if state.session_id is None:
        state.session_id, state.cwd = sid, state.cwd or cwd
    ts = _hook_ts(p)
    events = _hook_events(event, p, ts, state)
    if sid != state.session_id:
        if event == "sessionEnd":
            state.live.pop(sid, None)
            if sid not in state.finished:
                state.finished.append(sid)
        elif events:
            state.live[sid] = ts or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")
    return [Parsed(sid, e, cwd) for e in events]


def _hook_ts(p: dict[str, Any]) -> str | None:
    t = p.get("timestamp")
    if isinstance(t, str):
        return _iso(t)
    if isinstance(t, int | float):
        return iso_ms(t if t > 1e11 else t * 1000)
    return None


def _hook_events(event: str, p: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
    if event == "beforeSubmitPrompt":
        text = string(p.get("prompt"))
        if not text:
            return []
        state.count("user_messages")
        return [EventIn(role="user", kind="message", ts=ts, text=cut(text))]
    if event == "afterAgentResponse":
        text = string(p.get("text"))
        return [EventIn(role="assistant", kind="message", ts=ts, text=cut(text))] if text else []
    if event == "preToolUse":
        state.extra["generic"] = True  # the shell/MCP/edit events repeat these calls
        inp = p.get("tool_input")
        block = {"name": p.get("tool_name"), "id": p.get("tool_use_id"), "input": inp}
        return [_call(block, ts, state)]
    if event in ("postToolUse", "postToolUseFailure"):
        return _hook_result(event, p, ts, state)
    if event in ("afterShellExecution", "afterMCPExecution", "afterFileEdit"):
        if state.extra.get("generic"):
            return []
        return _hook_pair(event, p, ts, state)
    if event == "stop":
        status = string(p.get("status"))
        if status == "aborted":
            return [interrupt_event(state, ts)]
        if status == "error":
            state.count("errors")
            return [
                EventIn(role="system", kind="message", ts=ts, summary="the agent's turn failed")
            ]
        return []
    if event == "preCompact":
        state.count("compactions")
        return []
    if event in ("sessionEnd", "subagentStop"):
        state.count("session_ends" if event == "sessionEnd" else "subagents")
        return []
    if event not in _HOOK_SKIPPED:
        state.count("skipped")
    return []


def _hook_result(event: str, p: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
    call_id = string(p.get("tool_use_id"))
    opened = _open_calls(state)
    at = next((i for i, c in enumerate(opened) if c[0] == call_id), None)
    _cid, name, command, file = (
        opened.pop(at) if at is not None else [call_id, p.get("tool_name"), None, None]
    )
    name = string(name) or string(p.get("tool_name"))
    if event == "postToolUse":
        out = p.get("tool_output")
        body = out if isinstance(out, str) else json.dumps(out, ensure_ascii=False)
        return _outcome(state, ts, (name, call_id, command, file), body)
    return _outcome(
        state,
        ts,
        (name, call_id, command, file),
        string(p.get("error_message")) or "",
        failure=string(p.get("failure_type")) or "error",
        interrupt=p.get("is_interrupt") is True,
    )


def _hook_pair(event: str, p: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
    """A shell command, MCP call or file edit reported after the fact (no preToolUse seen)."""
    block: dict[str, Any]
    if event == "afterShellExecution":
        block = {"name": "Shell", "input": {"command": p.get("command")}}
        body = string(p.get("output")) or ""
    elif event == "afterMCPExecution":
        block = {"name": f"MCP:{p.get('tool_name') or 'tool'}", "input": p.get("tool_input")}
        body = as_text(p.get("result_json") or p.get("tool_output"))
    else:
        edits = p.get("edits")
        new = [e.get("new_string") for e in edits or [] if isinstance(e, dict)]
        text = "\n".join(s for s in new if isinstance(s, str))
        block = {"name": "Edit", "input": {"file_path": p.get("file_path"), "new_string": text}}
        body = ""
    call = _call(block, ts, state)
    return [call, *_result({"content": body, "tool_use_id": call.call_id}, ts, state)]


ADAPTER = Cursor()


def _results(state: ParseState) -> str | None:
    """Where our hook keeps the tool results of Cursor's conversations (`cursor_sidecar`), for
    the database being ingested into."""
    if state.db is None:
        return None
    folder = cursor_sidecar.folder_of(state.db)
    return str(folder) if folder is not None else None
