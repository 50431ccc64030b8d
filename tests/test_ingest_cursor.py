"""Cursor's logs: agent transcripts (JSONL), hook payloads, and the state.vscdb databases of 2024
(ItemTable) and 2025 (cursorDiskKV); the real workspace database in ../shared/formats; detection,
default locations, and the way from a Cursor log to a memory an MCP client is given."""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import sys
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness.agent_logs import cursor as cursor_log
from harness.commands import agent_env, sqrl
from harness.hook_payloads import cursor_tool_runs
from harness.rpc_client import Server
from reos_memory.squirrel.ingest import cursor_db, cursor_sidecar
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import Parsed, ParseState, Place
from reos_memory.squirrel.ingest.cursor import ADAPTER, slug_folder
from reos_memory.squirrel.ingest.cursor import _iso as cursor_iso
from tests import test_transcripts
from tests.agent_fixtures import read_log
from tests.test_squirrel_e2e import SSL_ERROR

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT.parent / "shared" / "formats"
SAMPLE = FORMATS / "cursor" / "cursor-history" / "state.vscdb"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "agents" / "cursor"
CLAUDE = FORMATS / "claude-code" / "spotter" / "short.jsonl"
CODEX = (
    FORMATS
    / "codex"
    / "codemie-code"
    / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl"
)

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

app = test_transcripts.app  # the in-process app fixture (hash embedder)

needs_sample = pytest.mark.skipif(
    not SAMPLE.is_file(), reason="../shared/formats/cursor (the real Cursor database) is missing"
)


# -- building Cursor's places in a fake home -------------------------------------------------


def project(tmp: Path, name: str = "quote-service") -> Path:
    p = tmp / "work" / name
    (p / ".git").mkdir(parents=True, exist_ok=True)
    return p


def transcript(
    home: Path, folder: Path, conv: str, lines: list[bytes], nested: bool = True
) -> Path:
    """An agent transcript where Cursor writes it (the IDE's nested layout, or the CLI's flat)."""
    path = cursor_log.transcript_path(home, folder, conv, nested)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"".join(lines))
    return path


def fixture_lines(name: str, folder: Path | None = None) -> list[bytes]:
    text = (FIXTURES / name).read_text()
    if folder is not None:
        text = text.replace("__PROJECT__", str(folder))
    return [ln.encode() + b"\n" for ln in text.splitlines()]


def user_dir(home: Path) -> Path:
    return home / ".config" / "Cursor" / "User"


