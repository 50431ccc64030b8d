"""opencode: its SQLite database (and the legacy JSON tree) read through the adapter, cursors
over a database of many sessions, and the e2e path to a memory (fixtures built from the types
in ../shared/formats/opencode/NOTES.md; no real sample exists)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest

from harness.commands import agent_env, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel import api
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import Parsed, ParseState, Place
from reos_memory.squirrel.ingest.opencode import ADAPTER, OpenCode
from tests.agent_fixtures import events_of, open_app, opencode_db, opencode_legacy
from tests.test_agents_e2e import _mcp_context

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT.parent / "shared" / "formats"
SES_A = "ses_3f1aa0c0fffeA1b2C3d4E5f6G7"
SES_C = "ses_3f1aa0c0fffeC1b2C3d4E5f6G7"
SES_L = "ses_2e0bb0c0fffeL1b2C3d4E5f6G7"

needs_formats = pytest.mark.skipif(
    not FORMATS.is_dir(), reason="../shared/formats (the real session logs) is not beside the repo"
)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    yield from open_app(tmp_path)


@pytest.fixture
def home(tmp_path: Path) -> dict[str, Path]:
    """A fake home with opencode's data directory, two projects and the legacy tree."""
    places = {k: tmp_path / "work" / k.lower() for k in ("A1", "C1", "L1")}
    for p in places.values():
        (p / ".git").mkdir(parents=True)
    data = tmp_path / "home" / ".local" / "share" / "opencode"
    opencode_db(data / "opencode.db", places)
    legacy = opencode_legacy(data / "storage", places)
    return {"home": tmp_path / "home", "db": data / "opencode.db", "legacy": legacy, **places}


def read_all(
    path: Path, state: ParseState | None = None, position: int = 0
) -> tuple[list[Parsed], ParseState, int]:
    """Every record from `position` through the adapter, batch after batch."""
    state = state or ParseState()
    if position == 0:
        ADAPTER.begin(str(path), state)
    out: list[Parsed] = []
    while True:
        recs = list(ADAPTER.records(str(path), position, 1 << 20))
        if not recs:
            return out, state, position
        for r in recs:
            assert r.data is not None and not r.malformed
            out += ADAPTER.parse(r.data, state)
        position = recs[-1].end


# -- every documented kind becomes the right event ---------------------------------------------


