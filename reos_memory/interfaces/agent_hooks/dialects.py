"""Each agent's hook dialect: how its stdin JSON reads as one common call, and how an answer
with context is written back in the JSON that agent accepts.

| tool | session start | prompt | transcript in | session end |
| --- | --- | --- | --- | --- |
| claude-code | SessionStart H | UserPromptSubmit H | Stop, SubagentStop, PreCompact | SessionEnd |
| cursor | sessionStart A | none (1) | stop, subagentStop, preCompact (4) | sessionEnd |
| gemini | SessionStart H | BeforeAgent H | AfterAgent, PreCompress | SessionEnd |
| windsurf | none (2) | none (2) | post_cascade_response_with_transcript | none (3) |
| copilot | SessionStart H | UserPromptSubmit H | Stop, SubagentStop, PreCompact | none (3) |

H: the context goes back as `{"hookSpecificOutput": {"hookEventName": <the event>,
"additionalContext": <context>}}`; A: as `{"additional_context": <context>}`.

1. Cursor's `beforeSubmitPrompt` can only let a prompt through or block it (`continue`,
   `user_message`); `sessionStart`'s `additional_context` is its one way into the model's
   context (cursor.com/docs/agent/hooks, "beforeSubmitPrompt" and "sessionStart"). Context
   for a prompt comes through the MCP server (`reos-memory mcp`).
2. Windsurf shows hook output in its UI, never to the model: no event injects context
   (docs.windsurf.com/windsurf/cascade/hooks). Its hook only delivers transcripts; context
   comes through the MCP server.
3. No session-end event: the session ends once its transcript has been idle past
   `session_idle_minutes`, as for `sqrl watch`.
4. Cursor's transcripts hold no tool results: `postToolUse`, `postToolUseFailure` and
   `afterShellExecution` (kind `tool_result`) append each result to a log of ours beside the
   database, which the transcript's adapter pairs with the calls (`cursor_sidecar`).

Sources of the others: Gemini CLI `docs/hooks/reference.md` (SessionStart, BeforeAgent:
`hookSpecificOutput.additionalContext`); VS Code's Copilot Chat `chatHookService.ts`
(`SessionStartHookOutput`, `UserPromptSubmitHookOutput`: `hookSpecificOutput.additionalContext`)
and its hooks docs (common input `sessionId`, `hookEventName`, `transcript_path`, `cwd`; some
builds send `session_id`/`hook_event_name`, both are read). Every tool treats exit code 0 as
success and 2 as "block": the hook always exits 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

from reos_memory.json_types import JSONMapping, JSONObject

Kind = Literal["session_start", "prompt", "ingest", "end", "tool_result"]
CONTEXT_KINDS = ("session_start", "prompt")
INGEST_KINDS = ("ingest", "end")


class Call(NamedTuple):
    """One hook call, whichever agent made it."""

    tool: str  # the dialect's name (`reos-memory hook <tool>`)
    kind: Kind
    event: str  # the agent's own name of the event (echoed in some answers)
    session: str | None
    transcript: str | None
    cwd: str | None  # the project: the working directory or workspace root
    prompt: str | None


def _text(payload: JSONMapping, *keys: str) -> str | None:
    """The first of these fields that is a non-empty string."""
    for k in keys:
        v = payload.get(k)
        if isinstance(v, str) and v:
            return v
    return None


def _hook_specific(call: Call, context: str) -> JSONObject:
    return {"hookSpecificOutput": {"hookEventName": call.event, "additionalContext": context}}


def _cursor_answer(call: Call, context: str) -> JSONObject:
    return {"additional_context": context}


class Dialect(NamedTuple):
    name: str
    agent: str  # the ingest adapter that reads its transcripts
    events: dict[str, Kind]
    event_keys: tuple[str, ...]
    session_keys: tuple[str, ...]
    answer: Callable[[Call, str], JSONObject] | None  # None: it cannot take context
    # where the project and the transcript are, when not in `cwd` and `transcript_path`
    cwd_of: Callable[[JSONMapping], str | None] = lambda p: _text(p, "cwd")
    transcript_of: Callable[[JSONMapping, str | None], str | None] = lambda p, _cwd: _text(
        p, "transcript_path"
    )

    def read(self, payload: JSONMapping) -> Call | None:
        """The call a payload stands for; None for an event this hook does not handle."""
        event = _text(payload, *self.event_keys)
        kind = self.events.get(event or "")
        if event is None or kind is None:
            return None
        cwd = self.cwd_of(payload)
        prompt = payload.get("prompt")
        return Call(
            self.name,
            kind,
            event,
            _text(payload, *self.session_keys),
            self.transcript_of(payload, cwd),
            cwd,
            prompt if isinstance(prompt, str) else None,
        )

    def render(self, call: Call, context: str | None) -> bytes:
        """What the hook prints: the agent's JSON holding the context, or nothing."""
        if not context or self.answer is None or call.kind not in CONTEXT_KINDS:
            return b""
        out = self.answer(call, context)
        return json.dumps(out, ensure_ascii=False).encode("utf-8", "surrogateescape")