def write_db(path: Path, table: str, rows: dict[str, Any]) -> None:
    """A state.vscdb as Cursor lays it out: `key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path)
    conn.execute(
        f"CREATE TABLE IF NOT EXISTS {table} (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"
    )
    for k, v in rows.items():
        conn.execute(f"INSERT INTO {table} VALUES (?, ?)", (k, json.dumps(v)))
    conn.commit()
    conn.close()


def workspace(home: Path, wid: str, folder: Path, rows: dict[str, Any]) -> Path:
    d = user_dir(home) / "workspaceStorage" / wid
    d.mkdir(parents=True, exist_ok=True)
    (d / "workspace.json").write_text(json.dumps({"folder": folder.as_uri()}))
    write_db(d / "state.vscdb", "ItemTable", rows)
    return d / "state.vscdb"


def parse_all(
    path: Path, state: ParseState | None = None, start: int = 0, db: str | None = None
) -> tuple[list[Parsed], ParseState, int]:
    """(events, state, where the next read starts); the adapter is not finished."""
    state = state or ParseState()
    state.db = db or state.db  # as the ingester tells it: where our hook's results are
    r = read_log(ADAPTER, path, start=start, state=state, finish=False)
    return r.events, r.state, r.end


def kinds(parsed: list[Parsed]) -> Counter[str]:
    c: Counter[str] = Counter()
    for p in parsed:
        e = p.event
        tag = f"{e.role}:{e.kind}"
        if e.rejected:
            tag += ":rejected"
        elif e.is_error:
            tag += ":error"
        c[tag] += 1
    return c


# -- 1. the real workspace database ------------------------------------------------------------


@needs_sample
def test_the_real_workspace_database_parses_whole_and_matches_the_notes(app, tmp_path) -> None:
    home = tmp_path / "home"
    folder = project(tmp_path, "mobilechat")
    d = user_dir(home) / "workspaceStorage" / "5f0c1d2e3a4b"
    d.mkdir(parents=True)
    db = d / "state.vscdb"
    shutil.copyfile(SAMPLE, db)
    (d / "workspace.json").write_text(json.dumps({"folder": folder.as_uri()}))
    assert tin.detect(str(db)) == "cursor"

    sq = app.squirrel
    rep = tin.ingest_file(sq.ingest_deps, str(db), tin.Options(session_end=True))
    assert rep.agent == "cursor" and rep.malformed == 0 and rep.skipped_reason is None
    c = rep.counts
    # NOTES: 5 chat tabs of 49 bubbles (27 user, 22 ai; the 5 empty user bubbles ending the tabs
    # are the input box's drafts, held until sent); 26 composers of 82 bubbles; 66 prompts
    assert c["chat_tabs"] == 5 and c["chat_bubbles"] == 49 - 5
    assert c["composers"] == 26 and c["composer_bubbles"] == 82
    assert c["prompts"] == 66
    assert c["user_messages"] == 22 + 41
    # every proposed code block is a call; the user's accepting or rejecting it its result
    assert c["tool_calls"] == c["tool:edit_file"] == 118
    assert c["rejections"] == 19 and c["accepted_edits"] == 51
    assert rep.lines == 3 and rep.events == 63 + 63 + 118 + 19 + 51
    assert rep.project_id is not None

    # every chat and composer is its own session, all in the workspace's project
    sessions = sq.db.read(
        lambda conn: conn.execute(
            "SELECT count(*), count(DISTINCT project_id) FROM squirrel_sessions"
        ).fetchone()
    )
    assert tuple(sessions) == (31, 1)

    # nothing new: nothing read again
    again = tin.ingest_file(sq.ingest_deps, str(db), tin.Options(session_end=True))
    assert again.lines == 0 and again.events == 0 and not again.rewritten
    # Cursor's database is only read: no journal files beside it
    assert sorted(os.listdir(d)) == ["state.vscdb", "workspace.json"]


# -- 2. the fixtures: every documented record kind ------------------------------------------------


def test_transcript_kinds_become_the_right_events(tmp_path) -> None:
    folder = project(tmp_path)
    path = transcript(tmp_path / "home", folder, "conv-1", fixture_lines("transcript.jsonl"))
    parsed, state, _ = parse_all(path)
    assert state.session_id == "conv-1" and state.cwd == str(folder)
    assert {p.session_id for p in parsed} == {"conv-1"}
    assert kinds(parsed) == {
        "user:message": 2,  # the two <user_query>s; the <system_notification> is not the user's
        "assistant:message": 2,
        "assistant:tool_call": 5,
        "tool:tool_result": 4,
        "tool:tool_result:error": 1,
        "system:message": 1,  # the aborted turn
    }
    ev = [p.event for p in parsed]
    assert ev[0].text == "The quote endpoint in quotes.py fails, make its tests pass"
    assert ev[0].ts == "2026-03-02T10:00:00.000Z"
    calls = [e for e in ev if e.kind == "tool_call"]
    assert calls[0].command == "pytest tests/test_quotes.py" and calls[0].tool_name == "Shell"
    assert calls[1].file == "quotes.py" and calls[2].raw_snippet == "import httpx\n"
    results = [e for e in ev if e.kind == "tool_result"]
    # results name no call: paired with the calls in order
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert results[0].tool_name == "Shell" and "1 failed" in (results[0].text or "")
    assert (
        results[-1].exit_code == 2 and results[-1].is_error and results[-1].command == "make deploy"
    )
    assert state.counts["interrupts"] == 1 and state.counts["turns"] == 2
    assert state.counts["skipped"] == 1  # the unknown role, counted, never fatal


def test_a_transcript_as_cursor_writes_it_without_tool_results(tmp_path) -> None:
    """Real transcripts (third-party readers, 2026): prompts dated by a human-readable
    <timestamp>, `[REDACTED]` where the thinking was, calls named as Cursor names its tools and no
    tool results; `turn_ended` lines with a status."""
    folder = project(tmp_path)
    s = cursor_log.Session(folder, START, conversation="conv-real", results=False)
    s.user("Make the build pass").run("npm run build", "error TS2322", 2)
    s.edit("src/app.ts", "let n: string", "let n: number").say("Fixed the type.")
    s.lines.append(
        cursor_log.line(
            "assistant",
            {
                "type": "tool_use",
                "name": "ApplyPatch",
                "input": "*** Begin Patch\n*** Update File: src/util.ts\n@@\n-a\n+b\n*** End Patch",
            },
        )
    )
    s.lines.append({"type": "turn_ended", "status": "error", "error": "User aborted request."})
    s.user("try again").lines.append({"type": "turn_ended", "status": "error", "error": "boom"})
    s.lines.append(cursor_log.prompt("an older build's prompt", None))
    parsed, state, _ = parse_all(s.write(tmp_path / "home"))
    ev = [p.event for p in parsed]
    assert kinds(parsed) == {
        "user:message": 3,
        "assistant:tool_call": 3,
        "assistant:message": 1,  # "[REDACTED]" alone is no message
        "system:message": 2,  # the aborted turn, the failed one
    }
    assert ev[0].ts == "2026-03-01T09:00:00.000Z"  # "Sunday, Mar 1, 2026, 9:00 AM (UTC+0)"
    said = next(e for e in ev if e.role == "assistant" and e.kind == "message")
    assert said.text == "Fixed the type."
    shell, edit, patch = [e for e in ev if e.kind == "tool_call"]
    assert shell.command == "npm run build" and shell.tool_name == "Shell"
    assert edit.file == str(folder / "src/app.ts") and edit.raw_snippet == "let n: number"
    assert patch.file == "src/util.ts" and patch.tool_name == "ApplyPatch"
    assert state.counts["interrupts"] == 1 and state.counts["errors"] == 1
    assert "boom" in (ev[-2].summary or "") and ev[-1].ts == ev[-3].ts  # undated: the last time


@pytest.mark.parametrize(
    ("spoken", "iso"),
    [
        ("Friday, Jul 31, 2026, 5:10 PM (UTC-5)", "2026-07-31T22:10:00.000Z"),
        ("Tuesday, Jul 21, 2026, 1:11 PM (UTC+3)", "2026-07-21T10:11:00.000Z"),
        ("Monday, March 2, 2026, 12:05 AM (UTC+5:30)", "2026-03-01T18:35:00.000Z"),
        ("2026-03-02T10:00:00Z", "2026-03-02T10:00:00.000Z"),
        ("soon", None),
    ],
)
def test_the_envelope_times_cursor_writes(spoken: str, iso: str | None) -> None:
    assert cursor_iso(spoken) == iso
    if iso and "UTC" in spoken:  # and the harness writes them that way
        t = datetime.fromisoformat(iso.replace("Z", "+00:00"))
        assert cursor_iso(cursor_log.envelope_time(t)) == iso


def test_a_subagent_transcript_counts_for_its_parent(tmp_path) -> None:
    folder = project(tmp_path)
    parent = transcript(tmp_path / "home", folder, "conv-1", fixture_lines("transcript.jsonl")[:2])
    sub = parent.parent / "subagents" / "child-7.jsonl"
    sub.parent.mkdir()
    sub.write_bytes(b"".join(fixture_lines("transcript.jsonl")[:3]))
    parsed, _state, _ = parse_all(sub)
    assert {p.session_id for p in parsed} == {"conv-1"}
    assert kinds(parsed) == {
        "assistant:message": 1,
        "assistant:tool_call": 1,
        "tool:tool_result": 1,
    }


def test_hook_payload_kinds_become_the_right_events(tmp_path) -> None:
    folder = project(tmp_path)
    path = tmp_path / "hooks" / "cursor-hooks.jsonl"
    path.parent.mkdir()
    path.write_bytes(b"".join(fixture_lines("hooks.jsonl", folder)))
    assert tin.detect(str(path)) == "cursor"
    parsed, state, _ = parse_all(path)
    assert state.session_id == "conv-hooks-1" and state.cwd == str(folder)
    one = [p.event for p in parsed if p.session_id == "conv-hooks-1"]
    assert kinds([p for p in parsed if p.session_id == "conv-hooks-1"]) == {
        "user:message": 2,
        "assistant:tool_call": 4,  # the shell/edit events repeat preToolUse's calls: not twice
        "tool:tool_result": 2,
        "tool:tool_result:rejected": 1,  # permission_denied
        "tool:tool_result:error": 1,  # timeout
        "system:message": 2,  # the interrupted call, the aborted turn
        "assistant:message": 1,
    }
    denied = next(e for e in one if e.rejected)
    assert denied.command == "npm install dayjs" and denied.call_id == "tu-1"
    assert state.counts["compactions"] == 1 and state.counts["skipped"] == 1
    two = [p for p in parsed if p.session_id == "conv-hooks-2"]
    assert kinds(two) == {"user:message": 1, "system:message": 1}
    assert all(p.cwd == str(folder) for p in parsed)
    assert state.finished == ["conv-hooks-2"]  # its sessionEnd


def _legacy_rows() -> dict[str, Any]:
    rows = json.loads((FIXTURES / "workspace_itemtable.json").read_text())
    rows.pop("_comment")
    return rows


def test_legacy_workspace_database_kinds(tmp_path) -> None:
    home = tmp_path / "home"
    folder = project(tmp_path, "app")
    db = workspace(home, "ws1", folder, _legacy_rows())
    assert tin.detect(str(db)) == "cursor"
    parsed, state, pos = parse_all(db)
    assert {p.cwd for p in parsed} == {str(folder)}
    by = {
        sid: kinds([p for p in parsed if p.session_id == sid])
        for sid in {p.session_id for p in parsed}
    }
    assert by["tab-1"] == {"user:message": 1, "assistant:message": 1}  # the draft is held
    assert by["tab-2"] == {"user:message": 1, "assistant:message": 1}
    assert by["comp-1"] == {
        "user:message": 2,
        "assistant:message": 2,
        "assistant:tool_call": 3,
        "tool:tool_result": 1,  # header.scss accepted
        "tool:tool_result:rejected": 1,  # header.html rejected
    }
    assert by["comp-2"] == {"user:message": 1, "assistant:message": 1}
    tab_ai = next(
        p.event for p in parsed if p.session_id == "tab-1" and p.event.role == "assistant"
    )
    assert "ionic generate page settings" in (tab_ai.text or "")  # rawText, the whole answer
    rejected = next(p.event for p in parsed if p.event.rejected)
    assert rejected.file == "/home/dev/app/src/header.html"
    assert state.counts["prompts"] == 3 and state.counts["skipped"] == 1  # the system bubble
    assert set(state.live) == {"tab-1", "tab-2", "comp-1", "comp-2"}

    # Cursor writes again: the draft is sent and answered, the footer proposal is rejected
    rows = _legacy_rows()
    tab = rows["workbench.panel.aichat.view.aichat.chatdata"]["tabs"][0]
    tab["bubbles"][2]["text"] = "it still fails"
    tab["bubbles"].append({"type": "ai", "id": "tb-7", "text": "Check the import path."})
    comp = rows["composer.composerData"]["allComposers"][0]
    comp["codeBlockData"]["file:///home/dev/app/src/footer.scss"][0]["status"] = "rejected"
    write_db(
        db,
        "ItemTable",
        {
            k: rows[k]
            for k in ("workbench.panel.aichat.view.aichat.chatdata", "composer.composerData")
        },
    )
    more, state, pos2 = parse_all(db, state, pos)
    assert pos2 > pos
    assert [(p.session_id, p.event.role, p.event.kind, p.event.rejected) for p in more] == [
        ("tab-1", "user", "message", False),
        ("tab-1", "assistant", "message", False),
        ("comp-1", "tool", "tool_result", True),
    ]
    # a restart from the stored state reads nothing more
    restored = ParseState.from_json(state.to_json())
    assert parse_all(db, restored, pos2)[0] == []


def _kv_fixture(home: Path, folder: Path) -> Path:
    spec = json.loads((FIXTURES / "global_kv.json").read_text())
    workspace(home, "ws2", folder, spec["workspace"])
    db = user_dir(home) / "globalStorage" / "state.vscdb"
    write_db(db, "ItemTable", {"some.setting": 1})
    write_db(db, "cursorDiskKV", spec["cursorDiskKV"])
    return db


def test_global_database_kinds_held_back_bubbles_and_transcripts(tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    folder = project(tmp_path, "csv")
    db = _kv_fixture(home, folder)
    # kv-3 has an agent transcript: read from there, not twice
    transcript(home, folder, "kv-3", fixture_lines("transcript.jsonl")[:1])
    assert tin.detect(str(db)) == "cursor"
    parsed, state, pos = parse_all(db)
    assert {p.cwd for p in parsed} == {str(folder)}  # the workspace that lists the composer
    kv1 = [p.event for p in parsed if p.session_id == "kv-1"]
    assert kinds([p for p in parsed if p.session_id == "kv-1"]) == {
        "user:message": 1,
        "assistant:tool_call": 4,
        "tool:tool_result": 2,
        "tool:tool_result:error": 1,  # exit code 1
        "tool:tool_result:rejected": 1,  # the user rejected `rm -rf build`
        "assistant:message": 1,
    }
    failed = next(e for e in kv1 if e.kind == "tool_result" and e.is_error and not e.rejected)
    assert failed.exit_code == 1 and failed.command == "pytest tests/test_csv.py"
    assert "1 failed" in (failed.text or "")
    assert next(e for e in kv1 if e.tool_name == "edit_file").file == "csvparse.py"
    # kv-2 is still generating its answer: only the question so far
    assert [p.event.text for p in parsed if p.session_id == "kv-2"] == ["Summarise the README"]
    assert state.counts["composers_in_transcripts"] == 1 and state.counts["empty_bubbles"] == 1
    assert not any(p.session_id == "kv-3" for p in parsed)

    # the answer is done: kv-2 gives it (and only it); other rows changing give nothing
    conn = sqlite3.connect(db)
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?, ?)",
        (
            "bubbleId:kv-2:m2",
            json.dumps({"type": 2, "bubbleId": "m2", "text": "The README explains setup."}),
        ),
    )
    comp = json.loads((FIXTURES / "global_kv.json").read_text())["cursorDiskKV"][
        "composerData:kv-2"
    ]
    comp.update(status="completed", generatingBubbleIds=[])
    conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", ("composerData:kv-2", json.dumps(comp)))
    conn.execute("INSERT INTO cursorDiskKV VALUES ('checkpointId:kv-1:k9', '{}')")
    conn.commit()
    conn.close()
    more, state, pos2 = parse_all(db, ParseState.from_json(state.to_json()), pos)
    assert [(p.session_id, p.event.text) for p in more] == [("kv-2", "The README explains setup.")]
    assert parse_all(db, state, pos2)[0] == []
    assert sorted(os.listdir(db.parent)) == ["state.vscdb"]


def _composers(db: Path, names: list[str], bubbles: int) -> None:
    """Composers written one after another into a global database, `bubbles` user messages
    each."""
    db.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(db)
    conn.execute(
        "CREATE TABLE IF NOT EXISTS cursorDiskKV (key TEXT UNIQUE ON CONFLICT REPLACE, value BLOB)"
    )
    for cid in names:
        heads = []
        for j in range(bubbles):
            text = json.dumps({"type": 1, "text": f"{cid} message {j}"})
            conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"bubbleId:{cid}:b{j}", text))
            heads.append({"bubbleId": f"b{j}"})
        data = json.dumps({"composerId": cid, "fullConversationHeadersOnly": heads})
        conn.execute("INSERT INTO cursorDiskKV VALUES (?, ?)", (f"composerData:{cid}", data))
    conn.commit()
    conn.close()


def _batches(db: Path, state: ParseState, pos: int, max_events: int) -> tuple[list[str], int]:
    """Every event text read in batches of `max_events`, the state stored between them."""
    texts: list[str] = []
    for _ in range(1000):
        read = tin._read_batch(str(db), pos, ADAPTER, state, max_events)
        if read.lines == 0:
            return texts, pos
        state.__dict__.update(vars(ParseState.from_json(state.to_json())))
        pos = read.end
        texts += [e.text or "" for evs in read.events.values() for e in evs]
    raise AssertionError("the reads never end")


def test_batches_cut_short_go_on_past_more_composers_than_remembered(tmp_path, monkeypatch) -> None:
    # more composers than the progress kept, read in batches cut short: the reads went back to
    # the start and stored the same events again and again, never ending
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setattr(cursor_db, "MAX_SESSIONS", 5)
    db = user_dir(home) / "globalStorage" / "state.vscdb"
    _composers(db, [f"c{i:02d}" for i in range(12)], 4)
    state = ParseState()
    texts, pos = _batches(db, state, 0, 3)
    assert len(texts) == 48 and len(set(texts)) == 48
    assert len(state.extra["kv"]) <= 12
    # more later, the same way; composers written again give only what is new
    _composers(db, [f"d{i:02d}" for i in range(9)], 3)
    conn = sqlite3.connect(db)
    heads = [{"bubbleId": f"b{j}"} for j in range(5)]
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?, ?)",
        ("bubbleId:c11:b4", json.dumps({"type": 1, "text": "c11 message 4"})),
    )
    conn.execute(
        "INSERT INTO cursorDiskKV VALUES (?, ?)",
        ("composerData:c11", json.dumps({"fullConversationHeadersOnly": heads})),
    )
    conn.commit()
    conn.close()
    more, _ = _batches(db, state, pos, 2)
    assert sorted(more) == sorted(
        [f"d{i:02d} message {j}" for i in range(9) for j in range(3)] + ["c11 message 4"]
    )


def test_rowids_given_again_or_renumbered_are_read_again(tmp_path, monkeypatch) -> None:
    # the newest chat deleted and another written: its rowids came again, below the position
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    db = user_dir(home) / "globalStorage" / "state.vscdb"
    _composers(db, ["old", "scratch"], 5)
    state = ParseState()
    texts, pos = _batches(db, state, 0, 1000)
    assert len(texts) == 10
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM cursorDiskKV WHERE key LIKE '%scratch%'")
    conn.commit()
    conn.close()
    _composers(db, ["new"], 4)  # rowids 7.. again: the table's highest is below the position
    texts, pos = _batches(db, state, pos, 1000)
    assert sorted(texts) == [f"new message {j}" for j in range(4)]
    conn = sqlite3.connect(db)
    conn.execute("DELETE FROM cursorDiskKV WHERE key LIKE '%new%'")
    conn.commit()
    conn.close()
    _composers(db, ["newer"], 8)  # past the position again, the rows at it not those read
    texts, pos = _batches(db, state, pos, 1000)
    assert sorted(texts) == [f"newer message {j}" for j in range(8)]
    # VACUUM renumbers the rows (the deleted ones left gaps): nothing is said twice, a chat
    # written after it is read
    conn = sqlite3.connect(db)
    conn.execute("VACUUM")
    conn.close()
    _composers(db, ["after"], 2)
    texts, pos = _batches(db, state, pos, 1000)
    assert sorted(texts) == ["after message 0", "after message 1"]
    assert _batches(db, state, pos, 1000)[0] == []


def test_workspace_composers_are_read_again_only_once_changed(tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"
    ws = workspace(home, "w1", project(tmp_path), {"composer.composerData": {"allComposers": []}})
    glob = str(user_dir(home) / "globalStorage" / "state.vscdb")
    calls = []
    real = cursor_db.vscdb_sql.connect
    monkeypatch.setattr(cursor_db.vscdb_sql, "connect", lambda p: calls.append(p) or real(p))
    assert cursor_db.composer_folders(glob) == {}
    assert cursor_db.composer_folders(glob) == {} and len(calls) == 1
    write_db(ws, "ItemTable", {"composer.composerData": {"allComposers": [{"composerId": "x"}]}})
    os.utime(ws, ns=(1, 1))  # another stamp, whatever the clock's resolution
    assert cursor_db.composer_folders(glob) == {"x": str(project(tmp_path))}
    assert len(calls) == 2


def test_a_locked_database_is_read_later_and_bad_values_are_malformed(
    tmp_path, monkeypatch
) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    db = workspace(home, "ws3", project(tmp_path, "app"), _legacy_rows())
    conn = sqlite3.connect(db)
    conn.execute("BEGIN EXCLUSIVE")  # Cursor in the middle of a write
    assert list(ADAPTER.records(str(db), 0, 1 << 20)) == []
    conn.rollback()
    conn.execute("INSERT INTO ItemTable VALUES ('aiService.prompts', '[{\"text\": ')")
    conn.commit()
    conn.close()
    recs = list(ADAPTER.records(str(db), 0, 1 << 20))
    assert [r.malformed for r in recs] == [False, False, True]


def test_ingest_cursor_states_truncated_lines_appends_and_restarts(app, tmp_path) -> None:
    folder = project(tmp_path)
    lines = fixture_lines("transcript.jsonl")
    path = transcript(tmp_path / "home", folder, "conv-9", [*lines[:5], lines[5][:30]])
    sq = app.squirrel
    first = tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=False))
    assert first.agent == "cursor" and first.lines == 5 and first.malformed == 0
    assert first.session_id == "conv-9" and first.project_id is not None
    # the half-written line waits; nothing is read twice
    assert tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=False)).lines == 0
    with path.open("ab") as f:
        f.write(lines[5][30:] + b"".join(lines[6:]))
    rest = tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=True))
    assert rest.lines == len(lines) - 5 and rest.malformed == 0 and rest.ended

    # the same events as one read from the start, in one parse
    whole, _, _ = parse_all(path)
    assert first.events + rest.events == len(whole)
    assert tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=True)).events == 0


def test_ingest_sessions_of_a_database_end_by_their_own_time(app, tmp_path) -> None:
    home = tmp_path / "home"
    db = workspace(home, "ws4", project(tmp_path, "app"), _legacy_rows())
    sq = app.squirrel
    rep = tin.ingest_file(sq.ingest_deps, str(db), tin.Options(session_end=None, idle_seconds=3600))
    assert rep.malformed == 0 and rep.events > 0
    # the chats are from March 2026 in the fixture: idle, so ended; none is left live
    cur = sq.db.read(lambda c: c.execute("SELECT state_json FROM transcript_cursors").fetchone())
    assert json.loads(cur[0]).get("live", {}) == {}
    open_ = sq.db.read(
        lambda c: c.execute("SELECT count(*) FROM squirrel_sessions WHERE ended = 0").fetchone()
    )
    assert open_[0] == 0


# -- 3. detection -----------------------------------------------------------------------------


def test_detect_names_cursor_for_its_logs_only(tmp_path) -> None:
    folder = project(tmp_path)
    home = tmp_path / "home"
    t = transcript(home, folder, "conv-2", fixture_lines("transcript.jsonl"), nested=False)
    assert tin.detect(str(t)) == "cursor"
    loose = tmp_path / "elsewhere.jsonl"  # outside Cursor's folders: known by its records
    loose.write_bytes(t.read_bytes())
    assert tin.detect(str(loose)) == "cursor"
    # VS Code writes state.vscdb files too: not Cursor's
    vs = home / ".config" / "Code" / "User" / "workspaceStorage" / "abc" / "state.vscdb"
    write_db(vs, "ItemTable", {"interactive.sessions": []})
    assert not ADAPTER.claims(str(vs)) and tin.detect(str(vs)) is None
    # a copy lying elsewhere is Cursor's when it holds Cursor's chats
    copy, other = tmp_path / "copy" / "state.vscdb", tmp_path / "other" / "state.vscdb"
    write_db(copy, "ItemTable", _legacy_rows())
    write_db(other, "ItemTable", {"interactive.sessions": []})
    assert tin.detect(str(copy)) == "cursor" and tin.detect(str(other)) is None
    assert sorted(os.listdir(copy.parent)) == ["state.vscdb"]  # peeking leaves nothing behind
    if CLAUDE.is_file() and CODEX.is_file():
        assert tin.detect(str(CLAUDE)) == "claude-code"
        assert tin.detect(str(CODEX)) == "codex"
        assert not ADAPTER.claims(str(CLAUDE)) and not ADAPTER.claims(str(CODEX))
        for f in (CLAUDE, CODEX):
            with f.open("rb") as fh:
                first = json.loads(fh.readline())
            assert not ADAPTER.sniff(first)


# -- 4. where Cursor keeps its logs -------------------------------------------------------------


def test_roots_per_os_and_find_in_a_fake_home(tmp_path) -> None:
    assert ADAPTER.roots(Place("linux", "/h", {})) == [
        "/h/.config/Cursor/User/workspaceStorage",
        "/h/.config/Cursor/User/globalStorage",
        "/h/.cursor/projects",
    ]
    assert ADAPTER.roots(Place("linux", "/h", {"XDG_CONFIG_HOME": "/x"}))[0] == (
        "/x/Cursor/User/workspaceStorage"
    )
    mac = "/Users/u/Library/Application Support/Cursor/User"
    assert ADAPTER.roots(Place("darwin", "/Users/u", {})) == [
        f"{mac}/workspaceStorage",
        f"{mac}/globalStorage",
        "/Users/u/.cursor/projects",
    ]
    moved = ADAPTER.roots(Place("linux", "/h", {"CURSOR_CONFIG_DIR": "/c"}))
    assert moved[-1] == "/c/projects"  # the CLI's CURSOR_CONFIG_DIR moves ~/.cursor
    win = ADAPTER.roots(Place("win32", "C:/Users/u", {"APPDATA": "C:/Users/u/AppData/Roaming"}))
    assert [r.replace("\\", "/") for r in win] == [
        "C:/Users/u/AppData/Roaming/Cursor/User/workspaceStorage",
        "C:/Users/u/AppData/Roaming/Cursor/User/globalStorage",
        "C:/Users/u/.cursor/projects",
    ]

    home = tmp_path / "home"
    folder = project(tmp_path)
    ws = workspace(home, "ws5", folder, _legacy_rows())
    glob = _kv_fixture(home, folder)
    t = transcript(home, folder, "conv-3", fixture_lines("transcript.jsonl"))
    # what else lies there: backups, workspace.json, other editors' databases, extension files
    (ws.parent / "state.vscdb.backup").write_bytes(ws.read_bytes())
    (glob.parent / "storage.json").write_text("{}")
    (home / ".cursor" / "projects" / cursor_log.slug(folder) / "terminals").mkdir()
    (home / ".cursor" / "projects" / cursor_log.slug(folder) / "terminals" / "1.txt").write_text(
        "$ ls"
    )
    write_db(home / ".config" / "Code" / "User" / "globalStorage" / "state.vscdb", "ItemTable", {})
    roots = [r for r in ADAPTER.roots(Place("linux", str(home), {})) if os.path.exists(r)]
    assert len(roots) == 3
    found = tin.find(roots)
    ws2 = glob.parent.parent / "workspaceStorage" / "ws2" / "state.vscdb"  # lists its composers
    assert sorted(found) == sorted(str(p) for p in (ws, ws2, glob, t))
    assert slug_folder(str(t)) == str(folder)


# -- 5. end to end: a Cursor log in, a memory out through the MCP server --------------------------


def _line(role: str, *blocks: dict[str, Any]) -> bytes:
    return json.dumps(cursor_log.line(role, *blocks)).encode() + b"\n"


def _rates_session(folder: Path) -> cursor_log.Session:
    """requests fails on SSL twice, the user complains, httpx works."""
    s = cursor_log.Session(folder, START, conversation="conv-rates", nested=True)
    s.user("Fetch the exchange rates over HTTP in rates.py and print them")
    s.run("python rates.py", SSL_ERROR, 1).run("python rates.py", SSL_ERROR, 1)
    s.user("ugh, still the same SSL error")
    s.edit("rates.py", "import requests", "import httpx")
    s.run("python rates.py", "USD/EUR 0.92")
    return s.say("rates.py uses httpx now.")


def _package_session(folder: Path) -> cursor_log.Session:
    """The user corrects the agent's package manager."""
    s = cursor_log.Session(folder, START + timedelta(hours=1), conversation="conv-pkg")
    s.user("Add the lodash dependency to the dashboard")
    s.run("npm install lodash", "added 1 package")
    s.user("no, use pnpm add lodash instead of npm")
    return s.run("pnpm add lodash", "+ lodash 4.17.21")