def test_every_part_kind_of_the_database(home: dict[str, Path]) -> None:
    parsed, state, _ = read_all(home["db"])
    a = [e for p, e in zip(parsed, events_of(parsed), strict=True) if p.session_id == SES_A]
    assert a == [
        # a user's text part (the synthetic one and the file part are not the user's words)
        (
            "user",
            "message",
            None,
            "The ISO week dates fail to parse in parser.py, fix it and run the tests",
            None,
            None,
            None,
            False,
            None,
        ),
        # bash: the exit code from state.metadata.exit ("completed" although it failed)
        (
            "assistant",
            "tool_call",
            "bash",
            "Run the parser tests",
            "python -m pytest tests/test_parser.py",
            None,
            None,
            False,
            None,
        ),
        (
            "tool",
            "tool_result",
            "bash",
            "FAILED tests/test_parser.py::test_iso_week - ValueError:"
            " week 53 out of range\n1 failed, 3 passed in 0.12s",
            "python -m pytest tests/test_parser.py",
            1,
            True,
            False,
            None,
        ),
        ("assistant", "tool_call", "edit", "edit parser.py", None, None, None, False, None),
        ("tool", "tool_result", "edit", None, None, None, False, False, None),
        (
            "assistant",
            "tool_call",
            "bash",
            "Run the parser tests",
            "python -m pytest tests/test_parser.py",
            None,
            None,
            False,
            None,
        ),
        (
            "tool",
            "tool_result",
            "bash",
            "4 passed in 0.10s",
            "python -m pytest tests/test_parser.py",
            0,
            False,
            False,
            None,
        ),
        (
            "assistant",
            "message",
            None,
            "Fixed: ISO weeks now go through `date.fromisocalendar`.",
            None,
            None,
            None,
            False,
            None,
        ),
        # the subagent session's call counts for the session that started it (its prompt not)
        ("assistant", "tool_call", "grep", "parse_week", None, None, None, False, None),
        ("tool", "tool_result", "grep", "parser.py:12", None, None, False, False, None),
        (
            "user",
            "message",
            None,
            "Add the lodash dependency to the dashboard",
            None,
            None,
            None,
            False,
            None,
        ),
        # a denied permission: a rejected failure, and what the user said with it
        (
            "assistant",
            "tool_call",
            "bash",
            "Install lodash",
            "npm install lodash",
            None,
            None,
            False,
            None,
        ),
        (
            "tool",
            "tool_result",
            "bash",
            "The user rejected permission to use this specific tool"
            " call with the following feedback: no, use pnpm add lodash instead",
            "npm install lodash",
            None,
            True,
            True,
            None,
        ),
        (
            "user",
            "message",
            None,
            "no, use pnpm add lodash instead",
            None,
            None,
            None,
            False,
            "rejection",
        ),
        (
            "assistant",
            "tool_call",
            "bash",
            "Install lodash with pnpm",
            "pnpm add lodash",
            None,
            None,
            False,
            None,
        ),
        (
            "tool",
            "tool_result",
            "bash",
            "+ lodash 4.17.21\nDone in 1.2s",
            "pnpm add lodash",
            0,
            False,
            False,
            None,
        ),
        ("user", "message", None, "Refactor the whole date module", None, None, None, False, None),
        # the user stops the turn: the tool fails, the message is aborted (the unended text
        # part is dropped)
        ("assistant", "tool_call", "read", None, None, None, None, False, None),
        ("tool", "tool_result", "read", "Tool execution aborted", None, None, True, False, None),
        (
            "system",
            "message",
            None,
            "the user interrupted the assistant",
            None,
            None,
            None,
            False,
            None,
        ),
        # the compaction's summary message
        (
            "system",
            "message",
            None,
            "Summary: the ISO week parsing was fixed with"
            " date.fromisocalendar; lodash is added with pnpm, never npm.",
            None,
            None,
            None,
            False,
            "compaction",
        ),
        ("user", "message", None, "Write the release notes", None, None, None, False, None),
        (
            "system",
            "message",
            None,
            "the assistant failed: APIError: Rate limit exceeded",
            None,
            None,
            None,
            False,
            None,
        ),
    ]
    c = [e for p, e in zip(parsed, events_of(parsed), strict=True) if p.session_id == SES_C]
    assert [e[:6] for e in c] == [  # the running `pnpm dev` is not handed on
        ("user", "message", None, "Rename the Cart component to Basket", None, None),
        ("assistant", "tool_call", "bash", "Run the tests", "pnpm test", None),
        ("tool", "tool_result", "bash", "Tests  12 passed (12)", "pnpm test", 0),
    ]
    # each session with its own project; the database's sessions stay open (live)
    assert {p.session_id: p.cwd for p in parsed} == {
        SES_A: str(home["A1"]),
        SES_C: str(home["C1"]),
    }
    assert state.session_id is None and set(state.live) == {SES_A, SES_C}
    assert state.counts == {
        "tool_calls": 8,
        "tool:bash": 5,
        "tool:edit": 1,
        "tool:grep": 1,
        "tool:read": 1,
        "errors": 3,
        "rejections": 1,
        "interrupts": 1,
        "tool_interrupts": 1,
        "compactions": 1,
        "compact_summaries": 1,
        "message_errors": 1,
        "retries": 1,
        "subtasks": 1,
        "skipped": 1,  # the part type no build wrote
    }
    edit = next(p.event for p in parsed if p.event.tool_name == "edit")
    assert edit.file == str(home["A1"] / "parser.py")
    assert edit.raw_snippet == "    return date.fromisocalendar(year, week, day)"


def test_the_legacy_json_tree(home: dict[str, Path]) -> None:
    parsed, state, position = read_all(home["legacy"])
    assert [e[:6] for e in events_of(parsed)] == [
        ("user", "message", None, "Why does make lint fail?", None, None),
        ("assistant", "tool_call", "bash", "Run the linter", "make lint", None),
        (
            "tool",
            "tool_result",
            "bash",
            "src/app.py:3:1: F401 'os' imported but unused\nmake: *** [lint] Error 1",
            "make lint",
            2,
        ),
        ("assistant", "message", None, "The linter fails on an unused import.", None, None),
    ]
    assert state.session_id == SES_L and state.cwd == str(home["L1"])
    assert position == 5  # two messages, three parts
    assert read_all(home["legacy"], state, position)[0] == []


