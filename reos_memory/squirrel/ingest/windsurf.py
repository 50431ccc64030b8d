"""Windsurf (Cascade) hook transcripts (`~/.windsurf/transcripts/<trajectory_id>.jsonl`), written
when the `post_cascade_response_with_transcript` hook is configured. Field notes:
../shared/formats/windsurf/NOTES.md (Windsurf's "Cascade Hooks" docs and integrations quoting
them; Windsurf is closed source and no real transcript was available).

* One step a line: `{"type": T, "status": ..., T: {...}}`. Documented: `user_input`
  (`user_response`: the user's message), `planner_response` (`response`: the assistant's text),
  `code_action` (`path`, `new_content`: a file written). Other step kinds exist (commands, reads,
  searches, MCP calls) with undocumented fields: each is kept as an opaque tool call named
  after its kind, its fields as detail, nothing guessed from them - except one.
* A command run is not documented in the transcript, but it is what a session learns most
  from, so one shape is assumed: `run_command` with `command_line` and `cwd` (the fields the
  documented `*_run_command` hooks carry), `exit_code` and the output as `combined_output.full`
  (or `stdout`/`stderr`): the names Cascade's step type RUN_COMMAND has in its language
  server's JSON (`runCommand.commandLine`, `exitCode`, `combinedOutput.full`, as third-party
  readers of that JSON use them), in the snake case the documented steps are written in. It
  becomes a call and its result; a step without them stays opaque. Likewise a step's time is
  read from `metadata.created_at` (`metadata.createdAt` there) when present.
* The transcript is a snapshot of the whole trajectory, written again after each response: the
  cursor is the number of steps read (not a byte offset), so a snapshot that rewrites earlier
  lines in place does not shift it, and a step is read once.
* The session is the trajectory (the file's name). The transcript names no working directory:
  the project is found from the first absolute path a step names (a file Cascade wrote), and
  events before it wait (in the parse state, bounded) until it is known.
* Cascade's own history (`~/.codeium/windsurf/cascade/*.pb`) is encrypted protobuf and is not
  read. Windsurf documents no way for a hook to add context to the model; nothing of Squirrel's
  is injected into these transcripts.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import msgspec

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import reader, rewound
from reos_memory.squirrel.ingest.base import (
    Adapter,
    Parsed,
    ParseState,
    Place,
    Record,
    call_event,
    cut,
    json_record,
    result_event,
    string,
)

DOCUMENTED = frozenset({"user_input", "planner_response", "code_action"})
MAX_HELD = 50  # events kept while the project is not known yet (a few prompts, at most)
_FAILED = ("error", "fail")  # a step status that reads as failed


class Windsurf(Adapter):
    name = "windsurf"
    # a snapshot written again may be shorter (steps reverted): its cursor counts steps
    shrink_means_rewritten = False

    def roots(self, place: Place) -> list[str]:
        # `~/.windsurf/transcripts` on every OS (Windows: %USERPROFILE%\.windsurf\transcripts)
        return [os.path.join(place.home, ".windsurf", "transcripts")]

    def sniff(self, record: dict[str, Any]) -> bool:
        kind = record.get("type")
        return kind in DOCUMENTED and isinstance(record.get(kind), dict)

    def begin(self, path: str, state: ParseState) -> None:
        name = os.path.basename(path)
        state.session_id = name[: -len(".jsonl")] if name.endswith(".jsonl") else name

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        """The steps after the ones read (the cursor counts steps; a snapshot reverted and
        grown again is placed by `rewound`)."""
        lines = list(reader.lines(path, 0, sys.maxsize))
        taken = 0

        def make(i: int) -> Record | None:
            nonlocal taken
            if taken >= max_bytes:
                return None
            line = lines[i]
            taken += line.end - (lines[i - 1].end if i else 0)
            if line.data is None:
                return Record(0, None, True)
            if not line.data.strip():
                return Record(0, None)
            rec = json_record(line.data)
            return Record(0, rec, rec is None)

        yield from rewound.replay([_key(ln.data) for ln in lines], position, make)

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        """The trajectory's first step (its opening prompt): the same in every snapshot, even
        one that rewrote a step's status."""
        first = next(iter(reader.lines(path, 0, reader.HEAD_BYTES)), None)
        if size == 0 or first is None or first.data is None:
            return reader.Head(hashlib.sha256(b"").hexdigest(), 0)
        rec = json_record(first.data)
        kind = rec.get("type") if rec else None
        body = rec.get(kind) if rec and isinstance(kind, str) else None
        key = json.dumps([kind, body], sort_keys=True).encode() if body else first.data
        return reader.Head(hashlib.sha256(b"windsurf:" + key).hexdigest(), reader.HEAD_BYTES)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        if rewound.answer(record, state):
            return []
        rewound.remember(state, _step_key(record))
        kind = record.get("type")
        body = record.get(kind) if isinstance(kind, str) else None
        if not isinstance(body, dict) or state.session_id is None:
            state.count("skipped")
            return []
        status = string(record.get("status"))
        failed = status is not None and any(w in status.lower() for w in _FAILED)
        ts = _created(record) or string(body.get("timestamp"))
        events: list[EventIn] = []
        if kind == "user_input":
            text = string(body.get("user_response"))
            if text and text.strip():
                state.count("user_messages")
                events.append(EventIn(role="user", kind="message", ts=ts, text=cut(text.strip())))
        elif kind == "planner_response":
            text = string(body.get("response"))
            if text and text.strip():
                events.append(
                    EventIn(role="assistant", kind="message", ts=ts, text=cut(text.strip()))
                )
        elif kind == "code_action":
            path = string(body.get("path"))
            content = body.get("new_content")
            self._found(path, state)
            ev = call_event(
                state,
                ts,
                "code_action",
                None,
                file=path,
                summary=f"code_action {os.path.basename(path)}" if path else "code_action",
                detail=content[:2000] if isinstance(content, str) else None,
            )
            events.append(_failed(ev, state) if failed else ev)
        elif kind == "run_command" and _command(body):
            events += self._run(body, ts, failed, state)
        else:
            # an undocumented step: an opaque call of its kind, its fields as they are
            state.count("opaque_steps")
            self._found(string(body.get("cwd")), state, directory=True)
            ev = call_event(
                state,
                ts,
                kind or "step",
                None,
                summary=kind,
                detail=json.dumps(body, ensure_ascii=False)[:2000],
            )
            events.append(_failed(ev, state) if failed else ev)
        return self._emit(events, state)

    def _run(
        self, body: dict[str, Any], ts: str | None, failed: bool, state: ParseState
    ) -> list[EventIn]:
        """A command run (an assumed shape, see above): the call and its result."""
        command = _command(body)
        self._found(string(body.get("cwd")), state, directory=True)
        call = call_event(state, ts, "run_command", None, command=command)
        code = body.get("exit_code", body.get("exitCode"))
        code = code if isinstance(code, int) and not isinstance(code, bool) else None
        res = result_event(
            state,
            ts,
            "run_command",
            None,
            _output(body),
            exit_code=code,
            is_error=failed or code not in (None, 0),
            command=command,
        )
        return [call, res]

    def finish(self, state: ParseState) -> list[Parsed]:
        """Events still waiting for the project at the session's end (it never became known:
        they are counted as having none)."""
        held = state.extra.pop("held", [])
        if not held or state.session_id is None:
            return []
        return [Parsed(state.session_id, msgspec.convert(e, EventIn)) for e in held]

    def _found(self, path: str | None, state: ParseState, directory: bool = False) -> None:
        """The project, from the first absolute path a step names (its checkout is resolved
        from there)."""
        if state.cwd is None and path and os.path.isabs(path):
            state.cwd = path if directory else os.path.dirname(path)

    def _emit(self, events: list[EventIn], state: ParseState) -> list[Parsed]:
        sid = state.session_id
        assert sid is not None
        if state.cwd is None:
            held: list[Any] = state.extra.setdefault("held", [])
            held += [msgspec.to_builtins(e) for e in events]
            if len(held) > MAX_HELD:
                state.count("dropped_before_project", len(held) - MAX_HELD)
                del held[: len(held) - MAX_HELD]
            return []
        waiting = state.extra.pop("held", [])
        out = [msgspec.convert(e, EventIn) for e in waiting] + events
        return [Parsed(sid, e) for e in out]


