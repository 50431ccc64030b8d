"""Gemini CLI chat recordings (`~/.gemini/tmp/<project>/chats/session-*.jsonl`, and the single
`session-*.json` document older versions rewrote whole). Field notes:
../shared/formats/gemini-cli/NOTES.md (google-gemini/gemini-cli `chatRecordingTypes.ts`,
`chatRecordingService.ts`, `config/storage.ts`, `config/projectRegistry.ts`, `tools/shell.ts`).

* The first line is the session's metadata (`sessionId`, `projectHash`, `kind`, `directories`);
  then message records (`type` user, gemini, info, error, warning), `{"$set": {...}}` updates
  and `{"$rewindTo": id}` lines.
* A message is appended again, whole, each time it changes (tokens arrive, tool calls are merged
  into the last `gemini` message, a call's status moves on): its text is taken once, each tool
  call once, and each call's result once its status is final (`success`, `error`,
  `cancelled`). Calls still `scheduled`/`executing`/`awaiting_approval` wait for a later copy.
* Shell runs (`run_shell_command`) announce a non-zero exit as an `Exit Code: N` line of the
  result; a finished run without it exited 0. A call the user declined is `cancelled` with "User
  did not allow tool call" (a rejection); another cancelled call was interrupted.
* `$rewindTo` discards that message and what followed: what was learned from them cannot be
  unsaid, so the rewind becomes an event of its own (the user undid the assistant's work).
  A `$set` holding `messages` is a checkpoint (history compression): of it only the new
  compression summary (a user turn starting `<state_snapshot>`) is new, as a compaction summary.
* The project: the CLI writes the project's path into `tmp/<project>/.project_root`; else
  `~/.gemini/projects.json` maps project paths to their directory's slug (and older hash
  directories are sha256 of the path, as `projectHash` is); else the session's `directories`.
* Subagent sessions (`chats/<parent session>/<session>.jsonl`, `kind: "subagent"`) count for the
  parent session; their prompts, written by the parent agent, are not the user's requests.
* Hook context (`<hook_context>...</hook_context>`, how the CLI wraps what a hook added to a
  prompt) is never the user's words and is cut from their messages.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Iterator
from typing import Any

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest import reader
from reos_memory.squirrel.ingest.base import (
    Adapter,
    Parsed,
    ParseState,
    Place,
    Record,
    args_call_event,
    as_text,
    compaction_event,
    cut,
    first_line,
    interrupt_event,
    result_event,
    string,
)

FINAL = frozenset({"success", "error", "cancelled"})
MAX_IDS = 512  # message and call ids remembered for taking each once
MAX_LEGACY = 4096  # ids of a resumed legacy document's messages (kept until a new one comes)
_SHELL = "run_shell_command"
_EDITS = {"write_file": "content", "replace": "new_string"}
_FILE_KEYS = ("file_path", "absolute_path", "path", "dir_path")
_EXIT = re.compile(r"^Exit Code: (-?\d+)\s*$", re.M)
_TRAILER = re.compile(r"^(?:Error|Exit Code|Signal|Background PIDs|Process Group PGID): ")
_LEADER = re.compile(r"^(?:Command|Directory): ")
_BODY = re.compile(r"^(?:Output|Stdout): ?")
_HOOK_CONTEXT = re.compile(r"<hook_context>.*?(?:</hook_context>|\Z)", re.S)
_REFERENCED = "\n--- Content from referenced files ---"  # @file inclusions the CLI appended
_SNAPSHOT = "<state_snapshot>"  # history compression's summary, sent as a user turn
_ACK = "Got it. Thanks for the additional context!"  # the model turn that follows it
_DECLINED = "did not allow"
_NOT_RUN = ("Command moved to background", "Command was cancelled", "Command was automatically")
_SESSION_ID = re.compile(rb'"sessionId"\s*:\s*"([^"]+)"')


class Gemini(Adapter):
    name = "gemini"
    # a legacy `.json` document is rewritten whole and may shrink (a rewind); the JSONL log is
    # only appended to, and a replaced one starts with another session's metadata line
    shrink_means_rewritten = False

    def roots(self, place: Place) -> list[str]:
        # `~/.gemini/tmp` on every OS; `$GEMINI_CLI_HOME` stands for the home directory
        home = place.var("GEMINI_CLI_HOME") or place.home
        return [os.path.join(home, ".gemini", "tmp")]

    def claims(self, path: str) -> bool:
        name = os.path.basename(path)
        return (
            name.startswith("session-")
            and name.endswith(".json")
            and os.path.basename(os.path.dirname(path)) == "chats"
        )

    def sniff(self, record: dict[str, Any]) -> bool:
        # the metadata line (or a whole legacy record on one line): what the CLI's reader keys on
        return isinstance(record.get("sessionId"), str) and isinstance(
            record.get("projectHash"), str
        )

    def begin(self, path: str, state: ParseState) -> None:
        chats = _chats_dir(path)
        if chats is not None:
            state.extra["project_dir"] = os.path.dirname(chats)
            parent = os.path.dirname(path)
            if parent != chats:  # chats/<parent session>/<session>.jsonl: a subagent's
                state.extra["parent"] = os.path.basename(parent)
        if path.endswith(".json"):
            state.extra["document"] = path
        elif path.endswith(".jsonl"):
            # a legacy session resumed: the CLI writes it again whole as `.jsonl` beside the
            # `.json` already read; the messages that one holds are not new
            old = _legacy_ids(path[:-1])
            if old:
                state.extra["legacy"] = old

    # -- reading: JSONL lines, or the messages of a legacy document ----------------------------

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        if not path.endswith(".json"):
            yield from super().records(path, position, max_bytes)
            return
        doc = _document(path)
        if doc is None:
            return  # half-written, or its session now lives on in the `.jsonl` beside it
        if not isinstance(doc.get("sessionId"), str):
            if position == 0:
                yield Record(1, None, True)
            return
        messages = _settled(doc)
        # position 0 is the metadata; message i is record i + 1
        if position == 0:
            yield Record(1, {k: v for k, v in doc.items() if k != "messages"})
        for i in range(max(position - 1, 0), len(messages)):
            m = messages[i]
            yield Record(i + 2, m if isinstance(m, dict) else None, not isinstance(m, dict))

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        if not path.endswith(".json"):
            return super().identity(path, size)
        # rewritten whole as it grows (its `lastUpdated` near the top changes each time): the
        # session id tells one session's document from another's
        with open(path, "rb") as f:
            m = _SESSION_ID.search(f.read(reader.HEAD_BYTES))
        key = m.group(1) if m else b""
        return reader.Head(hashlib.sha256(b"gemini:" + key).hexdigest(), reader.HEAD_BYTES)

    def finish(self, state: ParseState) -> list[Parsed]:
        """A legacy document's last `gemini` message, held back while more tool calls could
        still be merged into it."""
        path = state.extra.get("document")
        doc = _document(path) if isinstance(path, str) and os.path.exists(path) else None
        messages = doc.get("messages") if doc else None
        if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
            return []
        return self.parse(messages[-1], state)

    # -- parsing -------------------------------------------------------------------------------

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        if "$rewindTo" in record:
            return self._rewind(record, state)
        if isinstance(record.get("$set"), dict):
            return self._update(record["$set"], state)
        if isinstance(record.get("id"), str):
            return self._wrap(self._message(record, state), state)
        if self.sniff(record):
            return self._metadata(record, state)
        state.count("skipped")
        return []

    def _wrap(self, events: list[EventIn], state: ParseState) -> list[Parsed]:
        if not events:
            return []
        if state.session_id is None:
            state.count("skipped", len(events))  # before the metadata line: nobody's
            return []
        return [Parsed(state.session_id, e) for e in events]

    def _metadata(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        sid = string(record.get("sessionId"))
        parent = state.extra.get("parent")
        if record.get("kind") == "subagent" or parent:
            state.extra["subagent"] = True
        if state.session_id is None:
            state.session_id = parent or sid
        if state.cwd is None:
            state.cwd = _project_root(
                state.extra.get("project_dir"),
                string(record.get("projectHash")),
                record.get("directories"),
            )
        messages = record.get("messages")  # a whole legacy record on one line
        if not isinstance(messages, list):
            return []
        out: list[EventIn] = []
        for m in messages:
            if isinstance(m, dict) and isinstance(m.get("id"), str):
                out += self._message(m, state)
        return self._wrap(out, state)

    def _update(self, changes: dict[str, Any], state: ParseState) -> list[Parsed]:
        if state.cwd is None and isinstance(changes.get("directories"), list):
            state.cwd = _project_root(None, None, changes["directories"])
        messages = changes.get("messages")
        if not isinstance(messages, list):
            return []  # lastUpdated, summary, directories, memoryScratchpad
        # a checkpoint: the history rebuilt (compressed); only its summary is new
        state.count("checkpoints")
        seen = _ids(state, "seen")
        out: list[EventIn] = []
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("id"), str):
                continue
            if m["id"] not in seen and _is_summary(m):
                out += self._message(m, state)
            _remember(state, "seen", m["id"])
        return self._wrap(out, state)

    def _rewind(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        state.count("rewinds")
        seen: list[str] = state.extra.get("seen", [])
        target = record.get("$rewindTo")
        # what was dropped may be recorded again (the same prompt, re-sent): it is new then
        state.extra["seen"] = seen[: seen.index(target)] if target in seen else []
        event = EventIn(
            role="system",
            kind="message",
            summary="the user rewound the conversation, discarding the assistant's work after"
            " that point",
        )
        return self._wrap([event], state)

    def _message(self, m: dict[str, Any], state: ParseState) -> list[EventIn]:
        legacy = state.extra.get("legacy")
        if legacy:
            if m["id"] in legacy:
                state.count("read_in_legacy_document")
                return []
            del state.extra["legacy"]  # past the resumed history: only new messages follow
        kind = m.get("type")
        ts = string(m.get("timestamp"))
        first = m["id"] not in _ids(state, "seen")
        _remember(state, "seen", m["id"])
        if kind == "user":
            return self._user(m, ts, state) if first else []
        if kind == "gemini":
            return self._gemini(m, ts, first, state)
        if not first:
            return []
        if kind == "error":
            # an API error, a quota: the session hit a wall (not the project's own failure)
            state.count("error_messages")
            text = as_text(m.get("content"))
            return [
                EventIn(
                    role="system",
                    kind="message",
                    ts=ts,
                    is_error=True,
                    summary=f"Gemini CLI error: {first_line(text)}" if text else "Gemini CLI error",
                )
            ]
        if kind in ("info", "warning"):
            state.count("notices")  # the UI's notices to the user
            return []
        state.count("skipped")
        return []

    def _user(self, m: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
        if state.extra.get("subagent"):
            state.count("subagent_prompts")  # written by the parent agent, not the user
            return []
        text = _said(m.get("content"))
        if text.startswith(_SNAPSHOT):
            state.count("compact_summaries")
            return [compaction_event(ts, text)]
        shown = _said(m.get("displayContent"))  # what the user typed, @file inclusions folded
        text = (shown or text).split(_REFERENCED, 1)[0].strip()
        if not text:
            return []
        state.count("user_messages")
        return [EventIn(role="user", kind="message", ts=ts, text=cut(text))]

    def _gemini(
        self, m: dict[str, Any], ts: str | None, first: bool, state: ParseState
    ) -> list[EventIn]:
        out: list[EventIn] = []
        if first and not state.extra.get("subagent"):
            text = _model_text(m.get("content"))
            if text and text != _ACK:
                out.append(EventIn(role="assistant", kind="message", ts=ts, text=cut(text)))
        calls = m.get("toolCalls")
        for call in calls if isinstance(calls, list) else []:
            if isinstance(call, dict) and isinstance(call.get("id"), str):
                out += self._call(call, ts, state)
        return out

    def _call(self, call: dict[str, Any], ts: str | None, state: ParseState) -> list[EventIn]:
        cid = call["id"]
        name = string(call.get("name")) or "tool"
        raw = call.get("args")
        args: dict[str, Any] = raw if isinstance(raw, dict) else {}
        ts = string(call.get("timestamp")) or ts
        command = string(args.get("command")) if name == _SHELL else None
        file = next((args[k] for k in _FILE_KEYS if string(args.get(k))), None)
        out: list[EventIn] = []
        if cid not in state.calls:
            written = string(args.get(_EDITS[name])) if name in _EDITS else None
            out.append(
                args_call_event(
                    state, ts, name, cid, args, command=command, file=file, written=written
                )
            )
        status = call.get("status")
        if status not in FINAL:
            state.count("pending_results")
            return out
        if cid in _ids(state, "done"):
            return out
        _remember(state, "done", cid)
        text = _result_text(call)
        if status == "cancelled":
            declined = _DECLINED in text.lower()
            res = result_event(
                state, ts, name, cid, text, is_error=True, command=command, file=file,
                rejected=declined,
            )  # fmt: skip
            if declined:
                state.count("rejections")
                return [*out, res]
            return [*out, res, interrupt_event(state, ts)]
        code = None
        if name == _SHELL:
            found = _EXIT.search(text)
            if found:
                code = int(found.group(1))
            elif status == "success" and not text.lstrip().startswith(_NOT_RUN):
                code = 0
            text = _shell_output(text)
        failed = status == "error" or code not in (None, 0)
        return [
            *out,
            result_event(
                state, ts, name, cid, text, exit_code=code, is_error=failed, command=command,
                file=file,
            ),
        ]  # fmt: skip


def _result_text(call: dict[str, Any]) -> str:
    """What the tool answered the model (`functionResponse.response.output` or `.error`), else
    what the UI showed."""
    parts = call.get("result")
    texts: list[str] = []
    for part in parts if isinstance(parts, list) else [parts]:
        if not isinstance(part, dict):
            if isinstance(part, str):
                texts.append(part)
            continue
        fr = part.get("functionResponse")
        resp = fr.get("response") if isinstance(fr, dict) else None
        if isinstance(resp, dict):
            for key in ("output", "error", "content"):
                value = resp.get(key)
                if isinstance(value, str) and value:
                    texts.append(value)
                    break
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    if texts:
        return "\n".join(texts)
    shown = call.get("resultDisplay")
    return shown if isinstance(shown, str) else ""


def _shell_output(text: str) -> str:
    """What a shell run printed, out of the frame `shell.ts` puts around it for the model
    (`Command:`/`Directory:` before, `Output: ...`, then `Error:`, `Exit Code:`, `Signal:`,
    `Background PIDs:`, `Process Group PGID:` lines; older versions wrote each, "(none)" when
    empty): the frame's own lines would be taken for the error the output shows."""
    lines = text.splitlines()
    trailer: list[str] = []
    while lines and _TRAILER.match(lines[-1]):
        trailer.append(lines.pop())
    while lines and _LEADER.match(lines[0]):
        lines.pop(0)
    if not lines or not _BODY.match(lines[0]):
        return text  # not the frame: as it is
    lines[0] = _BODY.sub("", lines[0], count=1)
    if lines == ["(empty)"]:
        lines = []
    # an error the run itself reported (it could not start, it was killed) stays
    errors = [x for x in reversed(trailer) if x.startswith("Error: ") and x != "Error: (none)"]
    return "\n".join(lines + errors).strip()


