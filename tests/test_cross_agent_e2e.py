"""Memories follow the user across agents: a session in any agent and one in Claude Code on the
same repository feed the same project's memories, and each agent reads what the other taught."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from harness import agent_logs
from harness.commands import agent_env, run_module, sqrl
from harness.rpc_client import Server
from reos_memory.squirrel.ingest import AGENT_NAMES
from reos_memory.squirrel.ingest import ingest as tin
from tests.agent_fixtures import app
from tests.test_agents_e2e import _mcp_context
from tests.test_squirrel_e2e import SSL_ERROR

pytestmark = pytest.mark.e2e
__all__ = ["app"]  # a fixture, used by its name

OLD = timedelta(hours=3)
OTHERS = [a for a in AGENT_NAMES if a not in ("auto", "claude-code")]


def ssl_lesson(s: agent_logs.Session) -> None:
    """requests fails certificate checks three times; httpx works: a lesson to keep."""
    s.user("Fetch the exchange rates over HTTP in rates.py and print them")
    for i in range(3):
        s.run("python rates.py", SSL_ERROR, 1)
        if i == 1:
            s.user("ugh, still the same SSL error")
    s.user("WTF this is the third time!!! stop retrying the same thing")
    s.edit("rates.py", "import requests", "import httpx")
    s.run("python rates.py", "USD/EUR 0.92", 0)
    s.say("Switched to httpx; the rates print now.")


def pnpm_rule(s: agent_logs.Session) -> None:
    """The user's standing rule about the package manager."""
    s.user("Add the lodash dependency to the dashboard")
    s.run("npm install lodash", "npm ERR! code ERESOLVE", 1)
    s.user("no, use pnpm add lodash instead. From now on use pnpm, never npm.")
    s.run("pnpm add lodash", "+ lodash 4.17.21", 0)
    s.say("Understood: pnpm from now on.")


@pytest.mark.parametrize("agent", OTHERS)
def test_a_session_in_another_agent_and_one_in_claude_code_share_the_project(
    tmp_path: Path, agent: str
) -> None:
    home, repo = tmp_path / "home", tmp_path / "work" / "rates"
    (repo / ".git").mkdir(parents=True)
    db = tmp_path / "memory.db"
    env = agent_env(home, db)
    start = datetime.now(UTC) - timedelta(hours=5)

    other = agent_logs.session(agent, repo, start)
    ssl_lesson(other)
    claude = agent_logs.session("claude-code", repo, start + timedelta(hours=1))
    pnpm_rule(claude)
    files = [str(other.write(home, OLD)), str(claude.write(home, OLD))]

    r = sqrl(env, "ingest", "--end", "--json", *files)
    assert r.returncode == 0, r.stderr
    reps = json.loads(r.stdout)
    assert {x["agent"] for x in reps} == {agent, "claude-code"}
    assert all(x["malformed"] == 0 and not x["skipped_reason"] for x in reps), reps
    assert len({x["project_id"] for x in reps}) == 1  # one repository, one project

    # Claude Code's hook gives the lesson learned in the other agent's session ...
    hook_in = {
        "hook_event_name": "SessionStart",
        "session_id": "a-new-claude-session",
        "source": "startup",
        "cwd": str(repo),
        "transcript_path": str(tmp_path / "none.jsonl"),
    }
    out = run_module(env, "reos_memory", "hook", "claude-code", stdin=json.dumps(hook_in))
    assert out.returncode == 0, out.stderr
    extra = json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]
    assert "httpx" in extra, extra
    # ... and an MCP client in the same repository gets both agents' lessons
    ctx = _mcp_context(env, repo, "call the HTTP API for the rates and add a dependency")
    assert "httpx" in ctx["context_prompt"] and "pnpm" in ctx["context_prompt"], ctx


def test_sqrl_ingest_and_watch_find_every_agents_logs_where_the_agent_keeps_them(
    tmp_path: Path,
) -> None:
    """No path given: each agent's logs are found in its own places under HOME (and Aider's in
    the repositories the database knows), every one read by its own adapter."""
    home, repo = tmp_path / "home", tmp_path / "work" / "rates"
    (repo / ".git").mkdir(parents=True)
    env = agent_env(home, tmp_path / "memory.db")
    start = datetime.now(UTC) - timedelta(hours=6)
    agents = [a for a in AGENT_NAMES if a != "auto"]
    for i, agent in enumerate(agents):
        s = agent_logs.session(agent, repo, start + timedelta(minutes=20 * i))
        s.user(f"Say hello from {agent}").say(f"Hello from {agent}.")
        s.write(home, OLD)

    r = sqrl(env, "ingest", "--end", "--json")
    assert r.returncode == 0, r.stderr
    reps = json.loads(r.stdout)
    first = {x["agent"] for x in reps if x["events"]}
    # the repository became known through the others' sessions; Aider's history lies in it.
    # A Windsurf transcript names no directory (windsurf/NOTES.md): its project is the first
    # path a step names, and a conversation that names none (this one) has no project
    assert first == set(agents) - {"aider", "windsurf"}, r.stdout
    (ws,) = [x for x in reps if x["agent"] == "windsurf"]
    assert ws["lines"] == 2 and ws["project_id"] is None and ws["malformed"] == 0
    r = sqrl(env, "watch", "--once", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["files_read"] >= 1
    with Server(tmp_path / "memory.db", env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        seen = srv.call("squirrel/status")["transcripts"]
    assert set(seen) == set(agents), seen


@pytest.mark.parametrize("agent", [a for a in AGENT_NAMES if a != "auto"])
def test_no_agent_relearns_the_context_it_was_given(app, tmp_path: Path, agent: str) -> None:
    """Context an agent was given shows up in its own log (an MCP `get_task_context` result, a
    command's output): whatever the format, Squirrel's block is stripped before anything of
    the event is stored."""
    home, repo = tmp_path / "home", tmp_path / "work" / "rates"
    (repo / ".git").mkdir(parents=True)
    s = agent_logs.session(agent, repo, datetime.now(UTC) - timedelta(hours=5))
    block = (
        '<squirrel-context id="ctx_0123456789">\n'
        "Memories for this task:\n"
        "- Use zeepclient17 for the rates API; requests fails SSL here.\n"
        "</squirrel-context>"
    )
    s.user("Fetch the exchange rates over HTTP in rates.py")
    s.run("reos-memory context 'fetch the rates'", block, 0)
    s.say("I will use what the memories say.")
    log = s.write(home, OLD)
    rep = tin.ingest_file(app.squirrel.ingest_deps, str(log), tin.Options(session_end=True))
    assert rep.agent == agent and rep.malformed == 0
    stored = app.squirrel.db.read(
        lambda c: (
            [r[0] for r in c.execute("SELECT events_json FROM episodes")]
            + [r[0] for r in c.execute("SELECT event_json FROM squirrel_events")]
        )
    )
    assert not any("zeepclient17" in s for s in stored), stored
