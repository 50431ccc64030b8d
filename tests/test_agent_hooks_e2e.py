"""`reos-memory hook <tool>` for Cursor, Gemini CLI, Windsurf and VS Code Copilot, as each tool
runs it: real processes, the warm service they share, the detached worker, and each tool's
answer checked against a JSON Schema of what that tool accepts."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from harness import agent_logs
from harness.agent_logs import cursor as cursor_log
from harness.commands import agent_env, run_module, sqrl
from harness.hook_payloads import EVENTS, cursor_tool_runs, payload
from harness.processes import hook_pids
from reos_memory.cli.reos import HOOK_TOOLS
from reos_memory.config import load_config
from reos_memory.interfaces.agent_hooks import queue
from reos_memory.interfaces.agent_hooks.dialects import DIALECTS, TOOLS, Call
from reos_memory.squirrel.ingest import cursor_sidecar
from tests.test_agents_e2e import _mcp_context
from tests.test_cross_agent_e2e import ssl_lesson

pytestmark = pytest.mark.e2e

NEW_TOOLS = ("cursor", "gemini", "windsurf", "copilot")
# which calls each tool lets a hook put context into (the table in agent_hooks/dialects.py):
# Cursor only at its session start, Windsurf never (its hooks only deliver transcripts)
START_CONTEXT = {"cursor", "gemini", "copilot"}
PROMPT_CONTEXT = {"gemini", "copilot"}
ASK = "can we deploy on Friday"


def _hook_specific(event: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            "hookSpecificOutput": {
                "type": "object",
                "properties": {
                    "hookEventName": {"const": event},
                    "additionalContext": {"type": "string", "minLength": 1},
                },
                "required": ["hookEventName", "additionalContext"],
                "additionalProperties": False,
            }
        },
        "required": ["hookSpecificOutput"],
        "additionalProperties": False,
    }


# What each tool accepts on stdout for the calls that carry context:
# Cursor sessionStart: {env?, additional_context?, continue?, user_message?} (cursor.com/docs/
# agent/hooks); Gemini CLI SessionStart/BeforeAgent: hookSpecificOutput.additionalContext
# (docs/hooks/reference.md); VS Code Copilot SessionStart/UserPromptSubmit: hookSpecificOutput
# {hookEventName, additionalContext} (chatHookService.ts).
SCHEMAS: dict[tuple[str, str], dict[str, Any]] = {
    ("cursor", "session_start"): {
        "type": "object",
        "properties": {"additional_context": {"type": "string", "minLength": 1}},
        "required": ["additional_context"],
        "additionalProperties": False,
    },
    ("gemini", "session_start"): _hook_specific("SessionStart"),
    ("gemini", "prompt"): _hook_specific("BeforeAgent"),
    ("copilot", "session_start"): _hook_specific("SessionStart"),
    ("copilot", "prompt"): _hook_specific("UserPromptSubmit"),
}


def _context(tool: str, kind: str, out: str) -> str:
    """The context in a tool's answer, once the answer is checked against its schema."""
    got = json.loads(out)
    jsonschema.validate(got, SCHEMAS[(tool, kind)])
    text = got["additional_context"] if tool == "cursor" else got["hookSpecificOutput"]
    text = text if isinstance(text, str) else text["additionalContext"]
    assert text.startswith('<squirrel-context id="'), text  # ingestion strips it: never relearned
    return text


