"""VS Code + GitHub Copilot Chat (field notes: ../shared/formats/vscode-copilot-chat/NOTES.md).

Three shapes, all under `<Code User>/workspaceStorage/<workspace id>/`:

* `chatSessions/<session>.jsonl`, VS Code's chat session store: a mutation log (`kind` 0 = the
  whole `ISerializableChatData`, 1 = set at a path, 2 = push onto the array at a path (cut at `i`
  first), 3 = delete) replayed into the session's `requests[]`. Each request is one user turn
  and its response parts. Only requests still open are replayed (kept in the parse state, long
  strings cut); a request is read once it is final: a later request started, its `modelState`
  says complete / cancelled / failed (older builds: it has a `result`), or the session ended.
  The log is rewritten from a fresh `kind` 0 line after 1,024 entries: its identity is its
  session, not its first bytes, and requests already read are known by their `requestId`.
* `chatSessions/<session>.json`, the older whole document (the same data, versions 1 to 3),
  rewritten whole: the cursor is the index of the next request to read.
* `GitHub.copilot-chat/transcripts/<session>.jsonl`, the Copilot extension's hook transcript
  (`sessionTranscriptService.ts`; what the agent hooks hand over as `transcript_path`):
  `{type, data, id, timestamp, parentId}` entries. It tells failures only by `success`, so
  when the chat session store of the same session lies beside it, the store is read instead
  (and the hook worker is handed the store: `chat_store_of`).

Tool calls are `toolInvocationSerialized` parts; a command's exit code is in
`toolSpecificData.terminalCommandState.exitCode`, a denied confirmation (`isConfirmed` false or
`{type: 0}`) is the user rejecting the call. An edit tool's call carries the text it wrote (its
arguments' `newString`...); the `textEditGroup` VS Code records for the file becomes an `edit`
call, the name the offline writer knows edits by. The project is the workspace's folder
(`workspace.json`).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote, urlparse

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import reader
from reos_memory.squirrel.ingest.base import (
    MAX_TEXT,
    Adapter,
    Parsed,
    ParseState,
    Place,
    Record,
    call_event,
    cut,
    first_line,
    interrupt_event,
    iso_ms,
    json_record,
    result_event,
    string,
)

STORE_DIR = "chatSessions"
TRANSCRIPT_DIR = "transcripts"
EXTENSION_DIR = "github.copilot-chat"  # the extension's storage folder (case varies)
TRANSCRIPT_TYPES = frozenset(
    {
        "session.start",
        "user.message",
        "assistant.turn_start",
        "assistant.turn_end",
        "assistant.message",
        "tool.execution_start",
        "tool.execution_complete",
        "assistant.usage",
    }
)
# ResponseModelState: Pending, Complete, Cancelled, Failed, NeedsInput
_COMPLETE, _CANCELLED, _FAILED = 1, 2, 3
_SEALED = frozenset({_COMPLETE, _CANCELLED, _FAILED})
_VOTE_DOWN = 0  # ChatAgentVoteDirection.Down
_DENIED = 0  # ConfirmedReason {type: ToolConfirmKind.Denied}
_DONE_KEPT = 1000  # request ids remembered as read (a rewritten log starts with all of them)
_KEPT_TEXT = MAX_TEXT  # longest string kept of a request still open
# response parts that carry nothing for Squirrel
_QUIET_PARTS = frozenset(
    {
        "thinking",
        "progressMessage",
        "progressTask",
        "progressTaskSerialized",
        "hook",
        "notebookEditGroup",
        "codeblockUri",
        "inlineReference",
        "undoStop",
        "workspaceEdit",
        "multiDiffData",
        "confirmation",
        "elicitation",
        "elicitationSerialized",
        "questionCarousel",
        "pullRequest",
        "treeData",
        "clearToPreviousToolInvocation",
        "mcpServersStarting",
        "extensions",
        "command",
        "disabledClaudeHooks",
        "references",
        "codeCitation",
        "textEdit",
    }
)
_FILE_URI = re.compile(r"(?:file|vscode-remote)://[^\s)\]#?\"']+")
_FILE_KEYS = ("filePath", "file_path", "path", "uri")


class Copilot(Adapter):
    name = "copilot"
    # a chat session log is rewritten shorter after 1,024 entries; its identity is its session
    shrink_means_rewritten = False

    def roots(self, place: Place) -> list[str]:
        # NOTES "Where the files live": <Code User>/workspaceStorage on each OS, and Insiders;
        # chatSessions/ and the extension's transcripts/ both lie under it
        return [os.path.join(d, "workspaceStorage") for d in place.vscode_user_dirs()]

    def claims(self, path: str) -> bool:
        return _shape(path) in ("store", "document")

    def sniff(self, record: dict[str, Any]) -> bool:
        if record.get("kind") == 0 and isinstance(record.get("v"), dict):
            v = record["v"]
            return "requests" in v and ("sessionId" in v or "version" in v)
        return (
            record.get("type") in TRANSCRIPT_TYPES
            and isinstance(record.get("data"), dict)
            and "parentId" in record
        )

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        if _shape(path) in ("store", "document"):
            # rewritten whole (a compacted log, a saved document): the same session all along
            key = "copilot:" + os.path.basename(path).rsplit(".", 1)[0]
            return reader.Head(hashlib.sha256(key.encode()).hexdigest(), reader.HEAD_BYTES)
        return reader.head(path, size)

    def begin(self, path: str, state: ParseState) -> None:
        shape = _shape(path)
        state.extra["shape"] = shape
        sid = os.path.basename(path).rsplit(".", 1)[0]
        if shape in ("store", "document"):
            state.session_id = sid
        state.cwd = workspace_folder(_workspace_dir(path))
        if shape == "transcript" and chat_store_of(path):
            state.extra["beside_store"] = True

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        shape = _shape(path)
        if shape == "document":
            yield from _document_records(path, position)
            return
        if shape == "store" and position > 0 and not _at_line_start(path, position):
            position = 0  # rewritten from a fresh `kind` 0 line: replayed, read requests known
        yield from super().records(path, position, max_bytes)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        if "kind" in record and "type" not in record:
            events = self._store(record, state)
        elif record.get("type") in TRANSCRIPT_TYPES or "data" in record:
            events = self._transcript(record, state)
        else:
            state.count("skipped")
            return []
        sid = state.session_id
        return [Parsed(sid, e) for e in events] if sid else []

    def finish(self, state: ParseState) -> list[Parsed]:
        """The requests still open when the session ended: read as they are."""
        opened = state.extra.get("open") or {}
        if not opened or state.session_id is None:
            return []
        events: list[EventIn] = []
        for key in sorted(opened, key=int):
            events += self._request(opened[key], state)
        state.extra["open"] = {}
        return [Parsed(state.session_id, e) for e in events]

    # -- the chat session store: a mutation log replayed one open request at a time ---------

    def _store(self, rec: dict[str, Any], state: ParseState) -> list[EventIn]:
        kind = rec.get("kind")
        if kind == "document":  # a request of an older whole `.json` document
            req = rec.get("v")
            if isinstance(rec.get("sessionId"), str) and state.session_id is None:
                state.session_id = rec["sessionId"]
            return self._request(req, state) if isinstance(req, dict) else []
        if kind == 0:
            v = rec.get("v")
            if not isinstance(v, dict):
                state.count("skipped")
                return []
            state.session_id = string(v.get("sessionId")) or state.session_id
            return self._replace(v.get("requests"), state)
        path = rec.get("k")
        if kind not in (1, 2, 3) or not isinstance(path, list):
            state.count("skipped")
            return []
        if not path:
            if kind == 1 and isinstance(rec.get("v"), dict):
                return self._replace(rec["v"].get("requests"), state)
            return []
        if path[0] != "requests":
            return []  # the draft input, the title, the pending edits: nothing to learn
        if len(path) == 1:
            if kind == 2:
                return self._push_requests(rec, state)
            return self._replace(rec.get("v") if kind == 1 else [], state)
        index = path[1]
        opened = state.extra.setdefault("open", {})
        if not isinstance(index, int) or str(index) not in opened:
            return []  # a request already read (sealed ones are no longer changed)
        req = opened[str(index)]
        if len(path) == 2:
            if kind == 1 and isinstance(rec.get("v"), dict):
                opened[str(index)] = req = _slim(rec["v"])
            elif kind == 3:
                del opened[str(index)]
                return []
        else:
            _apply(req, path[2:], kind, rec.get("v"), rec.get("i"))
            opened[str(index)] = _slim(req)
        if _sealed(opened[str(index)]):
            return self._close(str(index), state)
        return []

    def _replace(self, requests: Any, state: ParseState) -> list[EventIn]:
        """The whole list of requests (a `kind` 0 line, a rewrite): the ones not yet read."""
        state.extra["open"] = {}
        reqs = [r for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []
        state.extra["len"] = len(reqs)
        out: list[EventIn] = []
        for i, req in enumerate(reqs):
            if _request_id(req) in state.extra.get("done", []):
                continue
            state.extra["open"][str(i)] = _slim(req)
            if i < len(reqs) - 1 or _sealed(req):
                out += self._close(str(i), state)
        return out

    def _push_requests(self, rec: dict[str, Any], state: ParseState) -> list[EventIn]:
        opened = state.extra.setdefault("open", {})
        at = rec.get("i")
        length = state.extra.get("len", 0)
        if isinstance(at, int) and 0 <= at <= length:
            for key in [k for k in opened if int(k) >= at]:
                del opened[key]  # cut off (a request edited and sent again)
            length = at
        items = _list(rec.get("v"))
        out: list[EventIn] = []
        for key in sorted(opened, key=int):  # a later request started: the earlier are final
            out += self._close(key, state)
        for item in items:
            if isinstance(item, dict) and _request_id(item) not in state.extra.get("done", []):
                opened[str(length)] = _slim(item)
            length += 1
        state.extra["len"] = length
        last = str(length - 1)
        for key in sorted(opened, key=int):
            if key != last or _sealed(opened[key]):
                out += self._close(key, state)
        return out

    def _close(self, key: str, state: ParseState) -> list[EventIn]:
        req = state.extra.get("open", {}).pop(key, None)
        if not isinstance(req, dict):
            return []
        return self._request(req, state)

    # -- one request: the user's words, the response's parts, how it ended ------------------

    def _request(self, req: dict[str, Any], state: ParseState) -> list[EventIn]:
        rid = _request_id(req)
        done = state.extra.setdefault("done", [])
        if rid is not None:
            if rid in done:
                return []
            done.append(rid)
            del done[:-_DONE_KEPT]
        state.count("requests")
        ts = iso_ms(req.get("timestamp"))
        out: list[EventIn] = []
        msg = req.get("message")
        text = msg if isinstance(msg, str) else (msg or {}).get("text")
        if isinstance(text, str) and text.strip():
            out.append(EventIn(role="user", kind="message", ts=ts, text=cut(text.strip())))
        said: list[str] = []
        parts = req.get("response")
        for part in parts if isinstance(parts, list) else []:
            if not isinstance(part, dict):
                continue
            pkind = part.get("kind")
            if pkind is None or pkind == "markdownContent" or pkind == "markdownVuln":
                said.append(_markdown(part))
                continue
            if pkind in ("toolInvocationSerialized", "toolInvocation"):
                out += _flush_said(said, ts)
                out += self._tool(part, ts, state)
            elif pkind == "textEditGroup":
                out += _flush_said(said, ts)
                out += _edit(part, ts, state)
            elif pkind == "warning":
                out += _flush_said(said, ts)
                state.count("warnings")
                out.append(
                    EventIn(
                        role="system",
                        kind="message",
                        ts=ts,
                        summary="warning: " + first_line(_markdown(part)),
                    )
                )
            elif pkind not in _QUIET_PARTS:
                state.count("skipped")
        out += _flush_said(said, ts)
        model_state = req.get("modelState")
        value = model_state.get("value") if isinstance(model_state, dict) else None
        result = _dict(req.get("result"))
        error = result.get("errorDetails") if isinstance(result, dict) else None
        if value == _CANCELLED or req.get("isCanceled") is True:
            out.append(interrupt_event(state, ts))
        elif value == _FAILED or isinstance(error, dict):
            state.count("request_errors")
            why = string((error or {}).get("message")) if isinstance(error, dict) else None
            out.append(
                EventIn(
                    role="system",
                    kind="message",
                    ts=ts,
                    summary="the request failed" + (f": {first_line(why)}" if why else ""),
                )
            )
        if req.get("vote") == _VOTE_DOWN:
            state.count("votes_down")
            reason = string(req.get("voteDownReason"))
            out.append(
                EventIn(
                    role="system",
                    kind="message",
                    ts=ts,
                    summary="the user rated the response unhelpful"
                    + (f" ({reason})" if reason else ""),
                )
            )
        return out

    def _tool(self, part: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
        name = string(part.get("toolId")) or "tool"
        call_id = string(part.get("toolCallId"))
        tsd = _dict(part.get("toolSpecificData"))
        command = output = None
        code: int | None = None
        detail = None
        file = None
        if tsd.get("kind") == "terminal":
            line = tsd.get("commandLine")
            if isinstance(line, dict):
                command = (
                    string(line.get("userEdited"))
                    or string(line.get("toolEdited"))
                    or string(line.get("original"))
                )
            command = command or string(tsd.get("command"))
            st = tsd.get("terminalCommandState")
            if isinstance(st, dict) and isinstance(st.get("exitCode"), int):
                code = st["exitCode"]
            out = tsd.get("terminalCommandOutput")
            output = string(out.get("text")) if isinstance(out, dict) else None
        raw = tsd.get("rawInput") if tsd.get("kind") == "input" else None
        written = None
        if isinstance(raw, dict):
            file = next((_path(raw[k]) for k in _FILE_KEYS if string(raw.get(k))), None)
            detail = json.dumps(raw, ensure_ascii=False)[:2000]
            written = _written(raw)
        said = _markdown(part.get("pastTenseMessage")) or _markdown(part.get("invocationMessage"))
        if file is None:
            m = _FILE_URI.search(said)
            file = _path(m.group(0)) if m else None
        summary = first_line(said) if said else None
        if written is not None:
            # what the edit put in the file, not its arguments with the text it took out
            detail = written[:2000]
            summary = f"{name} {os.path.basename(file)}" if file else name
        out_events = [
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
        confirmed = part.get("isConfirmed")
        rejected = confirmed is False or (
            isinstance(confirmed, dict) and confirmed.get("type") == _DENIED
        )
        details = part.get("resultDetails")
        is_error = isinstance(details, dict) and details.get("isError") is True
        if rejected:
            state.count("rejections")
            out_events.append(
                result_event(
                    state,
                    ts,
                    name,
                    call_id,
                    "the user denied this tool call",
                    is_error=True,
                    command=command,
                    file=file,
                    rejected=True,
                )
            )
        elif part.get("isComplete") is True or code is not None:
            text = output or _details_text(details) or said
            out_events.append(
                result_event(
                    state,
                    ts,
                    name,
                    call_id,
                    text,
                    exit_code=code,
                    is_error=is_error or (code is not None and code != 0),
                    command=command,
                    file=file,
                )
            )
        return out_events

    # -- the Copilot extension's hook transcript -------------------------------------------

    def _transcript(self, rec: dict[str, Any], state: ParseState) -> list[EventIn]:
        kind = rec.get("type")
        data = rec.get("data")
        if not isinstance(data, dict):
            state.count("skipped")
            return []
        ts = string(rec.get("timestamp"))
        if kind == "session.start":
            state.session_id = state.session_id or string(data.get("sessionId"))
            ctx = data.get("context")
            cwd = string(ctx.get("cwd")) if isinstance(ctx, dict) else None
            state.cwd = state.cwd or cwd
            return []
        if state.extra.get("beside_store"):
            state.count("read_from_store")  # the chat session store of this session is read
            return []
        if kind == "user.message":
            text = string(data.get("content"))
            return [EventIn(role="user", kind="message", ts=ts, text=cut(text))] if text else []
        if kind == "assistant.message":
            out: list[EventIn] = []
            text = string(data.get("content"))
            if text and text.strip():
                out.append(EventIn(role="assistant", kind="message", ts=ts, text=cut(text)))
            reqs = data.get("toolRequests")
            for tr in reqs if isinstance(reqs, list) else []:
                if isinstance(tr, dict):
                    out.append(
                        _transcript_call(
                            tr.get("toolCallId"), tr.get("name"), tr.get("arguments"), ts, state
                        )
                    )
            return out
        if kind == "tool.execution_start":
            call_id = string(data.get("toolCallId"))
            if call_id and call_id in state.calls:
                return []  # named by the assistant message already
            return [
                _transcript_call(call_id, data.get("toolName"), data.get("arguments"), ts, state)
            ]
        if kind == "tool.execution_complete":
            call_id = string(data.get("toolCallId"))
            result = data.get("result")
            text = string(result.get("content")) if isinstance(result, dict) else None
            ok = data.get("success") is not False
            return [
                result_event(
                    state, ts, state.calls.get(call_id or ""), call_id, text, is_error=not ok
                )
            ]
        if kind not in TRANSCRIPT_TYPES:
            state.count("skipped")
        return []


def _transcript_call(
    call_id: Any, name: Any, arguments: Any, ts: str | None, state: ParseState
) -> EventIn:
    args = arguments
    if isinstance(arguments, str):
        try:
            args = json.loads(arguments)
        except ValueError:
            args = {}
    args = args if isinstance(args, dict) else {}
    command = string(args.get("command"))
    file = next((_path(args[k]) for k in _FILE_KEYS if string(args.get(k))), None)
    return call_event(
        state,
        ts,
        string(name) or "tool",
        string(call_id),
        command=command,
        file=file,
        summary=first_line(string(args.get("explanation")) or "") or None,
        detail=None if command else json.dumps(args, ensure_ascii=False)[:2000],
    )


# -- replaying the mutation log ------------------------------------------------------------


def _apply(obj: Any, path: list[Any], kind: Any, value: Any, at: Any) -> None:
    """A set (1), push (2) or delete (3) at `path` inside `obj` (a request being replayed)."""
    for i, key in enumerate(path[:-1]):
        nxt = _get(obj, key)
        if nxt is None:
            nxt = [] if isinstance(path[i + 1], int) else {}
            _put(obj, key, nxt)
        obj = nxt
    last = path[-1]
    if kind == 1:
        _put(obj, last, value)
    elif kind == 3:
        _put(obj, last, None)
    elif kind == 2:
        arr = _get(obj, last)
        if not isinstance(arr, list):
            arr = []
            _put(obj, last, arr)
        if isinstance(at, int) and 0 <= at <= len(arr):
            del arr[at:]
        if isinstance(value, list):
            arr.extend(value)


def _get(obj: Any, key: Any) -> Any:
    if isinstance(obj, dict) and isinstance(key, str):
        return obj.get(key)
    if isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
        return obj[key]
    return None


def _put(obj: Any, key: Any, value: Any) -> None:
    if isinstance(obj, dict) and isinstance(key, str):
        obj[key] = value
    elif isinstance(obj, list) and isinstance(key, int) and key >= 0:
        while len(obj) <= key:
            obj.append(None)
        obj[key] = value


def _slim(value: Any) -> Any:
    """A request as kept while open: long strings cut, so the parse state stays small."""
    if isinstance(value, str):
        return cut(value, _KEPT_TEXT)
    if isinstance(value, list):
        return [_slim(v) for v in value]
    if isinstance(value, dict):
        return {k: _slim(v) for k, v in value.items() if k not in ("usedContext", "variableData")}
    return value


def _sealed(req: dict[str, Any]) -> bool:
    state = req.get("modelState")
    if isinstance(state, dict):
        return state.get("value") in _SEALED
    return isinstance(req.get("result"), dict) or req.get("isCanceled") is True


def _request_id(req: Any) -> str | None:
    return string(req.get("requestId")) if isinstance(req, dict) else None


# -- response parts ------------------------------------------------------------------------


def _markdown(part: Any) -> str:
    """The text of a Markdown string (`{value}`) or of a part holding one (`content`)."""
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        return ""
    if isinstance(part.get("value"), str):
        return str(part["value"])
    content = part.get("content")
    if isinstance(content, dict) and isinstance(content.get("value"), str):
        return str(content["value"])
    return content if isinstance(content, str) else ""


def _flush_said(said: list[str], ts: str | None) -> list[EventIn]:
    text = "".join(said).strip()
    said.clear()
    return [EventIn(role="assistant", kind="message", ts=ts, text=cut(text))] if text else []


def _edit(part: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
    """The edits the agent made to a file: what it wrote there, for the writer to compare with
    the failing attempts ("requests" failed, the edit brought "httpx"). VS Code records them
    whichever tool made them; the event is named `edit`, as the offline writer knows edits
    (`rules.EDIT_TOOLS`), not by Copilot's tool names."""
    file = _path(part.get("uri"))
    written: list[str] = []
    groups = part.get("edits")
    for group in groups if isinstance(groups, list) else []:
        for edit in group if isinstance(group, list) else [group]:
            if isinstance(edit, dict) and isinstance(edit.get("text"), str) and edit["text"]:
                written.append(edit["text"])
    if not written:
        return []  # the closing marker of an edit session
    name = os.path.basename(file) if file else ""
    return [
        call_event(
            state,
            ts,
            "edit",
            None,
            file=file,
            summary=f"edit {name}".strip(),
            detail="\n".join(written)[:2000],
        )
    ]