def _mcp_context(env: dict[str, str], folder: Path, tasks: list[str]) -> list[dict[str, Any]]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    result: list[dict[str, Any]] = []

    async def go() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "reos_memory", "mcp"], env=env, cwd=str(folder)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            for task in tasks:
                res = await s.call_tool("get_task_context", {"task": task})
                assert not res.is_error, res.content
                result.append(json.loads(res.content[0].text))

    anyio.run(go)
    return result


@pytest.mark.e2e
def test_cursor_logs_to_memories_to_mcp_context(tmp_path) -> None:
    home = tmp_path / "home"
    folder = project(tmp_path, "rates")
    db = tmp_path / "data" / "memory.db"
    env = agent_env(home, db)
    first = _rates_session(folder).write(home)
    second = _package_session(folder).write(home)

    # the sqrl command over a Cursor transcript, the session ended now
    r = sqrl(env, "ingest", str(first), "--end", "--json")
    assert r.returncode == 0, r.stderr
    (rep,) = json.loads(r.stdout)
    assert rep["agent"] == "cursor" and rep["session_id"] == "conv-rates"
    assert rep["malformed"] == 0 and rep["session_ended"] and rep["episodes"]
    assert rep["project_id"] is not None

    # JSON-RPC, the agent named
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev", "HOME": str(home)}) as srv:
        srv.wait_ready()
        got = srv.call(
            "squirrel/ingest_transcript",
            {"path": str(second), "agent": "cursor", "session_end": True},
        )
        assert got["agent"] == "cursor" and got["session_ended"] and got["episodes"]
        assert got["project_id"] == rep["project_id"]
        mems = srv.call(
            "squirrel/memories/list",
            {
                "project_id": rep["project_id"],
                "include_global": False,
                "statuses": ["provisional", "active"],
                "limit": 50,
            },
        )
    texts = [m["text"] for m in mems["memories"]]
    assert any("httpx" in t for t in texts), texts
    assert any("pnpm" in t for t in texts), texts

    # an MCP client working in the project is given each for a related task
    http, deps = _mcp_context(
        env, folder, ["call the HTTP API for the rates", "install the lodash package with npm"]
    )
    assert "httpx" in http["context_prompt"], http
    assert re.search(r"requests|SSL", http["context_prompt"]), http
    assert "pnpm" in deps["context_prompt"], (texts, deps["context_prompt"])


