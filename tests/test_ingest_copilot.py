"""VS Code Copilot Chat: the chat session store's mutation log, older `.json` sessions and the
Copilot extension's hook transcript read through the adapter, cursors over a log rewritten
whole, and the e2e path to a memory (fixtures built from the types in
../shared/formats/vscode-copilot-chat/NOTES.md; no real sample exists)."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.commands import agent_env, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import Parsed, ParseState, Place
from reos_memory.squirrel.ingest.copilot import ADAPTER, Copilot, _apply
from tests.agent_fixtures import (
    COPILOT_HOOK_SESSION,
    COPILOT_OLD_SESSION,
    COPILOT_SESSION,
    copilot_workspace,
    events_of,
    open_app,
)
from tests.test_agents_e2e import _mcp_context

ROOT = Path(__file__).resolve().parents[1]
FORMATS = ROOT.parent / "shared" / "formats"

needs_formats = pytest.mark.skipif(
    not FORMATS.is_dir(), reason="../shared/formats (the real session logs) is not beside the repo"
)


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    yield from open_app(tmp_path)


@pytest.fixture
def ws(tmp_path: Path) -> dict[str, Path]:
    """A fake home with VS Code's workspace storage of one project."""
    project = tmp_path / "work" / "dates"
    (project / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    user = home / ".config" / "Code" / "User"
    w = copilot_workspace(user, project)
    return {
        "home": home,
        "project": project,
        "ws": w,
        "log": w / "chatSessions" / f"{COPILOT_SESSION}.jsonl",
        "old": w / "chatSessions" / f"{COPILOT_OLD_SESSION}.json",
        "hook": w / "GitHub.copilot-chat" / "transcripts" / f"{COPILOT_HOOK_SESSION}.jsonl",
    }


def read_all(
    path: Path, state: ParseState | None = None, position: int = 0, finish: bool = True
) -> tuple[list[Parsed], ParseState, int]:
    state = state or ParseState()
    if position == 0 and not state.extra:
        ADAPTER.begin(str(path), state)
    out: list[Parsed] = []
    while True:
        recs = list(ADAPTER.records(str(path), position, 1 << 20))
        if not recs:
            break
        for r in recs:
            assert r.data is not None and not r.malformed
            out += ADAPTER.parse(r.data, state)
        position = recs[-1].end
    if finish:
        out += ADAPTER.finish(state)
    return out, state, position


PYTEST = "python -m pytest tests/test_parser.py"
CHAT_EVENTS = [
    # request 0: the request, the test fails (exit code from terminalCommandState), the edit,
    # the test passes; streamed Markdown joined, thinking left out
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
    ("assistant", "message", None, "Let me run the tests first.", None, None, None, False, None),
    (
        "assistant",
        "tool_call",
        "run_in_terminal",
        f"Ran `{PYTEST}`",
        PYTEST,
        None,
        None,
        False,
        None,
    ),
    (
        "tool",
        "tool_result",
        "run_in_terminal",
        "FAILED tests/test_parser.py::test_iso_week -"
        " ValueError: week 53 out of range\n1 failed, 3 passed in 0.12s",
        PYTEST,
        1,
        True,
        False,
        None,
    ),
    (
        "assistant",
        "tool_call",
        "copilot_replaceString",
        "Edited [](file:///PROJECT/parser.py)",
        None,
        None,
        None,
        False,
        None,
    ),
    (
        "tool",
        "tool_result",
        "copilot_replaceString",
        "Edited [](file:///PROJECT/parser.py)",
        None,
        None,
        False,
        False,
        None,
    ),
    ("assistant", "tool_call", "edit", "edit parser.py", None, None, None, False, None),
    (
        "assistant",
        "tool_call",
        "run_in_terminal",
        f"Ran `{PYTEST}`",
        PYTEST,
        None,
        None,
        False,
        None,
    ),
    ("tool", "tool_result", "run_in_terminal", "4 passed in 0.10s", PYTEST, 0, False, False, None),
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
    # request 1: the user denies the command ({type: 0}); request 2 says what to do instead
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
    (
        "assistant",
        "tool_call",
        "run_in_terminal",
        "Running `npm install lodash`",
        "npm install lodash",
        None,
        None,
        False,
        None,
    ),
    (
        "tool",
        "tool_result",
        "run_in_terminal",
        "the user denied this tool call",
        "npm install lodash",
        None,
        True,
        True,
        None,
    ),
    ("user", "message", None, "no, use pnpm add lodash instead", None, None, None, False, None),
    (
        "assistant",
        "tool_call",
        "run_in_terminal",
        "Ran `pnpm add lodash`",
        "pnpm add lodash",
        None,
        None,
        False,
        None,
    ),
    (
        "tool",
        "tool_result",
        "run_in_terminal",
        "+ lodash 4.17.21\nDone in 1.2s",
        "pnpm add lodash",
        0,
        False,
        False,
        None,
    ),
    (
        "system",
        "message",
        None,
        "warning: The terminal output was truncated.",
        None,
        None,
        None,
        False,
        None,
    ),
    # request 3: cancelled (modelState 2) is the user interrupting
    ("user", "message", None, "Also update the changelog", None, None, None, False, None),
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
    # request 4: sent again after an edit (the push cut at 4), then failed (modelState 3)
    (
        "user",
        "message",
        None,
        "Summarise the changes for the release notes",
        None,
        None,
        None,
        False,
        None,
    ),
    (
        "system",
        "message",
        None,
        "the request failed: Sorry, you have exhausted this model's rate limit.",
        None,
        None,
        None,
        False,
        None,
    ),
    # request 5: still running when the log ends, read at the session's end
    ("user", "message", None, "What is left to do?", None, None, None, False, None),
    ("assistant", "message", None, "The changelog entry.", None, None, None, False, None),
]


def test_every_kind_of_the_chat_session_log(ws: dict[str, Path]) -> None:
    parsed, state, _ = read_all(ws["log"], finish=False)
    held = ADAPTER.finish(state)
    assert events_of(parsed) + events_of(held) == CHAT_EVENTS
    assert len(held) == 2  # the open request waits for the session's end
    assert {p.session_id for p in parsed} == {COPILOT_SESSION}
    assert state.cwd == str(ws["project"])  # workspace.json's folder
    assert state.counts == {
        "requests": 6,
        "tool_calls": 6,
        "tool:run_in_terminal": 4,
        "tool:copilot_replaceString": 1,
        "tool:edit": 1,
        "errors": 2,
        "rejections": 1,
        "warnings": 1,
        "interrupts": 1,
        "request_errors": 1,
        "skipped": 2,  # a response part kind and a log entry kind no build wrote
    }
    edit = next(p.event for p in parsed if p.event.tool_name == "edit")
    assert edit.file == "/PROJECT/parser.py"
    assert edit.raw_snippet == "    return date.fromisocalendar(year, week, day)"
    # the state kept between batches stays small: read requests are ids, not content
    assert len(state.to_json()) < 2000


def test_the_older_json_document(ws: dict[str, Path]) -> None:
    parsed, state, position = read_all(ws["old"])
    assert [e[:8] for e in events_of(parsed)] == [
        ("user", "message", None, "Why does make lint fail?", None, None, None, False),
        ("assistant", "message", None, "Running the linter.", None, None, None, False),
        (
            "assistant",
            "tool_call",
            "run_in_terminal",
            "Running `make lint`",
            "make lint",
            None,
            None,
            False,
        ),
        # resultDetails.isError, its text output
        (
            "tool",
            "tool_result",
            "run_in_terminal",
            "src/app.py:3:1: F401 'os' imported but unused",
            "make lint",
            None,
            True,
            False,
        ),
        (
            "system",
            "message",
            None,
            "the user rated the response unhelpful (incorrectCode)",
            None,
            None,
            None,
            False,
        ),
        ("user", "message", None, "stop", None, None, None, False),
        ("assistant", "message", None, "Stopping", None, None, None, False),
        (
            "system",
            "message",
            None,
            "the user interrupted the assistant",
            None,
            None,
            None,
            False,
        ),  # isCanceled
        ("user", "message", None, "Remove the unused import then", None, None, None, False),
        (
            "assistant",
            "tool_call",
            "run_in_terminal",
            "Running `sed -i /import os/d src/app.py`",
            "sed -i /import os/d src/app.py",
            None,
            None,
            False,
        ),
        (
            "tool",
            "tool_result",
            "run_in_terminal",
            "the user denied this tool call",
            "sed -i /import os/d src/app.py",
            None,
            True,
            True,
        ),  # isConfirmed: false
    ]
    assert position == 3 and state.session_id == COPILOT_OLD_SESSION
    # saved again with one more request: only that one is read
    doc = json.loads(ws["old"].read_text())
    doc["requests"].append(
        {
            "requestId": "request_old_3",
            "message": {"text": "thanks", "parts": []},
            "response": [],
            "result": {},
        }
    )
    ws["old"].write_text(json.dumps(doc))
    more, _, position = read_all(ws["old"], state, position)
    assert [e[3] for e in events_of(more)] == ["thanks"] and position == 4


def test_the_hook_transcript_unless_its_session_store_is_beside_it(ws: dict[str, Path]) -> None:
    parsed, state, _ = read_all(ws["hook"])
    assert [e[:7] for e in events_of(parsed)] == [
        ("user", "message", None, "Make the CSV export include a header row", None, None, None),
        ("assistant", "message", None, "I'll run the export tests.", None, None, None),
        (
            "assistant",
            "tool_call",
            "run_in_terminal",
            "Run the export tests",
            "npm test -- export",
            None,
            None,
        ),
        (
            "tool",
            "tool_result",
            "run_in_terminal",
            "Tests: 1 failed, 5 passed",
            None,
            None,
            True,
        ),  # success: false (no exit code in this file)
        ("assistant", "tool_call", "copilot_replaceString", None, None, None, None),
        ("tool", "tool_result", "copilot_replaceString", "The file was edited.", None, None, False),
        ("assistant", "message", None, "Added the header row.", None, None, None),
    ]
    assert {p.session_id for p in parsed} == {COPILOT_HOOK_SESSION}
    assert state.cwd == str(ws["project"]) and state.counts["skipped"] == 1
    # the same session's chat store beside it: read from there (it has the exit codes)
    store = ws["ws"] / "chatSessions" / f"{COPILOT_HOOK_SESSION}.jsonl"
    store.write_text("")
    parsed, state, _ = read_all(ws["hook"])
    assert parsed == [] and state.counts["read_from_store"] == 13


# -- cursors: line by line, restarts, a log rewritten from a fresh `kind` 0 line ---------------


def _replayed(lines: list[bytes]) -> dict[str, Any]:
    """The whole session after these log lines, as VS Code would write it afresh."""
    doc: dict[str, Any] = {}
    for line in lines:
        e = json.loads(line)
        if e["kind"] == 0:
            doc = copy.deepcopy(e["v"])
        elif e["kind"] in (1, 2, 3) and e["k"]:
            _apply(doc, e["k"], e["kind"], e.get("v"), e.get("i"))
    return doc


def test_written_line_by_line_restarted_and_rewritten(ws: dict[str, Path]) -> None:
    lines = ws["log"].read_bytes().splitlines(keepends=True)
    log = ws["log"]
    got: list[Parsed] = []
    state, pos = ParseState(), 0
    ADAPTER.begin(str(log), state)
    for i in range(len(lines)):
        # the next line only half written: not consumed until it is whole
        log.write_bytes(b"".join(lines[:i]) + lines[i][: len(lines[i]) // 2])
        more, state, pos = read_all(log, state, pos, finish=False)
        got += more
        state = ParseState.from_json(state.to_json())  # a restart from the stored cursor
    log.write_bytes(b"".join(lines))
    more, state, pos = read_all(log, state, pos, finish=False)
    got += more
    assert events_of(got + ADAPTER.finish(state)) == CHAT_EVENTS

    # VS Code rewrites the log from the whole session once it is long, then goes on
    state, pos = ParseState(), 0
    log.write_bytes(b"".join(lines[:20]))
    first, state, pos = read_all(log, state, pos, finish=False)
    doc = _replayed(lines[:24])
    rewritten = json.dumps({"kind": 0, "v": doc}).encode() + b"\n" + b"".join(lines[24:])
    log.write_bytes(rewritten)
    assert len(rewritten) < pos or rewritten[pos - 1 : pos] != b"\n"
    rest, state, pos = read_all(log, state, pos)
    assert events_of(first + rest) == CHAT_EVENTS


def test_ingested_once_and_appended_to(app: Any, ws: dict[str, Path]) -> None:
    sq = app.squirrel
    lines = ws["log"].read_bytes().splitlines(keepends=True)
    ws["log"].write_bytes(b"".join(lines[:14]))
    rep = tin.ingest_file(sq.ingest_deps, str(ws["log"]), tin.Options(session_end=False))
    assert rep.agent == "copilot" and rep.malformed == 0 and rep.events == 10
    assert (
        tin.ingest_file(sq.ingest_deps, str(ws["log"]), tin.Options(session_end=False)).lines == 0
    )
    ws["log"].write_bytes(b"".join(lines))
    rep = tin.ingest_file(sq.ingest_deps, str(ws["log"]), tin.Options(session_end=True))
    assert rep.events == len(CHAT_EVENTS) - 10 and not rep.rewritten and rep.ended
    assert rep.project_id is not None and rep.project_id.startswith("dates-")
    old = tin.ingest_file(sq.ingest_deps, str(ws["old"]), tin.Options(session_end=True))
    assert old.events == 11 and old.lines == 3 and old.project_id == rep.project_id


# -- which files are Copilot's -----------------------------------------------------------------


@needs_formats
def test_detect_names_copilot_only_for_its_logs(ws: dict[str, Path]) -> None:
    for p in ("log", "old", "hook"):
        assert tin.detect(str(ws[p])) == "copilot", p
    assert tin.detect(str(ws["ws"] / "workspace.json")) is None
    for other in [
        *(FORMATS / "claude-code").rglob("*.jsonl"),
        *(FORMATS / "codex").rglob("*.jsonl"),
        FORMATS / "cursor" / "cursor-history" / "state.vscdb",
    ]:
        assert tin.detect(str(other)) != "copilot", other
    # claude-code and codex sniff first: neither takes a Copilot log
    for name in ("claude-code", "codex"):
        for p in ("log", "hook"):
            first = json.loads(ws[p].read_text().splitlines()[0])
            assert not tin.ADAPTERS[name].sniff(first), (name, p)


def test_roots_on_each_os_and_find_in_a_fake_home(ws: dict[str, Path]) -> None:
    c = Copilot()
    assert c.roots(Place("linux", "/home/u", {})) == [
        "/home/u/.config/Code/User/workspaceStorage",
        "/home/u/.config/Code - Insiders/User/workspaceStorage",
    ]
    assert c.roots(Place("linux", "/home/u", {"XDG_CONFIG_HOME": "/cfg"}))[0] == (
        "/cfg/Code/User/workspaceStorage"
    )
    assert c.roots(Place("darwin", "/Users/u", {}))[0] == (
        "/Users/u/Library/Application Support/Code/User/workspaceStorage"
    )
    win = c.roots(Place("win32", "C:\\Users\\u", {"APPDATA": "C:\\Users\\u\\AppData\\Roaming"}))
    assert [r.replace("\\", "/") for r in win] == [
        "C:/Users/u/AppData/Roaming/Code/User/workspaceStorage",
        "C:/Users/u/AppData/Roaming/Code - Insiders/User/workspaceStorage",
    ]
    # beside the logs: the workspace's state.vscdb, another extension's files
    (ws["ws"] / "state.vscdb").write_bytes(b"SQLite format 3\x00")
    (ws["ws"] / "ms-python.python").mkdir()
    (ws["ws"] / "ms-python.python" / "cache.json").write_text("{}")
    found = tin.find([str(ws["home"])])
    assert sorted(found) == sorted(str(ws[p]) for p in ("log", "old", "hook"))
    place = Place("linux", str(ws["home"]), {})
    assert str(ws["ws"].parent) in tin.default_roots(place)


# -- end to end: the workspace storage in a fake home, sqrl, JSON-RPC, MCP ---------------------


@pytest.mark.e2e
def test_sqrl_ingest_rpc_and_mcp_learn_from_copilot(ws: dict[str, Path], tmp_path: Path) -> None:
    db = tmp_path / "data" / "memory.db"
    env = agent_env(ws["home"], db)
    out = sqrl(env, "ingest", str(ws["log"]), str(ws["old"]), "--end", "--json")
    assert out.returncode == 0, out.stderr
    reps = {Path(r["path"]).name: r for r in json.loads(out.stdout)}
    rep = reps[ws["log"].name]
    assert rep["agent"] == "copilot" and rep["malformed"] == 0
    # (the request still open is stored as the session ends, after the file's report)
    assert rep["events"] == len(CHAT_EVENTS) - 2 and rep["session_ended"] and rep["episodes"]

    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        got = srv.call(
            "squirrel/ingest_transcript",
            {"path": str(ws["hook"]), "agent": "copilot", "session_end": True},
        )
        assert got["agent"] == "copilot" and got["events"] == 7 and got["session_ended"]
        again = srv.call("squirrel/ingest_transcript", {"path": str(ws["log"])})
        assert again["lines"] == 0 and again["events"] == 0
        ctx = srv.call(
            "squirrel/get_task_context",
            {"project_root": str(ws["project"]), "task": "install the dayjs package"},
        )
        assert "pnpm" in ctx["context_prompt"], ctx["context_prompt"]
        assert srv.call("squirrel/status")["transcripts"]["copilot"]["files"] == 3

    data = _mcp_context(env, ws["project"], "install the dayjs package")
    assert "pnpm" in data["context_prompt"]


def test_a_scripted_session_written_as_vscode_writes_it(tmp_path: Path) -> None:
    """harness.agent_logs.copilot: prompts pushed, a command pushed running then set completed,
    an edit with its textEditGroup, the request sealed at the next prompt and at the end."""
    from datetime import UTC, datetime, timedelta

    from harness import agent_logs

    project, home = tmp_path / "work" / "rates", tmp_path / "home"
    start = datetime.now(UTC) - timedelta(hours=2)
    s = agent_logs.session("copilot", project, start)
    s.user("Fetch the rates").run("python rates.py", "SSLError", 1).user("still failing")
    s.edit("rates.py", "import requests", "import httpx").run("python rates.py", "0.92")
    s.say("Switched to httpx.")
    path = s.write(home, timedelta(hours=1))
    other = agent_logs.session("copilot", project, start).user("again").write(home)
    assert path.parent == other.parent  # one workspace, one storage folder
    assert tin.detect(str(path)) == "copilot"
    assert path.stat().st_mtime < datetime.now(UTC).timestamp() - 3000
    parsed, state, _ = read_all(path)
    assert state.cwd == str(project) and state.counts["requests"] == 2
    got = [(e[0], e[2], e[3], e[4], e[5], e[6]) for e in events_of(parsed)]
    edited = (project / "rates.py").as_uri()
    assert got == [
        ("user", None, "Fetch the rates", None, None, None),
        ("assistant", "run_in_terminal", "Ran `python rates.py`", "python rates.py", None, None),
        ("tool", "run_in_terminal", "SSLError", "python rates.py", 1, True),
        ("user", None, "still failing", None, None, None),
        ("assistant", "copilot_replaceString", "copilot_replaceString rates.py", None, None, None),
        ("tool", "copilot_replaceString", f"Edited []({edited})", None, None, False),
        ("assistant", "edit", "edit rates.py", None, None, None),
        ("assistant", "run_in_terminal", "Ran `python rates.py`", "python rates.py", None, None),
        ("tool", "run_in_terminal", "0.92", "python rates.py", 0, False),
        ("assistant", None, "Switched to httpx.", None, None, None),
    ]
    # an edit's event carries what it wrote, not the text it took out
    assert {p.event.raw_snippet for p in parsed if p.event.file} == {"import httpx", None}


def test_the_hook_worker_reads_the_chat_store_beside_the_hook_transcript(tmp_path: Path) -> None:
    """Copilot's hooks hand over the extension's hook transcript; the worker ingests VS Code's
    chat session store of the same session in that workspace storage (it has the exit codes)."""
    import sqlite3
    import time
    from datetime import UTC, datetime, timedelta

    from harness import agent_logs
    from harness.commands import run_module
    from harness.hook_payloads import payload
    from harness.processes import hook_pids
    from reos_memory.interfaces.agent_hooks.dialects import DIALECTS

    project, home, db = tmp_path / "work" / "rates", tmp_path / "home", tmp_path / "memory.db"
    (project / ".git").mkdir(parents=True)
    s = agent_logs.session("copilot", project, datetime.now(UTC) - timedelta(minutes=10))
    s.user("Fetch the rates").run("python rates.py", "SSLError", 1).say("It fails on SSL.")
    store = s.write(home)
    sid = store.stem
    hook_dir = store.parent.parent / "GitHub.copilot-chat" / "transcripts"
    hook_dir.mkdir(parents=True)
    transcript = hook_dir / f"{sid}.jsonl"
    text = (ROOT / "tests/fixtures/agents/copilot/hook-transcript.jsonl").read_text()
    transcript.write_text(text.replace(COPILOT_HOOK_SESSION, sid))

    # in process: the dialect hands the store on; a transcript without one stays as given
    def given(path: Path) -> str | None:
        got = DIALECTS["copilot"].read(payload("copilot", "ingest", sid, str(project), str(path)))
        assert got is not None
        return got.transcript

    assert given(transcript) == str(store)
    lone = tmp_path / "w2" / "GitHub.copilot-chat" / "transcripts" / f"{sid}.jsonl"
    assert given(lone) == str(lone)
    assert given(tmp_path / "t.jsonl") == str(tmp_path / "t.jsonl")

    # the hook as Copilot runs it on Stop, then its detached worker
    stop = payload("copilot", "ingest", sid, str(project), str(transcript))
    env = agent_env(home, db)
    r = run_module(env, "reos_memory", "hook", "copilot", "--db", str(db), stdin=json.dumps(stop))
    assert r.returncode == 0 and r.stdout == "", r.stderr
    queue = Path(str(db) + ".hook-queue")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (
        any(queue.glob("*.json")) or any(queue.glob("*.taken")) or hook_pids(db, "--worker")
    ):
        time.sleep(0.1)
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        cursors = dict(con.execute("SELECT path, agent FROM transcript_cursors").fetchall())
        n = con.execute("SELECT count(*) FROM squirrel_sessions WHERE session_id = ?", (sid,))
        sessions = n.fetchone()[0]
    finally:
        con.close()
    assert cursors == {str(store): "copilot"}, cursors
    assert sessions == 1