def _written(raw: dict[str, Any]) -> str | None:
    """The new text of an edit tool's arguments (`copilot_replaceString`'s `newString`,
    `copilot_multiReplaceString`'s `replacements`, `copilot_createFile`'s `content`,
    `copilot_insertEdit`'s `code`)."""
    for key in ("newString", "content", "code"):
        if isinstance(raw.get(key), str):
            return str(raw[key])
    reps = raw.get("replacements")
    if isinstance(reps, list):
        texts = [r["newString"] for r in reps if isinstance(r, dict) and string(r.get("newString"))]
        return "\n".join(texts) if texts else None
    return None


def _details_text(details: Any) -> str | None:
    if not isinstance(details, dict):
        return None
    out = details.get("output")
    texts = [
        o["value"]
        for o in (out if isinstance(out, list) else [])
        if isinstance(o, dict) and isinstance(o.get("value"), str) and o.get("isText", True)
    ]
    return "\n".join(texts) or None


def _path(uri: Any) -> str | None:
    """A file path from a URI (a string or VS Code's `{scheme, path}` object) or a path."""
    if isinstance(uri, dict):
        p = uri.get("fsPath") or uri.get("path")
        return _path(p) if isinstance(p, str) else None
    if not isinstance(uri, str) or not uri:
        return None
    if "://" not in uri:
        return uri
    p = unquote(urlparse(uri).path)
    if re.match(r"^/[A-Za-z]:", p):
        p = p[1:]  # file:///c%3A/Users/... on Windows
    return p or None


