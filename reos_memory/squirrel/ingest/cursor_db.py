"""Cursor's SQLite `state.vscdb` databases, read for the `cursor` adapter (field notes:
/work/shared/formats/cursor/NOTES.md, generations 1 and 2).

* Legacy (2024), per workspace `<User>/workspaceStorage/<id>/state.vscdb`, table `ItemTable`:
  `workbench.panel.aichat.view.aichat.chatdata` (chat tabs of bubbles, `type` user/ai),
  `composer.composerData` (composers, `conversation[]` of bubbles `type` 1 user / 2 assistant,
  the proposed code blocks' fate in `codeBlockData` and `userResponsesToSuggestedCodeBlocks`) and
  `aiService.prompts` (what the user typed, again: counted, not learned twice). The workspace's
  folder (its `workspace.json`) is the sessions' working directory.
* 2025+, the global `<User>/globalStorage/state.vscdb`, table `cursorDiskKV`:
  `composerData:<composer>` (its `fullConversationHeadersOnly` order the bubbles) and
  `bubbleId:<composer>:<bubble>` (one message; agent tool calls in `toolFormerData`). A composer's
  folder is that of the workspace whose `composer.composerData` lists it.

Both tables declare `key UNIQUE ON CONFLICT REPLACE`: a value written again is a new row with a
higher rowid. The position in such a database is the highest rowid read of its table (with, in
its low bits, a check of the key of the row there), so what a later read takes is exactly the
rows written since. A rowid may be given again (the newest rows deleted, then new ones written)
or renumbered (VACUUM): the check no longer matches and everything is read again. The composers
of a read come in the order of their first row written since; a batch cut short goes on after
the last composer it read (rows written since of the composers before are read again). What
each session has already given is in the parse state (`ParseState.extra`, bounded, but never
forgetting a composer of the read under way), so nothing is said twice.

The database belongs to Cursor, which may hold it open: it is opened read-only (a WAL database
without its `-wal` file as immutable, so that no `-wal`/`-shm` is left behind); when it is locked
nothing is read now, and it is read again next time.
"""

from __future__ import annotations

import contextlib
import json
import os
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import unquote, urlparse

from reos_memory.models import EventIn
from reos_memory.squirrel.ingest.base import (
    Parsed,
    ParseState,
    Record,
    call_event,
    cut,
    first_line,
    iso_ms,
    result_event,
    string,
)
from reos_memory.store import cursor_vscdb as vscdb_sql

CHAT_KEY = "workbench.panel.aichat.view.aichat.chatdata"
COMPOSER_KEY = "composer.composerData"
PROMPTS_KEY = "aiService.prompts"
ITEM_KEYS = (CHAT_KEY, COMPOSER_KEY, PROMPTS_KEY)
MAX_SESSIONS = 2000  # sessions whose progress is remembered (the oldest are forgotten first)
CHECK_BITS = 20  # a position is a rowid and, below it, a check of the row it was read up to
_CHECK_MASK = (1 << CHECK_BITS) - 1
MAX_PENDING = 64  # proposed code blocks of one composer still awaiting the user's decision
TAIL = 64  # a changed composer's last bubbles are read again (ones held back while generating)
# what a code block's status or the user's response says of a proposed edit
_DECIDED = {"accepted": "accepted", "rejected": "rejected"}
_RESPONSES = {1: "accepted", 2: "rejected"}
_TOOL_DONE = frozenset({"completed", "success", "error", "failed", "cancelled", "rejected"})
_TOOL_FAILED = frozenset({"error", "failed"})
_FILE_ARGS = ("target_file", "relative_workspace_path", "file_path", "path", "targetFile")


# -- reading the database ----------------------------------------------------------------------


def _json(value: Any) -> Any:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return json.loads(value) if isinstance(value, str) else None


