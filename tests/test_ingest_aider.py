"""Aider's chat history: the real sample, every line kind, the cursor, detection, locations, and
one history through `sqrl ingest`, JSON-RPC and MCP to a memory."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from harness.commands import agent_env, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel.events import compress
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.aider import ADAPTER
from reos_memory.squirrel.ingest.base import Parsed, ParseState, Place
from tests.agent_fixtures import read_log
from tests.test_agents_e2e import _mcp_context
from tests.test_transcripts import FORMATS, _events_stored, needs_formats

FIXTURES = Path(__file__).parent / "fixtures" / "agents"
HISTORY = FIXTURES / "aider" / ".aider.chat.history.md"
SAMPLE = FORMATS / "aider" / "aider" / "chat-history.md"


def open_app(tmp_path: Path) -> Iterator[Any]:
    """A service on a fresh database with the hash embedder (what the `app` fixtures give)."""
    from reos_memory.app import App
    from reos_memory.config import load_config
    from reos_memory.logs import setup_logging

    cfg = load_config(None, {"db": str(tmp_path / "m.db"), "embedder": "hash"})
    a = App(msgspec.structs.replace(cfg, catch_up_indexing=False), setup_logging("warning"))
    a.start()
    a.embeddings.wait_ready(30)
    yield a
    a.close()


@pytest.fixture
def app(tmp_path: Path) -> Iterator[Any]:
    yield from open_app(tmp_path)


def parse_all(path: Path) -> tuple[list[Parsed], ParseState, int, int]:
    """(events, state, records, malformed) of a log, as ingest reads it."""
    r = read_log(ADAPTER, path)
    return r.events, r.state, r.records, r.malformed


def results(parsed: list[Parsed], tool: str) -> list[tuple[str, dict]]:
    return [
        (p.session_id, compress(p.event, 0, None))
        for p in parsed
        if p.event.kind == "tool_result" and p.event.tool_name == tool
    ]


# -- the real sample: aider's own history of August 2024 -------------------------------------


@needs_formats
def test_the_real_history_parses_whole_and_matches_the_field_notes() -> None:
    parsed, state, records, malformed = parse_all(SAMPLE)
    c = state.counts
    assert records == 99_961 and malformed == 0
    assert c.get("skipped", 0) == 0
    # NOTES: 1,133 headers; 1,776 `#### ` lines counted as inputs, 8 of which are not inputs
    # (no trailing two spaces: headings of the model's replies, the hand-added tail), so 1,768
    # inputs, the first of them in the 93 lines before the first header
    assert c["sessions"] == 1133 and c["lines_before_first_run"] == 93
    assert c["user_inputs"] == 1767
    assert c["slash_commands"] == 864
    assert (c["command:undo"], c["command:diff"], c["command:exit"]) == (113, 110, 154)
    assert c["llm_calls"] == 839 and c["edits_applied"] == 413 and c["commits"] == 667
    assert c["edit_failures"] == 49 and c["lint_failures"] == 12
    assert c["tool:test"] == 12 and c["tool:run"] == 27
    # a run ends when the next one starts; the last one is still open
    assert len(state.finished) == len({p.session_id for p in parsed}) - 1
    assert all(p.session_id.startswith("aider-") for p in parsed)

    # fail -> fix -> pass: `/test pytest tests/basic/test_io.py` in the run of 2024-08-09 18:45:35
    tests = [r for sid, r in results(parsed, "test") if sid.endswith("-20240809184535")]
    assert [(r["command"], r["test"]) for r in tests] == [
        ("pytest tests/basic/test_io.py", "failed"),
        ("pytest tests/basic/test_io.py", "passed"),
    ]
    edits = [
        p.event
        for p in parsed
        if p.session_id.endswith("-20240809184535") and p.event.kind == "tool_call"
    ]
    assert any(e.tool_name == "edit" and e.file == "aider/io.py" and e.raw_snippet for e in edits)
    # about 30 pytest runs (NOTES), each judged from its summary line
    runs = results(parsed, "test") + results(parsed, "run")
    judged = [r["test"] for _, r in runs if r.get("test")]
    assert len(judged) >= 25 and judged.count("passed") >= 3


@needs_formats
def test_the_real_history_ingests_with_nothing_malformed(app, tmp_path: Path) -> None:
    repo = tmp_path / "aider"
    (repo / ".git").mkdir(parents=True)
    log = repo / ".aider.chat.history.md"
    shutil.copyfile(SAMPLE, log)
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(log), tin.Options(session_end=True))
    assert rep.agent == "aider" and rep.malformed == 0 and rep.skipped_reason is None
    assert rep.lines == 99_961 and rep.events > 3000
    assert rep.ended and rep.project_id is not None and rep.counts.get("no_project", 0) == 0


# -- every line kind of the grammar ----------------------------------------------------------


def test_every_line_kind_becomes_the_right_event() -> None:
    parsed, state, _, malformed = parse_all(HISTORY)
    assert malformed == 0
    first, second, third = sorted({p.session_id for p in parsed})
    assert first.endswith("-20250304091502")
    assert (second, third) == (f"{first[:-15]}-20250304100240", f"{first[:-15]}-20250304100240-2")
    assert state.finished == [first, second] and state.session_id == third
    assert state.cwd == str(HISTORY.parent.resolve())
    c = state.counts
    assert c["lines_before_first_run"] == 3  # the tail of a run whose header is gone
    ev = [p.event for p in parsed if p.session_id == first]
    said = [e.text for e in ev if e.role == "user" and e.kind == "message"]
    assert said == [
        "add a discount parameter to total",
        "no, never use float for money in this project,\n"
        "keep every amount as Decimal all the way through",
        # free text answering "Add the output to the chat?"
        "the failure is in the discount rounding, look at invoice.py",
    ]
    # /add and the banner say nothing; /test and /run are calls with the typed command
    calls = [(e.tool_name, e.command or e.file) for e in ev if e.kind == "tool_call"]
    assert calls == [
        ("test", "pytest tests/test_invoice.py"),
        ("edit", "billing/invoice.py"),
        ("test", "pytest tests/test_invoice.py"),
        ("edit", "billing/invoice.py"),  # the SEARCH/REPLACE that failed to match
        ("shell", "python -m pytest -q"),  # proposed by the model, declined
        ("shell", "pytest -q tests"),  # proposed, run, exit status 1
        ("edit", None),  # "Create new file?" answered no
        ("lint", "flake8 --select=E9,F821 billing/invoice.py"),  # aider's lint message
        ("run", "python -m pytest -q tests/test_discount.py"),
    ]
    applied = next(e for e in ev if e.kind == "tool_call" and e.tool_name == "edit")
    assert "Decimal(str(a))" in (applied.raw_snippet or "")  # the REPLACE text of the reply
    out = {(e.tool_name, e.command): compress(e, 0, None) for e in ev if e.kind == "tool_result"}
    assert out[("test", "pytest tests/test_invoice.py")]["test"] == "passed"  # the last one
    failed_first = next(e for e in ev if e.kind == "tool_result" and e.tool_name == "test")
    assert compress(failed_first, 0, None)["test"] == "failed"
    assert out[("run", "python -m pytest -q tests/test_discount.py")]["test"] == "failed"
    shell = next(e for e in ev if e.kind == "tool_result" and e.command == "pytest -q tests")
    assert shell.exit_code == 1 and shell.is_error
    lint = next(e for e in ev if e.kind == "tool_result" and e.tool_name == "lint")
    assert lint.is_error and "F821" in (lint.text or "")
    no_match = [e for e in ev if e.kind == "tool_result" and e.tool_name == "edit" and e.is_error]
    assert len(no_match) == 1 and no_match[0].file == "billing/invoice.py"
    rejected = [e for e in ev if e.rejected]
    assert [e.tool_name for e in rejected] == ["edit", "shell", "edit"]  # /undo, n, n
    assert rejected[0].file == "billing/invoice.py"  # what /undo took back
    system = [e.summary for e in ev if e.role == "system"]
    assert system == [
        "aider's model call failed: litellm.RateLimitError: AnthropicException - rate limit"
        " exceeded",
        "the user interrupted aider",  # "^C again to exit" and "^C KeyboardInterrupt": one
    ]
    replies = [e.text or "" for e in ev if e.role == "assistant" and e.kind == "message"]
    assert "<<<<<<< SEARCH" not in replies[0] and "[edit of billing/invoice.py]" in replies[0]
    # the second run: /ask is a request, aider's echo of it is not another; `#### heading` in
    # a reply (no trailing spaces) is the reply's; <blank> and /ex say nothing
    ev2 = [p.event for p in parsed if p.session_id == second]
    assert [(e.role, (e.text or "")[:14]) for e in ev2] == [
        ("user", "why does total"),
        ("assistant", "#### Why a flo"),
    ]
    assert c["ask_echoes"] == 1 and c["interrupts"] == 1 and c["rejections"] == 3
    assert c.get("skipped", 0) == 0


def test_a_line_still_being_written_waits(tmp_path: Path) -> None:
    log = tmp_path / ".aider.chat.history.md"
    log.write_text("\n# aider chat started at 2025-01-02 03:04:05\n\n#### fix the b")
    recs = list(ADAPTER.records(str(log), 0, 1 << 20))
    assert [r.data for r in recs] == [{"line": ""}, {"line": _h()}, {"line": ""}]
    with log.open("a") as f:
        f.write("ug  \n")
    more = list(ADAPTER.records(str(log), recs[-1].end, 1 << 20))
    assert [r.data for r in more] == [{"line": "#### fix the bug  "}]
    assert more[-1].end == log.stat().st_size


def test_a_message_whose_end_never_comes_is_kept_bounded() -> None:
    # a `> ` message of many lines waits for its closing line in the stored state: its head and
    # tail are kept, not every line
    from reos_memory.squirrel.ingest.base import MAX_TEXT

    state = ParseState()
    ADAPTER.parse({"line": _h()}, state)
    ADAPTER.parse({"line": "> Running the tests"}, state)
    for i in range(20_000):
        ADAPTER.parse({"line": f"output line {i}"}, state)
        assert sum(len(s) for s in state.extra["open"]) <= 3 * MAX_TEXT
    assert state.counts["open_message_cut"] > 0
    kept = "\n".join(state.extra["open"])
    assert kept.startswith("Running the tests") and kept.endswith("output line 19999")
    ADAPTER.parse({"line": "all passed  "}, state)  # its closing line
    assert "open" not in state.extra


def _h() -> str:
    return "# aider chat started at 2025-01-02 03:04:05"


# -- the cursor: once, appends, restarts -------------------------------------------------------


def test_cursor_reads_once_appends_and_restarts(app, tmp_path: Path) -> None:
    from reos_memory.app import App
    from reos_memory.logs import setup_logging

    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    log = repo / ".aider.chat.history.md"
    text = HISTORY.read_text()
    cut_at = text.index("#### no, never use float")
    log.write_text(text[:cut_at] + "#### no, never use fl")  # caught mid-line
    sq = app.squirrel
    first = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
    assert first.agent == "aider" and first.malformed == 0
    assert first.lines == text[:cut_at].count("\n")  # the half line is not read
    stored = _events_stored(app)
    again = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
    assert (again.lines, again.events) == (0, 0) and _events_stored(app) == stored

    # a restart: another process on the same database continues from the stored cursor
    other = App(app.config, setup_logging("warning"))
    other.start()
    try:
        with log.open("a") as f:
            f.write(text[cut_at + len("#### no, never use fl") :])
        rest = tin.ingest_file(other.squirrel.ingest_deps, str(log), tin.Options(session_end=True))
        assert rest.lines == text.count("\n") - first.lines and rest.malformed == 0
        # the whole file read in two goes gives what one go gives
        whole, _, _, _ = parse_all(HISTORY)
        assert first.events + rest.events == len(whole)
        assert rest.ended
    finally:
        other.close()


# -- detection and locations -----------------------------------------------------------------


def test_detect_names_aider_only_for_its_histories(tmp_path: Path) -> None:
    assert tin.detect(str(HISTORY)) == "aider"
    named = tmp_path / "my-aider-log.md"  # --chat-history-file with another name
    shutil.copyfile(HISTORY, named)
    assert tin.detect(str(named)) == "aider"
    plain = tmp_path / "README.md"
    plain.write_text("# aider chat started at 2025-01-01 00:00:00\n")
    assert not ADAPTER.claims(str(plain))  # a Markdown file without aider in its name
    cline = FIXTURES / "cline" / "tasks" / "1718000000000" / "ui_messages.json"
    assert tin.detect(str(cline)) == "cline"
    if FORMATS.is_dir():
        for log in [*FORMATS.glob("claude-code/**/*.jsonl"), *FORMATS.glob("codex/**/*.jsonl")]:
            assert tin.detect(str(log)) in ("claude-code", "codex"), log


def test_roots_and_find() -> None:
    for platform in ("linux", "darwin", "win32"):
        assert ADAPTER.roots(Place(platform, "/home/u", {})) == []  # no central store
    env = {"AIDER_CHAT_HISTORY_FILE": "/srv/logs/aider.md"}
    assert ADAPTER.roots(Place("linux", "/home/u", env)) == ["/srv/logs/aider.md"]
    assert ADAPTER.roots(Place("linux", "/home/u", {"AIDER_CHAT_HISTORY_FILE": "rel.md"})) == []


def test_find_picks_the_histories_of_a_code_tree(tmp_path: Path) -> None:
    home = tmp_path / "home"
    shop, notes = home / "code" / "shop", home / "code" / "notes"
    for p in (shop, notes):
        (p / ".git").mkdir(parents=True)
        (p / "README.md").write_text("# readme\n")
        (p / "CHANGELOG.aider.md").write_text("no header here\n")
    shutil.copyfile(HISTORY, shop / ".aider.chat.history.md")
    (notes / ".aider.input.history").write_text("# 2025-01-01\n+hi\n")  # not the chat log
    found = tin.find([str(home)])
    assert found == [str(shop / ".aider.chat.history.md")]


# -- end to end: sqrl ingest, JSON-RPC, MCP ------------------------------------------------------


@pytest.mark.e2e
def test_a_history_is_learned_and_given_back_through_sqrl_rpc_and_mcp(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    billing, ledger = tmp_path / "work" / "billing", tmp_path / "work" / "ledger"
    for p in (billing, ledger):
        (p / ".git").mkdir(parents=True)
        shutil.copyfile(HISTORY, p / ".aider.chat.history.md")
    db = tmp_path / "data" / "memory.db"
    env = agent_env(home, db)

    # 1. sqrl ingest --end --json, in the project
    r = sqrl(env, "ingest", str(billing / ".aider.chat.history.md"), "--end", "--json", cwd=billing)
    assert r.returncode == 0, r.stderr
    [rep] = json.loads(r.stdout)
    assert rep["agent"] == "aider" and rep["malformed"] == 0 and rep["session_ended"]
    assert "Traceback" not in r.stderr

    # 2. squirrel/ingest_transcript with agent=aider over JSON-RPC (the other project)
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        res = srv.call(
            "squirrel/ingest_transcript",
            {
                "path": str(ledger / ".aider.chat.history.md"),
                "agent": "aider",
                "session_end": True,
            },
        )
        assert res["agent"] == "aider" and res["malformed"] == 0 and res["session_ended"]
        assert res["counts"]["tool:test"] == 2 and res["counts"]["rejections"] == 3
        again = srv.call(
            "squirrel/ingest_transcript", {"path": str(ledger / ".aider.chat.history.md")}
        )
        assert again["lines"] == 0 and again["events"] == 0
        for root in (billing, ledger):
            mems = srv.call(
                "squirrel/memories/list", {"project_root": str(root), "include_global": False}
            )["memories"]
            assert any("float for money" in m["text"] for m in mems), mems

    # 3. get_task_context through the MCP server, from the project's directory (the hash
    # embedder needs a task close in words)
    data = _mcp_context(env, billing, "sum the money amounts of an invoice without float")
    assert "float for money" in data["context_prompt"], (data["dropped"], data["considered"])


def test_context_run_into_the_chat_is_never_learned_back(app: Any, tmp_path: Path) -> None:
    """The way Aider takes memories (`/run sqrl context ...`, output added to the chat) writes
    Squirrel's own block into the history as `> ` lines: it is stripped, never learned."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    log = repo / ".aider.chat.history.md"
    log.write_text(
        "\n# aider chat started at 2026-11-20 10:00:00\n\n"
        '#### /run sqrl context "fetch rates"  \n\n'
        '> <squirrel-context id="ctx_abc">\n'
        "> Memories for this task:\n"
        "> - Use zeep-client-17, never requests: requests fails SSL here.\n"
        "> </squirrel-context>\n"
        "> Add the output to the chat? (y/n/instructions): y\n\n"
        "#### fix the rates fetcher  \n\n"
        "Sure, I will.\n\n"
    )
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(log), tin.Options(session_end=True))
    assert rep.events == 4 and rep.ended
    stored = app.squirrel.db.read(
        lambda c: (
            [r[0] for r in c.execute("SELECT events_json FROM episodes")]
            + [r[0] for r in c.execute("SELECT event_json FROM squirrel_events")]
        )
    )
    assert stored and not any("zeep-client-17" in s for s in stored), stored