def _step_key(rec: dict[str, Any]) -> str:
    """What names a step while its snapshot is written again (its status moves on)."""
    kind = rec.get("type")
    body = rec.get(kind) if isinstance(kind, str) else None
    return json.dumps([kind, body, _created(rec)], sort_keys=True, default=str)


def _key(data: bytes | None) -> str:
    rec = json_record(data)
    if rec is None:
        return (data or b"").decode("utf-8", "replace")
    return _step_key(rec)


def _created(record: dict[str, Any]) -> str | None:
    """A step's time: `metadata.created_at` (assumed, see above), or a `timestamp` field."""
    meta = record.get("metadata")
    if isinstance(meta, dict):
        ts = string(meta.get("created_at")) or string(meta.get("createdAt"))
        if ts:
            return ts
    return string(record.get("timestamp"))


def _command(body: dict[str, Any]) -> str | None:
    for key in ("command_line", "commandLine", "command"):
        value = string(body.get(key))
        if value and value.strip():
            return value.strip()
    return None


def _output(body: dict[str, Any]) -> str:
    """What the command printed: its combined output (in full, or as the UI rendered it), else
    its stdout and stderr."""
    for key in ("combined_output", "combinedOutput", "rendered_output", "renderedOutput"):
        value = body.get(key)
        if isinstance(value, dict):
            value = value.get("full")
        if isinstance(value, str) and value:
            return value
    parts = [body.get(k) for k in ("stdout", "stderr")]
    return "\n".join(p for p in parts if isinstance(p, str) and p)


def _failed(ev: EventIn, state: ParseState) -> EventIn:
    """A step whose status says it failed (the values are not documented: one that reads as
    an error or a failure)."""
    state.count("errors")
    return msgspec.structs.replace(ev, is_error=True)


ADAPTER = Windsurf()