def _said(content: Any) -> str:
    """A user turn's text with the context hooks added to it cut out."""
    return _HOOK_CONTEXT.sub("", as_text(content)).strip()


def _model_text(content: Any) -> str:
    """The model's text, without its thought parts."""
    if isinstance(content, list):
        content = [p for p in content if not (isinstance(p, dict) and p.get("thought"))]
    return as_text(content).strip()


def _is_summary(m: dict[str, Any]) -> bool:
    return m.get("type") == "user" and as_text(m.get("content")).lstrip().startswith(_SNAPSHOT)


def _ids(state: ParseState, key: str) -> list[str]:
    ids = state.extra.get(key)
    return ids if isinstance(ids, list) else []


def _remember(state: ParseState, key: str, value: str) -> None:
    ids = _ids(state, key)
    if value in ids:
        return
    ids.append(value)
    del ids[: max(0, len(ids) - MAX_IDS)]
    state.extra[key] = ids


def _legacy_ids(path: str) -> list[str]:
    """The message ids of a legacy `.json` session document (at most MAX_LEGACY, the last)."""
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return []
    messages = doc.get("messages") if isinstance(doc, dict) else None
    ids = [
        m["id"]
        for m in (messages if isinstance(messages, list) else [])
        if isinstance(m, dict) and isinstance(m.get("id"), str)
    ]
    return ids[-MAX_LEGACY:]