# -- cursors over a database that changes in place ---------------------------------------------


def test_rows_are_read_once_as_they_become_final(home: dict[str, Path], tmp_path: Path) -> None:
    whole = events_of(read_all(home["db"])[0])
    places = {k: home[k] for k in ("A1", "C1", "L1")}
    db = tmp_path / "grown" / "opencode.db"
    # the first turn only, its bash parts still running: nothing of them yet
    first = {"msg_a01", "prt_a01a", "prt_a01b", "prt_a01c", "msg_a02", "prt_a02a", "prt_a02b"}
    rows = opencode_db(db, places, only=first)
    running = {"prt_a02c", "prt_a02e"}
    conn = sqlite3.connect(db)
    with conn:
        for p in rows["parts"]:
            if p["id"] in running:
                d = dict(p["data"])
                d["state"] = {**d["state"], "status": "running"}
                d["state"].pop("output")
                t = rows["base_ms"] + (p["t"] - 5) * 1000
                conn.execute(
                    "INSERT INTO part VALUES (?, ?, ?, ?, ?, ?)",
                    (p["id"], p["message_id"], p["session_id"], t, t, json.dumps(d)),
                )
    conn.close()
    got, state, pos = read_all(db)
    assert [e[2] for e in events_of(got) if e[1] != "message"] == []
    # restart from the stored state: the rest of the rows (their final states among them)
    state = ParseState.from_json(state.to_json())
    opencode_db(db, places, shift_ms=60_000)  # the rest written a minute later
    more, state, pos = read_all(db, state, pos)
    assert sorted(map(repr, events_of(got + more))) == sorted(map(repr, whole))
    # nothing new; a part updated again later (its output compacted) is not handed on again
    assert read_all(db, state, pos)[0] == []
    conn = sqlite3.connect(db)
    with conn:
        later = rows["base_ms"] + 3_600_000
        data = json.loads(conn.execute("SELECT data FROM part WHERE id = 'prt_a02c'").fetchone()[0])
        data["state"]["time"]["compacted"] = later
        conn.execute(
            "UPDATE part SET data = ?, time_updated = ? WHERE id = 'prt_a02c'",
            (json.dumps(data), later),
        )
    conn.close()
    again, state, pos = read_all(db, state, pos)
    assert again == [] and pos >> 20 == rows["base_ms"] + 3_600_000