def _cursor_cwd(payload: JSONMapping) -> str | None:
    roots = payload.get("workspace_roots")
    first = roots[0] if isinstance(roots, list) and roots else None
    if isinstance(first, str) and first:
        return first
    return _text(payload, "cwd") or os.environ.get("CURSOR_PROJECT_DIR") or None


def _cursor_transcript(payload: JSONMapping, cwd: str | None) -> str | None:
    """`transcript_path`; the Cursor CLI sends null on stop and sessionEnd, so the file is then
    looked for where Cursor keeps it: `~/.cursor/projects/<slug>/agent-transcripts/` (`~/.cursor`
    moved by CURSOR_CONFIG_DIR), flat
    (`<id>.jsonl`) or nested (`<id>/<id>.jsonl`), `<slug>` the workspace path without its
    leading `/` and with each `/` turned into `-`."""
    given = _text(payload, "transcript_path")
    conversation = _text(payload, "conversation_id", "session_id")
    if given or not cwd or not conversation or "/" in conversation or conversation[0] == ".":
        return given
    from reos_memory.squirrel.ingest.cursor_sidecar import dot_dir

    slug = cwd.strip("/").replace("/", "-")
    folder = Path(dot_dir(str(Path.home()), os.environ)) / "projects" / slug / "agent-transcripts"
    for p in (folder / conversation / f"{conversation}.jsonl", folder / f"{conversation}.jsonl"):
        if p.is_file():
            return str(p)
    return None


def _windsurf_transcript(payload: JSONMapping, cwd: str | None) -> str | None:
    info = payload.get("tool_info")
    return _text(info if isinstance(info, dict) else {}, "transcript_path") or _text(
        payload, "transcript_path"
    )


def _copilot_transcript(payload: JSONMapping, cwd: str | None) -> str | None:
    """`transcript_path`: the Copilot extension's hook transcript
    (`<workspaceStorage>/<id>/GitHub.copilot-chat/transcripts/<session>.jsonl`). When VS Code's
    chat session store of the same session lies in that workspace storage
    (`chatSessions/<session>.jsonl`), that is read instead: it has the commands' exit codes
    and the user's denials, the transcript only a tool's success (and the adapter takes
    nothing from a transcript whose store is beside it)."""
    given = _text(payload, "transcript_path")
    if not given or os.path.basename(os.path.dirname(given)) != "transcripts":
        return given
    from reos_memory.squirrel.ingest.copilot import chat_store_of

    return chat_store_of(given) or given


_CLAUDE_STYLE: dict[str, Kind] = {
    "SessionStart": "session_start",
    "UserPromptSubmit": "prompt",
    "Stop": "ingest",
    "SubagentStop": "ingest",
    "PreCompact": "ingest",
}

DIALECTS: dict[str, Dialect] = {
    d.name: d
    for d in (
        Dialect(
            "claude-code",
            "claude-code",
            {**_CLAUDE_STYLE, "SessionEnd": "end"},
            ("hook_event_name",),
            ("session_id",),
            _hook_specific,
        ),
        Dialect(
            "cursor",
            "cursor",
            {
                "sessionStart": "session_start",
                "stop": "ingest",
                "subagentStop": "ingest",
                "preCompact": "ingest",
                "sessionEnd": "end",
                # a tool's result, which Cursor's transcripts lack: kept beside the database
                # for the transcript's adapter (squirrel/ingest/cursor_sidecar.py)
                "postToolUse": "tool_result",
                "postToolUseFailure": "tool_result",
                "afterShellExecution": "tool_result",
            },
            ("hook_event_name",),
            ("conversation_id", "session_id"),
            _cursor_answer,
            cwd_of=_cursor_cwd,
            transcript_of=_cursor_transcript,
        ),
        Dialect(
            "gemini",
            "gemini",
            {
                "SessionStart": "session_start",
                "BeforeAgent": "prompt",
                "AfterAgent": "ingest",
                "PreCompress": "ingest",
                "SessionEnd": "end",
            },
            ("hook_event_name",),
            ("session_id",),
            _hook_specific,
        ),
        Dialect(
            "windsurf",
            "windsurf",
            {"post_cascade_response_with_transcript": "ingest"},
            ("agent_action_name",),
            ("trajectory_id",),
            None,
            cwd_of=lambda p: None,
            transcript_of=_windsurf_transcript,
        ),
        Dialect(
            "copilot",
            "copilot",
            _CLAUDE_STYLE,
            ("hookEventName", "hook_event_name"),
            ("sessionId", "session_id"),
            _hook_specific,
            transcript_of=_copilot_transcript,
        ),
    )
}
TOOLS = tuple(DIALECTS)
