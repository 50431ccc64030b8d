"""Cline and Roo Code tasks: every message kind, the document cursor (half-written documents,
streaming messages, rewrites, restarts), the task's directory, detection, locations, and one
task through `sqrl ingest`, JSON-RPC and MCP to a memory.

There is no real task folder under a permissive licence (../shared/formats/cline-roo/NOTES.md):
the fixtures are built from the documented `ClineMessage` types."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.commands import agent_env, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel.events import compress
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import Parsed, ParseState, Place
from reos_memory.squirrel.ingest.cline import ADAPTER
from tests.agent_fixtures import read_log
from tests.test_agents_e2e import _mcp_context
from tests.test_ingest_aider import open_app
from tests.test_transcripts import FORMATS, _events_stored

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
TASK = FIXTURES / "cline" / "tasks" / "1718000000000"
ROO = FIXTURES / "cline" / "roo-jsonl" / "tasks" / "1718500000000" / "ui_messages.jsonl"
CWD = "/home/dev/notes"  # the fixtures' project directory
EXT = "saoudrizwan.claude-dev"


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    yield from open_app(tmp_path)


def parse_all(path: Path, start: int = 0) -> tuple[list[Parsed], ParseState, int]:
    r = read_log(ADAPTER, path, start=start)
    assert r.malformed == 0
    return r.events, r.state, r.records


def place_task(
    tasks: Path, src: Path = TASK, project: Path | None = None, messages: int | None = None
) -> Path:
    """The fixture task under `tasks/`, its directory made `project`, cut to `messages`."""
    dst = tasks / src.name
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("ui_messages.json", "api_conversation_history.json"):
        text = (src / name).read_text()
        if project is not None:
            text = text.replace(CWD, str(project))
        if name == "ui_messages.json" and messages is not None:
            text = json.dumps(json.loads(text)[:messages])
        (dst / name).write_text(text)
    return dst / "ui_messages.json"


# -- every message kind ----------------------------------------------------------------------


def test_every_message_kind_becomes_the_right_event() -> None:
    parsed, state, n = parse_all(TASK / "ui_messages.json")
    total = len(json.loads((TASK / "ui_messages.json").read_text()))
    assert n == total - 1  # the last message is still streaming (`partial`): not read
    assert state.session_id == "cline-1718000000000" and state.cwd == CWD
    assert {p.session_id for p in parsed} == {"cline-1718000000000"}
    ev = [p.event for p in parsed]
    said = [(e.text, e.origin) for e in ev if e.role == "user"]
    assert said == [
        ("Add a --json flag to the export command in notes/cli.py", None),
        ("no, never push from Cline in this repo, I push myself after review", "rejection"),
        ("yes, include them", None),  # the answer to a follow-up question
    ]
    calls = [(e.tool_name, e.command or e.file) for e in ev if e.kind == "tool_call"]
    assert calls == [
        ("readFile", "notes/cli.py"),
        ("edit", "notes/cli.py"),
        ("execute_command", "python -m pytest -q tests/test_cli.py"),
        ("edit", "notes/cli.py"),
        ("execute_command", "python -m pytest -q tests/test_cli.py"),
        ("execute_command", "git push --force origin main"),
        ("edit", "README.md"),
        ("mcp:github:create_issue", None),
    ]
    edit = next(e for e in ev if e.kind == "tool_call" and e.tool_name == "edit")
    assert edit.summary == "editedExistingFile cli.py"
    assert "as_json" in (edit.raw_snippet or "") and "SEARCH" not in (edit.raw_snippet or "")
    res = [e for e in ev if e.kind == "tool_result"]
    assert [r.call_id for r in res] == [c.call_id for c in ev if c.kind == "tool_call"]
    runs = [compress(r, 0, None) for r in res if r.tool_name == "execute_command"]
    assert [(r.get("exit_code"), r.get("test"), bool(r.get("rejected"))) for r in runs] == [
        (1, "failed", False),  # "Command failed with exit code 1." in the next request
        (0, "passed", False),  # "Command executed successfully (exit code 0)."
        (None, None, True),  # refused by typing instead of approving
    ]
    first_run = next(r for r in res if r.tool_name == "execute_command")
    assert "NameError" in (first_run.text or "")  # the command's output, from command_output
    readme = next(r for r in res if r.file == "README.md")
    assert readme.is_error and "did not apply" in (readme.text or "")
    assert next(r for r in res if r.tool_name.startswith("mcp:")).text == "Issue #12 created."
    replies = [e.text for e in ev if e.role == "assistant" and e.kind == "message"]
    assert replies == [
        "I'll read the export command first.",
        "Found the bug: notes/cli.py uses json without importing it.",
        "Should --json include archived notes?",
        "Added --json to the export command; the tests pass.",
    ]
    system = [(e.summary, e.origin) for e in ev if e.role == "system"]
    assert system[:2] == [
        (
            "Cline's model call failed: 529 Overloaded: the model is overloaded, try again later",
            None,
        ),
        ("the user cancelled Cline", None),  # the resume after it is the same interruption
    ]
    assert [o for _, o in system[2:]] == ["compaction", "compaction"]
    c = state.counts
    assert c["skipped"] == 1  # the unknown `future_kind_of_message`
    assert (c["interrupts"], c["rejections"], c["api_errors"], c["compactions"]) == (1, 1, 1, 2)
    # what a hook injected (Squirrel's own block) is in no event
    assert not any("yarn deploy-prod" in (e.text or "") + (e.summary or "") for e in ev)


def test_roo_jsonl_and_its_workspace_directory() -> None:
    parsed, state, n = parse_all(ROO)
    assert n == 5 and state.cwd == CWD and state.session_id == "cline-1718500000000"
    run = next(p.event for p in parsed if p.event.kind == "tool_result")
    assert run.exit_code == 0 and compress(run, 0, None)["test"] == "passed"


def test_events_wait_for_the_task_directory(tmp_path: Path) -> None:
    log = place_task(tmp_path / "tasks", messages=1)  # the task, before its first request
    (log.parent / "api_conversation_history.json").unlink()
    state = ParseState()
    ADAPTER.begin(str(log), state)
    first = [ADAPTER.parse(r.data or {}, state) for r in ADAPTER.records(str(log), 0, 1 << 20)]
    assert first == [[]] and state.cwd is None and len(state.extra["held"]) == 1
    state = ParseState.from_json(state.to_json())  # as stored with the cursor
    place_task(tmp_path / "tasks", messages=2)
    got = [p for r in ADAPTER.records(str(log), 1, 1 << 20) for p in ADAPTER.parse(r.data, state)]
    assert state.cwd == CWD and [p.event.role for p in got] == ["user"]


def test_events_held_for_the_task_directory_are_capped() -> None:
    # the directory never comes: what waits is stored with the cursor every batch, so it is
    # bounded (the task's request kept, the oldest after it dropped and counted)
    from reos_memory.squirrel.ingest.cline import MAX_HELD

    state = ParseState(session_id="cline-1")
    task = {"ts": 1, "type": "say", "say": "task", "text": "fix the tests"}
    ADAPTER.parse(task, state)
    for i in range(2, 300):
        ADAPTER.parse({"ts": i, "type": "say", "say": "text", "text": f"reply {i}"}, state)
    held = state.extra["held"]
    assert len(held) == MAX_HELD and held[0]["text"] == "fix the tests"
    assert held[-1]["text"] == "reply 299"
    assert state.counts["dropped_before_project"] == 299 - MAX_HELD


# -- the document cursor -----------------------------------------------------------------------


def test_half_written_documents_streaming_messages_appends_and_restarts(
    app, tmp_path: Path
) -> None:
    from reos_memory.app import App
    from reos_memory.logs import setup_logging

    project = tmp_path / "notes"
    (project / ".git").mkdir(parents=True)
    log = place_task(tmp_path / "tasks", project=project, messages=12)
    whole = log.read_text()
    log.write_text(whole[: len(whole) // 2])  # caught while Cline rewrites it
    sq = app.squirrel
    half = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(agent="cline", session_end=False))
    assert (half.lines, half.events, half.malformed) == (0, 0, 0)
    log.write_text(whole)
    first = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
    assert first.agent == "cline" and first.lines == 12 and first.malformed == 0
    assert first.project_id is not None and first.counts.get("no_project", 0) == 0
    stored = _events_stored(app)
    again = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
    assert (again.lines, again.events, again.rewritten) == (0, 0, False)
    assert _events_stored(app) == stored

    # Cline saves the document again, longer; another process takes it from the cursor
    place_task(tmp_path / "tasks", project=project)
    other = App(app.config, setup_logging("warning"))
    other.start()
    try:
        rest = tin.ingest_file(other.squirrel.ingest_deps, str(log), tin.Options(session_end=True))
        total = len(json.loads(log.read_text()))
        assert rest.lines == total - 1 - 12 and not rest.rewritten and rest.ended
        everything, _, _ = parse_all(TASK / "ui_messages.json")
        assert first.events + rest.events == len(everything)
    finally:
        other.close()


# -- detection and locations -----------------------------------------------------------------


def test_a_task_cut_back_and_grown_again_gives_only_the_new_messages(tmp_path: Path) -> None:
    # a checkpoint restored (or a message edited): the document is written again shorter, then
    # grows; the messages below the old count are new and read, the ones kept are not again
    log = tmp_path / "tasks" / "1700000000000" / "ui_messages.json"
    log.parent.mkdir(parents=True)

    def msg(i: int, text: str, say: str = "text") -> dict[str, Any]:
        return {"ts": 1700000000000 + i, "type": "say", "say": say, "text": text}

    msgs = [msg(0, "fix the tests", "task")] + [msg(i, f"reply {i}") for i in range(1, 10)]
    log.write_text(json.dumps(msgs))
    state = ParseState(cwd="/tmp")
    ADAPTER.begin(str(log), state)
    state.cwd = "/tmp"

    def read(pos: int) -> tuple[list[str | None], int]:
        r = tin._read_batch(str(log), pos, ADAPTER, state, 1000)
        return [e.text for es in r.events.values() for e in es], r.end

    texts, pos = read(0)
    assert len(texts) == 10
    assert read(pos) == ([], pos)  # unchanged: nothing
    # restored to message 4, then 5 new messages (as many as the old count, or more)
    for grown in (6, 9):
        msgs = msgs[:4] + [msg(100 * grown + i, f"after {grown}.{i}") for i in range(grown)]
        log.write_text(json.dumps(msgs))
        texts, pos = read(pos)
        assert texts == [f"after {grown}.{i}" for i in range(grown)]
        assert read(pos) == ([], pos)
    # a request's details filled in later (its cost) is the same message: nothing is re-read
    msgs[-1]["text"] = "after 9.8 (edited in place)"
    log.write_text(json.dumps(msgs))
    assert read(pos) == ([], pos)
    # cut back with nothing new: nothing, and what comes next is read
    log.write_text(json.dumps(msgs[:3]))
    texts, pos = read(pos)
    assert texts == []
    log.write_text(json.dumps([*msgs[:3], msg(999, "last")]))
    assert read(pos)[0] == ["last"]
    assert state.counts["cut_back"] == 3


def test_detect_names_cline_only_for_its_tasks(tmp_path: Path) -> None:
    assert tin.detect(str(TASK / "ui_messages.json")) == "cline"
    assert tin.detect(str(ROO)) == "cline"
    assert not ADAPTER.claims(str(TASK / "api_conversation_history.json"))
    loose = tmp_path / "ui_messages.json"  # not in a task folder
    shutil.copyfile(TASK / "ui_messages.json", loose)
    assert not ADAPTER.claims(str(loose))
    assert tin.detect(str(FIXTURES / "aider" / ".aider.chat.history.md")) == "aider"
    if FORMATS.is_dir():
        for log in [*FORMATS.glob("claude-code/**/*.jsonl"), *FORMATS.glob("codex/**/*.jsonl")]:
            assert tin.detect(str(log)) in ("claude-code", "codex"), log


def test_roots_on_each_os() -> None:
    def tasks(user: str, ext: str = EXT) -> str:
        return f"{user}/globalStorage/{ext}/tasks"

    linux = ADAPTER.roots(Place("linux", "/home/u", {}))
    assert tasks("/home/u/.config/Code/User") in linux
    assert tasks("/home/u/.config/Code/User", "rooveterinaryinc.roo-cline") in linux
    assert tasks("/home/u/.config/Cursor/User") in linux
    assert linux[-1] == "/home/u/.cline/data/tasks"
    mac = ADAPTER.roots(Place("darwin", "/Users/u", {}))
    assert tasks("/Users/u/Library/Application Support/Code/User") in mac
    win = ADAPTER.roots(Place("win32", "C:/Users/u", {"APPDATA": "C:/Users/u/AppData/Roaming"}))
    win = [r.replace("\\", "/") for r in win]  # joined with this OS's separator
    assert tasks("C:/Users/u/AppData/Roaming/Code/User") in win
    env = Place("linux", "/home/u", {"CLINE_DIR": "/opt/cline"})
    assert ADAPTER.roots(env)[-1] == "/opt/cline/data/tasks"
    env = Place("linux", "/home/u", {"CLINE_DIR": "/opt/cline", "CLINE_DATA_DIR": "/srv/cd"})
    assert ADAPTER.roots(env)[-1] == "/srv/cd/tasks"


def test_find_picks_one_log_per_task_from_a_fake_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    storage = home / ".config" / "Code" / "User" / "globalStorage"
    log = place_task(storage / EXT / "tasks")
    (log.parent / "task_metadata.json").write_text("{}")
    (storage / EXT / "settings").mkdir(parents=True)
    (storage / EXT / "settings" / "cline_mcp_settings.json").write_text("{}")
    (storage / "other.extension" / "state.json").parent.mkdir(parents=True)
    (storage / "other.extension" / "state.json").write_text("{}")
    roots = tin.default_roots(Place("linux", str(home), {}))
    assert str(storage / EXT / "tasks") in roots
    assert tin.find(roots) == [str(log)]


# -- end to end: sqrl ingest, JSON-RPC, MCP ------------------------------------------------------


@pytest.mark.e2e
def test_a_task_is_learned_and_given_back_through_sqrl_rpc_and_mcp(tmp_path: Path) -> None:
    home = tmp_path / "home"
    notes, wiki = tmp_path / "work" / "notes", tmp_path / "work" / "wiki"
    for p in (notes, wiki):
        (p / ".git").mkdir(parents=True)
    storage = home / ".config" / "Code" / "User" / "globalStorage"
    log = place_task(storage / EXT / "tasks", project=notes)
    roo = place_task(tmp_path / "elsewhere" / "tasks", project=wiki)
    db = tmp_path / "data" / "memory.db"
    env = agent_env(home, db)

    # 1. sqrl ingest --end --json over the extension's tasks folder
    r = sqrl(env, "ingest", str(storage / EXT / "tasks"), "--end", "--json", cwd=notes)
    assert r.returncode == 0, r.stderr
    [rep] = json.loads(r.stdout)
    assert rep["path"] == str(log) and rep["agent"] == "cline" and rep["malformed"] == 0
    assert rep["session_ended"] and rep["counts"]["rejections"] == 1

    # 2. squirrel/ingest_transcript with agent=cline over JSON-RPC
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        res = srv.call(
            "squirrel/ingest_transcript", {"path": str(roo), "agent": "cline", "session_end": True}
        )
        assert res["agent"] == "cline" and res["malformed"] == 0 and res["session_ended"]
        again = srv.call("squirrel/ingest_transcript", {"path": str(roo)})
        assert again["lines"] == 0 and again["events"] == 0
        mems = srv.call(
            "squirrel/memories/list", {"project_root": str(notes), "include_global": False}
        )["memories"]
        texts = [m["text"] for m in mems]
        assert any("never push from cline" in t.lower() for t in texts), texts
        assert any("NameError" in t and "json" in t for t in texts), texts
        # the injected block was never learned from
        assert not any("yarn" in t for t in texts)

    # 3. get_task_context through the MCP server, from the project's directory (the hash
    # embedder needs a task close in words)
    data = _mcp_context(env, notes, "push the export branch from Cline")
    assert "never push from cline" in data["context_prompt"].lower(), data["dropped"]