def records(path: str, position: int, dot: str) -> Iterator[Record]:
    """The records written since `position`; nothing while the database is locked. (`dot`:
    `~/.cursor`, where the agent transcripts are, `cursor_sidecar.dot_dir`.)"""
    try:
        conn = vscdb_sql.connect(path)
    except (OSError, vscdb_sql.Error):
        return
    try:
        # the global database is read by its composers' rows from the start, even before its
        # first composer (its ItemTable's rowids would be no position in cursorDiskKV)
        if os.path.basename(os.path.dirname(path)) == "globalStorage" or vscdb_sql.has_composers(
            conn
        ):
            if vscdb_sql.has_table(conn, "cursorDiskKV"):
                yield from _kv_records(conn, path, position, dot)
        elif vscdb_sql.has_table(conn, "ItemTable"):
            yield from _item_records(conn, path, position)
    except vscdb_sql.Error:
        return  # locked or being written: read again next time, from the same position
    finally:
        conn.close()


def holds_chats(path: str) -> bool:
    """Whether a database holds Cursor's chats: the 2024 keys or the 2025 composers."""
    try:
        conn = vscdb_sql.connect(path)
    except (OSError, vscdb_sql.Error):
        return False
    try:
        return vscdb_sql.has_composers(conn) or (
            vscdb_sql.has_table(conn, "ItemTable") and vscdb_sql.has_item_keys(conn, ITEM_KEYS)
        )
    except vscdb_sql.Error:
        return False
    finally:
        conn.close()


def _check(key: str | None) -> int:
    return zlib.crc32((key or "").encode()) & _CHECK_MASK


def _position(conn: vscdb_sql.Conn, table: str, rowid: int) -> int:
    """The position after rowid `rowid`: the rowid, with a check of the key of the row there
    (or of none) in the low bits."""
    if rowid <= 0:
        return 0
    return (rowid << CHECK_BITS) | _check(vscdb_sql.key_at(conn, table, rowid))


def _start(conn: vscdb_sql.Conn, table: str, position: int, top: int) -> int:
    """The rowid a read from `position` starts after. A new row takes the rowid after the
    highest, so rows read are followed by new ones only above them, unless the newest were
    deleted: then the highest rowid is below the position, or a row at the position's rowid is
    no longer the one read (or there was none), or a VACUUM renumbered the rows. Everything is
    then read again from the start (also after a position of an older version): what each
    session already gave is in the parse state, so nothing is said twice. (A row read and
    deleted since, or written again under a higher rowid, leaves none at its rowid.)"""
    rowid = position >> CHECK_BITS
    if rowid <= 0 or top < rowid:
        return 0
    key = vscdb_sql.key_at(conn, table, rowid)
    if key is not None and _check(key) != position & _CHECK_MASK:
        return 0
    return rowid


def _item_records(conn: vscdb_sql.Conn, path: str, position: int) -> Iterator[Record]:
    top = vscdb_sql.item_top(conn)
    start = _start(conn, "ItemTable", position, top)
    rows = vscdb_sql.item_rows(conn, start, top, ITEM_KEYS)
    cwd = workspace_folder(os.path.dirname(path))
    for i, (rowid, key, value) in enumerate(rows):
        # each row is a whole document: a batch cut short goes on after it
        end = _position(conn, "ItemTable", top if i == len(rows) - 1 else rowid)
        try:
            data = _json(value)
        except ValueError:
            yield Record(end, None, True)
            continue
        yield Record(end, {"_cursor": "item", "key": key, "value": data, "_cwd": cwd})
    if not rows and (end := _position(conn, "ItemTable", top)) != position:
        yield Record(end, None)  # other keys changed: nothing of ours, read past them