def _chats_dir(path: str) -> str | None:
    """The `chats` directory a session file lies in (directly, or in a subagent's folder)."""
    d = os.path.dirname(path)
    for _ in range(2):
        if os.path.basename(d) == "chats":
            return d
        d = os.path.dirname(d)
    return None


def _document(path: str) -> dict[str, Any] | None:
    """A legacy session document, None while it is half-written or when the CLI has moved its
    session to the `.jsonl` beside it (a resumed session is written there, whole)."""
    if os.path.exists(path + "l"):
        return None
    try:
        with open(path, "rb") as f:
            doc = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else {}


def _settled(doc: dict[str, Any]) -> list[Any]:
    """The messages that will not change any more: all but a last `gemini` message, into which
    later tool calls are still merged (read at the session's end)."""
    messages = doc.get("messages")
    if not isinstance(messages, list):
        return []
    last = messages[-1] if messages else None
    if isinstance(last, dict) and last.get("type") == "gemini":
        return messages[:-1]
    return messages


def _project_root(project_dir: Any, project_hash: str | None, directories: Any) -> str | None:
    """The project a session worked in, from what the CLI wrote beside its logs."""
    if isinstance(project_dir, str):
        try:
            with open(os.path.join(project_dir, ".project_root"), encoding="utf-8") as f:
                root = f.read().strip()
        except (OSError, ValueError):
            root = ""
        if root:
            return root
        slug = os.path.basename(project_dir)
        for path, name in _registry(os.path.dirname(os.path.dirname(project_dir))).items():
            if name == slug or (project_hash and _hash_of(path, project_hash)):
                return path
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        return directories[0]
    return None


def _registry(gemini_dir: str) -> dict[str, str]:
    """`~/.gemini/projects.json`: project path -> the slug of its directory under `tmp`."""
    try:
        with open(os.path.join(gemini_dir, "projects.json"), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {k: v for k, v in projects.items() if isinstance(k, str) and isinstance(v, str)}


def _hash_of(path: str, project_hash: str) -> bool:
    """Whether `projectHash` is this path's (sha256 hex; the first versions kept 16 digits)."""
    digest = hashlib.sha256(path.encode()).hexdigest()
    return project_hash in (digest, digest[:16])


ADAPTER = Gemini()