class Project:
    """A database with two memories of one project, and the hook run as each tool runs it."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.db = tmp / "data" / "memory.db"
        self.repo = tmp / "repo"
        (self.repo / ".git").mkdir(parents=True)
        self.env = agent_env(tmp / "home", self.db, REOS_MEMORY_HOOK_SERVICE_IDLE_S="60")
        for args in (
            ("--kind", "guard", "--avoid", "Never deploy on Fridays."),
            ("--kind", "preference", "Use pnpm, never npm, in this repository."),
        ):
            r = sqrl(self.env, "add", *args, "--project-root", str(self.repo))
            assert r.returncode == 0, r.stderr

    def hook(self, tool: str, stdin: str | dict[str, Any]) -> str:
        """One hook process as the tool runs it: exit 0 always, stdout returned."""
        text = stdin if isinstance(stdin, str) else json.dumps(stdin)
        r = run_module(self.env, "reos_memory", "hook", tool, "--db", str(self.db), stdin=text)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def call(self, tool: str, kind: str, session: str, **kw: Any) -> str:
        return self.hook(tool, payload(tool, kind, session, str(self.repo), **kw))

    def log(self) -> str:
        path = Path(str(self.db) + ".hook.log")
        return path.read_text() if path.exists() else ""


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Project]:
    p = Project(tmp_path_factory.mktemp("agent-hooks"))
    yield p
    for pid in hook_pids(p.db, "--serve"):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and hook_pids(p.db, "--serve"):
        time.sleep(0.1)
    assert not hook_pids(p.db, "--serve"), "the warm service outlived SIGTERM"


def test_the_cli_offers_every_dialect() -> None:
    assert HOOK_TOOLS == TOOLS
    assert {d.agent for d in DIALECTS.values()} == set(TOOLS)


@pytest.mark.parametrize("tool", NEW_TOOLS)
def test_session_start_and_prompts_give_context_in_the_tools_format(
    project: Project, tool: str
) -> None:
    # a session start in the project: its memories, in the answer the tool reads
    if EVENTS[tool]["session_start"] is not None:
        out = project.call(tool, "session_start", f"{tool}-s1")
        if tool in START_CONTEXT:
            text = _context(tool, "session_start", out)
            assert "Fridays" in text and "pnpm" in text
        else:
            assert out == ""
    if tool not in PROMPT_CONTEXT:
        # the tool cannot take context for a prompt: the hook says nothing (context for a
        # prompt comes through the MCP server)
        assert project.call(tool, "prompt", f"{tool}-s2", prompt=ASK) == ""
        return
    # a prompt in a new session: the memory it is about; the same again: nothing new to say
    assert "Fridays" in _context(
        tool, "prompt", project.call(tool, "prompt", f"{tool}-s2", prompt=ASK)
    )
    assert project.call(tool, "prompt", f"{tool}-s2", prompt="deploy on Friday then?") == ""
    # the session that was given it at its start is not given it again for a prompt
    assert project.call(tool, "prompt", f"{tool}-s1", prompt=ASK) == ""
    # an unrelated prompt: nothing similar enough, nothing printed
    assert project.call(tool, "prompt", f"{tool}-s3", prompt="rename the basket colours") == ""
    # answered by the warm service, which took every tool's call
    assert " listens on " in project.log() and "declined" not in project.log()


@pytest.mark.parametrize("tool", NEW_TOOLS)
def test_garbage_never_breaks_the_agent(project: Project, tool: str) -> None:
    bad = ["", "{not json", "[]", "null", '"SessionStart"', json.dumps({"x": 1}), "{" * 5000]
    event_key = "agent_action_name" if tool == "windsurf" else "hook_event_name"
    for kind in ("session_start", "prompt", "ingest"):
        event = EVENTS[tool][kind]
        if event is not None:  # the event with none of its fields, or a field of the wrong type
            bad += [json.dumps({event_key: event}), json.dumps({event_key: event, "cwd": 7})]
    good = payload(tool, "prompt", "g", str(project.repo), prompt=ASK)
    bad.append(json.dumps({**good, "prompt": ["x"]}))
    bad.append(json.dumps({**good, "padding": "x" * (5 << 20)}))  # past the 4 MiB input cap
    for stdin in bad:
        assert project.hook(tool, stdin) == "", stdin
    assert hook_pids(project.db, "--worker") == []


def _cursor_of(db: Path, path: Path) -> tuple[str, int, int, str] | None:
    """The transcript's cursor: agent, offset, ended, parse state."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        row = con.execute(
            "SELECT agent, offset, ended, state_json FROM transcript_cursors WHERE path = ?",
            (str(path),),
        ).fetchone()
    finally:
        con.close()
    return None if row is None else (row[0], row[1], row[2], row[3])


def _drained(project: Project) -> None:
    """Wait for the queue to empty and its worker to exit."""
    q = Path(str(project.db) + ".hook-queue")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (
        any(q.glob("*.json")) or any(q.glob("*.taken")) or hook_pids(project.db, "--worker")
    ):
        time.sleep(0.1)
    assert not list(q.glob("*.json")) and not list(q.glob("*.taken")), "work left in the queue"
    assert hook_pids(project.db, "--worker") == [], "the worker outlived its work"


@pytest.mark.parametrize("tool", NEW_TOOLS)
def test_a_session_in_the_tools_own_log_is_learned_through_its_hook_and_given_back(
    tmp_path: Path, tool: str
) -> None:
    """The tool's own log, handed over by its hook, goes through the worker into episodes and
    memories, and the tool's next session gets them back: through its session-start hook where
    it takes context, else through the MCP server."""
    project = Project(tmp_path)
    s = agent_logs.session(tool, project.repo, datetime.now(UTC) - timedelta(hours=5))
    ssl_lesson(s)
    transcript = s.write(project.tmp / "home", timedelta(hours=3)).resolve()
    kinds = ["ingest"] + (["end"] if EVENTS[tool]["end"] is not None else [])
    for kind in kinds:
        assert project.call(tool, kind, f"{tool}-done", transcript=str(transcript)) == ""
    _drained(project)
    got = _cursor_of(project.db, transcript)
    assert got is not None, project.log()
    agent, _, ended, _ = got
    # read by the tool's own adapter; ended by the end hook, or (a tool without one) by the
    # worker once the log has been idle past session_idle_minutes, as this one has
    assert (agent, ended) == (tool, 1), project.log()
    if tool in START_CONTEXT:
        text = _context(tool, "session_start", project.call(tool, "session_start", "next"))
    else:
        text = _mcp_context(project.env, project.repo, "fetch the rates over HTTP")[
            "context_prompt"
        ]
    assert "httpx" in text, text


