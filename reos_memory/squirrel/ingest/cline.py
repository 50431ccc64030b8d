"""Cline and Roo Code tasks (`<globalStorage>/<extension>/tasks/<taskId>/ui_messages.json`).

Field notes: ../shared/formats/cline-roo/NOTES.md (Cline's `ExtensionMessage.ts`: `ClineMessage`,
`ClineAsk`, `ClineSay`, `ClineSayTool`; `disk.ts`: where tasks live). A task is a session. Its
`ui_messages.json` is the log followed: the whole story with timestamps (the API history is
trimmed when the context overflows), one JSON array rewritten whole on every save, so the cursor
is the index of the next message, the log's identity its task id, and a document caught
half-written (not JSON yet) or ending in a message still streaming (`partial`, or a request whose
details are still "Loading...") is read again next time. Roo's forks that append `.jsonl` lines
are read line by line.

* `say: task` is the user's request, `say: user_feedback` what they typed later (their reason
  for refusing a tool when it answers one that waited for approval); `say: text`,
  `completion_result` and `ask: followup` are the agent's words.
* `ask`/`say` `command` is a shell command, `command_output` its output; `ask`/`say` `tool`
  (JSON `ClineSayTool`: `tool`, `path`, `diff`, `content`) a file tool (the ones that change a
  file named `edit` and `write`, as other agents name them), `use_mcp_server` an MCP call. A call's result comes with the next `api_req_started`, whose `request` holds what the
  model was told: `[execute_command for 'npm test'] Result:` then `Command failed with exit
  code N.`, `Command executed successfully (exit code 0).` (Roo: `Exit code: N`), `The user
  denied this operation.` or `The tool execution failed ...`; `error` and `diff_error` fail it
  at once.
* The task's directory is in the first request's environment details (`# Current Working
  Directory (/path) Files`; Roo: `Workspace`), also in `api_conversation_history.json` beside the
  log; events read before it is known wait for it.
* `api_req_failed` and a request failing to stream are the model's API failing; a request the
  user cancelled, and a task resumed after it stopped, an interrupt; `condense_context` (Roo),
  `compaction` and the `condense` question carry the agent's summary of the task so far.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from typing import Any, Literal

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
    compaction_event,
    cut,
    first_line,
    iso_ms,
    result_event,
    string,
    system_event,
)

LOG_NAMES = ("ui_messages.json", "ui_messages.jsonl")
API_NAMES = ("api_conversation_history.json", "api_conversation_history.jsonl")
# the extensions' ids in an editor's globalStorage (NOTES "Where the files live")
EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")
EDITORS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
_CWD = re.compile(r"# Current (?:Working|Workspace) Directory \((.+?)\) Files")
_SECTION = re.compile(r"^\[([\w-]+)(?: for '(.*?)')?\] Result:", re.M)
_FAILED = re.compile(r"Command failed with exit code (-?\d+)")
_EXIT = re.compile(r"(?:Exit code: |\(exit code )(-?\d+)")
_DENIED = "The user denied this operation"
_TOOL_FAILED = ("The tool execution failed", "<error>")
MAX_HELD = 50  # events kept while the task's directory is not known yet (it comes early)
_REQ_APP = "REQ_APP"  # Cline appends it to a command that waits for approval
_APPROVALS = frozenset({"command", "tool", "use_mcp_server", "browser_action_launch"})
# messages of the UI that say nothing to learn from
_QUIET_SAYS = frozenset(
    {
        "reasoning",
        "api_req_finished",
        "api_req_retried",
        "api_req_retry_delayed",
        "checkpoint_created",
        "hook_status",
        "hook_output_stream",
        "hook",
        "hook_output",
        "mcp_server_request_started",
        "mcp_server_response",
        "mcp_notification",
        "subagent",
        "use_subagents",
        "subagent_usage",
        "shell_integration_warning",
        "shell_integration_warning_with_suggestion",
        "load_mcp_documentation",
        "deleted_api_reqs",
        "browser_action",
        "browser_action_result",
        "browser_action_launch",
        "info",
        "task_progress",
        "user_feedback_diff",
        "clineignore_error",
        "command_permission_denied",
        "generate_explanation",
        "condense_context_error",
        "codebase_search_result",
        "rooignore_error",
        "diff_error_resolved",
        "image",
    }
)
_QUIET_ASKS = frozenset(
    {"new_task", "report_bug", "auto_approval_max_req_reached", "mistake_limit_reached"}
)
# Cline's and Roo's file-changing tools, by the name every adapter gives an edit and a write
_EDIT_TOOLS = {
    "editedExistingFile": "edit",
    "appliedDiff": "edit",
    "insertContent": "edit",
    "searchAndReplace": "edit",
    "newFileCreated": "write",
}


class Cline(Adapter):
    name = "cline"
    shrink_means_rewritten = False  # a task's messages are rewritten whole (and cut back)

    def roots(self, place: Place) -> list[str]:
        # VS Code (and the editors built on it): `<User>/globalStorage/<extension>/tasks`; Cline
        # CLI and SDK builds: `CLINE_DATA_DIR`, else `$CLINE_DIR/data`, else `~/.cline/data`
        # (NOTES "Where the files live")
        out = [
            os.path.join(user, "globalStorage", ext, "tasks")
            for user in place.vscode_user_dirs(EDITORS)
            for ext in EXTENSIONS
        ]
        data = place.var("CLINE_DATA_DIR")
        if data is None:
            top = place.var("CLINE_DIR")
            data = os.path.join(top, "data") if top else os.path.join(place.home, ".cline", "data")
        out.append(os.path.join(data, "tasks"))
        return out

    def claims(self, path: str) -> bool:
        if os.path.basename(path) not in LOG_NAMES:
            return False
        return os.path.basename(os.path.dirname(os.path.dirname(path))) == "tasks"

    def sniff(self, record: dict[str, Any]) -> bool:
        return (
            record.get("type") in ("ask", "say")
            and isinstance(record.get("ts"), int)
            and ("say" in record or "ask" in record)
        )

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        if path.endswith(".jsonl"):
            return super().identity(path, size)
        # rewritten whole on every save: the task it belongs to is what stays
        task = os.path.basename(os.path.dirname(os.path.realpath(path)))
        digest = hashlib.sha256(f"cline-task:{task}".encode("utf-8", "surrogatepass")).hexdigest()
        return reader.Head(digest, reader.HEAD_BYTES)

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        if path.endswith(".jsonl"):
            for rec in super().records(path, position, max_bytes):
                if rec.data is not None and _streaming(rec.data):
                    return
                yield rec
            return
        try:
            with open(path, "rb") as f:
                doc = msgspec.json.decode(f.read())
        except (OSError, msgspec.DecodeError):
            return  # caught mid-write (or gone): read again next time
        if not isinstance(doc, list):
            return

        def make(i: int) -> Record | None:
            m = doc[i]
            if not isinstance(m, dict):
                return Record(0, None, True)
            if _streaming(m):
                return None  # still being written: this message and the ones after it wait
            return Record(0, m)

        # cut back (a checkpoint restored, a message edited) and grown again: see `rewound`
        yield from rewound.replay([_key(m) for m in doc], position, make)

    def begin(self, path: str, state: ParseState) -> None:
        task = os.path.dirname(os.path.realpath(path))
        state.session_id = f"cline-{os.path.basename(task)}"
        state.extra["dir"] = task
        state.cwd = _cwd_from_api_history(task)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        if rewound.answer(record, state):
            return []
        rewound.remember(state, _key(record))
        kind = record.get("type")
        what = record.get("say") if kind == "say" else record.get("ask")
        if kind not in ("ask", "say") or not isinstance(what, str):
            state.count("skipped")
            return []
        if state.session_id is None:
            state.session_id = "cline-" + str(record.get("ts"))
        events = self._message(kind, what, record, state)
        if state.cwd is None:
            held = state.extra.setdefault("held", [])
            held.extend(msgspec.to_builtins(e) for e in events)
            if len(held) > MAX_HELD:  # (stored with the cursor every batch: never unbounded)
                # the first (the task's request) is kept, the oldest after it dropped
                state.count("dropped_before_project", len(held) - MAX_HELD)
                del held[1 : 1 + len(held) - MAX_HELD]
            return []
        held = state.extra.pop("held", None) or []
        out = [msgspec.convert(e, EventIn) for e in held] + events
        return [Parsed(state.session_id, e) for e in out]

    def finish(self, state: ParseState) -> list[Parsed]:
        events = self._resolve(state, None)
        if state.cwd is None and state.extra.get("dir"):
            state.cwd = _cwd_from_api_history(state.extra["dir"])
        held = state.extra.pop("held", None) or []
        out = [msgspec.convert(e, EventIn) for e in held] + events
        return [Parsed(state.session_id, e) for e in out] if state.session_id else []

    # -- messages ----------------------------------------------------------------------------

    def _message(self, kind: str, what: str, m: dict[str, Any], state: ParseState) -> list[EventIn]:
        ts = iso_ms(m.get("ts"))
        text = string(m.get("text")) or ""
        x = state.extra
        if what in ("command", "tool", "use_mcp_server") and not (kind == "ask" and not text):
            out = self._resolve(state, None, ts=ts) if x.get("calls") else []
            return [*out, self._call(kind, what, text, ts, m, state)]
        if what == "command_output":
            x.pop("waiting", None)  # it runs: the user approved it
            calls = x.get("calls") or []
            if calls:
                calls[-1]["out"] = cut((calls[-1].get("out") or "") + text + "\n")
            return []
        if what == "api_req_started":
            return self._request(text, ts, state)
        if kind == "say":
            return self._say(what, text, ts, m, state)
        return self._ask(what, text, ts, state)

    def _say(
        self, what: str, text: str, ts: str | None, m: dict[str, Any], state: ParseState
    ) -> list[EventIn]:
        x = state.extra
        if what == "task":
            state.count("tasks")
            return [EventIn(role="user", kind="message", ts=ts, text=cut(text))] if text else []
        if what == "user_feedback":
            if not text.strip():
                return []
            state.count("user_feedback")
            waiting = x.pop("waiting", None)
            out: list[EventIn] = []
            origin: Literal["rejection"] | None = None
            if waiting:  # typed instead of approving: the call is refused, with this reason
                out = self._resolve(state, None, rejected=True, ts=ts)
                origin = "rejection"
            out.append(EventIn(role="user", kind="message", ts=ts, origin=origin, text=cut(text)))
            return out
        if what in ("text", "completion_result"):
            x.pop("waiting", None)
            if not text.strip():
                return []
            state.count("assistant_messages")
            return [EventIn(role="assistant", kind="message", ts=ts, text=cut(text))]
        if what in ("error", "diff_error"):
            state.count("tool_errors" if what == "diff_error" else "error_messages")
            if what == "diff_error":  # its text names the file the edit did not apply to
                text = f"The edit of {text or 'the file'} did not apply (diff_error)."
            if x.get("calls"):
                return self._resolve(state, None, failed=text, ts=ts)
            return [system_event(ts, f"Cline: {first_line(text)}")]
        if what in ("condense_context", "compaction"):
            cc = m.get("contextCondense")
            summary = string(cc.get("summary")) if isinstance(cc, dict) else None
            return self._compaction(summary or text, ts, state)
        if what in _QUIET_SAYS:
            return []
        state.count("skipped")
        return []

    def _ask(self, what: str, text: str, ts: str | None, state: ParseState) -> list[EventIn]:
        x = state.extra
        if what in ("followup", "plan_mode_respond", "completion_result"):
            x.pop("waiting", None)
            said = _question(text)
            if not said.strip():
                return []
            state.count("assistant_messages")
            return [EventIn(role="assistant", kind="message", ts=ts, text=cut(said))]
        if what == "api_req_failed":
            state.count("api_errors")
            return [system_event(ts, f"Cline's model call failed: {first_line(text)}")]
        if what in ("resume_task", "resume_completed_task"):
            state.count("resumes")
            if what == "resume_completed_task" or x.pop("cancelled", None):
                return []  # a finished task taken up again, or the cancel already said so
            state.count("interrupts")
            out = self._resolve(state, None, ts=ts)
            return [
                *out,
                system_event(ts, "the task was interrupted (resumed later)"),
            ]
        if what == "condense":
            return self._compaction(text, ts, state)
        if what in _QUIET_ASKS or what == "browser_action_launch":
            return []
        state.count("skipped")
        return []

    def _compaction(self, summary: str | None, ts: str | None, state: ParseState) -> list[EventIn]:
        state.count("compactions")
        if not summary or not summary.strip():
            return []
        return [compaction_event(ts, summary)]

    def _call(
        self, kind: str, what: str, text: str, ts: str | None, m: dict[str, Any], state: ParseState
    ) -> EventIn:
        """A shell command, file tool or MCP call; its result comes later."""
        call_id = f"cline-{m.get('ts')}"
        command = file = summary = detail = None
        if what == "command":
            name = "execute_command"
            command = text.removesuffix(_REQ_APP).strip()
        else:
            info = _json(text)
            if what == "use_mcp_server":
                name = f"mcp:{info.get('serverName') or '?'}:{info.get('toolName') or '?'}"
                detail = string(info.get("arguments"))
            else:
                tool = string(info.get("tool")) or "tool"
                name = _EDIT_TOOLS.get(tool, tool)
                file = string(info.get("path"))
                new = string(info.get("diff")) or string(info.get("content"))
                if tool in _EDIT_TOOLS and new:
                    detail = _written(new)[:2000]
                if file:
                    summary = f"{tool} {os.path.basename(file)}"
        x = state.extra
        x.setdefault("calls", []).append(
            {"id": call_id, "name": name, "command": command, "file": file}
        )
        if kind == "ask":
            x["waiting"] = True  # until the user approves it (or types instead)
        return call_event(
            state, ts, name, call_id, command=command, file=file, summary=summary, detail=detail
        )

    def _request(self, text: str, ts: str | None, state: ParseState) -> list[EventIn]:
        """A request to the model: it carries the results of the calls before it."""
        state.count("api_requests")
        state.extra.pop("waiting", None)
        info = _json(text)
        request = string(info.get("request")) or ""
        out: list[EventIn] = []
        if state.cwd is None:
            found = _CWD.search(request)
            if found:
                state.cwd = found.group(1).strip()
        if state.extra.get("calls"):
            out = self._resolve(state, request, ts=ts)
        reason = info.get("cancelReason")
        if reason == "user_cancelled":
            state.count("interrupts")
            state.extra["cancelled"] = True
            out.append(system_event(ts, "the user cancelled Cline"))
        elif reason == "streaming_failed" or info.get("streamingFailedMessage"):
            state.count("api_errors")
            failure = first_line(str(info.get("streamingFailedMessage") or reason))
            out.append(system_event(ts, f"Cline's model call failed: {failure}"))
        return out

    def _resolve(
        self,
        state: ParseState,
        request: str | None,
        *,
        rejected: bool = False,
        failed: str | None = None,
        ts: str | None = None,
    ) -> list[EventIn]:
        """The results of the calls still open: from the request that reports them (in order),
        a refusal, or an error message."""
        calls = state.extra.pop("calls", None) or []
        sections = _sections(request) if request else []
        out = []
        for i, c in enumerate(calls):
            body = c.get("out") or ""
            code: int | None = None
            is_error: bool | None = None
            denied = rejected
            if i < len(sections):
                said = sections[i]
                if not body.strip() or c["name"] != "execute_command":
                    body = said
                denied = denied or _DENIED in said[:300]
                failed_code = _FAILED.search(said[:300])
                code_m = failed_code or _EXIT.search(said[:300])
                code = int(code_m.group(1)) if code_m else None
                is_error = (code not in (None, 0)) or said.lstrip().startswith(_TOOL_FAILED)
            if failed is not None and i == len(calls) - 1:
                body, is_error = failed, True
            if denied:
                state.count("rejections")
                body = body or "The user denied this operation."
            out.append(
                result_event(
                    state,
                    ts,
                    c["name"],
                    c["id"],
                    body,
                    exit_code=code,
                    is_error=True if denied else is_error,
                    command=c.get("command"),
                    file=c.get("file"),
                    rejected=denied,
                )
            )
        return out


def _key(m: Any) -> str:
    """What names a message while it is rewritten (its text changes: a request's cost is added
    once it is done): its time, which Cline uses as its id."""
    if isinstance(m, dict) and isinstance(m.get("ts"), int | float):
        return f"{m['ts']}:{m.get('type')}"
    return json.dumps(m, sort_keys=True, default=str)


def _streaming(m: dict[str, Any]) -> bool:
    """A message still being written: streamed text, or a request whose details are loading."""
    if m.get("partial") is True:
        return True
    if m.get("say") == "api_req_started" and isinstance(m.get("text"), str):
        request = _json(m["text"]).get("request")
        return isinstance(request, str) and request.rstrip().endswith("Loading...")
    return False


def _sections(request: str) -> list[str]:
    """The tool results a request reports, in order (`[tool for 'arg'] Result:` and the text up
    to the next one or to the environment details)."""
    heads = list(_SECTION.finditer(request))
    out = []
    for i, h in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(request)
        body = request[h.end() : end]
        env = body.find("<environment_details>")
        out.append((body[:env] if env >= 0 else body).strip())
    return out


def _json(text: str) -> dict[str, Any]:
    try:
        d = json.loads(text)
    except ValueError:
        return {}
    return d if isinstance(d, dict) else {}


def _question(text: str) -> str:
    """A follow-up question's text (newer builds write JSON `{question, options}`)."""
    d = _json(text) if text.lstrip().startswith("{") else {}
    for k in ("question", "response", "text"):
        if isinstance(d.get(k), str):
            return str(d[k])
    return text


def _written(diff: str) -> str:
    """What an edit put in the file: the REPLACE parts of a SEARCH/REPLACE diff, the added lines
    of a unified diff, else the content written."""
    if "=======" in diff and ">>>>>>> REPLACE" in diff:
        parts = re.findall(r"^=======\n(.*?)^>>>>>>> REPLACE", diff, re.S | re.M)
        return "\n".join(p.rstrip("\n") for p in parts)
    added = [ln[1:] for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return "\n".join(added) if added else diff


def _cwd_from_api_history(task_dir: str) -> str | None:
    """The task's directory, from the environment details the model was first given."""
    for name in API_NAMES:
        try:
            with open(os.path.join(task_dir, name), "rb") as f:
                head = f.read(1 << 20).decode("utf-8", "replace")
        except OSError:
            continue
        # the details are JSON-escaped in the file: a path's backslashes are doubled
        found = _CWD.search(head)
        if found:
            return found.group(1).replace("\\\\", "\\").strip()
    return None


ADAPTER = Cline()