# -- where a file lies ---------------------------------------------------------------------


def _shape(path: str) -> str | None:
    parent = os.path.basename(os.path.dirname(path))
    name = os.path.basename(path)
    if parent == STORE_DIR:
        if name.endswith(".jsonl"):
            return "store"
        if name.endswith(".json"):
            return "document"
    if (
        parent == TRANSCRIPT_DIR
        and name.endswith(".jsonl")
        and os.path.basename(os.path.dirname(os.path.dirname(path))).lower() == EXTENSION_DIR
    ):
        return "transcript"
    return None


def _workspace_dir(path: str) -> str:
    """`workspaceStorage/<id>` of a chat session log or of a hook transcript."""
    up = os.path.dirname(os.path.dirname(path))
    if _shape(path) == "transcript":
        up = os.path.dirname(up)
    return up


def chat_store_of(transcript: str) -> str | None:
    """The chat session store's log of the session a hook transcript is of
    (`<workspace>/chatSessions/<session>.jsonl`, or an older `.json`), when it lies in the
    same workspace storage as the transcript (`<workspace>/GitHub.copilot-chat/transcripts/`)."""
    if _shape(transcript) != "transcript":
        return None
    sid = os.path.basename(transcript)[: -len(".jsonl")]
    store = os.path.join(_workspace_dir(transcript), STORE_DIR, sid)
    return next((store + x for x in (".jsonl", ".json") if os.path.isfile(store + x)), None)