def test_a_request_names_the_tools_adapter_and_the_worker_its_tool(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """In-process: what the queue holds and the command the worker is started with."""
    config = load_config(None, {"db": str(tmp_path / "memory.db")})
    for tool in NEW_TOOLS:
        call = Call(tool, "ingest", "stop", f"s-{tool}", f"/t/{tool}.jsonl", "/repo", None)
        req = json.loads(queue.enqueue(config, call, end=False).read_text())
        assert req == {"transcript": f"/t/{tool}.jsonl", "end": False, "agent": tool}
    started: list[list[str]] = []
    monkeypatch.setattr(subprocess, "Popen", lambda cmd, **kw: started.append(cmd))
    queue.spawn_worker(config, "gemini")
    assert started[0][3:6] == ["hook", "gemini", "--worker"]


def test_dialects_read_each_tools_fields(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: where each tool keeps the project, the session and the transcript."""
    repo = "/home/dev/work/shop"
    # the Cursor CLI sends a null transcript_path on stop: the file is found where Cursor keeps
    # it, flat or nested under ~/.cursor/projects/<slug>/agent-transcripts/
    monkeypatch.setenv("HOME", str(tmp_path))
    folder = tmp_path / ".cursor" / "projects" / "home-dev-work-shop" / "agent-transcripts"
    nested = folder / "c1" / "c1.jsonl"
    nested.parent.mkdir(parents=True)
    nested.write_text("{}\n")
    got = DIALECTS["cursor"].read(payload("cursor", "ingest", "c1", repo))
    assert got is not None and (got.cwd, got.session, got.transcript) == (repo, "c1", str(nested))
    gone = DIALECTS["cursor"].read(payload("cursor", "end", "c2", repo))
    assert gone is not None and gone.kind == "end" and gone.transcript is None
    assert DIALECTS["cursor"].read(payload("cursor", "prompt", "c1", repo, prompt=ASK)) is None
    # Windsurf: the transcript inside tool_info, the trajectory as the session, no project
    ws = DIALECTS["windsurf"].read(payload("windsurf", "ingest", "t1", repo, transcript="/t.jsonl"))
    assert ws is not None and (ws.kind, ws.session, ws.transcript, ws.cwd) == (
        "ingest",
        "t1",
        "/t.jsonl",
        None,
    )
    # Copilot: the documented camelCase fields, and the snake_case ones some builds send
    camel = payload("copilot", "prompt", "v1", repo, prompt=ASK)
    snake = {
        "session_id": "v1",
        "hook_event_name": "UserPromptSubmit",
        "cwd": repo,
        "prompt": ASK,
    }
    assert DIALECTS["copilot"].read(camel) == DIALECTS["copilot"].read(snake)
    assert DIALECTS["copilot"].read(snake) == Call(
        "copilot", "prompt", "UserPromptSubmit", "v1", None, repo, ASK
    )


SECRET = "sk-proj-" + "Q7f2Lx9Vb4Nc8Rt1Wm6Zp3Hs5Jd0Gk2Ya8Ue4Io7Pl1Kq9Xw"


def _files_hold(paths: list[Path], text: str) -> bool:
    return any(text.encode() in p.read_bytes() for p in paths if p.is_file())


def test_cursor_tool_results_from_its_hooks_teach_the_lesson_its_transcript_cannot(
    tmp_path: Path,
) -> None:
    """A real-shape Cursor transcript (calls, no results) and the post-tool hook calls Cursor
    makes as the tools run: the results are kept by the hook (redacted, private), the worker
    pairs them with the transcript's calls at stop and session end, and the next session
    starts with the lesson (httpx over requests) that only the results tell."""
    project = Project(tmp_path)
    home = project.tmp / "home"
    s = cursor_log.Session(
        project.repo, datetime.now(UTC) - timedelta(hours=5), conversation="c-ssl", results=False
    )
    ssl_lesson(s)
    s.run("printenv OPENAI_API_KEY", f"OPENAI_API_KEY={SECRET}", 0)
    transcript = s.write(home, timedelta(hours=3)).resolve()
    for p in cursor_tool_runs(s.id, str(project.repo), s.runs, str(transcript)):
        assert project.hook("cursor", p) == ""  # one hook process per call, as Cursor runs it
    log = Path(f"{project.db}.hook-tools") / "cursor" / f"{s.id}.jsonl"
    assert (log.stat().st_mode & 0o777, log.parent.stat().st_mode & 0o777) == (0o600, 0o700)
    assert log.parent.parent.stat().st_mode & 0o777 == 0o700
    assert "CERTIFICATE_VERIFY_FAILED" in log.read_text()
    assert SECRET not in log.read_text() and "[REDACTED" in log.read_text()
    assert not list(transcript.parent.glob("*.hook*"))  # nothing of ours in Cursor's folders

    for kind in ("ingest", "end"):
        assert project.call("cursor", kind, s.id, transcript=str(transcript)) == ""
    _drained(project)
    got = _cursor_of(project.db, transcript)
    assert got is not None and got[:3] == ("cursor", transcript.stat().st_size, 1), project.log()
    counts = json.loads(got[3])["counts"]
    # each run's result once (a shell run is told twice: postToolUse and afterShellExecution)
    assert counts["results_from_hooks"] == len(s.runs) == counts["tool_calls"], counts
    text = _context("cursor", "session_start", project.call("cursor", "session_start", "next"))
    assert "httpx" in text, text
    db_files = [project.db, Path(f"{project.db}-wal")]
    assert not _files_hold(db_files, SECRET), "the secret reached the database"
    assert project.log() == "" or "Traceback" not in project.log(), project.log()


def test_cursor_post_tool_garbage_is_ignored(project: Project) -> None:
    """Bad post-tool payloads: exit 0, nothing printed, nothing kept."""
    good = cursor_tool_runs(
        "g-ok", str(project.repo), [{"name": "Shell", "input": {"command": "ls"}, "output": "a"}]
    )[0]
    bad: list[dict[str, Any] | str] = []
    for event in ("postToolUse", "postToolUseFailure", "afterShellExecution"):
        bad += [
            {"hook_event_name": event},
            {"hook_event_name": event, "conversation_id": 7, "tool_name": "Shell"},
            {"hook_event_name": event, "conversation_id": "../../etc/x", "tool_name": "Shell"},
            {"hook_event_name": event, "conversation_id": ".hidden", "command": "ls"},
            {"hook_event_name": event, "conversation_id": "g1", "tool_name": ["Shell"]},
            {**good, "hook_event_name": event, "conversation_id": None},
            {**good, "hook_event_name": event, "tool_name": 3, "command": {"x": 1}},
        ]
    bad += ["{not json", "[]", json.dumps({**good, "padding": "x" * (5 << 20)})]
    for stdin in bad:
        assert project.hook("cursor", stdin) == "", stdin
    kept = Path(f"{project.db}.hook-tools")
    assert not kept.exists() or not any(kept.rglob("*.jsonl")), list(kept.rglob("*"))
    assert hook_pids(project.db, "--worker") == []


def test_the_cursor_tool_logs_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """In-process: a conversation's log stops growing at its cap, and the queue worker removes
    the logs idle for a week (before it opens anything)."""
    config = load_config(None, {"db": str(tmp_path / "memory.db")})
    root = Path(f"{config.db}.hook-tools")
    run = {"name": "Shell", "input": {"command": "ls"}, "output": "x" * 3000}
    post = cursor_tool_runs("c-big", str(tmp_path), [run])[0]
    monkeypatch.setattr(cursor_sidecar, "MAX_FILE", 5000)
    assert cursor_sidecar.record(root, post) and not cursor_sidecar.record(root, post)
    old, new = root / "cursor" / "c-old.jsonl", root / "cursor" / "c-big.jsonl"
    old.write_text("{}\n")
    week = time.time() - 8 * 86400
    os.utime(old, (week, week))
    assert queue.work(config, lambda *a, **k: pytest.fail("nothing to open")) == 0
    assert not old.exists() and new.exists()


def test_an_input_past_the_cap_is_read_to_its_end(tmp_path: Path) -> None:
    """A payload bigger than the hook reads (a huge tool output) is refused, but the agent's
    write of it never fails with a broken pipe."""
    env = agent_env(tmp_path / "home", tmp_path / "memory.db")
    big = json.dumps(
        {"hook_event_name": "postToolUse", "conversation_id": "c", "tool_output": "x" * (9 << 20)}
    ).encode()
    proc = subprocess.Popen(
        [sys.executable, "-m", "reos_memory", "hook", "cursor"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert proc.stdin is not None
    proc.stdin.write(big)  # raises BrokenPipeError when the hook stopped reading
    proc.stdin.close()
    assert proc.wait(timeout=60) == 0
    assert proc.stdout is not None and proc.stdout.read() == b""