def _kv_records(conn: vscdb_sql.Conn, path: str, position: int, dot: str) -> Iterator[Record]:
    top = vscdb_sql.kv_top(conn)
    start = _start(conn, "cursorDiskKV", position, top)
    ids = vscdb_sql.kv_touched_composers(conn, start, top) if top > start else []
    if not ids:
        if (end := _position(conn, "cursorDiskKV", top)) != position:
            yield Record(end, None)  # other keys changed (or a position to forget)
        return
    folders = composer_folders(path)
    transcripts = transcript_ids(dot)
    # the composers of this read, whose progress is never forgotten while it lasts
    window = frozenset(cid for cid, _ in ids)
    for i, (cid, _first) in enumerate(ids):
        # a batch cut short goes on after this composer: every row before the next composer's
        # first is of composers already read (the ones written again since are read again,
        # their progress in the parse state says what they have already given)
        last = i == len(ids) - 1
        end = _position(conn, "cursorDiskKV", top if last else ids[i + 1][1] - 1)
        if cid in transcripts:
            # its agent transcript (JSONL) is read instead: the same conversation, fuller
            yield Record(end, {"_cursor": "composer", "id": cid, "in_transcript": True})
            continue
        try:
            rec = _composer(conn, cid, start, folders.get(cid))
        except ValueError:
            yield Record(end, None, True)
            continue
        rec["_window"] = window
        yield Record(end, rec)


def _composer(conn: vscdb_sql.Conn, cid: str, position: int, cwd: str | None) -> dict[str, Any]:
    """A composer's data and its bubbles written since `position` (and its last ones, which
    may have been held back while they were being written)."""
    composer = _json(vscdb_sql.kv_value(conn, f"composerData:{cid}"))
    heads = composer.get("fullConversationHeadersOnly") if isinstance(composer, dict) else None
    tail = {h.get("bubbleId") for h in (heads or [])[-TAIL:] if isinstance(h, dict)}
    bubbles: dict[str, Any] = {}
    for rowid, bid in vscdb_sql.kv_bubble_rows(conn, cid):
        if rowid > position or bid in tail:
            try:
                bubbles[bid] = _json(vscdb_sql.kv_value_at(conn, rowid))
            except ValueError:
                bubbles[bid] = {"_malformed": True}
    return {"_cursor": "composer", "id": cid, "composer": composer, "bubbles": bubbles, "_cwd": cwd}


def workspace_folder(workspace_dir: str) -> str | None:
    """The folder a workspace storage directory belongs to, from its `workspace.json`."""
    try:
        with open(os.path.join(workspace_dir, "workspace.json"), encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("folder"), str):
        return uri_path(doc["folder"])
    if isinstance(doc.get("workspace"), str):  # a multi-root `.code-workspace` file
        p = uri_path(doc["workspace"])
        return os.path.dirname(p) if p else None
    return None


def uri_path(uri: str) -> str | None:
    """The local path of a `file://` URI (`file:///c%3A/Users/x` -> `c:/Users/x`); the path of
    a remote one."""
    parsed = urlparse(uri)
    if not parsed.path:
        return None
    path = unquote(parsed.path)
    if len(path) > 2 and path[0] == "/" and path[2] == ":":
        path = path[1:]  # a Windows drive
    return path


def composer_folders(global_db: str) -> dict[str, str]:
    """Composer id -> workspace folder, from every workspace database beside the global one
    (each lists its composers' ids in `composer.composerData`; read again only once changed)."""
    user = os.path.dirname(os.path.dirname(global_db))
    root = os.path.join(user, "workspaceStorage")
    out: dict[str, str] = {}
    try:
        names = os.listdir(root)
    except OSError:
        return out
    for name in names:
        for cid, folder in _workspace_composers(os.path.join(root, name)).items():
            out[cid] = folder
    return out


# workspace directory -> (its files' stat, its composers' folders)
_WORKSPACES: dict[str, tuple[tuple[Any, ...], dict[str, str]]] = {}


