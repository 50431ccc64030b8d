"""Windsurf (Cascade) hook transcripts: the adapter, its step cursor, detection, default
locations, and the way through `sqrl ingest`, JSON-RPC and MCP.

No real transcript is available (../shared/formats/windsurf/NOTES.md): the fixture under
tests/fixtures/agents/windsurf is built from the three step types Windsurf documents
(`user_input`, `planner_response`, `code_action`) with our own content; `@PROJECT@` stands for
the project's directory, filled in when laid out. Step status values are not documented
("done" and "error" are ours), nor is a command run: its step (`run_command`) is the shape the
adapter assumes, see reos_memory/squirrel/ingest/windsurf.py."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness import agent_logs
from harness.commands import agent_env, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import ParseState, Place
from reos_memory.squirrel.ingest.windsurf import ADAPTER as WINDSURF
from tests.agent_fixtures import app, copy_home, parse_all, running_app
from tests.test_agents_e2e import _mcp_context

__all__ = ["app"]  # a fixture, used by its name

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "agents" / "windsurf" / "home"
FORMATS = ROOT.parent / "shared" / "formats"
TRAJECTORY = "0b7c2f1e-4d3a-4f5b-9c8d-7e6f5a4b3c2d"
OTHERS = [
    FORMATS / "claude-code" / "spotter" / "short.jsonl",
    FORMATS
    / "codex"
    / "codemie-code"
    / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
    ROOT
    / "tests"
    / "fixtures"
    / "agents"
    / "gemini"
    / "home"
    / ".gemini"
    / "tmp"
    / "rates"
    / "chats"
    / "session-2026-05-02T10-15-3f9a1c2e.jsonl",
]


def lay_out(tmp: Path) -> dict[str, Path]:
    home, shop = tmp / "home", tmp / "work" / "dashboard"
    (shop / ".git").mkdir(parents=True)
    (shop / "src").mkdir()
    copy_home(FIXTURES, home, {"@PROJECT@": str(shop)})
    transcripts = home / ".windsurf" / "transcripts"
    return {"home": home, "shop": shop, "log": transcripts / f"{TRAJECTORY}.jsonl"}


def step(kind: str, status: str = "done", **body: object) -> dict[str, object]:
    return {"type": kind, "status": status, kind: body}


# -- 1. real samples -------------------------------------------------------------------------


def test_real_samples_if_any_parse_cleanly() -> None:
    folder = FORMATS / "windsurf"
    if not folder.is_dir():
        pytest.skip("../shared/formats/windsurf is not beside the repo")
    samples = list(folder.rglob("*.jsonl"))
    if not samples:
        pytest.skip("no real Windsurf transcript under a permissive licence (NOTES.md)")
    for p in samples:  # pragma: no cover - none yet
        events, state, bad = parse_all(WINDSURF, p)
        assert bad == 0 and events and state.session_id, p


# -- 2. every documented step kind -----------------------------------------------------------


def test_every_step_kind_becomes_the_right_event(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    parsed, state, bad = parse_all(WINDSURF, h["log"])
    assert bad == 0 and state.session_id == TRAJECTORY
    assert state.cwd == str(h["shop"])  # the directory of the first file Cascade wrote
    assert {p.session_id for p in parsed} == {TRAJECTORY}
    ev = [p.event for p in parsed]
    assert [(e.role, e.kind) for e in ev] == [
        ("user", "message"),
        ("assistant", "message"),
        ("user", "message"),
        ("assistant", "tool_call"),
        ("assistant", "message"),
        ("user", "message"),
        ("assistant", "tool_call"),
        ("assistant", "message"),
    ]  # the first three waited for the project, in their order
    assert ev[0].text == "Add the lodash dependency to the dashboard"
    assert ev[1].text == "I'll add it with npm install lodash."
    write = ev[3]
    assert write.tool_name == "code_action" and write.file == str(h["shop"] / "package.json")
    assert write.summary == "code_action package.json" and "lodash" in (write.raw_snippet or "")
    assert ev[6].is_error and not write.is_error  # the step whose status says it failed
    assert state.counts == {
        "user_messages": 3,
        "tool_calls": 2,
        "tool:code_action": 2,
        "errors": 1,
    }


def test_undocumented_steps_are_opaque_and_other_records_skipped(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    lines = [
        step("user_input", user_response="find where lodash is used"),
        step("grep_search", query="lodash", cwd=str(tmp_path)),  # not documented
        step("run_command", cwd=str(tmp_path)),  # no command: not the assumed shape either
        {"type": "hologram"},  # no step body: nothing to read
        {"note": "not a step"},
    ]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines) + "{half a step")
    parsed, state, bad = parse_all(WINDSURF, log)
    assert bad == 0  # the cut last line is not read at all (it may still be being written)
    assert state.counts["opaque_steps"] == 2 and state.counts["skipped"] == 2
    calls = [p.event for p in parsed if p.event.kind == "tool_call"]
    assert [c.tool_name for c in calls] == ["grep_search", "run_command"]
    assert all(c.command is None for c in calls)  # nothing guessed
    assert json.loads(calls[0].raw_snippet or "")["query"] == "lodash"
    assert state.cwd == str(tmp_path)  # a step naming its directory

    # a trajectory that never names a path: its events wait, and go with the session's end
    lone = tmp_path / "lone.jsonl"
    lone.write_text(json.dumps(step("user_input", user_response="hello")) + "\n")
    state = ParseState()
    WINDSURF.begin(str(lone), state)
    (rec,) = list(WINDSURF.records(str(lone), 0, 1 << 20))
    assert rec.data is not None and WINDSURF.parse(rec.data, state) == []
    assert [p.event.text for p in WINDSURF.finish(state)] == ["hello"]


def test_command_runs_in_the_assumed_shape_are_calls_with_results(tmp_path: Path) -> None:
    """Not documented (NOTES.md): `run_command` with `command_line`, `cwd`, `exit_code` and
    `combined_output.full`, the RUN_COMMAND step of Cascade's language server in the snake case
    the documented steps use; its camel-case names and stdout/stderr are taken too."""
    log = tmp_path / "t.jsonl"
    when = "2026-05-04T09:00:00.000Z"
    lines = [
        step("user_input", user_response="run the tests"),
        {
            "type": "run_command",
            "status": "done",
            "metadata": {"created_at": when},
            "run_command": {
                "command_line": "pnpm test",
                "cwd": str(tmp_path),
                "exit_code": 1,
                "combined_output": {"full": "FAIL src/sum.test.ts\nTests: 1 failed"},
            },
        },
        step("run_command", commandLine="pnpm lint", exitCode=0, stdout="no problems"),
        step("run_command", "error", command_line="pnpm build", stderr="pnpm: not found"),
    ]
    log.write_text("".join(json.dumps(x) + "\n" for x in lines))
    parsed, state, bad = parse_all(WINDSURF, log)
    assert bad == 0 and state.cwd == str(tmp_path)
    got = [
        (e.kind, e.command, e.exit_code, e.is_error, e.text)
        for e in (p.event for p in parsed)
        if e.kind != "message"
    ]
    assert got == [
        ("tool_call", "pnpm test", None, None, None),
        ("tool_result", "pnpm test", 1, True, "FAIL src/sum.test.ts\nTests: 1 failed"),
        ("tool_call", "pnpm lint", None, None, None),
        ("tool_result", "pnpm lint", 0, False, "no problems"),
        ("tool_call", "pnpm build", None, None, None),
        ("tool_result", "pnpm build", None, True, "pnpm: not found"),  # its status failed
    ]
    assert parsed[1].event.ts == when and parsed[0].event.ts is None
    assert state.counts["tool:run_command"] == 3 and state.counts["errors"] == 2


def test_the_harness_session_reads_back_as_scripted(tmp_path: Path) -> None:
    """harness.agent_logs.windsurf (the cross-agent tests and tools/bench_formats.py) writes
    what this adapter reads, where Windsurf keeps it."""
    repo = tmp_path / "work" / "rates"
    (repo / ".git").mkdir(parents=True)
    start = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    s = agent_logs.session("windsurf", repo, start)
    s.user("fetch the rates").run("python rates.py", "SSLError", 1)
    s.edit("rates.py", "import requests", "import httpx").run("python rates.py", "0.92").say("ok")
    path = s.write(tmp_path / "home", timedelta(hours=2))
    place = Place("linux", str(tmp_path / "home"), {})
    assert tin.find(tin.default_roots(place)) == [str(path)]
    assert tin.detect(str(path)) == "windsurf"
    parsed, state, bad = parse_all(WINDSURF, path)
    assert bad == 0 and state.cwd == str(repo)
    assert [(p.event.kind, p.event.exit_code, p.event.file) for p in parsed] == [
        ("message", None, None),
        ("tool_call", None, None),
        ("tool_result", 1, None),
        ("tool_call", None, str(repo / "rates.py")),
        ("tool_call", None, None),
        ("tool_result", 0, None),
        ("message", None, None),
    ]
    assert parsed[0].event.ts == "2026-05-04T09:00:06.000Z"


def test_step_cursor_snapshots_partial_lines_and_a_restart(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    lines = h["log"].read_text().splitlines(keepends=True)
    log = tmp_path / "transcripts" / f"{TRAJECTORY}.jsonl"
    log.parent.mkdir()
    log.write_text("".join(lines[:4]) + lines[4][:30])  # the last step cut mid-line
    with running_app(tmp_path) as app:
        sq = app.squirrel
        rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
        assert rep.agent == "windsurf" and (rep.lines, rep.events) == (4, 4)
        assert rep.session_id == TRAJECTORY and rep.project_id is not None
        assert rep.project_id.startswith("dashboard-")
        assert tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False)).lines == 0
    # after a restart, the next snapshot: written whole again, an earlier step's status
    # rewritten in place (its bytes shift), two more steps
    first = json.loads(lines[1])
    first["status"] = "completed after a long wait"
    log.write_text(lines[0] + json.dumps(first) + "\n" + "".join(lines[2:6]))
    with running_app(tmp_path) as app:
        sq = app.squirrel
        rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
        assert not rep.rewritten and (rep.lines, rep.events) == (2, 2)
        with open(log, "a") as f:
            f.write("".join(lines[6:]))
        rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=True))
        assert (rep.lines, rep.events) == (2, 2) and rep.ended and rep.episodes
        # another trajectory under the same name: read from its start
        log.write_text(json.dumps(step("user_input", user_response="a new conversation")) + "\n")
        rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
        assert rep.rewritten and rep.lines == 1


# -- 3. detection ----------------------------------------------------------------------------


def test_a_snapshot_reverted_and_grown_again_gives_only_the_new_steps(tmp_path: Path) -> None:
    # the user reverts to step 2 and goes on: the snapshot is written again shorter, then as
    # long as before (or longer); the steps below the old count are new
    log = tmp_path / "traj1.jsonl"
    steps = [
        step("user_input", user_response="add retries"),
        step("code_action", path="/w/app.py", new_content="x"),
        step("planner_response", response="added retries"),
        step("planner_response", response="also bumped the timeout"),
    ]

    def write(rows: list[dict[str, object]]) -> None:
        log.write_text("".join(json.dumps(r) + "\n" for r in rows))

    write(steps)
    state = ParseState()
    WINDSURF.begin(str(log), state)
    r = tin._read_batch(str(log), 0, WINDSURF, state, 1000)
    pos = r.end
    assert r.n_events == 4 and tin._read_batch(str(log), pos, WINDSURF, state, 1000).lines == 0
    steps[1]["status"] = "accepted"  # a step's status moving on is not a revert
    write(steps)
    assert tin._read_batch(str(log), pos, WINDSURF, state, 1000).lines == 0
    steps = [
        *steps[:2],
        step("planner_response", response="switched to httpx"),
        step("user_input", user_response="good"),
    ]
    write(steps)
    r = tin._read_batch(str(log), pos, WINDSURF, state, 1000)
    texts = [e.text for es in r.events.values() for e in es]
    assert texts == ["switched to httpx", "good"] and state.counts["cut_back"] == 1
    assert tin._read_batch(str(log), r.end, WINDSURF, state, 1000).lines == 0


def test_detect_names_windsurf_for_its_transcripts_only(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    assert tin.detect(str(h["log"])) == "windsurf"
    for path in OTHERS:
        if not path.exists():
            pytest.skip("../shared/formats (the real session logs) is not beside the repo")
        assert tin.detect(str(path)) not in (None, "windsurf"), path
        assert not WINDSURF.sniff(json.loads(path.read_text().splitlines()[0]))


# -- 4. default locations --------------------------------------------------------------------


def test_roots_per_platform_and_find_in_a_fake_home(tmp_path: Path) -> None:
    assert WINDSURF.roots(Place("linux", "/home/u", {})) == ["/home/u/.windsurf/transcripts"]
    assert WINDSURF.roots(Place("darwin", "/Users/u", {})) == ["/Users/u/.windsurf/transcripts"]
    win = WINDSURF.roots(Place("win32", r"C:\Users\u", {"APPDATA": r"C:\Users\u\AppData"}))
    assert win == [os.path.join(r"C:\Users\u", ".windsurf", "transcripts")]

    h = lay_out(tmp_path)
    cascade = h["home"] / ".codeium" / "windsurf" / "cascade"
    cascade.mkdir(parents=True)
    (cascade / f"{TRAJECTORY}.pb").write_bytes(b"\x0a\x10encrypted")  # never read
    place = Place("linux", str(h["home"]), {})
    assert tin.default_roots(place) == [str(h["home"] / ".windsurf" / "transcripts")]
    assert tin.find(tin.default_roots(place)) == [str(h["log"])]


# -- 5. end to end: sqrl ingest, JSON-RPC, MCP -----------------------------------------------


@pytest.mark.e2e
def test_sqrl_ingest_rpc_and_mcp_give_back_what_cascade_sessions_taught(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    db = tmp_path / "data" / "memory.db"
    env = agent_env(h["home"], db)

    out = sqrl(env, "ingest", str(h["log"]), "--end", "--json")
    assert out.returncode == 0, out.stderr
    (rep,) = json.loads(out.stdout)
    assert rep["agent"] == "windsurf" and rep["malformed"] == 0 and rep["session_ended"]
    assert rep["session_id"] == TRAJECTORY and rep["events"] == 8 and rep["episodes"]

    # a second trajectory, through JSON-RPC
    other = h["log"].with_name("5e4d3c2b-1a09-4f8e-8d7c-6b5a49382716.jsonl")
    other.write_text(
        "".join(
            json.dumps(s) + "\n"
            for s in (
                step("user_input", user_response="Set up linting for the dashboard"),
                step("planner_response", response="I'll add an .eslintrc with the defaults."),
                step(
                    "code_action",
                    path=str(h["shop"] / ".eslintrc.json"),
                    new_content='{"extends": "eslint:recommended"}\n',
                ),
                step(
                    "user_input",
                    user_response="From now on always use the shared config from"
                    " @acme/eslint-config, never eslint:recommended.",
                ),
            )
        )
    )
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        got = srv.call(
            "squirrel/ingest_transcript",
            {"path": str(other), "agent": "windsurf", "session_end": True},
        )
        assert got["agent"] == "windsurf" and got["events"] == 4 and got["session_ended"]
        assert got["episodes"]
        again = srv.call("squirrel/ingest_transcript", {"path": str(other)})
        assert again["lines"] == 0 and again["events"] == 0
        mems = srv.call(
            "squirrel/memories/list",
            {"project_root": str(h["shop"]), "include_global": False, "limit": 50},
        )["memories"]
        texts = [m["text"] for m in mems]
        assert any("pnpm" in t for t in texts), texts  # the user's correction
        assert any("acme/eslint-config" in t for t in texts), texts  # the user's rule
        status = srv.call("squirrel/status")
        assert status["transcripts"]["windsurf"]["files"] == 2

    data = _mcp_context(env, h["shop"], "install lodash for the dashboard with npm")
    assert "pnpm" in data["context_prompt"], data
    data = _mcp_context(env, h["shop"], "configure eslint for the new package")
    assert "acme/eslint-config" in data["context_prompt"], data
