"""Real agents in and out, end to end: a Claude Code home and a Codex home, `sqrl watch`, the
Claude Code hook, and the MCP server, all on one database."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from harness import processes
from harness.agent_homes import ClaudeSession, CodexSession
from harness.commands import agent_env, run_module, sqrl
from harness.rpc_client import ROOT, SQRL, Server
from tests.test_squirrel_e2e import SSL_ERROR

pytestmark = pytest.mark.e2e

SECRET = "sk-proj-Zq8XwV2mN5tLr7Kp3Hs9Yc1Bd4Fg6Jk0Qe2Wr5Ty8Ui1Op3As"
AWS = "AKIAZ7QW3ERT5YUI8OPA"
OLD = timedelta(hours=3)  # the sessions ended hours ago: idle past session_idle_minutes


def build_homes(tmp: Path) -> dict[str, Any]:
    """Two projects with Claude Code sessions, one with a Codex session."""
    home = tmp / "home"
    rates, shop = tmp / "work" / "rates", tmp / "work" / "shop"
    for p in (rates, shop):
        (p / ".git").mkdir(parents=True)
    claude, codex = home / ".claude", home / ".codex"
    start = datetime.now(UTC) - timedelta(hours=5)

    # session 1 (rates): requests fails on SSL three times, httpx works; a secret in a tool
    # output; a subagent; a compaction; then the user's rule about package managers
    s1 = ClaudeSession(rates, start)
    s1.user("Fetch the exchange rates over HTTP in rates.py and print them")
    s1.bash("env | grep -i key", f"OPENAI_API_KEY={SECRET}\nAWS_ACCESS_KEY_ID={AWS}")
    for i in range(3):
        s1.bash("python rates.py", SSL_ERROR, exit_code=1)
        if i == 1:
            s1.user("ugh, still the same SSL error")
    s1.subagent(
        "Find out why requests fails certificate verification on this machine",
        [("WebFetch", {"url": "https://example.org/ssl", "prompt": "why"}, "outdated certifi")],
    )
    s1.user("WTF this is the third time!!! stop retrying the same thing")
    s1.edit("rates.py", "import requests", "import httpx")
    s1.bash("python rates.py", "USD/EUR 0.92")
    s1.compact("This session is being continued from a previous conversation. Summary: rates.")
    s1.user("great, thanks. From now on use pnpm, never npm.")
    s1.say("Understood: pnpm from now on.")
    f1 = s1.write(claude, age=OLD)

    # session 2 (rates): a rejected tool call and the user's correction
    s2 = ClaudeSession(rates, start + timedelta(hours=1))
    s2.user("Add the lodash dependency to the dashboard")
    s2.bash("npm install lodash", "", rejected=True)
    s2.user("no, use pnpm add lodash instead")
    s2.bash("pnpm add lodash", "+ lodash 4.17.21")
    f2 = s2.write(claude, age=OLD)

    # session 3 (shop): unrelated work
    s3 = ClaudeSession(shop, start + timedelta(hours=2))
    s3.user("Rename the Cart component to Basket")
    s3.edit("src/Cart.tsx", "Cart", "Basket")
    s3.bash("pnpm test", "Tests  12 passed (12)")
    f3 = s3.write(claude, age=OLD)

    # a Codex session (shop): cargo test red, a patch, green
    c1 = CodexSession(shop, start + timedelta(hours=3))
    c1.user("Fix the failing price rounding test in the pricing crate")
    c1.run(
        "cargo test -p pricing",
        "test rounding ... FAILED\ntest result: FAILED. 3 passed; 1 failed",
        101,
    )
    c1.patch("pricing/src/lib.rs", "-    (x * 100.0).round()\n+    (x * 100.0).round() / 100.0")
    c1.run("cargo test -p pricing", "test result: ok. 4 passed; 0 failed", 0)
    c1.say("Fixed the rounding.")
    f4 = c1.write(codex, age=OLD)
    return {
        "home": home,
        "rates": rates,
        "shop": shop,
        "files": [f1, f2, f3, f4],
        "sessions": [s1, s2, s3, c1],
    }


def _db_bytes(db: Path) -> bytes:
    return b"".join(
        Path(str(db) + s).read_bytes() for s in ("", "-wal", "-shm") if Path(str(db) + s).exists()
    )


def test_watch_learns_from_real_agent_homes_and_every_door_gives_it_back(tmp_path: Path) -> None:
    h = build_homes(tmp_path)
    db = tmp_path / "data" / "memory.db"
    env = agent_env(h["home"], db)

    first = sqrl(env, "watch", "--once", "--json")
    assert first.returncode == 0, first.stderr
    got = json.loads(first.stdout)
    assert got["files_read"] == 5  # 3 Claude sessions, 1 subagent file, 1 Codex rollout
    assert got["sessions_ended"] == 4 and not got["errors"]
    assert "Traceback" not in first.stderr

    # the secret from the tool output is nowhere in the database (or its WAL)
    raw = _db_bytes(db)
    assert SECRET.encode() not in raw and AWS.encode() not in raw

    # 1. through JSON-RPC
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        ctx = srv.call(
            "squirrel/get_task_context",
            {"project_root": str(h["rates"]), "task": "call the HTTP API for the rates"},
        )
        prompt = ctx["context_prompt"]
        assert "httpx" in prompt and "pnpm" in prompt, prompt
        assert ctx["tokens"] <= ctx["budget"]
        other = srv.call(
            "squirrel/get_task_context",
            {"project_root": str(h["shop"]), "task": "call the HTTP API for the rates"},
        )
        # nothing of the rates project (the shop's own checks may name `pnpm test`)
        assert "httpx" not in other["context_prompt"]
        assert "never use npm" not in other["context_prompt"]
        status = srv.call("squirrel/status")
        assert status["transcripts"]["claude-code"]["files"] == 4
        assert status["transcripts"]["codex"]["files"] == 1
        before = (status["episodes"], status["memories"])

    # 2. through the SessionStart hook's JSON
    hook_in = {
        "hook_event_name": "SessionStart",
        "session_id": "new-session",
        "source": "startup",
        "cwd": str(h["rates"]),
        "transcript_path": str(tmp_path / "none.jsonl"),
    }
    r = run_module(env, "reos_memory", "hook", "claude-code", stdin=json.dumps(hook_in))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    extra = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "httpx" in extra and "pnpm" in extra and extra.startswith("<squirrel-context")

    # 3. through the MCP client's get_task_context tool
    data = _mcp_context(env, h["rates"], "call the HTTP API for the rates")
    assert "httpx" in data["context_prompt"] and "pnpm" in data["context_prompt"]

    # running the watcher again adds nothing
    again = sqrl(env, "watch", "--once", "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["files_read"] == 0
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        st = srv.call("squirrel/status")
        assert (st["episodes"], st["memories"]) == before


def _mcp_context(env: dict[str, str], project: Path, task: str) -> dict[str, Any]:
    import anyio
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    result: dict[str, Any] = {}

    async def go() -> None:
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "reos_memory", "mcp"], env=env, cwd=str(project)
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            res = await s.call_tool("get_task_context", {"task": task})
            assert not res.is_error, res.content
            result.update(json.loads(res.content[0].text))

    anyio.run(go)
    return result


# -- the hook: answers, silence, failures, the detached worker --------------------------------


def _workers(db: Path) -> list[str]:
    """Command lines of live hook workers for this database."""
    lines = (" ".join(a.decode(errors="replace") for a in args) for _, args, _ in processes.live())
    return [line for line in lines if "--worker" in line and str(db) in line]


def test_hook_prompt_context_failures_and_the_worker(tmp_path: Path) -> None:
    h = build_homes(tmp_path)
    db = tmp_path / "data" / "memory.db"
    env = agent_env(h["home"], db)
    rates = str(h["rates"])
    add = sqrl(
        env,
        "add",
        "--kind",
        "guard",
        "--avoid",
        "Never deploy on Fridays.",
        "--project-root",
        rates,
    )
    assert add.returncode == 0, add.stderr

    def hook(payload: Any) -> subprocess.CompletedProcess[str]:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return run_module(env, "reos_memory", "hook", "claude-code", stdin=text)

    base = {"session_id": "sess-a", "cwd": rates, "transcript_path": str(h["files"][0])}
    # a prompt about it: the memory; asked again in the same session: nothing new, no output
    r = hook({**base, "hook_event_name": "UserPromptSubmit", "prompt": "can we deploy on Friday"})
    assert (
        r.returncode == 0
        and "Fridays" in json.loads(r.stdout)["hookSpecificOutput"]["additionalContext"]
    )
    r = hook({**base, "hook_event_name": "UserPromptSubmit", "prompt": "deploy on Friday then?"})
    assert r.returncode == 0 and r.stdout == ""
    # an unrelated prompt in a new session: nothing passes the floor, nothing is printed
    r = hook(
        {
            **base,
            "session_id": "sess-b",
            "hook_event_name": "UserPromptSubmit",
            "prompt": "rename the basket colour variables",
        }
    )
    assert r.returncode == 0 and r.stdout == ""

    # failures never break the agent: exit 0, nothing on stdout
    for bad in ("{not json", "[]", json.dumps({"hook_event_name": "SessionStart"})):
        r = hook(bad)
        assert (r.returncode, r.stdout) == (0, ""), r
    (tmp_path / "a-file").write_text("x")  # a database path under a file cannot be opened
    broken = {**env, "REOS_MEMORY_DB": str(tmp_path / "a-file" / "sub" / "memory.db")}
    r = run_module(
        broken,
        "reos_memory",
        "hook",
        "claude-code",
        stdin=json.dumps({**base, "hook_event_name": "SessionStart"}),
    )
    assert (r.returncode, r.stdout) == (0, "")
    bad_cfg = {**env, "REOS_MEMORY_SESSION_IDLE_MINUTES": "-5"}
    r = run_module(
        bad_cfg,
        "reos_memory",
        "hook",
        "claude-code",
        stdin=json.dumps({**base, "hook_event_name": "SessionStart"}),
    )
    assert (r.returncode, r.stdout) == (0, "")

    # (the process check sees a live process with such a command line)
    dummy = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(30)", "--worker", str(db)]
    )
    try:
        until = time.monotonic() + 10  # until the child has exec'ed (its command line is ours)
        while time.monotonic() < until and not _workers(db):
            time.sleep(0.05)
        assert len(_workers(db)) == 1
    finally:
        dummy.kill()
        dummy.wait()
    # Stop and SessionEnd: answered at once, the work done by one detached worker that exits;
    # a request file that cannot be read (a worker killed while writing it) does not stop it
    queue = Path(str(db) + ".hook-queue")
    queue.mkdir(parents=True, exist_ok=True)
    (queue / "broken.json").write_text("")
    t0 = time.monotonic()
    for _ in range(4):
        r = hook({**base, "hook_event_name": "Stop"})
        assert (r.returncode, r.stdout) == (0, "")
    r = hook({**base, "hook_event_name": "SessionEnd", "reason": "prompt_input_exit"})
    assert (r.returncode, r.stdout) == (0, "")
    quick = time.monotonic() - t0
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline and (any(queue.glob("*.json")) or any(queue.glob("*.taken"))):
        time.sleep(0.2)
    assert not list(queue.glob("*.json")) and not list(queue.glob("*.taken")), "work left"
    deadline = time.monotonic() + 15  # the work is done: the worker closes the database and exits
    while time.monotonic() < deadline and _workers(db):
        time.sleep(0.2)
    assert _workers(db) == [], "a hook worker outlived its work"
    assert quick < 5 * 10  # five hook runs, none waiting for the ingestion
    with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
        srv.wait_ready()
        st = srv.call("squirrel/status")
        cc = st["transcripts"]["claude-code"]
        # the session file and its subagent file, each read once, the session ended
        assert cc["files"] == 2 and cc["ended_sessions"] == 2, cc
        lines = sum(1 for _ in open(h["files"][0])) + sum(
            1 for p in h["files"][0].with_suffix("").rglob("*.jsonl") for _ in open(p)
        )
        assert cc["lines"] == lines
        ctx = srv.call(
            "squirrel/get_task_context", {"project_root": rates, "task": "fetch rates over HTTP"}
        )
        assert "httpx" in ctx["context_prompt"]


# -- sqrl hooks / watch lock -------------------------------------------------------------------


def test_sqrl_hooks_install_uninstall_status(tmp_path: Path) -> None:
    home = tmp_path / "home"
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    mine = {
        "hooks": {"Stop": [{"hooks": [{"type": "command", "command": "say done"}]}]},
        "model": "opus",
    }
    settings.write_text(json.dumps(mine))
    env = agent_env(home, tmp_path / "m.db")
    r = sqrl(env, "hooks", "install", "--json")
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert (
        res["changed"]
        and res["backup"]
        and set(res["added"])
        == {"SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"}
    )
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    stop_cmds = [h["command"] for g in data["hooks"]["Stop"] for h in g["hooks"]]
    assert "say done" in stop_cmds and any(c.endswith(" hook claude-code") for c in stop_cmds)
    assert json.loads(sqrl(env, "hooks", "install", "--json").stdout)["changed"] is False
    st = sqrl(env, "hooks", "status")
    assert "installed" in st.stdout and "SessionStart" in st.stdout
    # the installed command really runs the hook
    ours = next(c for c in stop_cmds if c.endswith(" hook claude-code"))
    r = subprocess.run(
        ours, shell=True, input="{}", capture_output=True, text=True, env=env, timeout=60
    )
    assert (r.returncode, r.stdout) == (0, "")
    r = sqrl(env, "hooks", "uninstall", "--json")
    assert json.loads(r.stdout)["removed"]
    assert json.loads(settings.read_text()) == mine
    proj = tmp_path / "proj"
    r = sqrl(env, "hooks", "install", "--project", str(proj))
    assert r.returncode == 0 and (proj / ".claude" / "settings.json").exists()


def test_one_watcher_per_database(tmp_path: Path) -> None:
    h = build_homes(tmp_path)
    db = tmp_path / "data" / "memory.db"
    env = agent_env(h["home"], db)
    first = subprocess.Popen(
        [*SQRL, "watch", "--interval", "0.2"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not Path(str(db) + ".watch.lock").exists():
            time.sleep(0.1)
        time.sleep(1.0)
        second = sqrl(env, "watch", "--once")
        assert second.returncode == 3 and "already" in second.stderr, second
        # a session appended while the watcher runs is picked up
        s = ClaudeSession(h["rates"], datetime.now(UTC))
        s.user("Document the rates endpoint").bash("python docs.py", "ok")
        s.write(h["home"] / ".claude")
        deadline = time.monotonic() + 30
        seen = False
        while time.monotonic() < deadline and not seen:
            with Server(db, env={"REOS_MEMORY_OWNER_ID": "dev"}) as srv:
                seen = srv.call("squirrel/status")["transcripts"]["claude-code"]["files"] == 5
            time.sleep(0.3)
        assert seen
    finally:
        first.terminate()
        assert first.wait(30) == 0
    assert sqrl(env, "watch", "--once").returncode == 0  # the lock went with the process


def test_every_entry_point_finds_the_same_database(tmp_path: Path) -> None:
    """serve, mcp, hook and sqrl honour REOS_MEMORY_HOME (and --db / REOS_MEMORY_DB) alike."""
    home = tmp_path / "data-home"
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    env = agent_env(tmp_path / "user-home", tmp_path / "unused.db", REOS_MEMORY_HOME=str(home))
    env.pop("REOS_MEMORY_DB")
    where = run_module(env, "reos_memory", "where")
    assert where.stdout.strip() == str(home / "memory.db")
    added = sqrl(
        env,
        "add",
        "--kind",
        "invariant",
        "Migrations run with alembic upgrade head.",
        "--json",
        cwd=repo,
    )
    assert added.returncode == 0, added.stderr
    mid = json.loads(added.stdout)["memory"]["id"]
    shown = sqrl(env, "memories", mid, cwd=repo)
    assert "alembic" in shown.stdout and "evidence (1)" in shown.stdout
    assert "explicit_statement" in shown.stdout
    status = sqrl(env, "status", cwd=repo)
    assert "writer config: rules (offline)" in status.stdout
    hook = run_module(
        env,
        "reos_memory",
        "hook",
        "claude-code",
        stdin=json.dumps(
            {
                "hook_event_name": "SessionStart",
                "session_id": "s",
                "cwd": str(repo),
                "source": "startup",
            }
        ),
    )
    assert "alembic" in hook.stdout
    data = _mcp_context(env, repo, "run the database migrations")
    assert "alembic" in data["context_prompt"]
    with Server(None, env={k: v for k, v in env.items() if k.startswith("REOS_")}) as srv:
        srv.wait_ready()
        got = srv.call("squirrel/memories/get", {"memory_id": mid})
        assert got["memory"]["text"].startswith("Migrations run with alembic")
    # and --db wins over the environment, for each of them
    other = tmp_path / "other.db"
    r = sqrl(env, "add", "Use tabs.", "--db", str(other), cwd=repo)
    assert r.returncode == 0 and other.exists()
    r = run_module(
        env,
        "reos_memory",
        "hook",
        "claude-code",
        "--db",
        str(other),
        stdin=json.dumps({"hook_event_name": "SessionStart", "session_id": "s2", "cwd": str(repo)}),
    )
    assert "Use tabs" in r.stdout and "alembic" not in r.stdout


def test_a_sessions_episodes_judge_the_context_its_hook_injected(tmp_path: Path) -> None:
    """The context SessionStart gave a session is judged by that session's own episodes."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    home = tmp_path / "home"
    db = tmp_path / "memory.db"
    env = agent_env(home, db)
    assert (
        sqrl(
            env,
            "add",
            "--kind",
            "guard",
            "--avoid",
            "Never run the migrations by hand.",
            "--project-root",
            str(repo),
        ).returncode
        == 0
    )
    s = ClaudeSession(repo, datetime.now(UTC))  # the hook runs as the session starts
    r = run_module(
        env,
        "reos_memory",
        "hook",
        "claude-code",
        stdin=json.dumps(
            {
                "hook_event_name": "SessionStart",
                "session_id": s.id,
                "cwd": str(repo),
                "source": "startup",
            }
        ),
    )
    assert "migrations" in r.stdout
    s.user("Add an index on orders.created_at")
    s.bash("alembic upgrade head", "INFO  [alembic] Running upgrade -> 3f2a, add index")
    s.say("Done.")
    path = s.write(home / ".claude")
    out = sqrl(env, "ingest", str(path), "--end", "--json")
    assert out.returncode == 0, out.stderr
    reps = json.loads(out.stdout)
    assert sum(e["contexts_judged"] for r in reps for e in r["episodes"]) == 1