def _text_db(path: Path) -> sqlite3.Connection:
    """An empty opencode database (WAL, opencode's tables) with one session and its assistant
    message; the connection stays open (its commits in the `-wal`)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    conn.executescript(
        "CREATE TABLE session (id TEXT PRIMARY KEY, parent_id TEXT, directory TEXT);"
        "CREATE TABLE message (id TEXT PRIMARY KEY, session_id TEXT, time_created INT,"
        " time_updated INT, data TEXT);"
        "CREATE TABLE part (id TEXT PRIMARY KEY, message_id TEXT, session_id TEXT,"
        " time_created INT, time_updated INT, data TEXT);"
    )
    conn.execute("INSERT INTO session VALUES ('s1', NULL, ?)", (str(path.parent),))
    conn.execute(
        "INSERT INTO message VALUES ('m0', 's1', 1, 1, ?)", (json.dumps({"role": "assistant"}),)
    )
    return conn


def _put_text(conn: sqlite3.Connection, pid: str, t: int, text: str, final: bool = True) -> None:
    times = {"start": t, "end": t} if final else {"start": t}
    data = json.dumps({"type": "text", "text": text, "time": times})
    conn.execute(
        "INSERT INTO part VALUES (?, 'm0', 's1', ?, ?, ?) ON CONFLICT(id) DO UPDATE"
        " SET time_updated = excluded.time_updated, data = excluded.data",
        (pid, t, t, data),
    )


def _texts(parsed: list[Parsed]) -> list[str | None]:
    return [p.event.text for p in parsed]


def test_a_row_read_and_updated_again_skips_no_other_row(tmp_path: Path) -> None:
    """A row read at time t and updated again (streamed text ending) moves to a later time;
    the rows read after it at t stay read and none is skipped in its place (the watermark was
    an OFFSET over the rows updated from t on)."""
    db = tmp_path / "opencode.db"
    conn = _text_db(db)
    t = int(time.time() * 1000) - 60_000
    _put_text(conn, "p1", t, "partial", final=False)
    got, state, pos = read_all(db)
    assert got == []
    _put_text(conn, "p1", t + 5000, "FINAL ANSWER: use httpx")  # the part ends
    more, state, pos = read_all(db, ParseState.from_json(state.to_json()), pos)
    assert _texts(more) == ["FINAL ANSWER: use httpx"]
    _put_text(conn, "p2", t + 9000, "next thing")
    more, state, pos = read_all(db, state, pos)
    assert _texts(more) == ["next thing"]
    assert read_all(db, state, pos)[0] == []

    # a batch that ended among the rows of one time (the ingester stops after so many
    # events): the rows of that time are read again, those up to the last one read passed over
    same = t + 20_000
    for i in range(1, 6):
        _put_text(conn, f"r{i}", same, f"r{i}", final=i != 1)
    seen_before = list(state.extra.get("seen", []))
    recs = list(ADAPTER.records(str(db), pos, 1 << 20))[:2]  # r1 (streaming) and r2 read
    first = [p for r in recs for p in ADAPTER.parse(cast(Any, r.data), state)]
    assert _texts(first) == ["r2"]
    state = ParseState.from_json(state.to_json())
    _put_text(conn, "r1", same + 3000, "r1 ended")  # r1 moves on
    rest, state, _ = read_all(db, state, recs[-1].end)
    assert _texts(rest) == ["r3", "r4", "r5", "r1 ended"]
    assert len(state.extra["seen"]) == len(seen_before) + 5
    conn.close()


def test_a_time_with_more_rows_than_a_batch_is_read_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from reos_memory.squirrel.ingest import opencode

    monkeypatch.setattr(opencode, "_BATCH_ROWS", 3)
    db = tmp_path / "opencode.db"
    conn = _text_db(db)
    t = int(time.time() * 1000) - 60_000
    for i in range(5):
        _put_text(conn, f"p{i}", t, f"at t {i}")
    _put_text(conn, "p5", t + 1, "after")
    _put_text(conn, "p6", t + 2, "later")
    recs = list(ADAPTER.records(str(db), 0, 1 << 20))
    ends = [r.end for r in recs]
    assert [r.data["id"] for r in recs if r.data] == ["m0", "p0", "p1", "p2", "p3", "p4"]
    assert ends == sorted(ends) and ends[-1] == (t << 20) | ((1 << 20) - 1)
    got, _, _ = read_all(db)
    assert _texts(got) == [f"at t {i}" for i in range(5)] + ["after", "later"]
    conn.close()


def test_reading_leaves_nothing_beside_the_database_and_reads_its_wal(tmp_path: Path) -> None:
    """opencode's database is in WAL mode: read while opencode is closed (no `-wal`) it is
    opened immutable, so no `-wal`/`-shm` appears beside it; while opencode has it open, the
    commits still in its `-wal` are read."""
    db = tmp_path / "opencode.db"
    conn = _text_db(db)
    t = int(time.time() * 1000) - 60_000
    _put_text(conn, "p1", t, "checkpointed")
    conn.close()  # the last connection: the -wal checkpointed and removed
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]
    got, state, pos = read_all(db)
    assert _texts(got) == ["checkpointed"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]
    # opencode running: its commit only in the -wal
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    _put_text(conn, "p2", t + 1000, "only in the wal")
    assert (tmp_path / "opencode.db-wal").stat().st_size > 0
    assert _texts(read_all(db, state, pos)[0]) == ["only in the wal"]
    conn.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["opencode.db"]


def test_rows_being_written_and_a_locked_database_wait(home: dict[str, Path]) -> None:
    # a row written this instant may belong to a transaction still open: read next time
    _, state, pos = read_all(home["db"])
    now = int(time.time() * 1000)
    conn = sqlite3.connect(home["db"])
    with conn:
        conn.execute(
            "INSERT INTO message VALUES ('msg_z01', ?, ?, ?, ?)",
            (SES_C, now, now, json.dumps({"role": "user", "time": {"created": now}})),
        )
        conn.execute(
            "INSERT INTO part VALUES ('prt_z01a', 'msg_z01', ?, ?, ?, ?)",
            (SES_C, now, now, json.dumps({"type": "text", "text": "and the basket icon"})),
        )
    conn.close()
    assert read_all(home["db"], state, pos)[0] == []
    time.sleep(1.6)
    # a writer's exclusive lock (a database out of WAL mode): nothing now, never an error
    lock = sqlite3.connect(home["db"], isolation_level=None)
    lock.execute("PRAGMA journal_mode = DELETE")
    lock.execute("BEGIN EXCLUSIVE")
    lock.execute("UPDATE session SET title = title")
    try:
        assert list(ADAPTER.records(str(home["db"]), pos, 1 << 20)) == []
    finally:
        lock.execute("COMMIT")
        lock.close()
    got, _, _ = read_all(home["db"], state, pos)
    assert events_of(got)[0][3] == "and the basket icon"


def test_ingested_once_appended_to_and_each_session_its_project(
    app: Any, home: dict[str, Path], tmp_path: Path
) -> None:
    sq = app.squirrel
    places = {k: home[k] for k in ("A1", "C1", "L1")}
    db = tmp_path / "data" / "opencode" / "opencode.db"
    opencode_db(db, places, skip={"msg_a09", "prt_a09a", "msg_a10"})
    rep = tin.ingest_file(sq.ingest_deps, str(db), tin.Options(session_end=False))
    assert rep.agent == "opencode" and rep.malformed == 0 and rep.skipped_reason is None
    assert rep.events == 26 - 2  # the turn left out has two events
    assert tin.ingest_file(sq.ingest_deps, str(db), tin.Options(session_end=False)).lines == 0
    # opencode answers the next prompt (written an hour later)
    opencode_db(db, places, only={"msg_a09", "prt_a09a", "msg_a10"}, shift_ms=3_600_000)
    more = tin.ingest_file(sq.ingest_deps, str(db), tin.Options(session_end=True))
    assert more.events == 2 and not more.rewritten
    assert more.counts["message_errors"] == 1
    sessions = {
        s["session_id"]: s["project_id"]
        for s in app.db.read(
            lambda c: [
                {"session_id": r[0], "project_id": r[1]}
                for r in c.execute("SELECT session_id, project_id FROM squirrel_sessions")
            ]
        )
    }
    assert set(sessions) == {SES_A, SES_C}
    assert sessions[SES_A].startswith("a1-") and sessions[SES_C].startswith("c1-")
    # the session end came from the caller: both sessions of the database ended
    eps = sq.list_episodes(api.EpisodeListParams(project_id=sessions[SES_A], limit=20)).episodes
    assert eps and any(e.outcome for e in eps)


# -- which files are opencode's ----------------------------------------------------------------


@needs_formats
def test_detect_names_opencode_only_for_its_logs(home: dict[str, Path]) -> None:
    assert tin.detect(str(home["db"])) == "opencode"
    assert tin.detect(str(home["legacy"])) == "opencode"
    storage = home["legacy"].parents[2]
    for other in [
        *(FORMATS / "claude-code").rglob("*.jsonl"),
        *(FORMATS / "codex").rglob("*.jsonl"),
        FORMATS / "cursor" / "cursor-history" / "state.vscdb",
        *storage.glob("message/*/*.json"),
        *storage.glob("part/*/*.json"),
        *storage.glob("project/*.json"),
    ]:
        assert tin.detect(str(other)) != "opencode", other


def test_roots_on_each_os_and_find_in_a_fake_home(home: dict[str, Path]) -> None:
    oc = OpenCode()
    linux = oc.roots(Place("linux", "/home/u", {}))
    assert linux == [
        "/home/u/.local/share/opencode/opencode.db",
        "/home/u/.local/share/opencode/storage/session",
    ]
    assert oc.roots(Place("darwin", "/Users/u", {}))[0] == (
        "/Users/u/.local/share/opencode/opencode.db"
    )
    win = oc.roots(Place("win32", "C:\\Users\\u", {"APPDATA": "C:\\Users\\u\\AppData\\Roaming"}))
    assert win[0].replace("\\", "/") == "C:/Users/u/.local/share/opencode/opencode.db"
    xdg = oc.roots(Place("linux", "/home/u", {"XDG_DATA_HOME": "/data", "OPENCODE_DB": "/x.db"}))
    assert xdg == ["/x.db", "/data/opencode/opencode.db", "/data/opencode/storage/session"]
    # the database, its WAL files, auth.json and logs beside it: only the database and the
    # legacy session file are logs
    data = home["db"].parent
    (data / "auth.json").write_text("{}")
    (data / "log").mkdir()
    (data / "log" / "2026-01-01.log").write_text("x")
    (data / "opencode.db-wal").write_bytes(b"")
    found = tin.find([str(home["home"])])
    assert sorted(found) == sorted([str(home["db"]), str(home["legacy"])])
    place = Place("linux", str(home["home"]), {})
    assert str(home["db"]) in tin.default_roots(place)


# -- end to end: the database in a fake home, sqrl, JSON-RPC, MCP ------------------------------


@pytest.mark.e2e
def test_sqrl_ingest_rpc_and_mcp_learn_from_opencode(home: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "data" / "memory.db"
    env = agent_env(home["home"], db)
    out = sqrl(env, "ingest", str(home["db"]), "--end", "--json")
    assert out.returncode == 0, out.stderr
    (rep,) = json.loads(out.stdout)
    assert rep["agent"] == "opencode" and rep["malformed"] == 0 and rep["events"] == 26
    assert rep["episodes"] and "Traceback" not in out.stderr

    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        # the legacy session through squirrel/ingest_transcript, agent named
        got = srv.call(
            "squirrel/ingest_transcript",
            {"path": str(home["legacy"]), "agent": "opencode", "session_end": True},
        )
        assert got["agent"] == "opencode" and got["events"] == 4 and got["session_ended"]
        again = srv.call("squirrel/ingest_transcript", {"path": str(home["db"])})
        assert again["lines"] == 0 and again["events"] == 0
        ctx = srv.call(
            "squirrel/get_task_context",
            {"project_root": str(home["A1"]), "task": "install the dayjs package"},
        )
        assert "pnpm" in ctx["context_prompt"], ctx["context_prompt"]
        status = srv.call("squirrel/status")
        assert status["transcripts"]["opencode"]["files"] == 2

    data = _mcp_context(env, home["A1"], "install the dayjs package")
    assert "pnpm" in data["context_prompt"]
    other = _mcp_context(env, home["C1"], "install the dayjs package")
    assert "lodash" not in other["context_prompt"]


def test_a_scripted_session_added_to_the_database(home: dict[str, Path]) -> None:
    """harness.agent_logs.opencode: a session added to the database that is there (the one of
    the fixture), its rows final, and with `age` old enough to be read and idle."""
    from datetime import UTC, datetime, timedelta

    from harness import agent_logs

    start = datetime.now(UTC) - timedelta(minutes=5)  # rows this new are moved back by `age`
    s = agent_logs.session("opencode", home["A1"], start)
    s.user("Fetch the rates").run("python rates.py", "SSLError", 1)
    s.edit("rates.py", "import requests", "import httpx").run("python rates.py", "0.92")
    s.say("Switched to httpx.")
    assert s.write(home["home"], timedelta(hours=1)) == home["db"]
    before, _, _ = read_all(home["db"])
    with sqlite3.connect(home["db"]) as conn:
        newest = conn.execute("SELECT max(time_updated) FROM part").fetchone()[0]
        assert conn.execute("SELECT count(*) FROM session").fetchone()[0] == 4
    conn.close()
    assert newest <= (time.time() - 3600) * 1000
    parsed = [p for p in before if p.session_id == cast(Any, s).id]
    assert {p.cwd for p in parsed} == {str(home["A1"])}
    got = [(e[0], e[2], e[3], e[4], e[5], e[6]) for e in events_of(parsed)]
    assert got == [
        ("user", None, "Fetch the rates", None, None, None),
        ("assistant", "bash", "Run python rates.py", "python rates.py", None, None),
        ("tool", "bash", "SSLError", "python rates.py", 1, True),
        ("assistant", "edit", "edit rates.py", None, None, None),
        ("tool", "edit", None, None, None, False),
        ("assistant", "bash", "Run python rates.py", "python rates.py", None, None),
        ("tool", "bash", "0.92", "python rates.py", 0, False),
        ("assistant", None, "Switched to httpx.", None, None, None),
    ]