@needs_sample
def test_a_database_outside_its_workspace_goes_to_the_project_named(tmp_path) -> None:
    """The real workspace database copied out of its folder names no directory: without a
    project its events are not learned from and `sqrl ingest` says so; `--project-root`
    (`project_root` over JSON-RPC) gives them one."""
    home = tmp_path / "home"
    copied = tmp_path / "copied" / "state.vscdb"
    copied.parent.mkdir()
    shutil.copyfile(SAMPLE, copied)
    env = agent_env(home, tmp_path / "a.db")
    r = sqrl(env, "ingest", str(copied), "--end")
    assert r.returncode == 0, r.stderr
    assert "0 episode(s)" in r.stdout and "name no project directory" in r.stdout, r.stdout
    assert "--project-root" in r.stdout
    # (nothing was stored, the file's cursor did not move: naming a project reads it all)

    folder = project(tmp_path, "mobilechat")
    r = sqrl(env, "ingest", str(copied), "--end", "--json", "--project-root", str(folder))
    assert r.returncode == 0, r.stderr
    (rep,) = json.loads(r.stdout)
    assert rep["episodes"] and rep["project_id"] is not None
    assert "no_project" not in rep["counts"], rep["counts"]

    # JSON-RPC, the project by id
    with Server(tmp_path / "b.db", env={"REOS_MEMORY_OWNER_ID": "dev", "HOME": str(home)}) as srv:
        srv.wait_ready()
        got = srv.call(
            "squirrel/ingest_transcript",
            {"path": str(copied), "agent": "cursor", "session_end": True, "project_id": "chat"},
        )
        assert got["project_id"] == "chat" and got["episodes"], got
        bad = srv.error("squirrel/ingest_transcript", {"path": str(copied), "project_id": "../x"})
        assert bad.code == -32602 and "project_id" in str(bad), bad