def workspace_folder(ws_dir: str) -> str | None:
    """The folder a VS Code workspace opened (`workspace.json`: `folder`, or the directory of
    a `.code-workspace` file)."""
    try:
        with open(os.path.join(ws_dir, "workspace.json"), "rb") as f:
            data = json_record(f.read(1 << 16))
    except OSError:
        return None
    if not data:
        return None
    folder = _path(data.get("folder"))
    if folder:
        return folder
    ws = _path(data.get("workspace") or data.get("configuration"))
    return os.path.dirname(ws) if ws else None


def _at_line_start(path: str, position: int) -> bool:
    """Whether `position` still starts a line of this log (false once it was rewritten)."""
    try:
        with open(path, "rb") as f:
            f.seek(position - 1)
            return f.read(1) == b"\n"
    except OSError:
        return False


def _document_records(path: str, position: int) -> Iterator[Record]:
    """The requests of a whole `.json` document from index `position` on; the last one only
    once it is final (the document is saved again while a request runs)."""
    with open(path, "rb") as f:
        data = f.read()
    doc = json_record(data)
    if doc is None:
        if data.strip():
            raise ValueError("a chat session document caught half-written")
        return
    reqs = doc.get("requests")
    reqs = reqs if isinstance(reqs, list) else []
    sid = string(doc.get("sessionId"))
    for i in range(position, len(reqs)):
        req = reqs[i]
        last = i == len(reqs) - 1
        if last and isinstance(req, dict) and "modelState" in req and not _sealed(req):
            return
        yield Record(i + 1, {"kind": "document", "v": req, "sessionId": sid})


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


ADAPTER = Copilot()
