"""opencode (field notes: ../shared/formats/opencode/NOTES.md).

* `opencode.db` (SQLite, WAL) under `$XDG_DATA_HOME/opencode` (`~/.local/share/opencode` on
  every OS, `xdg-basedir` is not OS-specific; `OPENCODE_DB` names another file): tables
  `session` (`directory` = the project), `message` and `part`, each row's JSON `data` without
  its ids. One database holds every session of every project. It is opened read-only and never
  written; a locked database yields nothing now and is read next time.
  Rows are updated in place (streamed text, a tool part going pending -> running -> completed),
  so the cursor is a watermark over `time_updated`: `(t << 20) | 0xFFFFF` = every row updated
  up to `t` was read (a batch holds all the rows of a time), `(t << 20) | j` = the first `j`
  rows (by kind and id) updated at `t` too, the last of them remembered by its key
  `(time_updated, kind, id)` (the rows at `t` are read again from the database and those up to
  the key passed over: a row read at `t` and updated since is no longer among them, so no row
  is skipped in its place). A row is read again when it changes again; what it stands for is
  handed on once, when it is final (a tool part completed or failed, a text part ended), and
  parts already handed on are remembered by id.
* The legacy JSON tree (before v1.2): `storage/session/<project>/<session>.json`, its messages
  `storage/message/<session>/<message>.json` and their parts `storage/part/<message>/<part>.json`;
  the session file is the log, its records are the messages and parts in order (the cursor
  counts them).

What becomes of a part: a user's `text` part (not `synthetic`/`ignored`) is what they typed; an
assistant's `text` part what it said (the `summary` message of a compaction: the agent's
summary of the session so far); a `tool` part a call and its result. `bash` results carry the
exit code in `state.metadata.exit` (a failing command is still `completed`); `status: error`
is a failure, "The user rejected permission ..." a rejection (with the user's feedback, if
any). An assistant message aborted (`MessageAbortedError`) is the user interrupting it.
Subagent sessions (`parent_id`) count for the session that started them.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
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
    call_event,
    compaction_event,
    cut,
    first_line,
    interrupt_event,
    iso_ms,
    result_event,
    string,
)
from reos_memory.store import agent_databases

_SHIFT = 20  # the position's low bits: rows already read of those updated at the same time
_DONE = (1 << _SHIFT) - 1  # ... all of them
_BATCH_ROWS = 500
# a row written this recently may belong to a transaction not yet committed: read next time
SETTLE_MS = 1500
# a final part re-read later (its output compacted, a title set) was handed on before, unless
# it became final within this much of the watermark (then its id tells)
GRACE_MS = 10 * 60 * 1000
_EMITTED_KEPT = 4000
_REJECTED = "The user rejected permission to use this specific tool call"
_FEEDBACK = "with the following feedback:"
_ABORTED = "MessageAbortedError"
_QUIET_PARTS = frozenset(
    {"step-start", "step-finish", "reasoning", "snapshot", "patch", "file", "agent"}
)
_FILE_KEYS = ("filePath", "file_path", "path")


class OpenCode(Adapter):
    name = "opencode"
    shrink_means_rewritten = False  # a database shrinks as it is vacuumed

    def roots(self, place: Place) -> list[str]:
        # NOTES "Where the files live": `Global.Path.data` = `<xdgData>/opencode`, the same
        # `~/.local/share/opencode` on every OS (`%USERPROFILE%\.local\share\opencode` on
        # Windows) unless XDG_DATA_HOME is set; OPENCODE_DB names the database itself
        data = place.var("XDG_DATA_HOME") or os.path.join(place.home, ".local", "share")
        home = os.path.join(data, "opencode")
        out = [os.path.join(home, "opencode.db"), os.path.join(home, "storage", "session")]
        db = place.var("OPENCODE_DB")
        if db:
            out.insert(0, db)
        return out

    def claims(self, path: str) -> bool:
        name = os.path.basename(path)
        if name == "opencode.db" or (name.startswith("opencode-") and name.endswith(".db")):
            return True
        return _legacy_session(path)

    def identity(self, path: str, size: int = reader.HEAD_BYTES) -> reader.Head:
        # a database (and a legacy session file) changes in place: the same log all along
        key = "opencode:" + (
            os.path.basename(path) if _legacy_session(path) else os.path.realpath(path)
        )
        return reader.Head(hashlib.sha256(key.encode()).hexdigest(), reader.HEAD_BYTES)

    def begin(self, path: str, state: ParseState) -> None:
        if _legacy_session(path):
            state.extra["legacy"] = True

    def records(self, path: str, position: int, max_bytes: int) -> Iterator[Record]:
        if _legacy_session(path):
            yield from _legacy_records(path, position)
        else:
            yield from _db_records(path, position)

    def parse(self, record: dict[str, Any], state: ParseState) -> list[Parsed]:
        if _read_before(record, state):
            return []
        sid = string(record.get("parent_id")) or string(record.get("session_id"))
        data = record.get("data")
        if sid is None or not isinstance(data, dict):
            state.count("skipped")
            return []
        child = bool(string(record.get("parent_id")))
        if record.get("src") == 0:
            _directory(record, data, sid, state)
            events = _message(record, data, state)
        else:
            events = _part(record, data, child, state)
        if not events:
            return []
        cwd = _directory(record, data, sid, state)
        if state.extra.get("legacy"):
            state.session_id = state.session_id or sid
            state.cwd = state.cwd or cwd
        else:
            latest = events[-1].ts or iso_ms(record.get("t_updated"))
            if latest:
                state.live[sid] = max(latest, state.live.get(sid, latest))
        return [Parsed(sid, e, cwd) for e in events]


def _directory(
    record: dict[str, Any], data: dict[str, Any], sid: str, state: ParseState
) -> str | None:
    """The session's project: `session.directory`, else the `path.cwd` its assistant
    messages name (remembered for the session's other rows)."""
    found = string(record.get("directory"))
    if found:
        return found
    dirs = state.extra.setdefault("dirs", {})
    path = data.get("path")
    cwd = string(path.get("root")) or string(path.get("cwd")) if isinstance(path, dict) else None
    if cwd:
        dirs[sid] = cwd
        for k in list(dirs)[:-256]:
            del dirs[k]
    return cwd or dirs.get(sid)


def _read_before(record: dict[str, Any], state: ParseState) -> bool:
    """Whether a database row is one read before and unchanged since (a time's rows are read
    again after a batch that ended among them); the row's key is remembered otherwise."""
    key = record.get("key")
    if not isinstance(key, list):
        return False  # the legacy tree
    last = state.extra.get("key")
    try:
        if isinstance(last, list) and tuple(key) <= tuple(last):
            return True
    except TypeError:
        pass  # a key of another shape: read
    state.extra["key"] = key
    return False


# -- what a row stands for -----------------------------------------------------------------


def _message(record: dict[str, Any], data: dict[str, Any], state: ParseState) -> list[EventIn]:
    """An assistant message that ended in an error: the user's interrupt, or a failure."""
    if data.get("role") != "assistant":
        return []
    error = data.get("error")
    if not isinstance(error, dict) or not _first(state, "m:" + str(record.get("id"))):
        return []
    t = data.get("time")
    ts = iso_ms(t.get("completed") if isinstance(t, dict) else None) or iso_ms(
        record.get("t_updated")
    )
    if error.get("name") == _ABORTED:
        return [interrupt_event(state, ts)]
    state.count("message_errors")
    inner = error.get("data")
    why = string(inner.get("message")) if isinstance(inner, dict) else None
    name = string(error.get("name")) or "error"
    return [
        EventIn(
            role="system",
            kind="message",
            ts=ts,
            summary=f"the assistant failed: {name}" + (f": {first_line(why)}" if why else ""),
        )
    ]


def _part(
    record: dict[str, Any], data: dict[str, Any], child: bool, state: ParseState
) -> list[EventIn]:
    ptype = data.get("type")
    msg = record.get("message")
    msg = msg if isinstance(msg, dict) else {}
    pid = str(record.get("id"))
    wm = record.get("wm")
    wm = wm if isinstance(wm, int) else 0
    if ptype == "text":
        return _text(record, data, msg, child, wm, state)
    if ptype == "tool":
        return _tool(data, wm, pid, state)
    if ptype == "compaction":
        if _first(state, pid):
            state.count("compactions")
        return []
    if ptype == "retry":
        if _first(state, pid):
            state.count("retries")
        return []
    if ptype == "subtask":
        if _first(state, pid):
            state.count("subtasks")
        return []
    if ptype not in _QUIET_PARTS:
        state.count("skipped")
    return []


def _text(
    record: dict[str, Any],
    data: dict[str, Any],
    msg: dict[str, Any],
    child: bool,
    wm: int,
    state: ParseState,
) -> list[EventIn]:
    text = string(data.get("text"))
    role = msg.get("role")
    if text is None or not text.strip() or data.get("synthetic") or data.get("ignored"):
        return []
    t = data.get("time")
    if isinstance(t, dict):
        if not isinstance(t.get("end"), int | float):
            return []  # still streaming
        final = int(t["end"])
    else:
        final = _ms(record.get("t_created"))
    if final < wm - GRACE_MS or not _first(state, str(record.get("id"))):
        return []
    ts = iso_ms(final) or iso_ms(record.get("t_updated"))
    if role == "user":
        if child:
            return []  # a subagent's prompt, written by the agent that started it
        return [EventIn(role="user", kind="message", ts=ts, text=cut(text.strip()))]
    if role != "assistant":
        state.count("skipped")
        return []
    if msg.get("summary") is True:
        state.count("compact_summaries")
        return [compaction_event(ts, text)]
    return [EventIn(role="assistant", kind="message", ts=ts, text=cut(text))]


def _tool(data: dict[str, Any], wm: int, pid: str, state: ParseState) -> list[EventIn]:
    st = data.get("state")
    if not isinstance(st, dict) or st.get("status") not in ("completed", "error"):
        return []  # pending or running: handed on once it is final
    times = _dict(st.get("time"))
    end = _ms(times.get("end"))
    if end < wm - GRACE_MS or not _first(state, pid):
        return []
    name = string(data.get("tool")) or "tool"
    call_id = string(data.get("callID"))
    inp = _dict(st.get("input"))
    command = string(inp.get("command")) if name == "bash" else None
    file = next((inp[k] for k in _FILE_KEYS if string(inp.get(k))), None)
    written = next((inp[k] for k in ("newString", "content") if isinstance(inp.get(k), str)), None)
    summary = string(inp.get("description")) or string(st.get("title"))
    if written is not None:
        summary = f"{name} {os.path.basename(file)}" if file else name
    detail = written[:2000] if written is not None else None
    if command is None and detail is None and inp:
        detail = json.dumps(inp, ensure_ascii=False)[:2000]
    start = times.get("start")
    call = call_event(
        state,
        iso_ms(start) or iso_ms(end),
        name,
        call_id,
        command=command,
        file=file,
        summary=first_line(summary) if summary else None,
        detail=detail,
    )
    ts = iso_ms(end)
    meta = _dict(st.get("metadata"))
    if st.get("status") == "completed":
        code = meta.get("exit") if isinstance(meta.get("exit"), int) else None
        if isinstance(code, bool):
            code = None
        text = string(st.get("output")) or string(meta.get("output"))
        res = result_event(
            state,
            ts,
            name,
            call_id,
            text,
            exit_code=code,
            is_error=code is not None and code != 0,
            command=command,
            file=file,
        )
        return [call, res]
    error = string(st.get("error")) or ""
    rejected = error.startswith(_REJECTED)
    out = [
        call,
        result_event(
            state,
            ts,
            name,
            call_id,
            error or string(meta.get("output")),
            is_error=True,
            command=command,
            file=file,
            rejected=rejected,
        ),
    ]
    if rejected:
        state.count("rejections")
        at = error.find(_FEEDBACK)
        said = error[at + len(_FEEDBACK) :].strip() if at >= 0 else ""
        if said:
            out.append(
                EventIn(role="user", kind="message", ts=ts, origin="rejection", text=cut(said))
            )
    elif meta.get("interrupted") is True:
        state.count("tool_interrupts")
    return out


def _first(state: ParseState, key: str) -> bool:
    """Whether this part (or message) is handed on now for the first time (remembered)."""
    seen = state.extra.setdefault("seen", [])
    if key in seen:
        return False
    seen.append(key)
    del seen[:-_EMITTED_KEPT]
    return True


# -- the database --------------------------------------------------------------------------


def _db_records(path: str, position: int) -> Iterator[Record]:
    """Rows updated since the watermark, oldest first, each with the position after it (none
    while the database is locked)."""
    t0, j0 = position >> _SHIFT, position & _DONE
    until = int(time.time() * 1000) - SETTLE_MS
    # in the middle of a time's rows: that time's rows again (those read before are known by
    # their key, `ParseState.extra["key"]`); otherwise the rows updated after it
    batch = agent_databases.opencode_rows(path, t0, j0 != _DONE, until, _BATCH_ROWS)
    batch = [r for r in batch if isinstance(r[6], int)]
    n = 0
    for i, (src, rid, sid, parent, directory, created, updated, data, message) in enumerate(batch):
        n = n + 1 if i and batch[i - 1][6] == updated else 1  # the row's place in its time's
        last = i + 1 == len(batch) or batch[i + 1][6] != updated
        j = _DONE if last else min(n, _DONE - 1)  # (the batch holds all the rows of a time)
        rec = {
            "src": src,
            "id": rid,
            "session_id": sid,
            "parent_id": parent,
            "directory": directory,
            "t_created": created,
            "t_updated": updated,
            "key": [updated, src, rid],
            "wm": t0,
            "data": _json(data),
            "message": _json(message),
        }
        yield Record((updated << _SHIFT) | j, rec)


def _json(text: Any) -> Any:
    if not isinstance(text, str | bytes):
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


# -- the legacy JSON tree ------------------------------------------------------------------


def _legacy_session(path: str) -> bool:
    """`storage/session/<project>/<session>.json` of opencode before v1.2."""
    parent = os.path.dirname(path)
    session_dir = os.path.dirname(parent)
    return (
        path.endswith(".json")
        and os.path.basename(session_dir) == "session"
        and os.path.basename(os.path.dirname(session_dir)) == "storage"
    )


def _load(path: str) -> dict[str, Any] | None:
    try:
        with open(path, "rb") as f:
            d = json.loads(f.read())
    except (OSError, ValueError):
        return None
    return d if isinstance(d, dict) else None


def _legacy_records(path: str, position: int) -> Iterator[Record]:
    """The session's messages (by creation time and id), each followed by its parts (by id)."""
    info = _load(path)
    if info is None:
        raise ValueError("a legacy session file that cannot be read")
    sid = os.path.basename(path)[: -len(".json")]
    storage = os.path.dirname(os.path.dirname(os.path.dirname(path)))
    base = {
        "session_id": sid,
        "parent_id": string(info.get("parentID")),
        "directory": string(info.get("directory")),
    }
    messages = []
    mdir = os.path.join(storage, "message", sid)
    for name in sorted(os.listdir(mdir)) if os.path.isdir(mdir) else []:
        if name.endswith(".json"):
            m = _load(os.path.join(mdir, name))
            if m is not None:
                t = _dict(m.get("time"))
                created = t.get("created") if isinstance(t.get("created"), int) else 0
                messages.append((created, name[:-5], m))
    messages.sort(key=lambda x: (x[0], x[1]))
    n = 0
    for created, mid, m in messages:
        items: list[dict[str, Any]] = [
            {**base, "src": 0, "id": mid, "t_created": created, "t_updated": created, "data": m}
        ]
        pdir = os.path.join(storage, "part", mid)
        for name in sorted(os.listdir(pdir)) if os.path.isdir(pdir) else []:
            p = _load(os.path.join(pdir, name)) if name.endswith(".json") else None
            if p is not None:
                items.append(
                    {
                        **base,
                        "src": 1,
                        "id": name[:-5],
                        "t_created": created,
                        "data": p,
                        "message": m,
                    }
                )
        for item in items:
            n += 1
            if n > position:
                yield Record(n, item)


def _ms(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


ADAPTER = OpenCode()