def test_a_global_database_before_its_first_composer(tmp_path, monkeypatch) -> None:
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    db = user_dir(home) / "globalStorage" / "state.vscdb"
    write_db(db, "ItemTable", {f"setting.{i}": i for i in range(50)})
    write_db(db, "cursorDiskKV", {})
    parsed, state, pos = parse_all(db)
    assert parsed == [] and pos == 0  # ItemTable's rowids are no position in cursorDiskKV
    spec = json.loads((FIXTURES / "global_kv.json").read_text())["cursorDiskKV"]
    write_db(db, "cursorDiskKV", {k: v for k, v in spec.items() if ":kv-1" in k})
    more, state, _ = parse_all(db, state, pos)
    assert {p.session_id for p in more} == {"kv-1"} and len(more) == 10


def test_squirrels_injected_context_is_not_learned_back(tmp_path) -> None:
    from reos_memory.squirrel.events import compress

    block = '<squirrel-context id="ctx-1">\n- Use yarn for every install.\n</squirrel-context>'
    folder = project(tmp_path)
    lines = [
        _line("user", {"type": "text", "text": f"{block}\n<user_query>add lodash</user_query>"}),
        _line("user", {"type": "text", "text": f"{block}\nadd dayjs too"}),
    ]
    parsed, _, _ = parse_all(transcript(tmp_path / "home", folder, "conv-ctx", lines))
    stored = [compress(p.event, i, None) for i, p in enumerate(parsed)]
    assert [s["text"] for s in stored] == ["add lodash", "add dayjs too"]
    assert "yarn" not in json.dumps(stored)