def _stamp(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def _workspace_composers(wdir: str) -> dict[str, str]:
    """The composers a workspace database lists, each with the workspace's folder."""
    db = os.path.join(wdir, "state.vscdb")
    stamp = tuple(_stamp(p) for p in (os.path.join(wdir, "workspace.json"), db, db + "-wal"))
    cached = _WORKSPACES.get(wdir)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    out: dict[str, str] = {}
    folder = workspace_folder(wdir)
    if folder is None or stamp[1] is None:
        _WORKSPACES[wdir] = (stamp, out)
        return out
    try:
        conn = vscdb_sql.connect(db)
    except (OSError, vscdb_sql.Error):
        return out  # read again next time
    try:
        data = _json(vscdb_sql.item_value(conn, COMPOSER_KEY))
    except vscdb_sql.Error:
        return out  # locked: read again next time
    except ValueError:
        data = None
    finally:
        conn.close()
    for c in (data or {}).get("allComposers") or [] if isinstance(data, dict) else []:
        if isinstance(c, dict) and isinstance(c.get("composerId"), str):
            out[c["composerId"]] = folder
    _WORKSPACES[wdir] = (stamp, out)
    return out


def transcript_ids(dot: str) -> set[str]:
    """The conversations that have an agent transcript under `~/.cursor/projects` (`dot`:
    `~/.cursor`, or where CURSOR_CONFIG_DIR moves it)."""
    out: set[str] = set()
    root = os.path.join(dot, "projects")
    with contextlib.suppress(OSError):
        for slug in os.listdir(root):
            with contextlib.suppress(OSError):
                for name in os.listdir(os.path.join(root, slug, "agent-transcripts")):
                    out.add(name.removesuffix(".jsonl").removesuffix(".txt"))
    return out


# -- parsing ------------------------------------------------------------------------------------


def _progress(
    state: ParseState, table: str, sid: str, keep: frozenset[str] | None = None
) -> dict[str, Any]:
    """A session's progress (moved to the newest end; the oldest forgotten past the bound, but
    never one of `keep`: the sessions of the read under way, which it may come to again)."""
    sessions = state.extra.setdefault(table, {})
    entry = sessions.pop(sid, None) or {"n": 0}
    sessions[sid] = entry
    excess = len(sessions) - MAX_SESSIONS
    if excess > 0:
        for old in [s for s in sessions if not keep or s not in keep][:excess]:
            if old != sid:
                del sessions[old]
    return entry


def _alive(state: ParseState, sid: str, ts: str | None) -> None:
    state.live[sid] = ts or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.000Z")


def parse(record: dict[str, Any], state: ParseState) -> list[Parsed]:
    cwd = string(record.get("_cwd"))
    if cwd:
        state.cwd = state.cwd or cwd
    if record.get("_cursor") == "composer":
        return _kv_composer(record, cwd, state)
    key, value = record.get("key"), record.get("value")
    if key == PROMPTS_KEY and isinstance(value, list):
        seen = int(state.extra.get("prompts", 0))
        state.count("prompts", max(0, len(value) - seen))  # typed again in a chat or composer
        state.extra["prompts"] = len(value)
        return []
    if key == CHAT_KEY and isinstance(value, dict):
        out: list[Parsed] = []
        for tab in value.get("tabs") or []:
            if isinstance(tab, dict):
                out.extend(_tab(tab, cwd, state))
        return out
    if key == COMPOSER_KEY and isinstance(value, dict):
        out = []
        for comp in value.get("allComposers") or []:
            if isinstance(comp, dict):
                out.extend(_legacy_composer(comp, cwd, state))
        return out
    state.count("skipped")
    return []


def _message(role: str, text: Any, ts: str | None) -> EventIn | None:
    if not isinstance(text, str) or not text.strip():
        return None
    return EventIn(role=role, kind="message", ts=ts, text=cut(text))  # type: ignore[arg-type]


def _tab(tab: dict[str, Any], cwd: str | None, state: ParseState) -> list[Parsed]:
    """A side-panel chat tab: its bubbles not given before."""
    sid = string(tab.get("tabId"))
    bubbles = tab.get("bubbles")
    if sid is None or not isinstance(bubbles, list):
        state.count("skipped")
        return []
    prog = _progress(state, "tabs", sid)
    if prog["n"] == 0 and bubbles:
        state.count("chat_tabs")
    end = len(bubbles)
    last = bubbles[-1] if bubbles else None
    if isinstance(last, dict) and last.get("type") == "user" and not string(last.get("text")):
        end -= 1  # the input box's draft, not sent yet: read once it is
    new = bubbles[prog["n"] : end]
    prog["n"] = max(prog["n"], end)
    ts = iso_ms(tab.get("lastSendTime"))
    out = []
    for b in new:
        state.count("chat_bubbles")
        if not isinstance(b, dict):
            continue
        if b.get("type") == "user":
            ev = _message("user", b.get("text"), ts)
            state.count("user_messages", ev is not None)
        elif b.get("type") == "ai":
            ev = _message("assistant", b.get("rawText") or b.get("text"), ts)
        else:
            state.count("skipped")
            continue
        if ev is not None:
            out.append(Parsed(sid, ev, cwd))
    if out:
        _alive(state, sid, ts)
    return out


def _block_uri(block: dict[str, Any]) -> tuple[str | None, str | None]:
    """A code block's key in `codeBlockData` (the URI as text) and its file path."""
    uri = block.get("uri")
    if isinstance(uri, str):
        return uri, uri_path(uri)
    if isinstance(uri, dict):
        ext = string(uri.get("external"))
        return ext, string(uri.get("fsPath")) or (uri_path(ext) if ext else None)
    return None, None


def _block_status(comp: dict[str, Any], key: str | None, version: Any) -> dict[str, Any]:
    data = comp.get("codeBlockData")
    entries = data.get(key) if isinstance(data, dict) and key else None
    for e in entries if isinstance(entries, list) else []:
        if isinstance(e, dict) and e.get("version") == version:
            return e
    return {}


def _legacy_composer(comp: dict[str, Any], cwd: str | None, state: ParseState) -> list[Parsed]:
    """A 2024 composer: its bubbles not given before; each proposed code block a call, whose
    result is the user's accepting or rejecting it (once known)."""
    sid = string(comp.get("composerId"))
    conv = comp.get("conversation")
    if sid is None or not isinstance(conv, list):
        state.count("skipped")
        return []
    if not conv:
        return []  # the conversation lives in the global database (generation 2)
    prog = _progress(state, "composers", sid)
    if prog["n"] == 0:
        state.count("composers")
    ts = iso_ms(comp.get("lastUpdatedAt") or comp.get("createdAt"))
    responses = _responses(comp)
    out: list[Parsed] = []
    pending = prog.setdefault("pending", [])
    still = []
    for call_id, key, version, file in pending:  # proposals decided since they were read
        ev = _decision(comp, key, version, call_id, file, responses, ts, state)
        if ev is None:
            still.append([call_id, key, version, file])
        else:
            out.append(Parsed(sid, ev, cwd))
    new = conv[prog["n"] :]
    prog["n"] = max(prog["n"], len(conv))
    for b in new:
        state.count("composer_bubbles")
        if not isinstance(b, dict):
            continue
        if b.get("type") == 1:
            ev = _message("user", b.get("text"), ts)
            state.count("user_messages", ev is not None)
            if ev is not None:
                out.append(Parsed(sid, ev, cwd))
            continue
        if b.get("type") != 2:
            state.count("skipped")
            continue
        ev = _message("assistant", b.get("text"), ts)
        if ev is not None:
            out.append(Parsed(sid, ev, cwd))
        bid = string(b.get("bubbleId")) or str(len(out))
        for i, block in enumerate(b.get("codeBlocks") or []):
            if not isinstance(block, dict):
                continue
            key, file = _block_uri(block)
            version = block.get("version")
            call_id = f"{bid}:{block.get('codeBlockIdx', i)}"
            entry = _block_status(comp, key, version)
            content = string(entry.get("content"))
            name = os.path.basename(file.replace("\\", "/")) if file else None
            call = call_event(
                state,
                ts,
                "edit_file",
                call_id,
                file=file,
                summary=f"propose an edit of {name}" if name else "propose an edit",
                detail=content[:2000] if content else None,
            )
            out.append(Parsed(sid, call, cwd))
            ev = _decision(comp, key, version, call_id, file, responses, ts, state)
            if ev is not None:
                out.append(Parsed(sid, ev, cwd))
            else:
                still.append([call_id, key, version, file])
    prog["pending"] = still[-MAX_PENDING:]
    if out:
        _alive(state, sid, ts)
    return out


def _responses(comp: dict[str, Any]) -> dict[str, list[str]]:
    """The user's responses to proposed edits by file (1 accepted, 2 rejected), in order."""
    out: dict[str, list[str]] = {}
    for r in comp.get("userResponsesToSuggestedCodeBlocks") or []:
        if isinstance(r, dict) and isinstance(r.get("filePath"), str):
            what = _RESPONSES.get(r.get("userResponseType"))  # type: ignore[arg-type]
            if what:
                out.setdefault(r["filePath"].replace("\\", "/"), []).append(what)
    return out


def _decision(
    comp: dict[str, Any],
    key: str | None,
    version: Any,
    call_id: str,
    file: str | None,
    responses: dict[str, list[str]],
    ts: str | None,
    state: ParseState,
) -> EventIn | None:
    """The result of a proposed edit: accepted, or rejected by the user; None while undecided."""
    status = string(_block_status(comp, key, version).get("status"))
    what = _DECIDED.get(status or "")
    if what is None and file and status in ("completed", "cancelled"):
        norm = file.replace("\\", "/")
        for rel, said in responses.items():
            if said and norm.endswith("/" + rel.lstrip("/")):
                what = said.pop(0)  # the user's response to this file's proposal
                break
    if what is None:
        return None
    rejected = what == "rejected"
    state.count("rejections" if rejected else "accepted_edits")
    return result_event(
        state,
        ts,
        "edit_file",
        call_id,
        "the user rejected the proposed edit"
        if rejected
        else "the user accepted the proposed edit",
        is_error=rejected,
        file=file,
        rejected=rejected,
    )


# -- generation 2: cursorDiskKV -----------------------------------------------------------------


def _kv_composer(record: dict[str, Any], cwd: str | None, state: ParseState) -> list[Parsed]:
    sid = string(record.get("id"))
    if sid is None:
        state.count("skipped")
        return []
    if record.get("in_transcript"):
        state.count("composers_in_transcripts")
        return []
    comp = record.get("composer")
    if not isinstance(comp, dict):
        state.count("skipped")
        return []
    bubbles = record.get("bubbles")
    bubbles = bubbles if isinstance(bubbles, dict) else {}
    heads = comp.get("fullConversationHeadersOnly")
    if not isinstance(heads, list) or not heads:
        inline = comp.get("conversation")  # older composers keep their bubbles inline
        heads = inline if isinstance(inline, list) else []
        bubbles = {
            b["bubbleId"]: b for b in heads if isinstance(b, dict) and string(b.get("bubbleId"))
        } | bubbles
    window = record.get("_window")
    prog = _progress(state, "kv", sid, window if isinstance(window, frozenset) else None)
    if prog["n"] == 0 and heads:
        state.count("composers")
    if prog["n"] > len(heads):
        state.count("rewound")  # an earlier message was edited: the conversation went back
        prog["n"] = len(heads)
    ts = iso_ms(comp.get("lastUpdatedAt") or comp.get("createdAt"))
    generating = set(comp.get("generatingBubbleIds") or []) | (
        {heads[-1].get("bubbleId")}
        if comp.get("status") == "generating" and isinstance(heads[-1] if heads else None, dict)
        else set()
    )
    out: list[Parsed] = []
    for h in heads[prog["n"] :]:
        bid = string(h.get("bubbleId")) if isinstance(h, dict) else None
        if bid is not None and bid in generating:
            break  # still being written: read again once it is done
        prog["n"] += 1
        state.count("composer_bubbles")
        b = bubbles.get(bid) if bid else None
        if not isinstance(b, dict) or b.get("_malformed"):
            state.count("missing_bubbles" if bid not in bubbles else "empty_bubbles")
            continue
        out.extend(Parsed(sid, e, cwd) for e in _kv_bubble(b, bid or "", ts, state))
    if out:
        _alive(state, sid, ts)
    return out


def _kv_bubble(b: dict[str, Any], bid: str, ts: str | None, state: ParseState) -> list[EventIn]:
    ts = string(b.get("createdAt")) or ts
    if b.get("type") == 1:
        ev = _message("user", b.get("text"), ts)
        state.count("user_messages", ev is not None)
        return [ev] if ev else []
    if b.get("type") != 2:
        state.count("skipped")
        return []
    out: list[EventIn] = []
    ev = _message("assistant", b.get("text"), ts)
    if ev is not None:
        out.append(ev)
    tool = b.get("toolFormerData")
    if isinstance(tool, dict) and string(tool.get("name")):
        out.extend(_tool(tool, bid, ts, state))
    return out


def _args(tool: dict[str, Any]) -> dict[str, Any]:
    for k in ("rawArgs", "params"):
        v = tool.get(k)
        if isinstance(v, str):
            try:
                v = json.loads(v)
            except ValueError:
                continue
        if isinstance(v, dict):
            return v
    return {}


def _tool(tool: dict[str, Any], bid: str, ts: str | None, state: ParseState) -> list[EventIn]:
    """An agent tool call of a bubble (`toolFormerData`) and, once it ended, its result."""
    name = str(tool["name"])
    args = _args(tool)
    call_id = string(tool.get("toolCallId")) or bid
    command = string(args.get("command"))
    file = next((args[k] for k in _FILE_ARGS if string(args.get(k))), None)
    summary = string(args.get("explanation")) or string(args.get("instructions"))
    detail = None if command else json.dumps(args, ensure_ascii=False)[:2000]
    out = [
        call_event(
            state,
            ts,
            name,
            call_id,
            command=command,
            file=file,
            summary=first_line(summary) if summary else None,
            detail=detail,
        )
    ]
    status = string(tool.get("status"))
    decision = string(tool.get("userDecision"))
    rejected = status == "rejected" or decision == "rejected"
    if status not in _TOOL_DONE and not rejected:
        return out
    text, code = _tool_result(tool.get("result"))
    if rejected:
        state.count("rejections")
        text = text or "the user rejected the tool call"
    elif status == "cancelled":
        state.count("interrupts")
    failed = status in _TOOL_FAILED or rejected or (code is not None and code != 0)
    out.append(
        result_event(
            state,
            ts,
            name,
            call_id,
            text,
            exit_code=code,
            is_error=failed,
            command=command,
            file=file,
            rejected=rejected,
        )
    )
    return out


def _tool_result(result: Any) -> tuple[str, int | None]:
    """A tool result's text and exit code (`result` is often a JSON string)."""
    if isinstance(result, str):
        try:
            parsed = json.loads(result)
        except ValueError:
            return result, None
        result = parsed if isinstance(parsed, dict) else result
    if not isinstance(result, dict):
        return (result if isinstance(result, str) else ""), None
    code = next(
        (result[k] for k in ("exitCode", "exit_code") if isinstance(result.get(k), int)), None
    )
    parts = [
        result[k]
        for k in ("output", "stdout", "stderr", "error", "contents", "message")
        if isinstance(result.get(k), str) and result[k]
    ]
    text = "\n".join(parts) if parts else json.dumps(result, ensure_ascii=False)[:4000]
    return text, code
