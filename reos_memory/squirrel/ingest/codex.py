"""Codex CLI rollouts (`~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl[.zst]`), 0.77 to 0.125+.

Every line is `{timestamp, type, payload}`. What the human typed is `event_msg/user_message`
(the `user` response items also carry injected AGENTS.md and environment text, so they are left
out). Tool calls are `function_call` (`shell` with an argv in 0.77, `exec_command` in later
versions) and `custom_tool_call` (`apply_patch`). A command's result and exit code come from
`function_call_output` (0.77: JSON with `metadata.exit_code`) or, for `exec_command`, from the
`exec_command_end` event (the call's own output only says the process is running; `write_stdin`
polls it). A patch's result is `patch_apply_end`, else its `custom_tool_call_output`.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from typing import Any

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest.base import (
    Adapter,
    Parsed,
    ParseState,
    Place,
    as_text,
    call_event,
    compaction_event,
    cut,
    interrupt_event,
    result_event,
    string,
)

LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_SKIPPED_EVENTS = frozenset(
    {
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "token_count",
        "task_started",
        "task_complete",
        "web_search_begin",
        "web_search_end",
        "exec_command_begin",
        "exec_command_output_delta",
        "patch_apply_begin",
        "mcp_tool_call_begin",
        "mcp_tool_call_end",
        "turn_diff",
        "plan_update",
        "entered_review_mode",
        "exited_review_mode",
        "context_compacted",
        "thread_name_updated",
    }
)
_SKIPPED_ITEMS = frozenset({"reasoning", "web_search_call", "ghost_snapshot", "compaction"})
_POLLS = frozenset({"write_stdin"})  # a running command's output: the end event has all of it
_ENDED = "+ended"  # marks a call whose result already came from an end event
_PATCH_FILE = re.compile(r"^\*\*\* (?:Update|Add|Delete) File: (.+)$", re.M)
_SHELLS = frozenset({"bash", "zsh", "sh", "dash", "fish"})


class Codex(Adapter):
    name = "codex"

    def roots(self, place: Place) -> list[str]:
        # `$CODEX_HOME/sessions`, else `~/.codex/sessions` (every OS)
        home = place.var("CODEX_HOME") or os.path.join(place.home, ".codex")
        return [os.path.join(home, "sessions")]

    def sniff(self, record: dict[str, Any]) -> bool:
        return record.get("type") in LINE_TYPES and isinstance(record.get("payload"), dict)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        kind = record.get("type")
        p = record.get("payload")
        if not isinstance(p, dict):
            state.count("skipped")
            return []
        ts = string(record.get("timestamp"))
        if kind == "session_meta":
            state.session_id = state.session_id or string(p.get("id"))
            state.cwd = state.cwd or string(p.get("cwd"))
            return []
        if kind == "turn_context":
            state.cwd = state.cwd or string(p.get("cwd"))
            return []
        if kind == "compacted":
            # Codex's own summary of the session so far (`payload.message`): evidence
            state.count("compactions")
            summary = string(p.get("message"))
            if not summary or state.session_id is None:
                return []
            return [Parsed(state.session_id, compaction_event(ts, summary))]
        if state.session_id is None:
            state.count("skipped")  # records before the session's first line: nobody's
            return []
        if kind == "event_msg":
            events = self._event(p, ts, state)
        elif kind == "response_item":
            events = self._item(p, ts, state)
        else:
            state.count("skipped")
            events = []
        return [Parsed(state.session_id, e) for e in events]

    def _event(self, p: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
        etype = p.get("type")
        if etype == "user_message":
            text = string(p.get("message"))
            return [EventIn(role="user", kind="message", ts=ts, text=cut(text))] if text else []
        if etype == "exec_command_end":
            call_id = string(p.get("call_id"))
            code = p.get("exit_code")
            code = code if isinstance(code, int) else None
            body = string(p.get("aggregated_output")) or "\n".join(
                s for s in (p.get("stdout"), p.get("stderr")) if isinstance(s, str) and s
            )
            if call_id:
                state.remember_call(call_id, "exec_command" + _ENDED)
            return [
                result_event(
                    state,
                    ts,
                    "exec_command",
                    call_id,
                    body,
                    exit_code=code,
                    is_error=None if code is None else code != 0,
                    command=_command(p.get("command")),
                )
            ]
        if etype == "patch_apply_end":
            call_id = string(p.get("call_id"))
            if call_id:
                state.remember_call(call_id, "apply_patch" + _ENDED)
            ok = p.get("success") is not False
            changes = p.get("changes")
            files = list(changes) if isinstance(changes, dict) else []
            body = "\n".join(
                s for s in (p.get("stdout"), p.get("stderr")) if isinstance(s, str) and s
            )
            return [
                result_event(
                    state,
                    ts,
                    "apply_patch",
                    call_id,
                    body,
                    is_error=not ok,
                    file=files[0] if files else None,
                )
            ]
        if etype == "turn_aborted":
            return [interrupt_event(state, ts)]
        if etype not in _SKIPPED_EVENTS:
            state.count("skipped")
        return []

    def _item(self, p: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
        itype = p.get("type")
        if itype == "message":
            if p.get("role") != "assistant":
                return []  # injected instructions; the human's words come as user_message
            text = as_text(p.get("content"))
            return (
                [EventIn(role="assistant", kind="message", ts=ts, text=cut(text))] if text else []
            )
        if itype in ("function_call", "custom_tool_call"):
            return self._call(p, ts, state)
        if itype in ("function_call_output", "custom_tool_call_output"):
            call_id = string(p.get("call_id"))
            name = state.calls.get(call_id or "", "")
            if name.endswith(_ENDED) or name in _POLLS or name == "exec_command":
                return []  # the end event carries (or carried) this result
            text, code = _output(p.get("output"))
            return [
                result_event(
                    state,
                    ts,
                    name or None,
                    call_id,
                    text,
                    exit_code=code,
                    is_error=None if code is None else code != 0,
                )
            ]
        if itype not in _SKIPPED_ITEMS:
            state.count("skipped")
        return []

    def _call(self, p: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
        name = string(p.get("name")) or "tool"
        call_id = string(p.get("call_id"))
        if name in _POLLS:
            call_event(state, ts, name, call_id)  # counted and remembered, not an event
            return []
        raw = p.get("arguments") if p.get("type") == "function_call" else p.get("input")
        args: Any = raw
        if isinstance(raw, str) and p.get("type") == "function_call":
            try:
                args = json.loads(raw)
            except ValueError:
                args = {}
        command = file = summary = None
        detail: str | None = None
        if isinstance(args, dict):
            command = _command(args.get("command")) or string(args.get("cmd"))
            file = string(args.get("path")) or string(args.get("file_path"))
            if command is None:
                detail = json.dumps(args, ensure_ascii=False)[:2000]
        elif isinstance(args, str):
            files = [f.strip() for f in _PATCH_FILE.findall(args)]
            file = files[0] if files else None
            # the lines the patch adds: what changed, for the writer to compare with failures
            added = [
                ln[1:]
                for ln in args.splitlines()
                if ln.startswith("+") and not ln.startswith("+++")
            ]
            detail = "\n".join(added)[:2000] if added else args[:2000]
            summary = f"{name} {', '.join(os.path.basename(f) for f in files[:3])}".strip()
        return [
            call_event(
                state,
                ts,
                name,
                call_id,
                command=command,
                file=file,
                summary=summary,
                detail=detail,
            )
        ]


def _command(value: Any) -> str | None:
    """A command as typed: an argv joined, with a `bash -lc "..."` wrapper taken off."""
    if isinstance(value, str):
        return value or None
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value) or not value:
        return None
    if (
        len(value) == 3
        and os.path.basename(value[0]) in _SHELLS
        and value[1] in ("-c", "-lc", "-ic")
    ):
        return value[2]
    return shlex.join(value)


def _output(output: Any) -> tuple[str, int | None]:
    """A call's output text and exit code (0.77 wraps both in a JSON string)."""
    if isinstance(output, str):
        s = output.strip()
        if s.startswith("{"):
            try:
                d = json.loads(s)
            except ValueError:
                return output, None
            if isinstance(d, dict) and "output" in d:
                meta = d.get("metadata")
                code = meta.get("exit_code") if isinstance(meta, dict) else None
                return as_text(d.get("output")), code if isinstance(code, int) else None
        return output, None
    return as_text(output), None


ADAPTER = Codex()