# -- 6. tool results kept by the hook, paired with a transcript's calls ---------------------------


def _hook_log(sq: Any, s: cursor_log.Session, runs: list[dict[str, Any]]) -> Path:
    """The lines `reos-memory hook cursor` keeps for these tool runs of the session."""
    folder = cursor_sidecar.folder_of(sq.db.path)
    assert folder is not None
    for p in cursor_tool_runs(s.id, str(s.cwd), runs, str(s.path(Path("/nowhere")))):
        cursor_sidecar.record(folder.parent, p)
    return folder / f"{s.id}.jsonl"


def test_tool_results_kept_by_the_hook_follow_their_calls(app, tmp_path) -> None:
    """A real-shape transcript (no results) and the hook's log of its tool runs: each call is
    followed by its own result (by command or file, in order; a run told twice by postToolUse
    and afterShellExecution is one result), a denial is a rejection, a call with no result in
    the log yet has none, and a second ingest adds nothing."""
    sq = app.squirrel
    home, folder = tmp_path / "home", project(tmp_path)
    s = cursor_log.Session(folder, START, conversation="conv-hooked", results=False)
    s.user("Fetch the exchange rates in rates.py").run("python rates.py", SSL_ERROR, 1)
    s.run("ls", "rates.py\nREADME.md")
    s.run("python rates.py", "", 1)
    s.edit("rates.py", "import requests", "import httpx")
    s.run("python rates.py", "USD/EUR 0.92")
    s.run("pytest -q", "1 passed")
    runs = [dict(r) for r in s.runs]
    runs[2].update(failure="permission_denied", error="The user rejected the command")
    # the hook saw `ls` finish first (the calls ran side by side), and not yet the tests
    log = _hook_log(sq, s, [runs[1], runs[0], *runs[2:5]])
    assert len(log.read_text().splitlines()) == 2 + 2 + 1 + 1 + 2  # shell runs told twice
    path = s.write(home)

    parsed, state, _ = parse_all(path, db=sq.db.path)
    ev = [p.event for p in parsed if p.event.kind in ("tool_call", "tool_result")]
    shape = [(e.kind, e.command or os.path.basename(e.file or "")) for e in ev]
    assert shape == [
        ("tool_call", "python rates.py"),
        ("tool_result", "python rates.py"),
        ("tool_call", "ls"),
        ("tool_result", "ls"),
        ("tool_call", "python rates.py"),
        ("tool_result", "python rates.py"),
        ("tool_call", "rates.py"),
        ("tool_result", "rates.py"),
        ("tool_call", "python rates.py"),
        ("tool_result", "python rates.py"),
        ("tool_call", "pytest -q"),  # its result is not in the log: none
    ]
    calls, results = ev[0::2], ev[1::2]
    assert [r.call_id for r in results] == [c.call_id for c in calls[:5]]
    assert [r.tool_name for r in results] == ["Shell", "Shell", "Shell", "StrReplace", "Shell"]
    assert "CERTIFICATE_VERIFY_FAILED" in (results[0].text or "")
    assert results[1].text == "rates.py\nREADME.md" and not results[1].is_error
    assert results[2].rejected and results[2].is_error
    assert "rejected the command" in (results[2].text or "")
    assert results[4].text == "USD/EUR 0.92"
    assert state.counts["results_from_hooks"] == 5 and state.counts["rejections"] == 1
    assert len(state.to_json()) < 2000  # what is kept of the log stays small

    # stored: the same, once; nothing again on a second ingest
    rep = tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=False))
    assert rep.counts["results_from_hooks"] == 5 and rep.events == len(parsed)
    assert tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=False)).events == 0
    # the tests' result comes late, with the next run of the same command: each to its call
    more = [{**runs[5], "output": "2 passed"}]
    _hook_log(sq, s, [runs[5], *more])
    s.run("pytest -q", "2 passed")
    with path.open("a") as f:  # Cursor appends
        f.write(json.dumps(s.lines[-1]) + "\n")
    late = tin.ingest_file(sq.ingest_deps, str(path), tin.Options(session_end=False))
    assert late.events == 3 and late.counts["results_from_hooks"] == 7
    stored = sq.db.read(
        lambda c: [
            json.loads(r[0])
            for r in c.execute(
                "SELECT event_json FROM squirrel_events WHERE session_id = ? ORDER BY seq",
                ("conv-hooked",),
            )
        ]
    )
    tests = [e for e in stored if e.get("command") == "pytest -q"]
    assert [(e["kind"], e["call_id"]) for e in tests] == [
        ("tool_call", "conv-hooked:6"),
        ("tool_result", "conv-hooked:6"),
        ("tool_call", "conv-hooked:7"),
        ("tool_result", "conv-hooked:7"),
    ]
    assert "1 passed" in json.dumps(tests[1]) and "2 passed" in json.dumps(tests[3])


