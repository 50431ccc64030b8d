"""Gemini CLI chat recordings: the adapter, its cursor, detection, default locations, and the
way through `sqrl ingest`, JSON-RPC and MCP.

No real Gemini CLI session is available under a permissive licence (../shared/formats/
gemini-cli/NOTES.md): the fixtures under tests/fixtures/agents/gemini are built from the record
types the notes document (chatRecordingTypes.ts), every kind of them, with our own content.
`@PROJECT@` / `@SHOP@` stand for the projects' directories, filled in when laid out."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness import agent_logs
from harness.commands import agent_env, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel.ingest import ingest as tin
from reos_memory.squirrel.ingest.base import ParseState, Place
from reos_memory.squirrel.ingest.gemini import ADAPTER as GEMINI
from tests.agent_fixtures import app, copy_home, parse_all, running_app
from tests.test_agents_e2e import _mcp_context

__all__ = ["app"]  # a fixture, used by its name

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "agents" / "gemini" / "home"
FORMATS = ROOT.parent / "shared" / "formats"
SID = "3f9a1c2e-5b7d-4e21-9a0c-6d2f8e1b4a70"
SESSION = f".gemini/tmp/rates/chats/session-2026-05-02T10-15-{SID[:8]}.jsonl"
SUBAGENT = f".gemini/tmp/rates/chats/{SID}/9d8e7f60-1a2b-4c3d-8e9f-0a1b2c3d4e5f.jsonl"
LEGACY = ".gemini/tmp/shop/chats/session-2026-03-01T09-00-7c1d2e3f.json"
OTHERS = {  # the other agents' real logs: never taken for Gemini CLI's
    "claude-code": FORMATS / "claude-code" / "spotter" / "short.jsonl",
    "codex": FORMATS
    / "codex"
    / "codemie-code"
    / "rollout-2026-01-02T18-39-45-019b7f94-51b4-7593-922e-ba12b5b73b52.jsonl",
}


def lay_out(tmp: Path) -> dict[str, Path]:
    """A home with the fixtures where the CLI writes them, and the two projects they are about:
    `rates` named by the `.project_root` marker the CLI writes, `shop` (an older hash-named
    session) only by `~/.gemini/projects.json`."""
    home, rates, shop = tmp / "home", tmp / "work" / "rates", tmp / "work" / "shop"
    for p in (rates, shop):
        (p / ".git").mkdir(parents=True)
    copy_home(FIXTURES, home, {"@PROJECT@": str(rates), "@SHOP@": str(shop)})
    gem = home / ".gemini"
    (gem / "tmp" / "rates" / ".project_root").write_text(str(rates))
    (gem / "projects.json").write_text(json.dumps({"projects": {str(shop): "shop"}}))
    (gem / "tmp" / "rates" / "logs.json").write_text("[]")  # the prompt log: not a session
    return {
        "home": home,
        "rates": rates,
        "shop": shop,
        "session": home / SESSION,
        "subagent": home / SUBAGENT,
        "legacy": home / LEGACY,
    }


# -- 1. real samples -------------------------------------------------------------------------


def test_real_samples_if_any_parse_cleanly() -> None:
    folder = FORMATS / "gemini-cli"
    if not folder.is_dir():
        pytest.skip("../shared/formats/gemini-cli is not beside the repo")
    samples = [p for p in folder.rglob("*") if p.suffix in (".jsonl", ".json")]
    if not samples:
        pytest.skip("no real Gemini CLI session under a permissive licence (NOTES.md)")
    for p in samples:  # pragma: no cover - none yet
        events, state, bad = parse_all(GEMINI, p)
        assert bad == 0 and events and state.session_id, p


# -- 2. every documented record kind ---------------------------------------------------------


def test_every_record_kind_becomes_the_right_event(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    parsed, state, bad = parse_all(GEMINI, h["session"])
    assert bad == 0
    assert state.session_id == SID and state.cwd == str(h["rates"])  # from .project_root
    assert {p.session_id for p in parsed} == {SID}
    ev = [p.event for p in parsed]
    c = state.counts
    assert c["tool_calls"] == 9 and c["tool:run_shell_command"] == 7
    assert c["tool:replace"] == 1 and c["tool:write_file"] == 1
    assert c["errors"] == 4  # two exit 1, one declined, one interrupted
    assert (c["rejections"], c["interrupts"], c["rewinds"]) == (1, 1, 1)
    assert (c["checkpoints"], c["compact_summaries"]) == (1, 1)
    assert (c["notices"], c["error_messages"], c["pending_results"]) == (2, 1, 1)

    said = [e.text for e in ev if e.role == "user"]
    assert said == [
        "Fetch the exchange rates over HTTP in rates.py and print them",  # hook context cut
        "still the same SSL error",
        "Add lodash to @package.json",  # what was typed, not the @file inclusion
        "no, use pnpm add lodash instead, we never use npm in this repo",
        "now write the docs for the rates endpoint",
        "run the tests please",
    ]
    # the message written again as its call finished: one text, one call, one result
    assert sum(e.text == "Let me run the script to see what it prints." for e in ev) == 1
    runs = [e for e in ev if e.kind == "tool_result" and e.command == "python rates.py"]
    assert [(r.exit_code, r.is_error) for r in runs] == [(1, True), (1, True), (0, False)]
    assert "SSLError" in (runs[0].text or "")
    # what the command printed, out of the frame the CLI puts around it for the model
    assert (runs[0].text or "").startswith("Traceback") and "Exit Code" not in (runs[0].text or "")
    assert runs[2].text == "USD/EUR 0.92"
    (declined,) = [e for e in ev if e.kind == "tool_result" and e.rejected]
    assert declined.command == "npm install lodash" and declined.is_error
    edit = next(e for e in ev if e.kind == "tool_call" and e.tool_name == "replace")
    assert edit.file == str(h["rates"] / "rates.py") and edit.raw_snippet == "import httpx"
    assert edit.summary == "replace rates.py"
    stopped = [e for e in ev if e.role == "system" and e.summary and "interrupted" in e.summary]
    assert len(stopped) == 1
    (api_error,) = [e for e in ev if e.role == "system" and e.is_error]
    assert api_error.summary and api_error.summary.startswith("Gemini CLI error: [API Error: 429")
    (rewound,) = [e for e in ev if e.summary and "rewound" in e.summary]
    assert rewound.role == "system"
    (summary,) = [e for e in ev if e.origin == "compaction"]
    assert summary.text and summary.text.startswith("<state_snapshot>")
    assert not any(e.text == "Got it. Thanks for the additional context!" for e in ev)
    passed = next(e for e in ev if e.kind == "tool_result" and e.command == "pytest -q")
    assert passed.exit_code == 0


def test_a_shell_runs_frame_of_any_version_is_taken_off_its_output(tmp_path: Path) -> None:
    """`shell.ts` has framed the output differently over time; the frame's `Error: (none)` was
    once taken for the error the run showed (and its lesson was lost)."""

    def result_of(output: str, status: str = "success") -> tuple[str | None, int | None]:
        state = ParseState()
        GEMINI.parse({"sessionId": "s", "projectHash": "h", "directories": ["/w"]}, state)
        call = {
            "id": "c",
            "name": "run_shell_command",
            "args": {"command": "python rates.py"},
            "status": status,
            "result": [{"functionResponse": {"id": "c", "response": {"output": output}}}],
        }
        msg = {"id": "g", "timestamp": "2026-05-02T10:00:00Z", "type": "gemini", "content": ""}
        (_, res) = [p.event for p in GEMINI.parse({**msg, "toolCalls": [call]}, state)]
        return res.text, res.exit_code

    old = (
        "Command: python rates.py\nDirectory: (root)\nOutput: Traceback\nSSLError: no"
        "\nError: (none)\nExit Code: 1\nSignal: (none)\nBackground PIDs: (none)"
        "\nProcess Group PGID: 7"
    )
    assert result_of(old) == ("Traceback\nSSLError: no", 1)
    assert result_of("Output: (empty)\nProcess Group PGID: 8") == ("", 0)
    failed = "Output: (empty)\nError: spawn /bin/bash ENOENT\nExit Code: 127"
    assert result_of(failed, "error") == ("Error: spawn /bin/bash ENOENT", 127)
    assert result_of("Command moved to background (PID: 9).") == (
        "Command moved to background (PID: 9).",
        None,
    )


def test_the_harness_session_reads_back_as_scripted(tmp_path: Path) -> None:
    """harness.agent_logs.gemini (the cross-agent tests and tools/bench_formats.py) writes
    what this adapter reads, where Gemini CLI keeps it, the project findable."""
    repo = tmp_path / "work" / "Rates App"
    (repo / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    start = datetime(2026, 5, 4, 9, 0, tzinfo=UTC)
    s = agent_logs.session("gemini", repo, start)
    s.user("fetch the rates").run("python rates.py", "SSLError", 1)
    s.edit("rates.py", "import requests", "import httpx").run("python rates.py", "0.92").say("ok")
    path = s.write(home, timedelta(hours=2))
    other = agent_logs.session("gemini", tmp_path / "elsewhere" / "rates app", start)
    other_path = other.user("hello").write(home)
    assert path.parent.parent.name == "rates-app" and other_path.parent.parent.name == "rates-app-1"
    place = Place("linux", str(home), {})
    assert sorted(tin.find(tin.default_roots(place))) == sorted([str(path), str(other_path)])
    assert tin.detect(str(path)) == "gemini"
    parsed, state, bad = parse_all(GEMINI, path)
    assert bad == 0 and state.cwd == str(repo)
    assert [(p.event.kind, p.event.exit_code, p.event.text) for p in parsed] == [
        ("message", None, "fetch the rates"),
        ("tool_call", None, None),
        ("tool_result", 1, "SSLError"),
        ("tool_call", None, None),
        ("tool_result", None, f"Successfully modified file: {repo / 'rates.py'} (1 replacements)."),
        ("tool_call", None, None),
        ("tool_result", 0, "0.92"),
        ("message", None, "ok"),
    ]
    assert parsed[0].event.ts == "2026-05-04T09:00:06.000Z"
    (path.parent.parent / ".project_root").unlink()  # the registry alone names it too
    assert parse_all(GEMINI, path)[1].cwd == str(repo)


def test_a_subagent_counts_for_its_parent_and_its_prompt_is_not_the_users(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    parsed, state, bad = parse_all(GEMINI, h["subagent"])
    assert bad == 0 and {p.session_id for p in parsed} == {SID}
    assert state.cwd == str(h["rates"]) and state.counts["subagent_prompts"] == 1
    assert [p.event.kind for p in parsed] == ["tool_call", "tool_result"]


def test_legacy_document_and_its_held_back_last_message(app, tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    sq = app.squirrel
    doc = h["legacy"]
    assert tin.detect(str(doc)) == "gemini"
    rep = tin.ingest_file(sq.ingest_deps, str(doc), tin.Options(session_end=False))
    assert rep.malformed == 0 and rep.session_id == "7c1d2e3f-0a9b-4c8d-9e7f-6a5b4c3d2e1f"
    assert rep.project_id is not None and rep.project_id.startswith("shop-")  # projects.json
    assert rep.counts["errors"] == 2 and rep.counts["tool:replace"] == 1
    # the last `gemini` message may still be merged into: read only at the session's end
    assert rep.lines == 8 and rep.events == 13
    rep = tin.ingest_file(sq.ingest_deps, str(doc), tin.Options(session_end=True))
    assert (rep.lines, rep.events) == (0, 1) and rep.ended
    ep = sq.get_episode(rep.learned()[-1].episode_id).episode
    assert ep.events[-1]["summary"] == "Glad it works now."

    # the CLI rewrites it whole: lastUpdated changes, a message is added after the held one
    data = json.loads(doc.read_text())
    data["lastUpdated"] = "2026-03-01T09:09:30.000Z"
    data["messages"].append(
        {"id": "lu3", "timestamp": data["lastUpdated"], "type": "user", "content": "bye"}
    )
    doc.write_text(json.dumps(data, indent=2))
    rep = tin.ingest_file(sq.ingest_deps, str(doc), tin.Options(session_end=True))
    assert not rep.rewritten and (rep.lines, rep.events) == (2, 1)  # the held one, once
    assert tin.ingest_file(sq.ingest_deps, str(doc), tin.Options(session_end=True)).lines == 0

    # resumed by a newer CLI: the session moves to `session-....jsonl` beside it
    Path(str(doc) + "l").write_text("")
    assert list(GEMINI.records(str(doc), 0, 1 << 20)) == []


def test_a_resumed_legacy_document_gives_only_its_new_messages(app, tmp_path: Path) -> None:
    # resuming a `.json` session, the CLI writes it again whole as `.jsonl` beside it: a new
    # cursor, the same session; what the `.json` held was learned from it already
    h = lay_out(tmp_path)
    sq = app.squirrel
    doc = h["legacy"]
    rep = tin.ingest_file(sq.ingest_deps, str(doc), tin.Options(session_end=True))
    assert rep.events == 14 and rep.ended
    data = json.loads(doc.read_text())
    new = {"id": "n1", "timestamp": "2026-03-02T10:00:00.000Z", "type": "user", "content": "more"}
    meta = {k: v for k, v in data.items() if k != "messages"}
    lines = [meta, *data["messages"], new]
    Path(str(doc) + "l").write_text("".join(json.dumps(r) + "\n" for r in lines))
    rep = tin.ingest_file(sq.ingest_deps, str(doc) + "l", tin.Options(session_end=False))
    assert rep.session_id == data["sessionId"] and rep.events == 1
    assert rep.counts["read_in_legacy_document"] == len(data["messages"])
    parsed, state, _ = parse_all(GEMINI, Path(str(doc) + "l"), finish=False)
    assert [p.event.text for p in parsed] == ["more"] and "legacy" not in state.extra


def test_identity_of_a_document_is_its_session(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    doc = h["legacy"]
    before = GEMINI.identity(str(doc), 0)
    data = json.loads(doc.read_text())
    data["lastUpdated"] = "2027-01-01T00:00:00.000Z"
    doc.write_text(json.dumps(data))
    assert GEMINI.identity(str(doc)) == before and before.size == 4096
    data["sessionId"] = "another"
    doc.write_text(json.dumps(data))
    assert GEMINI.identity(str(doc)) != before


# -- 2b. the cursor: unknown kinds, a cut line, again, appended, restarted ---------------------


def test_cursor_unknown_records_partial_lines_and_a_restart(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    lines = h["session"].read_bytes().splitlines(keepends=True)
    whole_events = len(parse_all(GEMINI, h["session"], finish=False)[0])
    log = tmp_path / "logs" / "chats" / h["session"].name
    log.parent.mkdir(parents=True)
    unknown = [
        b'{"$unset": ["summary"]}\n',  # a record kind no version wrote: counted, skipped
        b'{"id": "x1", "timestamp": "2026-05-02T10:15:06.000Z", "type": "hologram"}\n',
        b"{not json\n",
    ]
    # written up to the pending tool call (its result comes later), the next line cut
    log.write_bytes(b"".join(lines[:1] + unknown + lines[1:4]) + lines[4][:50])
    with running_app(tmp_path) as app:
        sq = app.squirrel
        # (a log outside Gemini's folders names no project until one is given)
        bare = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
        assert bare.skipped_reason == tin.NO_PROJECT and bare.lines == 0
        here = tin.Options(session_end=False, project=sq.project(None, str(tmp_path)))
        rep = tin.ingest_file(sq.ingest_deps, str(log), here)
        assert rep.agent == "gemini" and rep.lines == 7 and rep.malformed == 1
        assert rep.counts["skipped"] == 2 and rep.counts["pending_results"] == 1
        first = rep.events
        assert tin.ingest_file(sq.ingest_deps, str(log), here).lines == 0
    # the database opened again (a restart): the rest is read from the stored cursor and state
    with running_app(tmp_path) as app:
        sq = app.squirrel
        with open(log, "ab") as f:
            f.write(lines[4][50:] + b"".join(lines[5:]))
        rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
        assert rep.lines == len(lines) - 4 and not rep.rewritten
        assert first + rep.events == whole_events
        assert rep.counts["tool_calls"] == 9 and rep.counts["errors"] == 4
        appended = {
            "id": "u7",
            "timestamp": "2026-05-02T10:21:00.000Z",
            "type": "user",
            "content": [{"text": "one more thing: keep the rates cached"}],
        }
        with open(log, "a") as f:
            f.write(json.dumps(appended) + "\n")
        rep = tin.ingest_file(sq.ingest_deps, str(log), tin.Options(session_end=False))
        assert (rep.lines, rep.events) == (1, 1)


# -- 3. detection ----------------------------------------------------------------------------


def test_detect_names_gemini_for_its_logs_only(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    for key in ("session", "subagent", "legacy"):
        assert tin.detect(str(h[key])) == "gemini", key
    assert not GEMINI.claims(str(h["home"] / ".gemini" / "tmp" / "rates" / "logs.json"))
    for agent, path in OTHERS.items():
        if not path.exists():
            pytest.skip("../shared/formats (the real session logs) is not beside the repo")
        assert tin.detect(str(path)) == agent
        first = json.loads(path.read_text().splitlines()[0])
        assert not GEMINI.sniff(first)


# -- 4. default locations --------------------------------------------------------------------


def test_roots_per_platform_and_find_in_a_fake_home(tmp_path: Path) -> None:
    assert GEMINI.roots(Place("linux", "/home/u", {})) == ["/home/u/.gemini/tmp"]
    assert GEMINI.roots(Place("darwin", "/Users/u", {})) == ["/Users/u/.gemini/tmp"]
    win = GEMINI.roots(Place("win32", r"C:\Users\u", {"APPDATA": r"C:\Users\u\AppData\Roaming"}))
    assert win == [os.path.join(r"C:\Users\u", ".gemini", "tmp")]
    moved = GEMINI.roots(Place("linux", "/home/u", {"GEMINI_CLI_HOME": "/srv/profile"}))
    assert moved == ["/srv/profile/.gemini/tmp"]

    h = lay_out(tmp_path)
    place = Place("linux", str(h["home"]), {})
    assert tin.default_roots(place) == [str(h["home"] / ".gemini" / "tmp")]
    found = {Path(p).relative_to(h["home"]).as_posix() for p in tin.find(tin.default_roots(place))}
    assert found == {SESSION, SUBAGENT, LEGACY}


# -- 5. end to end: sqrl ingest, JSON-RPC, MCP -----------------------------------------------


@pytest.mark.e2e
def test_sqrl_ingest_rpc_and_mcp_give_back_what_gemini_sessions_taught(tmp_path: Path) -> None:
    h = lay_out(tmp_path)
    db = tmp_path / "data" / "memory.db"
    env = agent_env(h["home"], db)

    out = sqrl(env, "ingest", str(h["session"]), str(h["subagent"]), "--end", "--json")
    assert out.returncode == 0, out.stderr
    reps = {Path(r["path"]).name: r for r in json.loads(out.stdout)}
    main = reps[h["session"].name]
    assert main["agent"] == "gemini" and main["malformed"] == 0 and main["session_id"] == SID
    assert main["counts"]["errors"] == 4 and main["session_ended"]
    assert reps[h["subagent"].name]["session_id"] == SID
    episodes = [e for r in reps.values() for e in r["episodes"]]
    assert episodes and any(e["outcome"] == "written" for e in episodes)

    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        got = srv.call(
            "squirrel/ingest_transcript",
            {"path": str(h["legacy"]), "agent": "gemini", "session_end": True},
        )
        assert got["agent"] == "gemini" and got["malformed"] == 0 and got["session_ended"]
        assert got["counts"]["errors"] == 2 and got["episodes"]
        again = srv.call("squirrel/ingest_transcript", {"path": str(h["legacy"])})
        assert again["lines"] == 0 and again["events"] == 0
        rates = srv.call(
            "squirrel/memories/list",
            {"project_root": str(h["rates"]), "include_global": False, "limit": 50},
        )["memories"]
        texts = [m["text"] for m in rates]
        assert any("httpx" in t for t in texts), texts  # requests failed, httpx worked
        assert any("pnpm" in t for t in texts), texts  # the user's correction
        assert not any("Fridays" in t for t in texts)  # injected context is never learned
        shop = srv.call(
            "squirrel/memories/list",
            {"project_root": str(h["shop"]), "include_global": False, "limit": 50},
        )["memories"]
        assert any("pytest" in m["text"] for m in shop), [m["text"] for m in shop]
        status = srv.call("squirrel/status")
        assert status["transcripts"]["gemini"]["files"] == 3

    data = _mcp_context(env, h["rates"], "call the HTTP API for the rates")
    assert "httpx" in data["context_prompt"], data
    data = _mcp_context(env, h["rates"], "install lodash for the dashboard with npm")
    assert "pnpm" in data["context_prompt"], data


def test_sha_of_a_path_names_an_old_hash_directory(tmp_path: Path) -> None:
    """Before slugs, the CLI named a project's directory by sha256 of its path (as projectHash
    still is): such a session finds its project through the registry's paths."""
    h = lay_out(tmp_path)
    digest = hashlib.sha256(str(h["shop"]).encode()).hexdigest()
    old = h["home"] / ".gemini" / "tmp" / digest / "chats"
    old.mkdir(parents=True)
    doc = json.loads(h["legacy"].read_text())
    doc["projectHash"] = digest
    (old / h["legacy"].name).write_text(json.dumps(doc))
    shutil.rmtree(h["legacy"].parent.parent)
    _, state, _ = parse_all(GEMINI, old / h["legacy"].name)
    assert state.cwd == str(h["shop"])