def test_a_transcript_with_results_and_a_hook_log_gives_each_result_once(app, tmp_path) -> None:
    """An older transcript that holds the results as well: each call's result once."""
    sq = app.squirrel
    folder = project(tmp_path)
    s = cursor_log.Session(folder, START, conversation="conv-both", results=True)
    s.user("Make the build pass").run("npm run build", "error TS2322", 2)
    s.run("npm run build", "built in 2.1s")
    _hook_log(sq, s, s.runs)
    parsed, state, _ = parse_all(s.write(tmp_path / "home"), db=sq.db.path)
    assert kinds(parsed)["tool:tool_result"] == 2
    assert state.counts["results_from_hooks_repeated"] == 2
    # a subagent's transcript takes nothing from its conversation's log
    sub = s.path(tmp_path / "home").with_suffix("") / "subagents" / "child.jsonl"
    sub.parent.mkdir(parents=True)
    sub.write_text(s.path(tmp_path / "home").read_text())
    parsed, state, _ = parse_all(sub)
    assert "results_from_hooks" not in state.counts


def test_a_secret_split_where_a_long_output_was_first_cut_leaves_no_piece(tmp_path) -> None:
    # the half after the first cut shrinks by its redaction (private keys): what lay next to the
    # seam came into what was kept, the rest of a token split there with it
    pem = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(
        "".join(chr(65 + (i * 7 + j * 13) % 26) + str((i + j) % 10) for j in range(32))
        for i in range(50)
    )
    tok = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    tail = tok[12:] + "\n" + pem + "\n-----END RSA PRIVATE KEY-----\n"
    tail = (tail * 3)[: 8000 - 1] + "z"
    out = "y" * 20000 + "export GITHUB_TOKEN=" + tok[:12] + tail
    e = cursor_sidecar.entry(
        {
            "hook_event_name": "postToolUse",
            "conversation_id": "c1",
            "tool_name": "Shell",
            "tool_input": {"command": "cat secrets"},
            "tool_output": out,
        }
    )
    assert e is not None
    kept = e["output"]
    assert len(kept) <= cursor_sidecar.MAX_OUTPUT + 20 and kept.startswith("y" * 1000)
    assert tok[12:] not in kept and tok[:12] not in kept
    assert "[...]" in kept


def test_a_hook_log_removed_as_idle_and_written_again_is_read_from_its_start(tmp_path) -> None:
    root = tmp_path / "m.db.hook-tools"

    def run(cmd: str, out: str) -> None:
        payload = {
            "hook_event_name": "afterShellExecution",
            "conversation_id": "conv1",
            "generation_id": "g",
            "command": cmd,
            "output": out,
        }
        assert cursor_sidecar.record(root, payload)

    for i in range(20):
        run(f"echo {i}", "x" * 200)
    log = root / "cursor" / "conv1.jsonl"
    st: dict[str, Any] = {"path": str(log)}
    for i in range(20):
        assert cursor_sidecar.take(st, "Shell", f"echo {i}", None) is not None
    assert st["off"] > 0
    os.utime(log, (0, 0))  # a week idle: removed
    assert cursor_sidecar.prune(root / "cursor") == 1
    run("pytest", "1 failed")  # the conversation resumed: a new log, shorter than the offset
    got = cursor_sidecar.take(st, "Shell", "pytest", None)
    assert got is not None and got["output"] == "1 failed"
    for i in range(30):  # grown past the old offset, read by the same process
        run(f"make {i}", "y" * 300)
    assert all(cursor_sidecar.take(st, "Shell", f"make {i}", None) for i in range(30))


def test_cursor_config_dir_moves_the_transcripts_for_every_reader(tmp_path, monkeypatch) -> None:
    # the CLI's CURSOR_CONFIG_DIR: the roots honoured it, the database's reader (a composer with
    # a transcript read twice) and the hook (a null transcript_path looked for) did not
    from reos_memory.interfaces.agent_hooks.dialects import DIALECTS

    home, dot = tmp_path / "home", tmp_path / "cursor-config"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CURSOR_CONFIG_DIR", str(dot))
    folder = project(tmp_path, "csv")
    db = _kv_fixture(home, folder)
    moved = cursor_log.transcript_path(dot.parent, folder, "kv-3", True)
    moved = dot / moved.relative_to(dot.parent / ".cursor")
    moved.parent.mkdir(parents=True)
    moved.write_bytes(b"".join(fixture_lines("transcript.jsonl")[:1]))
    assert os.path.join(str(dot), "projects") in ADAPTER.roots(Place.here())
    parsed, state, _ = parse_all(db)
    assert state.counts["composers_in_transcripts"] == 1
    assert not any(p.session_id == "kv-3" for p in parsed)
    stop = {
        "hook_event_name": "stop",
        "conversation_id": "kv-3",
        "generation_id": "g1",
        "transcript_path": None,
        "workspace_roots": [str(folder)],
        "cwd": str(folder),
    }
    got = DIALECTS["cursor"].read(stop)
    assert got is not None and got.transcript == str(moved)
